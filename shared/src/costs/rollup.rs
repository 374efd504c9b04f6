//! Daily rollups of the cost ledger: a day's cost records summed per (agent, kind, provider,
//! model), so a report over 90 days reads about 90 items and holds only sums, however many
//! calls were made.
//!
//! A report computes a day it covers whole, once the day has closed ([`CLOSED_AFTER`]), from
//! all that day's records (strongly consistent reads) and stores the sum (`COSTDAY` /
//! `<day>#sum`, kept as long as the records) for the next report; the daily digest does so for
//! yesterday. A day's sum is valid while
//! its revision (`<day>#rev`, a counter) is the one it was computed at: writing records into a
//! closed day (a replay from the logs, an import) bumps the revision ([`revise`]) after the
//! records are stored, so the next report recomputes the day. Bumping after writing, and reading
//! the revision before the records, means a sum can never be kept without a record it missed.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, NaiveDate, NaiveTime, TimeZone, Utc};
use serde::{Deserialize, Serialize};

use crate::core::error::Result;
use crate::core::records::{Record, RecordStore, TOTAL};
use crate::costs::record::{CallKind, CostRecord, RETENTION_DAYS};

/// The partition of the daily sums and their revisions.
pub const PARTITION: &str = "COSTDAY";

/// How long after midnight (UTC) a day counts as closed: every cost record is written within
/// seconds of its timestamp (or kept for replay, which bumps the revision).
pub const CLOSED_AFTER: Duration = Duration::minutes(3);

/// What a day's calls are summed by.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Key {
    pub agent: String,
    pub kind: CallKind,
    pub provider: String,
    pub model: String,
}

/// The sums of one [`Key`]'s calls on a day.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tally {
    /// Calls that did not fail, and their cost, tokens and savings.
    pub calls: u64,
    pub cost_usd: f64,
    pub cached_calls: u64,
    pub mock_calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub saved_usd: f64,
    /// Searches (not mock) answered live, answered from the cache (and what that saved), failed.
    pub live_searches: u64,
    pub cache_hits: u64,
    pub cache_saved_usd: f64,
    pub failed_searches: u64,
    /// Of live search answers: valid sources, refused citations, unbacked `[n]` markers.
    #[serde(default)]
    pub sources: u64,
    #[serde(default)]
    pub rejected_citations: u64,
    #[serde(default)]
    pub unbacked_markers: u64,
}

/// One day's sums.
#[derive(Debug, Clone, PartialEq)]
pub struct Day {
    pub day: NaiveDate,
    pub tallies: BTreeMap<Key, Tally>,
}

/// A stored line of a [`Day`].
#[derive(Serialize, Deserialize)]
struct Line {
    #[serde(flatten)]
    key: Key,
    #[serde(flatten)]
    tally: Tally,
}

/// A stored [`Day`] and the revision it was computed at.
#[derive(Serialize, Deserialize)]
struct Stored {
    revision: i64,
    lines: Vec<Line>,
}

fn format(day: NaiveDate) -> String {
    day.format("%Y-%m-%d").to_string()
}

/// The first instant of `day`.
pub fn start(day: NaiveDate) -> DateTime<Utc> {
    Utc.from_utc_datetime(&day.and_time(NaiveTime::MIN))
}

impl Day {
    /// A day with no calls.
    pub fn new(day: NaiveDate) -> Self {
        Self { day, tallies: BTreeMap::new() }
    }

    /// Adds one cost record (of this day) to the sums.
    pub fn add(&mut self, r: &CostRecord) {
        let key = Key { agent: r.agent.clone(), kind: r.kind, provider: r.provider.clone(), model: r.model.clone() };
        let t = self.tallies.entry(key).or_default();
        if r.kind == CallKind::Search && !r.mock {
            match (r.failed, r.cached) {
                (true, _) => t.failed_searches += 1,
                (false, false) => t.live_searches += 1,
                (false, true) => {
                    t.cache_hits += 1;
                    t.cache_saved_usd += r.saved_usd;
                }
            }
        }
        if r.failed {
            return;
        }
        t.sources += u64::from(r.citations.sources);
        t.rejected_citations += u64::from(r.citations.rejected);
        t.unbacked_markers += u64::from(r.citations.unbacked_markers);
        t.calls += 1;
        t.cost_usd += r.cost_usd;
        t.cached_calls += u64::from(r.cached);
        t.mock_calls += u64::from(r.mock);
        t.input_tokens += r.input_tokens;
        t.output_tokens += r.output_tokens;
        t.saved_usd += r.saved_usd;
    }

    /// The sums of `records`, all of `day`.
    pub fn of<'a>(day: NaiveDate, records: impl IntoIterator<Item = &'a CostRecord>) -> Self {
        let mut d = Self::new(day);
        for r in records {
            d.add(r);
        }
        d
    }

    /// Whether the day has closed at `now`: no record of it is still being written.
    pub fn closed(day: NaiveDate, now: DateTime<Utc>) -> bool {
        day.succ_opt().is_some_and(|next| start(next) + CLOSED_AFTER <= now)
    }
}

