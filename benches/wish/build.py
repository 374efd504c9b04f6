"""Sealed evaluation set "wish": vague Chinese wishes -> Shanghai activities.

Written 2026-11-27, queries first, by an author who did not read the ranking
code or any other evaluation set. The 56 queries were written before any
activity existed; the activities were then written to answer them and to
set traps. Grades come from facet rules, not from word overlap.

Run: python3 benches/wish/build.py
Writes activities.jsonl and queries.jsonl next to this file (UTF-8,
ensure_ascii=False, one JSON object per line) and validates them.

Reference "now": Sunday 2026-11-22 12:00 Asia/Shanghai (UTC+8).
Every activity starts between Monday 2026-11-23 00:00 and Sunday
2026-12-06 23:59 Shanghai time. startAt is stored in UTC ("...Z"). In the
table below times are written in Shanghai local time and converted.
Relative days in the queries: 明天/明晚 = Mon 11-23, 周三 = 11-25,
周五 = 11-27, 这周六 = 11-28, 29号周日 = 11-29, 12月5号 = Sat 12-05.

FACET VOCABULARY (judged by hand from each activity's title + description;
each activity carries one space-separated string of facets)
  vibe / energy
    quiet        the setting is quiet; little noise or talk
    lively       loud, buzzing, party-like (热闹)
    relaxing     low stress, chill, restful
    healing      soothing / 治愈 (animals, plants, gentle making, sound baths)
    light_move   gentle movement: stretching, strolling, tai chi   (=> active)
    active       moves the body at all
    sweaty       a real workout, you will sweat                    (=> active)
    intense      brutal / demanding physically         (=> sweaty, active)
    thrill       adrenaline, fear, speed, heights (刺激)
    vent         letting off steam: hitting, smashing, shouting, drumming
    funny        built to make you laugh
    brain        puzzles, strategy, deduction, thinking hard
    artsy        文艺: art, film, poetry, galleries
  social
    mingle       talking to strangers is expected / the point
    solo_ok      fine to come alone and stay to yourself
    small_group  roughly 12 people or fewer together
    big_crowd    dozens to hundreds of people, crowded
    networking   business / career networking or sales-for-professionals
    singles      singles-only dating format
    friends      good to come as a group of friends
    speak_english  practise spoken English with others (adults)
  setting
    indoor outdoor nature(green space, wetland, hills, lake, wild animals)
    late         runs past ~23:00 or overnight (night owls can go)
  content
    food(eating is central)  snack(some food/drink included, not central)
    alcohol(drinking is a main part)  learn(structured teaching)
    creative(you make something)  takehome(you leave with what you made/got)
    culture(heritage / performing arts / history)  shanghai(local 海派 flavour)
    music  live_music(=> music)  reading  books(books present, no reading)
    film  games  volunteer  charity(donation/benefit, not hands-on help)
    animals(you spend time with animals)  photogenic  photo(learn photography)
    sales(the event is a sales pitch / shopping)
  audience
    kids(designed for young children, => family_ok)  family_ok(ok to bring a kid)
    elders(comfortable for retired parents)  dogs(bring your own dog)
    couples(good as a date)  beginner(zero experience welcome)
  budget
    free  cheap(<= ~60 RMB)  pricey(>= ~300 RMB)  fancy(special-occasion, 仪式感)
  lexical subjects (the thing itself) and close relatives (near_*)
    pottery near_pottery  frisbee near_frisbee  jazz near_jazz
    boardgame near_boardgame  yoga near_yoga  climbing near_climbing
    surf near_surf  birding near_birding

GRADING RULE
  Each query is a rule over the facets (time_vibe queries and the sunshine
  query also look at the Shanghai-local start time; the 6-person query looks
  at free spots = maxParticipants - currentParticipants).
  grade 2 = the wish is fully satisfied;
  grade 1 = the core need is met but one stated constraint is not
            (e.g. right vibe but wrong evening; drinks but noisy);
  otherwise the activity is absent from "relevant" (grade 0).
  Lexical queries: activities that ARE the named thing -> 2, close relatives
  (near_*) -> 1. Each query's rule is written next to it in QUERIES.

TRAPS (asserted to be grade 0 in TRAPS below)
  * surface traps: query words used with another meaning, e.g. "安静不了的
    电音夜" (安静), "告别放松！地狱训练营" (放松), a networking mixer titled
    "社恐也能拿下的商务社交", "老年人网上冲浪课" (冲浪), "爵士鼓（其实就是
    架子鼓）", "职场攀岩", "瑜伽裤快闪", "鸟巢蕨微景观", "热狗大胃王"
    (狗), "刺激你的味蕾" (刺激), "吃货的减脂训练营" (吃货), "远离城市的热闹"
    (热闹), "免费畅饮" in a 388-RMB party (免费), "无酒精精酿" (酒), "酒店行业
    交流会" (酒), "亲子关系工作坊（仅限家长）" (亲子), "老上海风情电音趴",
    "上海商务英语角" (上海), "朋友圈营销课", "急救：第一现场" (现场), "白噪音:
    大自然的声音" (自然), "情绪管理：学会不发火" (火), "公益价健身年卡" (公益),
    "仪式感经济供应商对接会" (仪式感), "不学习星人摆烂局" (学习) ...
  * near duplicates of opposite vibe: silent reading room vs 200-person
    book-swap party; gentle 7am stretch vs brutal 7am HIIT (same morning);
    6-seat board-game table vs 200-player werewolf tournament; sauna
    "出一身汗" vs real workouts; quiet Friday sit vs Friday parties.
  * time traps: right vibe on the wrong day, or the right day but wrong
    vibe (outdoor Saturday-morning market that involves no exercise).
  * many grade-2 answers share no words with their query.

SPLIT RULE
  Within each kind, queries alternate tune, holdout, tune, holdout ... in
  file order (intent 20/20, lexical 4/4, time_vibe 4/4).
"""

import json
import os
from datetime import datetime, timedelta

HERE = os.path.dirname(os.path.abspath(__file__))

VOCAB = set("""
quiet lively relaxing healing light_move active sweaty intense thrill vent funny brain artsy
mingle solo_ok small_group big_crowd networking singles friends speak_english
indoor outdoor nature late
food snack alcohol learn creative takehome culture shanghai music live_music reading books
film games volunteer charity animals photogenic photo sales
kids family_ok elders dogs couples beginner
free cheap pricey fancy
pottery near_pottery frisbee near_frisbee jazz near_jazz boardgame near_boardgame
yoga near_yoga climbing near_climbing surf near_surf birding near_birding
""".split())

IMPLIES = {
    "light_move": ["active"],
    "sweaty": ["active"],
    "intense": ["sweaty", "active"],
    "kids": ["family_ok"],
    "live_music": ["music"],
}

PLACES = {
    "上海图书馆东馆": (31.2262, 121.5636),
    "上海图书馆淮海路馆": (31.2070, 121.4430),
    "思南书局": (31.2153, 121.4702),
    "安福路": (31.2157, 121.4436),
    "武康路": (31.2090, 121.4380),
    "1933老场坊": (31.2545, 121.4930),
    "玉佛禅寺": (31.2424, 121.4450),
    "静安寺": (31.2235, 121.4454),
    "静安嘉里中心": (31.2240, 121.4480),
    "滴水湖": (30.9010, 121.9310),
    "复兴公园": (31.2170, 121.4680),
    "陆家嘴": (31.2397, 121.4998),
    "徐汇滨江": (31.1800, 121.4620),
    "世纪公园": (31.2160, 121.5500),
    "前滩": (31.1535, 121.4690),
    "西岸美术馆": (31.1716, 121.4605),
    "油罐艺术中心": (31.1742, 121.4592),
    "新天地": (31.2196, 121.4753),
    "人民广场": (31.2304, 121.4737),
    "外滩": (31.2400, 121.4900),
    "和平饭店": (31.2405, 121.4880),
    "豫园": (31.2272, 121.4921),
    "多伦路": (31.2605, 121.4830),
    "鲁迅公园": (31.2720, 121.4810),
    "长风公园": (31.2225, 121.3960),
    "中山公园": (31.2200, 121.4160),
    "辰山植物园": (31.0790, 121.1860),
    "佘山": (31.0965, 121.1920),
    "崇明东滩湿地": (31.5030, 121.9580),
    "南汇东滩": (30.9300, 121.9550),
    "朱家角古镇": (31.1100, 121.0530),
    "共青森林公园": (31.3200, 121.5580),
    "顾村公园": (31.3520, 121.3900),
    "五角场": (31.3000, 121.5130),
    "大学路": (31.3055, 121.5100),
    "M50创意园": (31.2505, 121.4500),
    "衡山路": (31.2065, 121.4450),
    "巨鹿路": (31.2220, 121.4580),
    "进贤路": (31.2220, 121.4610),
    "七宝古镇": (31.1580, 121.3520),
    "大宁": (31.2800, 121.4580),
    "北外滩": (31.2510, 121.5000),
    "张园": (31.2290, 121.4580),
    "后滩公园": (31.1850, 121.4800),
    "上海植物园": (31.1500, 121.4450),
    "滨江森林公园": (31.3850, 121.5100),
    "杨浦滨江": (31.2600, 121.5350),
    "上海海洋水族馆": (31.2410, 121.5010),
    "张江": (31.2050, 121.5900),
    "虹桥天地": (31.1950, 121.3200),
    "上海自然博物馆": (31.2350, 121.4600),
    "上海交响乐团音乐厅": (31.2100, 121.4540),
    "上海欢乐谷": (31.0970, 121.2080),
    "淀山湖": (31.1050, 120.9800),
    "田子坊": (31.2080, 121.4690),
    "愚园路": (31.2230, 121.4320),
    "上生新所": (31.2040, 121.4240),
    "长阳创谷": (31.2670, 121.5250),
    "苏州河畔（昌化路）": (31.2450, 121.4500),
    "徐家汇": (31.1950, 121.4370),
    "漕河泾": (31.1700, 121.4000),
    "南昌路": (31.2170, 121.4620),
    "天山茶城": (31.2120, 121.4100),
    "乌鲁木齐中路菜场": (31.2140, 121.4450),
    "天蟾逸夫舞台": (31.2340, 121.4780),
    "育音堂（凯旋路）": (31.2160, 121.4240),
    "大光明电影院": (31.2340, 121.4700),
    "衡山电影院": (31.2060, 121.4460),
    "上海科技馆": (31.2180, 121.5430),
    "上海儿童艺术剧场": (31.2100, 121.5280),
    "上海大剧院": (31.2300, 121.4700),
    "步高里": (31.2110, 121.4580),
    "浦江镇室内冲浪馆": (31.0850, 121.5050),
    "新场农场": (31.0300, 121.6450),
    "嘉定流浪动物救助站": (31.3800, 121.2500),
    "松江马术俱乐部": (31.0300, 121.2200),
    "曲阳社区敬老院": (31.2850, 121.4900),
    "大宁社区文化中心": (31.2790, 121.4550),
    "上海体育场外场": (31.1830, 121.4380),
}

