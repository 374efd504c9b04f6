//! Step 5's hook: preferences a user states in a message ("我喜欢安静的", "不要太贵", "I prefer
//! small groups"), found by rules in the user's own words (never the model's), kept in the
//! interest profile that rag-search personalises with.

use crate::activities::interests::Stated;

/// Clause openings that state a dislike (checked first: 不喜欢 contains 喜欢).
const DISLIKES: &[&str] = &[
    "我不喜欢",
    "不喜欢",
    "我不要",
    "不要",
    "别太",
    "我讨厌",
    "讨厌",
    "受不了",
    "i don't like",
    "i do not like",
    "i hate",
    "avoid",
];
/// Clause openings that state a liking.
const LIKES: &[&str] = &[
    "我比较喜欢",
    "我更喜欢",
    "我喜欢",
    "喜欢",
    "我偏爱",
    "偏好",
    "我爱",
    "i like",
    "i love",
    "i prefer",
    "i'd prefer",
];

/// Openings that look like a dislike and are not one.
const NOT_DISLIKES: &[&str] = &["不要紧", "不要忘", "不要客气", "不要担心"];

/// Longest statement kept, in characters.
const MAX_CHARS: usize = 30;

/// The preferences `message` states, one per clause that opens with a cue; a question ("你喜欢
/// 什么？") states nothing.
pub fn extract(message: &str) -> Vec<Stated> {
    let mut found: Vec<Stated> = Vec::new();
    let clauses = message.split(['，', '。', '！', '？', '；', ',', '.', '!', '?', ';', '\n']);
    for clause in clauses.map(str::trim).filter(|c| !c.is_empty()) {
        let lower = clause.to_lowercase();
        let cue = |cues: &[&str]| cues.iter().any(|c| lower.starts_with(c) && lower.len() > c.len());
        if NOT_DISLIKES.iter().any(|n| lower.starts_with(n)) {
            continue;
        }
        let likes = if cue(DISLIKES) {
            false
        } else if cue(LIKES) {
            true
        } else {
            continue;
        };
        let text: String = clause.trim_start_matches('我').chars().take(MAX_CHARS).collect();
        if !found.iter().any(|s| s.text == text) {
            found.push(Stated { text, likes });
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(message: &str) -> Vec<(String, bool)> {
        extract(message).into_iter().map(|s| (s.text, s.likes)).collect()
    }

    #[test]
    fn stated_likes_and_dislikes_are_found_in_the_users_words() {
        assert_eq!(said("我喜欢安静的"), [("喜欢安静的".to_owned(), true)]);
        assert_eq!(said("帮我找个活动，不要太贵"), [("不要太贵".to_owned(), false)]);
        assert_eq!(
            said("我不喜欢人多的地方。我比较喜欢户外"),
            [("不喜欢人多的地方".to_owned(), false), ("比较喜欢户外".to_owned(), true)]
        );
        assert_eq!(
            said("I prefer small groups; I don't like loud bars"),
            [("I prefer small groups".to_owned(), true), ("I don't like loud bars".to_owned(), false)]
        );
        assert!(said("你喜欢什么？").is_empty());
        assert!(said("附近有什么活动").is_empty());
        assert!(said("喜欢").is_empty(), "a cue alone states nothing");
        assert!(said("不要紧，不要忘了带伞").is_empty());
    }
}
