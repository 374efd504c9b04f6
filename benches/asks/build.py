"""Builds the second quality set, the other way round from `benches/intent/`: queries first.

The queries were written first, from seed 004's user stories and from how people actually ask
(colloquial asks, negations such as "不要太吵" / "不用花钱" / "不喝酒", constraints such as
"下雨天也能去" / "狗狗也能一起去"); then activities were written to answer them, each judged by
facets anyone can check (is it quiet, free, indoors, does it need talking to strangers...),
and decoys that share a query's words but not its intent ("热狗大胃王" for dogs, "安静不了的
电音夜" for quiet, "雨后竹林徒步" for rain). A query is a rule over the facets: activities it
fully satisfies get grade 2, partly grade 1.

Kinds: intent (no word needed in common), lexical (an exact name), time_vibe (a time and a
facet: at that time grade 2, at another time grade 1). Split: every other query of the first 40
is `test`, sealed (written and committed before any tuning) and read once; the 24 `holdout`
queries were written after that reading, before any further choice, and are read once more at
the end.
Reference now: Sunday 2026-11-22 12:00 Asia/Shanghai; activities fall in the next 7 days.
Run: python3 benches/asks/build.py
"""
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

SH = timezone(timedelta(hours=8))
MONDAY = datetime(2026, 11, 23, tzinfo=SH)
HERE = Path(__file__).parent

PLACES = [
    ("徐汇滨江", 31.1800, 121.4600), ("静安寺", 31.2230, 121.4450), ("五角场", 31.3010, 121.5140),
    ("世纪公园", 31.2150, 121.5500), ("新天地", 31.2190, 121.4750), ("田子坊", 31.2080, 121.4690),
    ("前滩", 31.1500, 121.4800), ("大学路", 31.3060, 121.5100), ("武康路", 31.2060, 121.4380),
    ("共青森林公园", 31.3250, 121.5330), ("七宝古镇", 31.1560, 121.3500), ("陆家嘴", 31.2400, 121.5000),
]