# key, title, description, type, tags, start (Shanghai local "MM-DD HH:MM"),
# place, currentParticipants, maxParticipants, facets
ACTIVITIES = [
    # ---------------- reading / quiet ----------------
    ("r_silent", "周二夜读：静音阅读室", "带一本想读的书，两个小时不聊天、不交流，只有台灯和翻书声，读完可以直接离开。", "阅读", "阅读,独处",
     "11-24 19:30", "上海图书馆东馆", 9, 30, "quiet relaxing solo_ok reading indoor free"),
    ("r_swap", "换书派对：带一本走一本", "DJ打碟、精酿畅饮，上百人在老仓库里互换二手书，边喝边聊，越晚越嗨。", "交友", "换书,派对",
     "11-28 20:00", "1933老场坊", 86, 200, "lively big_crowd mingle books alcohol music indoor cheap friends"),
    ("r_cafe", "老洋房咖啡馆共读下午", "在安福路一栋老洋房的二楼各读各的书，店里不放音乐、不许外放，咖啡自费。", "阅读", "阅读,咖啡",
     "11-29 14:00", "安福路", 5, 12, "quiet relaxing solo_ok reading indoor cheap small_group artsy snack"),
    ("r_club", "《额尔古纳河右岸》读书会", "十来个人围坐聊迟子建这本书，每人至少分享一段自己划线的句子。", "阅读", "读书会,文学",
     "11-26 19:30", "思南书局", 8, 14, "reading small_group mingle indoor artsy cheap culture"),
    ("r_24h", "24小时书店通宵夜读", "书店通宵不打烊，灯光调暗，凌晨的书店特别安静，困了可以趴一会儿。", "阅读", "夜读,书店",
     "11-27 23:00", "多伦路", 11, 40, "quiet solo_ok reading indoor late free relaxing"),
    ("r_poetry", "独立书店诗歌朗读开放麦", "报名就能上台读一首诗，自己写的或喜欢的都行，读完大家围着聊几句。", "阅读", "诗歌,开放麦",
     "11-30 19:30", "愚园路", 14, 30, "artsy reading mingle indoor culture free"),
    ("r_study", "图书馆周末自习包场", "八个小时安静自习，各看各的书、做各自的事，中午可以出去吃饭再回来。", "学习", "自习,图书馆",
     "11-29 09:00", "上海图书馆淮海路馆", 23, 60, "quiet solo_ok reading indoor free"),

    # ---------------- calm / relaxing and their traps ----------------
    ("m_bowl", "颂钵冥想·声音疗愈", "躺在垫子上，老师敲响颂钵，四十分钟里只需要听和呼吸，不需要说话。", "休闲", "冥想,疗愈",
     "11-23 20:00", "静安寺", 6, 12, "quiet relaxing healing indoor small_group solo_ok near_yoga"),
    ("m_temple", "玉佛寺禅修一日", "远离城市的热闹，在寺里抄经、静坐、吃一顿素斋，全天止语。", "休闲", "禅修,静心",
     "11-29 08:30", "玉佛禅寺", 17, 30, "quiet relaxing solo_ok culture indoor elders snack healing"),
    ("m_edm", "安静不了的电音夜", "名字叫安静，其实是一整晚的Techno，低音炮震得人心跳加速，凌晨两点才散场。", "演出", "电音,夜场",
     "11-27 22:00", "油罐艺术中心", 320, 600, "lively big_crowd music alcohol late indoor"),
    ("m_boot", "告别放松！8周地狱训练营·第1课", "别再跟自己说放松一下了：波比跳、负重冲刺、教练全程吼，练完站不起来那种。", "运动", "训练营,燃脂",
     "11-25 19:00", "静安嘉里中心", 14, 20, "intense indoor small_group"),
    ("m_sauna", "汗蒸+泡汤放空局", "在日式汤屋里泡汤、汗蒸，出一身汗却一点不累，结束后喝一瓶牛乳。", "休闲", "泡汤,汗蒸",
     "11-25 19:30", "虹桥天地", 7, 16, "relaxing quiet healing indoor solo_ok"),
    ("m_star", "滴水湖畔躺着看星星", "铺好防潮垫躺在湖边草地上看冬季星空，有人会指认星座，不想听也可以只看。", "户外", "观星,湖边",
     "11-28 19:30", "滴水湖", 12, 25, "quiet relaxing healing outdoor nature couples small_group"),
    ("m_spa", "芳疗SPA：一个人的安静夜晚", "九十分钟精油按摩加热石理疗，房间里只有你和轻音乐。", "休闲", "SPA,芳疗",
     "11-25 20:00", "新天地", 2, 6, "relaxing quiet healing indoor solo_ok pricey fancy"),
    ("m_white", "大自然的声音：白噪音助眠音乐会", "雨声、海浪、鸟鸣的录音在剧场里循环播放，观众可以躺在懒人沙发上睡着。", "音乐", "助眠,白噪音",
     "11-26 20:30", "上生新所", 40, 80, "quiet relaxing healing music indoor solo_ok"),
    ("m_mind", "正念冥想入门（四周课第一课）", "老师讲解正念的基本方法，带着做两轮十分钟的呼吸练习，零基础可来。", "学习", "冥想,正念",
     "11-30 19:30", "巨鹿路", 9, 15, "quiet relaxing learn healing solo_ok indoor small_group near_yoga beginner"),
    ("m_calm_fri", "周五不想嗨：下班后静坐一小时", "给不想去热闹地方的人：一间暗灯的小房间静坐一小时，不说话，结束喝杯热茶。", "休闲", "静坐,下班后",
     "11-27 19:00", "张园", 5, 15, "quiet relaxing solo_ok indoor healing small_group cheap"),

    # ---------------- workouts ----------------
    ("w_stretch", "晨间温柔拉伸", "七点在草坪上跟着老师慢慢拉伸，不跳不跑，专治久坐的肩颈和腰。", "运动", "拉伸,晨练",
     "11-23 07:00", "复兴公园", 11, 25, "light_move relaxing outdoor beginner solo_ok free nature near_yoga"),
    ("w_hiit", "燃脂HIIT：45分钟极限挑战", "四十五分钟高强度间歇，波比跳、开合跳、登山跑轮番上，心率一路拉满。", "运动", "HIIT,燃脂",
     "11-23 07:00", "陆家嘴", 16, 20, "intense indoor small_group"),
    ("w_run", "滨江晨跑5公里", "沿徐汇滨江跑五公里，配速六分半，跑完一起吃个早饭，新手跟得上。", "运动", "跑步,晨跑",
     "11-23 06:45", "徐汇滨江", 18, 40, "sweaty outdoor beginner mingle free"),
    ("w_yoga_am", "上班前的瑜伽流", "七点半开始的六十分钟流瑜伽，练完冲个澡直接去上班，有淋浴间。", "运动", "瑜伽,晨练",
     "11-23 07:30", "静安寺", 8, 14, "yoga active indoor small_group solo_ok"),
    ("w_swim", "周二晨泳：恒温泳池畅游", "早上七点的恒温泳池人少水清，游一千米再去上班。", "运动", "游泳,晨练",
     "11-24 07:00", "徐家汇", 12, 40, "sweaty indoor solo_ok cheap"),
    ("w_badm", "羽毛球散客拼场", "一个人来也能打，现场按水平分组轮换，球和场地都包了。", "运动", "羽毛球,拼场",
     "11-26 19:30", "漕河泾", 13, 24, "sweaty indoor mingle friends beginner cheap"),
    ("w_boxing", "解压拳击课：把烦心事打出去", "戴上拳套打沙袋、打手靶，一节课下来浑身是汗，火气也没了。", "运动", "拳击,解压",
     "11-24 20:00", "五角场", 8, 12, "vent intense indoor small_group beginner"),
    ("w_pilates", "普拉提核心小班", "六人小班器械普拉提，练核心和体态，动作慢但很酸爽。", "运动", "普拉提,体态",
     "11-26 12:30", "静安嘉里中心", 4, 6, "near_yoga sweaty indoor small_group pricey"),
    ("w_taichi", "公园太极入门", "跟着老师傅学二十四式太极拳，动作慢，适合带爸妈一起来。", "运动", "太极,晨练",
     "11-29 08:00", "中山公园", 14, 30, "light_move outdoor elders beginner culture free relaxing nature"),
    ("w_cycle", "顾村公园绿道骑行20公里", "沿公园绿道骑二十公里，中途在林子里停下来喝热可可，车可以现场租。", "运动", "骑行,绿道",
     "11-28 09:00", "顾村公园", 15, 30, "sweaty outdoor nature mingle friends beginner cheap"),
    ("w_spin", "动感单车夜骑派对", "灯光一关音乐一响，四十五分钟跟着节拍狂踩，像在夜店里骑车。", "运动", "单车,燃脂",
     "11-27 20:00", "新天地", 22, 30, "intense lively indoor vent"),
    ("w_walk", "苏州河滨河慢走8公里", "沿苏州河步道慢慢走，看老仓库和一座座桥，全程平路，随时可以退出。", "户外", "徒步,滨河",
     "11-28 14:00", "苏州河畔（昌化路）", 19, 40, "light_move outdoor free solo_ok shanghai photogenic"),
    ("w_football_kids", "亲子足球体验课", "四到八岁的孩子跟教练踢球，家长可以在场边看，也可以一起下场。", "亲子", "足球,亲子",
     "11-29 10:00", "前滩", 9, 16, "kids sweaty outdoor"),

    # ---------------- frisbee ----------------
    ("f_new", "新手飞盘局：世纪公园草坪", "零基础也能来，教练先教正反手传盘，再分队打半场，认识一群新球友。", "运动", "飞盘,新手",
     "11-28 09:30", "世纪公园", 21, 30, "frisbee sweaty outdoor mingle beginner friends nature cheap"),
    ("f_ult", "极限飞盘友谊赛", "七人制正式比赛，对抗激烈，要求会基本传接和规则，全程跑动。", "运动", "飞盘,比赛",
     "11-29 14:00", "前滩", 24, 28, "frisbee intense outdoor mingle"),
    ("f_dog", "狗狗飞盘训练营", "带上你家狗子，训犬师教它接盘、回盘，主人跟着跑跑就行。", "户外", "狗狗,飞盘",
     "11-28 10:00", "前滩", 8, 12, "near_frisbee dogs animals active outdoor small_group"),
    ("f_golf", "飞盘高尔夫：十八洞慢慢打", "把飞盘掷进链条篮子里，像打高尔夫一样一洞一洞走，边走边聊，不累。", "运动", "飞盘高尔夫,休闲",
     "12-05 13:30", "共青森林公园", 7, 16, "frisbee light_move outdoor nature beginner small_group friends"),
    ("f_flag", "腰旗橄榄球体验", "不冲撞的美式橄榄球，扯下对方腰上的旗子就算擒抱，新手友好。", "运动", "腰旗橄榄球,团队",
     "12-06 10:00", "上海体育场外场", 16, 30, "near_frisbee sweaty outdoor mingle beginner friends"),
    ("f_night", "下班后灯光球场飞盘", "晚上七点半的灯光草坪，分队打飞盘一个半小时，会基本传盘即可。", "运动", "飞盘,夜场",
     "12-02 19:30", "长风公园", 17, 28, "frisbee sweaty outdoor mingle friends"),

    # ---------------- jazz and its traps ----------------
    ("j_swing", "周五爵士现场：Swing之夜", "五人爵士乐队现场演奏摇摆乐，舞池开放，鸡尾酒十点前买一送一。", "演出", "爵士,现场",
     "11-27 21:00", "衡山路", 62, 120, "jazz live_music lively alcohol indoor couples late"),
    ("j_talk", "爵士乐入门讲座：从蓝调说起", "乐评人边放唱片边讲，从新奥尔良到比波普，听懂爵士乐的第一课。", "学习", "爵士,讲座",
     "12-01 19:30", "上海图书馆淮海路馆", 35, 80, "jazz learn music indoor quiet solo_ok free culture"),
    ("j_vinyl", "黑胶爵士聆听会", "老唱机放Bill Evans和Chet Baker，灯光很暗，大家只听不聊，可以点一杯酒。", "音乐", "黑胶,爵士",
     "11-25 20:00", "巨鹿路", 9, 18, "jazz music quiet relaxing indoor solo_ok alcohol small_group"),
    ("j_peace", "和平饭店老年爵士乐队", "平均年龄七十多岁的老乐手，在百年饭店的酒吧里演奏老上海的爵士金曲。", "演出", "爵士,老上海",
     "11-26 20:00", "和平饭店", 40, 60, "jazz live_music shanghai culture elders pricey fancy couples alcohol indoor"),
    ("j_lindy", "Lindy Hop摇摆舞初体验", "跟着爵士乐学最基础的摇摆舞步，不需要自带舞伴，课上会不停换舞伴。", "运动", "摇摆舞,舞蹈",
     "11-29 19:00", "愚园路", 26, 40, "near_jazz active mingle couples music lively beginner indoor learn"),
    ("j_drum", "爵士鼓体验课（其实就是架子鼓）", "爵士鼓就是架子鼓，今天的练习曲是周杰伦和五月天，使劲敲就对了。", "音乐", "架子鼓,体验课",
     "11-24 19:00", "五角场", 3, 6, "vent learn music indoor small_group beginner"),
    ("j_dance", "爵士舞基础班", "流行爵士舞入门，跟着K-pop和欧美流行歌扒一支完整的舞，会出汗。", "运动", "舞蹈,爵士舞",
     "11-30 19:30", "静安寺", 12, 20, "sweaty learn beginner indoor small_group"),

    # ---------------- yoga ----------------
    ("y_aerial", "空中瑜伽体验", "吊床把身体托起来做倒立和伸展，出片率很高，零基础也能上手。", "运动", "瑜伽,空中瑜伽",
     "11-28 15:00", "新天地", 6, 10, "yoga active indoor small_group beginner photogenic couples"),
    ("y_cat", "猫咪瑜伽", "教室里放养了六只猫，练到一半可能有猫爬到你背上，全程节奏很温柔。", "运动", "瑜伽,猫咪",
     "11-29 10:30", "田子坊", 9, 14, "yoga light_move animals healing relaxing indoor small_group beginner solo_ok"),
    ("y_lawn", "草坪晨光瑜伽", "周六上午在世纪公园草坪上练一小时哈他瑜伽，自带瑜伽垫，免费参加。", "运动", "瑜伽,户外",
     "11-28 09:00", "世纪公园", 25, 50, "yoga light_move outdoor nature free relaxing solo_ok beginner"),
    ("y_shop", "瑜伽裤品牌快闪：试穿享五折", "不上课，只卖货：新款瑜伽服现场试穿，满额送瑜伽垫，还有网红打卡墙。", "休闲", "快闪,购物",
     "11-28 13:00", "静安嘉里中心", 88, 300, "lively big_crowd indoor photogenic sales"),

    # ---------------- climbing ----------------
    ("c_boulder", "抱石馆新手夜", "教练带着从最简单的线路爬起，每条线路都像一道解谜题，落地有厚垫子。", "运动", "攀岩,抱石",
     "11-26 19:30", "长阳创谷", 10, 16, "climbing sweaty indoor beginner brain small_group mingle"),
    ("c_high", "22米高墙攀岩挑战", "挂上保护绳爬上22米高的岩壁，到顶往下看腿会软，敢不敢试试？", "运动", "攀岩,高空",
     "11-28 14:00", "张江", 7, 12, "climbing thrill intense indoor"),
    ("c_kids", "亲子攀岩课", "专为6到12岁孩子设计的矮墙攀爬，家长可以陪着一起爬。", "亲子", "攀岩,亲子",
     "11-29 10:00", "长阳创谷", 6, 10, "climbing kids active indoor small_group"),
    ("c_trap", "职场攀岩：向上管理的七个台阶", "一场关于职场晋升的讲座：如何向上管理、如何在绩效季往上爬。", "学习", "职场,讲座",
     "11-24 19:00", "陆家嘴", 55, 100, "networking learn indoor"),
    ("c_rope", "高空绳索探险乐园", "在树林里的高空绳索上走独木桥、滑索，全程挂安全扣，大孩子也能玩。", "户外", "绳索,探险",
     "12-05 10:30", "佘山", 12, 40, "near_climbing thrill active outdoor nature family_ok friends"),

    # ---------------- surf ----------------
    ("s_indoor", "室内冲浪初体验", "人造浪池里教练扶着你站上冲浪板，摔进水里也不疼，新手一小时能站起来。", "运动", "冲浪,室内",
     "11-28 11:00", "浦江镇室内冲浪馆", 8, 12, "surf thrill sweaty indoor beginner small_group friends"),
    ("s_night", "冲浪夜场派对", "晚上的冲浪馆变身派对现场，DJ打碟，大家轮流上浪板，冲完喝一杯。", "运动", "冲浪,夜场",
     "11-28 20:30", "浦江镇室内冲浪馆", 30, 60, "surf thrill sweaty lively alcohol music indoor friends mingle"),
    ("s_adv", "室内冲浪进阶：大浪模式", "浪高调到一米五，给已经能站稳的人练转向和走板，摔得会比较狠。", "运动", "冲浪,进阶",
     "12-03 19:00", "浦江镇室内冲浪馆", 4, 8, "surf thrill intense indoor small_group"),
    ("s_web", "老年人网上冲浪课：手机使用入门", "教叔叔阿姨用手机挂号、打车、视频通话，学会在网上冲浪不被骗。", "学习", "手机,长辈",
     "11-26 14:00", "大宁社区文化中心", 12, 30, "elders learn indoor free beginner small_group"),
    ("s_sup", "淀山湖桨板SUP", "穿着防寒湿衣在平静的湖面上划桨板，教练带队，不会游泳也有救生衣。", "户外", "桨板,湖",
     "11-29 10:00", "淀山湖", 6, 12, "near_surf active outdoor nature beginner small_group"),
    ("s_skate", "陆地冲浪板入门", "用陆冲板在滨江广场上练压板和转向，是冲浪的陆地版练习。", "运动", "陆冲,滑板",
     "12-06 15:00", "徐汇滨江", 7, 15, "near_surf active outdoor beginner small_group"),

    # ---------------- birding ----------------
    ("b_nanhui", "南汇东滩冬季观鸟", "清晨跟着鸟导在滩涂看越冬的鸻鹬和黑脸琵鹭，望远镜可以现场借。", "户外", "观鸟,湿地",
     "12-05 07:30", "南汇东滩", 11, 20, "birding nature outdoor quiet learn small_group"),
    ("b_park", "世纪公园新手观鸟", "绕湖一圈认识公园里常见的二十种鸟，大部分时间是站着用望远镜看，适合带孩子。", "户外", "观鸟,新手",
     "11-28 08:00", "世纪公园", 14, 25, "birding nature outdoor quiet beginner kids free learn"),
    ("b_chongming", "崇明东滩看白头鹤", "一日往返崇明东滩湿地，运气好能看到白头鹤和大群雁鸭。", "户外", "观鸟,崇明",
     "12-06 07:00", "崇明东滩湿地", 18, 30, "birding nature outdoor quiet learn"),
    ("b_note", "鸟类自然笔记手绘", "在植物园里画下看到的鸟和叶子，老师教简单的自然笔记画法，画本带回家。", "艺术", "自然笔记,手绘",
     "12-05 14:00", "上海植物园", 8, 15, "near_birding creative takehome nature outdoor quiet learn artsy solo_ok"),
    ("b_fern", "鸟巢蕨苔藓微景观瓶", "用鸟巢蕨、苔藓和小石子在玻璃瓶里做一片微缩森林，做完带回家养。", "手工", "微景观,植物",
     "11-26 19:00", "上生新所", 6, 12, "creative takehome healing quiet indoor small_group"),

    # ---------------- meeting people (and not) ----------------
    ("x_table", "周四兴趣桌：按话题分桌聊天", "按电影、旅行、宠物等话题分桌，主持人带着破冰，一晚上能认识十几个人。", "交友", "交友,聊天",
     "11-26 19:30", "张园", 31, 48, "mingle indoor snack cheap"),
    ("x_ice", "安静的人也能开口：i人破冰交友夜", "主持人点名自我介绍，三轮破冰游戏，每二十分钟强制换座，保证你和每个人都说上话。", "交友", "交友,破冰",
     "11-23 19:30", "静安寺", 22, 40, "mingle lively indoor cheap"),
    ("x_biz", "社恐也能拿下的商务社交：金融圈Networking Mixer", "交换名片、三分钟电梯演讲、自由社交，适合想拓展人脉的金融从业者，含两杯酒。", "交友", "商务,人脉",
     "11-26 19:00", "陆家嘴", 48, 80, "networking mingle alcohol pricey indoor lively big_crowd"),
    ("x_speed", "单身交友速配：8分钟约会", "二十位单身男女，每八分钟换一次桌，结束后互选，仅限单身参加。", "交友", "单身,交友",
     "11-28 15:00", "新天地", 16, 20, "singles mingle indoor snack"),
    ("x_walk", "武康路老洋房City Walk交朋友", "一群人慢慢走武康路、湖南路，讲解员讲老洋房背后的故事，边走边聊。", "户外", "citywalk,老洋房",
     "11-29 14:00", "武康路", 12, 20, "mingle outdoor light_move culture shanghai photogenic cheap small_group learn"),
    ("x_dinner", "新朋友晚餐局：6个陌生人一张桌", "把六个互不认识的人分到一家小馆子，AA一顿饭，聊什么都行。", "美食", "饭局,交友",
     "11-27 19:00", "进贤路", 3, 6, "food mingle small_group indoor"),
    ("x_tea", "不喝酒交友局：下午茶话会", "不去酒吧、不劝酒，在茶馆里边喝茶吃点心边玩交换故事的小游戏。", "交友", "交友,茶",
     "11-29 15:00", "天山茶城", 11, 20, "mingle small_group indoor snack cheap games"),
    ("x_nonalc", "无酒精精酿品鉴交友会", "全程零酒精：八款无醇精酿盲品打分，和同桌一起猜风味，不会喝酒的人也能来。", "交友", "无醇啤酒,品鉴",
     "11-28 19:00", "大学路", 14, 30, "mingle small_group indoor snack cheap"),
    ("x_hotel", "酒店行业交流会", "酒店管理者与供应商对接，分享收益管理和会员运营经验，现场交换名片。", "交友", "行业,交流",
     "11-25 14:00", "北外滩", 60, 150, "networking mingle indoor big_crowd"),
    ("x_english", "外滩英语角：Language Exchange", "中外朋友一对一轮换练口语，半小时英语、半小时中文，咖啡自费。", "交友", "英语,语言交换",
     "11-29 15:00", "外滩", 26, 40, "speak_english mingle indoor cheap snack"),
    ("x_bizeng", "上海商务英语角：外企面试特训", "模拟外企面试和商务口语，现场有HR点评，适合跳槽季。", "学习", "商务英语,求职",
     "11-30 19:00", "静安嘉里中心", 18, 30, "speak_english networking learn indoor mingle"),
    ("x_engkids", "英语启蒙亲子绘本（3-6岁）", "老师用英文讲绘本、唱儿歌，家长陪孩子一起参加。", "亲子", "绘本,英语启蒙",
     "11-28 10:30", "徐家汇", 8, 15, "kids learn indoor small_group"),
    ("x_cookie", "各国圣诞饼干交换派对", "来自不同国家的朋友各带一种家乡饼干，用英语交流做法，一起装饰姜饼带回家。", "美食", "烘焙,国际",
     "12-05 15:00", "愚园路", 18, 30, "speak_english mingle food creative takehome indoor lively"),
    ("x_engwalk", "英语徒步：和外国朋友走滨江", "中外混编小组沿徐汇滨江走五公里，全程用英语聊天。", "户外", "英语,徒步",
     "12-06 10:00", "徐汇滨江", 13, 25, "speak_english mingle outdoor light_move free"),
    ("x_chorus", "零基础合唱团体验", "声乐老师带着唱一首三声部的歌，不看谱也能跟，最后一起录一段视频。", "音乐", "合唱,唱歌",
     "12-02 19:30", "大宁", 24, 40, "music mingle learn lively indoor beginner"),
    ("x_improv", "即兴戏剧体验：没有剧本的夜晚", "跟着老师玩即兴表演游戏，出糗是常态，笑点全靠现场发挥。", "艺术", "即兴,戏剧",
     "12-04 19:30", "愚园路", 15, 20, "funny mingle lively creative indoor small_group"),
    ("x_breakfast", "早起打卡：商务早餐会", "七点半的早餐会，每人一分钟介绍自己的业务，吃完正好去上班。", "交友", "早餐会,人脉",
     "11-23 07:30", "陆家嘴", 20, 40, "networking mingle snack indoor"),

    # ---------------- food ----------------
    ("d_benbang", "弄堂本帮菜探店团", "跟着老饕钻进三家弄堂小馆，吃红烧肉、腌笃鲜和油爆虾，八人一桌AA。", "美食", "本帮菜,探店",
     "11-28 11:30", "南昌路", 5, 8, "food mingle shanghai culture small_group indoor"),
    ("d_fitfood", "吃货的减脂训练营", "专为管不住嘴的吃货设计：一小时循环训练加饮食打卡，练完不许吃夜宵。", "运动", "减脂,训练",
     "11-24 19:30", "徐家汇", 14, 20, "intense indoor small_group"),
    ("d_photo", "美食摄影课（现场不提供试吃）", "学习用手机拍出有食欲的美食照片，道具都是仿真食物，现场不提供试吃。", "学习", "摄影,美食",
     "11-26 19:30", "上生新所", 9, 15, "photo learn creative indoor small_group"),
    ("d_solo", "一个人的食堂：单人沉浸式用餐", "一人一个隔间，面前是一块小屏幕和一份八道菜的定食，全程不需要和任何人说话。", "美食", "单人,定食",
     "11-25 12:00", "新天地", 4, 10, "food solo_ok quiet indoor pricey"),
    ("d_qibao", "七宝古镇小吃扫街", "从汤团吃到白切羊肉和海棠糕，人很多、很热闹，带着爸妈也合适。", "美食", "小吃,古镇",
     "11-29 10:00", "七宝古镇", 23, 40, "food culture shanghai lively big_crowd outdoor elders family_ok cheap"),
    ("d_spicy", "刺激你的味蕾：特辣火锅挑战", "从微辣到变态辣五个等级，能吃完最辣一锅的人免单。", "美食", "火锅,辣",
     "11-27 19:00", "五角场", 10, 24, "food lively friends indoor"),
    ("d_night", "深夜大排档拼桌", "十点半开吃的烧烤大排档，一张长桌坐满陌生人，啤酒和烤串管够。", "美食", "宵夜,大排档",
     "11-27 22:30", "五角场", 17, 30, "food mingle late lively alcohol cheap"),
    ("d_french", "法餐品鉴晚宴：七道菜", "主厨现场讲解每一道菜的做法，搭配三款葡萄酒，适合纪念日。", "美食", "法餐,晚宴",
     "11-28 19:00", "外滩", 14, 24, "food alcohol fancy pricey couples quiet indoor"),
    ("d_omakase", "吧台Omakase：八席", "只有八个座位的寿司吧台，师傅一贯一贯地捏，很安静，适合两个人来。", "美食", "日料,寿司",
     "12-04 19:30", "静安寺", 4, 8, "food alcohol fancy pricey couples quiet small_group indoor"),
    ("d_shengjian", "生煎包手作课", "跟老师傅学擀皮、打褶、煎出脆底，做好的生煎打包六只带回家。", "美食", "生煎,手作",
     "11-29 10:00", "豫园", 5, 10, "food creative learn shanghai culture takehome indoor small_group elders"),
    ("d_market", "菜市场早市逛吃", "早上七点半逛乌鲁木齐中路菜场，吃粢饭团、喝豆浆，听摊主讲上海人怎么买菜。", "美食", "菜市场,早餐",
     "12-06 07:30", "乌鲁木齐中路菜场", 9, 15, "food shanghai culture outdoor cheap elders small_group"),
    ("d_hotdog", "热狗大胃王比赛", "十分钟内吃最多热狗的人赢走一年免费热狗，观众可以现场喊加油。", "美食", "比赛,热狗",
     "11-29 13:00", "大学路", 34, 60, "food funny lively big_crowd outdoor cheap"),
    ("d_peace_tea", "和平饭店英式下午茶", "在百年饭店的大堂里喝下午茶，三层点心架，钢琴现场伴奏。", "美食", "下午茶,老饭店",
     "11-29 14:30", "和平饭店", 6, 12, "food fancy pricey couples elders shanghai culture quiet indoor live_music"),

    # ---------------- tea / coffee ----------------
    ("t_songtea", "宋式点茶体验", "用茶筅把抹茶击打出细腻的泡沫，再在茶汤上画画，安静又解压。", "手工", "点茶,宋代",
     "11-23 19:00", "豫园", 5, 10, "culture quiet relaxing learn creative couples elders indoor small_group artsy healing"),
    ("t_coffee", "零基础手冲咖啡课", "从磨豆到注水，学会在家冲一杯好喝的手冲，送一包豆子带回家。", "学习", "咖啡,手冲",
     "11-28 14:00", "安福路", 6, 8, "learn snack beginner small_group indoor takehome"),

    # ---------------- drinks ----------------
    ("a_whisky", "威士忌品鉴：八人小桌", "调酒师带着喝六款单一麦芽，讲讲产区和风味，小桌慢聊，不吵。", "美食", "威士忌,品鉴",
     "11-23 20:00", "巨鹿路", 4, 8, "alcohol quiet relaxing learn small_group indoor pricey"),
    ("a_beerfest", "滨江精酿啤酒节", "三十家酒厂摆摊，现场乐队轮番演出，人挤人的热闹。", "美食", "精酿,啤酒节",
     "11-28 16:00", "杨浦滨江", 900, 2000, "alcohol lively big_crowd outdoor food live_music friends"),
    ("a_rooftop", "天台红酒+黑胶", "在屋顶花园喝红酒听黑胶，带一条毯子，适合两三个朋友来。", "美食", "红酒,天台",
     "11-28 20:00", "北外滩", 12, 30, "alcohol relaxing music outdoor couples friends"),
    ("a_folk", "清吧民谣弹唱", "小清吧里一把吉他一个歌手，唱到十点半，点一杯酒就能坐一晚。", "音乐", "民谣,清吧",
     "11-25 20:30", "愚园路", 15, 30, "live_music alcohol relaxing indoor solo_ok"),
    ("a_cocktail", "周六调酒课：做三杯自己的鸡尾酒", "调酒师教三款经典鸡尾酒，做完自己喝掉，适合朋友结伴来。", "学习", "调酒,鸡尾酒",
     "11-28 19:30", "衡山路", 8, 12, "alcohol learn creative friends small_group indoor"),
    ("p_freeflow", "门票388含免费畅饮：屋顶跨年预热派对", "门票三百八十八元，含两小时免费畅饮，DJ放到凌晨一点。", "演出", "派对,屋顶",
     "12-05 21:00", "外滩", 130, 250, "lively big_crowd alcohol late pricey music outdoor"),

    # ---------------- live music ----------------
    ("l_rock", "Livehouse：独立摇滚专场", "三支本地乐队轮番上台，站着听、跟着跳，音量很大。", "演出", "摇滚,Livehouse",
     "11-27 20:30", "育音堂（凯旋路）", 180, 300, "live_music lively big_crowd alcohol indoor vent"),
    ("l_guqin", "古琴雅集", "在园林的厅堂里听三位琴人弹《流水》《梅花三弄》，听众席地而坐，不拍照不鼓掌。", "音乐", "古琴,雅集",
     "11-24 19:30", "豫园", 20, 30, "live_music quiet culture relaxing artsy elders indoor solo_ok"),
    ("l_symph", "交响乐周日午后场", "上海交响乐团演奏德沃夏克《自新大陆》，午后场票价更亲民，适合带父母。", "演出", "交响乐,古典",
     "11-29 14:00", "上海交响乐团音乐厅", 800, 1200, "live_music quiet culture couples elders indoor big_crowd solo_ok"),
    ("l_silent", "静音迪斯科：戴耳机蹦迪", "每人一副无线耳机三个频道，外人看来一片安静，戴上耳机全是派对。", "演出", "静音迪斯科,派对",
     "11-28 21:00", "新天地", 90, 150, "music lively big_crowd funny mingle late indoor"),
    ("l_busk", "滨江街头开放麦", "滨江步道上的露天开放麦，吉他、手碟、口琴都有，路过就能听。", "音乐", "街头,开放麦",
     "11-29 15:00", "杨浦滨江", 20, 200, "live_music outdoor free lively solo_ok"),
    ("l_huju", "沪剧折子戏专场", "经典沪剧《罗汉钱》《雷雨》选段，上海话唱腔，有字幕同步。", "演出", "沪剧,戏曲",
     "12-02 14:00", "天蟾逸夫舞台", 310, 600, "live_music culture shanghai elders indoor quiet big_crowd solo_ok"),

    # ---------------- laughs ----------------
    ("h_standup", "脱口秀开放麦", "十个新人演员每人五分钟，好笑不好笑当场见分晓，可以点酒。", "演出", "脱口秀,喜剧",
     "11-27 20:00", "人民广场", 64, 100, "funny lively indoor cheap alcohol"),
    ("h_write", "脱口秀写作课：把段子写好笑", "编剧拆解段子结构，每人现场写一个段子互相改，回家还要改第二稿。", "学习", "脱口秀,写作",
     "12-03 19:30", "人民广场", 10, 16, "learn brain creative small_group indoor"),
    ("h_huaji", "上海滑稽戏《七十二家房客》", "用上海话演的滑稽戏，老一辈看得笑出眼泪。", "演出", "滑稽戏,上海话",
     "11-29 19:00", "天蟾逸夫舞台", 420, 800, "funny culture shanghai elders indoor big_crowd solo_ok"),
    ("h_games", "大头娃娃趣味运动会", "套上大头娃娃头套赛跑、拔河、踩气球，跑不快但笑得停不下来。", "游戏", "趣味,运动会",
     "12-05 14:00", "长风公园", 28, 50, "funny active lively mingle outdoor friends"),

    # ---------------- brains and games ----------------
    ("p_escape", "密室逃脱：废弃医院（重度惊吓）", "六人组队在九十分钟内解开二十道机关，中间会有NPC突然出现，心脏不好慎入。", "游戏", "密室,恐怖",
     "11-28 15:00", "五角场", 2, 6, "thrill brain games friends small_group indoor"),
    ("p_orient", "老城厢城市解谜定向赛", "拿着线索卡在老城厢的弄堂里找答案，边走边解谜，三到六人一队。", "游戏", "解谜,定向",
     "12-06 13:30", "豫园", 20, 60, "brain games friends outdoor light_move shanghai culture mingle"),
    ("p_go", "公园围棋对弈角", "棋盘都摆好了，找个对手下一局，老少皆宜，不会下的可以在旁边看。", "游戏", "围棋,对弈",
     "11-24 14:00", "鲁迅公园", 10, 24, "brain games quiet elders outdoor free"),
    ("p_werewolf", "狼人杀200人锦标赛", "两百名玩家分二十桌淘汰赛，主持人麦克风全场广播，决赛有直播。", "游戏", "狼人杀,比赛",
     "11-29 13:00", "大宁", 142, 200, "near_boardgame games brain lively big_crowd mingle indoor"),
    ("p_6table", "6人小桌：德式桌游慢慢玩", "固定六个座位和陌生人拼一张桌，慢慢玩一局卡坦岛，店员教规则。", "游戏", "桌游,德式",
     "11-24 19:30", "徐家汇", 2, 6, "boardgame games brain small_group mingle indoor cheap"),
    ("p_bgbar", "桌游吧包桌：带上你的朋友", "五百款桌游随便挑，包一张大桌子玩到尽兴，店员帮忙讲规则。", "游戏", "桌游,聚会",
     "11-28 14:00", "大学路", 2, 12, "boardgame games friends indoor cheap lively"),
    ("p_kidsbg", "亲子桌游下午", "适合五岁以上孩子的合作类桌游，家长和孩子一队，一起打败怪兽。", "亲子", "桌游,亲子",
     "11-29 14:00", "徐家汇", 8, 20, "boardgame games kids indoor brain"),
    ("p_bgnew", "桌游新手夜：阿瓦隆和璀璨宝石", "从最容易上手的几款开始，店员坐镇讲规则，一个人来也会被拼进一桌。", "游戏", "桌游,新手",
     "12-03 19:30", "大学路", 9, 24, "boardgame games mingle beginner friends lively cheap indoor"),
    ("p_bgdesign", "桌游设计师投资对接会", "行业对接会：发行商、投资人和独立设计师交流融资与发行，不设试玩。", "交友", "行业,投资",
     "12-01 14:00", "张江", 38, 80, "networking indoor"),
    ("p_jubensha", "剧本杀：民国谍影（6人本）", "六人硬核推理本，每人一个身份和秘密，四个小时需要大量交流和推理。", "游戏", "剧本杀,推理",
     "11-27 19:00", "人民广场", 2, 6, "near_boardgame games brain mingle small_group indoor friends"),
    ("p_mahjong", "上海敲麻入门课", "从认牌到上海敲麻的规则和打法，老师手把手教，学会就能陪爸妈搓两圈。", "游戏", "麻将,上海",
     "12-02 14:00", "愚园路", 6, 12, "near_boardgame games learn shanghai culture elders beginner small_group indoor brain"),

    # ---------------- thrill ----------------
    ("th_happy", "欢乐谷夜场：过山车连坐", "夜场门票，过山车排队连坐三轮，尖叫声此起彼伏。", "户外", "过山车,乐园",
     "12-04 18:00", "上海欢乐谷", 40, 100, "thrill lively big_crowd outdoor friends"),
    ("th_kart", "卡丁车计时赛", "室内赛道时速六十公里，三轮计时排位，最后一轮决赛。", "运动", "卡丁车,竞速",
     "11-30 19:00", "漕河泾", 9, 16, "thrill active indoor friends small_group"),
    ("th_wind", "室内跳伞风洞体验", "在垂直风洞里体验自由落体，两次飞行每次一分钟，教练全程保护。", "运动", "风洞,飞行",
     "12-05 16:00", "张江", 3, 8, "thrill indoor pricey small_group"),
    ("th_cs", "真人CS野战", "树林里分队对战，穿迷彩戴护具打彩弹，跑得满身泥和汗。", "运动", "真人CS,团队",
     "12-06 13:00", "滨江森林公园", 18, 40, "thrill sweaty outdoor friends vent mingle nature"),

    # ---------------- venting ----------------
    ("v_smash", "砸东西发泄屋", "戴上护目镜，用棒球棍砸碎一箱旧碗盘和旧电视，二十分钟随便砸。", "休闲", "解压,发泄",
     "11-24 20:00", "漕河泾", 1, 4, "vent thrill indoor solo_ok small_group"),
    ("v_drum", "非洲鼓围圈敲打", "二十人围成一圈敲非洲鼓，不需要会，越用力越好，敲完整个人松下来。", "音乐", "非洲鼓,解压",
     "11-30 20:00", "愚园路", 12, 20, "vent music active mingle indoor beginner lively"),
    ("v_ktv", "K歌吼一晚：包厢拼房", "六人包厢拼房，麦霸轮流上，唱到嗓子哑为止。", "休闲", "KTV,唱歌",
     "11-28 21:00", "人民广场", 3, 6, "vent lively music mingle indoor late small_group"),
    ("v_talk", "情绪管理讲座：学会不发火", "心理咨询师讲解愤怒从哪里来，以及怎样不让火气发出来。", "学习", "心理,情绪",
     "12-01 19:30", "静安寺", 35, 80, "learn quiet indoor"),

    # ---------------- animals and healing ----------------
    ("n_cat", "猫咖撸猫下午", "二十多只猫在店里走来走去，点一杯饮料就能坐一下午，没人打扰。", "休闲", "猫咖,撸猫",
     "11-24 14:00", "田子坊", 6, 16, "animals healing relaxing quiet indoor solo_ok cheap"),
    ("n_alpaca", "羊驼农场亲子日", "在郊区农场喂羊驼和小兔子，孩子们还可以自己挤羊奶。", "亲子", "农场,小动物",
     "12-05 10:00", "新场农场", 20, 40, "animals kids outdoor nature"),
    ("n_shelter", "流浪狗救助站志愿者日（请勿携带自家宠物）", "帮救助站的狗狗洗澡、遛弯、打扫狗舍，为了安全请不要带自己家的狗来。", "公益", "志愿者,流浪狗",
     "11-28 13:00", "嘉定流浪动物救助站", 9, 15, "volunteer animals outdoor free mingle active healing"),
    ("n_dogpicnic", "狗狗友好草坪野餐", "带上狗子和野餐垫，草坪上有狗狗游乐区和宠物零食摊。", "户外", "宠物,野餐",
     "11-29 11:00", "徐汇滨江", 28, 60, "dogs animals outdoor relaxing snack mingle"),
    ("n_dogwalk", "带狗City Walk：宠物友好街区", "沿着安福路、武康路遛狗散步，沿途宠物友好店可以进门，狗狗水碗管够。", "户外", "宠物,citywalk",
     "12-06 10:00", "安福路", 15, 25, "dogs outdoor light_move photogenic mingle small_group"),
    ("n_dogcamp", "宠物友好咖啡露营", "草坪上的帐篷咖啡摊，狗可以撒欢，人可以发呆晒太阳。", "休闲", "露营,宠物",
     "12-05 13:00", "前滩", 18, 40, "dogs outdoor relaxing snack solo_ok"),
    ("n_dessert", "小动物造型甜品课", "做小熊、小兔造型的马卡龙和奶油蛋糕，做好装盒带回家。", "手工", "甜品,烘焙",
     "11-29 14:00", "静安寺", 7, 12, "creative takehome food learn indoor small_group couples family_ok"),
    ("n_aquarium", "海洋水族馆夜宿", "在海底隧道里打地铺过夜，饲养员带着夜间巡馆、喂鲨鱼。", "亲子", "水族馆,夜宿",
     "12-05 18:30", "上海海洋水族馆", 30, 50, "animals kids indoor late learn"),
    ("n_succ", "多肉植物组盆", "挑几棵多肉搭配在小陶盆里，老师讲讲冬天怎么养，做完带回家。", "手工", "多肉,植物",
     "12-02 19:00", "上生新所", 6, 12, "creative takehome healing quiet relaxing indoor small_group solo_ok"),
    ("n_flower", "冬日花束小课", "用尤加利、棉花和红果做一束冬日花束，老师一对一指导包装。", "手工", "花艺,花束",
     "12-04 19:00", "安福路", 5, 10, "creative takehome healing artsy couples indoor small_group"),
    ("n_horse", "马术初体验：和小马做朋友", "先给小马刷毛、喂胡萝卜，再在教练牵引下骑两圈。", "运动", "马术,小马",
     "12-06 10:00", "松江马术俱乐部", 4, 8, "animals active outdoor nature beginner pricey small_group"),

    # ---------------- kids ----------------
    ("k_museum", "自然博物馆亲子夜游", "闭馆后打着手电筒在恐龙骨架下听讲解员讲故事，适合五到十岁的孩子。", "亲子", "博物馆,夜游",
     "11-27 18:30", "上海自然博物馆", 40, 60, "kids learn indoor"),
    ("k_science", "儿童科学实验秀", "大象牙膏、液氮冰淇淋，科学老师在台上做实验，小朋友可以上台当助手。", "亲子", "科学,实验",
     "12-06 10:30", "上海科技馆", 70, 120, "kids learn funny indoor big_crowd"),
    ("k_parent", "亲子关系工作坊（仅限家长，请勿带孩子）", "面向家长的三小时工作坊：如何和孩子沟通、如何面对哭闹，现场不提供托管。", "学习", "亲子,家庭教育",
     "11-29 14:00", "徐家汇", 24, 40, "learn indoor"),
    ("k_bigkid", "大孩子派对：成年人的童年游戏", "弹珠、跳皮筋、拍洋画，再配一杯啤酒，仅限十八岁以上的大孩子。", "游戏", "怀旧,派对",
     "11-28 20:00", "张园", 42, 80, "games lively funny alcohol mingle indoor"),
    ("k_ginger", "亲子烘焙：圣诞姜饼屋", "爸爸妈妈和孩子一起拼搭、装饰一座姜饼屋，做完带回家。", "亲子", "烘焙,圣诞",
     "11-29 14:00", "大宁", 9, 16, "kids creative food takehome indoor"),
    ("k_play", "儿童剧《小王子》", "一个小时的儿童剧，演员会下台和小朋友互动，适合四岁以上。", "演出", "儿童剧,小王子",
     "11-29 15:30", "上海儿童艺术剧场", 180, 300, "kids culture indoor big_crowd"),
    ("k_bugs", "亲子自然观察：公园里找虫子", "拿着放大镜在草丛和树皮上找冬天的昆虫，老师教孩子画观察笔记。", "亲子", "自然观察,昆虫",
     "11-29 14:30", "上海植物园", 12, 20, "kids nature outdoor learn near_birding"),
    ("k_pottery", "亲子泥塑工坊", "用软陶泥捏小动物和小碗，不进窑烧制，自然风干后带回家。", "亲子", "泥塑,亲子",
     "11-28 14:00", "田子坊", 10, 16, "near_pottery kids creative takehome indoor"),

    # ---------------- old Shanghai / with parents ----------------
    ("e_yuyuan", "豫园灯会预览夜游", "灯组提前亮灯试运行，九曲桥上人挤人，拍照很出片。", "展览", "灯会,夜游",
     "12-04 18:30", "豫园", 300, 800, "culture shanghai lively big_crowd outdoor elders family_ok photogenic"),
    ("e_zjj", "朱家角古镇慢游", "坐摇橹船、走放生桥、吃扎肉粽子，节奏很慢，适合带爸妈。", "户外", "古镇,慢游",
     "12-06 10:00", "朱家角古镇", 14, 25, "culture outdoor light_move elders photogenic relaxing small_group"),
    ("e_oldcity", "老城厢徒步讲解", "从小南门走到文庙，讲解员讲老城厢的弄堂、城墙和老字号，大约走三公里。", "户外", "老城厢,徒步",
     "11-28 09:30", "豫园", 11, 20, "culture shanghai outdoor light_move learn elders small_group"),
    ("e_qipao", "石库门里的海派旗袍展", "在一栋修复的石库门里展出百年旗袍，讲解员讲海派服饰的变迁。", "展览", "旗袍,海派",
     "12-03 14:00", "张园", 30, 100, "culture shanghai artsy quiet indoor photogenic solo_ok elders"),
    ("e_edm", "老上海风情舞会：旗袍电音趴", "除了名字和服装，跟老上海没什么关系：全程电音，喝到凌晨。", "演出", "派对,电音",
     "12-05 21:30", "外滩", 150, 300, "lively big_crowd music alcohol late indoor photogenic"),
    ("e_huyu", "沪语小课堂：学几句地道上海话", "从“侬好”“谢谢侬”到菜场砍价，老师用段子教上海话。", "学习", "沪语,上海话",
     "12-01 19:00", "静安寺", 14, 25, "learn shanghai culture funny indoor small_group beginner"),
    ("e_shikumen", "石库门建筑开放日", "平时不开放的几栋老石库门开门迎客，可以进天井和亭子间看看，免费参观。", "展览", "石库门,建筑",
     "12-06 14:00", "步高里", 60, 200, "culture shanghai indoor photogenic free elders"),
    ("e_calligraphy", "书法入门：写一个福字", "从握笔开始，写一个过年能贴的福字，纸和墨都准备好了。", "学习", "书法,传统",
     "12-03 19:00", "多伦路", 8, 15, "learn culture creative takehome quiet elders indoor small_group beginner"),

    # ---------------- art ----------------
    ("g_westbund", "西岸美术馆特展：一个人的下午", "大空间、人少，适合一个人慢慢看，语音导览扫码就能听。", "展览", "展览,当代艺术",
     "11-26 14:00", "西岸美术馆", 40, 300, "artsy culture quiet solo_ok indoor photogenic couples"),
    ("g_film", "艺术电影放映+映后谈", "放映一部塔可夫斯基，映后电影系老师带着聊半小时，不想聊可以先走。", "艺术", "电影,艺术片",
     "11-23 19:30", "衡山电影院", 32, 90, "artsy film quiet solo_ok indoor culture"),
    ("g_crayon", "油画棒治愈小画：一个人也能来", "照着一张日落照片画一幅小画，老师教叠色，画完装框带走。", "艺术", "油画棒,绘画",
     "11-25 19:30", "巨鹿路", 6, 12, "creative artsy takehome solo_ok quiet relaxing healing indoor small_group beginner"),
    ("g_light", "沉浸式光影展", "整个展厅是会随脚步变化的投影，很适合拍照，周末人比较多。", "展览", "光影,沉浸式",
     "11-28 16:00", "外滩", 140, 400, "photogenic indoor couples big_crowd family_ok lively"),
    ("g_m50", "M50画廊周末开放", "二十多家画廊免费开放，随便逛，不用预约。", "展览", "画廊,艺术区",
     "11-28 11:00", "M50创意园", 60, 500, "artsy culture free quiet solo_ok indoor"),
    ("g_sketch", "苏州河边城市速写", "带上速写本坐在河边画老仓库和桥，画完各自回家，不强制交流。", "艺术", "速写,城市",
     "11-28 10:00", "苏州河畔（昌化路）", 8, 20, "creative artsy outdoor quiet solo_ok takehome"),
    ("g_money", "文艺青年的商业变现课", "教你把文艺爱好变成副业：小红书账号、付费社群和课程定价。", "学习", "副业,变现",
     "12-02 19:30", "陆家嘴", 40, 100, "networking learn pricey indoor"),
    ("g_nutcracker", "芭蕾舞剧《胡桃夹子》", "圣诞季经典芭蕾，乐团现场伴奏，正装出席更有感觉。", "演出", "芭蕾,圣诞",
     "12-05 19:30", "上海大剧院", 1100, 1600, "live_music culture couples pricey fancy indoor big_crowd artsy family_ok"),

    # ---------------- pottery ----------------
    ("po_wheel", "陶艺拉坯体验：做一只自己的杯子", "在拉坯机上从一团泥开始做杯子，老师帮忙修坯，烧好后一个月寄到家。", "手工", "陶艺,拉坯",
     "11-28 14:00", "愚园路", 4, 8, "pottery creative takehome indoor small_group beginner couples learn"),
    ("po_hand", "手捏陶器：安静地捏一个小碗", "不用拉坯机，用手一点点捏出小碗和小碟，过程很慢很静。", "手工", "陶艺,手捏",
     "11-30 19:00", "上生新所", 3, 8, "pottery creative takehome quiet relaxing healing solo_ok indoor small_group"),
    ("po_date", "情侣陶艺：一起做一对杯子", "两人一组共用一台拉坯机，各做一只杯子凑成一对，烧好后寄出。", "手工", "陶艺,情侣",
     "12-05 15:00", "田子坊", 6, 12, "pottery creative takehome couples indoor small_group"),
    ("po_set", "陶艺小班：做一套碗碟", "四次课的第一课，学泥条盘筑和上釉，最后带走一套自己做的碗碟。", "手工", "陶艺,碗碟",
     "12-03 19:00", "大学路", 5, 8, "pottery creative takehome indoor small_group learn"),
    ("po_blue", "青花瓷杯彩绘", "在烧好的素坯上画青花，釉烧后寄回，老师讲讲景德镇青花的画法。", "手工", "青花,彩绘",
     "12-06 14:00", "多伦路", 5, 10, "near_pottery creative takehome culture indoor small_group quiet"),

    # ---------------- learning ----------------
    ("le_aed", "急救技能培训：第一现场的黄金四分钟", "红十字会老师教心肺复苏和AED使用，考核通过发证书。", "学习", "急救,技能",
     "11-28 09:00", "人民广场", 22, 30, "learn indoor free beginner"),
    ("le_lazy", "不学习星人の摆烂局", "不学习、不上进，一屋子人躺在懒人沙发上刷手机，谁也不管谁。", "休闲", "躺平,摆烂",
     "11-30 20:00", "大学路", 12, 30, "relaxing indoor cheap"),
    ("le_phone", "手机摄影入门：外滩拍夜景", "老师带着在外滩边走边拍，学构图和夜景模式，回去就能发朋友圈。", "学习", "摄影,夜景",
     "12-03 18:30", "外滩", 11, 15, "photo learn photogenic outdoor light_move small_group beginner"),
    ("le_wechat", "朋友圈营销课：私域流量变现", "教你用朋友圈卖货：发圈时间、文案模板和客户分层。", "学习", "营销,私域",
     "11-27 14:00", "漕河泾", 30, 80, "networking learn indoor"),
    ("le_sign", "手语入门体验", "学会打招呼、自我介绍等三十个常用手语，课后可以报名助残活动。", "学习", "手语,入门",
     "12-04 19:00", "静安寺", 10, 20, "learn beginner small_group mingle indoor free"),

    # ---------------- helping others ----------------
    ("vo_river", "滨江捡跑（Plogging）", "边慢跑边捡垃圾，沿杨浦滨江跑三公里，垃圾袋和手套现场发。", "公益", "环保,捡跑",
     "11-29 09:00", "杨浦滨江", 22, 50, "volunteer outdoor free active mingle"),
    ("vo_elder", "敬老院陪伴下午", "陪老人聊天、读报、剪指甲，会说上海话更好。", "公益", "志愿者,陪伴",
     "12-03 14:00", "曲阳社区敬老院", 6, 15, "volunteer mingle indoor free"),
    ("vo_sale", "旧衣改造义卖市集", "把旧T恤改成帆布袋，现场义卖，收入捐给山区学校。", "公益", "旧衣改造,义卖",
     "12-06 13:00", "张园", 25, 60, "charity creative takehome indoor lively cheap"),
    ("vo_gym", "公益价！健身年卡团购说明会", "所谓公益价其实是年卡团购：现场签约立减，三年卡更划算。", "休闲", "健身卡,团购",
     "11-30 19:00", "徐家汇", 18, 50, "pricey indoor sales"),
    ("vo_date", "帮你脱单：恋爱教练一对一", "恋爱教练帮你改头像、改聊天话术，一小时一对一咨询。", "交友", "脱单,咨询",
     "12-01 20:00", "新天地", 3, 8, "singles pricey indoor sales"),
    ("vo_books", "给山区孩子整理图书", "把捐来的图书分类、贴标签、装箱，一下午能装好一所学校的图书角。", "公益", "志愿者,图书",
     "12-05 14:00", "上海图书馆东馆", 14, 30, "volunteer books indoor free mingle"),

    # ---------------- nature / outdoors ----------------
    ("o_sheshan", "佘山徒步+登顶", "从东佘山走到西佘山，全程八公里有些爬升，山顶看天文台。", "户外", "徒步,登山",
     "12-05 09:00", "佘山", 19, 30, "nature outdoor sweaty mingle friends"),
    ("o_chenshan", "辰山植物园冬日漫步", "在植物园里慢慢走，看矿坑花园和温室里的热带植物，节奏很慢。", "户外", "植物园,漫步",
     "12-05 10:00", "辰山植物园", 10, 20, "nature outdoor light_move relaxing elders quiet photogenic"),
    ("o_picnic", "共青森林公园草坪野餐", "带上野餐垫在林间草坪晒太阳，主办方准备了热茶和简单点心。", "户外", "野餐,森林公园",
     "12-05 12:00", "共青森林公园", 16, 30, "nature outdoor relaxing snack mingle friends"),
    ("o_camp", "滴水湖边露营一晚", "搭帐篷、煮火锅、围着篝火聊天，第二天早上看湖上日出。", "户外", "露营,湖边",
     "12-05 16:00", "滴水湖", 20, 30, "nature outdoor relaxing food friends late pricey"),
    ("o_brunch", "睡到自然醒早午餐", "十一点才开始的慢早午餐，松饼和咖啡无限续，适合周末赖床的人。", "美食", "早午餐,周末",
     "11-29 11:00", "安福路", 13, 24, "food relaxing indoor couples"),
    ("o_forestexp", "走进森林：沉浸式数字光影展", "用投影还原一片雨林，瀑布和萤火虫都是光影，全程在室内。", "展览", "光影,森林",
     "12-05 11:00", "上生新所", 120, 400, "photogenic indoor family_ok couples big_crowd"),
    ("o_binjiang", "滨江森林公园晨跑+早餐", "在林子里跑一个六公里小环线，跑完一起喝豆浆吃油条。", "运动", "晨跑,森林",
     "12-06 07:30", "滨江森林公园", 15, 30, "nature outdoor sweaty mingle free"),
    ("o_houtan", "后滩湿地公园自然导览", "跟着志愿讲解员走湿地栈道，认识芦苇、水杉和冬候鸟。", "户外", "湿地,导览",
     "11-24 15:00", "后滩公园", 9, 20, "nature outdoor light_move learn quiet free solo_ok"),
    ("o_sat_market", "周六上午户外市集：旧物和咖啡", "几十个摊位卖旧物、手作和咖啡，人很多，可以慢慢逛。", "休闲", "市集,旧物",
     "11-28 10:00", "上生新所", 200, 1000, "lively big_crowd outdoor snack cheap photogenic"),
    ("y_clear", "双十二前清仓：放空购物车市集", "上百个品牌摊位清仓打折，帮你把购物车放空，现场排队结账。", "休闲", "清仓,市集",
     "12-06 11:00", "前滩", 400, 3000, "lively big_crowd indoor sales"),

    # ---------------- night owls ----------------
    ("n_film", "深夜电影马拉松", "晚上十一点起连放三部老港片，可以睡着，早上六点结束送一份早餐。", "演出", "电影,通宵",
     "12-04 23:00", "大光明电影院", 40, 120, "film late quiet solo_ok indoor cheap"),

    # ---------------- special occasions ----------------
    ("f_yacht", "私人游艇黄浦江夜游", "十人小游艇从北外滩出发，香槟、甜点加两岸灯光，适合纪念日。", "休闲", "游艇,夜游",
     "12-05 19:00", "北外滩", 4, 10, "fancy pricey couples alcohol photogenic outdoor small_group"),
    ("f_ceremony", "仪式感经济：婚庆与活动供应商对接会", "婚庆公司、花艺和场地供应商的商务对接，谈的是生意不是浪漫。", "交友", "行业,对接",
     "12-02 14:00", "新天地", 45, 120, "networking mingle indoor"),
]


