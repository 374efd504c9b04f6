#!/usr/bin/env python3
"""Sealed "unseen" quality set for activity search (Shanghai local-events app).

Written queries-first on 2026-11-29 by an author who read no ranking code and
no other set. The queries were written first, as users type them on an events
app; the activities were then written to answer them and to trap a naive
ranker (decoys that share a query's surface words but not its intent, and
good answers that use none of the query's words).

Kinds and counts (48 queries, every one split "holdout"):
  - intent    30  (20 zh, 6 en, 4 ja): situations/states, negations and
                  constraints, slang, audiences.
  - lexical    8  (6 zh, 1 en, 1 ja): an exact term (place name, rare word,
                  brand-like series title).
  - time_vibe 10  (8 zh, 1 en, 1 ja): a stated time window plus a vibe.
Activities: about 130, all in Shanghai, starting between
2026-11-23T00:00+08:00 and 2026-11-29T23:00+08:00 (written in UTC, "Z").

Grading rule (grades are computed from facets, never typed per activity):
  - every activity carries a facet string judged from its text as a reader
    would judge it (vocabulary in FACETS below);
  - intent: each query has a `full` rule (grade 2 = fully satisfies the need
    AND the constraints) and a `part` rule (grade 1 = partly satisfies it);
  - time_vibe: grade 2 = the need rule holds AND the activity starts inside
    the stated window (Asia/Shanghai); grade 1 = the need holds but it starts
    at another time;
  - lexical: grade 2 = the exact term occurs (case-insensitive) in title,
    description, type, tags or locationName; nothing else is graded.
  Ungraded activities are irrelevant (grade 0).

Reference now: Sunday 2026-11-22 12:00 Asia/Shanghai (the week ahead is
Mon 11-23 .. Sun 11-29; "明天" = Monday 11-23, "this weekend" = 11-28/29).

Run: python3 benches/unseen/build.py
"""

import json
import os
import random
import re
from datetime import datetime, timedelta

HERE = os.path.dirname(os.path.abspath(__file__))

# ---------------------------------------------------------------------------
# Facet vocabulary (judged from the activity text as a reader would):
#   quiet      calm, low noise           loud       noisy / high energy
#   free       costs nothing             cheap      about <=100 yuan
#   pricey     about >=300 yuan          (neither cheap nor pricey = mid)
#   indoor / outdoor                     move       body in motion
#   sweat      hard exercise             gentle     not tiring, easy pace
#   lowimpact  easy on back/knees/joints thrill     adrenaline, scary, fast
#   vent       lets you blow off steam   relax      restful, de-stressing
#   solo_ok    comfortable to come alone mingle     you meet / talk with others
#   icebreak   forced interaction (self-intros, rotation, dares)
#   lowkey     social but talk optional (i-person friendly)
#   kids       fine for children         toddler    fine for under-4s
#   elders     suits older people        dogs       you can bring a dog
#   couples    suits a date              alcohol    drinking is central
#   learn      you learn something       practical  a usable everyday skill
#   creative   you make something        food       eating / cooking
#   culture    history, heritage, arts   nature     plants, animals, parks
#   walk       walking route             music      music involved
#   live       live performance          dance      dancing
#   night      starts 21:00 or later     crowd      expect crowds
#   beginner   explicitly zero-basis     advanced   needs experience
#   gym        happens in a gym          volunteer  volunteering
#   art        viewing visual art        reading    reading books
#   games      games / board games       regular    recurring, can keep going
#   english    works in English          japanese   works in Japanese
#   tech       about tech / screens
# ---------------------------------------------------------------------------
FACETS = set("""
quiet loud free cheap pricey indoor outdoor move sweat gentle lowimpact thrill
vent relax solo_ok mingle icebreak lowkey kids toddler elders dogs couples
alcohol learn practical creative food culture nature walk music live dance
night crowd beginner advanced gym volunteer art reading games regular english
japanese tech
""".split())

# Places: key -> (locationName, lat, lng); real Shanghai places, approximate.
PLACES = {
    "愚园路": ("上海长宁区 愚园路", 31.2215, 121.4300),
    "福州路": ("上海黄浦区 福州路 大众书局", 31.2360, 121.4790),
    "徐家汇书院": ("上海徐汇区 徐家汇书院", 31.1935, 121.4360),
    "上图东馆": ("上海浦东新区 上海图书馆东馆", 31.2210, 121.5540),
    "上图淮海": ("上海徐汇区 上海图书馆(淮海中路)", 31.2050, 121.4400),
    "衡山路": ("上海徐汇区 衡山路", 31.2050, 121.4450),
    "静安寺": ("上海静安区 静安寺一带", 31.2235, 121.4460),
    "安福路": ("上海徐汇区 安福路", 31.2130, 121.4410),
    "豫园": ("上海黄浦区 豫园 湖心亭茶楼", 31.2270, 121.4920),
    "复兴公园": ("上海黄浦区 复兴公园", 31.2180, 121.4680),
    "巨鹿路": ("上海静安区 巨鹿路", 31.2200, 121.4560),
    "复兴中路": ("上海徐汇区 复兴中路", 31.2120, 121.4530),
    "人民广场": ("上海黄浦区 人民广场", 31.2320, 121.4750),
    "锦江乐园": ("上海闵行区 锦江乐园", 31.1430, 121.4150),
    "赛车场": ("上海嘉定区 上海国际赛车场 卡丁车场", 31.3380, 121.2200),
    "华阳路": ("上海长宁区 华阳路街道社区服务中心", 31.2220, 121.4270),
    "植物园": ("上海徐汇区 上海植物园", 31.1510, 121.4450),
    "朱家角": ("上海青浦区 朱家角古镇", 31.1100, 121.0530),
    "上博东馆": ("上海浦东新区 上海博物馆东馆", 31.2290, 121.5320),
    "上博": ("上海黄浦区 上海博物馆(人民广场)", 31.2280, 121.4750),
    "七宝": ("上海闵行区 七宝古镇", 31.1570, 121.3500),
    "佘山": ("上海松江区 佘山国家森林公园", 31.0980, 121.1930),
    "佘山天文台": ("上海松江区 佘山天文台", 31.0970, 121.1880),
    "张园": ("上海静安区 张园", 31.2290, 121.4610),
    "静安文化馆": ("上海静安区 静安区文化馆", 31.2330, 121.4570),
    "陆家嘴": ("上海浦东新区 陆家嘴", 31.2380, 121.5020),
    "张江": ("上海浦东新区 张江科学城", 31.2040, 121.5900),
    "前滩": ("上海浦东新区 前滩太古里", 31.1520, 121.4620),
    "共青": ("上海杨浦区 共青森林公园", 31.3220, 121.5400),
    "动物园": ("上海长宁区 上海动物园", 31.1930, 121.3620),
    "世纪公园": ("上海浦东新区 世纪公园", 31.2160, 121.5480),
    "辰山": ("上海松江区 辰山植物园", 31.0810, 121.1830),
    "古北": ("上海长宁区 古北", 31.1970, 121.4000),
    "新虹桥公园": ("上海长宁区 新虹桥中心花园", 31.2020, 121.4070),
    "田子坊": ("上海黄浦区 田子坊", 31.2080, 121.4660),
    "M50": ("上海普陀区 M50创意园(莫干山路50号)", 31.2500, 121.4490),
    "徐汇滨江": ("上海徐汇区 徐汇滨江", 31.1800, 121.4620),
    "西岸美术馆": ("上海徐汇滨江 西岸美术馆", 31.1720, 121.4600),
    "龙美术馆": ("上海徐汇滨江 龙美术馆西岸馆", 31.1740, 121.4590),
    "滨江森林": ("上海浦东新区 滨江森林公园", 31.3830, 121.5150),
    "大学路": ("上海杨浦区 大学路", 31.3050, 121.5100),
    "五角场": ("上海杨浦区 五角场", 31.2990, 121.5140),
    "武康路": ("上海徐汇区 武康路", 31.2050, 121.4370),
    "外滩": ("上海黄浦区 外滩", 31.2400, 121.4900),
    "大宁": ("上海静安区 大宁公园", 31.2800, 121.4560),
    "梦清园": ("上海普陀区 梦清园(苏州河畔)", 31.2480, 121.4500),
    "外白渡桥": ("上海黄浦区 外白渡桥", 31.2445, 121.4870),
    "四行仓库": ("上海静安区 四行仓库", 31.2430, 121.4720),
    "育音堂": ("上海长宁区 育音堂(凯旋路)", 31.2110, 121.4190),
    "MAO": ("上海黄浦区 MAO Livehouse(重庆南路)", 31.2130, 121.4730),
    "交响": ("上海徐汇区 上海交响音乐厅", 31.2100, 121.4470),
    "思南": ("上海黄浦区 思南公馆", 31.2150, 121.4690),
    "浦美": ("上海浦东新区 浦东美术馆", 31.2380, 121.4960),
    "上生新所": ("上海长宁区 上生新所", 31.2070, 121.4210),
    "静安雕塑": ("上海静安区 静安雕塑公园", 31.2370, 121.4640),
    "甜爱路": ("上海虹口区 甜爱路", 31.2690, 121.4830),
    "乌鲁木齐路": ("上海徐汇区 乌鲁木齐中路菜场", 31.2170, 121.4420),
    "后滩": ("上海浦东新区 后滩公园", 31.1830, 121.4760),
    "东方体育中心": ("上海浦东新区 东方体育中心", 31.1580, 121.4840),
    "来福士": ("上海长宁区 长宁来福士", 31.2190, 121.4230),
    "嘉里": ("上海静安区 静安嘉里中心", 31.2260, 121.4470),
    "新天地": ("上海黄浦区 新天地", 31.2190, 121.4740),
    "杨浦滨江": ("上海杨浦区 杨浦滨江", 31.2550, 121.5300),
}

