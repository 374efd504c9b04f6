"""Builds the intent dev set: activities.jsonl and queries.jsonl (graded), deterministic.

Every activity carries hand-assigned intent labels (what a person would come to it for); every
query names the labels that satisfy it fully (grade 2) or partly (grade 1), and optionally a
time (weekday set, part of day) that a time-and-vibe query asks for: then only activities at
that time keep grade 2, the rest drop to 1. Kinds:
  intent     fuzzy intent, no word shared with the answers' titles or tags
  lexical    an exact term that names the activity
  time_vibe  a time and a vibe ("周五晚上热闹的地方")
Split: every third query is `test` (held out from tuning), the rest `dev`.
Reference now: Sunday 2026-11-22 12:00 Asia/Shanghai; activities fall in the next 14 days.
Run: python3 benches/intent/build.py
"""
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

SH = timezone(timedelta(hours=8))
MONDAY = datetime(2026, 11, 23, tzinfo=SH)
HERE = Path(__file__).parent

# id, title, type, tags, description, max participants, weekday (0 = Mon), hour, labels
A = [
    ("读书", "雨天读书角", "读书会", ["读书", "独处"], "窗外下雨，屋里各看各的书，全程不用说话，可以窝在懒人沙发上放空。", 6, 2, 19, ["quiet", "decompress", "solo_ok"]),
    ("冥想", "午间正念冥想", "冥想", ["冥想", "呼吸"], "老师带着做二十分钟呼吸练习和身体扫描，让脑子停一停。", 12, 0, 12, ["quiet", "decompress"]),
    ("颂钵", "颂钵声疗", "疗愈", ["颂钵", "声音"], "躺在瑜伽垫上听颂钵的泛音，什么都不用想，很多人会睡着。", 10, 4, 20, ["quiet", "decompress", "solo_ok"]),
    ("油画棒", "油画棒涂鸦夜", "手作", ["画画", "零基础"], "一人一盒油画棒，照着一张风景照随便涂，不评价画得好坏。", 8, 3, 19, ["quiet", "decompress", "creative", "solo_ok"]),
    ("陶艺", "陶艺拉坯", "手作", ["陶艺", "手工"], "在转盘上捏一只杯子，双手沾满泥，两小时专注在指尖。", 8, 5, 14, ["quiet", "creative", "decompress"]),
    ("插花", "周末插花小课", "手作", ["插花", "花艺"], "花艺师带六种当季花材，每人完成一束带回家。", 6, 6, 15, ["quiet", "creative"]),
    ("书法", "书法静心课", "文化", ["书法", "毛笔"], "从握笔开始练楷书，墨香里慢慢写，写完心也静了。", 10, 1, 19, ["quiet", "decompress", "learn"]),
    ("茶", "午后品茶会", "茶会", ["茶", "品鉴"], "茶艺师冲泡四款岩茶，边喝边聊茶山的故事，节奏很慢。", 8, 6, 15, ["quiet", "tasting"]),
    ("冲浪", "室内冲浪初体验", "运动", ["冲浪", "浪池"], "恒温浪池里教练扶着你站上板，摔进水里也不疼。", 8, 5, 15, ["water", "sport", "thrill"]),
    ("桨板", "湖上桨板", "户外", ["桨板", "SUP"], "站在板上划过平静的湖面，教练先在岸上讲动作，可能会落水。", 12, 6, 9, ["water", "outdoor", "sport"]),
    ("游泳", "成人游泳速成", "运动", ["游泳", "蛙泳"], "四节课学会蛙泳换气，小班教学，泳池恒温。", 6, 1, 20, ["water", "sport", "learn"]),
    ("漂流", "峡谷漂流一日", "户外", ["漂流", "峡谷"], "坐皮筏顺着峡谷冲下激流，全身湿透，尖叫不断。", 30, 5, 9, ["water", "outdoor", "thrill", "group_fun"]),
    ("潜水", "浮潜体验课", "运动", ["浮潜", "潜水"], "先在泳池练呼吸管，再下深水池看人工珊瑚。", 6, 6, 14, ["water", "sport", "learn"]),
    ("夜跑", "江边夜跑", "运动", ["跑步", "夜跑"], "沿江慢跑五公里，配速七分，跑完一起拉伸。", 30, 1, 19, ["sport", "sweat"]),
    ("飞盘", "草地飞盘局", "运动", ["飞盘", "团队"], "极限飞盘新手局，分队对抗，跑到满头大汗。", 20, 5, 16, ["sport", "sweat", "group_fun", "outdoor"]),
    ("攀岩", "抱石攀岩夜", "运动", ["攀岩", "抱石"], "室内岩馆，教练带你爬第一条线，手臂会酸。", 10, 2, 19, ["sport", "sweat", "thrill"]),
    ("羽毛球", "羽毛球双打", "运动", ["羽毛球", "双打"], "两小时场地轮换双打，中等水平，球自带。", 12, 3, 20, ["sport", "sweat"]),
    ("拳击", "搏击燃脂课", "运动", ["搏击", "燃脂"], "打沙袋、跳绳、核心训练，一小时消耗七百大卡。", 15, 0, 19, ["sport", "sweat", "release"]),
    ("徒步", "山野徒步", "户外", ["徒步", "爬山"], "十五公里山路，穿过竹林和茶园，需要一定体力。", 25, 5, 8, ["outdoor", "sport", "nature", "sweat"]),
    ("骑行", "滨江骑行", "户外", ["骑行", "单车"], "沿江骑二十公里，途中拍照休息，共享单车也行。", 20, 6, 9, ["outdoor", "sport", "nature"]),
    ("露营", "草坪露营野餐", "户外", ["露营", "野餐"], "铺开野餐垫晒太阳，带点零食，躺着看云。", 30, 6, 11, ["outdoor", "nature", "decompress", "social"]),
    ("观鸟", "湿地观鸟", "户外", ["观鸟", "望远镜"], "带望远镜在湿地找白鹭和翠鸟，全程要小声。", 12, 5, 7, ["outdoor", "nature", "quiet"]),
    ("蹦迪", "电子乐派对", "派对", ["电子乐", "DJ"], "三位DJ轮番打碟，灯光震撼，跳到凌晨。", 300, 4, 22, ["loud", "release", "nightlife", "group_fun"]),
    ("Livehouse", "独立乐队Livehouse", "音乐", ["摇滚", "现场"], "三支乐队轮番上台，前排pogo，嗓子喊哑。", 200, 5, 20, ["loud", "release", "music", "nightlife"]),
    ("脱口秀", "脱口秀开放麦", "演出", ["脱口秀", "喜剧"], "新人演员试段子，笑声一阵接一阵，可以点一杯边喝边看。", 80, 4, 20, ["loud", "laugh", "nightlife"]),
    ("KTV", "K歌包厢局", "娱乐", ["唱歌", "K歌"], "包厢欢唱四小时，麦霸和听众都欢迎，果盘管够。", 10, 5, 21, ["loud", "release", "group_fun", "nightlife", "music"]),
    ("大排档", "夜宵大排档", "美食", ["烧烤", "啤酒"], "撸串喝啤酒，划拳聊天，一桌坐满十几个人。", 16, 4, 21, ["loud", "food", "social", "nightlife", "group_fun"]),
    ("精酿", "精酿酒吧之夜", "品酒", ["精酿", "酒吧"], "十款精酿轮番上桌，人挤人，认识新朋友很容易。", 40, 4, 20, ["loud", "tasting", "social", "nightlife", "tipsy"]),
    ("爵士", "爵士小酒馆", "音乐", ["爵士", "鸡尾酒"], "现场爵士三重奏，灯光昏黄，一杯鸡尾酒听到微醺。", 30, 5, 21, ["music", "tipsy", "date", "nightlife"]),
    ("红酒", "葡萄酒品鉴入门", "品酒", ["葡萄酒", "品鉴"], "侍酒师讲解六款葡萄酒，学会看闻品，配小食。", 12, 3, 19, ["tasting", "tipsy", "learn"]),
    ("威士忌", "威士忌小酌课", "品酒", ["威士忌", "小酌"], "四款单一麦芽对比品饮，讲产区和桶型。", 8, 4, 20, ["tasting", "tipsy", "learn"]),
    ("火锅", "深夜火锅局", "美食", ["火锅", "麻辣"], "麻辣锅底配冰啤，一直涮到打烊。", 8, 5, 22, ["food", "spicy", "social", "nightlife"]),
    ("川菜", "川菜烹饪课", "美食", ["川菜", "做饭"], "大厨示范麻婆豆腐和回锅肉，自己动手做完一起吃。", 10, 6, 11, ["food", "spicy", "learn", "cook"]),
    ("烘焙", "周末烘焙课", "美食", ["烘焙", "蛋糕"], "从打发奶油开始做一只戚风蛋糕，烤箱一人一台。", 8, 5, 14, ["food", "learn", "cook", "creative"]),
    ("早午餐", "花园早午餐", "美食", ["早午餐", "咖啡"], "在花园餐厅吃班尼迪克蛋，随便聊聊，慢悠悠的周末上午。", 8, 6, 10, ["food", "social", "decompress"]),
    ("咖啡", "手冲咖啡练习", "咖啡", ["手冲", "咖啡豆"], "一人一套器具专注练手冲，不用和别人搭话，老师逐个指导。", 6, 5, 10, ["quiet", "learn", "solo_ok", "tasting"]),
    ("狼人杀", "狼人杀12人局", "桌游", ["狼人杀", "推理"], "标准十二人局，发言激烈，法官带节奏。", 12, 4, 19, ["brain", "social", "loud", "group_fun"]),
    ("剧本杀", "悬疑剧本杀", "剧本杀", ["剧本杀", "悬疑"], "六人悬疑本，层层反转，需要认真盘逻辑。", 6, 5, 14, ["brain", "immersive", "group_fun"]),
    ("密室", "沉浸式密室", "密室", ["密室", "解谜"], "九十分钟解开机关逃出古宅，有惊吓元素。", 6, 5, 19, ["brain", "thrill", "immersive", "group_fun"]),
    ("围棋", "围棋手谈", "棋类", ["围棋", "对弈"], "业余棋友对弈，有段位老师复盘，安静下棋。", 10, 6, 14, ["brain", "quiet"]),
    ("桌游", "轻策略桌游小局", "桌游", ["桌游", "卡坦岛"], "卡坦岛和璀璨宝石，规则现场教，四个人慢慢玩。", 4, 6, 14, ["brain", "small_group", "social"]),
    ("数独", "解谜数独夜", "棋类", ["数独", "解谜"], "限时解题比赛，从入门到地狱难度，适合喜欢动脑的人。", 20, 2, 20, ["brain", "quiet"]),
    ("英语角", "英语角交友", "语言交换", ["英语", "口语"], "中外朋友分组聊天，话题轻松，水平不限。", 30, 3, 19, ["social", "learn", "language"]),
    ("日语", "日语会话练习", "语言交换", ["日语", "会话"], "日语母语者带读，分组练习会话，初级到中级。", 15, 6, 14, ["learn", "language", "social"]),
    ("相亲", "单身交友破冰局", "交友", ["单身", "交友"], "二十位单身青年破冰游戏、一对一轮换聊天。", 20, 5, 15, ["date", "social", "meet_new"]),
    ("城市漫步", "老街城市漫步", "文化", ["漫步", "建筑"], "跟着建筑师走老街，听每栋房子的故事，走走停停。", 15, 6, 15, ["culture", "outdoor", "decompress"]),
    ("展览", "当代艺术看展", "展览", ["展览", "艺术"], "策展人导览一场当代艺术展，看完在咖啡厅聊感受。", 15, 5, 15, ["culture", "art", "quiet"]),
    ("电影", "文艺片放映会", "电影", ["电影", "放映"], "放一部经典文艺片，映后自由讨论。", 30, 3, 19, ["culture", "art"]),
    ("诗歌", "诗歌朗读会", "文化", ["诗歌", "朗读"], "每人带一首诗读给大家听，烛光下很安静。", 15, 2, 20, ["culture", "art", "quiet"]),
    ("话剧", "小剧场话剧", "演出", ["话剧", "剧场"], "八十人的小剧场，演员就在你面前一米。", 80, 5, 19, ["culture", "art", "immersive"]),
    ("摄影", "扫街摄影", "摄影", ["摄影", "扫街"], "摄影师讲构图和光影，手机也能拍，边走边拍。", 12, 6, 15, ["creative", "outdoor", "learn"]),
    ("亲子科学", "亲子科学实验", "亲子", ["亲子", "科学"], "带孩子做火山喷发和彩虹实验，适合六到十岁。", 20, 5, 10, ["kids", "learn"]),
    ("亲子自然", "亲子自然观察", "亲子", ["亲子", "昆虫"], "在公园里找昆虫认植物，自然老师讲解。", 20, 6, 9, ["kids", "outdoor", "nature"]),
    ("绘本", "绘本故事会", "亲子", ["绘本", "故事"], "志愿者给三到六岁小朋友讲绘本，家长陪同。", 20, 6, 10, ["kids", "quiet"]),
    ("撸猫", "猫咖撸猫下午", "宠物", ["猫咖", "猫"], "二十只猫在店里走来走去，点杯饮料就能摸猫。", 15, 5, 15, ["pets", "decompress", "solo_ok"]),
    ("遛狗", "狗狗公园社交", "宠物", ["狗", "遛狗"], "带自家狗狗来草坪跑，顺便认识其他铲屎官。", 30, 6, 9, ["pets", "social", "outdoor"]),
    ("志愿", "流浪动物志愿者", "公益", ["志愿者", "动物救助"], "帮救助站清理笼舍、给猫狗喂食，需要体力。", 15, 5, 9, ["charity", "pets"]),
    ("AI", "AI办公实战", "沙龙", ["AI", "效率"], "演示用AI写周报做表格，带电脑现场实操。", 60, 3, 19, ["learn", "career", "tech"]),
    ("创业", "创业者早餐会", "沙龙", ["创业", "融资"], "聊融资和增长，每人三分钟自我介绍，认识同行。", 40, 1, 8, ["career", "social", "meet_new"]),
    ("职场", "职场沟通工作坊", "沙龙", ["职场", "沟通"], "用角色扮演练习向上汇报和拒绝同事。", 20, 2, 19, ["career", "learn"]),
    ("编程", "少儿编程体验", "亲子", ["编程", "少儿"], "孩子用积木块编程做小游戏，家长可旁听。", 12, 5, 14, ["kids", "learn", "tech"]),
    ("瑜伽", "晨间流瑜伽", "运动", ["瑜伽", "拉伸"], "一小时流瑜伽，伸展僵硬的肩颈，初学者友好。", 15, 6, 8, ["sport", "decompress", "quiet"]),
    ("舞蹈", "街舞入门", "舞蹈", ["街舞", "Hiphop"], "跟着节奏学一段街舞，镜子前跳到出汗。", 20, 2, 20, ["sport", "sweat", "music", "release"]),
    ("合唱", "业余合唱团排练", "音乐", ["合唱", "唱歌"], "分声部练一首合唱曲，不识谱也可以跟唱。", 40, 1, 19, ["music", "social", "group_fun"]),
    ("尤克里里", "尤克里里弹唱", "音乐", ["尤克里里", "弹唱"], "两小时学会四个和弦，弹唱一首简单的歌。", 8, 6, 15, ["music", "learn", "creative"]),
    ("夜市", "周末夜市闲逛", "美食", ["夜市", "小吃"], "两百个摊位，小吃、手作、旧货，人声鼎沸。", 500, 5, 19, ["loud", "food", "nightlife", "group_fun"]),
    ("灯光秀", "江边灯光秀", "观光", ["灯光秀", "夜景"], "两岸建筑灯光同步变换，拍夜景的好时机。", 500, 4, 20, ["nightlife", "culture", "date"]),
    ("天文", "郊外观星", "户外", ["观星", "天文"], "远离城市光污染，用天文望远镜看土星环，晚上会冷。", 20, 5, 21, ["outdoor", "nature", "quiet", "date"]),
    ("按摩", "肩颈放松工作坊", "健康", ["按摩", "肩颈"], "理疗师教几个自我按摩手法，缓解久坐的僵硬。", 12, 2, 19, ["decompress", "learn", "health"]),
    ("温泉", "温泉泡汤日", "休闲", ["温泉", "泡汤"], "室外温泉池泡一下午，出来裹着浴袍喝姜茶。", 30, 6, 13, ["water", "decompress"]),
]