# ---------------------------------------------------------------- queries
def H(t):
    return t.hour + t.minute / 60.0


def on(t, mmdd):
    return t.strftime("%m-%d") == mmdd


def g(cond2, cond1=False):
    return 2 if cond2 else (1 if cond1 else 0)


# Each rule: (f: facet set, t: Shanghai-local start datetime, spots: free places) -> 0/1/2
QUERIES = [
    # ---- intent (40) ----
    ("脑子很乱，想找个地方一个人静一静", "intent",
     lambda f, t, s: g({"quiet", "solo_ok"} <= f and "mingle" not in f,
                       "quiet" in f and not f & {"solo_ok", "mingle", "big_crowd"}
                       and bool(f & {"relaxing", "nature", "healing"}))),
    ("别让我跟陌生人说话，但我又想出门", "intent",
     lambda f, t, s: g("solo_ok" in f and "mingle" not in f,
                       not f & {"mingle", "kids"} and "big_crowd" in f and bool(f & {"music", "artsy", "film", "culture"}))),
    ("想认识点新朋友，但不要商务社交那一套", "intent",
     lambda f, t, s: g("mingle" in f and not f & {"networking", "singles", "volunteer"},
                       "mingle" in f and bool(f & {"singles", "volunteer"}) and "networking" not in f)),
    ("想好好出一身汗", "intent",
     lambda f, t, s: g("sweaty" in f and "kids" not in f, "active" in f and "light_move" not in f)),
    ("别太累，随便动动就行", "intent",
     lambda f, t, s: g("light_move" in f and "sweaty" not in f,
                       "active" in f and not f & {"sweaty", "light_move", "thrill"})),
    ("最近太无聊了，想找点刺激的", "intent",
     lambda f, t, s: g("thrill" in f, bool(f & {"intense", "vent"}))),
    ("心情不好，想被治愈一下", "intent",
     lambda f, t, s: g("healing" in f, {"relaxing", "quiet"} <= f)),
    ("有没有文艺一点、一个人去也不尴尬的", "intent",
     lambda f, t, s: g({"artsy", "solo_ok"} <= f, "artsy" in f)),
    ("带5岁小孩能去玩的", "intent",
     lambda f, t, s: g("kids" in f, "family_ok" in f)),
    ("能带狗一起去的", "intent",
     lambda f, t, s: g("dogs" in f)),
    ("第一次约会，去哪不尴尬", "intent",
     lambda f, t, s: g("couples" in f and "singles" not in f,
                       {"creative", "small_group", "takehome"} <= f and not f & {"kids", "singles"})),
    ("带爸妈出去转转，别太折腾", "intent",
     lambda f, t, s: g("elders" in f and not f & {"intense", "late"},
                       {"culture", "relaxing"} <= f and not f & {"late", "lively"})),
    ("下雨天能去的室内活动，好玩一点的", "intent",
     lambda f, t, s: g("indoor" in f and bool(f & {"games", "creative", "thrill", "funny"}) and not f & {"networking", "sales"},
                       "indoor" in f and bool(f & {"artsy", "animals", "photogenic"}) and not f & {"networking", "sales"})),
    ("想学点新东西，充实一下自己", "intent",
     lambda f, t, s: g("learn" in f and "kids" not in f, "creative" in f and "kids" not in f)),
    ("预算有限，最好不花钱", "intent",
     lambda f, t, s: g("free" in f, "cheap" in f)),
    ("想喝点小酒聊聊天，但别太吵", "intent",
     lambda f, t, s: g("alcohol" in f and not f & {"lively", "networking"},
                       "alcohol" in f and "lively" in f and not f & {"big_crowd", "networking"})),
    ("i人友好，不用破冰也不用自我介绍的那种", "intent",
     lambda f, t, s: g("solo_ok" in f and not f & {"mingle", "big_crowd"},
                       "mingle" not in f and (("solo_ok" in f and "big_crowd" in f)
                                              or ("solo_ok" not in f and "small_group" in f
                                                  and bool(f & {"creative", "quiet", "relaxing"}))))),
    ("想找个热闹的地方凑凑人气", "intent",
     lambda f, t, s: g({"lively", "big_crowd"} <= f and "networking" not in f,
                       "lively" in f and "networking" not in f)),
    ("想跟对象安安静静约个会", "intent",
     lambda f, t, s: g({"couples", "quiet"} <= f, "couples" in f and "big_crowd" not in f)),
    ("想在大自然里待一会儿", "intent",
     lambda f, t, s: g({"nature", "outdoor"} <= f)),
    ("想做个手工，能带回家的那种", "intent",
     lambda f, t, s: g({"creative", "takehome"} <= f, "creative" in f)),
    ("一个人吃饭太无聊，想找人一起吃", "intent",
     lambda f, t, s: g({"food", "mingle"} <= f and not f & {"networking", "singles"},
                       {"snack", "mingle"} <= f and not f & {"networking", "singles"})),
    ("晚上睡不着，有没有夜里还能去的", "intent",
     lambda f, t, s: g("late" in f)),
    ("想放空，什么都不想", "intent",
     lambda f, t, s: g({"relaxing", "quiet"} <= f and not f & {"learn", "brain"},
                       "relaxing" in f and not f & {"quiet", "learn", "brain", "lively"})),
    ("想感受一下老上海的味道", "intent",
     lambda f, t, s: g({"culture", "shanghai"} <= f, "shanghai" in f)),
    ("我们6个人想一起玩点什么", "intent",
     lambda f, t, s: g("friends" in f and s >= 6, "friends" in f)),
    ("想交朋友但我不喝酒，也不想去酒吧", "intent",
     lambda f, t, s: g("mingle" in f and not f & {"alcohol", "networking", "singles", "volunteer"},
                       "mingle" in f and not f & {"alcohol", "networking"})),
    ("想听点现场的，耳朵需要享受一下", "intent",
     lambda f, t, s: g("live_music" in f, "music" in f and not f & {"active", "vent"})),
    ("运动小白，怕跟不上别人", "intent",
     lambda f, t, s: g({"active", "beginner"} <= f and "intense" not in f,
                       ({"active", "beginner", "intense"} <= f) or ("light_move" in f and "beginner" not in f))),
    ("天气好想晒晒太阳", "intent",
     lambda f, t, s: g("outdoor" in f and 8 <= H(t) < 15, "outdoor" in f and 15 <= H(t) < 16.5)),
    ("想做点有意义的事，帮帮别人", "intent",
     lambda f, t, s: g("volunteer" in f, "charity" in f)),
    ("吃货一枚，想去吃吃喝喝", "intent",
     lambda f, t, s: g("food" in f, "snack" in f)),
    ("想安静看会儿书", "intent",
     lambda f, t, s: g({"reading", "quiet"} <= f, "reading" in f)),
    ("不想动脑子，就想乐呵乐呵", "intent",
     lambda f, t, s: g("funny" in f and "learn" not in f,
                       {"lively", "games"} <= f and "brain" not in f)),
    ("想动动脑子，越烧脑越好", "intent",
     lambda f, t, s: g("brain" in f, "games" in f)),
    ("想练练英语口语", "intent",
     lambda f, t, s: g("speak_english" in f)),
    ("想拍点好看的照片发朋友圈", "intent",
     lambda f, t, s: g("photogenic" in f, "photo" in f)),
    ("想跟小动物待一会儿", "intent",
     lambda f, t, s: g("animals" in f, "dogs" in f)),
    ("想给自己一点仪式感，贵点也没关系", "intent",
     lambda f, t, s: g("fancy" in f, "pricey" in f and not f & {"networking", "sales"})),
    ("憋了一肚子火，想找个地方发泄", "intent",
     lambda f, t, s: g("vent" in f, bool(f & {"intense", "thrill"}))),

    # ---- lexical (8): the thing itself -> 2, close relative -> 1 ----
    ("陶艺", "lexical", lambda f, t, s: g("pottery" in f, "near_pottery" in f)),
    ("飞盘", "lexical", lambda f, t, s: g("frisbee" in f, "near_frisbee" in f)),
    ("爵士乐", "lexical", lambda f, t, s: g("jazz" in f, "near_jazz" in f)),
    ("桌游", "lexical", lambda f, t, s: g("boardgame" in f, "near_boardgame" in f)),
    ("瑜伽", "lexical", lambda f, t, s: g("yoga" in f, "near_yoga" in f)),
    ("攀岩", "lexical", lambda f, t, s: g("climbing" in f, "near_climbing" in f)),
    ("冲浪", "lexical", lambda f, t, s: g("surf" in f, "near_surf" in f)),
    ("观鸟", "lexical", lambda f, t, s: g("birding" in f, "near_birding" in f)),

    # ---- time_vibe (8) ----
    # Sat 11-28 morning, outdoors, moving. 1: Sat morning indoor workout, or outdoor
    # movement Sat afternoon / Sun morning.
    ("这周六上午想在户外动一动", "time_vibe",
     lambda f, t, s: g(on(t, "11-28") and 6 <= H(t) < 12 and {"outdoor", "active"} <= f,
                       "active" in f and ((on(t, "11-28") and 6 <= H(t) < 12 and "indoor" in f)
                                          or ("outdoor" in f and ((on(t, "11-28") and 12 <= H(t) < 17)
                                                                  or (on(t, "11-29") and 6 <= H(t) < 12)))))),
    # Mon 11-23 evening, quiet. 1: Mon evening relaxing-but-not-quiet (not lively), or quiet Tue evening.
    ("明晚想找个安静的地方待会儿", "time_vibe",
     lambda f, t, s: g(on(t, "11-23") and H(t) >= 17 and "quiet" in f,
                       (on(t, "11-23") and H(t) >= 17 and "relaxing" in f and "lively" not in f)
                       or (on(t, "11-24") and H(t) >= 17 and "quiet" in f))),
    # Fri 11-27 after work, lively. 1: Fri evening sociable but not lively, or lively Sat evening.
    ("周五下班了想去嗨一下", "time_vibe",
     lambda f, t, s: g(on(t, "11-27") and H(t) >= 18 and "lively" in f,
                       (on(t, "11-27") and H(t) >= 18 and "mingle" in f)
                       or (on(t, "11-28") and H(t) >= 18 and "lively" in f))),
    # Sun 11-29 afternoon with a kid. 1: kids' activity Sun morning or Sat afternoon,
    # or family-ok (not kid-designed) Sun afternoon.
    ("29号周日下午带娃出去玩", "time_vibe",
     lambda f, t, s: g(on(t, "11-29") and 13 <= H(t) < 18 and "kids" in f,
                       ("kids" in f and ((on(t, "11-29") and H(t) < 13) or (on(t, "11-28") and 13 <= H(t) < 18)))
                       or (on(t, "11-29") and 13 <= H(t) < 18 and "family_ok" in f))),
    # Wed 11-25 evening, relaxing. 1: relaxing on Tue/Thu evening.
    ("周三晚上想放松一下", "time_vibe",
     lambda f, t, s: g(on(t, "11-25") and H(t) >= 18 and "relaxing" in f,
                       (on(t, "11-24") or on(t, "11-26")) and H(t) >= 18 and "relaxing" in f)),
    # Sat 12-05 daytime, out in nature. 1: nature on Sun 12-06 daytime, or outdoors-but-urban on 12-05 daytime.
    ("12月5号白天想去郊外走走", "time_vibe",
     lambda f, t, s: g(on(t, "12-05") and 7 <= H(t) < 17 and {"nature", "outdoor"} <= f,
                       (on(t, "12-06") and 7 <= H(t) < 17 and {"nature", "outdoor"} <= f)
                       or (on(t, "12-05") and 7 <= H(t) < 17 and "outdoor" in f))),
    # Sat 11-28 evening, drinks. 1: drinks Sat afternoon, or Fri/Sun evening.
    ("这周六晚上想跟朋友喝一杯", "time_vibe",
     lambda f, t, s: g(on(t, "11-28") and H(t) >= 17 and "alcohol" in f,
                       "alcohol" in f and ((on(t, "11-28") and 14 <= H(t) < 17)
                                           or ((on(t, "11-27") or on(t, "11-29")) and H(t) >= 18)))),
    # Mon 11-23 06:00-09:00, exercise. 1: exercise Tue morning.
    ("明天一早上班前想运动一下", "time_vibe",
     lambda f, t, s: g(on(t, "11-23") and 6 <= H(t) < 9 and "active" in f,
                       on(t, "11-24") and 6 <= H(t) < 9 and "active" in f)),
]