# Activity: (key, title, description, type, tags, local start "MM-DD HH:MM",
#            place key, currentParticipants, maxParticipants, facets)
A = [
    # --- reading / quiet ---------------------------------------------------
    ("owl37", "夜猫子读书会·第37期：《额尔古纳河右岸》",
     "每周三晚的老牌读书会，这期聊迟子建。来了可以只听不说，店里有热茶，书可现场借阅。限20人。",
     "读书", ["读书会", "文学", "周三"], "11-25 20:00", "愚园路", 12, 20,
     "quiet indoor cheap solo_ok mingle lowkey reading culture regular"),
    ("owlpoem", "夜猫子读书会·深夜特别场：睡不着就来读诗",
     "午夜前的书店最安静。各自挑一本诗集慢慢读，最后半小时自愿朗读一首。免费，24小时书店二楼。",
     "读书", ["诗歌", "深夜", "书店"], "11-27 22:30", "福州路", 9, 30,
     "quiet indoor free solo_ok lowkey reading culture night regular relax gentle"),
    ("owlen", "Night Owls Book Club (夜猫子读书会) — English Edition",
     "Our monthly English-language session of 夜猫子读书会. This time: Klara and the Sun. Read it or not, just come and listen; tea provided. Newcomers to Shanghai very welcome.",
     "读书", ["book club", "English", "reading"], "11-29 10:00", "安福路", 8, 16,
     "quiet indoor cheap solo_ok mingle lowkey reading english culture regular"),
    ("xjhread", "徐家汇书院·周三静读夜",
     "手机静音，两小时沉浸阅读，不分享不打卡。自带书或现场借阅，结束即散。",
     "读书", ["阅读", "自习", "书院"], "11-25 19:00", "徐家汇书院", 31, 60,
     "quiet indoor free solo_ok lowkey reading culture"),
    ("libeast", "上海图书馆东馆·周三夜间开放阅读",
     "东馆周三延长开放至21:00，阅览区座位充足，可借可还，适合下班后来坐一会儿。",
     "读书", ["图书馆", "阅读", "夜间开放"], "11-25 18:30", "上图东馆", 0, 300,
     "quiet indoor free solo_ok reading culture"),
    ("teabook", "衡山路老洋房·读书下午茶",
     "老洋房里的下午茶套餐，一壶茶一块蛋糕一本书，适合一个人坐一下午。",
     "美食", ["下午茶", "老洋房", "读书"], "11-28 14:00", "衡山路", 4, 12,
     "quiet indoor cheap solo_ok reading food relax gentle"),
    # --- relax / chill -------------------------------------------------------
    ("solomed", "一个人的独处冥想·城市静修半日",
     "全程禁语，独自打坐、慢走与书写，不组队不交流。适合想和自己好好待一会儿的人。",
     "身心", ["冥想", "独处", "静修"], "11-23 14:00", "静安寺", 6, 12,
     "quiet indoor pricey solo_ok relax gentle"),
    ("soundbath", "颂钵声音疗愈 Sound Bath",
     "躺在垫子上听颂钵与风铃，60分钟，中英双语引导，无需任何基础。",
     "身心", ["颂钵", "疗愈", "冥想"], "11-23 15:30", "安福路", 10, 14,
     "quiet indoor pricey solo_ok relax gentle english"),
    ("huxinting", "湖心亭·午后慢品一壶茶",
     "豫园湖心亭茶楼二楼临窗位，茶艺师讲讲碧螺春和龙井的区别，坐着听就好，长辈也很喜欢。",
     "文化", ["茶", "豫园", "茶艺"], "11-23 13:30", "豫园", 7, 16,
     "quiet indoor cheap relax gentle culture food elders solo_ok"),
    ("fxlawn", "复兴公园·落叶季草坪发呆",
     "带块野餐垫来草坪上躺着，看梧桐叶一片片落下。不设流程，想走就走。",
     "户外", ["公园", "野餐垫", "落叶"], "11-28 15:00", "复兴公园", 14, 50,
     "quiet outdoor free solo_ok relax gentle nature"),
    ("houtan", "后滩公园·工作日湿地慢走",
     "工作日下午的后滩几乎没人，沿湿地栈道走一圈约3公里，全程平路，随时可以停下看芦苇和水鸟。",
     "户外", ["湿地", "散步", "江边"], "11-23 15:00", "后滩", 3, 15,
     "quiet outdoor free solo_ok relax gentle nature walk move lowimpact"),
    ("aroma", "芳香疗法·调一瓶自己的香",
     "闻20种精油，调一瓶助眠喷雾带走。6人小班，很安静的手作课。",
     "手作", ["精油", "香氛", "助眠"], "11-26 19:00", "上生新所", 4, 6,
     "quiet indoor pricey solo_ok relax creative learn gentle"),
    ("chillnight", "CHILL NIGHT 电音派对",
     "三位DJ轮番上阵，重低音一直到凌晨四点，门票含两杯特调。",
     "夜生活", ["电音", "派对", "DJ"], "11-28 22:00", "巨鹿路", 180, 400,
     "loud indoor pricey crowd dance music alcohol night mingle"),
    # --- thrill ---------------------------------------------------------------
    ("kart", "卡丁车竞速·新手也能飙",
     "上海国际赛车场卡丁车场，教练讲解安全要点后上赛道，8圈计时赛，肾上腺素拉满。",
     "运动", ["卡丁车", "赛车", "竞速"], "11-28 14:00", "赛车场", 9, 16,
     "thrill loud outdoor pricey move beginner"),
    ("escape", "恐怖密室逃脱·6人拼场",
     "沉浸式中式恐怖主题，全程黑暗加NPC惊吓，胆小慎入，缺人拼场。",
     "游戏", ["密室", "恐怖", "拼场"], "11-26 19:30", "人民广场", 4, 6,
     "thrill loud indoor mingle games"),
    ("skate", "徐汇滨江·滑板入门课",
     "滨江极限运动场，教练带你从站板开始，护具齐全，摔了也不怕。",
     "运动", ["滑板", "极限运动", "入门"], "11-28 15:00", "徐汇滨江", 5, 10,
     "thrill outdoor cheap move beginner"),
    ("stomach", "刺激性食物与胃健康讲座",
     "社区医生讲解辛辣、酒精、浓茶咖啡等刺激性食物对胃的影响，适合中老年居民，现场免费测血压。",
     "讲座", ["健康", "养胃", "社区"], "11-24 14:00", "华阳路", 22, 60,
     "quiet indoor free learn elders"),
    # --- elders ---------------------------------------------------------------
    ("taichi", "太极拳·复兴公园晨练（每周二）",
     "跟老师从二十四式学起，动作慢、不伤膝盖和腰，零基础可来，每周二长期进行。",
     "运动", ["太极", "晨练", "公园"], "11-24 07:00", "复兴公园", 18, 40,
     "gentle lowimpact move outdoor free beginner elders regular culture solo_ok"),
    ("chrys", "上海植物园·菊展慢逛",
     "十一月菊花展尾声，园内平路多，沿途有座椅，逛一圈约一个半小时。周末人会比较多。",
     "户外", ["菊花展", "植物园", "赏花"], "11-29 14:00", "植物园", 26, 80,
     "gentle outdoor cheap nature walk elders crowd move lowimpact"),
    ("zhujiajiao", "朱家角·摇橹船慢游",
     "坐摇橹船穿过放生桥，再在老街喝杯茶。步行不多，一家老小都合适。",
     "文化", ["古镇", "摇橹船", "水乡"], "11-29 13:00", "朱家角", 19, 30,
     "gentle outdoor cheap culture elders crowd kids"),
    ("shmeast", "上海博物馆东馆·长辈友好导览",
     "免费预约讲解，一小时看青铜与书画，路线平缓，沿途有休息座椅，可借轮椅。",
     "展览", ["博物馆", "导览", "青铜"], "11-29 14:30", "上博东馆", 15, 25,
     "gentle indoor free culture art learn elders solo_ok quiet"),
    ("pingtan", "七宝书场·周日评弹",
     "七宝老街书场的评弹演出，一杯茶听一下午《珍珠塔》选段。",
     "音乐", ["评弹", "书场", "曲艺"], "11-29 13:30", "七宝", 33, 80,
     "gentle indoor cheap culture music live elders"),
    ("sheshan", "带爸妈爬佘山·秋季登高",
     "全程约6公里，台阶多、爬升大，建议体力较好的家庭参加，自备登山杖。",
     "户外", ["登山", "秋游", "家庭"], "11-29 09:00", "佘山", 21, 40,
     "outdoor cheap nature move sweat walk elders"),
    ("disco80", "爸妈那代人的青春：80年代迪斯科通宵派对",
     "迪斯科、霹雳舞、镭射灯球，一直跳到天亮，酒水畅饮。",
     "夜生活", ["迪斯科", "复古", "通宵"], "11-28 21:00", "新天地", 140, 300,
     "loud indoor cheap crowd dance music alcohol night mingle"),
    ("phone", "长辈智能手机课（每周一期）",
     "教长辈用手机挂号、打车、视频通话、识别诈骗短信。社区活动室，免费，可长期来上。",
     "讲座", ["手机", "长辈", "社区课堂"], "11-24 09:30", "华阳路", 17, 25,
     "quiet indoor free learn practical elders regular"),
    ("choir", "银龄合唱团招新·每周四排练",
     "退休朋友们的合唱团，唱老歌也学新歌，不要求识谱，每周四下午排练。",
     "音乐", ["合唱", "招新", "银龄"], "11-26 14:00", "静安文化馆", 36, 50,
     "indoor free music learn elders regular mingle gentle"),
    ("fire", "FIRE 提前退休·年轻人理财讲座",
     "面向25–35岁上班族：如何规划储蓄与投资，争取40岁提前退休。讲座后有理财产品介绍。",
     "讲座", ["理财", "投资", "职场"], "11-26 19:30", "陆家嘴", 41, 80,
     "indoor cheap learn"),
    # --- 沪语角 ---------------------------------------------------------------
    ("huyu1", "沪语角·老上海闲话（每周四）",
     "张园里的沪语角，老上海人带大家讲讲弄堂里的老底子事体，听得懂就行，不会讲也欢迎。",
     "文化", ["上海话", "弄堂", "方言"], "11-26 15:00", "张园", 14, 30,
     "gentle indoor free culture learn mingle elders regular lowkey"),
    ("huyu2", "亲子沪语角：一起唱上海童谣",
     "4–8岁小朋友和家长一起学《摇啊摇》《笃笃笃卖糖粥》，结束送童谣绘本。",
     "亲子", ["上海话", "童谣", "亲子"], "11-28 10:00", "上图淮海", 12, 20,
     "indoor cheap kids culture learn music"),
    ("huyu3", "沪语角 for Newcomers：Shanghainese 101",
     "用英语讲上海话：学会“侬好”“谢谢侬”“几钿”，再听听老上海的故事。Taught in English, no Chinese needed.",
     "文化", ["上海话", "English", "新上海人"], "11-24 19:00", "上生新所", 9, 20,
     "indoor cheap learn culture english mingle beginner"),
    # --- volunteering ------------------------------------------------------------
    ("libvol", "上海图书馆·图书整理志愿者",
     "帮忙上架、整理书库，每次3小时，可长期参加，退休读者也欢迎。各做各的，不用多说话。",
     "志愿", ["志愿者", "图书馆", "长期"], "11-25 09:00", "上图淮海", 5, 10,
     "quiet indoor free volunteer lowkey solo_ok regular elders"),
    ("catvol", "流浪猫救助站·清洁喂养志愿",
     "帮猫咪清理猫砂、添粮、陪玩，两人一组分区，活儿干完就好，不需要和人多交流。",
     "志愿", ["志愿者", "流浪猫", "救助"], "11-28 10:00", "七宝", 6, 8,
     "indoor free volunteer lowkey solo_ok quiet"),
    ("audiobook", "为视障朋友录制有声书",
     "在录音间里朗读指定章节，每人一个隔间，读完交稿即可。",
     "志愿", ["志愿者", "有声书", "朗读"], "11-28 14:00", "上图东馆", 7, 12,
     "quiet indoor free volunteer solo_ok reading lowkey"),
    ("plogging", "苏州河净滩·边跑边捡",
     "沿苏州河梦清园段慢跑捡垃圾，十人一组，结束后一起合影。",
     "志愿", ["环保", "跑步", "志愿者"], "11-29 09:00", "梦清园", 23, 40,
     "outdoor free volunteer move mingle"),
    # --- kids ---------------------------------------------------------------------
    ("trampoline", "室内蹦床亲子乐园·0–6岁专区",
     "软垫全覆盖，有小小孩专用的低矮蹦床和海洋球池，下雨天也能尽情放电。",
     "亲子", ["蹦床", "室内", "亲子"], "11-24 10:00", "来福士", 16, 40,
     "indoor cheap kids toddler move loud"),
    ("rhythm", "亲子音乐律动课（1–4岁）",
     "跟着鼓点拍手、爬、转圈，老师引导宝宝和家长一起动起来。",
     "亲子", ["早教", "音乐", "律动"], "11-25 10:00", "嘉里", 8, 10,
     "indoor cheap kids toddler music move learn"),
    ("softclimb", "儿童软体攀爬馆·宝宝体验场",
     "2岁以上可玩，软体攀爬墙、滑梯和平衡木，家长可陪同进场。",
     "亲子", ["攀爬", "宝宝", "体验"], "11-26 10:30", "五角场", 11, 25,
     "indoor cheap kids toddler move"),
    ("momtea", "带娃妈妈的下午茶（孩子请留家）",
     "给全职妈妈的两小时喘息：甜品、聊天、交换育儿心得。现场不接待儿童。",
     "社交", ["妈妈", "下午茶", "聊天"], "11-23 14:00", "新天地", 9, 16,
     "indoor pricey food mingle"),
    ("gongqing", "共青森林公园·亲子自然观察",
     "跟自然老师找松果、认树叶、看啄木鸟洞，适合4–10岁。",
     "亲子", ["自然教育", "森林", "亲子"], "11-28 09:30", "共青", 13, 20,
     "outdoor cheap kids nature learn walk"),
    ("zoo", "上海动物园·周日亲子导览",
     "饲养员讲解大熊猫和金丝猴的冬季生活，路线约3公里。",
     "亲子", ["动物园", "亲子", "导览"], "11-29 09:30", "动物园", 27, 40,
     "outdoor cheap kids nature learn walk crowd"),
    ("kite", "世纪公园·周六亲子风筝",
     "现场发放风筝材料包，先画后放，草坪大、风也好。",
     "亲子", ["风筝", "草坪", "亲子"], "11-28 14:00", "世纪公园", 30, 60,
     "outdoor free kids nature move creative"),
    ("insects", "辰山植物园·亲子夜观昆虫（周五）",
     "打着手电找越冬的昆虫和蜘蛛，专业老师带队。",
     "亲子", ["夜观", "昆虫", "自然教育"], "11-27 18:30", "辰山", 15, 20,
     "outdoor cheap kids nature learn"),
    ("enamelkid", "亲子掐丝珐琅·做一枚小挂件",
     "6岁以上，老师预先弯好铜丝，小朋友负责点蓝填色，烧制后带走。",
     "手作", ["珐琅", "亲子", "手作"], "11-28 15:00", "田子坊", 10, 12,
     "indoor cheap kids creative learn"),
    ("ehon", "日本語で絵本の読み聞かせ＆工作",
     "古北の図書コーナーで、日本語の絵本を2冊読んだあと、紙コップで工作をします。0〜5歳向け。",
     "亲子", ["絵本", "日本語", "親子"], "11-28 10:30", "古北", 9, 15,
     "indoor free kids toddler japanese creative quiet"),
    ("donguri", "子連れOK！新虹橋公園でどんぐり拾いピクニック",
     "日本人ママ・パパの集まりです。お弁当持参で、子どもたちは芝生で自由に遊びます。",
     "亲子", ["ピクニック", "子連れ", "公園"], "11-29 10:00", "新虹桥公园", 18, 30,
     "outdoor free kids japanese nature mingle"),
    ("rythmique", "親子リトミック（日本語クラス）",
     "1〜3歳の親子向け。ピアノに合わせて歩いたり跳ねたり。日本人講師が担当します。",
     "亲子", ["リトミック", "親子", "音楽"], "11-26 10:00", "古北", 7, 10,
     "indoor cheap kids toddler japanese music move"),
    ("origami", "中日双语亲子折纸",
     "日语和中文双语讲解，一起折小动物，适合4岁以上，家长可一起参与。",
     "亲子", ["折纸", "中日双语", "亲子"], "11-29 15:00", "古北", 8, 16,
     "indoor cheap kids japanese creative quiet"),
    # --- dogs ----------------------------------------------------------------------
    ("dogparty", "徐汇滨江·狗狗草坪派对",
     "徐汇滨江大草坪遛狗聚会，带上牵引绳和拾便袋，现场有饮水站和互动小游戏。",
     "宠物", ["遛狗", "草坪", "宠物友好"], "11-28 15:30", "徐汇滨江", 35, 80,
     "outdoor free dogs mingle"),
    ("doghike", "带狗徒步·滨江森林公园",
     "8公里林间路线，全程可牵狗，中途有休息点。",
     "户外", ["徒步", "宠物友好", "森林"], "11-29 09:00", "滨江森林", 12, 25,
     "outdoor cheap dogs nature walk move mingle"),
    ("dogcafe", "宠物友好咖啡馆·汪星人社交夜",
     "安福路狗友咖啡馆，狗狗在室内自由交朋友，主人喝咖啡聊天。",
     "宠物", ["咖啡", "宠物友好", "社交"], "11-25 19:00", "安福路", 10, 20,
     "indoor cheap dogs mingle food"),
    ("dogbrunch", "Dog-Friendly Sunday Brunch at Qiantan",
     "English-speaking dog owners' brunch on the terrace. Bring your pup; water bowls and treats provided.",
     "宠物", ["brunch", "dogs", "English"], "11-29 11:00", "前滩", 14, 24,
     "outdoor pricey dogs english mingle food"),
    ("hotdog", "热狗大胃王挑战赛",
     "10分钟吃热狗，吃最多的人免单。现场围观很热闹。",
     "美食", ["大胃王", "比赛", "热狗"], "11-28 13:00", "大学路", 16, 20,
     "loud outdoor cheap food crowd"),
    # --- low-key social / meeting people ---------------------------------------
    ("boardgame", "新人友好桌游局",
     "店员先教规则，从《卡坦岛》《璀璨宝石》这类轻策略开始，一个人来会被安排入座。",
     "游戏", ["桌游", "新手", "拼桌"], "11-24 19:30", "人民广场", 9, 16,
     "indoor cheap games mingle lowkey beginner solo_ok"),
    ("bgnight", "Board Game Night (English-speaking)",
     "Weekly games night for internationals and locals. Rules explained in English; come alone and we'll seat you at a table.",
     "游戏", ["board games", "English", "weekly"], "11-24 19:30", "愚园路", 15, 30,
     "indoor cheap games mingle lowkey english solo_ok regular"),
    ("wukang", "武康路老建筑 Citywalk",
     "建筑爱好者带队，两小时慢慢走，讲巴金故居和武康大楼的故事。周末游客较多。",
     "文化", ["citywalk", "老建筑", "梧桐区"], "11-28 14:00", "武康路", 17, 20,
     "outdoor cheap culture walk move gentle lowimpact mingle crowd"),
    ("newcomers", "Shanghai Newcomers Coffee Meetup",
     "Just moved to Shanghai? Grab a coffee and meet other newcomers. All in English, no drinking, no pressure.",
     "社交", ["newcomers", "coffee", "English"], "11-28 10:00", "新天地", 22, 40,
     "indoor cheap english mingle solo_ok"),
    ("sober", "无酒精社交夜 Sober Social",
     "不喝酒也能聊得开：特调无酒精饮品、聊天话题卡和热情的主持人，一个人来也不冷场。中英文都可以。",
     "社交", ["无酒精", "社交", "交友"], "11-26 20:00", "新天地", 18, 30,
     "indoor cheap english mingle solo_ok"),
    ("runclub", "Thursday Run Club (English)",
     "5K along the Huangpu from the Bund, all paces welcome. We grab juice together after.",
     "运动", ["running", "English", "weekly"], "11-26 19:00", "外滩", 25, 60,
     "outdoor free english mingle move sweat beginner regular"),
    ("chinesecorner", "中文角 Speak Chinese Only!",
     "全程只说中文的外国人中文角，建议HSK4以上。English not allowed — this is for practicing Chinese.",
     "社交", ["中文角", "HSK", "语言"], "11-27 19:00", "五角场", 13, 24,
     "indoor cheap mingle learn"),
    ("winetaste", "Not a Drinker? Start Here: Beginner Wine Tasting",
     "Six wines, a sommelier, and a seated tasting for people who have never been into wine. You will learn to taste, not to party.",
     "美食", ["wine", "tasting", "sommelier"], "11-25 19:30", "外滩", 8, 12,
     "indoor pricey alcohol learn english"),
    ("icebreak", "i人社交破冰局",
     "专治i人！轮流自我介绍、真心话大冒险、两两搭档完成任务，主持人保证没人能躲在角落。",
     "社交", ["破冰", "交友", "i人"], "11-27 19:30", "静安寺", 20, 30,
     "indoor cheap mingle icebreak loud games"),
    ("shutup", "Shut Up & Write 静默写作会",
     "前10分钟说说今天要写什么，然后两轮50分钟安静写作，结束后想聊就聊。中英文都行。",
     "写作", ["写作", "自习", "bilingual"], "11-24 19:00", "上生新所", 11, 20,
     "quiet indoor cheap solo_ok lowkey creative english mingle"),
    ("drawroom", "绘画自习室·一起画，不说话",
     "提供画材和静物，各画各的，三小时不设教学，画完可以互相看看。",
     "手作", ["绘画", "自习室", "静物"], "11-26 19:00", "M50", 6, 14,
     "quiet indoor cheap solo_ok lowkey creative"),
    ("jigsaw", "千片拼图夜",
     "一桌四人拼一幅1000片的《神奈川冲浪里》，不说话也能默契配合。",
     "游戏", ["拼图", "拼桌", "安静"], "11-23 19:30", "人民广场", 10, 16,
     "quiet indoor cheap games lowkey mingle solo_ok"),
    # --- drinks + mingling ------------------------------------------------------
    ("craftbeer", "周五精酿社交夜",
     "十二个酒头随便试，吧台会帮一个人来的朋友介绍搭子。",
     "社交", ["精酿", "酒吧", "交友"], "11-27 19:30", "愚园路", 28, 50,
     "indoor cheap alcohol mingle solo_ok"),
    ("bunddrinks", "After-Work Drinks 外滩露台社交",
     "周五下班后的外滩露台酒会，中英文混合，约一半是外籍朋友。",
     "社交", ["酒会", "露台", "外籍"], "11-27 19:00", "外滩", 46, 80,
     "outdoor pricey alcohol mingle english"),
    ("drinkgames", "喝酒游戏之夜",
     "骰子、国王游戏、啤酒乒乓，输了就喝。",
     "夜生活", ["酒吧", "游戏", "啤酒"], "11-27 21:00", "大学路", 24, 40,
     "indoor cheap alcohol mingle loud games night"),
    ("sake", "日本酒の会 @古北",
     "日本酒を5種類、料理と一緒に楽しみます。一人参加の方も多いので気軽にどうぞ。",
     "美食", ["日本酒", "古北", "飲み会"], "11-27 19:00", "古北", 11, 20,
     "indoor pricey alcohol mingle japanese food solo_ok"),
    # --- sweat / sport -------------------------------------------------------------
    ("run10k", "徐汇滨江·周六晨跑10K",
     "周六7:30龙腾大道集合，配速6分左右，跑完一起吃早饭。",
     "运动", ["跑步", "晨跑", "滨江"], "11-28 07:30", "徐汇滨江", 34, 60,
     "outdoor free move sweat mingle"),
    ("hiit", "世纪公园·周六晨间HIIT",
     "45分钟高强度间歇训练，汗流浃背，把一周的憋屈都练出去。",
     "运动", ["HIIT", "训练", "户外"], "11-28 08:00", "世纪公园", 19, 30,
     "outdoor cheap move sweat vent mingle"),
    ("frisbee", "飞盘新手局·周六上午",
     "零基础教学，先学传盘再打小比赛，跑动很多，记得带水。",
     "运动", ["飞盘", "新手", "草坪"], "11-28 09:30", "大宁", 22, 28,
     "outdoor cheap move sweat mingle beginner games"),
    ("pickle1", "Pickleball Social — Beginner Clinic",
     "Never held a paddle? One hour of coaching, then friendly doubles. English-speaking coach, paddles provided.",
     "运动", ["pickleball", "beginner", "English"], "11-28 10:00", "前滩", 10, 16,
     "indoor cheap move sweat beginner english mingle"),
    ("pickle2", "匹克球 Pickleball 双打联赛（进阶）",
     "面向有比赛经验的球友，积分赛制，强度较高。",
     "运动", ["匹克球", "联赛", "双打"], "11-29 14:00", "前滩", 24, 32,
     "indoor cheap move sweat advanced mingle"),
    ("pickle3", "匹克球 Pickleball 入门体验课",
     "规则简单、场地小、跑动不多，很适合第一次接触球拍运动的人。",
     "运动", ["匹克球", "入门", "体验课"], "11-25 19:00", "来福士", 7, 12,
     "indoor cheap move gentle beginner mingle"),
    ("rainhike", "下雨天照走！户外雨中徒步挑战",
     "不管下不下雨都出发，佘山15公里越野，穿好雨衣准备湿透。",
     "户外", ["徒步", "越野", "雨天"], "11-28 08:00", "佘山", 16, 30,
     "outdoor cheap move sweat nature mingle"),
    ("boxfit", "周三晚·搏击操",
     "健身房团课，拳打脚踢配上动感音乐，一小时出一身汗。",
     "运动", ["搏击操", "团课", "燃脂"], "11-25 19:30", "嘉里", 18, 25,
     "indoor cheap move sweat vent gym loud"),
    ("deadlift", "腰背核心强化·硬拉训练营",
     "大重量硬拉与核心训练，让你的腰动起来更有力。需要一定力量训练基础。",
     "运动", ["硬拉", "力量训练", "核心"], "11-26 19:00", "静安寺", 8, 10,
     "indoor pricey move sweat gym advanced"),
    ("trailpro", "新手勿入！佘山进阶越野跑",
     "25公里越野，累计爬升800米，要求近半年有越野比赛经验。",
     "运动", ["越野跑", "进阶", "佘山"], "11-29 07:00", "佘山", 12, 20,
     "outdoor cheap move sweat advanced nature"),
    ("bento", "不想去健身房？低脂便当烹饪课",
     "教你做五款一周不重样的低脂便当，减脂从厨房开始。",
     "美食", ["烹饪", "减脂", "便当"], "11-23 19:00", "上生新所", 9, 12,
     "indoor cheap food learn practical"),
    ("kayak", "苏州河皮划艇体验",
     "从梦清园下水，沿苏州河划两公里，教练全程跟船，零基础可参加。",
     "运动", ["皮划艇", "水上", "体验"], "11-28 14:00", "梦清园", 8, 12,
     "outdoor cheap move sweat beginner mingle"),
    ("nightrun", "苏州河夜跑（每周四）",
     "每周四晚沿苏州河步道跑8公里，外白渡桥集合。",
     "运动", ["夜跑", "跑团", "步道"], "11-26 20:00", "外白渡桥", 31, 60,
     "outdoor free move sweat mingle regular"),
    ("riverwalk", "苏州河步道·长辈慢走与历史讲解",
     "从四行仓库走到外白渡桥，平路约2公里，每走一段停下来讲讲老仓库的故事。",
     "文化", ["步道", "历史", "慢走"], "11-29 14:00", "四行仓库", 14, 25,
     "outdoor free gentle lowimpact move walk culture elders"),
    ("rageroom", "砸东西解压馆",
     "戴好护具，抡起球棒砸碎盘子、旧电视和酒瓶，20分钟随便砸。",
     "娱乐", ["解压", "砸东西", "体验"], "11-27 19:00", "五角场", 3, 6,
     "indoor pricey vent thrill loud solo_ok"),
    ("boxing", "拳击入门体验课",
     "拳馆体验课，教基本拳法后打沙袋，打完整个人都轻了。",
     "运动", ["拳击", "拳馆", "体验课"], "11-24 19:30", "嘉里", 6, 10,
     "indoor cheap move sweat vent beginner gym"),
    ("stresstalk", "压力管理讲座：科学减压",
     "心理咨询师讲解压力的来源与呼吸放松方法，坐着听讲，可匿名提问。",
     "讲座", ["心理", "减压", "讲座"], "11-24 19:00", "上图淮海", 38, 100,
     "quiet indoor free learn"),
    ("ktv", "深夜KTV嘶吼局",
     "四人包厢一直唱到两点，摇滚和口水歌都行，走调没人笑你。",
     "夜生活", ["KTV", "唱歌", "组队"], "11-27 22:00", "五角场", 3, 4,
     "indoor cheap loud music vent mingle night"),
    # --- live music ----------------------------------------------------------
    ("yuyintang", "育音堂·周四独立乐队之夜",
     "三支本地乐队，朋克和后朋克，站着听，吧台有啤酒。",
     "音乐", ["livehouse", "独立乐队", "朋克"], "11-26 20:30", "育音堂", 96, 200,
     "indoor cheap loud live music alcohol crowd"),
    ("postrock", "MAO Livehouse·后摇专场",
     "两支后摇乐队，一堵墙一样的吉他声，有寄存。",
     "音乐", ["后摇", "livehouse", "现场"], "11-26 20:00", "MAO", 310, 600,
     "indoor loud live music crowd"),
    ("jazz", "雨天爵士 Rainy Day Jazz",
     "爵士三重奏驻场，微醺夜晚，最低消费一杯酒，未成年人谢绝入场。",
     "音乐", ["爵士", "酒吧", "现场"], "11-26 21:00", "衡山路", 30, 60,
     "indoor pricey live music alcohol night"),
    ("chamber", "上海交响音乐厅·周六室内乐",
     "弦乐四重奏演绎莫扎特与德沃夏克，座位舒适，中场休息15分钟。",
     "音乐", ["古典", "室内乐", "音乐厅"], "11-28 19:30", "交响", 280, 400,
     "indoor pricey live music culture gentle elders quiet"),
    ("folk", "思南公馆·周日午后露天民谣",
     "广场上的免费小型演出，吉他和口琴，带张椅子坐着听。",
     "音乐", ["民谣", "露天", "免费"], "11-29 15:00", "思南", 40, 150,
     "outdoor free live music gentle relax elders"),
    ("greenday", "Green Day Tribute Night",
     "Punk covers all night, standing room only, mosh pit guaranteed.",
     "音乐", ["punk", "tribute", "livehouse"], "11-26 21:30", "MAO", 260, 500,
     "indoor cheap loud live music crowd alcohol night"),
    # --- dancing -------------------------------------------------------------------
    ("techno", "夜猫子 Techno 通宵派对",
     "为夜猫子准备的Techno通宵，零点以后才是高潮。",
     "夜生活", ["Techno", "通宵", "派对"], "11-28 23:00", "复兴中路", 220, 500,
     "indoor pricey loud dance music alcohol night crowd mingle"),
    ("salsa", "Salsa 社交舞之夜",
     "开场半小时基础教学，之后自由邀舞，一个人来也能跳。",
     "夜生活", ["Salsa", "社交舞", "拉丁"], "11-27 21:00", "新天地", 44, 80,
     "indoor cheap dance music mingle night beginner move alcohol loud solo_ok"),
    # --- art --------------------------------------------------------------------------
    ("pudongart", "浦东美术馆·周六特展",
     "看完特展去顶层露台看外滩，建议提前预约。",
     "展览", ["美术馆", "特展", "看展"], "11-28 10:00", "浦美", 120, 400,
     "indoor pricey art culture solo_ok quiet"),
    ("westbund", "徐汇滨江·西岸美术馆 常设展导览",
     "周日下午的馆员导览，半小时讲解后自由参观。",
     "展览", ["美术馆", "导览", "当代艺术"], "11-29 14:00", "西岸美术馆", 18, 30,
     "indoor cheap art culture solo_ok quiet"),
    ("m50", "M50画廊周六开放日（免费）",
     "二十多家画廊同时开放，逛到哪看到哪，无需预约。",
     "展览", ["画廊", "当代艺术", "开放日"], "11-28 13:00", "M50", 0, 500,
     "indoor free art solo_ok walk"),
    ("artbook", "上生新所·独立艺术书展",
     "百余家独立出版与艺术家摊位，周末两天，现场很热闹。",
     "展览", ["艺术书", "独立出版", "市集"], "11-29 11:00", "上生新所", 0, 2000,
     "indoor cheap art creative crowd mingle solo_ok"),
    ("longmuseum", "龙美术馆·工作日看展",
     "工作日人少，可以在大展厅里慢慢看。",
     "展览", ["美术馆", "看展", "工作日"], "11-25 14:00", "龙美术馆", 35, 300,
     "indoor pricey art culture solo_ok quiet"),
    ("stall", "免费领取展位！创意市集摊主招募说明会",
     "周末市集招募摊主，免费提供展位和桌椅，需提前报名审核。",
     "市集", ["摆摊", "招募", "市集"], "11-24 18:00", "大学路", 27, 60,
     "indoor free"),
    ("sculpture", "静安雕塑公园·户外雕塑散步",
     "园内二十多件户外雕塑，免费开放，绕一圈约40分钟。",
     "展览", ["雕塑", "公园", "免费"], "11-24 14:00", "静安雕塑", 0, 200,
     "outdoor free art nature walk gentle solo_ok quiet move lowimpact"),
    # --- crafts --------------------------------------------------------------------
    ("enamel", "掐丝珐琅手作工作坊",
     "周二晚间小班，掐丝、点蓝、打磨，做一枚胸针，新手两小时完成。",
     "手作", ["珐琅", "胸针", "小班"], "11-24 19:00", "田子坊", 5, 8,
     "indoor creative learn solo_ok lowkey quiet"),
    ("indigo", "蓝染手作：染一条方巾",
     "用植物蓝靛染料，学三种绑扎方法，染好的方巾当场带走。",
     "手作", ["植物染", "方巾", "手作"], "11-24 19:30", "M50", 6, 10,
     "indoor cheap creative learn solo_ok"),
    ("pottery", "陶艺拉坯夜课",
     "周二晚上两小时，老师手把手拉一个杯子，情侣和一个人来都可以。",
     "手作", ["陶艺", "拉坯", "夜课"], "11-24 19:00", "上生新所", 7, 10,
     "indoor creative learn solo_ok couples"),
    ("indigokid", "亲子蓝染·周六上午",
     "适合5岁以上，孩子和家长一起染一件小T恤。",
     "手作", ["亲子", "植物染", "T恤"], "11-28 10:00", "田子坊", 8, 12,
     "indoor cheap kids creative learn"),
    ("indigoout", "蓝染 × 植物拓印·朱家角户外课",
     "在河边院子里用树叶拓印，再浸入蓝缸，慢慢等颜色出来。",
     "手作", ["植物染", "拓印", "古镇"], "11-29 13:00", "朱家角", 9, 12,
     "outdoor creative learn nature relax gentle"),
    ("tiedye", "扎染T恤派对",
     "彩色扎染加音乐加饮料，染完直接穿上合影。",
     "手作", ["扎染", "派对", "T恤"], "11-27 20:00", "大学路", 21, 40,
     "indoor cheap creative learn loud music mingle"),
    ("cloisonne", "Cloisonné (掐丝珐琅) Enamel Workshop in English",
     "Bend copper wire, fill it with enamel, and take home a pendant. Taught in English; no experience needed.",
     "手作", ["cloisonne", "craft", "English"], "11-26 19:00", "田子坊", 6, 10,
     "indoor pricey creative learn english solo_ok"),
    ("falangcai", "珐琅彩瓷器特展",
     "清代珐琅彩瓷器特展，周日下午有讲解员，展厅设有座椅。",
     "展览", ["瓷器", "清代", "特展"], "11-29 15:00", "上博", 60, 200,
     "indoor free art culture elders gentle quiet solo_ok"),
    ("woodwork", "木工入门：做一只小板凳",
     "学会用刨子、凿子和榫卯，三小时做出一只能坐的小板凳。",
     "手作", ["木工", "榫卯", "入门"], "11-24 18:30", "杨浦滨江", 5, 8,
     "indoor pricey creative learn practical"),
    # --- couples -----------------------------------------------------------------
    ("duopottery", "情侣双人陶艺",
     "两人合作捏一对杯子，烧制后寄到家。",
     "手作", ["陶艺", "双人", "约会"], "11-28 15:00", "田子坊", 4, 8,
     "indoor pricey couples creative learn"),
    ("tianai", "甜爱路 × 多伦路 慢慢走",
     "从甜爱路走到多伦路，看老建筑、逛旧书店，一路免费。",
     "文化", ["散步", "老建筑", "旧书店"], "11-29 15:00", "甜爱路", 8, 20,
     "outdoor free couples walk culture gentle move lowimpact"),
    ("stars", "佘山天文台·夜间观星",
     "天文爱好者带望远镜看土星环和月面，晴天才开，裹厚一点。",
     "户外", ["观星", "天文", "望远镜"], "11-27 21:30", "佘山天文台", 11, 20,
     "outdoor cheap quiet night nature learn couples relax"),
    ("dinnermovie", "Dinner & a Movie 约会套餐",
     "西餐双人套餐加影城情侣座两张，一站式约会。",
     "美食", ["约会", "西餐", "电影"], "11-28 18:00", "来福士", 6, 20,
     "indoor pricey couples food"),
    ("duoyoga", "双人瑜伽·情侣体验课",
     "两人配合完成拉伸和平衡动作，动作柔和，适合零基础。",
     "运动", ["瑜伽", "双人", "体验课"], "11-26 19:30", "静安寺", 6, 10,
     "indoor cheap couples move gentle relax beginner lowimpact"),
    # --- food ----------------------------------------------------------------------
    ("supper", "陌生人长桌晚餐 Supper Club",
     "十二个陌生人围坐一张长桌，主厨上七道菜，配酒可选。一个人来最合适。",
     "美食", ["长桌宴", "主厨", "交友"], "11-27 19:00", "愚园路", 9, 12,
     "indoor pricey food mingle solo_ok"),
    ("market", "菜场早餐 Citywalk",
     "从乌鲁木齐中路菜场出发，吃粢饭糕、生煎、豆浆，边走边聊。",
     "美食", ["早餐", "菜场", "citywalk"], "11-28 08:30", "乌鲁木齐路", 10, 12,
     "outdoor cheap food walk mingle solo_ok culture"),
    ("candle", "双人烛光晚餐·仅限两人",
     "浦江景观位法餐，双人套餐，只接受两人预订。",
     "美食", ["法餐", "烛光晚餐", "江景"], "11-25 19:00", "外滩", 10, 20,
     "indoor pricey couples food alcohol"),
    ("dumpling", "中式面点课：包饺子 Dumpling Class",
     "Learn to make dough, then fill and fold three kinds of dumplings, and eat them together. Taught in English.",
     "美食", ["dumplings", "cooking", "English"], "11-25 18:30", "静安寺", 8, 12,
     "indoor cheap food learn practical english mingle"),
    ("honbang", "日本語OK！上海本帮菜料理教室",
     "紅焼肉と油爆蝦を作ります。日本語通訳付きなので、中国語が分からなくても大丈夫です。",
     "美食", ["料理教室", "本帮菜", "日本語"], "11-27 11:00", "古北", 5, 8,
     "indoor pricey food learn practical japanese"),
    ("sichuan", "川菜家常菜课（英文教学）",
     "鱼香肉丝、麻婆豆腐，老师全程英文讲解，适合外籍朋友。",
     "美食", ["川菜", "烹饪", "英文"], "11-28 11:00", "新天地", 7, 10,
     "indoor food learn practical english mingle"),
    # --- nature / walking -----------------------------------------------------------
    ("chenshan", "辰山植物园·工作日慢走",
     "工作日上午人很少，园区和温室之间都是平路，可以慢慢看，温室里很暖和。",
     "户外", ["植物园", "温室", "散步"], "11-24 10:00", "辰山", 4, 20,
     "outdoor cheap nature walk gentle lowimpact move quiet solo_ok elders"),
    ("birding", "滨江森林公园·工作日观鸟",
     "带上望远镜，跟着鸟友认冬候鸟，走走停停，几乎不说话。",
     "户外", ["观鸟", "候鸟", "森林"], "11-26 08:00", "滨江森林", 6, 12,
     "outdoor cheap nature walk quiet learn relax gentle solo_ok move lowimpact"),
    ("ginkgo", "世纪公园·周末银杏大道",
     "银杏正黄，周末来拍照的人特别多。",
     "户外", ["银杏", "拍照", "公园"], "11-28 13:00", "世纪公园", 0, 1000,
     "outdoor cheap nature walk crowd gentle"),
    ("burnout", "Recharge Your Career: Beat Burnout Workshop",
     "A productivity workshop for professionals burnt out from work: time-blocking apps, Notion templates and focus tools. Bring your laptop.",
     "讲座", ["productivity", "career", "workshop"], "11-25 19:00", "陆家嘴", 26, 40,
     "indoor pricey learn english tech"),
    ("rustsalon", "程序员技术沙龙：Rust 实战分享",
     "三场纯技术分享，无社交环节，讲完即散。",
     "讲座", ["Rust", "技术分享", "后端"], "11-26 19:30", "张江", 88, 150,
     "indoor free learn tech"),
    ("karaoke", "一人じゃ行けない！大人数カラオケパーティー",
     "20人で大部屋を貸し切り！飲み放題で、みんなで歌って盛り上がりましょう。",
     "夜生活", ["カラオケ", "飲み放題", "パーティー"], "11-28 19:00", "古北", 14, 20,
     "indoor cheap loud music mingle alcohol japanese"),
    # --- 朝活 ------------------------------------------------------------------
    ("asayoga", "朝活ヨガ＠世紀公園",
     "朝7時から1時間、芝生の上でゆっくりヨガ。日本語と中国語で案内します。一人参加歓迎。",
     "运动", ["ヨガ", "朝活", "公園"], "11-26 07:00", "世纪公园", 9, 20,
     "outdoor cheap move gentle lowimpact relax japanese solo_ok"),
    ("asaread", "朝活·7点英语晨读会",
     "上班前一小时，一起读《经济学人》的一篇文章，读完各自上班。",
     "读书", ["晨读", "英语", "早起"], "11-25 07:00", "陆家嘴", 12, 20,
     "quiet indoor cheap reading learn english lowkey solo_ok mingle"),
    ("asabreak", "朝活×早餐会：中日交流晨间社交",
     "上班前边吃早餐边做中日交流，中文和日语都可以，一个人来的居多。",
     "社交", ["早餐会", "中日交流", "早起"], "11-27 07:30", "外滩", 10, 16,
     "indoor cheap food mingle japanese solo_ok"),
    # --- practical -------------------------------------------------------------
    ("cpr", "急救CPR培训",
     "红十字会认证讲师，学心肺复苏和AED使用，考核通过发证。",
     "讲座", ["急救", "AED", "证书"], "11-28 14:00", "静安文化馆", 19, 30,
     "indoor free learn practical"),
    ("aquawalk", "东方体育中心·水中健步走",
     "在浅水池里慢慢走和做伸展，水的浮力能减轻腰椎和膝盖的负担，教练全程指导。",
     "运动", ["游泳馆", "健步走", "康复"], "11-23 10:00", "东方体育中心", 9, 15,
     "indoor cheap move gentle lowimpact elders beginner"),
    ("midnightsleep", "午夜声音疗愈·睡眠冥想",
     "23点开始，躺着听颂钵和白噪音，很多人听着就睡着了，可以留到天亮。",
     "身心", ["睡眠", "冥想", "颂钵"], "11-26 23:00", "安福路", 6, 12,
     "quiet indoor pricey relax gentle solo_ok night"),
]

