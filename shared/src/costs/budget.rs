//! Daily spend caps per agent (`BUDGETS`), held across containers in the record store.
//!
//! Before a paid call, its worst case is held against the agent's spend of the UTC day with one
//! conditional add ([`RecordStore::add`]): a hold is admitted while the day's total is under the
//! cap, so at most one call crosses the line, by at most its own worst case. After the call the
//! hold is settled to what the call cost. A call whose worst case is free (the bundled
//! embedder, a model priced at 0) holds nothing and never touches the store.
//!
//! Budgets fail closed: when the store does not answer within [`Budgets`]' bound, a container
//! spends from a small allowance of its own (`BUDGET_OUTAGE_ALLOWANCE_USD`), then refuses.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use chrono::{DateTime, NaiveDate, Utc};

use crate::core::clock::Clock;
use crate::core::config::BudgetCaps;
use crate::core::error::{Error, Result};
use crate::core::metrics;
use crate::core::records::{RecordStore, TOTAL, bounded};

/// Micro-dollars: counters are integers, so concurrent adds never round.
fn micros(usd: f64) -> i64 {
    (usd.max(0.0) * 1e6).ceil() as i64
}

/// A worst case held against an agent's day; settle it with [`Budgets::settle`].
#[derive(Debug)]
#[must_use = "a hold is settled to the call's cost"]
pub struct Hold {
    agent: String,
    day: NaiveDate,
    micros: i64,
    /// Held in the store (false: free, or from the outage allowance).
    counted: bool,
}

impl Hold {
    /// A hold of nothing, for a call that costs nothing.
    pub fn free(agent: &str) -> Self {
        Self { agent: agent.to_owned(), day: NaiveDate::MIN, micros: 0, counted: false }
    }
}

/// Spend caps over a record store.
pub struct Budgets {
    caps: BudgetCaps,
    records: Arc<dyn RecordStore>,
    clock: Arc<dyn Clock>,
    /// How long a hold waits for the store before spending from the allowance.
    wait: Duration,
    /// What this container may still spend while the store does not answer, in micro-dollars.
    allowance: AtomicI64,
}

/// How long a day's counter is kept (the report reads spend from the cost records).
const KEEP_SECS: i64 = 3 * 86_400;

fn key(agent: &str, day: NaiveDate) -> (String, String) {
    (format!("BUDGET#{}#{agent}", day.format("%Y-%m-%d")), "spend".to_owned())
}

impl Budgets {
    /// `caps` over `records`; a hold waits `wait` for the store, then spends from
    /// `outage_allowance_usd` (this container's, for the whole outage).
    pub fn new(
        caps: BudgetCaps,
        records: Arc<dyn RecordStore>,
        clock: Arc<dyn Clock>,
        wait: Duration,
        outage_allowance_usd: f64,
    ) -> Self {
        Self { caps, records, clock, wait, allowance: AtomicI64::new(micros(outage_allowance_usd)) }
    }

    /// The daily cap of `agent` in USD.
    pub fn cap(&self, agent: &str) -> f64 {
        self.caps.of(agent)
    }

    /// Holds `worst_usd` against `agent`'s spend today; `Err(BudgetExceeded)` (429) when the
    /// day's budget is spent, or the store is unreachable and the allowance too.
    pub async fn hold(&self, agent: &str, worst_usd: f64) -> Result<Hold> {
        let worst = micros(worst_usd);
        if worst == 0 {
            return Ok(Hold::free(agent));
        }
        let now = self.clock.now();
        let cap_usd = self.caps.of(agent);
        let cap = micros(cap_usd);
        let refused = || Error::BudgetExceeded {
            message: format!(
                "agent {agent:?} has spent its budget of ${cap_usd} for today (UTC); it renews at midnight UTC"
            ),
            retry_after_secs: crate::core::time::seconds_to_midnight(now),
        };
        if cap == 0 {
            return Err(refused());
        }
        let day = now.date_naive();
        let (pk, sk) = key(agent, day);
        let expires = now.timestamp() + KEEP_SECS;
        match bounded(self.wait, "the budget store", self.records.add(&pk, &sk, worst, Some(cap), expires)).await {
            Ok(Some(total)) => {
                emit_used(agent, total, cap, now);
                Ok(Hold { agent: agent.to_owned(), day, micros: worst, counted: true })
            }
            Ok(None) => {
                tracing::warn!(agent, cap_usd, "daily budget spent: paid call refused");
                emit_used(agent, cap, cap, now);
                Err(refused())
            }
            Err(e) => self.take_allowance(agent, worst, &e.to_string()).map_err(|()| refused()),
        }
    }