# id, query, kind, grade-2 labels, grade-1 labels, time (weekdays, hours range) or None
Q = [
    ("q01", "压力大想发呆", "intent", ["decompress"], ["quiet"], None),
    ("q02", "玩水", "intent", ["water"], [], None),
    ("q03", "不想说话但想有人陪着", "intent", ["solo_ok"], ["quiet"], None),
    ("q04", "想出一身汗", "intent", ["sweat"], ["sport"], None),
    ("q05", "带娃去哪儿", "intent", ["kids"], [], None),
    ("q06", "想认识新朋友", "intent", ["meet_new", "social"], [], None),
    ("q07", "动动脑子", "intent", ["brain"], [], None),
    ("q08", "想喝到微醺", "intent", ["tipsy"], ["tasting"], None),
    ("q09", "吃点辣的过瘾", "intent", ["spicy"], ["food"], None),
    ("q10", "想尖叫一下找刺激", "intent", ["thrill"], ["release"], None),
    ("q11", "撒欢释放一下", "intent", ["release"], ["loud"], None),
    ("q12", "一个人也能去的", "intent", ["solo_ok"], [], None),
    ("q13", "亲近大自然", "intent", ["nature"], ["outdoor"], None),
    ("q14", "适合约会", "intent", ["date"], [], None),
    ("q15", "学一门手艺", "intent", ["creative"], ["learn"], None),
    ("q16", "毛孩子", "intent", ["pets"], [], None),
    ("q17", "想笑", "intent", ["laugh"], ["loud"], None),
    ("q18", "提升自己的职业能力", "intent", ["career"], ["learn"], None),
    ("q19", "有文化气息的周末", "intent", ["culture", "art"], [], None),
    ("q20", "放松身体缓解疲劳", "intent", ["decompress", "health"], [], None),
    ("q21", "做点好事", "intent", ["charity"], [], None),
    ("q22", "练练口语", "intent", ["language"], [], None),
    ("q23", "下厨", "intent", ["cook"], ["food"], None),
    ("q24", "一群人一起嗨", "intent", ["group_fun"], ["loud"], None),
    ("l01", "狼人杀", "lexical", ["_狼人杀"], ["brain"], None),
    ("l02", "攀岩", "lexical", ["_攀岩"], ["sweat"], None),
    ("l03", "葡萄酒", "lexical", ["_红酒"], ["tasting"], None),
    ("l04", "日语", "lexical", ["_日语"], ["language"], None),
    ("l05", "陶艺", "lexical", ["_陶艺"], ["creative"], None),
    ("l06", "飞盘", "lexical", ["_飞盘"], [], None),
    ("l07", "剧本杀", "lexical", ["_剧本杀"], ["immersive"], None),
    ("l08", "冲浪", "lexical", ["_冲浪"], ["water"], None),
    ("l09", "威士忌", "lexical", ["_威士忌"], ["tipsy"], None),
    ("l10", "颂钵", "lexical", ["_颂钵"], ["decompress"], None),
    ("l11", "尤克里里", "lexical", ["_尤克里里"], ["music"], None),
    ("l12", "围棋", "lexical", ["_围棋"], ["brain"], None),
    ("t01", "周五晚上热闹的地方", "time_vibe", ["loud"], [], ([4], (18, 23))),
    ("t02", "周末下午安静一点的活动", "time_vibe", ["quiet"], [], ([5, 6], (12, 17))),
    ("t03", "工作日晚上运动一下", "time_vibe", ["sport"], [], ([0, 1, 2, 3, 4], (18, 23))),
    ("t04", "周六早上去户外", "time_vibe", ["outdoor"], [], ([5], (5, 11))),
    ("t05", "周日早上放松一下", "time_vibe", ["decompress"], [], ([6], (5, 11))),
    ("t06", "周六晚上喝一杯", "time_vibe", ["tipsy", "nightlife"], [], ([5], (18, 23))),
    ("t07", "周末带孩子上午去玩", "time_vibe", ["kids"], [], ([5, 6], (5, 11))),
    ("t08", "周三晚上学点东西", "time_vibe", ["learn"], [], ([2], (18, 23))),
    ("t09", "周五下班后放松", "time_vibe", ["decompress", "tipsy"], [], ([4], (18, 23))),
]


