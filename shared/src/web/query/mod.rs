//! A validated, normalised search request: what every provider answers and what the cache
//! key is computed from. Parsing a caller's JSON into a [`Query`] is the only place input is
//! checked; past it, every field is known good.

use chrono::{Datelike, NaiveDate};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::core::error::{Error, Result};

mod body;

/// Longest query, topic or keyword accepted, in characters.
pub const MAX_QUERY_CHARS: usize = 4000;
/// Most entries in `domains` (Perplexity's `search_domain_filter` limit).
pub const MAX_DOMAINS: usize = 20;
/// Most entries in `aspects`.
pub const MAX_ASPECTS: usize = 10;

/// Perplexity models this bundle prices and accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Model {
    #[serde(rename = "sonar")]
    Sonar,
    #[serde(rename = "sonar-pro")]
    SonarPro,
}

impl Model {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sonar => "sonar",
            Self::SonarPro => "sonar-pro",
        }
    }
}

/// How recent sources must be (`search_recency_filter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Recency {
    Hour,
    Day,
    Week,
    Month,
    Year,
}

impl Recency {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Hour => "hour",
            Self::Day => "day",
            Self::Week => "week",
            Self::Month => "month",
            Self::Year => "year",
        }
    }

    /// `self` as a trends `timeframe`: day, week or month, else a 400 naming them.
    fn as_timeframe(self) -> Result<Self> {
        const ALLOWED: [Recency; 3] = [Recency::Day, Recency::Week, Recency::Month];
        if ALLOWED.contains(&self) {
            return Ok(self);
        }
        Err(Error::invalid(
            "unknown_timeframe",
            format!("timeframe {:?} is not one of day, week, month", self.as_str()),
        ))
    }
}

/// Which of seed 000's four methods a request is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "method", rename_all = "camelCase")]
pub enum Kind {
    /// `search(query, options) -> {content, citations, images}`
    Search,
    /// `analyzeCompetitors(keyword, domain?)`
    Competitors { domain: Option<String> },
    /// `getTrends(topic, timeframe)`
    Trends { timeframe: Recency },
    /// `researchTopic(topic, aspects?)`
    Topic { aspects: Vec<String> },
    /// The research node (seed 001): the text is the whole research prompt; the answer is
    /// `{query, results[{title, content, source}], summary}` with about `topic_count` results.
    Research { topic_count: u32 },
}

impl Kind {
    pub fn name(&self) -> &'static str {
        match self {
            Self::Search => "search",
            Self::Competitors { .. } => "competitors",
            Self::Trends { .. } => "trends",
            Self::Topic { .. } => "topic",
            Self::Research { .. } => "research",
        }
    }
}

/// A normalised request. Serialising it gives the canonical text the cache key hashes, so
/// every field that changes the answer is a field here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Query {
    #[serde(flatten)]
    pub kind: Kind,
    /// The query, keyword or topic, trimmed, inner whitespace collapsed.
    pub text: String,
    /// ISO 3166-1 alpha-2 country, upper case.
    pub region: Option<String>,
    pub model: Model,
    pub recency: Option<Recency>,
    /// `search_domain_filter` entries, lower case, sorted; `-` prefix excludes.
    pub domains: Vec<String>,
    /// Only sources published on or after / before this day (never together with `recency`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub published_after: Option<NaiveDate>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub published_before: Option<NaiveDate>,
    /// Who asks (cost attribution); not part of the answer, so not part of the cache key.
    #[serde(skip)]
    pub agent: String,
    /// Labelled mock data instead of a 429 when the agent's budget is spent (`overBudget:
    /// "mock"`); not part of the answer.
    #[serde(skip)]
    pub mock_over_budget: bool,
    /// The article whose sources this search's are added to (`articleId`); not part of the
    /// answer.
    #[serde(skip)]
    pub article_id: Option<String>,
}

