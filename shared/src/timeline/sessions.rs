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

/// Claims the one run of session `id`; false if it was already started.
pub async fn claim_run(records: &dyn RecordStore, id: &str, now: DateTime<Utc>) -> Result<bool> {
    let record = Record {
        pk: partition(id),
        sk: "STREAM".into(),
        expires_at: expires(now),
        body: json!({"startedAt": crate::core::time::format(&now)}),
    };
    records.put_new(&record, now.timestamp()).await
}

/// When the run of session `id` started, if it did.
pub async fn started(records: &dyn RecordStore, id: &str, now: DateTime<Utc>) -> Result<Option<DateTime<Utc>>> {
    let record = records.get(&partition(id), "STREAM", now.timestamp()).await?;
    Ok(record.and_then(|r| r.body["startedAt"].as_str().and_then(|t| t.parse().ok())))
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

    /// The event in `text/event-stream` form, with its `id`.
    pub fn to_sse(&self) -> String {
        format!("id: {}\nevent: {}\ndata: {}\n\n", self.seq, self.name, self.data)
    }
}

fn event_key(seq: u32) -> String {
    format!("E#{seq:06}")
}

/// Stores `event` as the `seq`th of session `id`'s run.
pub async fn log(records: &dyn RecordStore, id: &str, seq: u32, event: &Event, now: DateTime<Utc>) -> Result<()> {
    records
        .put(&Record {
            pk: partition(id),
            sk: event_key(seq),
            expires_at: expires(now),
            body: json!({"event": event.name(), "data": event.data()}),
        })
        .await
}

/// The stored events of session `id` after the `after`th, in order.
pub async fn events_after(records: &dyn RecordStore, id: &str, after: u32, now: DateTime<Utc>) -> Result<Vec<Logged>> {
    let rows = records.query(&partition(id), &event_key(after.saturating_add(1)), "E#~", now.timestamp()).await?;
    let mut logged: Vec<Logged> = rows
        .into_iter()
        .filter_map(|r| {
            Some(Logged {
                seq: r.sk.strip_prefix("E#")?.parse().ok()?,
                name: r.body["event"].as_str()?.to_owned(),
                data: r.body["data"].clone(),
            })
        })
        .collect();
    logged.sort_by_key(|l| l.seq);
    Ok(logged)
}

/// Asks session `id`'s run to stop.
pub async fn cancel(records: &dyn RecordStore, id: &str, now: DateTime<Utc>) -> Result<()> {
    let body = json!({"at": crate::core::time::format(&now)});
    records.put(&Record { pk: partition(id), sk: "CANCEL".into(), expires_at: expires(now), body }).await
}

/// Whether session `id`'s run was asked to stop.
pub async fn cancelled(records: &dyn RecordStore, id: &str, now: DateTime<Utc>) -> Result<bool> {
    Ok(records.get(&partition(id), "CANCEL", now.timestamp()).await?.is_some())
}

/// Validates a session id from a path.
pub fn check_id(id: &str) -> Result<()> {
    if uuid::Uuid::parse_str(id).is_ok() { Ok(()) } else { Err(Error::NotFound(format!("no research session {id:?}"))) }
}