# ---------------------------------------------------------------------------
# Queries. Intent: (id, query, full rule, part rule). Rules are boolean
# expressions over facet names.
# ---------------------------------------------------------------------------
INTENT = [
    ("u01", "刚分手，不想一个人待着", "mingle and solo_ok and not couples",
     "mingle and not couples"),
    ("u02", "腰间盘突出还能动一动的", "move and lowimpact", "move and gentle"),
    ("u03", "带爸妈去不累的", "elders and gentle", "elders"),
    ("u04", "下雨天不想去户外，找点室内能玩的，别太贵",
     "indoor and (free or cheap) and (games or creative)", "indoor and (free or cheap)"),
    ("u05", "想整点刺激的", "thrill", "False"),
    ("u06", "chill一下", "relax and gentle and not crowd and not loud", "relax"),
    ("u07", "i人友好 不用尬聊的活动", "lowkey and not icebreak",
     "quiet and solo_ok and not icebreak"),
    ("u08", "零基础新手能玩的运动", "move and beginner and not advanced",
     "move and gentle and not advanced"),
    ("u09", "带娃去哪放电 三岁 室内", "toddler and indoor and move", "kids and indoor"),
    ("u10", "退休了想找点长期能坚持的事", "elders and regular",
     "elders and (learn or volunteer)"),
    ("u11", "一个人吃饭不尴尬的地方", "food and solo_ok", "food"),
    ("u12", "程序员下班想认识点圈外的人",
     "mingle and solo_ok and not tech and (move or games or creative or food)",
     "mingle and not tech"),
    ("u13", "压力大想发泄一下", "vent", "sweat"),
    ("u14", "能带狗一起去的", "dogs", "False"),
    ("u15", "想学点以后用得上的技能", "learn and practical", "learn and creative"),
    ("u16", "有没有免费的展可以看", "art and free", "art and cheap"),
    ("u17", "社恐也能参加的志愿者活动",
     "volunteer and not icebreak and (lowkey or quiet)", "volunteer"),
    ("u18", "想出汗又不想去健身房", "sweat and not gym", "sweat"),
    ("u19", "情侣约会 不想太俗",
     "couples and (creative or culture or nature) and not crowd", "couples"),
    ("u20", "失眠 半夜睡不着能去哪", "night and (quiet or relax)", "night and not loud"),
    ("u21", "not a drinker, want to meet people", "mingle and solo_ok and not alcohol",
     "mingle and not alcohol"),
    ("u22", "no crowds, somewhere green to walk", "nature and walk and not crowd",
     "nature and outdoor"),
    ("u23", "new in Shanghai, don't speak Chinese, want to make friends",
     "english and mingle", "english"),
    ("u24", "something to do with my toddler on a rainy day", "toddler and indoor",
     "kids and indoor"),
    ("u25", "cheap date idea that's not dinner and a movie",
     "couples and (free or cheap) and not food", "couples"),
    ("u26", "burnt out from work, need to recharge away from screens",
     "relax and (nature or creative) and not tech", "relax and not tech"),
    ("u27", "一人で静かに過ごせる場所", "quiet and solo_ok and not mingle and (relax or reading or art)",
     "quiet and solo_ok"),
    ("u28", "日本語が通じる子連れイベント", "japanese and kids", "japanese"),
    ("u29", "中国語が苦手でも参加できる料理教室",
     "food and learn and (english or japanese)", "food and learn"),
    ("u30", "体を動かしたいけど激しいのは無理", "move and gentle and not sweat",
     "move and beginner and not sweat"),
]

