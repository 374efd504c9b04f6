"""Builds the third quality set, `benches/fresh/`: written queries-first on 2026-11-24.

The author did not see the ranking code or any of its figures. The 45 queries were written first,
as people ask on a local-events app (wishes and situations in colloquial Chinese, with negations
and constraints such as "别让我跟人搭话", "别太累", "不要太折腾", "我滴酒不沾"); then about 110
new activities (new titles, descriptions and places, none taken from `benches/asks/` or
`benches/intent/`) were written to answer them, including decoys that share a query's surface
words but not its intent ("柯基屁股蛋糕" for a dog, "汗蒸" for working up a sweat, "网上冲浪" for
surfing, "观影马拉松" for a marathon, "慢不下来的速配" for slowing down, "万人相亲约会大会" for a
quiet date) and answers that use none of the query's words.

Grading: each activity carries facets anyone can check from its text (is it quiet, free, indoors,
does it mean talking to strangers, is it for older people...). A query is a rule over the facets:
fully satisfied gives grade 2, partly grade 1. Lexical queries name the activities that contain
the term (grade 2) and a facet for near misses (grade 1). time_vibe queries: the need met and the
start inside the stated time gives grade 2, the need met at another time grade 1.

Kinds: 25 intent, 10 lexical, 10 time_vibe. Split: every query is `holdout` (never tuned on).
The set was sealed (committed) before any method was measured on it.
Reference now: Sunday 2026-11-22 12:00 Asia/Shanghai; activities start Monday 2026-11-23 to
Sunday 2026-11-29 (weekday 0 = Monday).
Run: python3 benches/fresh/build.py
"""
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

SH = timezone(timedelta(hours=8))
MONDAY = datetime(2026, 11, 23, tzinfo=SH)
HERE = Path(__file__).parent

PLACES = {
    "虹口足球场": (31.2720, 121.4800), "中山公园": (31.2200, 121.4160), "长风公园": (31.2260, 121.3950),
    "滴水湖": (30.9000, 121.9300), "朱家角": (31.1100, 121.0550), "思南路": (31.2150, 121.4700),
    "北外滩": (31.2500, 121.4950), "张园": (31.2300, 121.4610), "西岸美术馆": (31.1710, 121.4600),
    "莘庄": (31.1110, 121.3850), "嘉定老城": (31.3830, 121.2500), "松江大学城": (31.0480, 121.2100),
    "宝山滨江": (31.4050, 121.5000), "徐家汇书院": (31.1930, 121.4370), "豫园": (31.2270, 121.4920),
    "佘山": (31.0960, 121.1940), "辰山植物园": (31.0790, 121.1830), "崇明东滩": (31.5100, 121.9600),
    "外滩": (31.2400, 121.4900), "鲁迅公园": (31.2760, 121.4820), "大宁公园": (31.2810, 121.4560),
    "虹桥天地": (31.1960, 121.3190), "愚园路": (31.2210, 121.4330), "南京西路": (31.2290, 121.4580),
    "1933老场坊": (31.2560, 121.4960), "浦东美术馆": (31.2410, 121.4970), "复兴中路": (31.2090, 121.4470),
}

