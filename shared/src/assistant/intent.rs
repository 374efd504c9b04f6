//! Step 2, intent: which of the five modes a message asks for, decided locally (no model
//! call): word rules first; when none applies, the message's embedding against a few exemplars
//! per mode (the bundled e5 by default); a short follow-up keeps the conversation's mode.

use serde::{Deserialize, Serialize};
use tokio::sync::OnceCell;

use crate::activities::embedder::{EmbeddingService, Input};
use crate::activities::ranking::cosine;

/// The assistant's modes (seed 004 Requirement 13): each has its prompt and its tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Mode {
    /// Small talk; `search_web` when configured.
    Chat,
    /// Activities near the user: `explore_nearby` (and `search_web`).
    Explore,
    /// Starting an activity: the app's draft tools.
    Create,
    /// Finding a partner: the app's partner-intent tools.
    Partner,
    /// The user's own activities: the app's tools.
    Manage,
}

impl Mode {
    pub const ALL: [Mode; 5] = [Mode::Chat, Mode::Explore, Mode::Create, Mode::Partner, Mode::Manage];

    /// Its name on the wire and in `ASSISTANT_TOOLS` (`CHAT`, `EXPLORE`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Chat => "CHAT",
            Mode::Explore => "EXPLORE",
            Mode::Create => "CREATE",
            Mode::Partner => "PARTNER",
            Mode::Manage => "MANAGE",
        }
    }
}

/// What decided the mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum By {
    Rules,
    Exemplars,
    /// A short follow-up without a cue of its own: the previous turn's mode.
    History,
    /// Nothing pointed elsewhere: CHAT.
    Default,
}

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

/// The classifier: rules, then exemplars through `embedding`.
pub struct Classifier {
    embedding: EmbeddingService,
    exemplars: OnceCell<Vec<Vec<f32>>>,
}

impl Classifier {
    pub fn new(embedding: EmbeddingService) -> Self {
        Self { embedding, exemplars: OnceCell::new() }
    }

    /// The mode of `message`, given the conversation's previous mode.
    pub async fn classify(&self, message: &str, previous: Option<Mode>, request_id: &str) -> (Mode, By) {
        if let Some(mode) = by_rules(message) {
            return (mode, By::Rules);
        }
        if let Some(mode) = previous.filter(|_| message.chars().count() <= FOLLOW_UP_CHARS) {
            return (mode, By::History);
        }
        match self.by_exemplars(message, request_id).await {
            Some(mode) => (mode, By::Exemplars),
            None => (Mode::Chat, By::Default),
        }
    }

    /// The mode whose exemplar is nearest `message`, if it beats CHAT's nearest by the margin
    /// and clears the model's similarity floor; `None` without an embedder.
    async fn by_exemplars(&self, message: &str, request_id: &str) -> Option<Mode> {
        const AGENT: &str = "assistant";
        let exemplars = self
            .exemplars
            .get_or_try_init(|| async {
                let texts: Vec<String> = EXEMPLARS.iter().map(|(_, t)| (*t).to_owned()).collect();
                self.embedding.vectors(AGENT, request_id, &texts, Input::Query).await
            })
            .await
            .map_err(|reason| tracing::info!(%reason, "intent by rules only"))
            .ok()?;
        let asked = self.embedding.vectors(AGENT, request_id, &[message.to_owned()], Input::Query).await.ok()?;
        let asked = asked.first()?;
        let best = |mode: Mode| {
            EXEMPLARS
                .iter()
                .zip(exemplars)
                .filter(|((m, _), _)| *m == mode)
                .map(|(_, v)| cosine(asked, v))
                .fold(f32::MIN, f32::max)
        };
        let scores = Mode::ALL.map(|m| (m, best(m)));
        let chat = scores[0].1; // Mode::ALL starts with CHAT
        let (mode, score) = scores.into_iter().max_by(|a, b| a.1.total_cmp(&b.1)).unwrap_or((Mode::Chat, chat));
        let floor = self.embedding.min_similarity().unwrap_or(0.0);
        (mode != Mode::Chat && score >= floor && score - chat >= EXEMPLAR_MARGIN).then_some(mode)
    }
}

/// The first mode whose rule words `message` contains.
pub fn by_rules(message: &str) -> Option<Mode> {
    let lower = message.to_lowercase();
    RULES.iter().find(|(_, words)| words.iter().any(|w| lower.contains(w))).map(|(mode, _)| *mode)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_pick_the_mode_a_message_asks_for() {
        let cases = [
            ("附近有什么好玩的活动？", Some(Mode::Explore)),
            ("recommend something near me tonight", Some(Mode::Explore)),
            ("我想发起一个周六的飞盘局", Some(Mode::Create)),
            ("想找个搭子一起去看展", Some(Mode::Partner)),
            ("帮我取消活动，明天去不了", Some(Mode::Manage)),
            ("取消我发起的活动", Some(Mode::Manage)),
            ("你好呀", None),
        ];
        for (message, mode) in cases {
            assert_eq!(by_rules(message), mode, "{message}");
        }
    }
}
