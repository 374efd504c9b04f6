//! Perplexity Sonar over its chat-completions endpoint (`POST {PERPLEXITY_BASE_URL}/chat/completions`).
//!
//! Request parameters follow seed 000: temperature 0.2, `max_tokens` 4000, no images, no
//! related questions; trends use `search_recency_filter` = the timeframe (week by default);
//! Chinese queries add the seed's system-prompt line, a `search_domain_filter` of Taiwan / Hong
//! Kong / China domains and recency `month`, unless the caller chose domains or recency.
//! Structured methods ask for `response_format: json_schema`. Citations arrive by default
//! (`citations`, `search_results`); the obsolete `return_citations` is not sent.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::http::JsonClient;
use super::{Answer, ProviderError, Usage};
use crate::analysis;
use crate::citations::SearchHit;
use crate::config::Secret;
use crate::query::{Kind, Query, Recency};

/// Seed 000's system-prompt line for Chinese queries.
pub const CJK_SYSTEM_LINE: &str = "針對中文查詢，請優先搜尋繁體中文和簡體中文的資源";

/// Default `search_domain_filter` for Chinese queries: Taiwan, Hong Kong and mainland China
/// (public suffixes and major Chinese-language outlets; Perplexity allows 20 entries).
pub const CJK_DOMAINS: [&str; 18] = [
    "gov.tw",
    "edu.tw",
    "org.tw",
    "com.tw",
    "net.tw",
    "gov.hk",
    "edu.hk",
    "org.hk",
    "com.hk",
    "gov.cn",
    "edu.cn",
    "org.cn",
    "com.cn",
    "udn.com",
    "ettoday.net",
    "hk01.com",
    "thepaper.cn",
    "zh.wikipedia.org",
];

/// The Perplexity adapter. Built once per process; cheap to share.
pub struct Perplexity {
    http: JsonClient,
    endpoint: String,
    key: Secret,
}

impl Perplexity {
    pub fn new(base_url: &str, key: Secret, timeout: Duration) -> Result<Self, ProviderError> {
        Ok(Self {
            http: JsonClient::new(timeout)?,
            endpoint: format!("{}/chat/completions", base_url.trim_end_matches('/')),
            key,
        })
    }

    /// The JSON body sent for `query`.
    pub fn request_body(query: &Query) -> Value {
        let chinese = query.is_chinese();
        let mut system = String::from(
            "You are a meticulous web research assistant. Ground every statement in current web \
             sources and cite them. Answer in the language of the question.",
        );
        if chinese {
            system.push('\n');
            system.push_str(CJK_SYSTEM_LINE);
        }
        let schema = analysis::json_schema(&query.kind);
        if schema.is_some() {
            system.push_str("\nRespond only with a JSON object that matches the given schema.");
        }
        let mut body = json!({
            "model": query.model.as_str(),
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user_prompt(query)},
            ],
            "temperature": 0.2,
            "max_tokens": 4000,
            "return_images": false,
            "return_related_questions": false,
        });
        let recency = match &query.kind {
            Kind::Trends { timeframe } => Some(*timeframe),
            _ => query.recency.or(chinese.then_some(Recency::Month)),
        };
        if let Some(r) = recency {
            body["search_recency_filter"] = json!(r.as_str());
        }
        if !query.domains.is_empty() {
            body["search_domain_filter"] = json!(query.domains);
        } else if chinese {
            body["search_domain_filter"] = json!(CJK_DOMAINS);
        }
        if let Some(region) = &query.region {
            body["web_search_options"] = json!({"user_location": {"country": region}});
        }
        if let Some(schema) = schema {
            body["response_format"] = json!({"type": "json_schema", "json_schema": {"schema": schema}});
        }
        body
    }
}