impl Query {
    /// A query our own code asks (research, the timeline's search tool): `text` as given, no
    /// filters, the default model, billed to `agent`.
    pub fn plain(kind: Kind, text: String, agent: &str) -> Self {
        Self {
            kind,
            text,
            region: None,
            model: Model::Sonar,
            recency: None,
            domains: Vec::new(),
            published_after: None,
            published_before: None,
            agent: agent.to_owned(),
            mock_over_budget: false,
            article_id: None,
        }
    }

    /// The cache key: `perplexity:search:<sha256 of the canonical request>`.
    pub fn cache_key(&self) -> String {
        let canonical = serde_json::to_vec(self).expect("a query always serialises");
        format!("perplexity:search:{}", hex::encode(Sha256::digest(&canonical)))
    }

    /// Whether the text is Chinese (Han characters, no kana or hangul): seed 000's Chinese
    /// query tuning applies. Japanese and Korean queries are not tuned for Chinese sources.
    pub fn is_chinese(&self) -> bool {
        crate::core::script::language(&self.text) == "zh"
    }

    /// Parses a request body of `kind`: `search` (`{query, region?, model?, recency?,
    /// domains?, agent?}`), `competitors` (`{keyword, domain?, ...}`), `trends` (`{topic,
    /// timeframe?}`; day, week or month, default week), `topic` (`{topic, aspects?, ...}`).
    /// Each is a typed body ([`body`]): an unknown field is a 400 `unknown_field`, a field of
    /// the wrong type or value names its path.
    pub fn from_json(kind: &str, body: &[u8]) -> Result<Self> {
        let value = crate::core::json::json_object(body)?;
        let raw = match kind {
            "search" => body::Search::read(&value)?,
            "competitors" => body::Competitors::read(&value)?,
            "trends" => body::Trends::read(&value)?,
            "topic" => body::Topic::read(&value)?,
            other => return Err(Error::NotFound(format!("no search method {other:?}"))),
        };
        raw.validate()
    }
}

/// Parses a `YYYY-MM-DD` day between 1900 and 2100 (what a search date filter can mean).
fn day(field: &str, raw: &str) -> Result<NaiveDate> {
    NaiveDate::parse_from_str(raw.trim(), "%Y-%m-%d").ok().filter(|d| (1900..=2100).contains(&d.year())).ok_or_else(
        || Error::invalid("invalid_date", format!("{field} {raw:?} must be a day YYYY-MM-DD between 1900 and 2100")),
    )
}