# (query text, activity key): traps that must come out grade 0.
TRAPS = [
    ("脑子很乱，想找个地方一个人静一静", "m_edm"),
    ("脑子很乱，想找个地方一个人静一静", "l_silent"),
    ("别让我跟陌生人说话，但我又想出门", "x_ice"),
    ("别让我跟陌生人说话，但我又想出门", "x_biz"),
    ("想认识点新朋友，但不要商务社交那一套", "x_biz"),
    ("想认识点新朋友，但不要商务社交那一套", "x_hotel"),
    ("想好好出一身汗", "m_sauna"),
    ("别太累，随便动动就行", "w_hiit"),
    ("别太累，随便动动就行", "m_boot"),
    ("最近太无聊了，想找点刺激的", "d_spicy"),
    ("有没有文艺一点、一个人去也不尴尬的", "g_money"),
    ("带5岁小孩能去玩的", "k_parent"),
    ("带5岁小孩能去玩的", "k_bigkid"),
    ("能带狗一起去的", "d_hotdog"),
    ("能带狗一起去的", "n_shelter"),
    ("第一次约会，去哪不尴尬", "x_speed"),
    ("第一次约会，去哪不尴尬", "vo_date"),
    ("想学点新东西，充实一下自己", "le_lazy"),
    ("预算有限，最好不花钱", "p_freeflow"),
    ("想喝点小酒聊聊天，但别太吵", "x_nonalc"),
    ("想喝点小酒聊聊天，但别太吵", "x_hotel"),
    ("想喝点小酒聊聊天，但别太吵", "m_edm"),
    ("想喝点小酒聊聊天，但别太吵", "x_biz"),
    ("i人友好，不用破冰也不用自我介绍的那种", "x_ice"),
    ("i人友好，不用破冰也不用自我介绍的那种", "x_biz"),
    ("想找个热闹的地方凑凑人气", "m_temple"),
    ("想找个热闹的地方凑凑人气", "m_calm_fri"),
    ("想跟对象安安静静约个会", "l_silent"),
    ("想在大自然里待一会儿", "m_white"),
    ("想在大自然里待一会儿", "o_brunch"),
    ("想在大自然里待一会儿", "o_forestexp"),
    ("一个人吃饭太无聊，想找人一起吃", "d_solo"),
    ("想放空，什么都不想", "m_boot"),
    ("想放空，什么都不想", "y_clear"),
    ("想感受一下老上海的味道", "e_edm"),
    ("想感受一下老上海的味道", "x_bizeng"),
    ("我们6个人想一起玩点什么", "p_6table"),
    ("想交朋友但我不喝酒，也不想去酒吧", "x_biz"),
    ("想交朋友但我不喝酒，也不想去酒吧", "r_swap"),
    ("想听点现场的，耳朵需要享受一下", "le_aed"),
    ("运动小白，怕跟不上别人", "m_boot"),
    ("运动小白，怕跟不上别人", "f_ult"),
    ("想做点有意义的事，帮帮别人", "vo_gym"),
    ("想做点有意义的事，帮帮别人", "vo_date"),
    ("吃货一枚，想去吃吃喝喝", "d_fitfood"),
    ("吃货一枚，想去吃吃喝喝", "d_photo"),
    ("想安静看会儿书", "r_swap"),
    ("不想动脑子，就想乐呵乐呵", "h_write"),
    ("想练练英语口语", "x_engkids"),
    ("想拍点好看的照片发朋友圈", "le_wechat"),
    ("想跟小动物待一会儿", "n_dessert"),
    ("想给自己一点仪式感，贵点也没关系", "f_ceremony"),
    ("想给自己一点仪式感，贵点也没关系", "vo_gym"),
    ("憋了一肚子火，想找个地方发泄", "v_talk"),
    ("爵士乐", "j_drum"),
    ("爵士乐", "j_dance"),
    ("瑜伽", "y_shop"),
    ("攀岩", "c_trap"),
    ("冲浪", "s_web"),
    ("观鸟", "b_fern"),
    ("桌游", "p_bgdesign"),
    ("这周六上午想在户外动一动", "o_sat_market"),
    ("这周六上午想在户外动一动", "g_sketch"),
    ("这周六上午想在户外动一动", "b_park"),
    ("明晚想找个安静的地方待会儿", "x_ice"),
    ("周五下班了想去嗨一下", "m_calm_fri"),
    ("29号周日下午带娃出去玩", "k_parent"),
    ("周三晚上想放松一下", "m_boot"),
    ("12月5号白天想去郊外走走", "o_forestexp"),
    ("这周六晚上想跟朋友喝一杯", "x_nonalc"),
    ("明天一早上班前想运动一下", "x_breakfast"),
]