fn user_prompt(query: &Query) -> String {
    let text = &query.text;
    let mut prompt = match &query.kind {
        Kind::Search => text.clone(),
        Kind::Competitors { domain } => {
            let mut p = format!(
                "Analyse the pages that rank best for the keyword \"{text}\". For the top competitors give \
                 their domain, page title, a short description and their strengths; then list content \
                 gaps none of them covers, and recommendations for a new article."
            );
            if let Some(d) = domain {
                p.push_str(&format!(" Compare them with our site {d}, which is not a competitor of itself."));
            }
            p
        }
        Kind::Trends { timeframe } => format!(
            "What are the current trends about \"{text}\" over the past {}? For each trend give the \
             topic, a description and its relevance from 0 to 1; then give actionable insights.",
            timeframe.as_str()
        ),
        Kind::Research { topic_count } => format!(
            "{text}\n\nReturn about {topic_count} distinct topics as JSON: the query, one result per topic \
             (title, content summary, source URL) and an overall summary."
        ),
        Kind::Topic { aspects } => {
            let mut p = format!(
                "Research \"{text}\" in depth: a summary, key points, statistics each with its source, \
                 expert opinions, and related topics."
            );
            if !aspects.is_empty() {
                p.push_str(&format!(" Cover these aspects: {}.", aspects.join("; ")));
            }
            p
        }
    };
    if let Some(region) = &query.region {
        prompt.push_str(&format!("\nTarget region: {region}."));
    }
    prompt
}

#[async_trait]
impl super::SearchProvider for Perplexity {
    fn name(&self) -> &'static str {
        "perplexity"
    }

    async fn answer(&self, query: &Query) -> Result<Answer, ProviderError> {
        let bytes = self.http.post(&self.endpoint, &self.key, &Self::request_body(query)).await?;
        let mut answer = parse_response(&bytes)?;
        // Billed by the model asked for (the response may name a dated variant).
        answer.model = query.model.as_str().to_owned();
        Ok(answer)
    }
}

/// Reads a chat-completions response leniently: every field that parses is kept, every one
/// that does not is named in `schema_errors`. Fails only when nothing usable is left.
pub fn parse_response(bytes: &[u8]) -> Result<Answer, ProviderError> {
    let v: Value =
        serde_json::from_slice(bytes).map_err(|e| ProviderError::Malformed(format!("response is not JSON: {e}")))?;
    let mut errors = Vec::new();
    let content = match v.pointer("/choices/0/message/content") {
        Some(Value::String(s)) => s.clone(),
        Some(_) => {
            errors.push("choices[0].message.content is not a string".to_owned());
            String::new()
        }
        None => {
            errors.push("choices[0].message.content is missing".to_owned());
            String::new()
        }
    };
    let citations = strings(&v, "citations", &mut errors);
    let search_results = match v.get("search_results") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| match item.get("url").and_then(Value::as_str) {
                Some(url) => Some(SearchHit {
                    url: url.to_owned(),
                    title: item.get("title").and_then(Value::as_str).map(str::to_owned),
                    date: item.get("date").and_then(Value::as_str).map(str::to_owned),
                }),
                None => {
                    errors.push(format!("search_results[{i}] has no url"));
                    None
                }
            })
            .collect(),
        Some(_) => {
            errors.push("search_results is not an array".to_owned());
            Vec::new()
        }
    };
    let images = match v.get("images") {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|i| i.as_str().or_else(|| i.get("image_url").and_then(Value::as_str)))
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    let usage = match v.get("usage") {
        Some(u) => Usage {
            input_tokens: u.get("prompt_tokens").and_then(Value::as_u64).unwrap_or_else(|| {
                errors.push("usage.prompt_tokens is missing".to_owned());
                0
            }),
            output_tokens: u.get("completion_tokens").and_then(Value::as_u64).unwrap_or_else(|| {
                errors.push("usage.completion_tokens is missing".to_owned());
                0
            }),
            provider_cost_usd: u
                .pointer("/cost/total_cost")
                .and_then(Value::as_f64)
                .filter(|c| c.is_finite() && *c >= 0.0),
            credits: 0,
        },
        None => {
            errors.push("usage is missing".to_owned());
            Usage::default()
        }
    };
    if content.trim().is_empty() && citations.is_empty() && search_results.is_empty() {
        return Err(ProviderError::Malformed(format!("no content and no citations ({})", errors.join("; "))));
    }
    Ok(Answer {
        model: v.get("model").and_then(Value::as_str).unwrap_or_default().to_owned(),
        content,
        citations,
        search_results,
        images,
        usage,
        upstream_id: v.get("id").and_then(Value::as_str).map(str::to_owned),
        schema_errors: errors,
    })
}

