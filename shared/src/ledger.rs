//! The cost ledger: one record per upstream call, cache hit or mock answer, kept for 400 days
//! and queryable by time range (partition per UTC day, sort key by time).
//!
//! Writing never fails the request that paid for the call: a store error is retried, then
//! logged with the whole record so it can be replayed from the logs.

use std::sync::Arc;

use chrono::{DateTime, Duration, NaiveDate, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::records::{Record, RecordStore};
use crate::retry::{RetryPolicy, with_backoff};

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

/// One accounted call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostRecord {
    pub request_id: String,
    pub agent: String,
    pub provider: String,
    pub model: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Billing credits of per-request upstreams (Tavily).
    #[serde(default)]
    pub credits: u32,
    pub cost_usd: f64,
    pub cost_source: CostSource,
    pub cached: bool,
    pub mock: bool,
    /// For a cache hit: what the call would have cost.
    #[serde(default)]
    pub saved_usd: f64,
    pub upstream_id: Option<String>,
    pub timestamp: DateTime<Utc>,
}

/// Writes and reads cost records.
#[derive(Clone)]
pub struct Ledger {
    records: Arc<dyn RecordStore>,
    retry: RetryPolicy,
}

fn day_key(day: NaiveDate) -> String {
    format!("COST#{}", day.format("%Y-%m-%d"))
}

impl Ledger {
    /// A ledger writing through `records`, retrying failed writes under `retry`.
    pub fn new(records: Arc<dyn RecordStore>, retry: RetryPolicy) -> Self {
        Self { records, retry }
    }

    /// Records `cost`. Never fails: when the retries are spent the record is logged as an error.
    pub async fn record(&self, cost: &CostRecord) {
        let record = Record {
            pk: day_key(cost.timestamp.date_naive()),
            sk: format!(
                "{}#{}#{}",
                cost.timestamp.to_rfc3339_opts(SecondsFormat::Micros, true),
                cost.request_id,
                cost.provider
            ),
            expires_at: Some((cost.timestamp + Duration::days(RETENTION_DAYS)).timestamp()),
            body: serde_json::to_value(cost).expect("a cost record serialises"),
        };
        if let Err(e) = with_backoff(self.retry, "ledger", |_| self.records.put(&record)).await {
            tracing::error!(error = %e, cost = %record.body, "cost record not stored; replay from this log line");
        }
    }

    /// Cost records with `from <= timestamp <= to`, oldest first. Reads one partition per day.
    pub async fn between(&self, from: DateTime<Utc>, to: DateTime<Utc>, now: DateTime<Utc>) -> Result<Vec<CostRecord>> {
        let mut out = Vec::new();
        let mut day = from.date_naive();
        let (lo, hi) = (
            from.to_rfc3339_opts(SecondsFormat::Micros, true),
            // Sort keys are `<timestamp>#<request>#<provider>`: `~` sorts after every suffix.
            format!("{}~", to.to_rfc3339_opts(SecondsFormat::Micros, true)),
        );
        while day <= to.date_naive() {
            for r in self.records.query(&day_key(day), &lo, &hi, now.timestamp()).await? {
                if let Ok(cost) = serde_json::from_value::<CostRecord>(r.body) {
                    out.push(cost);
                }
            }
            day = day.succ_opt().expect("date in range");
        }
        Ok(out)
    }
}
