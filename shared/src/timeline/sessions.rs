//! Research sessions, kept for a day (TTL): the proposal and who owns it, the claim that starts
//! its one run, the run's events in order (each with its place, 1, 2, ...), and a request to
//! cancel it. Readers replay the stored events after the last one they saw and follow the rest
//! as they are stored: the run does not depend on any connection.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::core::error::{Error, Result};
use crate::core::records::{Record, RecordStore};
use crate::timeline::{Event, Proposal};

/// How long a session and its events are kept.
pub const TTL_HOURS: i64 = 24;

fn partition(id: &str) -> String {
    format!("SESSION#{id}")
}

fn expires(now: DateTime<Utc>) -> Option<i64> {
    Some((now + Duration::hours(TTL_HOURS)).timestamp())
}

/// A proposal as stored, with its owner (the caller that created it).
#[derive(Serialize, Deserialize)]
struct Stored {
    #[serde(flatten)]
    proposal: Proposal,
    #[serde(default)]
    owner: String,
}

/// Stores `proposal` of `owner` under a new session id.
pub async fn create(records: &dyn RecordStore, proposal: &Proposal, owner: &str, now: DateTime<Utc>) -> Result<String> {
    let id = uuid::Uuid::new_v4().to_string();
    let stored = Stored { proposal: proposal.clone(), owner: owner.to_owned() };
    records
        .put(&Record {
            pk: partition(&id),
            sk: "PROPOSAL".into(),
            expires_at: expires(now),
            body: serde_json::to_value(stored).expect("proposals serialise"),
        })
        .await?;
    Ok(id)
}

/// The live proposal of session `id`, if `owner` owns it (another caller finds nothing).
pub async fn load(records: &dyn RecordStore, id: &str, owner: &str, now: DateTime<Utc>) -> Result<Proposal> {
    let record = records.get(&partition(id), "PROPOSAL", now.timestamp()).await?;
    match record.and_then(|r| serde_json::from_value::<Stored>(r.body).ok()) {
        Some(stored) if stored.owner == owner => Ok(stored.proposal),
        _ => Err(Error::NotFound(format!("no research session {id} (unknown or expired)"))),
    }
}

/// Claims the one run of session `id`, which must end within `limit`; false if it was already
/// started.
pub async fn claim_run(
    records: &dyn RecordStore,
    id: &str,
    limit: std::time::Duration,
    now: DateTime<Utc>,
) -> Result<bool> {
    let deadline = now + Duration::from_std(limit).unwrap_or(Duration::hours(TTL_HOURS));
    let record = Record {
        pk: partition(id),
        sk: "STREAM".into(),
        expires_at: expires(now),
        body: json!({"startedAt": crate::core::time::format(&now), "deadline": crate::core::time::format(&deadline)}),
    };
    records.put_new(&record, now.timestamp()).await
}

/// The deadline of session `id`'s run, if it started.
pub async fn deadline(records: &dyn RecordStore, id: &str, now: DateTime<Utc>) -> Result<Option<DateTime<Utc>>> {
    let record = records.get(&partition(id), "STREAM", now.timestamp()).await?;
    Ok(record.map(|r| r.body["deadline"].as_str().and_then(|t| t.parse().ok()).unwrap_or(now)))
}

/// The last stored event of session `id`'s run.
pub async fn last(records: &dyn RecordStore, id: &str, now: DateTime<Utc>) -> Result<Option<Logged>> {
    let rows = records.latest(&partition(id), "E#", "E#~", 1, now.timestamp()).await?;
    Ok(rows.into_iter().next().and_then(logged))
}

/// Ends a run that is past its deadline by `grace` without an ending event (its container died,
/// or its claim's answer was lost): stores `error` after its last event, unless an event took
/// that place. The session's ending event, if it has one now.
pub async fn end_if_dead(
    records: &dyn RecordStore,
    id: &str,
    grace: std::time::Duration,
    now: DateTime<Utc>,
) -> Result<Option<Logged>> {
    let grace = Duration::from_std(grace).unwrap_or_default();
    let last = last(records, id, now).await?;
    if let Some(last) = last.as_ref().filter(|l| l.ends()) {
        return Ok(Some(last.clone()));
    }
    match deadline(records, id, now).await? {
        Some(deadline) if now > deadline + grace => {}
        _ => return Ok(None),
    }
    let seq = last.map_or(1, |l| l.seq + 1);
    let event = Event::Error { message: "The research stopped before it finished. Please start a new one.".into() };
    let record = event_record(id, seq, &event, now);
    records.put_new(&record, now.timestamp()).await?;
    tracing::warn!(session = id, seq, "a research run past its deadline was ended");
    Ok(Some(Logged { seq, name: event.name().into(), data: event.data() }))
}