# Facets: quiet loud free cheap pricey indoor outdoor sweat move rest solo_ok mingle kids dogs
# alcohol learn creative food nature culture brain music date volunteer decompress release
# gentle offline sun water water_easy group_fun scary
# title, type, tags, description, max participants, weekday (0 = Mon), hour, facets
A = [
    ("午后绘本图书馆", "阅读", ["书", "绘本"], "社区图书馆的角落里随便翻书，没人打扰，待多久都行，入场不收费。", 20, 2, 14, "quiet free indoor rest solo_ok culture decompress gentle offline"),
    ("古籍修复体验", "文化", ["古籍", "修复"], "跟修复师学补一页旧书，禁止大声喧哗，一下午只听见纸的声音。", 8, 5, 14, "quiet indoor learn creative culture solo_ok gentle offline"),
    ("禅寺抄经", "文化", ["抄经", "书法"], "在寺院偏殿抄一段心经，全程止语，结束后喝一碗素茶。", 15, 6, 9, "quiet indoor rest solo_ok culture decompress gentle offline cheap"),
    ("漂浮舱疗愈", "健康", ["漂浮", "疗愈"], "躺进恒温盐水舱，关灯，一小时什么也感觉不到，脑子放空。", 1, 3, 19, "quiet indoor rest solo_ok decompress pricey offline"),
    ("森林浴静走", "户外", ["森林", "步行"], "在林子里慢慢走两小时，向导会让大家关掉手机，只听风声。", 12, 5, 9, "quiet outdoor move nature decompress gentle offline solo_ok sun"),
    ("湖边垂钓", "户外", ["钓鱼", "湖"], "租一根竿坐在湖边，一坐就是半天，钓不钓得到无所谓。", 20, 6, 8, "quiet outdoor rest solo_ok nature decompress gentle offline sun"),
    ("安静不了的电音之夜", "派对", ["电音", "DJ"], "低音炮震到胸口，灯光乱闪，整晚都安静不了。", 400, 5, 22, "loud indoor release alcohol mingle group_fun"),
    ("吵架与和解：伴侣沟通工作坊", "沙龙", ["沟通", "伴侣"], "心理咨询师讲怎么吵架不伤感情，两人一组练习表达。", 20, 3, 19, "indoor learn date"),
    ("公园草坪音乐会", "音乐", ["音乐会", "草坪"], "乐团在草坪上演奏古典曲目，自带野餐垫，免费入场。", 300, 6, 15, "free outdoor music culture sun gentle kids dogs decompress"),
    ("博物馆免费开放日", "展览", ["博物馆", "文物"], "市博物馆青铜器馆免预约参观，志愿者讲解。", 500, 1, 10, "free indoor culture quiet gentle kids solo_ok learn"),
    ("花钱买开心：奢侈品鉴赏酒会", "品鉴", ["奢侈品", "香槟"], "香槟塔、珠宝展示，着正装入场，门票八百。", 60, 4, 20, "pricey indoor alcohol mingle"),
    ("江边免费跑团", "运动", ["跑步", "跑团"], "每周固定一次，五公里慢跑，谁都能来，不收一分钱。", 50, 1, 19, "free outdoor sweat mingle group_fun"),
    ("社区公益跳蚤市场", "市集", ["二手", "市集"], "居民摆摊换旧物，进场不要钱，逛一圈能淘到宝。", 200, 5, 10, "free outdoor mingle kids dogs cheap sun"),
    ("雨后竹林徒步", "户外", ["徒步", "竹林"], "走十公里竹林山路，下雨顺延，路面湿滑需要登山鞋。", 25, 5, 8, "outdoor sweat nature offline"),
    ("室内攀岩体验", "运动", ["攀岩", "岩馆"], "岩馆里有教练保护，新手也能爬上第一条线，风雨无阻。", 12, 2, 19, "indoor sweat learn"),
    ("室内滑雪模拟", "运动", ["滑雪", "室内"], "在旋转雪毯上学犁式刹车，室内恒温，不受天气影响。", 6, 5, 15, "indoor sweat learn pricey"),
    ("商场里的保龄球局", "运动", ["保龄球", "球馆"], "在商场顶楼打三局保龄球，动一动又不会太累，输的请奶茶。", 12, 4, 20, "indoor move mingle group_fun gentle"),
    ("室内射箭馆", "运动", ["射箭", "弓箭"], "教练教站姿和撒放，射二十支箭，专注又不费力。", 8, 6, 14, "indoor move learn solo_ok quiet"),
    ("一人食深夜食堂", "美食", ["一人食", "拉面"], "吧台座位一人一碗拉面，老板不多话，独自来的人最多。", 12, 4, 21, "indoor food solo_ok quiet cheap"),
    ("独自看展的下午", "展览", ["展览", "摄影展"], "摄影展按自己的节奏看，耳机里有语音导览，不用跟人搭话。", 50, 5, 15, "indoor culture quiet solo_ok gentle"),
    ("尴尬破冰大作战", "交友", ["破冰", "配对"], "陌生人两两配对完成十个任务，越尴尬越好笑。", 40, 5, 19, "indoor mingle loud laugh group_fun"),
    ("陌生人晚餐", "交友", ["拼桌", "晚餐"], "六个素不相识的人拼一桌吃饭，主持人抛话题。", 6, 3, 19, "indoor food mingle"),
    ("新人城市探索团", "交友", ["城市探索", "新朋友"], "专为刚来上海的人组织，十来个人一起走街串巷，结束后加群常约。", 15, 5, 14, "outdoor move mingle culture group_fun"),
    ("桌游吧开放夜", "桌游", ["桌游", "阿瓦隆"], "店员帮你拼桌，和不认识的人一起玩阿瓦隆，很快就熟了。", 30, 4, 19, "indoor brain mingle group_fun laugh"),
    ("认识中草药：植物园导览", "自然", ["植物园", "中草药"], "老药师讲园里每种草药的用法，边走边看。", 20, 6, 10, "outdoor nature learn gentle move sun quiet"),
    ("亲子陶泥捏捏乐", "亲子", ["陶泥", "亲子"], "四到八岁的孩子和家长一起捏小动物，弄脏也没关系。", 16, 5, 10, "indoor kids creative learn"),
    ("农场喂小羊", "亲子", ["农场", "动物"], "郊区农场里给小羊喂草、捡鸡蛋，孩子会玩疯。", 30, 6, 9, "outdoor kids nature sun"),
    ("儿童科学剧场", "亲子", ["科学", "剧场"], "演员在台上做泡泡和静电实验，三到八岁都能看懂。", 100, 6, 10, "indoor kids learn laugh"),
    ("手作娃衣缝制课", "手作", ["娃衣", "缝纫"], "给收藏的BJD娃娃缝一件衣服，成人向，需要一点耐心。", 8, 2, 19, "indoor creative learn quiet"),
    ("娃娃机大赛", "娱乐", ["娃娃机", "比赛"], "成年人的抓娃娃比赛，计时赛，现场起哄声不断。", 40, 4, 21, "indoor loud group_fun laugh"),
    ("温泉酒店放空日", "休闲", ["温泉", "酒店"], "泡汤、午睡、吃自助，一整天不安排任何事。", 30, 5, 11, "indoor rest decompress water water_easy gentle pricey solo_ok"),
    ("头疗SPA体验", "健康", ["头疗", "SPA"], "技师按头一小时，很多人躺着就睡着了。", 4, 3, 20, "indoor rest decompress quiet solo_ok"),
    ("躺平不了的高强度HIIT", "运动", ["HIIT", "燃脂"], "四十分钟高强度间歇，躺平是不可能的，练完腿软。", 20, 0, 19, "indoor sweat release"),
    ("不怕累的越野跑挑战", "运动", ["越野跑", "挑战"], "二十公里山地越野，爬升八百米，只适合有底子的人。", 100, 5, 7, "outdoor sweat nature"),
    ("太极晨练", "运动", ["太极", "晨练"], "公园里跟老师傅打一套二十四式，慢而不累。", 30, 6, 7, "outdoor move gentle quiet sun decompress free"),
    ("城市骑行慢游", "户外", ["骑行", "单车"], "骑共享单车逛梧桐区，每隔两公里停下拍照，不比速度。", 20, 6, 14, "outdoor move sun culture"),
    ("双人陶艺约会课", "手作", ["陶艺", "情侣"], "两人共用一台拉坯机，做一对杯子，烧好后寄到家。", 10, 5, 19, "indoor creative date learn quiet"),
    ("屋顶烛光晚餐", "美食", ["晚餐", "烛光"], "在外滩边的屋顶花园，烛光、小提琴和法餐。", 20, 3, 19, "outdoor food date music pricey alcohol"),
    ("女生专场防身术", "运动", ["防身", "女生"], "教练教几招实用的挣脱技巧，练完一身汗。", 15, 2, 19, "indoor sweat learn"),
    ("夜游黄浦江", "观光", ["夜景", "游船"], "坐船看两岸灯火，甲板上吹风，适合两个人。", 80, 3, 20, "outdoor date culture gentle"),
    ("木工小凳子", "手作", ["木工", "凳子"], "锯、刨、打磨，一下午做出一张能坐的小板凳带回家。", 8, 6, 14, "indoor creative learn"),
    ("植物染围巾", "手作", ["植物染", "围巾"], "用洋葱皮和苏木染一条棉围巾，成品归自己。", 10, 5, 14, "indoor creative learn quiet"),
    ("带回家的二手书市集", "市集", ["二手书", "市集"], "几百本旧书论斤卖，挑满一袋带回家。", 200, 6, 11, "outdoor cheap culture solo_ok"),
    ("无酒精桌游狂欢夜", "桌游", ["桌游", "派对"], "只供应果汁和汽水，二十人分组玩谁是卧底和德国心脏病，笑到停不下来。", 20, 5, 20, "indoor brain group_fun loud laugh mingle"),
    ("即兴喜剧工作坊", "演出", ["即兴", "喜剧"], "跟着老师做即兴表演游戏，不需要经验，全场爆笑。", 16, 4, 19, "indoor laugh group_fun loud mingle learn"),
    ("喝酒游戏之夜", "派对", ["酒", "游戏"], "啤酒塔加骰子游戏，输了就喝，越晚越疯。", 30, 5, 21, "indoor alcohol loud group_fun mingle release"),
    ("精酿酒馆品鉴", "品酒", ["精酿", "啤酒"], "八款本地精酿小杯试饮，酿酒师讲麦芽和酒花。", 12, 4, 20, "indoor alcohol learn"),
    ("狗狗友好露营", "户外", ["露营", "狗"], "营地有围栏草坪，可以带毛孩子一起搭帐篷过夜。", 30, 5, 14, "outdoor dogs nature sun offline"),
    ("带宠物的咖啡馆聚会", "宠物", ["咖啡", "宠物"], "店里欢迎牵绳的狗，主人们喝咖啡聊养宠经验。", 20, 6, 14, "indoor dogs mingle"),
    ("热狗大胃王挑战", "美食", ["热狗", "比赛"], "十分钟吃热狗比赛，观众加油声震天。", 50, 5, 15, "outdoor food loud laugh group_fun"),
    ("太阳能小车科普课", "亲子", ["太阳能", "科普"], "在教室里组装一辆太阳能小车，带回家。", 20, 5, 14, "indoor kids learn creative"),
    ("屋顶日光瑜伽", "运动", ["瑜伽", "屋顶"], "在屋顶露台做舒缓瑜伽，晒着冬天的阳光拉伸。", 15, 6, 10, "outdoor move sun decompress gentle quiet"),
    ("江边草坪野餐", "户外", ["野餐", "草坪"], "铺开垫子晒太阳，带点水果零食，躺着聊聊天。", 30, 5, 12, "outdoor rest sun food decompress kids dogs free"),
    ("数学谜题夜", "益智", ["谜题", "数学"], "十道经典谜题限时解答，最后公布思路。", 20, 2, 20, "indoor brain quiet learn"),
    ("国际象棋快棋赛", "棋类", ["国际象棋", "快棋"], "每方五分钟，瑞士制七轮，新手也能报名。", 32, 6, 14, "indoor brain quiet"),
    ("脑子放空的颂钵冥想", "冥想", ["颂钵", "冥想"], "听钵音躺一小时，什么都不用想。", 12, 4, 20, "indoor rest quiet decompress solo_ok gentle offline"),
    ("推理小说读书会", "读书会", ["推理", "读书会"], "每人读同一本推理小说，现场讨论凶手的诡计。", 15, 3, 19, "indoor brain culture learn"),
    ("密室逃脱：古宅惊魂", "密室", ["密室", "恐怖"], "全黑环境加真人NPC，尖叫不断，胆小慎入。", 6, 5, 20, "indoor brain scary loud group_fun release"),
    ("KTV包厢嗨唱", "娱乐", ["KTV", "唱歌"], "包厢里抢麦唱到嗓子哑，歌单随便点。", 12, 5, 21, "indoor loud music release group_fun"),
    ("拳击沙袋释放课", "运动", ["拳击", "沙袋"], "一小时猛打沙袋，教练鼓励大家喊出来。", 15, 0, 20, "indoor sweat release loud"),
    ("愤怒屋砸东西", "体验", ["解压", "砸"], "戴好护具拿棒球棍砸碎旧盘子和电视机，随便喊。", 2, 3, 20, "indoor release loud"),
    ("黑胶唱片静听会", "音乐", ["黑胶", "唱片"], "关灯坐着从头到尾听完一张专辑，中间不说话。", 20, 2, 20, "indoor quiet music solo_ok decompress"),
    ("社区老年合唱团", "音乐", ["合唱", "社区"], "每周排练红歌和民歌，节奏慢，欢迎爸妈辈加入。", 40, 1, 9, "indoor music gentle mingle free"),
    ("公园门球友谊赛", "运动", ["门球", "公园"], "规则简单、走动不多，退休的叔叔阿姨是主力。", 20, 3, 9, "outdoor move gentle mingle sun free"),
    ("老人与海读书会", "读书会", ["海明威", "读书会"], "共读海明威的中篇，讨论人与命运，年轻人为主。", 15, 3, 19, "indoor culture quiet learn"),
    ("评弹茶馆下午场", "演出", ["评弹", "茶馆"], "一壶茶听两回评弹，苏州话慢悠悠。", 60, 2, 14, "indoor culture music gentle quiet cheap"),
    ("无手机山居一日", "户外", ["山居", "数字排毒"], "入住时交出手机，劈柴、做饭、看山，一整天与世隔绝。", 12, 5, 9, "outdoor offline nature rest decompress"),
    ("手机摄影夜拍课", "摄影", ["手机摄影", "夜景"], "讲手机夜景模式和构图，边走边拍外滩。", 15, 4, 19, "outdoor learn creative"),
    ("海岛观潮徒步", "户外", ["海边", "徒步"], "沿海堤走八公里看潮水，风大，信号时有时无。", 20, 6, 8, "outdoor nature sweat offline sun"),
    ("大学食堂探店", "美食", ["食堂", "探店"], "带你混进三所大学食堂，十五块吃到撑。", 10, 2, 12, "indoor food cheap mingle"),
    ("苍蝇馆子扫街", "美食", ["小馆子", "扫街"], "一晚吃五家老字号小馆，人均五十吃到扶墙出。", 8, 4, 18, "outdoor food cheap group_fun"),
    ("吃饱再来的消食健步走", "运动", ["健步走", "饭后"], "晚饭后沿河快走四公里，不吃东西。", 30, 1, 19, "outdoor move gentle free"),
    ("米其林主厨餐桌", "美食", ["米其林", "主厨"], "十二道菜的品鉴菜单，配酒另计，人均两千。", 10, 5, 19, "indoor food pricey alcohol date"),
    ("当代艺术导览", "展览", ["当代艺术", "导览"], "策展人讲解装置和影像作品，看完一起聊感受。", 20, 6, 15, "indoor culture learn quiet"),
    ("美甲艺术速成班", "手作", ["美甲", "彩绘"], "学三种指甲彩绘，做完给自己涂一套。", 8, 5, 14, "indoor creative learn"),
    ("昆曲入门赏析", "演出", ["昆曲", "戏曲"], "演员示范水袖和唱腔，讲一出牡丹亭。", 40, 6, 14, "indoor culture music quiet gentle"),
    ("流浪猫救助站志愿", "公益", ["志愿", "流浪猫"], "帮救助站清洁猫舍、喂猫、登记领养信息。", 12, 5, 9, "indoor volunteer"),
    ("社区长者陪伴", "公益", ["长者", "陪伴"], "去养老院陪老人聊天、读报、下象棋。", 15, 6, 14, "indoor volunteer gentle quiet"),
    ("海滩捡垃圾", "公益", ["环保", "净滩"], "一起清理滩涂上的塑料垃圾，提供手套和午餐。", 40, 5, 9, "outdoor volunteer nature sun move mingle free"),
    ("有用的Excel技巧课", "沙龙", ["Excel", "效率"], "两小时学会数据透视表和常用函数。", 40, 2, 19, "indoor learn"),
    ("游泳健将：公开水域1500米", "运动", ["游泳", "公开水域"], "在湖里游1500米，需要能连续自由泳，有救生艇跟随。", 50, 6, 8, "outdoor water sweat"),
    ("浅水区亲水乐园", "亲子", ["戏水", "乐园"], "水深不过膝的戏水区和滑梯，不会游泳也能玩。", 200, 5, 14, "indoor water water_easy kids laugh"),
    ("皮划艇湖上体验", "户外", ["皮划艇", "湖"], "穿好救生衣在平静湖面划艇，不会游泳也没关系。", 12, 6, 10, "outdoor water water_easy move nature sun"),
    ("潜水考证课", "运动", ["潜水", "考证"], "开放水域潜水员课程，先要通过游泳测试。", 6, 5, 9, "indoor water learn sweat pricey"),
    ("好好吃饭：正念饮食冥想", "冥想", ["正念", "饮食"], "一颗葡萄嚼五分钟，练习专注当下，不是聚餐。", 12, 3, 12, "indoor quiet decompress rest solo_ok"),
    ("本帮菜私房宴", "美食", ["本帮菜", "私房菜"], "红烧肉、油爆虾、腌笃鲜，八个人一张圆桌吃个痛快。", 8, 5, 18, "indoor food mingle alcohol"),
    ("治愈系恐怖片之夜", "电影", ["恐怖片", "放映"], "号称治愈系，其实连放三部惊悚片，胆小勿入。", 40, 5, 21, "indoor scary culture loud"),
    ("猫咖撸猫", "宠物", ["猫咖", "猫"], "点一杯饮料，和十几只猫待一下午，猫会趴到你腿上。", 15, 6, 14, "indoor decompress rest solo_ok quiet"),
    ("花园下午茶", "美食", ["下午茶", "花园"], "玻璃花房里喝茶吃司康，晒着太阳慢慢聊。", 10, 6, 15, "indoor food sun decompress date gentle"),
    ("飞盘新手局", "运动", ["飞盘", "草地"], "极限飞盘规则教学加分队比赛，跑满全场。", 20, 5, 9, "outdoor sweat mingle group_fun sun"),
    ("剧本杀：民国谍影", "剧本杀", ["剧本杀", "谍战"], "七人谍战本，角色扮演加推理，需要多发言。", 7, 4, 19, "indoor brain mingle group_fun"),
    ("桨板日落巡游", "户外", ["桨板", "SUP"], "傍晚站上桨板划到湖心看日落，可能会落水。", 10, 6, 16, "outdoor water move nature sun date"),
    ("图书馆读书会", "读书会", ["读书会", "共读"], "每月共读一本书，轮流分享读后感。", 20, 1, 19, "indoor culture quiet learn free mingle"),
    ("爵士现场小馆", "音乐", ["爵士", "现场"], "三重奏现场演出，点一杯鸡尾酒听到深夜。", 40, 5, 21, "indoor music alcohol date"),
    ("羽毛球约球", "运动", ["羽毛球", "双打"], "两小时场地轮换双打，中等水平。", 12, 3, 20, "indoor sweat mingle"),
    ("哈他瑜伽初级", "运动", ["瑜伽", "哈他"], "一个半小时慢节奏瑜伽，重在呼吸和伸展。", 15, 1, 19, "indoor move decompress quiet gentle"),
]