SEED_PHRASES = ["压力大想发呆", "轻松的小局", "适合社恐的活动", "周五晚上热闹的地方"]
WINDOW_START = datetime(2026, 11, 23, 0, 0)   # Shanghai local
WINDOW_END = datetime(2026, 12, 6, 23, 59)    # Shanghai local


def expand(facets):
    f = set(facets.split())
    unknown = f - VOCAB
    assert not unknown, f"unknown facets {unknown}"
    changed = True
    while changed:
        changed = False
        for k, vs in IMPLIES.items():
            if k in f:
                for v in vs:
                    if v not in f:
                        f.add(v)
                        changed = True
    return f


def build():
    acts, keyed = [], {}
    for i, (key, title, desc, typ, tags, when, place, cur, mx, facets) in enumerate(ACTIVITIES):
        assert key not in keyed, f"duplicate key {key}"
        aid = f"wi-{i + 1:03d}"
        local = datetime.strptime("2026-" + when, "%Y-%m-%d %H:%M")
        assert WINDOW_START <= local <= WINDOW_END, (key, when)
        utc = local - timedelta(hours=8)
        lat, lng = PLACES[place]
        # small deterministic spread so activities at one venue are not stacked
        jitter = ((i * 37) % 9 - 4) * 0.0003
        tag_list = tags.split(",")
        assert 2 <= len(tag_list) <= 3, key
        obj = {
            "id": aid,
            "title": title,
            "description": desc,
            "type": typ,
            "tags": tag_list,
            "startAt": utc.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "locationName": place,
            "location": {"lat": round(lat + jitter, 5), "lng": round(lng - jitter, 5)},
            "status": "active",
            "currentParticipants": cur,
            "maxParticipants": mx,
        }
        acts.append(obj)
        keyed[key] = (aid, expand(facets), local, mx - cur)

    queries, per_kind = [], {}
    by_text = {}
    for qi, (text, kind, rule) in enumerate(QUERIES):
        assert text not in SEED_PHRASES
        n = per_kind.get(kind, 0)
        per_kind[kind] = n + 1
        split = "tune" if n % 2 == 0 else "holdout"
        rel = {}
        for key, (aid, f, local, spots) in keyed.items():
            gr = rule(f, local, spots)
            if gr:
                rel[aid] = gr
        rel = dict(sorted(rel.items()))
        q = {"id": f"q{qi + 1:02d}", "query": text, "kind": kind, "split": split, "relevant": rel}
        queries.append(q)
        by_text[text] = q

    # trap assertions
    for text, key in TRAPS:
        assert text in by_text, text
        aid = keyed[key][0]
        assert aid not in by_text[text]["relevant"], f"trap {key} graded for {text!r}"

    return acts, queries, keyed


