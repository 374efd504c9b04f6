//! Step 2, intent: which of the five modes a message asks for, decided locally, without a model
//! call: the mode a client passed for the message (a button in the app), else the words head
//! when it is sure, else both heads pooled: the words head's probabilities averaged with the
//! meaning head's over the message's bundled-e5 vector ([`head`]).
//! Both heads read the conversation's previous mode, so a short follow-up keeps it and a clear
//! change of topic leaves it. An acting mode (CREATE, PARTNER, MANAGE) needs evidence: the
//! heads were fitted with small talk and near misses labelled CHAT. `cargo xtask quality
//! --intent` measures the router on the sealed set `benches/modes/`.

pub mod head;

use serde::{Deserialize, Serialize};

use crate::activities::embedder::{EmbeddingService, Input};
use head::Heads;

/// The assistant's modes (seed 004 Requirement 13): each has its prompt and its tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
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

    /// Its place in [`Mode::ALL`] (the heads' rows).
    pub fn index(self) -> usize {
        self as usize
    }

    /// A mode whose tools act for the user (drafts, partner intents, cancellations).
    pub fn acts(self) -> bool {
        matches!(self, Mode::Create | Mode::Partner | Mode::Manage)
    }
}

/// What decided the mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum By {
    /// The client passed the mode with the message.
    Client,
    /// The words head, sure of it (or alone, without the bundled model).
    Classifier,
    /// The meaning head, over the message's bundled-e5 vector, pooled with the words head.
    Embedding,
    /// The reply answers an approval: the mode of the reply that asked.
    Approval,
}

/// The words head decides alone from this probability on; below it, both heads pooled do.
pub const SURE: f32 = 0.8;

/// The router: the shipped heads (read at the first message, not at the function's start), and
/// the embedder for the meaning head.
pub struct Classifier {
    embedding: EmbeddingService,
}

impl Classifier {
    pub fn new(embedding: EmbeddingService) -> Self {
        Self { embedding }
    }

    /// The mode of `message` after the conversation's `previous` mode, unless the client
    /// `asked` for one. The meaning head runs only on the bundled model its weights belong to;
    /// when it cannot, the words head's best guess stands.
    pub async fn classify(
        &self,
        message: &str,
        previous: Option<Mode>,
        asked: Option<Mode>,
        request_id: &str,
    ) -> (Mode, By) {
        if let Some(mode) = asked {
            return (mode, By::Client);
        }
        let heads = Heads::shipped();
        let words = heads.words(message, previous);
        let (guess, sure) = best(words);
        // The meaning head reads the vectors of the embedder it was fitted on, and no other.
        let meaning = self.embedding.vector_name().as_deref() == Some(heads.vector.as_str());
        if sure >= SURE || !meaning {
            return (guess, By::Classifier);
        }
        let texts = [message.to_owned()];
        match self.embedding.vectors("assistant", request_id, &texts, Input::Query).await {
            Ok(vectors) => (best(pooled(words, heads.meaning(message, previous, &vectors[0]))).0, By::Embedding),
            Err(reason) => {
                tracing::info!(request_id, %reason, "intent by the words head alone");
                (guess, By::Classifier)
            }
        }
    }
}

/// The mean of both heads' probabilities: where the words head is unsure, its evidence still
/// counts beside the meaning head's (a wish's "想…" in "压力大想发呆", whose vector sits near
/// the feeling's).
pub fn pooled(words: [f32; 5], meaning: [f32; 5]) -> [f32; 5] {
    std::array::from_fn(|k| (words[k] + meaning[k]) / 2.0)
}

/// The most probable of `probabilities` (in [`Mode::ALL`] order) and its probability; CHAT on
/// a tie, as it comes first.
pub fn best(probabilities: [f32; 5]) -> (Mode, f32) {
    let k = (0..5).fold(0, |best, k| if probabilities[k] > probabilities[best] { k } else { best });
    (Mode::ALL[k], probabilities[k])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_words_head_is_sure_of_plain_asks_and_small_talk() {
        let heads = Heads::shipped();
        let cases = [
            ("附近有什么好玩的活动？", Mode::Explore),
            ("我想发起一个周六的飞盘局", Mode::Create),
            ("想找个搭子一起去看展", Mode::Partner),
            ("帮我取消活动，明天去不了", Mode::Manage),
            ("你好呀", Mode::Chat),
        ];
        for (message, mode) in cases {
            let p = heads.words(message, None);
            assert_eq!(best(p).0, mode, "{message}: {p:?}");
            assert!(best(p).1 >= SURE, "{message}: sure of it, no embedding needed: {p:?}");
        }
    }

    #[test]
    fn a_modes_index_is_its_place_in_all() {
        assert!(Mode::ALL.iter().enumerate().all(|(i, m)| m.index() == i));
    }

    #[test]
    fn the_words_head_keeps_a_short_follow_ups_mode() {
        let heads = Heads::shipped();
        for previous in [Mode::Explore, Mode::Create, Mode::Manage] {
            assert_eq!(best(heads.words("下午三点的呢", Some(previous))).0, previous);
        }
    }
}
