//! Tavily Search (`POST {TAVILY_BASE_URL}/search`, `Authorization: Bearer <key>`).
//!
//! As a search provider it answers plain searches (the `answer` plus its `results` as
//! citations) and research-node requests (its results are the topics); it cannot answer the
//! JSON-schema methods, so the provider chain skips it for those. The `search_web` tool of
//! seed 002 uses [`Tavily::search_web`] with its fixed request body. Tavily bills in credits:
//! a basic search is one.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::Answer;
use crate::core::secrets::Secret;
use crate::core::upstream::{JsonClient, ProviderError, Usage};
use crate::web::citations::SearchHit;
use crate::web::query::{Kind, Query, Recency};

/// One Tavily result as the `search_web` tool hands it to a model.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WebResult {
    pub title: String,
    pub url: String,
    pub content: String,
}

pub struct Tavily {
    http: JsonClient,
    endpoint: String,
    key: Secret,
}

/// The tier billed (the price table's key under `tavily`): every request is a basic search.
pub const MODEL: &str = "basic";

/// The most one request may use: a basic search is one credit, whatever it finds.
pub fn ceiling() -> Usage {
    Usage { credits: 1, ..Usage::default() }
}

impl Tavily {
    pub fn new(base_url: &str, key: Secret, timeout: Duration) -> Result<Self, ProviderError> {
        Ok(Self {
            http: JsonClient::new(timeout)?,
            endpoint: format!("{}/search", base_url.trim_end_matches('/')),
            key,
        })
    }

    /// The request body for `query` as a search provider.
    pub fn request_body(query: &Query) -> Value {
        let max_results = match &query.kind {
            Kind::Research { topic_count } => (topic_count * 2).clamp(5, 20),
            _ => 5,
        };
        let mut body = json!({
            "query": query.text.chars().take(400).collect::<String>(),
            "search_depth": "basic",
            "max_results": max_results,
            "include_answer": true,
            "include_raw_content": false,
            "include_images": false,
            "include_usage": true,
        });
        if let Some(r) = query.recency {
            body["time_range"] = json!(if r == Recency::Hour { "day" } else { r.as_str() });
        }
        if let Some(d) = query.published_after {
            body["start_date"] = json!(d.format("%Y-%m-%d").to_string());
        }
        if let Some(d) = query.published_before {
            body["end_date"] = json!(d.format("%Y-%m-%d").to_string());
        }
        let (excluded, included): (Vec<_>, Vec<_>) = query.domains.iter().partition(|d| d.starts_with('-'));
        if !included.is_empty() {
            body["include_domains"] = json!(included);
        }
        if !excluded.is_empty() {
            body["exclude_domains"] = json!(excluded.iter().map(|d| &d[1..]).collect::<Vec<_>>());
        }
        body
    }

    /// Seed 002's `search_web`: exactly `query`, basic depth, 3 results, no answer, no raw
    /// content, no images; at most 3 `{title, url, content}` back.
    pub async fn search_web(&self, query: &str) -> Result<(Vec<WebResult>, Usage), ProviderError> {
        let body = json!({
            "query": query,
            "search_depth": "basic",
            "max_results": 3,
            "include_answer": false,
            "include_raw_content": false,
            "include_images": false,
        });
        let parsed = parse(&self.http.post(&self.endpoint, &self.key, &body).await?)?;
        let results = parsed
            .hits
            .into_iter()
            .take(3)
            .map(|(hit, content)| WebResult { title: hit.title.unwrap_or_default(), url: hit.url, content })
            .collect();
        Ok((results, parsed.usage))
    }
}

struct Parsed {
    answer: Option<String>,
    hits: Vec<(SearchHit, String)>,
    images: Vec<String>,
    usage: Usage,
    errors: Vec<String>,
}

fn parse(bytes: &[u8]) -> Result<Parsed, ProviderError> {
    let v: Value =
        serde_json::from_slice(bytes).map_err(|e| ProviderError::Malformed(format!("response is not JSON: {e}")))?;
    let mut errors = Vec::new();
    let hits = match v.get("results") {
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .filter_map(|(i, r)| match r.get("url").and_then(Value::as_str) {
                Some(url) => Some((
                    SearchHit {
                        url: url.to_owned(),
                        title: r.get("title").and_then(Value::as_str).map(str::to_owned),
                        date: r.get("published_date").and_then(Value::as_str).map(str::to_owned),
                        id: None,
                        snippet: r.get("content").and_then(Value::as_str).map(str::to_owned),
                    },
                    r.get("content").and_then(Value::as_str).unwrap_or_default().to_owned(),
                )),
                None => {
                    errors.push(format!("results[{i}] has no url"));
                    None
                }
            })
            .collect(),
        _ => return Err(ProviderError::Malformed("results is missing or not an array".into())),
    };
    let images = v
        .get("images")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|i| i.as_str().or_else(|| i.get("url").and_then(Value::as_str)))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let credits =
        v.pointer("/usage/credits").and_then(Value::as_u64).map_or(1, |c| u32::try_from(c).unwrap_or(u32::MAX));
    Ok(Parsed {
        answer: v.get("answer").and_then(Value::as_str).map(str::to_owned).filter(|a| !a.trim().is_empty()),
        hits,
        images,
        usage: Usage { credits, ..Usage::default() },
        errors,
    })
}

#[async_trait]
impl super::SearchProvider for Tavily {
    fn name(&self) -> &'static str {
        "tavily"
    }

    fn supports(&self, kind: &Kind) -> bool {
        matches!(kind, Kind::Search | Kind::Research { .. })
    }

    fn worst_case(&self, _query: &Query) -> (&'static str, Usage) {
        (MODEL, ceiling())
    }

    async fn answer(&self, query: &Query) -> Result<Answer, ProviderError> {
        let parsed = parse(&self.http.post(&self.endpoint, &self.key, &Self::request_body(query)).await?)?;
        let content = match &query.kind {
            Kind::Research { .. } => json!({
                "query": "",
                "results": parsed.hits.iter().map(|(h, c)| json!({"title": h.title.clone().unwrap_or_default(), "content": c, "source": h.url})).collect::<Vec<_>>(),
                "summary": parsed.answer.clone().unwrap_or_default(),
            })
            .to_string(),
            _ => {
                // The answer, then each result as a numbered note its [n] marker points to.
                let mut text = parsed.answer.clone().unwrap_or_default();
                for (i, (hit, snippet)) in parsed.hits.iter().enumerate() {
                    text.push_str(&format!("\n\n[{}] {}: {}", i + 1, hit.title.as_deref().unwrap_or("untitled"), snippet));
                }
                text.trim_start().to_owned()
            }
        };
        if parsed.hits.is_empty() && parsed.answer.is_none() {
            return Err(ProviderError::Malformed("no answer and no results".into()));
        }
        Ok(Answer {
            model: MODEL.into(),
            content,
            citations: parsed.hits.iter().map(|(h, _)| h.url.clone()).collect(),
            search_results: parsed.hits.into_iter().map(|(h, _)| h).collect(),
            images: parsed.images,
            usage: parsed.usage,
            upstream_id: None,
            schema_errors: parsed.errors,
            ..Answer::default()
        })
    }
}