def validate(acts, queries):
    ids = [a["id"] for a in acts]
    assert len(ids) == len(set(ids)), "duplicate activity ids"
    assert len(acts) >= 170, len(acts)
    idset = set(ids)
    lo = WINDOW_START - timedelta(hours=8)
    hi = WINDOW_END - timedelta(hours=8)
    for a in acts:
        assert 0 <= a["currentParticipants"] < a["maxParticipants"], a["id"]
        t = datetime.strptime(a["startAt"], "%Y-%m-%dT%H:%M:%SZ")
        assert lo <= t <= hi, a["id"]
        assert a["status"] == "active"
        assert 30.6 < a["location"]["lat"] < 31.9 and 120.8 < a["location"]["lng"] < 122.2, a["id"]
    qids = [q["id"] for q in queries]
    assert len(qids) == len(set(qids))
    assert len(queries) == 56
    counts = {}
    for q in queries:
        counts[(q["kind"], q["split"])] = counts.get((q["kind"], q["split"]), 0) + 1
        for aid, gr in q["relevant"].items():
            assert aid in idset, (q["id"], aid)
            assert gr in (1, 2), (q["id"], aid, gr)
        n2 = sum(1 for v in q["relevant"].values() if v == 2)
        assert n2 >= 3, f"{q['id']} {q['query']} has only {n2} grade-2"
    expected = {("intent", "tune"): 20, ("intent", "holdout"): 20,
                ("lexical", "tune"): 4, ("lexical", "holdout"): 4,
                ("time_vibe", "tune"): 4, ("time_vibe", "holdout"): 4}
    assert counts == expected, counts
    return counts


