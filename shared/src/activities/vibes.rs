//! The vibe vocabulary, as data: what a person would come to an activity for (energy, mood, the
//! kind of fun), implied by the words of the activity itself, said in template match reasons;
//! and what an activity helps people leave behind, which is not what it offers (taken out of
//! both indexed texts).
//!
//! The vibes are not indexed: written from the project's own examples, they lifted its own
//! intent set and did not carry over to sets built apart from it (issue 19, `cargo xtask
//! quality`): words such as 安静 match decoys ("安静不了的电音之夜").

/// The rule table: a vibe, and words in the type, tags, title or description that imply it.
pub const VIBE_RULES: &[(&str, &[&str])] = &[
    (
        "热闹",
        &[
            "派对",
            "聚会",
            "酒吧",
            "啤酒",
            "大排档",
            "蹦迪",
            "音乐节",
            "狂欢",
            "KTV",
            "K歌",
            "剧本杀",
            "狼人杀",
            "桌游",
            "夜市",
            "演唱会",
            "livehouse",
            "嗨",
            "人声鼎沸",
            "热烈",
            "激烈",
            "DJ",
            "打碟",
        ],
    ),
    (
        "安静",
        &[
            "读书",
            "阅读",
            "冥想",
            "白噪音",
            "茶",
            "书法",
            "手工",
            "瑜伽",
            "发呆",
            "画画",
            "图书馆",
            "插花",
            "陶艺",
            "安静",
            "静谧",
            "放空",
            "不用说话",
            "小声",
            "慢慢",
            "专注",
            "静心",
        ],
    ),
    (
        "放松减压",
        &[
            "放空",
            "发呆",
            "冥想",
            "减压",
            "疗愈",
            "治愈",
            "按摩",
            "温泉",
            "泡汤",
            "白噪音",
            "颂钵",
            "呼吸",
            "睡着",
            "晒太阳",
            "慢节奏",
            "慢悠悠",
            "放松",
            "释放压力",
            "撸猫",
            "静心",
            "拉伸",
        ],
    ),
    ("商务", &["商务", "创业", "融资", "路演", "行业", "峰会", "职场", "投资", "论坛", "人脉", "对接"]),
    (
        "运动",
        &[
            "跑步",
            "徒步",
            "骑行",
            "羽毛球",
            "篮球",
            "足球",
            "健身",
            "攀岩",
            "冲浪",
            "游泳",
            "滑板",
            "飞盘",
            "登山",
            "网球",
            "搏击",
            "拳击",
            "燃脂",
            "瑜伽",
            "街舞",
            "桨板",
            "浮潜",
        ],
    ),
    (
        "出汗燃脂",
        &[
            "跑步",
            "夜跑",
            "健身",
            "燃脂",
            "搏击",
            "拳击",
            "飞盘",
            "攀岩",
            "羽毛球",
            "篮球",
            "足球",
            "街舞",
            "跳绳",
            "大汗",
            "出汗",
            "体力",
            "大卡",
        ],
    ),
    (
        "玩水",
        &["冲浪", "游泳", "泳池", "浪池", "桨板", "皮划艇", "漂流", "潜水", "浮潜", "水上", "戏水", "落水", "温泉"],
    ),
    (
        "刺激",
        &["刺激", "激流", "尖叫", "惊吓", "挑战", "极限", "过山车", "蹦极", "攀岩", "冲浪", "漂流", "密室", "鬼屋"],
    ),
    (
        "户外",
        &["露营", "徒步", "野餐", "登山", "公园", "海边", "户外", "骑行", "湿地", "湖", "山", "草坪", "草地", "郊"],
    ),
    ("亲近自然", &["自然", "森林", "竹林", "茶园", "湿地", "观鸟", "观星", "昆虫", "植物", "爬山", "露营", "湖"]),
    ("文艺", &["展览", "画展", "电影", "话剧", "音乐会", "摄影", "诗歌", "艺术", "文艺", "剧场", "建筑", "策展"]),
    ("音乐", &["音乐", "乐队", "爵士", "唱歌", "K歌", "合唱", "弹唱", "吉他", "尤克里里", "DJ", "livehouse", "电子乐"]),
    ("动脑", &["推理", "解谜", "逻辑", "围棋", "象棋", "数独", "策略", "密室", "剧本杀", "狼人杀", "桌游", "烧脑"]),
    ("搞笑", &["脱口秀", "喜剧", "相声", "笑声", "段子", "爆笑"]),
    ("美食", &["美食", "火锅", "烧烤", "大排档", "品鉴", "咖啡", "烘焙", "料理", "辣", "小龙虾", "小吃", "早午餐"]),
    ("辣", &["辣", "川菜", "火锅", "麻辣", "湘菜", "小龙虾"]),
    ("下厨", &["做饭", "烹饪", "烘焙", "料理", "厨艺", "大厨", "蛋糕"]),
    ("微醺", &["酒", "精酿", "鸡尾酒", "威士忌", "葡萄酒", "小酌", "微醺", "品酒", "清吧"]),
    ("手作创作", &["手作", "手工", "陶艺", "插花", "画画", "油画", "绘画", "编织", "木工", "烘焙", "摄影", "弹唱"]),
    ("学习成长", &["课", "教学", "学会", "入门", "讲解", "练习", "工作坊", "分享", "指导", "实操", "速成"]),
    ("职场", &["职场", "工作", "办公", "效率", "汇报", "沟通", "创业", "融资", "产品经理", "AI"]),
    ("语言交流", &["英语", "日语", "口语", "会话", "语言交换", "外语", "法语", "韩语"]),
    ("亲子", &["亲子", "孩子", "儿童", "宝宝", "家庭", "小朋友", "少儿", "绘本"]),
    ("萌宠", &["猫", "狗", "宠物", "铲屎", "萌宠", "动物"]),
    ("公益", &["志愿", "公益", "救助", "捐赠", "义卖", "环保"]),
    ("约会", &["约会", "情侣", "浪漫", "烛光", "夜景", "微醺", "观星", "单身"]),
    ("交友", &["交友", "相亲", "破冰", "新朋友", "单身", "认识", "社交", "人脉", "同好"]),
    ("夜生活", &["夜宵", "深夜", "凌晨", "酒吧", "夜店", "蹦迪", "夜市", "小酒馆", "livehouse", "灯光秀", "夜景"]),
];

