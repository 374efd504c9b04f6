//! The cost ledger: one record per paid call (search, LLM, embedding), cache hit, mock answer
//! or failed upstream, kept for 400 days and queryable by time range (a partition per UTC
//! day, sort key by time: a report reads only the days it covers, never the whole table).
//!
//! Writing never fails the request that paid for the call: a store error is retried, then
//! logged with the whole record so it can be replayed from the logs.

use std::sync::Arc;

use chrono::{DateTime, Duration, NaiveDate, SecondsFormat, Utc};

use crate::core::background;
use crate::core::clock::Clock;
use crate::core::error::Result;
use crate::core::records::{Record, RecordStore, replay};
use crate::core::retry::{RetryPolicy, with_backoff};
use crate::core::upstream::Usage;
use crate::costs::budget::{Budgets, Hold};
use crate::costs::pricing::PriceTable;
pub use crate::costs::record::{CallKind, Citations, CostRecord, CostSource, RETENTION_DAYS};
use crate::costs::rollup::{self, Day};

/// What a call to a model the price table does not know holds against its agent's budget.
pub const UNPRICED_WORST_USD: f64 = 0.05;

/// How a call ended, as the ledger needs to know it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The upstream answered (and billed).
    Live,
    /// Answered from the cache: free; `saved_usd` says what it would have cost.
    Cached,
    /// Labelled mock data: free.
    Mock,
    /// The upstream failed after its retries: free, and counts against its availability.
    Failed,
}

/// A call to account for.
#[derive(Debug, Clone)]
pub struct Charge<'a> {
    pub request_id: &'a str,
    pub agent: &'a str,
    pub kind: CallKind,
    pub provider: &'a str,
    /// The model or tier billed: the price table's key under the provider.
    pub model: &'a str,
    pub usage: &'a Usage,
    pub outcome: Outcome,
    pub saved_usd: f64,
    pub upstream_id: Option<String>,
}

/// The one path every paid call is accounted through: holds its worst case against the agent's
/// daily budget before the call, prices it after (the upstream's own figure wins over the price
/// table), writes it and settles the hold.
/// A paid call between its hold and its accounting. Dropped before [`InFlight::accounted`] (a
/// research cancelled, abandoned or cut by its function's deadline; a search past its bound), it
/// records the call as failed, on a task of its own since it may have been billed, and its
/// budget hold stays counted at the worst case.
#[must_use = "a call in flight is accounted, or recorded as failed when dropped"]
pub struct InFlight {
    ledger: Ledger,
    record: Option<CostRecord>,
}

impl InFlight {
    /// The call was accounted by its caller (its record written, or known not billed).
    pub fn accounted(mut self) {
        self.record = None;
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let Some(record) = self.record.take() else { return };
        tracing::warn!(
            agent = record.agent,
            provider = record.provider,
            request_id = record.request_id,
            "a paid call was dropped in flight: recorded as failed (it may have been billed)"
        );
        drop(self.ledger.start_record(&record));
    }
}

#[derive(Clone)]
pub struct Ledger {
    records: Arc<dyn RecordStore>,
    prices: Arc<PriceTable>,
    clock: Arc<dyn Clock>,
    retry: RetryPolicy,
    budgets: Option<Arc<Budgets>>,
    /// How long recording a cost may take before it goes to the replay log.
    write_time: std::time::Duration,
}

/// The record of `cost`. The sort key starts with the time (range queries) and ends with a
/// random id: one request may make several calls within the same microsecond (concurrent
/// detail agents), and none may overwrite another.
fn to_record(cost: &CostRecord) -> Record {
    keyed(cost, uuid::Uuid::new_v4())
}

/// The record of `cost` under `id` (its shard and the end of its sort key).
fn keyed(cost: &CostRecord, id: uuid::Uuid) -> Record {
    // The shard: spread evenly by the random id, so one busy day is SHARDS partitions.
    let shard = (id.as_u128() % u128::from(SHARDS)) as u32;
    Record {
        pk: shard_key(cost.timestamp.date_naive(), shard),
        sk: format!(
            "{}#{}#{}#{}",
            cost.timestamp.to_rfc3339_opts(SecondsFormat::Micros, true),
            cost.request_id,
            cost.provider,
            id.simple()
        ),
        expires_at: Some((cost.timestamp + Duration::days(RETENTION_DAYS)).timestamp()),
        body: serde_json::to_value(cost).expect("a cost record serialises"),
    }
}

