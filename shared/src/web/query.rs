//! A validated, normalised search request: what every provider answers and what the cache
//! key is computed from. Parsing a caller's JSON into a [`Query`] is the only place input is
//! checked; past it, every field is known good.

use chrono::{Datelike, NaiveDate};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::core::error::{Error, Result};
use crate::core::validate::agent_name;

/// Longest query, topic or keyword accepted, in characters.
pub const MAX_QUERY_CHARS: usize = 4000;
/// Most entries in `domains` (Perplexity's `search_domain_filter` limit).
pub const MAX_DOMAINS: usize = 20;
/// Most entries in `aspects`.
pub const MAX_ASPECTS: usize = 10;
/// Fields every method accepts besides its own.
const COMMON_FIELDS: &[&str] = &["region", "model", "domains", "agent"];

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

    fn parse(text: &str) -> Result<Self> {
        match text {
            "sonar" => Ok(Self::Sonar),
            "sonar-pro" => Ok(Self::SonarPro),
            other => Err(Error::invalid(
                "unknown_model",
                format!("model {other:?} is not supported; use \"sonar\" or \"sonar-pro\""),
            )),
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

    fn parse(field: &str, text: &str, allowed: &[Recency]) -> Result<Self> {
        allowed.iter().copied().find(|r| r.as_str() == text).ok_or_else(|| {
            let names: Vec<_> = allowed.iter().map(|r| r.as_str()).collect();
            Error::invalid(
                if field == "timeframe" { "unknown_timeframe" } else { "unknown_recency" },
                format!("{field} {text:?} is not one of {}", names.join(", ")),
            )
        })
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
    pub fn from_json(kind: &str, body: &[u8]) -> Result<Self> {
        let obj = &crate::core::json::json_object(body)?;
        let field = Fields(obj);
        let own: &[&str] = match kind {
            "search" => &["query", "recency", "publishedAfter", "publishedBefore"],
            "competitors" => &["keyword", "domain", "recency", "publishedAfter", "publishedBefore"],
            "trends" => &["topic", "timeframe"],
            "topic" => &["topic", "aspects", "recency", "publishedAfter", "publishedBefore"],
            other => return Err(Error::NotFound(format!("no search method {other:?}"))),
        };
        let mut known: Vec<&str> = own.iter().chain(COMMON_FIELDS).copied().collect();
        known.sort_unstable();
        crate::core::json::only_known(obj, &known)?;
        let (text_field, kind) = match kind {
            "search" => ("query", Kind::Search),
            "competitors" => (
                "keyword",
                Kind::Competitors { domain: field.string("domain")?.map(|d| domain_entry("domain", &d)).transpose()? },
            ),
            "trends" => (
                "topic",
                Kind::Trends {
                    timeframe: match field.string("timeframe")? {
                        None => Recency::Week,
                        Some(t) => Recency::parse("timeframe", &t, &[Recency::Day, Recency::Week, Recency::Month])?,
                    },
                },
            ),
            _ => ("topic", Kind::Topic { aspects: aspects(&field)? }),
        };
        let text = field
            .string(text_field)?
            .map(|t| t.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                Error::invalid("missing_query", format!("{text_field} is required and must not be empty"))
            })?;
        let chars = text.chars().count();
        if chars > MAX_QUERY_CHARS {
            return Err(Error::invalid(
                "query_too_long",
                format!("{text_field} has {chars} characters; at most {MAX_QUERY_CHARS} are accepted"),
            ));
        }
        let region = field
            .string("region")?
            .map(|r| {
                let r = r.trim().to_ascii_uppercase();
                if r.len() == 2 && r.bytes().all(|b| b.is_ascii_uppercase()) {
                    Ok(r)
                } else {
                    Err(Error::invalid(
                        "invalid_region",
                        format!("region {r:?} must be an ISO 3166-1 alpha-2 code such as \"TW\""),
                    ))
                }
            })
            .transpose()?;
        let model = field.string("model")?.map_or(Ok(Model::Sonar), |m| Model::parse(&m))?;
        let recency = field
            .string("recency")?
            .map(|r| {
                Recency::parse(
                    "recency",
                    &r,
                    &[Recency::Hour, Recency::Day, Recency::Week, Recency::Month, Recency::Year],
                )
            })
            .transpose()?;
        let mut domains = field
            .strings("domains", MAX_DOMAINS)?
            .iter()
            .map(|d| domain_entry("domains", d))
            .collect::<Result<Vec<_>>>()?;
        domains.sort();
        domains.dedup();
        if domains.iter().any(|d| d.starts_with('-')) && domains.iter().any(|d| !d.starts_with('-')) {
            return Err(Error::invalid(
                "invalid_domains",
                "domains must all include or all exclude (\"-example.com\"), not both",
            ));
        }
        let published_after = field.string("publishedAfter")?.map(|d| day("publishedAfter", &d)).transpose()?;
        let published_before = field.string("publishedBefore")?.map(|d| day("publishedBefore", &d)).transpose()?;
        if let (Some(a), Some(b)) = (published_after, published_before)
            && a > b
        {
            return Err(Error::invalid("invalid_date", "publishedAfter is later than publishedBefore"));
        }
        if recency.is_some() && (published_after.is_some() || published_before.is_some()) {
            return Err(Error::invalid(
                "conflicting_filters",
                "recency cannot be combined with publishedAfter / publishedBefore; use one or the other",
            ));
        }
        let agent = agent_name(field.string("agent")?.as_deref(), "research")?;
        Ok(Self { kind, text, region, model, recency, domains, published_after, published_before, agent })
    }
}

fn aspects(field: &Fields<'_>) -> Result<Vec<String>> {
    let aspects = field.strings("aspects", MAX_ASPECTS)?;
    aspects
        .into_iter()
        .map(|a| {
            let a = a.trim().to_owned();
            if a.is_empty() || a.chars().count() > 200 {
                Err(Error::invalid("invalid_aspects", "each aspect must be 1-200 characters"))
            } else {
                Ok(a)
            }
        })
        .collect()
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

/// Typed access to the fields of a request object, with errors naming the field.
struct Fields<'a>(&'a serde_json::Map<String, serde_json::Value>);

impl Fields<'_> {
    fn string(&self, name: &str) -> Result<Option<String>> {
        match self.0.get(name) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(Error::invalid("invalid_field", format!("{name} must be a string"))),
        }
    }

    fn strings(&self, name: &str, max: usize) -> Result<Vec<String>> {
        match self.0.get(name) {
            None | Some(serde_json::Value::Null) => Ok(Vec::new()),
            Some(serde_json::Value::Array(items)) if items.len() <= max => items
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| Error::invalid("invalid_field", format!("{name} must be an array of strings")))
                })
                .collect(),
            Some(serde_json::Value::Array(_)) => {
                Err(Error::invalid("invalid_field", format!("{name} has more than {max} entries")))
            }
            Some(_) => Err(Error::invalid("invalid_field", format!("{name} must be an array of strings"))),
        }
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
