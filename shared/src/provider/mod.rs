//! The search-provider port: one question in, one answer with its raw citations out.
//!
//! An adapter makes a single attempt and classifies its failure ([`ProviderError`]); retrying,
//! caching, citation cleaning and cost accounting happen once, in [`crate::search`], for every
//! provider. Seed 000's four methods are the four [`crate::query::Kind`]s of one call, so a
//! newer upstream API can replace an adapter without touching callers.

pub mod breaker;
pub mod codex;
pub(crate) mod http;
pub mod mock;
pub mod perplexity;
pub mod tavily;

pub use breaker::Breaker;

use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::citations::SearchHit;
use crate::query::{Kind, Query};
use crate::retry::Retryable;

/// Token counts and, when the upstream reports it, its own price for the call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// The upstream's own figure (Perplexity `usage.cost.total_cost`); wins over the price table.
    pub provider_cost_usd: Option<f64>,
    /// Billing units of per-request upstreams (Tavily credits).
    pub credits: u32,
    /// Web searches the upstream ran for the call (Perplexity's `search_web` invocations).
    #[serde(default)]
    pub searches: u32,
}

/// What an upstream answered, before citations are cleaned.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Answer {
    /// The model (or tier) billed for the call: the price table's key under the provider.
    pub model: String,
    pub content: String,
    /// Citation URLs as given; `[n]` in the content refers to the n-th.
    pub citations: Vec<String>,
    /// Search results; `[n]` refers to the one whose `id` is n (or, without ids, the n-th).
    pub search_results: Vec<SearchHit>,
    /// URLs the upstream attached to spans of the text (`url_citation`); they back no `[n]`.
    pub annotations: Vec<SearchHit>,
    pub images: Vec<String>,
    pub usage: Usage,
    /// The upstream's id for the call, for support tickets.
    pub upstream_id: Option<String>,
    /// Parts of the response that did not match the expected schema and were skipped.
    pub schema_errors: Vec<String>,
    /// Why the upstream stopped before finishing (e.g. `max_output_tokens`): the text is cut short.
    pub incomplete: Option<String>,
}

/// Why one attempt failed. Messages never contain credentials.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum ProviderError {
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    /// The request's time budget ran out before the upstream answered (not retried).
    #[error("the request's time budget ran out before the upstream answered")]
    OutOfTime,
    #[error("network error: {0}")]
    Network(String),
    #[error("rate limited (HTTP 429)")]
    RateLimited { retry_after: Option<Duration> },
    #[error("upstream failed with HTTP {status}")]
    Unavailable { status: u16, retry_after: Option<Duration> },
    #[error("upstream rejected the API key (HTTP {status})")]
    Unauthorized { status: u16 },
    #[error("upstream plan or spend limit reached (HTTP {status}): {message}")]
    LimitReached { status: u16, message: String },
    #[error("upstream refused the request with HTTP {status}: {message}")]
    Refused { status: u16, message: String },
    #[error("malformed response: {0}")]
    Malformed(String),
    /// The upstream answered HTTP 200 but its run ended `failed` or `cancelled`.
    #[error("upstream run {status}: {message}")]
    RunFailed { status: String, message: String },
    /// An in-process model could not run (its file missing or broken); not retried.
    #[error("{0}")]
    Local(String),
}

impl Retryable for ProviderError {
    fn retry_after(&self) -> Option<Option<Duration>> {
        match self {
            Self::Timeout(_) | Self::Network(_) | Self::RunFailed { .. } => Some(None),
            Self::RateLimited { retry_after } | Self::Unavailable { retry_after, .. } => Some(*retry_after),
            Self::Unauthorized { .. }
            | Self::LimitReached { .. }
            | Self::Refused { .. }
            | Self::Malformed(_)
            | Self::OutOfTime
            | Self::Local(_) => None,
        }
    }
}

impl From<crate::retry::OutOfTime> for ProviderError {
    fn from(_: crate::retry::OutOfTime) -> Self {
        Self::OutOfTime
    }
}

impl ProviderError {
    /// Whether the upstream may have billed a call that ended this way: it was cut off while
    /// the upstream was still working on it.
    pub fn maybe_billed(&self) -> bool {
        matches!(self, Self::Timeout(_) | Self::OutOfTime)
    }

    /// Whether the failure says something about the upstream's health. A refusal of this
    /// request's body (HTTP 400 or 422: a field, a filter, this caller's input) does not, so it
    /// must not open the circuit for every other request; a 404 (a wrong base URL) does.
    pub fn counts_against_upstream(&self) -> bool {
        !matches!(self, Self::Refused { status: 400 | 422, .. })
    }
}

/// A web search upstream.
#[async_trait]
pub trait SearchProvider: Send + Sync {
    /// Short lowercase name: `perplexity`, `tavily`, ... (used in responses and cost records).
    fn name(&self) -> &'static str;
    /// Whether this provider can answer requests of `kind` (all, unless it says otherwise).
    fn supports(&self, _kind: &Kind) -> bool {
        true
    }
    /// Answers `query` in one attempt.
    async fn answer(&self, query: &Query) -> Result<Answer, ProviderError>;
}