/// Partitions a day's cost records are spread over (`COST#<day>#<0..SHARDS>`): at 1,000
/// searches a second a shard takes ~63 writes a second, far below a DynamoDB partition's 1,000.
pub const SHARDS: u32 = 16;

/// Partitions read at once by [`Ledger::between`].
const READ_CONCURRENCY: usize = 16;

fn shard_key(day: NaiveDate, shard: u32) -> String {
    format!("COST#{}#{shard}", day.format("%Y-%m-%d"))
}

/// The day of a cost record's partition key (`COST#<day>#<shard>`, or `COST#<day>` from before
/// the sharding).
pub fn day_of(pk: &str) -> Option<NaiveDate> {
    let rest = pk.strip_prefix("COST#")?;
    NaiveDate::parse_from_str(rest.split('#').next()?, "%Y-%m-%d").ok()
}

/// The partition of a day from before the sharding, still read so no history is lost.
fn legacy_day_key(day: NaiveDate) -> String {
    format!("COST#{}", day.format("%Y-%m-%d"))
}

impl Ledger {
    /// A ledger writing through `records`, pricing with `prices`, retrying failed writes
    /// under `retry`.
    pub fn new(
        records: Arc<dyn RecordStore>,
        prices: Arc<PriceTable>,
        clock: Arc<dyn Clock>,
        retry: RetryPolicy,
    ) -> Self {
        Self { records, prices, clock, retry, budgets: None, write_time: replay::WRITE_TIME }
    }

    /// The same ledger, recording within `time` (a route with a tight budget of its own);
    /// a record not stored by then is logged for replay.
    pub fn writing_within(mut self, time: std::time::Duration) -> Self {
        self.write_time = time;
        self
    }

    /// The same ledger, holding paid calls against `budgets`.
    pub fn with_budgets(mut self, budgets: Arc<Budgets>) -> Self {
        self.budgets = Some(budgets);
        self
    }

    /// The time now, as this ledger stamps records.
    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// The budgets calls are held against, if any.
    pub fn budgets(&self) -> Option<&Budgets> {
        self.budgets.as_deref()
    }

    /// Holds the worst case of a call to `provider`/`model` by `agent` (`ceiling`: the most
    /// it may use, priced by the table) against the agent's daily budget, before the call.
    /// `Err(BudgetExceeded)` when the budget is spent. A model the table does not price holds
    /// [`UNPRICED_WORST_USD`] (an upstream that reports its cost is still capped); only the
    /// in-process and mock models hold nothing.
    pub async fn hold(&self, agent: &str, provider: &str, model: &str, ceiling: &Usage) -> Result<Hold> {
        let Some(budgets) = &self.budgets else { return Ok(Hold::free(agent)) };
        let worst = match ceiling.provider_cost_usd.or_else(|| self.prices.cost(provider, model, ceiling)) {
            Some(usd) => usd,
            None if matches!(provider, "local" | "mock") => 0.0,
            None => {
                tracing::warn!(
                    provider,
                    model,
                    "no price for this model: its calls hold {UNPRICED_WORST_USD} USD each"
                );
                UNPRICED_WORST_USD
            }
        };
        budgets.hold(agent, worst).await
    }

    /// Settles `hold` to what `cost` says the call cost. A failed call that `may_have_cost`
    /// (`ProviderError::may_have_cost`: cut short, or answered but unusable), or one whose
    /// cost is unknown (unpriced), keeps its whole hold: the budget errs on the side of the
    /// wallet.
    pub async fn settle(&self, hold: Hold, cost: &CostRecord, may_have_cost: bool) {
        let Some(budgets) = &self.budgets else { return };
        if (cost.failed && may_have_cost) || cost.cost_source == CostSource::Unpriced {
            budgets.keep(hold);
        } else {
            budgets.settle(hold, cost.cost_usd).await;
        }
    }

    /// A paid call in flight, whose record should it be dropped before it is accounted is
    /// `failed` ([`InFlight`]).
    pub fn in_flight(&self, failed: &Charge<'_>) -> InFlight {
        InFlight { ledger: self.clone(), record: Some(self.bill(failed)) }
    }