def start(weekday, hour):
    return (MONDAY + timedelta(days=weekday, hours=hour)).astimezone(timezone.utc)


def main():
    activities = []
    for i, (key, title, kind, tags, desc, cap, wd, hour, labels) in enumerate(A):
        # A second, later copy in the next week keeps weekdays and hours (two per kind).
        for week in (0, 1):
            at = start(wd, hour) + timedelta(weeks=week)
            activities.append({
                "id": f"dev-{i + 1:02d}{'ab'[week]}",
                "title": title,
                "description": desc,
                "type": kind,
                "tags": tags,
                "startAt": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "locationName": "上海黄浦区人民广场",
                "location": {"lat": 31.2304 + 0.002 * i, "lng": 121.4737 - 0.002 * week},
                "status": "active",
                "currentParticipants": 0,
                "maxParticipants": cap,
                "_labels": ["_" + key] + labels,
                "_time": (wd, hour),
            })
    queries = []
    for n, (qid, text, kind, full, part, when) in enumerate(Q):
        graded = {}
        for a in activities:
            labels = set(a["_labels"])
            grade = 2 if labels & set(full) else 1 if labels & set(part) else 0
            if grade and when:
                days, (lo, hi) = when
                wd, hour = a["_time"]
                if not (wd in days and lo <= hour <= hi):
                    grade = 1 if grade == 2 else 0
            if grade:
                graded[a["id"]] = grade
        assert any(g == 2 for g in graded.values()), qid
        queries.append({"id": qid, "query": text, "kind": kind, "split": "test" if n % 3 == 2 else "dev", "relevant": graded})
    with open(HERE / "activities.jsonl", "w") as f:
        for a in activities:
            f.write(json.dumps({k: v for k, v in a.items() if not k.startswith("_")}, ensure_ascii=False) + "\n")
    with open(HERE / "queries.jsonl", "w") as f:
        for q in queries:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")
    print(f"{len(activities)} activities, {len(queries)} queries")


if __name__ == "__main__":
    main()