def main():
    acts, queries, keyed = build()
    counts = validate(acts, queries)
    with open(os.path.join(HERE, "activities.jsonl"), "w", encoding="utf-8") as fh:
        for a in acts:
            fh.write(json.dumps(a, ensure_ascii=False) + "\n")
    with open(os.path.join(HERE, "queries.jsonl"), "w", encoding="utf-8") as fh:
        for q in queries:
            fh.write(json.dumps(q, ensure_ascii=False) + "\n")
    n_rel = [len(q["relevant"]) for q in queries]
    n_two = [sum(1 for v in q["relevant"].values() if v == 2) for q in queries]
    print(f"activities: {len(acts)}  queries: {len(queries)}  splits: {counts}")
    print(f"traps asserted grade 0: {len(TRAPS)}")
    print(f"relevant per query: mean {sum(n_rel) / len(n_rel):.2f} "
          f"(grade-2 mean {sum(n_two) / len(n_two):.2f}), min {min(n_rel)}, max {max(n_rel)}")
    for q in queries:
        n2 = sum(1 for v in q["relevant"].values() if v == 2)
        print(f"  {q['id']} {q['kind']:9s} {q['split']:7s} 2s={n2:3d} 1s={len(q['relevant']) - n2:3d}  {q['query']}")


if __name__ == "__main__":
    main()