/// One stored event of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Logged {
    /// Its place in the run: 1, 2, ... (the SSE `id`).
    pub seq: u32,
    pub name: String,
    pub data: Value,
}

impl Logged {
    /// Whether it ends the run (`complete`, `error`, `cancelled`).
    pub fn ends(&self) -> bool {
        matches!(self.name.as_str(), "complete" | "error" | "cancelled")
    }
}

fn event_key(seq: u32) -> String {
    format!("E#{seq:06}")
}

fn event_record(id: &str, seq: u32, event: &Event, now: DateTime<Utc>) -> Record {
    Record {
        pk: partition(id),
        sk: event_key(seq),
        expires_at: expires(now),
        body: json!({"event": event.name(), "data": event.data()}),
    }
}

fn logged(r: Record) -> Option<Logged> {
    Some(Logged {
        seq: r.sk.strip_prefix("E#")?.parse().ok()?,
        name: r.body["event"].as_str()?.to_owned(),
        data: r.body["data"].clone(),
    })
}

/// Stores `event` as the `seq`th of session `id`'s run (again, harmlessly, on a retry).
pub async fn log(records: &dyn RecordStore, id: &str, seq: u32, event: &Event, now: DateTime<Utc>) -> Result<()> {
    records.put(&event_record(id, seq, event, now)).await
}

/// The stored events of session `id` after the `after`th, in order.
pub async fn events_after(records: &dyn RecordStore, id: &str, after: u32, now: DateTime<Utc>) -> Result<Vec<Logged>> {
    let rows = records.query(&partition(id), &event_key(after.saturating_add(1)), "E#~", now.timestamp()).await?;
    let mut logged: Vec<Logged> = rows.into_iter().filter_map(logged).collect();
    logged.sort_by_key(|l| l.seq);
    Ok(logged)
}

/// Asks session `id`'s run to stop: the `CANCEL` record is written once (a read first, then a
/// write only if absent), so a repeated cancel reads and never rewrites it.
pub async fn cancel(records: &dyn RecordStore, id: &str, now: DateTime<Utc>) -> Result<()> {
    if cancelled(records, id, now).await? {
        return Ok(());
    }
    let body = json!({"at": crate::core::time::format(&now)});
    records
        .put_new(&Record { pk: partition(id), sk: "CANCEL".into(), expires_at: expires(now), body }, now.timestamp())
        .await?;
    Ok(())
}

/// Marks session `id` read now: a stream opened or still open, a status read. A run nobody
/// reads for `RESEARCH_ABANDON_AFTER_S` stops itself, unless it runs in the background.
pub async fn mark_read(records: &dyn RecordStore, id: &str, now: DateTime<Utc>) -> Result<()> {
    let body = json!({"at": now.timestamp()});
    records.put(&Record { pk: partition(id), sk: "READ".into(), expires_at: expires(now), body }).await
}

/// When session `id` was last read ([`mark_read`]).
pub async fn last_read(records: &dyn RecordStore, id: &str, now: DateTime<Utc>) -> Result<Option<DateTime<Utc>>> {
    let record = records.get(&partition(id), "READ", now.timestamp()).await?;
    Ok(record.and_then(|r| r.body["at"].as_i64()).and_then(|at| DateTime::from_timestamp(at, 0)))
}

/// Whether session `id`'s run was asked to stop.
pub async fn cancelled(records: &dyn RecordStore, id: &str, now: DateTime<Utc>) -> Result<bool> {
    Ok(records.get(&partition(id), "CANCEL", now.timestamp()).await?.is_some())
}

/// Validates a session id from a path.
pub fn check_id(id: &str) -> Result<()> {
    if uuid::Uuid::parse_str(id).is_ok() { Ok(()) } else { Err(Error::NotFound(format!("no research session {id:?}"))) }
}