# id, query, kind, rule for grade 2, rule for grade 1 (over the facet set F), time or None
Q = [
    ("i01", "不要太吵，想找个地方安安静静待着", "intent", lambda F: {"quiet"} <= F and "sweat" not in F, lambda F: "quiet" in F),
    ("i02", "不用花钱的周末去处", "intent", lambda F: "free" in F, lambda F: "cheap" in F),
    ("i03", "下雨天也能去，想动一动", "intent", lambda F: "indoor" in F and ("sweat" in F or "move" in F), lambda F: "indoor" in F),
    ("i04", "一个人去也不会尴尬的", "intent", lambda F: "solo_ok" in F, lambda F: False),
    ("i05", "刚搬来上海，想多认识几个人", "intent", lambda F: "mingle" in F and "group_fun" in F, lambda F: "mingle" in F),
    ("i06", "周末遛娃，孩子五岁", "intent", lambda F: "kids" in F, lambda F: False),
    ("i07", "连续加班一周，只想躺平回血", "intent", lambda F: {"decompress", "rest"} <= F, lambda F: "decompress" in F),
    ("i08", "想动一动，但不想累到喘不过气", "intent", lambda F: "move" in F, lambda F: False),
    ("i09", "和女朋友过纪念日，想要点氛围感", "intent", lambda F: "date" in F, lambda F: False),
    ("i10", "想学个能带回家的手艺", "intent", lambda F: {"creative", "learn"} <= F, lambda F: "creative" in F),
    ("i11", "不喝酒也能玩得尽兴的晚上", "intent", lambda F: "group_fun" in F and "alcohol" not in F, lambda F: "laugh" in F and "alcohol" not in F),
    ("i12", "狗狗也能一起去的", "intent", lambda F: "dogs" in F, lambda F: False),
    ("i13", "冬天想晒晒太阳", "intent", lambda F: "sun" in F and "outdoor" in F, lambda F: "sun" in F),
    ("i14", "脑子生锈了想转一转", "intent", lambda F: "brain" in F, lambda F: False),
    ("i15", "想大吼大叫发泄一下", "intent", lambda F: "release" in F, lambda F: "loud" in F),
    ("i16", "社恐，不想跟陌生人聊天", "intent", lambda F: "solo_ok" in F and "mingle" not in F, lambda F: "quiet" in F and "mingle" not in F),
    ("i17", "爸妈六十多岁了，能一起参加的", "intent", lambda F: "gentle" in F, lambda F: False),
    ("i18", "想离手机远一点", "intent", lambda F: "offline" in F, lambda F: "nature" in F),
    ("i19", "预算有限，想吃顿饱的", "intent", lambda F: "food" in F and ("cheap" in F or "free" in F), lambda F: "food" in F and "pricey" not in F),
    ("i20", "想感受一下艺术的熏陶", "intent", lambda F: "culture" in F and "quiet" in F, lambda F: "culture" in F),
    ("i21", "想做点对别人有用的事", "intent", lambda F: "volunteer" in F, lambda F: False),
    ("i22", "想玩水但是不会游泳", "intent", lambda F: "water_easy" in F, lambda F: "water" in F),
    ("i23", "找个地方好好吃一顿", "intent", lambda F: "food" in F, lambda F: False),
    ("i24", "心情不好想被治愈一下", "intent", lambda F: "decompress" in F, lambda F: "quiet" in F),
    ("l01", "飞盘", "lexical", lambda F: "_飞盘新手局" in F, lambda F: "group_fun" in F and "sweat" in F),
    ("l02", "陶艺", "lexical", lambda F: "_双人陶艺约会课" in F, lambda F: "_亲子陶泥捏捏乐" in F),
    ("l03", "剧本杀", "lexical", lambda F: "_剧本杀：民国谍影" in F, lambda F: "_密室逃脱：古宅惊魂" in F),
    ("l04", "桨板", "lexical", lambda F: "_桨板日落巡游" in F, lambda F: "water" in F and "move" in F),
    ("l05", "读书会", "lexical", lambda F: "_图书馆读书会" in F or "_推理小说读书会" in F or "_老人与海读书会" in F, lambda F: False),
    ("l06", "爵士", "lexical", lambda F: "_爵士现场小馆" in F, lambda F: "music" in F and "alcohol" in F),
    ("l07", "瑜伽", "lexical", lambda F: "_屋顶日光瑜伽" in F or "_哈他瑜伽初级" in F, lambda F: False),
    ("l08", "羽毛球", "lexical", lambda F: "_羽毛球约球" in F, lambda F: False),
    ("t01", "周六上午去户外走走", "time_vibe", lambda F: "outdoor" in F, None, ([5], (5, 11))),
    ("t02", "工作日下班后放松一下", "time_vibe", lambda F: "decompress" in F, None, ([0, 1, 2, 3, 4], (18, 23))),
    ("t03", "周日下午安静点的", "time_vibe", lambda F: "quiet" in F, None, ([6], (12, 17))),
    ("t04", "周五晚上喝一杯", "time_vibe", lambda F: "alcohol" in F, None, ([4], (18, 23))),
    ("t05", "周末早上运动一下", "time_vibe", lambda F: "sweat" in F or "move" in F, None, ([5, 6], (5, 11))),
    ("t06", "周二晚上学点新东西", "time_vibe", lambda F: "learn" in F, None, ([1], (18, 23))),
    ("t07", "周日上午带孩子出去", "time_vibe", lambda F: "kids" in F, None, ([6], (5, 11))),
    ("t08", "周六晚上热闹点的", "time_vibe", lambda F: "loud" in F, None, ([5], (18, 23))),
]