/// Validates one domain filter entry (`example.com`, or `-example.com` to exclude).
fn domain_entry(field: &str, raw: &str) -> Result<String> {
    let entry = raw.trim().to_ascii_lowercase();
    let (sign, host) = entry.strip_prefix('-').map_or(("", entry.as_str()), |h| ("-", h));
    let valid = !host.is_empty()
        && host.len() <= 253
        && host.contains('.')
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
    if valid {
        Ok(format!("{sign}{host}"))
    } else {
        Err(Error::invalid(
            "invalid_domains",
            format!("{field} entry {raw:?} is not a domain name like \"example.com\""),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(kind: &str, body: serde_json::Value) -> Result<Query> {
        Query::from_json(kind, body.to_string().as_bytes())
    }

    #[test]
    fn every_filter_changes_the_cache_key_and_the_agent_does_not() {
        let base = serde_json::json!({"query": "咖啡 市場"});
        let key = |extra: serde_json::Value| {
            let mut body = base.clone();
            body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            q("search", body).unwrap().cache_key()
        };
        let plain = key(serde_json::json!({}));
        assert!(plain.starts_with("perplexity:search:"));
        assert_eq!(plain.len(), "perplexity:search:".len() + 64);
        for extra in [
            serde_json::json!({"region": "TW"}),
            serde_json::json!({"model": "sonar-pro"}),
            serde_json::json!({"recency": "week"}),
            serde_json::json!({"domains": ["example.com"]}),
            serde_json::json!({"publishedAfter": "2026-01-01"}),
            serde_json::json!({"publishedBefore": "2026-01-01"}),
        ] {
            assert_ne!(key(extra.clone()), plain, "{extra} must change the key");
        }
        assert_eq!(key(serde_json::json!({"agent": "strategy"})), plain);
        assert_eq!(key(serde_json::json!({"query": "  咖啡   市場 "})), plain);
        let trends = q("trends", serde_json::json!({"topic": "咖啡 市場"})).unwrap().cache_key();
        assert_ne!(trends, plain, "the method is part of the key");
    }

    #[test]
    fn bad_input_is_named() {
        let cases = [
            ("search", serde_json::json!({}), "missing_query"),
            ("search", serde_json::json!({"query": "   "}), "missing_query"),
            ("search", serde_json::json!({"query": 3}), "invalid_field"),
            ("search", serde_json::json!({"query": "x".repeat(MAX_QUERY_CHARS + 1)}), "query_too_long"),
            ("search", serde_json::json!({"query": "x", "model": "gpt-4"}), "unknown_model"),
            ("search", serde_json::json!({"query": "x", "recency": "decade"}), "unknown_recency"),
            ("search", serde_json::json!({"query": "x", "region": "Taiwan"}), "invalid_region"),
            ("search", serde_json::json!({"query": "x", "domains": ["not a domain"]}), "invalid_domains"),
            ("search", serde_json::json!({"query": "x", "domains": ["a.com", "-b.com"]}), "invalid_domains"),
            ("search", serde_json::json!({"query": "x", "agent": "Robert'); DROP"}), "invalid_agent"),
            ("trends", serde_json::json!({"topic": "x", "timeframe": "year"}), "unknown_timeframe"),
            ("competitors", serde_json::json!({"keyword": ""}), "missing_query"),
            ("search", serde_json::json!({"query": "x", "recencey": "week"}), "unknown_field"),
            ("trends", serde_json::json!({"topic": "x", "recency": "week"}), "unknown_field"),
            ("search", serde_json::json!({"query": "x", "publishedAfter": "01/02/2026"}), "invalid_date"),
            ("search", serde_json::json!({"query": "x", "publishedAfter": "+262143-12-31"}), "invalid_date"),
            ("search", serde_json::json!({"query": "x", "publishedBefore": "1066-10-14"}), "invalid_date"),
            (
                "search",
                serde_json::json!({"query": "x", "publishedAfter": "2026-02-01", "publishedBefore": "2026-01-01"}),
                "invalid_date",
            ),
            (
                "search",
                serde_json::json!({"query": "x", "publishedAfter": "2026-01-01", "recency": "day"}),
                "conflicting_filters",
            ),
            ("trends", serde_json::json!({"topic": "x", "publishedAfter": "2026-01-01"}), "unknown_field"),
        ];
        for (kind, body, code) in cases {
            let err = q(kind, body.clone()).unwrap_err();
            assert_eq!(err.code(), code, "{body}");
            assert_eq!(err.status(), 400);
        }
        // A typed body names the path of what is wrong.
        let err = q("search", serde_json::json!({"query": "x", "domains": ["a.com", 7]})).unwrap_err();
        assert!(err.to_string().starts_with("domains[1]: invalid type: integer"), "{err}");
        let err = q("search", serde_json::json!({"query": "x", "model": "gpt-4"})).unwrap_err();
        assert!(err.to_string().starts_with("model: unknown variant `gpt-4`"), "{err}");
        assert_eq!(Query::from_json("search", b"{not json").unwrap_err().code(), "malformed_json");
        assert_eq!(Query::from_json("search", b"[1]").unwrap_err().code(), "malformed_json");
    }

    #[test]
    fn detects_chinese_queries() {
        assert!(q("search", serde_json::json!({"query": "台灣 咖啡"})).unwrap().is_chinese());
        assert!(q("search", serde_json::json!({"query": "人工智能 趋势"})).unwrap().is_chinese());
        assert!(!q("search", serde_json::json!({"query": "東京 カフェ"})).unwrap().is_chinese());
        assert!(!q("search", serde_json::json!({"query": "coffee market"})).unwrap().is_chinese());
    }
}