/// Verbs of leaving something behind: their object is what an activity moves people away from.
pub const LEAVING: &[&str] = &["突破", "克服", "告别", "摆脱", "战胜", "远离", "改掉", "治好", "戒掉"];

/// Where such an object ends: its clause or noun phrase (`的`) ends, or the line does.
fn ends_object(c: char) -> bool {
    matches!(c, '的' | '，' | '。' | '、' | '；' | '！' | '？' | ',' | '.' | ';' | '!' | '?') || c.is_whitespace()
}

/// `text` without the objects of [`LEAVING`] verbs (up to [`ends_object`], at most 12
/// characters); the verbs stay. What an activity helps people leave behind is not what it
/// offers: "适合想突破社恐的人" (an improv class) becomes "适合想突破的人", so it no longer
/// matches "适合社恐的活动" on 社恐, in either channel; "远离城市喧嚣" no longer matches 喧嚣.
pub fn without_left_behind(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some((at, verb)) = LEAVING.iter().filter_map(|v| rest.find(v).map(|i| (i, *v))).min() {
        let after = &rest[at + verb.len()..];
        let end = match after.char_indices().take(12).find(|(_, c)| ends_object(*c)) {
            Some((i, _)) => i,
            None => after.char_indices().nth(12).map_or(after.len(), |(i, _)| i),
        };
        out.push_str(&rest[..at + verb.len()]);
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// The vibes an activity with `words` (its type, tags, title and description) and `places`
/// implies (rule table order), then its scale: 小局 (≤ 6 places), 大型 (≥ 30). With no rule
/// matched, 轻松.
pub fn implied_vibe(words: &str, places: u32) -> String {
    let mut vibes = matching(words, VIBE_RULES);
    if vibes.is_empty() {
        vibes.push("轻松");
    }
    match places {
        0..=6 => vibes.push("小局"),
        30.. => vibes.push("大型"),
        _ => {}
    }
    vibes.join("、")
}

/// The names of `rules` whose words occur in `words`.
fn matching(words: &str, rules: &[(&'static str, &[&str])]) -> Vec<&'static str> {
    let text = words.to_lowercase();
    rules.iter().filter(|(_, words)| words.iter().any(|w| text.contains(&w.to_lowercase()))).map(|(n, _)| *n).collect()
}