# A second held-out split, `holdout`: written and committed after the test split had been read
# once (issue 19), before any further choice; read once, at the end.
H = [
    ("h01", "想找个不花钱就能逛的地方", "intent", lambda F: "free" in F, lambda F: "cheap" in F),
    ("h02", "一个人吃饭也不尴尬的", "intent", lambda F: {"food", "solo_ok"} <= F, lambda F: "solo_ok" in F),
    ("h03", "带狗狗出去撒欢", "intent", lambda F: "dogs" in F, lambda F: False),
    ("h04", "天冷不想在外面冻着", "intent", lambda F: "indoor" in F, lambda F: False),
    ("h05", "下班后想好好放松，别太费劲", "intent", lambda F: "decompress" in F and ("rest" in F or "gentle" in F), lambda F: "decompress" in F),
    ("h06", "想练练胆子，来点刺激的", "intent", lambda F: "scary" in F, lambda F: "release" in F),
    ("h07", "和几个陌生人一起玩，顺便交朋友", "intent", lambda F: {"mingle", "group_fun"} <= F, lambda F: "mingle" in F),
    ("h08", "想学点能用在生活里的本事", "intent", lambda F: "learn" in F, lambda F: False),
    ("h09", "安安静静看看展、听听戏", "intent", lambda F: {"culture", "quiet"} <= F, lambda F: "culture" in F),
    ("h10", "想吃顿贵的犒劳自己", "intent", lambda F: {"food", "pricey"} <= F, lambda F: "food" in F),
    ("h11", "孩子精力太旺盛了，想带他去消耗一下", "intent", lambda F: "kids" in F, lambda F: False),
    ("h12", "想和另一半有点两个人的时光", "intent", lambda F: "date" in F, lambda F: False),
    ("h13", "压力好大，想砸东西", "intent", lambda F: "release" in F, lambda F: "loud" in F),
    ("h14", "想出点汗，但是膝盖不好", "intent", lambda F: "move" in F, lambda F: "sweat" in F),
    ("h15", "皮划艇", "lexical", lambda F: "_皮划艇湖上体验" in F, lambda F: "water" in F and "move" in F),
    ("h16", "黑胶", "lexical", lambda F: "_黑胶唱片静听会" in F, lambda F: False),
    ("h17", "射箭", "lexical", lambda F: "_室内射箭馆" in F, lambda F: False),
    ("h18", "昆曲", "lexical", lambda F: "_昆曲入门赏析" in F, lambda F: "culture" in F and "music" in F),
    ("h19", "攀岩", "lexical", lambda F: "_室内攀岩体验" in F, lambda F: False),
    ("h20", "周四晚上约会", "time_vibe", lambda F: "date" in F, None, ([3], (18, 23))),
    ("h21", "周日下午带孩子", "time_vibe", lambda F: "kids" in F, None, ([6], (12, 17))),
    ("h22", "周六白天去户外晒太阳", "time_vibe", lambda F: {"sun", "outdoor"} <= F, None, ([5], (5, 17))),
    ("h23", "周三晚上动动脑", "time_vibe", lambda F: "brain" in F, None, ([2], (18, 23))),
    ("h24", "周五晚上吃点好的", "time_vibe", lambda F: "food" in F, None, ([4], (18, 23))),
]


