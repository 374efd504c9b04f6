//! Perplexity's Agent API (`POST {PERPLEXITY_BASE_URL}/v1/agent`, OpenAI-Responses style;
//! Sonar chat completions were retired on 2026-09-27).
//!
//! The request follows the types of the official SDK (PyPI `perplexityai`,
//! `ResponseCreateParams`) and Perplexity's migration guide: `input` is the user prompt,
//! `instructions` our system text (seed 000's Chinese line included), `model`
//! `perplexity/sonar` with a `web_search` tool that carries every search filter
//! (`filters.search_domain_filter` / `search_recency_filter`, `user_location.country`),
//! `max_output_tokens` 4000, `max_steps` (3, or 5 for `sonar-pro`: a run's searches are
//! bounded, and so is what a call may cost) and, for the structured methods, a top-level `response_format`
//! `json_schema` with a name. `sonar-pro` ("high quality") is the Agent API's own pro search:
//! `preset: "low"` (named `pro-search` before; the migration guide's behavioural match for
//! `sonar-pro`) instead of `model`; the preset picks its model and merges our `web_search`
//! filters into its tools, and our fields override its defaults. It is billed as `sonar-pro`.
//! The SDK types have no `temperature` and no `tool_choice`, and the API refuses unknown
//! fields, so neither is sent (the instructions ask for a search instead); nothing of Sonar's
//! REMOVE list is sent.
//!
//! The response is walked item by item: text from `message` items' `output_text` parts,
//! sources from the `search_results` item (ids are what inline `[n]` markers name) and the
//! parts' `url_citation` annotations. HTTP 200 is not success: a run `failed` or `cancelled`
//! is a failed attempt; an `incomplete` one keeps its text and says why it stopped.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::Answer;
use crate::core::config::Secret;
use crate::core::upstream::{JsonClient, ProviderError, Usage};
use crate::web::analysis;
use crate::web::citations::SearchHit;
use crate::web::query::{Kind, Model, Query, Recency};

/// The Agent API route under the API root.
pub const AGENT_PATH: &str = "/v1/agent";

/// The model every `sonar` request names (there is no `perplexity/sonar-pro` slug).
pub const AGENT_MODEL: &str = "perplexity/sonar";

/// The preset a `sonar-pro` request names instead of a model: the Agent API's pro search.
pub const PRO_PRESET: &str = "low";

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

/// The longest answer asked for.
pub const MAX_OUTPUT_TOKENS: u64 = 4000;

/// Research-loop steps a run may take (`max_steps`, which overrides any preset's): each may
/// run a web search, billed per search, and feed its results back as input tokens.
pub fn max_steps(query: &Query) -> u32 {
    if query.model == Model::SonarPro { 5 } else { 3 }
}

/// Input tokens one step's search results may add (the pro preset reads more results and pages).
fn context_per_step(query: &Query) -> u64 {
    if query.model == Model::SonarPro { 20_000 } else { 10_000 }
}

/// The Perplexity adapter. Built once per process; cheap to share.
pub struct Perplexity {
    http: JsonClient,
    endpoint: String,
    key: Secret,
}

impl Perplexity {
    /// An adapter for the API root `base_url` (`https://api.perplexity.ai`).
    pub fn new(base_url: &str, key: Secret, timeout: Duration) -> Result<Self, ProviderError> {
        Ok(Self {
            http: JsonClient::new(timeout)?,
            endpoint: format!("{}{AGENT_PATH}", base_url.trim_end_matches('/')),
            key,
        })
    }

