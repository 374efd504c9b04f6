//! Tools for AI assistants using function calling (seed 002): their OpenAI-style definitions
//! and their execution. A tool is listed only when it can run: `search_web` needs a Tavily key,
//! and without one the assistant simply has no search (nothing errors).
//!
//! A tool's result is what the model consumes: a JSON *string*. Failures are strings too
//! (`{"error": ..., "message": ...}`), so the model can tell the user and carry on.
//! `search_web` results are cached like searches (`tavily:search_web:<sha256 of the query>`,
//! `CACHE_TTL_SECS`): a repeat costs nothing and is accounted as a cache hit. The result URLs
//! are stored as the request's sources (`GET /sources/{requestId}`), and the call ends inside
//! the search budget.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::core::clock::Clock;
use crate::core::error::{Error, Result};
use crate::core::records::RecordStore;
use crate::core::upstream::Usage;
use crate::costs::ledger::{CallKind, Charge, Citations, Ledger, Outcome};
use crate::web::cache;
use crate::web::citations::{self, Source};
use crate::web::providers::tavily::{self, Tavily, WebResult};
use crate::web::sources;

pub const SEARCH_WEB: &str = "search_web";
/// Served by the `rag-search` function (`POST /tools/explore_nearby`); listed here with the rest.
pub const EXPLORE_NEARBY: &str = "explore_nearby";

/// The OpenAI function definition of `explore_nearby` (seed 004 Requirements 8, 13).
pub fn explore_nearby_definition() -> Value {
    json!({
        "type": "function",
        "function": {
            "name": EXPLORE_NEARBY,
            "description": "Find bookable activities near a place (active, in the future, places left), ranked by how well they fit what the user wants. Each result says why it matches (matchReason).",
            "parameters": {
                "type": "object",
                "properties": {
                    "semanticQuery": {"type": "string", "description": "What the user wants, in their words (e.g. 轻松的小局, 适合社恐的活动). Omit to list the nearest."},
                    "lat": {"type": "number", "description": "Latitude of the user's place."},
                    "lng": {"type": "number", "description": "Longitude of the user's place."},
                    "radiusInKm": {"type": "number", "description": "Search radius in km (up to 500)."},
                    "type": {"type": "string", "description": "Only activities of this type (e.g. 桌游)."},
                    "limit": {"type": "integer", "description": "How many results (1-50, default 10)."}
                },
                "required": ["lat", "lng", "radiusInKm"],
            },
        },
    })
}

/// The tools and what they need.
pub struct Tools {
    tavily: Option<Arc<Tavily>>,
    ledger: Ledger,
    records: Arc<dyn RecordStore>,
    clock: Arc<dyn Clock>,
    cache_ttl: Duration,
    /// The time box of the Tavily call (`SEARCH_BUDGET_MS`).
    budget: Duration,
}

/// What `search_web` answered: the model-facing JSON string, and whether its result URLs are
/// stored as the request's sources (false only when the store failed; they are logged).
pub struct WebAnswer {
    pub result: String,
    pub sources_stored: bool,
}

/// A cached `search_web` answer: the model-facing string and what it cost.
#[derive(Serialize, Deserialize)]
struct CachedWeb {
    results: String,
    cost_usd: f64,
}

/// The cache key of `search_web` for `query` (trimmed, inner whitespace collapsed).
fn web_cache_key(query: &str) -> String {
    let canonical = query.split_whitespace().collect::<Vec<_>>().join(" ");
    format!("tavily:search_web:{}", hex::encode(Sha256::digest(canonical.as_bytes())))
}

impl Tools {
    /// `search_web` on `tavily` (none: no web search), cached in `records` for `cache_ttl`,
    /// each call inside `budget` and accounted in `ledger`.
    pub fn new(
        tavily: Option<Arc<Tavily>>,
        ledger: Ledger,
        records: Arc<dyn RecordStore>,
        clock: Arc<dyn Clock>,
        cache_ttl: Duration,
        budget: Duration,
    ) -> Self {
        Self { tavily, ledger, records, clock, cache_ttl, budget }
    }

    /// The definitions of the tools available now (`{"type": "function", "function": {name,
    /// description, parameters}}`).
    pub fn definitions(&self) -> Vec<Value> {
        let mut tools = vec![explore_nearby_definition()];
        if self.tavily.is_some() {
            tools.push(json!({
                "type": "function",
                "function": {
                    "name": SEARCH_WEB,
                    "description": "Search the web for current information (news, recent facts, recommendations). Returns up to 3 results with title, url and content.",
                    "parameters": {
                        "type": "object",
                        "properties": {"query": {"type": "string", "description": "What to search for, in the user's language."}},
                        "required": ["query"],
                    },
                },
            }));
        }
        tools
    }

    /// Whether tool `name` is available.
    pub fn has(&self, name: &str) -> bool {
        name == SEARCH_WEB && self.tavily.is_some()
    }