/// The stored sums of `first..=last` that are still valid (their revision is the day's), by day,
/// and every day's revision (0 when never revised): one read of at most two items a day.
pub async fn stored(
    store: &dyn RecordStore,
    first: NaiveDate,
    last: NaiveDate,
    now: i64,
) -> Result<(BTreeMap<NaiveDate, Day>, BTreeMap<NaiveDate, i64>)> {
    let items = store.query(PARTITION, &format(first), &format!("{}~", format(last)), now).await?;
    let (mut sums, mut revisions) = (BTreeMap::new(), BTreeMap::new());
    for item in items {
        let Some((day, what)) = item.sk.split_once('#') else { continue };
        let Ok(day) = NaiveDate::parse_from_str(day, "%Y-%m-%d") else { continue };
        match what {
            "rev" => {
                revisions.insert(day, item.body.get(TOTAL).and_then(serde_json::Value::as_i64).unwrap_or(0));
            }
            "sum" => match serde_json::from_value::<Stored>(item.body) {
                Ok(s) => {
                    let tallies = s.lines.into_iter().map(|l| (l.key, l.tally)).collect();
                    sums.insert(day, (s.revision, Day { day, tallies }));
                }
                Err(e) => tracing::warn!(day = %day, error = %e, "unreadable cost rollup; recomputed"),
            },
            _ => {}
        }
    }
    let valid = sums
        .into_iter()
        .filter(|(day, (revision, _))| *revision == revisions.get(day).copied().unwrap_or(0))
        .map(|(day, (_, sums))| (day, sums))
        .collect();
    Ok((valid, revisions))
}

/// Stores `day`'s sums as computed at `revision` (read before its records were).
pub async fn store(records: &dyn RecordStore, day: &Day, revision: i64) -> Result<()> {
    let lines = day.tallies.iter().map(|(key, tally)| Line { key: key.clone(), tally: tally.clone() }).collect();
    let body = serde_json::to_value(Stored { revision, lines }).expect("a rollup serialises");
    records
        .put(&Record {
            pk: PARTITION.into(),
            sk: format!("{}#sum", format(day.day)),
            expires_at: Some(expiry(day.day)),
            body,
        })
        .await
}

/// Marks `day`'s stored sums stale: call after writing records into a closed day.
pub async fn revise(records: &dyn RecordStore, day: NaiveDate) -> Result<()> {
    records.add(PARTITION, &format!("{}#rev", format(day)), 1, None, expiry(day)).await.map(|_| ())
}

/// When `day`'s sums expire (epoch seconds): kept as long as the day's cost records.
pub fn expiry(day: NaiveDate) -> i64 {
    (start(day) + Duration::days(RETENTION_DAYS + 1)).timestamp()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::costs::record::CostSource;

    fn record(agent: &str, kind: CallKind, cached: bool, failed: bool, cost: f64) -> CostRecord {
        CostRecord {
            request_id: "r".into(),
            agent: agent.into(),
            kind,
            provider: "perplexity".into(),
            model: "sonar".into(),
            input_tokens: 10,
            output_tokens: 5,
            credits: 0,
            searches: 0,
            cost_usd: cost,
            cost_source: CostSource::PriceTable,
            cached,
            mock: false,
            failed,
            saved_usd: if cached { 0.005 } else { 0.0 },
            upstream_id: None,
            timestamp: Utc::now(),
            citations: Default::default(),
        }
    }

    #[test]
    fn a_day_sums_answered_calls_and_counts_searches_by_outcome() {
        let day = Utc::now().date_naive();
        let d = Day::of(
            day,
            &[
                record("research", CallKind::Search, false, false, 0.01),
                record("research", CallKind::Search, true, false, 0.0),
                record("research", CallKind::Search, false, true, 0.0),
                record("research", CallKind::Search, false, false, 0.02),
            ],
        );
        let t = d.tallies.values().next().unwrap();
        assert_eq!(d.tallies.len(), 1);
        assert_eq!((t.calls, t.live_searches, t.cache_hits, t.failed_searches, t.cached_calls), (3, 2, 1, 1, 1));
        assert!((t.cost_usd - 0.03).abs() < 1e-12 && (t.cache_saved_usd - 0.005).abs() < 1e-12);
        assert_eq!((t.input_tokens, t.output_tokens), (30, 15), "a failed call's tokens are not counted");
    }

    #[test]
    fn a_day_sums_the_citation_quality_of_its_live_answers() {
        use crate::costs::record::Citations;
        let day = Utc::now().date_naive();
        let cited = |sources, rejected, unbacked_markers| CostRecord {
            citations: Citations { sources, rejected, unbacked_markers },
            ..record("research", CallKind::Search, false, false, 0.01)
        };
        let d = Day::of(day, &[cited(4, 1, 0), cited(2, 0, 3), record("research", CallKind::Search, true, false, 0.0)]);
        let t = d.tallies.values().next().unwrap();
        assert_eq!((t.sources, t.rejected_citations, t.unbacked_markers), (6, 1, 3));
        // A stored sum from before these counts reads them as zero.
        let old: Tally = serde_json::from_value(serde_json::json!({"calls": 1, "costUsd": 0.1, "cachedCalls": 0,
            "mockCalls": 0, "inputTokens": 1, "outputTokens": 1, "savedUsd": 0.0, "liveSearches": 1, "cacheHits": 0,
            "cacheSavedUsd": 0.0, "failedSearches": 0}))
        .unwrap();
        assert_eq!((old.calls, old.sources), (1, 0));
    }

    #[test]
    fn a_day_closes_a_few_minutes_after_midnight() {
        let day = NaiveDate::from_ymd_opt(2026, 11, 23).unwrap();
        let midnight = start(day.succ_opt().unwrap());
        assert!(!Day::closed(day, midnight));
        assert!(!Day::closed(day, midnight + CLOSED_AFTER - Duration::seconds(1)));
        assert!(Day::closed(day, midnight + CLOSED_AFTER));
    }
}