    /// The JSON body sent for `query`.
    pub fn request_body(query: &Query) -> Value {
        let chinese = query.is_chinese();
        let mut instructions = String::from(
            "You are a meticulous web research assistant. Search the web before you answer, ground \
             every statement in the sources you found and cite them with their [n] numbers. Answer in \
             the language of the question.",
        );
        if chinese {
            instructions.push('\n');
            instructions.push_str(CJK_SYSTEM_LINE);
        }
        let schema = analysis::json_schema(&query.kind);
        if schema.is_some() {
            instructions.push_str("\nRespond only with a JSON object that matches the given schema.");
        }
        let mut filters = Map::new();
        // Recency and date filters exclude each other; the seed's Chinese default is a recency.
        let dated = query.published_after.is_some() || query.published_before.is_some();
        let recency = match &query.kind {
            Kind::Trends { timeframe } => Some(*timeframe),
            _ => query.recency.or((chinese && !dated).then_some(Recency::Month)),
        };
        if let Some(r) = recency {
            filters.insert("search_recency_filter".into(), json!(r.as_str()));
        }
        let us_date = |d: &chrono::NaiveDate| json!(d.format("%m/%d/%Y").to_string());
        if let Some(d) = &query.published_after {
            filters.insert("search_after_date_filter".into(), us_date(d));
        }
        if let Some(d) = &query.published_before {
            filters.insert("search_before_date_filter".into(), us_date(d));
        }
        if !query.domains.is_empty() {
            filters.insert("search_domain_filter".into(), json!(query.domains));
        } else if chinese {
            filters.insert("search_domain_filter".into(), json!(CJK_DOMAINS));
        }
        let mut tool = json!({"type": "web_search"});
        if !filters.is_empty() {
            tool["filters"] = Value::Object(filters);
        }
        if let Some(region) = &query.region {
            tool["user_location"] = json!({"country": region});
        }
        let (field, name) = match query.model {
            Model::Sonar => ("model", AGENT_MODEL),
            Model::SonarPro => ("preset", PRO_PRESET),
        };
        let mut body = json!({
            "input": user_prompt(query),
            "instructions": instructions,
            "max_output_tokens": MAX_OUTPUT_TOKENS,
            "max_steps": max_steps(query),
            "tools": [tool],
        });
        body[field] = json!(name);
        if let Some(schema) = schema {
            body["response_format"] =
                json!({"type": "json_schema", "json_schema": {"name": query.kind.name(), "schema": schema}});
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

    /// Every step searches and reads its results; the prompt's bytes bound its own tokens.
    fn worst_case(&self, query: &Query) -> (&'static str, Usage) {
        let steps = max_steps(query);
        let prompt = Self::request_body(query).to_string().len() as u64;
        let usage = Usage {
            input_tokens: prompt + u64::from(steps) * context_per_step(query),
            output_tokens: MAX_OUTPUT_TOKENS,
            searches: steps,
            ..Usage::default()
        };
        (query.model.as_str(), usage)
    }

    async fn answer(&self, query: &Query) -> Result<Answer, ProviderError> {
        let bytes = self.http.post(&self.endpoint, &self.key, &Self::request_body(query)).await?;
        let answer = parse_response(&bytes)?;
        Ok(match query.model {
            Model::Sonar => answer,
            // The preset runs a model of its choosing: billed as the tier asked for.
            Model::SonarPro => {
                tracing::info!(served = %answer.model, "pro search answered");
                Answer { model: Model::SonarPro.as_str().to_owned(), ..answer }
            }
        })
    }
}

/// Reads an Agent API response leniently: every part that parses is kept, every one that does
/// not is named in `schema_errors`. Fails when the run failed or was cancelled, or when
/// nothing usable is left.
pub fn parse_response(bytes: &[u8]) -> Result<Answer, ProviderError> {
    let v: Value =
        serde_json::from_slice(bytes).map_err(|e| ProviderError::Malformed(format!("response is not JSON: {e}")))?;
    let mut errors = Vec::new();
    let text_of =
        |pointer: &str| v.pointer(pointer).and_then(Value::as_str).map(|s| s.chars().take(300).collect::<String>());
    let incomplete = match v.get("status").and_then(Value::as_str) {
        Some("completed") => None,
        Some("incomplete") => Some(text_of("/incomplete_details/reason").unwrap_or_else(|| "unknown".to_owned())),
        Some(status) => {
            let message = text_of("/error/message").unwrap_or_else(|| "the run did not finish".to_owned());
            return Err(ProviderError::RunFailed { status: status.chars().take(40).collect(), message });
        }
        None => {
            errors.push("status is missing".to_owned());
            None
        }
    };
    let mut content = String::new();
    let mut search_results = Vec::new();
    let mut annotations = Vec::new();
    let items = match v.get("output") {
        Some(Value::Array(items)) => items.as_slice(),
        _ => {
            errors.push("output is not an array".to_owned());
            &[]
        }
    };
    for (i, item) in items.iter().enumerate() {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                for (j, part) in item.get("content").and_then(Value::as_array).into_iter().flatten().enumerate() {
                    if part.get("type").and_then(Value::as_str) != Some("output_text") {
                        continue;
                    }
                    match part.get("text").and_then(Value::as_str) {
                        Some(text) => content.push_str(text),
                        None => errors.push(format!("output[{i}].content[{j}].text is not a string")),
                    }
                    for note in part.get("annotations").and_then(Value::as_array).into_iter().flatten() {
                        if note.get("type").and_then(Value::as_str) == Some("url_citation")
                            && let Some(url) = note.get("url").and_then(Value::as_str)
                        {
                            annotations.push(SearchHit {
                                url: url.to_owned(),
                                title: string(note, "title"),
                                ..SearchHit::default()
                            });
                        }
                    }
                }
            }
            Some("search_results") => match item.get("results") {
                Some(Value::Array(results)) => {
                    for (j, r) in results.iter().enumerate() {
                        match r.get("url").and_then(Value::as_str) {
                            Some(url) => search_results.push(SearchHit {
                                url: url.to_owned(),
                                title: string(r, "title"),
                                date: string(r, "date").or_else(|| string(r, "last_updated")),
                                id: r.get("id").and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok()),
                                snippet: string(r, "snippet"),
                            }),
                            None => errors.push(format!("output[{i}].results[{j}] has no url")),
                        }
                    }
                }
                _ => errors.push(format!("output[{i}].results is not an array")),
            },
            // Other items (fetch_url_results, function_call, unknown, ...) carry no web source.
            Some(_) => {}
            None => errors.push(format!("output[{i}] has no type")),
        }
    }
    let usage = match v.get("usage") {
        Some(u) => {
            let count = |pointer: &str, name: &str, errors: &mut Vec<String>| {
                u.pointer(pointer).and_then(Value::as_u64).unwrap_or_else(|| {
                    errors.push(format!("usage.{name} is missing"));
                    0
                })
            };
            Usage {
                input_tokens: count("/input_tokens", "input_tokens", &mut errors),
                output_tokens: count("/output_tokens", "output_tokens", &mut errors),
                provider_cost_usd: u
                    .pointer("/cost/total_cost")
                    .and_then(Value::as_f64)
                    .filter(|c| c.is_finite() && *c >= 0.0),
                credits: 0,
                searches: u
                    .pointer("/tool_calls_details/search_web/invocation")
                    .and_then(Value::as_u64)
                    .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX)),
            }
        }
        None => {
            errors.push("usage is missing".to_owned());
            Usage::default()
        }
    };
    if content.trim().is_empty() && search_results.is_empty() && annotations.is_empty() {
        return Err(ProviderError::Malformed(format!("no text and no sources ({})", errors.join("; "))));
    }
    // Billed under the served model; Perplexity's own models without their `perplexity/` prefix
    // (the price table's key under the provider), a third-party model a preset picked in full.
    let served = v.get("model").and_then(Value::as_str).unwrap_or(AGENT_MODEL);
    Ok(Answer {
        model: served.strip_prefix("perplexity/").unwrap_or(served).to_owned(),
        content,
        citations: Vec::new(),
        search_results,
        annotations,
        // The Agent API returns no images.
        images: Vec::new(),
        usage,
        upstream_id: string(&v, "id"),
        schema_errors: errors,
        incomplete,
    })
}