    /// Runs `search_web` for `query`. Every call is accounted, its sources stored. Fails only
    /// when `agent`'s daily budget is spent (`budget_exceeded`) and the answer is not cached.
    pub async fn search_web(&self, query: &str, agent: &str, request_id: &str) -> Result<WebAnswer> {
        let Some(tavily) = &self.tavily else {
            let unavailable = error_string("search_unavailable", "web search is not configured");
            return Ok(self.kept(request_id, unavailable, &[]).await);
        };
        let charge = |usage, outcome, saved_usd| Charge {
            request_id,
            agent,
            kind: CallKind::Search,
            provider: "tavily",
            model: tavily::MODEL,
            usage,
            outcome,
            saved_usd,
            upstream_id: None,
        };
        let key = web_cache_key(query);
        if let Some(hit) = cache::get::<CachedWeb>(&*self.records, &key, self.clock.now()).await {
            self.ledger.charge(&charge(&Usage::default(), Outcome::Cached, hit.cost_usd)).await;
            // The cache keeps the model-facing string only; its results are read back from it.
            let found: Vec<WebResult> = serde_json::from_str(&hit.results).unwrap_or_default();
            return Ok(self.kept(request_id, hit.results, &found).await);
        }
        let hold = self.ledger.hold(agent, "tavily", tavily::MODEL, &tavily::ceiling()).await?;
        let nothing = Usage::default();
        let in_flight = self.ledger.in_flight(&charge(&nothing, Outcome::Failed, 0.0));
        let answer = tokio::time::timeout(self.budget, tavily.search_web(query))
            .await
            .unwrap_or(Err(crate::core::upstream::ProviderError::OutOfTime));
        in_flight.accounted();
        match answer {
            Ok((results, usage)) => {
                // Only valid, public http(s) URLs reach the model.
                let offered = results.len();
                let results: Vec<WebResult> = results
                    .into_iter()
                    .filter_map(|r| citations::normalise(&r.url).ok().map(|url| WebResult { url, ..r }))
                    .collect();
                let mut cost = self.ledger.bill(&charge(&usage, Outcome::Live, 0.0));
                cost.citations = Citations::counted(results.len(), offered - results.len(), 0);
                self.ledger.record(&cost).await;
                self.ledger.settle(hold, &cost, false).await;
                let text = serde_json::to_string(&results).expect("results serialise");
                let cached = CachedWeb { results: text, cost_usd: cost.cost_usd };
                cache::put(&*self.records, &key, &cached, self.clock.now(), self.cache_ttl).await;
                Ok(self.kept(request_id, cached.results, &results).await)
            }
            Err(e) => {
                // Accounted as failed: free as far as we know, and against Tavily's availability.
                let cost = self.ledger.charge(&charge(&Usage::default(), Outcome::Failed, 0.0)).await;
                self.ledger.settle(hold, &cost, e.may_have_cost()).await;
                tracing::warn!(error = %e, "search_web failed");
                let message = format!("web search is temporarily unavailable: {e}");
                Ok(self.kept(request_id, error_string("search_failed", &message), &[]).await)
            }
        }
    }

    /// `result` as the answer of `request_id`, with the URLs of `found` stored as its sources.
    async fn kept(&self, request_id: &str, result: String, found: &[WebResult]) -> WebAnswer {
        let now = self.clock.now();
        let found: Vec<Source> = found
            .iter()
            .map(|r| Source {
                url: r.url.clone(),
                title: Some(r.title.clone()),
                accessed_at: now,
                snippet: citations::snippet(&r.content),
            })
            .collect();
        let sources_stored = sources::keep(&*self.records, request_id, &found, now).await;
        WebAnswer { result, sources_stored }
    }
}

/// A tool failure as the model reads it: `{"error": code, "message"}`.
/// The arguments of `POST /tools/search_web`, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchWebArguments {
    /// Trimmed, 1-400 characters.
    pub query: String,
    /// Who is billed (`assistant` by default).
    pub agent: String,
}

/// Its body as sent: `{query, agent?}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchWebBody {
    query: Option<String>,
    agent: Option<String>,
}

impl SearchWebArguments {
    /// Parses a typed body: a missing or bad query is `missing_query`, a bad agent name
    /// `invalid_agent`, an unknown field `unknown_field`.
    pub fn from_json(body: &[u8]) -> Result<Self> {
        let body: SearchWebBody = crate::core::json::typed_body_by(body, |path| match path {
            "agent" => "invalid_agent",
            _ => "missing_query",
        })?;
        let query =
            body.query.map(|q| q.trim().to_owned()).filter(|q| !q.is_empty() && q.chars().count() <= 400).ok_or_else(
                || Error::invalid("missing_query", "query is required: a non-empty string of at most 400 characters"),
            )?;
        Ok(Self { query, agent: crate::core::validate::agent_name(body.agent.as_deref(), "assistant")? })
    }
}

pub fn error_string(code: &str, message: &str) -> String {
    json!({"error": code, "message": message}).to_string()
}
