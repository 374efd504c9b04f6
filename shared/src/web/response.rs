//! What `POST /search` and its methods answer ([`SearchResponse`], seed 000's shape plus our
//! provenance fields) and what the call cost ([`UsageReport`]).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::costs::ledger::{CostRecord, CostSource};
use crate::web::citations::{Rejected, Source};

/// Tokens and cost of this request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageReport {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Billing credits (Tavily); omitted when zero.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub credits: u32,
    /// Web searches the upstream ran (Perplexity); omitted when zero.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub searches: u32,
    pub cost_usd: f64,
    pub cost_source: CostSource,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The answer to one search request (the HTTP response body of the `search` routes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchResponse {
    pub request_id: String,
    /// `search`, `competitors`, `trends` or `topic`.
    pub method: String,
    /// The upstream that answered, or `mock`.
    pub provider: String,
    pub model: String,
    pub cached: bool,
    pub mock: bool,
    /// Where the data comes from: the provider's name, or `模擬資料` for mock data.
    pub data_source: String,
    /// Why mock data was served, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_reason: Option<String>,
    pub content: String,
    /// The cleaned citation URLs, in order (seed 000's `citations`).
    pub citations: Vec<String>,
    pub images: Vec<String>,
    pub sources: Vec<Source>,
    /// Seed 000's `## 參考資料` block.
    pub references: String,
    /// Inline `[n]` markers that no source backs.
    pub unbacked_markers: Vec<u32>,
    pub rejected_citations: Vec<Rejected>,
    /// True when parts of the upstream response failed validation and were left out, or the
    /// upstream stopped before finishing (`incompleteReason`).
    pub partial: bool,
    /// Why the upstream stopped early (e.g. `max_output_tokens`); such answers are not cached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete_reason: Option<String>,
    pub validation_errors: Vec<String>,
    pub usage: UsageReport,
    /// False only if the sources could not be stored (the store was down); they are logged.
    pub sources_stored: bool,
    /// The structured fields of `competitors`, `trends` and `topic` (seed 000 names).
    #[serde(flatten)]
    pub data: Map<String, Value>,
}

impl From<&CostRecord> for UsageReport {
    fn from(c: &CostRecord) -> Self {
        Self {
            input_tokens: c.input_tokens,
            output_tokens: c.output_tokens,
            credits: c.credits,
            searches: c.searches,
            cost_usd: c.cost_usd,
            cost_source: c.cost_source,
        }
    }
}