# Lexical: (id, query, exact term)
LEXICAL = [
    ("u31", "徐汇滨江", "徐汇滨江"),
    ("u32", "掐丝珐琅", "掐丝珐琅"),
    ("u33", "蓝染", "蓝染"),
    ("u34", "沪语角", "沪语角"),
    ("u35", "pickleball", "pickleball"),
    ("u36", "朝活", "朝活"),
    ("u37", "苏州河", "苏州河"),
    ("u38", "夜猫子读书会", "夜猫子读书会"),
]

# Time+vibe: (id, query, need rule, window start, window end) in local time.
TIME_VIBE = [
    ("u39", "周三晚上想找个安静的地方看书", "quiet and reading",
     "11-25 18:00", "11-26 00:00"),
    ("u40", "anything outdoorsy for the kids this weekend?", "kids and outdoor",
     "11-28 00:00", "11-30 00:00"),
    ("u41", "明天下午想chill一下", "relax and gentle", "11-23 12:00", "11-23 18:00"),
    ("u42", "周五下班喝一杯顺便认识新朋友", "alcohol and mingle",
     "11-27 17:30", "11-28 00:00"),
    ("u43", "周六早上运动出出汗", "sweat", "11-28 05:00", "11-28 12:00"),
    ("u44", "周四晚上有什么live可以听", "live and music", "11-26 18:00", "11-27 02:00"),
    ("u45", "週末、一人で行けるアート系のイベント", "art and solo_ok",
     "11-28 00:00", "11-30 00:00"),
    ("u46", "周二下班后学个手艺", "creative and learn", "11-24 18:00", "11-24 23:30"),
    ("u47", "这周日下午带爸妈出去转转", "elders and gentle", "11-29 12:00", "11-29 18:00"),
    ("u48", "周六晚上想去蹦迪", "dance and night", "11-28 20:00", "11-29 05:00"),
]