fn string(v: &Value, field: &str) -> Option<String> {
    v.get(field).and_then(Value::as_str).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(kind: &str, body: Value) -> Query {
        Query::from_json(kind, body.to_string().as_bytes()).unwrap()
    }

    fn web_search(body: &Value) -> &Value {
        assert_eq!(body["tools"].as_array().map(Vec::len), Some(1), "{body}");
        &body["tools"][0]
    }

    #[test]
    fn a_search_is_an_agent_request_with_a_web_search_tool() {
        let b = Perplexity::request_body(&query("search", json!({"query": "coffee market"})));
        assert_eq!(b["model"], AGENT_MODEL);
        assert_eq!(b["input"], "coffee market");
        assert!(b["instructions"].as_str().unwrap().contains("Search the web"));
        assert_eq!(b["max_output_tokens"], 4000);
        assert_eq!(web_search(&b), &json!({"type": "web_search"}));
        let mut fields: Vec<&str> = b.as_object().unwrap().keys().map(String::as_str).collect();
        fields.sort_unstable();
        assert_eq!(fields, ["input", "instructions", "max_output_tokens", "max_steps", "model", "tools"]);
        assert_eq!(b["max_steps"], 3, "a run's searches are bounded: no preset decides how many");
    }

    #[test]
    fn sonar_pro_is_the_agent_apis_pro_preset_with_our_filters_and_bounds() {
        let b = Perplexity::request_body(&query(
            "search",
            json!({"query": "coffee market", "model": "sonar-pro", "recency": "week"}),
        ));
        assert_eq!(b["preset"], PRO_PRESET);
        assert!(b.get("model").is_none(), "the preset picks its model: {b}");
        assert_eq!(web_search(&b)["filters"], json!({"search_recency_filter": "week"}));
        assert_eq!((b["max_steps"].as_u64(), b["max_output_tokens"].as_u64()), (Some(5), Some(4000)));
    }

    #[test]
    fn trends_filter_by_the_timeframe_and_ask_for_a_named_schema() {
        let b = Perplexity::request_body(&query("trends", json!({"topic": "AI agents"})));
        assert_eq!(web_search(&b)["filters"], json!({"search_recency_filter": "week"}));
        assert_eq!(b["response_format"]["type"], "json_schema");
        assert_eq!(b["response_format"]["json_schema"]["name"], "trends");
        assert!(b["response_format"]["json_schema"]["schema"]["properties"]["trends"].is_object());
    }

    #[test]
    fn japanese_queries_are_not_tuned_for_chinese_sources() {
        let b = Perplexity::request_body(&query("search", json!({"query": "東京 カフェ 人気"})));
        assert!(!b["instructions"].as_str().unwrap().contains(CJK_SYSTEM_LINE));
        assert!(web_search(&b).get("filters").is_none());
    }

    #[test]
    fn chinese_queries_get_the_seed_line_regional_domains_and_a_month() {
        let b = Perplexity::request_body(&query("search", json!({"query": "台灣 咖啡 市場", "region": "tw"})));
        assert!(b["instructions"].as_str().unwrap().contains(CJK_SYSTEM_LINE));
        let tool = web_search(&b);
        assert_eq!(tool["filters"]["search_domain_filter"], json!(CJK_DOMAINS));
        assert_eq!(tool["filters"]["search_recency_filter"], "month");
        assert_eq!(tool["user_location"], json!({"country": "TW"}));
        // A caller's own filters win.
        let b = Perplexity::request_body(&query(
            "search",
            json!({"query": "台灣", "domains": ["cna.com.tw"], "recency": "day"}),
        ));
        assert_eq!(
            web_search(&b)["filters"],
            json!({"search_domain_filter": ["cna.com.tw"], "search_recency_filter": "day"})
        );
    }

    #[test]
    fn publication_dates_become_us_dates_in_place_of_a_recency() {
        let b = Perplexity::request_body(&query(
            "search",
            json!({"query": "台灣 選舉", "publishedAfter": "2026-01-05", "publishedBefore": "2026-02-28"}),
        ));
        let filters = &web_search(&b)["filters"];
        assert_eq!(filters["search_after_date_filter"], "01/05/2026");
        assert_eq!(filters["search_before_date_filter"], "02/28/2026");
        assert!(filters.get("search_recency_filter").is_none(), "{filters}");
    }

    #[test]
    fn text_sources_and_cost_come_from_the_output_items() {
        let body = json!({
            "id": "resp_1", "object": "response", "created_at": 1, "model": "perplexity/sonar", "status": "completed",
            "output": [
                {"type": "search_results", "queries": ["q"], "results": [
                    {"id": 3, "url": "https://a.example.com/x", "title": "A", "snippet": "s", "date": "2026-01-02"},
                    {"id": 4, "title": "no url", "snippet": "s"}
                ]},
                {"type": "fetch_url_results", "contents": []},
                {"type": "message", "id": "m", "role": "assistant", "status": "completed", "content": [
                    {"type": "output_text", "text": "One [3]. ", "annotations": [
                        {"type": "url_citation", "url": "https://b.example.com", "title": "B", "start_index": 0, "end_index": 3}
                    ]},
                    {"type": "output_text", "text": "Two."}
                ]}
            ],
            "usage": {"input_tokens": 10, "output_tokens": 20, "total_tokens": 30,
                      "cost": {"currency": "USD", "input_cost": 0.00001, "output_cost": 0.00002, "tool_calls_cost": 0.005, "total_cost": 0.00503},
                      "tool_calls_details": {"search_web": {"invocation": 1}}}
        });
        let a = parse_response(body.to_string().as_bytes()).unwrap();
        assert_eq!(a.content, "One [3]. Two.");
        assert_eq!(a.model, "sonar");
        assert_eq!(a.search_results.len(), 1);
        assert_eq!((a.search_results[0].id, a.search_results[0].title.as_deref()), (Some(3), Some("A")));
        assert_eq!(a.annotations[0].url, "https://b.example.com");
        assert_eq!(a.schema_errors, ["output[0].results[1] has no url"]);
        assert_eq!(
            a.usage,
            Usage { input_tokens: 10, output_tokens: 20, provider_cost_usd: Some(0.00503), credits: 0, searches: 1 }
        );
        assert_eq!(a.upstream_id.as_deref(), Some("resp_1"));
        assert!(a.incomplete.is_none() && a.images.is_empty());
    }

    #[test]
    fn http_200_is_not_success() {
        let run = |status: &str| {
            let body = json!({"id": "r", "status": status, "model": "perplexity/sonar", "created_at": 1, "object": "response",
                "output": [], "error": {"message": "model error", "type": "internal"}});
            parse_response(body.to_string().as_bytes())
        };
        assert_eq!(
            run("failed"),
            Err(ProviderError::RunFailed { status: "failed".into(), message: "model error".into() })
        );
        assert!(matches!(run("cancelled"), Err(ProviderError::RunFailed { .. })));
        assert!(matches!(run("requires_action"), Err(ProviderError::RunFailed { .. })));
        let cut = json!({"id": "r", "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
            "model": "perplexity/sonar", "output": [{"type": "message", "content": [{"type": "output_text", "text": "Half"}]}],
            "usage": {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}});
        let a = parse_response(cut.to_string().as_bytes()).unwrap();
        assert_eq!((a.content.as_str(), a.incomplete.as_deref()), ("Half", Some("max_output_tokens")));
    }

    #[test]
    fn partial_responses_keep_what_parses() {
        let a = parse_response(
            br#"{"status": "completed", "output": [{"type": "message", "content": [{"type": "output_text", "text": 7}, {"type": "output_text", "text": "ok"}]}], "usage": {"input_tokens": 3}}"#,
        )
        .unwrap();
        assert_eq!(a.content, "ok");
        assert_eq!(a.usage.input_tokens, 3);
        assert!(a.schema_errors.iter().any(|e| e.contains("output[0].content[0].text")));
        assert!(a.schema_errors.iter().any(|e| e.contains("output_tokens is missing")));
        assert!(matches!(parse_response(br#"{"status": "completed"}"#), Err(ProviderError::Malformed(_))));
        assert!(matches!(parse_response(b"<html>"), Err(ProviderError::Malformed(_))));
    }
}