# Facets (judged from the text as a reader would):
#   quiet loud crowd free cheap pricey indoor outdoor
#   move (you exercise) sweat intense (exhausting) gentle (low effort, fine for the unfit) rest
#   stretch (loosens back and shoulders) run racket cards water thrill release warm
#   solo_ok mingle group_fun kids kids_active elders dogs couples (made for two) date alcohol
#   lecture (a talk for a given audience) for_elders (only for older people)
#   learn work_skill brain creative takehome food local (Shanghai's own food or ways) culture
#   nature music live instrument sing read comedy laugh volunteer decompress offline photo
#   sightsee (shows a visitor Shanghai) citywalk insider (says it is not for visitors)
# title, type, tags, description, max participants, weekday (0 = Mon 2026-11-23), hour, place, facets
A = [
    # --- alone, quiet ---
    ("徐家汇书院夜读", "阅读", ["读书", "自习"], "书院开到晚上九点，找个靠窗的位子看自己带的书，周围只有翻页声。", 80, 1, 19, "徐家汇书院", "quiet indoor free solo_ok read culture rest decompress gentle"),
    ("西岸美术馆馆藏常设展", "展览", ["美术馆", "现代艺术"], "按自己的节奏看完三层展厅，租一台讲解器就够了，不用跟谁交流。", 200, 2, 14, "西岸美术馆", "quiet indoor culture solo_ok gentle"),
    ("一个人来也能交到朋友的搭话派对", "交友", ["社交", "派对"], "主持人每十分钟让大家换一次座位，保证你和每个人都说上话，社恐慎入。", 40, 4, 20, "张园", "indoor mingle group_fun loud laugh"),
    ("银锄湖边水彩写生", "艺术", ["写生", "水彩"], "带上画板在湖边画一下午，老师偶尔过来指点两句，画完的画自己带走。", 15, 6, 13, "长风公园", "quiet outdoor creative takehome solo_ok nature learn gentle decompress"),
    ("梧桐树下的露台咖啡", "休闲", ["咖啡", "露台"], "点一杯手冲坐在梧桐树下，看路人慢慢走过，坐多久都没人催。", 30, 6, 14, "思南路", "quiet outdoor rest solo_ok decompress gentle cheap date"),
    ("止语茶会", "文化", ["茶道", "止语"], "手机进门前统一存放，两个小时不说一句话，茶师泡六道茶，只用手势交流。", 10, 3, 19, "张园", "quiet indoor rest solo_ok decompress culture gentle offline"),
    ("吴淞口看船", "户外", ["江景", "看船"], "坐在滨江步道的长椅上看万吨货轮进出长江口，江风很大，人很少。", 50, 5, 15, "宝山滨江", "quiet outdoor nature rest solo_ok decompress free gentle"),
    ("机关盒与解谜书吧", "益智", ["解谜", "逻辑"], "店里有上百本解谜书和机关盒，一个人也能坐一下午，慢慢跟自己较劲。", 20, 6, 13, "愚园路", "indoor brain quiet solo_ok cheap"),
    # --- sweat, but how much ---
    ("虹口足球场绕圈夜跑", "运动", ["夜跑", "跑团"], "绕球场外圈跑五公里，配速七分钟，跑不动可以走，不收费。", 40, 1, 19, "虹口足球场", "outdoor move sweat run mingle free"),
    ("匹克球新手体验", "运动", ["匹克球", "球拍"], "场地比网球小、球速比网球慢，教练十分钟教会规则，打一小时微微出汗。", 16, 2, 19, "莘庄", "indoor move sweat racket learn mingle"),
    ("对墙练网球", "运动", ["网球", "练习墙"], "一个人对着练习墙打，自己控制节奏，旁边有教练可以请教握拍。", 6, 0, 7, "中山公园", "outdoor move sweat racket solo_ok cheap"),
    ("恒温泳池晚场", "运动", ["游泳", "泳池"], "二十八度恒温池，想游几圈游几圈，游完还能去蒸一会儿桑拿。", 60, 3, 20, "松江大学城", "indoor move sweat water solo_ok warm cheap"),
    ("八段锦晨练", "运动", ["八段锦", "晨练"], "跟退休的体育老师练八段锦，动作慢、拉得开，练完后背热乎乎的。", 30, 0, 7, "中山公园", "outdoor move gentle stretch elders free quiet decompress"),
    ("一点都不轻松的CrossFit地狱课", "运动", ["CrossFit", "体能"], "六十分钟连续推、拉、跳，教练全程吼，做完连楼梯都下不去。", 20, 1, 19, "北外滩", "indoor move sweat intense loud release"),
    ("汗蒸馆放空下午", "健康", ["汗蒸", "休息"], "在四十五度的石板上躺着出汗，喝碗冰粉，一下午什么也不用干。", 30, 6, 14, "莘庄", "indoor rest warm decompress solo_ok cheap quiet gentle"),
    ("练到腰酸背痛的硬拉力量课", "运动", ["力量", "硬拉"], "三组大重量硬拉加深蹲，第二天腰酸背痛是常态，适合有训练基础的人。", 12, 3, 20, "长风公园", "indoor move sweat intense learn"),
    ("久坐族肩颈拉伸课", "健康", ["拉伸", "肩颈"], "专门给久坐的人开的课，用泡沫轴和弹力带松开肩颈和下背，动作都很慢。", 15, 2, 19, "南京西路", "indoor move stretch gentle decompress learn quiet"),
    ("垫上普拉提小班", "运动", ["普拉提", "核心"], "六人小班练核心和脊柱灵活度，节奏不快，但一节课下来会微微出汗。", 6, 4, 19, "愚园路", "indoor move sweat stretch gentle learn"),
    ("老师傅推拿体验", "健康", ["推拿", "中医"], "老师傅按背半小时，顺便教两个在工位上就能做的放松动作。", 6, 2, 15, "莘庄", "indoor rest stretch decompress gentle quiet solo_ok"),
    ("空手道踢靶课", "运动", ["空手道", "踢靶"], "对着脚靶连踢一百下，教练让你每踢一下就大喊一声。", 12, 0, 20, "虹口足球场", "indoor move sweat release loud learn"),
    ("腰旗橄榄球新手局", "运动", ["腰旗橄榄球", "团队"], "不冲撞的橄榄球，扯掉对方腰旗就算擒抱，新人来了随机分队。", 24, 5, 10, "松江大学城", "outdoor move sweat mingle group_fun"),
    # --- older people ---
    ("长辈智能手机课：学会网上冲浪", "学习", ["智能手机", "长者"], "志愿者一对一教长辈用手机挂号、打车、视频通话，学会了就能自己网上冲浪。", 20, 1, 14, "嘉定老城", "indoor learn elders gentle free for_elders"),
    ("古镇摇橹船", "观光", ["古镇", "摇橹船"], "坐船穿过放生桥，船娘一边摇橹一边讲水乡的故事，全程坐着。", 8, 2, 14, "朱家角", "outdoor gentle elders culture sightsee rest local water nature"),
    ("朱家角老街吃一路", "美食", ["扎肉", "老街"], "跟着本地人从北大街吃到放生桥，扎肉、粽子、阿婆茶一路吃过去。", 12, 5, 10, "朱家角", "outdoor food local gentle cheap culture sightsee"),
    ("水乡清晨拍日出", "摄影", ["摄影", "日出"], "六点半在桥上等第一缕光，摄影师教构图，人还没来，拍完吃碗馄饨。", 10, 6, 6, "朱家角", "outdoor photo learn nature quiet culture"),
    ("沪剧票友会", "音乐", ["沪剧", "票友"], "退休老师带着大家唱沪剧选段，会不会唱都能来听，茶水免费。", 40, 3, 14, "鲁迅公园", "indoor music sing live elders gentle local culture free mingle"),
    ("湖边交谊舞角", "运动", ["交谊舞", "慢三"], "湖边的交谊舞角，阿姨们会主动带新手跳慢三，跳累了坐着看也行。", 50, 4, 15, "长风公园", "outdoor move gentle elders mingle free music"),
    ("新手爸妈育儿讲座", "学习", ["育儿", "讲座"], "儿科医生讲零到三岁的睡眠和辅食，只面向家长，请不要带孩子到场。", 80, 5, 10, "徐家汇书院", "indoor learn quiet free lecture"),
    ("折腾一整夜的通宵蹦迪", "派对", ["蹦迪", "通宵"], "从晚上十点跳到早上六点，DJ轮番上阵，越折腾越来劲。", 300, 4, 22, "北外滩", "indoor loud alcohol crowd release mingle music"),
    ("孔庙到汇龙潭慢游", "观光", ["孔庙", "古城"], "从州桥走到孔庙再到汇龙潭，讲解员讲科举旧事，一路都是平路，走走歇歇。", 20, 3, 10, "嘉定老城", "outdoor culture gentle elders local sightsee citywalk quiet"),
    ("桥牌入门课", "棋牌", ["桥牌", "叫牌"], "退休教授教叫牌和打牌的基本思路，两个小时，搭档现场分配。", 16, 3, 14, "徐家汇书院", "indoor brain cards learn elders quiet mingle gentle"),
    ("公园早茶", "美食", ["早茶", "茶点"], "公园茶室里一壶绿茶配生煎和烧卖，叔叔阿姨们都在这里下棋聊天。", 40, 0, 8, "莘庄", "indoor food local cheap gentle elders mingle"),
    # --- free or cheap ---
    ("钱包再鼓也不够花的奢牌买手之夜", "购物", ["奢侈品", "买手店"], "香槟招待、私人造型师一对一搭配，一晚上花掉几万是常事。", 30, 4, 20, "张园", "indoor pricey alcohol"),
    ("闲置好物免费送人市集", "市集", ["闲置", "交换"], "带上不用的东西来，看中什么直接拿走，不收钱也不用换，牵绳的狗狗也可以来。", 100, 5, 14, "大宁公园", "outdoor free mingle kids dogs"),
    ("北外滩滨江日落散步", "户外", ["滨江", "日落"], "沿滨江绿地走三公里，看对岸陆家嘴一栋栋亮灯，不收费。", 30, 5, 16, "北外滩", "outdoor move gentle free sightsee photo date"),
    ("北外滩Citywalk：老虹口里弄", "观光", ["Citywalk", "里弄"], "从提篮桥走到白马咖啡馆，讲犹太难民和老虹口的故事，全程约四公里。", 20, 6, 9, "北外滩", "outdoor move culture local citywalk sightsee gentle cheap"),
    ("张园石库门citywalk", "观光", ["citywalk", "石库门"], "从张园西区穿到吴江路，看石库门改造前后的样子，讲解员是在这里住过的老居民。", 25, 5, 14, "张园", "outdoor move culture local citywalk sightsee gentle cheap"),
    ("思南路名人故居漫步", "观光", ["故居", "梧桐"], "沿思南路和复兴中路走一圈，看几栋老洋房和名人故居，走走停停两小时。", 20, 4, 14, "思南路", "outdoor move culture local citywalk sightsee gentle free"),
    # --- volunteering ---
    ("湖边落叶清扫志愿", "公益", ["志愿", "公园"], "帮园林工人清扫湖边落叶、装袋，提供手套和热茶。", 20, 5, 9, "长风公园", "outdoor volunteer move free nature mingle"),
    ("流浪狗救助基地帮工", "公益", ["流浪狗", "志愿"], "去救助基地遛狗、清理狗舍，那里的狗狗很黏人。自己的宠物请不要带来。", 15, 6, 9, "松江大学城", "outdoor volunteer move"),
    ("社区食物银行分拣", "公益", ["食物银行", "分拣"], "把捐来的米面油分类装箱，送到社区里的困难家庭。", 20, 3, 19, "虹口足球场", "indoor volunteer move mingle free"),
    ("给视障朋友讲电影", "公益", ["无障碍", "口述影像"], "观影时在耳机里为视障朋友讲述画面，开始前有一次培训。", 10, 5, 14, "思南路", "indoor volunteer learn culture quiet"),
    ("包馄饨送独居老人", "公益", ["独居老人", "送餐"], "一起包两百只馄饨，再分组送到附近独居老人家里，顺便陪他们聊几句。", 20, 6, 10, "嘉定老城", "indoor volunteer mingle gentle"),
    ("帮你找对象：中山公园相亲局", "交友", ["相亲", "脱单"], "红娘现场配对，八分钟换一个人，目标明确：找对象。", 60, 5, 14, "中山公园", "outdoor mingle crowd"),
    # --- children ---
    ("公园冬日自然观察", "亲子", ["自然观察", "昆虫"], "带孩子在草丛里找越冬的虫子和种子，讲解员准备了放大镜。", 20, 6, 9, "长风公园", "outdoor kids nature learn gentle"),
    ("蹦床乐园幼儿专场", "亲子", ["蹦床", "幼儿"], "上午只对两到六岁开放，软垫区和海洋球池随便跳，家长可以在旁边坐着。", 40, 5, 10, "莘庄", "indoor kids kids_active loud laugh"),
    ("湖边沙滩挖沙", "亲子", ["沙滩", "挖沙"], "人造沙滩免费开放，带上小铲子小桶，孩子能挖一上午。", 50, 6, 10, "滴水湖", "outdoor kids kids_active nature free"),
    ("亲子纸箱城堡", "亲子", ["纸箱", "搭建"], "用五十个纸箱和胶带，爸妈和孩子一起搭一座能钻进去的城堡。", 20, 5, 14, "虹桥天地", "indoor kids kids_active creative group_fun"),
    ("三岁看老：儿童情绪家长课", "学习", ["儿童心理", "家长"], "心理咨询师讲三到六岁孩子的情绪管理，家长专场，现场不设托管。", 50, 2, 19, "莘庄", "indoor learn quiet"),
    ("湿地看候鸟", "户外", ["观鸟", "湿地"], "候鸟到了，带上望远镜在木栈道上找白头鹤，说话要小声，大孩子也能来。", 20, 5, 8, "崇明东滩", "outdoor nature quiet learn kids photo"),
    ("小小消防员开放日", "亲子", ["消防", "体验"], "消防站开放一天，孩子可以穿消防服、摸水枪、爬上消防车。", 60, 6, 10, "虹口足球场", "outdoor kids kids_active learn free"),
    ("树叶蓝晒明信片", "手作", ["蓝晒", "明信片"], "用阳光把树叶的影子印在明信片上，十分钟显影，写上字就能寄出去，小朋友也会做。", 15, 6, 11, "辰山植物园", "outdoor creative takehome nature kids gentle cheap"),
    # --- dogs ---
    ("草坪狗狗社交日", "宠物", ["狗狗", "社交"], "草坪划出围栏区，狗狗可以不牵绳自由跑，主人在旁边聊天。", 60, 6, 9, "长风公园", "outdoor dogs mingle free nature"),
    ("柯基屁股蛋糕烘焙课", "手作", ["烘焙", "蛋糕"], "把戚风蛋糕做成柯基屁股的造型，做好装盒带走。店内不允许带宠物。", 8, 5, 14, "愚园路", "indoor creative takehome food learn date"),
    ("芝加哥热狗快闪摊", "美食", ["热狗", "快闪"], "美式热狗加酸黄瓜和芥末，排队的人很多，只能站着吃。", 100, 5, 12, "虹桥天地", "outdoor food crowd cheap"),
    ("滨江带狗晨跑", "运动", ["跑步", "狗狗"], "沿滨江跑五公里，欢迎牵绳的狗一起，补水点准备了狗碗。", 30, 6, 7, "宝山滨江", "outdoor move sweat run dogs mingle free"),
    ("露台早午餐（宠物友好）", "美食", ["早午餐", "宠物友好"], "露台座位可以带狗，服务员会给狗狗端上专属的鸡肉饼。", 40, 5, 11, "愚园路", "outdoor food dogs"),
    ("可以带狗的书店下午", "阅读", ["书店", "狗狗友好"], "一家允许带狗进门的书店，狗狗趴在脚边，主人安静看书。", 20, 6, 14, "愚园路", "indoor dogs quiet read solo_ok"),
    # --- music ---
    ("尤克里里弹唱入门班", "音乐", ["尤克里里", "弹唱"], "学会C、Am、F、G四个和弦，第一节课就能弹唱一首生日歌，琴可以借。", 10, 2, 19, "北外滩", "indoor music instrument sing learn"),
    ("中山公园尤克里里草坪合奏", "音乐", ["尤克里里", "合奏"], "自带琴来草坪围坐一圈，谁会什么就弹什么，没琴也可以坐着跟唱。", 30, 5, 15, "中山公园", "outdoor music instrument sing mingle free"),
    ("架子鼓一小时体验", "音乐", ["架子鼓", "打击乐"], "在隔音房里打一小时鼓，老师教一段基础节奏，敲完浑身舒畅。", 4, 3, 20, "愚园路", "indoor music instrument learn loud release sweat"),
    ("乐器博物馆：古琴与编钟", "展览", ["乐器", "博物馆"], "玻璃柜里的古琴、编钟和琵琶只可远观，每天下午有一场录音导赏。", 100, 1, 14, "豫园", "indoor culture quiet solo_ok gentle"),
    ("共享琴房按小时租", "音乐", ["钢琴", "琴房"], "一间放着三角钢琴的琴房，一个人想弹多久弹多久，按小时付费。", 1, 4, 19, "思南路", "indoor music instrument solo_ok"),
    ("江边小酒馆民谣现场", "音乐", ["民谣", "现场"], "吉他弹唱，坐得很近，能听见换拨片的声音，点一杯酒听到打烊。", 60, 4, 20, "北外滩", "indoor music live alcohol date"),
    ("球场摇滚音乐节", "音乐", ["摇滚", "音乐节"], "五支乐队连演四个小时，草皮上全是跳水和开火车的人。", 5000, 5, 18, "虹口足球场", "outdoor music live loud crowd release alcohol"),
    ("私藏歌单交换会", "音乐", ["歌单", "分享"], "每人带三首私藏歌曲，轮流放给大家听，再讲讲背后的故事。", 20, 2, 20, "张园", "indoor music mingle"),
    ("商场中庭合唱快闪", "音乐", ["合唱", "快闪"], "提前排练两首歌，在商场中庭突然开唱，不看谱也能跟。", 40, 5, 16, "南京西路", "indoor music sing mingle group_fun loud"),
    ("交响乐团排练开放日", "音乐", ["交响乐", "排练"], "乐团开放一次排练，坐在观众席听指挥一段一段抠细节，票价二十元。", 200, 3, 14, "复兴中路", "indoor music live culture quiet gentle cheap"),
    ("老洋房客厅四重奏", "音乐", ["弦乐四重奏", "古典"], "老洋房客厅里只有三十个座位，演奏员离你不到两米。", 30, 5, 20, "张园", "indoor music live culture quiet date"),
    # --- food ---
    ("跟上海阿姨学红烧肉", "美食", ["本帮菜", "烹饪"], "在石库门厨房学浓油赤酱的做法，做好连锅带走一份。", 8, 5, 10, "张园", "indoor food local learn"),
    ("生煎小馄饨早餐扫街", "美食", ["早餐", "生煎"], "早上七点从一家开了三十年的生煎店开始，吃到第四家小馄饨收工，人均四十。", 8, 6, 7, "鲁迅公园", "outdoor food local cheap citywalk"),
    ("上海味道香薰调制课", "手作", ["香薰", "调香"], "以白玉兰和梧桐叶为灵感调一瓶香薰，做完装瓶带走。", 10, 2, 19, "愚园路", "indoor creative takehome learn quiet date"),
    ("陌生人铜锅涮肉局", "美食", ["火锅", "拼桌"], "六个人拼一口铜锅涮羊肉，主持人不多话，吃热乎了自然就聊开了。", 6, 3, 19, "莘庄", "indoor food mingle warm group_fun"),
    ("不醉不归拼酒局", "派对", ["拼酒", "白酒"], "一桌人划拳拼酒，谁先趴下谁买单。", 10, 3, 21, "虹口足球场", "indoor alcohol loud mingle group_fun"),
    ("脑花烤串深夜局", "美食", ["烤串", "脑花"], "十二点前后的烧烤摊，烤脑花、烤腰子配冰啤酒，越吃越精神。", 12, 4, 23, "松江大学城", "outdoor food alcohol loud cheap mingle"),
    ("江景法餐七道菜", "美食", ["法餐", "江景"], "落地窗外是黄浦江，七道菜配酒，人均一千五，适合纪念日。", 20, 5, 19, "西岸美术馆", "indoor food pricey alcohol date couples quiet"),
    ("学生街夜市", "美食", ["夜市", "小吃"], "烤冷面、炸串、奶茶，二十块吃饱，人挤人，吆喝声不断。", 500, 4, 19, "松江大学城", "outdoor food cheap crowd loud"),
    ("中外朋友饺子局", "交友", ["包饺子", "语言交换"], "中外朋友一起包饺子，边包边用中英文瞎聊，包完一起吃。", 20, 3, 19, "北外滩", "indoor food mingle group_fun learn"),
    # --- brain ---
    ("掼蛋擂台赛", "棋牌", ["掼蛋", "扑克"], "两副牌四人两队，打到A为止，社区赛老中青都有，不赌钱。", 48, 1, 19, "莘庄", "indoor brain cards mingle elders gentle free"),
    ("狼人杀新手桌", "桌游", ["狼人杀", "推理"], "十二人一桌，法官带新人过一遍规则，第二局就要自己发言了。", 12, 4, 19, "松江大学城", "indoor brain mingle group_fun laugh"),
    ("心率讲座：让心跳慢下来", "健康", ["心率", "讲座"], "心内科医生讲静息心率和手环数据怎么看，适合长期熬夜的人。", 100, 1, 19, "徐家汇书院", "indoor learn quiet free lecture"),
    ("城市定向赛", "户外", ["定向", "组队"], "四人一队拿地图找二十个打卡点，边跑边解题，队友现场随机分。", 40, 6, 14, "嘉定老城", "outdoor move sweat brain mingle group_fun"),
    # --- thrill, release ---
    ("废弃医院沉浸式鬼屋", "娱乐", ["鬼屋", "沉浸式"], "真人NPC追着跑，全程黑暗，尖叫声能传到隔壁街。", 8, 4, 20, "虹桥天地", "indoor thrill loud group_fun release"),
    ("垂直风洞飞行体验", "运动", ["风洞", "跳伞"], "在风洞里悬浮两分钟，教练贴身保护，第一次进去心跳会飙到一百五。", 10, 5, 15, "松江大学城", "indoor thrill pricey move"),
    ("冬泳：越冷越要下水", "运动", ["冬泳", "挑战"], "十二度的湖水里游五十米，上岸裹着浴巾发抖，老队员带新人。", 20, 6, 7, "滴水湖", "outdoor water thrill intense move sweat"),
    ("佘山越野晨跑", "户外", ["越野跑", "山路"], "跑佘山十公里山路，上坡下坡不断，要有跑步基础。", 30, 5, 6, "佘山", "outdoor move sweat intense run nature"),
    ("卡丁车计时赛", "运动", ["卡丁车", "竞速"], "两圈练习加三圈计时，弯道贴地漂移，头盔里全是自己的喊声。", 12, 4, 19, "嘉定老城", "outdoor thrill loud pricey release"),
    ("室内冲浪体验", "运动", ["冲浪", "造浪池"], "造浪机打出一米高的浪，教练扶着你站上冲浪板，摔进水里是常事。", 6, 5, 11, "莘庄", "indoor water move sweat thrill learn pricey"),
    ("滨江陆冲入门", "运动", ["陆冲", "滑板"], "在滨江步道练陆地冲浪板的压板和转向。", 10, 6, 14, "宝山滨江", "outdoor move sweat learn"),
    # --- sights ---
    ("豫园清晨老城厢", "观光", ["豫园", "老城厢"], "赶在游客到来前逛九曲桥和老街，吃一笼小笼再走。", 15, 0, 8, "豫园", "outdoor sightsee local culture food gentle citywalk"),
    ("人山人海的外滩灯光秀", "观光", ["灯光秀", "夜景"], "周末晚上的灯光秀，观景平台挤满了人，要提前一个小时占位。", 1000, 5, 19, "外滩", "outdoor crowd loud sightsee photo free"),
    # --- dates and their decoys ---
    ("万人相亲约会大会", "交友", ["相亲", "约会"], "上万人的露天相亲会，展位一个挨一个，走都走不动。", 10000, 5, 10, "大宁公园", "outdoor crowd loud mingle"),
    ("慢不下来：十分钟速配约会", "交友", ["速配", "单身"], "二十对单身男女，每轮十分钟，铃一响就换人，节奏快到喘不过气。", 40, 4, 20, "张园", "indoor mingle loud"),
    ("双人银饰对戒工作坊", "手作", ["银饰", "对戒"], "两个人各自敲一枚银戒指给对方，打磨抛光后当场戴上。", 8, 5, 19, "思南路", "indoor creative takehome date couples learn quiet"),
    ("湖上脚踏船", "户外", ["划船", "湖"], "租一条脚踏船在湖上慢慢转，湖上没什么人，只有野鸭跟着。", 2, 6, 15, "长风公园", "outdoor water gentle date quiet nature move"),
    ("脱单不失恋：情侣默契挑战赛", "交友", ["情侣", "默契"], "情侣组队答题、玩两人三足，输的一方要当众表白。", 30, 6, 14, "虹桥天地", "indoor date couples loud group_fun mingle laugh"),
    # --- heartbreak, screens, slowing down ---
    ("温室里的热带雨林", "户外", ["植物园", "温室"], "冬天的温室里是热带雨林，湿热、安静，可以在长椅上坐很久。", 50, 2, 10, "辰山植物园", "indoor nature quiet warm gentle decompress solo_ok rest"),
    ("东西佘山半日徒步", "户外", ["徒步", "佘山"], "东西佘山连走八公里，坡不陡，山顶看天文台，下山吃农家菜。", 20, 6, 9, "佘山", "outdoor move sweat nature mingle decompress food"),
    ("写一封不寄出的信", "心理", ["书写", "疗愈"], "心理咨询师带着大家写一封不寄出的信，写完可以烧掉，也可以带走。", 12, 3, 19, "愚园路", "indoor decompress quiet solo_ok"),
    ("岛上无手机骑行日", "户外", ["骑行", "数字断联"], "出发前把手机锁进保管箱，骑车穿过橘子林和稻田，只留一台对讲机。", 20, 5, 9, "崇明东滩", "outdoor offline nature move sweat decompress mingle"),
    ("操场观星夜", "户外", ["观星", "天文"], "熄灯后在操场上用望远镜看土星环，手机要收起来，以免亮光干扰。", 30, 2, 19, "松江大学城", "outdoor nature quiet learn offline"),
    ("观影马拉松：奇幻三部曲加长版", "电影", ["电影", "马拉松"], "连看三部加长版共十一个小时，中场有盒饭，腿麻自理。", 80, 5, 12, "大宁公园", "indoor culture rest"),
    ("上班族午间冥想", "冥想", ["冥想", "午休"], "写字楼里的冥想室，午休四十分钟，躺下跟着引导慢慢呼吸。", 15, 1, 12, "南京西路", "indoor rest decompress quiet solo_ok gentle"),
    # --- work skills ---
    ("汇报PPT改稿课", "学习", ["PPT", "汇报"], "设计师拆解三份真实的汇报材料，现场改你带来的那一页。", 40, 1, 19, "北外滩", "indoor learn work_skill"),
    ("AI办公工具实操", "学习", ["AI", "效率"], "用大模型写周报、整理会议纪要、做表格，每人带电脑跟着做。", 30, 2, 19, "徐家汇书院", "indoor learn work_skill brain"),
    ("朋友圈文案变现课", "学习", ["文案", "私域"], "教你怎么在朋友圈卖货，一天发几条、怎么写才不招人烦。", 50, 3, 20, "莘庄", "indoor learn"),
    ("英语口语角", "学习", ["英语", "口语"], "咖啡馆里按水平分桌聊天，纯口语练习，不讲语法。", 30, 5, 14, "南京西路", "indoor learn mingle work_skill"),
    # --- the rest of the lexical answers ---
    ("中山公园草坪读书会", "读书会", ["读书会", "共读"], "每周六下午在大草坪共读一本小说，自带坐垫，读完轮流分享。", 20, 5, 14, "中山公园", "outdoor read culture mingle free quiet"),
    ("思南书局诗歌读书会", "读书会", ["诗歌", "读书会"], "每人选一首喜欢的现代诗读给大家听，再聊聊为什么喜欢。", 20, 4, 19, "思南路", "indoor read culture mingle quiet"),
    ("环湖半程马拉松", "运动", ["马拉松", "半马"], "环湖二十一公里，关门时间三小时，需要提前报名领物。", 3000, 6, 7, "滴水湖", "outdoor move sweat intense run crowd"),
    ("拼豆钥匙扣手作", "手作", ["拼豆", "钥匙扣"], "用五毫米的小豆子拼出像素图案，熨烫定型后做成钥匙扣，一晚上能做两个。", 12, 2, 20, "虹口足球场", "indoor creative takehome quiet solo_ok cheap"),
    ("新人脱口秀开放麦", "演出", ["脱口秀", "开放麦"], "十个新人演员每人五分钟，好不好笑现场见真章，门票三十。", 80, 3, 20, "南京西路", "indoor comedy laugh live loud cheap"),
    ("沪语单口喜剧专场", "演出", ["沪语", "喜剧"], "全程上海话的单口喜剧，笑点都在弄堂生活里，外地朋友慎入。", 120, 5, 19, "虹口足球场", "indoor comedy laugh live local culture insider"),
    ("嘉定竹编小篮", "手作", ["竹编", "非遗"], "跟竹编艺人学编一只巴掌大的小竹篮，编完带走。", 10, 5, 14, "嘉定老城", "indoor creative takehome learn culture quiet"),
]