    /// The outage path: this container's allowance pays, while it lasts.
    fn take_allowance(&self, agent: &str, worst: i64, why: &str) -> std::result::Result<Hold, ()> {
        let taken = self
            .allowance
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| (left >= worst).then_some(left - worst));
        match taken {
            Ok(left) => {
                tracing::warn!(
                    agent,
                    why,
                    allowance_left_usd = (left - worst) as f64 / 1e6,
                    "budget store unavailable: paid call allowed from this container's outage allowance"
                );
                Ok(Hold { agent: agent.to_owned(), day: NaiveDate::MIN, micros: worst, counted: false })
            }
            Err(_) => {
                tracing::error!(
                    agent,
                    why,
                    "budget store unavailable and the outage allowance is spent: paid call refused"
                );
                Err(())
            }
        }
    }

    /// Keeps `hold` as it is: the call may have cost its worst case.
    pub fn keep(&self, hold: Hold) {
        if hold.counted {
            tracing::info!(
                agent = hold.agent,
                held_usd = hold.micros as f64 / 1e6,
                "budget hold kept at its worst case"
            );
        }
    }

    /// Settles `hold` to `cost_usd`, what the call cost (0 if it failed). A hold of nothing
    /// that turns out to have cost something (an upstream's reported cost) adds it. Never
    /// fails: a settlement the store refuses leaves the hold counted (the budget errs closed).
    pub async fn settle(&self, hold: Hold, cost_usd: f64) {
        let now = self.clock.now();
        let (day, held) = match (hold.counted, hold.micros) {
            (true, held) => (hold.day, held),
            (false, 0) if cost_usd > 0.0 => (now.date_naive(), 0),
            (false, _) => return,
        };
        let delta = micros(cost_usd) - held;
        if delta == 0 {
            return;
        }
        let (pk, sk) = key(&hold.agent, day);
        let expires = now.timestamp() + KEEP_SECS;
        if let Err(e) = bounded(self.wait, "the budget store", self.records.add(&pk, &sk, delta, None, expires)).await {
            tracing::warn!(agent = hold.agent, delta, error = %e, "budget hold not settled; it stays counted");
        }
    }

    /// What `agent` has spent (and holds) on `day`, in USD.
    pub async fn spent(&self, agent: &str, day: NaiveDate) -> Result<f64> {
        let (pk, sk) = key(agent, day);
        let record = self.records.get(&pk, &sk, self.clock.now().timestamp()).await?;
        Ok(record.and_then(|r| r.body[TOTAL].as_i64()).unwrap_or(0) as f64 / 1e6)
    }
}

/// `BudgetUsedPercent` per agent, and without dimensions for the template's alarm at 80 %.
fn emit_used(agent: &str, total: i64, cap: i64, now: DateTime<Utc>) {
    let used = total as f64 * 100.0 / cap.max(1) as f64;
    let metric = [("BudgetUsedPercent", "Percent", used)];
    metrics::emit(&metrics::render(&[("Agent", agent)], &metric, now.timestamp_millis()));
    metrics::emit(&metrics::render(&[], &metric, now.timestamp_millis()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worst_cases_are_whole_micro_dollars_rounded_up() {
        assert_eq!((micros(0.0), micros(0.0000001), micros(0.08), micros(-1.0)), (0, 1, 80_000, 0));
    }
}