fn strings(v: &Value, field: &str, errors: &mut Vec<String>) -> Vec<String> {
    match v.get(field) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| {
                let s = item.as_str().map(str::to_owned);
                if s.is_none() {
                    errors.push(format!("{field}[{i}] is not a string"));
                }
                s
            })
            .collect(),
        Some(_) => {
            errors.push(format!("{field} is not an array"));
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(kind: &str, body: Value) -> Query {
        Query::from_json(kind, body.to_string().as_bytes()).unwrap()
    }

    #[test]
    fn research_parameters_follow_seed_000() {
        let b = Perplexity::request_body(&query("search", json!({"query": "coffee market", "model": "sonar-pro"})));
        assert_eq!(b["model"], "sonar-pro");
        assert_eq!(b["temperature"], 0.2);
        assert_eq!(b["max_tokens"], 4000);
        assert_eq!(b["return_images"], false);
        assert!(b.get("return_citations").is_none());
        assert!(b.get("search_domain_filter").is_none());
        assert!(b.get("search_recency_filter").is_none());
    }

    #[test]
    fn trends_use_sonar_a_week_and_no_related_questions() {
        let b = Perplexity::request_body(&query("trends", json!({"topic": "AI agents"})));
        assert_eq!(b["model"], "sonar");
        assert_eq!(b["search_recency_filter"], "week");
        assert_eq!(b["return_related_questions"], false);
        assert_eq!(b["response_format"]["type"], "json_schema");
    }

    #[test]
    fn japanese_queries_are_not_tuned_for_chinese_sources() {
        let b = Perplexity::request_body(&query("search", json!({"query": "東京 カフェ 人気"})));
        assert!(!b["messages"][0]["content"].as_str().unwrap().contains(CJK_SYSTEM_LINE));
        assert!(b.get("search_domain_filter").is_none());
    }

    #[test]
    fn chinese_queries_get_the_seed_line_regional_domains_and_a_month() {
        let b = Perplexity::request_body(&query("search", json!({"query": "台灣 咖啡 市場", "region": "tw"})));
        assert!(b["messages"][0]["content"].as_str().unwrap().contains(CJK_SYSTEM_LINE));
        assert_eq!(b["search_domain_filter"], json!(CJK_DOMAINS));
        assert_eq!(b["search_recency_filter"], "month");
        assert_eq!(b["web_search_options"]["user_location"]["country"], "TW");
        // A caller's own filters win.
        let b = Perplexity::request_body(&query(
            "search",
            json!({"query": "台灣", "domains": ["cna.com.tw"], "recency": "day"}),
        ));
        assert_eq!(b["search_domain_filter"], json!(["cna.com.tw"]));
        assert_eq!(b["search_recency_filter"], "day");
    }

    #[test]
    fn partial_responses_keep_what_parses() {
        let a =
            parse_response(br#"{"citations": ["https://a.example.com", 7], "usage": {"prompt_tokens": 3}}"#).unwrap();
        assert_eq!(a.content, "");
        assert_eq!(a.citations, ["https://a.example.com"]);
        assert_eq!(a.usage.input_tokens, 3);
        assert!(a.schema_errors.iter().any(|e| e.contains("content is missing")));
        assert!(a.schema_errors.iter().any(|e| e.contains("citations[1]")));
        assert!(matches!(parse_response(b"{}"), Err(ProviderError::Malformed(_))));
        assert!(matches!(parse_response(b"<html>"), Err(ProviderError::Malformed(_))));
    }
}