NAMED = []


def t(*titles):
    """A lexical rule: the activity is one of these titles."""
    NAMED.extend(titles)
    names = {"_" + x for x in titles}
    return lambda F: bool(names & F)


# id, query, kind, rule for grade 2, rule for grade 1 (or None), time (days, (first hour, last hour))
Q = [
    ("f01", "一个人待着也自在，别让我跟人搭话", "intent",
     lambda F: {"solo_ok", "quiet"} <= F and "mingle" not in F, lambda F: "solo_ok" in F and "mingle" not in F),
    ("f02", "下班后想出出汗，但别太累", "intent",
     lambda F: {"move", "sweat"} <= F and "intense" not in F, lambda F: "move" in F and "intense" not in F),
    ("f03", "带爸妈出去转转，不要太折腾", "intent",
     lambda F: {"elders", "gentle"} <= F,
     lambda F: "gentle" in F and not F & {"loud", "intense", "crowd"} and bool(F & {"culture", "nature"})),
    ("f04", "兜里没钱也想出门玩", "intent",
     lambda F: "free" in F and not F & {"lecture", "volunteer", "for_elders"}, lambda F: bool(F & {"free", "cheap"})),
    ("f05", "失恋了，想散散心", "intent",
     lambda F: "decompress" in F and bool(F & {"nature", "outdoor"}) and "couples" not in F,
     lambda F: bool(F & {"decompress", "release"}) and "couples" not in F),
    ("f06", "想亲手做个小东西送人", "intent", lambda F: {"creative", "takehome"} <= F, lambda F: "creative" in F),
    ("f07", "三岁娃精力太旺盛，找个地方让他放电", "intent", lambda F: {"kids", "kids_active"} <= F, lambda F: "kids" in F),
    ("f08", "家里的柯基憋坏了", "intent", lambda F: {"dogs", "outdoor"} <= F, lambda F: "dogs" in F),
    ("f09", "好久没碰乐器，手痒", "intent", lambda F: "instrument" in F, lambda F: "sing" in F),
    ("f10", "想找个人少的地方看看风景", "intent",
     lambda F: {"nature", "quiet", "outdoor"} <= F, lambda F: "nature" in F and "crowd" not in F),
    ("f11", "坐了一整周，腰酸背痛", "intent", lambda F: "stretch" in F, lambda F: {"move", "gentle"} <= F),
    ("f12", "刚来上海，一个朋友都没有", "intent", lambda F: {"mingle", "group_fun"} <= F and "couples" not in F,
     lambda F: "mingle" in F and not F & {"crowd", "couples"}),
    ("f13", "身体不想动，动动脑子可以", "intent", lambda F: "brain" in F and "move" not in F, lambda F: "brain" in F),
    ("f14", "约会，但别去人挤人的地方", "intent",
     lambda F: "date" in F and not F & {"crowd", "loud"}, lambda F: "date" in F),
    ("f15", "想吃口地道的上海味道", "intent", lambda F: {"food", "local"} <= F, lambda F: "local" in F),
    ("f16", "想跟一群人玩，但我滴酒不沾", "intent",
     lambda F: {"mingle", "group_fun"} <= F and not F & {"alcohol", "couples"},
     lambda F: "group_fun" in F and not F & {"alcohol", "kids"}),
    ("f17", "怕冷，又想活动活动筋骨", "intent",
     lambda F: {"indoor", "move"} <= F and "intense" not in F, lambda F: "warm" in F or {"indoor", "move"} <= F),
    ("f18", "这个周末想过得有意义，帮帮需要的人", "intent", lambda F: "volunteer" in F, None),
    ("f19", "来点心跳加速的", "intent", lambda F: "thrill" in F, lambda F: "intense" in F),
    ("f20", "盯屏幕太久了，眼睛需要休息", "intent",
     lambda F: {"offline", "nature"} <= F, lambda F: "offline" in F or {"nature", "outdoor"} <= F),
    ("f21", "想学点上班用得上的", "intent", lambda F: "work_skill" in F, lambda F: {"learn", "brain"} <= F),
    ("f22", "想听现场，不想听歌单", "intent", lambda F: {"live", "music"} <= F, lambda F: "music" in F),
    ("f23", "想慢下来", "intent",
     lambda F: {"decompress", "gentle"} <= F and "loud" not in F, lambda F: {"quiet", "rest"} <= F),
    ("f24", "压力大到想尖叫", "intent", lambda F: "release" in F,
     lambda F: "loud" in F and bool(F & {"group_fun", "laugh", "alcohol"}) and "kids" not in F),
    ("f25", "外地朋友第一次来上海，带他逛逛", "intent", lambda F: "sightsee" in F, lambda F: {"local", "culture"} <= F and "insider" not in F),
    ("f26", "尤克里里", "lexical", t("尤克里里弹唱入门班", "中山公园尤克里里草坪合奏"), lambda F: "instrument" in F),
    ("f27", "中山公园 读书会", "lexical", t("中山公园草坪读书会"), t("思南书局诗歌读书会")),
    ("f28", "匹克球", "lexical", t("匹克球新手体验"), lambda F: "racket" in F),
    ("f29", "掼蛋", "lexical", t("掼蛋擂台赛"), lambda F: "cards" in F),
    ("f30", "冲浪", "lexical", t("室内冲浪体验"), t("滨江陆冲入门")),
    ("f31", "朱家角", "lexical", lambda F: "@朱家角" in F, None),
    ("f32", "马拉松", "lexical", t("环湖半程马拉松"), lambda F: "run" in F),
    ("f33", "拼豆", "lexical", t("拼豆钥匙扣手作"), None),
    ("f34", "citywalk", "lexical", t("北外滩Citywalk：老虹口里弄", "张园石库门citywalk"), lambda F: "citywalk" in F),
    ("f35", "脱口秀", "lexical", t("新人脱口秀开放麦"), lambda F: "comedy" in F),
    ("f36", "周五晚上想热闹一下", "time_vibe", lambda F: "loud" in F, None, ([4], (18, 23))),
    ("f37", "周六上午出身汗", "time_vibe", lambda F: "sweat" in F, None, ([5], (5, 11))),
    ("f38", "周日下午找个地方发呆", "time_vibe", lambda F: "rest" in F, None, ([6], (12, 17))),
    ("f39", "周三晚上下班后做点手工", "time_vibe", lambda F: "creative" in F, None, ([2], (18, 23))),
    ("f40", "工作日下午陪家里老人出去", "time_vibe", lambda F: "elders" in F, None, ([0, 1, 2, 3, 4], (12, 17))),
    ("f41", "周末上午带孩子去户外", "time_vibe", lambda F: {"kids", "outdoor"} <= F, None, ([5, 6], (5, 11))),
    ("f42", "周四晚上约个饭局认识新朋友", "time_vibe", lambda F: {"food", "mingle"} <= F, None, ([3], (18, 23))),
    ("f43", "下周一早上想动一动", "time_vibe", lambda F: "move" in F, None, ([0], (5, 11))),
    ("f44", "周六晚上和对象过", "time_vibe", lambda F: "date" in F, None, ([5], (18, 23))),
    ("f45", "周日上午带狗出去溜达", "time_vibe", lambda F: "dogs" in F, None, ([6], (5, 11))),
]


