//! What to research (seed 003): a topic and the language of the answer, from the body of
//! `POST /api/research` or a stored session; the languages with progress messages.

use serde::{Deserialize, Serialize};

use crate::core::error::{Error, Result};

/// Languages with progress messages (seed 003's table).
pub const LANGUAGES: [&str; 3] = ["zh", "en", "ja"];

/// Seed 003's progress message for `phase` in `language` (English when unknown).
pub fn progress_message(phase: &str, language: &str) -> &'static str {
    match (phase, language) {
        ("skeleton", "zh") => "正在构建时间线骨架...",
        ("skeleton", "ja") => "タイムラインの骨格を構築中...",
        ("skeleton", _) => "Building timeline skeleton...",
        (_, "zh") => "正在深度补充节点详情...",
        (_, "ja") => "タイムラインの詳細を補充中...",
        _ => "Enriching timeline details...",
    }
}

/// The language of `topic` when the caller names none: ja, zh, else en (the languages with
/// progress messages).
pub fn detect_language(topic: &str) -> &'static str {
    match crate::core::script::language(topic) {
        lang @ ("ja" | "zh") => lang,
        _ => "en",
    }
}

/// What to research.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Proposal {
    pub topic: String,
    pub language: String,
    /// Runs on when nobody reads it (`"background": true`, as OpenAI's background mode; the
    /// backend's runs by default); else it stops after `RESEARCH_ABANDON_AFTER_S` unread.
    /// `None` as sent: the caller decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<bool>,
}

/// The body of `POST /api/research`, as sent.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Body {
    topic: Option<String>,
    language: Option<String>,
    background: Option<bool>,
}

impl Proposal {
    /// Parses `{topic, language?, background?}` (a typed body): `topic` 1-200 characters (else
    /// `missing_topic`), `language` one of [`LANGUAGES`] (else `unknown_language`; absent, the
    /// topic's own, [`detect_language`]); an unknown field is `unknown_field`.
    pub fn from_json(body: &[u8]) -> Result<Self> {
        let body: Body = crate::core::json::typed_body_by(body, |path| match path {
            "language" => "unknown_language",
            "background" => "invalid_background",
            _ => "missing_topic",
        })?;
        let topic = body
            .topic
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty() && t.chars().count() <= 200)
            .ok_or_else(|| Error::invalid("missing_topic", "topic is required: a string of 1 to 200 characters"))?;
        let language = match body.language {
            None => detect_language(&topic).to_owned(),
            Some(l) if LANGUAGES.contains(&l.as_str()) => l,
            Some(other) => {
                return Err(Error::invalid("unknown_language", format!("language {other:?} is not zh, en or ja")));
            }
        };
        Ok(Proposal { topic, language, background: body.background })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_are_detected_from_the_topic() {
        assert_eq!(detect_language("iPhone"), "en");
        assert_eq!(detect_language("人工智能发展史"), "zh");
        assert_eq!(detect_language("スマートフォンの歴史"), "ja");
    }
}
