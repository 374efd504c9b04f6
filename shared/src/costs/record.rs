//! A cost record: what one accounted call (search, LLM, embedding) cost, as the ledger writes
//! it and the report sums it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// How long cost records are kept.
pub const RETENTION_DAYS: i64 = 400;

/// Where `cost_usd` came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CostSource {
    /// The upstream reported it.
    Provider,
    /// Computed from the price table.
    PriceTable,
    /// Not in the price table: tokens are recorded, cost is zero until priced.
    Unpriced,
    /// No paid call was made (cache hit, mock answer).
    Free,
}

/// What kind of paid call a record accounts for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallKind {
    /// A web search provider (Perplexity, Tavily, the CLI).
    #[default]
    Search,
    /// A chat model.
    Llm,
    /// An embedding model.
    Embedding,
}

/// One accounted call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostRecord {
    pub request_id: String,
    pub agent: String,
    #[serde(default)]
    pub kind: CallKind,
    pub provider: String,
    pub model: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Billing credits of per-request upstreams (Tavily).
    #[serde(default)]
    pub credits: u32,
    /// Web searches the upstream ran for the call (Perplexity `search_web` invocations).
    #[serde(default)]
    pub searches: u32,
    pub cost_usd: f64,
    pub cost_source: CostSource,
    pub cached: bool,
    pub mock: bool,
    /// The upstream failed (no charge); used for availability.
    #[serde(default)]
    pub failed: bool,
    /// For a cache hit: what the call would have cost.
    #[serde(default)]
    pub saved_usd: f64,
    pub upstream_id: Option<String>,
    pub timestamp: DateTime<Utc>,
    /// Of a live search answer: its valid sources, the citations refused by validation and the
    /// inline `[n]` markers no source backs (summed per day: the report's citation quality).
    #[serde(default, skip_serializing_if = "Citations::is_empty")]
    pub citations: Citations,
}

/// How well a live search answer's citations held up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Citations {
    pub sources: u32,
    pub rejected: u32,
    pub unbacked_markers: u32,
}

impl Citations {
    /// The counts of `sources` kept, `rejected` citations and `unbacked_markers`.
    pub fn counted(sources: usize, rejected: usize, unbacked_markers: usize) -> Self {
        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        Self { sources: count(sources), rejected: count(rejected), unbacked_markers: count(unbacked_markers) }
    }

    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}