def start(weekday, hour):
    return (MONDAY + timedelta(days=weekday, hours=hour)).astimezone(timezone.utc)


def main():
    activities = []
    for i, (title, kind, tags, desc, cap, wd, hour, facets) in enumerate(A):
        place, lat, lng = PLACES[i % len(PLACES)]
        activities.append({
            "id": f"ask-{i + 1:03d}",
            "title": title,
            "description": desc,
            "type": kind,
            "tags": tags,
            "startAt": start(wd, hour).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "locationName": f"上海{place}",
            "location": {"lat": round(lat + 0.001 * (i % 7), 4), "lng": round(lng - 0.001 * (i % 5), 4)},
            "status": "active",
            "currentParticipants": 0,
            "maxParticipants": cap,
            "_facets": set(facets.split()) | {"_" + title},
            "_time": (wd, hour),
        })
    assert len({a["title"] for a in activities}) == len(activities)
    queries = []
    for n, (qid, text, kind, full, part, *when) in enumerate(Q + H):
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
        split = "holdout" if n >= len(Q) else "test" if n % 2 else "dev"
        queries.append({"id": qid, "query": text, "kind": kind, "split": split, "relevant": graded})
    with open(HERE / "activities.jsonl", "w") as f:
        for a in activities:
            f.write(json.dumps({k: v for k, v in a.items() if not k.startswith("_")}, ensure_ascii=False) + "\n")
    with open(HERE / "queries.jsonl", "w") as f:
        for q in queries:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")
    print(f"{len(activities)} activities, {len(queries)} queries")
    for q in queries:
        print(q["id"], q["split"], q["kind"], sum(g == 2 for g in q["relevant"].values()), sum(g == 1 for g in q["relevant"].values()))


if __name__ == "__main__":
    main()