def start(weekday, hour):
    return (MONDAY + timedelta(days=weekday, hours=hour)).astimezone(timezone.utc)


def main():
    activities = []
    for i, (title, kind, tags, desc, cap, wd, hour, place, facets) in enumerate(A):
        lat, lng = PLACES[place]
        assert 0 <= wd <= 6 and 6 <= hour <= 23, title
        assert 1 <= len(tags) <= 3, title
        activities.append({
            "id": f"fr-{i + 1:03d}",
            "title": title,
            "description": desc,
            "type": kind,
            "tags": tags,
            "startAt": start(wd, hour).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "locationName": f"上海{place}",
            "location": {"lat": round(lat + 0.0007 * (i % 5) - 0.0014, 4), "lng": round(lng + 0.0006 * (i % 7) - 0.0018, 4)},
            "status": "active",
            "currentParticipants": 0,
            "maxParticipants": cap,
            "_facets": set(facets.split()) | {"_" + title, "@" + place},
            "_time": (wd, hour),
        })
    assert len({a["title"] for a in activities}) == len(activities), "duplicate title"
    assert len({a["id"] for a in activities}) == len(activities), "duplicate id"
    assert len({q[0] for q in Q}) == len(Q), "duplicate query id"
    kinds = [q[2] for q in Q]
    assert (kinds.count("intent"), kinds.count("lexical"), kinds.count("time_vibe")) == (25, 10, 10)
    titles = {a["title"] for a in activities}
    assert set(NAMED) <= titles, set(NAMED) - titles
    queries = []
    for qid, text, kind, full, part, *when in Q:
        graded = {}
        for a in activities:
            F = a["_facets"]
            grade = 2 if full(F) else 1 if part and part(F) else 0
            if when:
                days, (lo, hi) = when[0]
                wd, hour = a["_time"]
                if grade and not (wd in days and lo <= hour <= hi):
                    grade = 1
            if grade:
                graded[a["id"]] = grade
        assert sum(g == 2 for g in graded.values()) >= 1, qid
        queries.append({"id": qid, "query": text, "kind": kind, "split": "holdout", "relevant": graded})
    with open(HERE / "activities.jsonl", "w") as f:
        for a in activities:
            f.write(json.dumps({k: v for k, v in a.items() if not k.startswith("_")}, ensure_ascii=False) + "\n")
    with open(HERE / "queries.jsonl", "w") as f:
        for q in queries:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")
    print(f"{len(activities)} activities, {len(queries)} queries")
    for q in queries:
        print(q["id"], q["split"], q["kind"], sum(g == 2 for g in q["relevant"].values()),
              sum(g == 1 for g in q["relevant"].values()), q["query"])


if __name__ == "__main__":
    main()