# Trap pairs: (query id, decoy activity key, surface word shared by both).
# The decoy must grade 0 for that query.
TRAPS = [
    ("u01", "solomed", "一个人"),
    ("u02", "deadlift", "腰"),
    ("u03", "disco80", "爸妈"),
    ("u04", "rainhike", "下雨天"),
    ("u05", "stomach", "刺激"),
    ("u06", "chillnight", "chill"),
    ("u07", "icebreak", "i人"),
    ("u08", "trailpro", "新手"),
    ("u09", "momtea", "带娃"),
    ("u10", "fire", "退休"),
    ("u12", "rustsalon", "程序员"),
    ("u13", "stresstalk", "压力"),
    ("u14", "hotdog", "狗"),
    ("u16", "stall", "免费"),
    ("u18", "bento", "健身房"),
    ("u21", "winetaste", "not a drinker"),
    ("u22", "greenday", "green"),
    ("u23", "chinesecorner", "chinese"),
    ("u24", "jazz", "rainy day"),
    ("u26", "burnout", "burnt out from work"),
    ("u27", "karaoke", "一人"),
]

LANG = {}  # query id -> language
for _qid, _q, *_ in INTENT + LEXICAL + TIME_VIBE:
    if re.search(r"[\u3040-\u30ff]", _q):
        LANG[_qid] = "ja"
    elif re.search(r"[\u4e00-\u9fff]", _q):
        LANG[_qid] = "zh"
    else:
        LANG[_qid] = "en"

