//! The mode router of main before issue 44 (`shared/src/assistant/intent.rs` at aa90b95), kept
//! unchanged as the baseline the configured router must not lose to: word rules in order, then a
//! short follow-up keeps the previous mode, then the nearest of twelve exemplars by the bundled
//! e5, leaving CHAT only by a margin over CHAT's nearest and above the model's floor.

use shared::activities::embedder::{EmbeddingService, Input};
use shared::activities::ranking::cosine;
use shared::assistant::intent::Mode;

/// Word rules, checked in this order (MANAGE before CREATE: "取消我发起的活动" manages).
const RULES: &[(Mode, &[&str])] = &[
    (
        Mode::Manage,
        &[
            "我的活动",
            "我报名的",
            "我参加的",
            "我发起的",
            "我发布的",
            "取消活动",
            "取消报名",
            "退出活动",
            "不去了",
            "my activities",
            "my events",
            "cancel my",
        ],
    ),
    (
        Mode::Create,
        &[
            "想发起",
            "发起一个",
            "发起活动",
            "组个局",
            "组局",
            "组织一个",
            "办一个",
            "创建活动",
            "发布活动",
            "开个局",
            "攒局",
            "我来组",
            "create an activity",
            "host an event",
            "organize a",
            "organise a",
        ],
    ),
    (
        Mode::Partner,
        &[
            "搭子",
            "找人一起",
            "找个伴",
            "找伙伴",
            "找队友",
            "陪我",
            "有没有人一起",
            "a partner",
            "buddy",
            "someone to join",
        ],
    ),
    (
        Mode::Explore,
        &[
            "附近",
            "周边",
            "推荐",
            "有什么活动",
            "有啥活动",
            "去哪",
            "哪里玩",
            "好玩的",
            "活动吗",
            "找个活动",
            "找点",
            "nearby",
            "near me",
            "recommend",
            "things to do",
            "what's on",
        ],
    ),
];

/// A few messages per mode, embedded once per process.
const EXEMPLARS: &[(Mode, &str)] = &[
    (Mode::Chat, "今天心情不太好，想找人聊聊"),
    (Mode::Chat, "你是谁？能做什么？"),
    (Mode::Chat, "最近有什么新闻"),
    (Mode::Explore, "想找个安静的地方发呆"),
    (Mode::Explore, "这周末有什么适合社恐的活动"),
    (Mode::Explore, "晚上想出去放松一下"),
    (Mode::Create, "我想约几个朋友周六打羽毛球"),
    (Mode::Create, "帮我弄个读书会，十个人左右"),
    (Mode::Partner, "一个人去看展有点无聊，想找个同好"),
    (Mode::Partner, "想找一起跑步的人"),
    (Mode::Manage, "我明天那个活动几点开始来着"),
    (Mode::Manage, "帮我看看我还有哪些活动没去"),
];

/// Messages up to this many characters without a cue keep the previous turn's mode.
const FOLLOW_UP_CHARS: usize = 12;

/// How far the best exemplar must beat CHAT's best to leave CHAT.
const EXEMPLAR_MARGIN: f32 = 0.01;

/// Main's router over `embedding`, its exemplars embedded.
pub struct Router {
    embedding: EmbeddingService,
    exemplars: Vec<Vec<f32>>,
}

impl Router {
    pub async fn new(embedding: EmbeddingService) -> crate::Result<Self> {
        let texts: Vec<String> = EXEMPLARS.iter().map(|(_, t)| (*t).to_owned()).collect();
        let exemplars = embedding.vectors("assistant", "modes-main", &texts, Input::Query).await?;
        Ok(Self { embedding, exemplars })
    }

    /// The mode main gave `message` after `previous`.
    pub async fn classify(&self, message: &str, previous: Option<Mode>) -> Mode {
        if let Some(mode) = by_rules(message) {
            return mode;
        }
        if let Some(mode) = previous.filter(|_| message.chars().count() <= FOLLOW_UP_CHARS) {
            return mode;
        }
        let Ok(asked) = self.embedding.vectors("assistant", "modes-main", &[message.to_owned()], Input::Query).await
        else {
            return Mode::Chat;
        };
        let best = |mode: Mode| {
            EXEMPLARS
                .iter()
                .zip(&self.exemplars)
                .filter(|((m, _), _)| *m == mode)
                .map(|(_, v)| cosine(&asked[0], v))
                .fold(f32::MIN, f32::max)
        };
        let scores = Mode::ALL.map(|m| (m, best(m)));
        let chat = scores[0].1;
        let (mode, score) = scores.into_iter().max_by(|a, b| a.1.total_cmp(&b.1)).unwrap_or((Mode::Chat, chat));
        let floor = self.embedding.min_similarity().unwrap_or(0.0);
        if mode != Mode::Chat && score >= floor && score - chat >= EXEMPLAR_MARGIN { mode } else { Mode::Chat }
    }
}

/// The first mode whose rule words `message` contains.
fn by_rules(message: &str) -> Option<Mode> {
    let lower = message.to_lowercase();
    RULES.iter().find(|(_, words)| words.iter().any(|w| lower.contains(w))).map(|(mode, _)| *mode)
}