    /// The cost record of `charge`, priced and stamped now (not yet written).
    pub fn bill(&self, c: &Charge<'_>) -> CostRecord {
        let u = c.usage;
        let (cost_usd, cost_source) = match c.outcome {
            Outcome::Cached | Outcome::Mock | Outcome::Failed => (0.0, CostSource::Free),
            Outcome::Live => match u.provider_cost_usd {
                Some(cost) => (cost, CostSource::Provider),
                None => match self.prices.cost(c.provider, c.model, u) {
                    Some(cost) => (cost, CostSource::PriceTable),
                    None => {
                        tracing::warn!(
                            provider = c.provider,
                            model = c.model,
                            "no price for this model; recorded at $0"
                        );
                        (0.0, CostSource::Unpriced)
                    }
                },
            },
        };
        CostRecord {
            request_id: c.request_id.to_owned(),
            agent: c.agent.to_owned(),
            kind: c.kind,
            provider: c.provider.to_owned(),
            model: c.model.to_owned(),
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            credits: u.credits,
            searches: u.searches,
            cost_usd,
            cost_source,
            cached: c.outcome == Outcome::Cached,
            mock: c.outcome == Outcome::Mock,
            failed: c.outcome == Outcome::Failed,
            saved_usd: c.saved_usd,
            upstream_id: c.upstream_id.clone(),
            timestamp: self.clock.now(),
            citations: Default::default(),
        }
    }

    /// Bills `charge` and records it; returns the record.
    pub async fn charge(&self, charge: &Charge<'_>) -> CostRecord {
        let record = self.bill(charge);
        self.record(&record).await;
        record
    }

    /// Records `cost`, within [`replay::WRITE_TIME`] (or [`Self::writing_within`]). Never
    /// fails: a record not stored in time is logged for replay. The write runs on a task of its
    /// own ([`background::spawn`]): a caller dropped meanwhile (a search past its bound, a
    /// research cancelled) does not lose what is owed.
    pub async fn record(&self, cost: &CostRecord) {
        // A write that ended without its own word (a panic) is logged here.
        if let Some((owed, task)) = self.start_record(cost)
            && let Err(e) = task.await
        {
            replay::log("cost record", &[owed], &e);
        }
    }

    /// Starts writing `cost` on a task of its own: the record and the task, or `None` when no
    /// runtime runs one (the record is then logged for replay).
    fn start_record(&self, cost: &CostRecord) -> Option<(Record, tokio::task::JoinHandle<()>)> {
        let record = to_record(cost);
        let (records, time, owed) = (Arc::clone(&self.records), self.write_time, record.clone());
        let write = async move {
            replay::keep("cost record", std::slice::from_ref(&record), time, |_| records.put(&record)).await;
        };
        match background::spawn(write) {
            Some(task) => Some((owed, task)),
            None => {
                replay::log("cost record", &[owed], &"no runtime to write it on");
                None
            }
        }
    }

    /// Records `cost` under `id` unless a record is already there (reported usage, idempotent
    /// by the client's id); whether it was written now. A record not stored in time is logged
    /// for replay and the error returned: the caller reports again.
    pub async fn record_once(&self, cost: &CostRecord, id: u128) -> Result<bool> {
        let record = keyed(cost, uuid::Uuid::from_u128(id));
        let now = self.clock.now().timestamp();
        if self.records.get(&record.pk, &record.sk, now).await?.is_some() {
            return Ok(false);
        }
        let records = std::slice::from_ref(&record);
        if replay::keep("cost record", records, self.write_time, |_| self.records.put(&record)).await {
            Ok(true)
        } else {
            Err(crate::core::error::Error::Store("the cost record could not be stored; report it again".into()))
        }
    }

    /// Records many cost records at once (imports); all or an error. The days they fall on
    /// are recomputed by the next report ([`rollup::revise`]), even when only some were written.
    pub async fn record_all(&self, costs: &[CostRecord]) -> Result<()> {
        let records: Vec<Record> = costs.iter().map(to_record).collect();
        let written = with_backoff(self.retry, "ledger", |_| self.records.put_all(&records)).await;
        let days: std::collections::BTreeSet<NaiveDate> = costs.iter().map(|c| c.timestamp.date_naive()).collect();
        for day in days {
            rollup::revise(&*self.records, day).await?;
        }
        written
    }

