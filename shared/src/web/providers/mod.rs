//! The search-provider port: one question in, one answer with its raw citations out.
//!
//! An adapter makes a single attempt and classifies its failure ([`ProviderError`]); retrying,
//! caching, citation cleaning and cost accounting happen once, in [`crate::web::search`], for every
//! provider. Seed 000's four methods are the four [`crate::web::query::Kind`]s of one call, so a
//! newer upstream API can replace an adapter without touching callers.

pub mod breaker;
pub mod mock;
pub mod perplexity;
pub mod tavily;

pub use breaker::Breaker;

use async_trait::async_trait;

use crate::core::upstream::{ProviderError, Usage};
use crate::web::citations::SearchHit;
use crate::web::query::{Kind, Query};

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

/// A web search upstream.
#[async_trait]
pub trait SearchProvider: Send + Sync {
    /// Short lowercase name: `perplexity`, `tavily`, ... (used in responses and cost records).
    fn name(&self) -> &'static str;
    /// Whether this provider can answer requests of `kind` (all, unless it says otherwise).
    fn supports(&self, _kind: &Kind) -> bool {
        true
    }
    /// The most one answer to `query` may use, and the price table's model for it: what the
    /// call holds against the agent's daily budget before it is made.
    fn worst_case(&self, query: &Query) -> (&'static str, Usage);
    /// Answers `query` in one attempt.
    async fn answer(&self, query: &Query) -> Result<Answer, ProviderError>;
}