YEAR = 2026


def local_dt(s):
    md, hm = s.split()
    m, d = map(int, md.split("-"))
    h, mi = map(int, hm.split(":"))
    if m == 11 and d == 30:  # window end just past Sunday
        return datetime(YEAR, 11, 30, h, mi)
    return datetime(YEAR, m, d, h, mi)


class FacetMap(dict):
    def __missing__(self, key):
        return False


def rule_names(expr):
    return set(re.findall(r"[A-Za-z_]+", expr)) - {"and", "or", "not", "True", "False"}


def holds(expr, facets):
    env = FacetMap({f: True for f in facets})
    return bool(eval(expr, {"__builtins__": {}}, env))


def text_of(a):
    return " ".join([a["title"], a["description"], a["type"], " ".join(a["tags"]),
                     a["locationName"]]).lower()


def main():
    # --- activities -------------------------------------------------------
    keys = [t[0] for t in A]
    assert len(keys) == len(set(keys)), "duplicate activity keys"
    order = list(range(len(A)))
    random.Random(20261129).shuffle(order)  # ids do not reveal groups
    acts, facets_by_id, key_to_id, start_local = [], {}, {}, {}
    lo, hi = datetime(YEAR, 11, 23, 0, 0), datetime(YEAR, 11, 29, 23, 0)
    jitter = random.Random(7)
    for n, i in enumerate(order, 1):
        key, title, desc, typ, tags, when, place, cur, mx, facets = A[i]
        aid = "un-%03d" % n
        fs = set(facets.split())
        bad = fs - FACETS
        assert not bad, (key, bad)
        dt = local_dt(when)
        assert lo <= dt <= hi, (key, when)
        is_night = dt.hour >= 21 or dt.hour < 5
        assert is_night == ("night" in fs), (key, "night facet vs start time")
        assert 0 <= cur <= mx, key
        loc, lat, lng = PLACES[place]
        lat = round(lat + jitter.uniform(-0.002, 0.002), 4)
        lng = round(lng + jitter.uniform(-0.002, 0.002), 4)
        utc = dt - timedelta(hours=8)
        acts.append({
            "id": aid,
            "title": title,
            "description": desc,
            "type": typ,
            "tags": tags,
            "startAt": utc.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "locationName": loc,
            "location": {"lat": lat, "lng": lng},
            "status": "active",
            "currentParticipants": cur,
            "maxParticipants": mx,
        })
        facets_by_id[aid] = fs
        key_to_id[key] = aid
        start_local[aid] = dt
    acts.sort(key=lambda a: a["id"])

    # --- queries ----------------------------------------------------------
    queries = []

    def add(qid, q, kind, rel):
        rel = dict(sorted(rel.items()))
        queries.append({"id": qid, "query": q, "kind": kind, "split": "holdout",
                        "relevant": rel})

    for qid, q, full, part in INTENT:
        for e in (full, part):
            assert rule_names(e) <= FACETS, (qid, rule_names(e) - FACETS)
        rel = {}
        for a in acts:
            fs = facets_by_id[a["id"]]
            if holds(full, fs):
                rel[a["id"]] = 2
            elif holds(part, fs):
                rel[a["id"]] = 1
        add(qid, q, "intent", rel)

    for qid, q, term in LEXICAL:
        rel = {a["id"]: 2 for a in acts if term.lower() in text_of(a)}
        add(qid, q, "lexical", rel)

    for qid, q, need, ws, we in TIME_VIBE:
        assert rule_names(need) <= FACETS, qid
        w0, w1 = local_dt(ws), local_dt(we)
        rel = {}
        for a in acts:
            if holds(need, facets_by_id[a["id"]]):
                rel[a["id"]] = 2 if w0 <= start_local[a["id"]] < w1 else 1
        add(qid, q, "time_vibe", rel)

    queries.sort(key=lambda x: x["id"])
    byq = {x["id"]: x for x in queries}

    # --- self checks ------------------------------------------------------
    for x in queries:
        n2 = sum(1 for g in x["relevant"].values() if g == 2)
        assert n2 >= 3, (x["id"], n2)
    for qid, key, word in TRAPS:
        aid = key_to_id[key]
        a = next(a for a in acts if a["id"] == aid)
        assert word.lower() in byq[qid]["query"].lower(), (qid, word)
        assert word.lower() in text_of(a), (qid, key, word)
        assert aid not in byq[qid]["relevant"], (qid, key, "decoy is graded")

    with open(os.path.join(HERE, "activities.jsonl"), "w", encoding="utf-8") as f:
        for a in acts:
            f.write(json.dumps(a, ensure_ascii=False) + "\n")
    with open(os.path.join(HERE, "queries.jsonl"), "w", encoding="utf-8") as f:
        for x in queries:
            f.write(json.dumps(x, ensure_ascii=False) + "\n")
    print("activities: %d, queries: %d, trap pairs: %d" % (len(acts), len(queries), len(TRAPS)))


if __name__ == "__main__":
    main()