    /// Cost records with `from <= timestamp <= to`, oldest first. Reads the day's shards (and
    /// its pre-sharding partition) of each day in the period.
    pub async fn between(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<Vec<CostRecord>> {
        let (lo, hi) = bounds(from, to);
        let mut out = Vec::new();
        for day in days(from, to) {
            out.extend(self.read_day(day, &lo, &hi).await?);
        }
        Ok(out)
    }

    /// The period's calls summed by day, oldest first. A day the period covers whole and that
    /// has closed is read from its stored sums ([`rollup`]), or computed from all its records
    /// and stored for the next report; other days (today, a period's partial ends) are summed
    /// from their records in the period. [`DAYS_AT_ONCE`] days' records are held at a time.
    pub async fn days(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<Vec<Day>> {
        use futures::stream::{self, StreamExt, TryStreamExt};
        let now = self.clock.now();
        let (first, last) = (from.date_naive(), to.date_naive());
        // Revisions before records: a record written after this read bumps past it.
        let (stored, revisions) = rollup::stored(&*self.records, first, last, now.timestamp()).await?;
        let (lo, hi) = bounds(from, to);
        let (stored, revisions, lo, hi) = (&stored, &revisions, &lo, &hi);
        stream::iter(days(from, to))
            .map(|day| async move {
                if let Some(sums) = stored.get(&day) {
                    return Ok(sums.clone());
                }
                let whole = from <= rollup::start(day)
                    && day.succ_opt().is_some_and(|next| rollup::start(next) - Duration::milliseconds(1) <= to);
                if !whole {
                    return Ok(Day::of(day, &self.read_day(day, lo, hi).await?));
                }
                // Every record of the day, to its last microsecond (sort keys start with the day).
                let date = day.format("%Y-%m-%d").to_string();
                let sums = Day::of(day, &self.read_day(day, &date, &format!("{date}~")).await?);
                if Day::closed(day, now) && rollup::expiry(day) > now.timestamp() {
                    let revision = revisions.get(&day).copied().unwrap_or(0);
                    if let Err(e) = rollup::store(&*self.records, &sums, revision).await {
                        tracing::warn!(day = %day, error = %e, "cost rollup not stored; the next report recomputes it");
                    }
                }
                Ok(sums)
            })
            .buffered(DAYS_AT_ONCE)
            .try_collect()
            .await
    }

    /// `day`'s cost records with sort keys in `lo..=hi`, oldest first: its shards (and its
    /// pre-sharding partition), [`READ_CONCURRENCY`] at once.
    async fn read_day(&self, day: NaiveDate, lo: &str, hi: &str) -> Result<Vec<CostRecord>> {
        use futures::stream::{self, StreamExt, TryStreamExt};
        let now = self.clock.now().timestamp();
        let keys = std::iter::once(legacy_day_key(day)).chain((0..SHARDS).map(|shard| shard_key(day, shard)));
        let pages: Vec<Vec<Record>> = stream::iter(keys)
            .map(|pk| async move { self.records.query(&pk, lo, hi, now).await })
            .buffered(READ_CONCURRENCY)
            .try_collect()
            .await?;
        let mut out: Vec<(String, CostRecord)> = pages
            .into_iter()
            .flatten()
            .filter_map(|r| Some((r.sk, serde_json::from_value::<CostRecord>(r.body).ok()?)))
            .collect();
        // The sort key starts with the timestamp: merging the shards is a sort on it.
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out.into_iter().map(|(_, c)| c).collect())
    }
}

/// The sort-key bounds of records with `from <= timestamp <= to`: sort keys are
/// `<timestamp>#<request>#<provider>#<id>`, and `~` sorts after every suffix.
fn bounds(from: DateTime<Utc>, to: DateTime<Utc>) -> (String, String) {
    let stamp = |t: DateTime<Utc>| t.to_rfc3339_opts(SecondsFormat::Micros, true);
    (stamp(from), format!("{}~", stamp(to)))
}

/// Days [`Ledger::days`] computes at once.
const DAYS_AT_ONCE: usize = 4;

/// The days `from..=to` touches.
fn days(from: DateTime<Utc>, to: DateTime<Utc>) -> impl Iterator<Item = NaiveDate> {
    let last = to.date_naive();
    std::iter::successors(Some(from.date_naive()), |d| d.succ_opt()).take_while(move |d| *d <= last)
}
