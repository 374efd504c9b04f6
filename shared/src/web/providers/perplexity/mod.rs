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
use crate::core::secrets::Secret;
use crate::core::upstream::{JsonClient, ProviderError, Usage};
use crate::web::analysis;
use crate::web::query::{Kind, Model, Query, Recency};

mod response;
pub use response::parse_response;

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
}
