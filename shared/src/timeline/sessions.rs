//! Research sessions: a proposal stored for a day (TTL), streamed once.

use chrono::{DateTime, Duration, Utc};

use crate::core::error::{Error, Result};
use crate::core::records::{Record, RecordStore};
use crate::timeline::Proposal;

/// How long a session may wait for its stream.
pub const TTL_HOURS: i64 = 24;

fn partition(id: &str) -> String {
    format!("SESSION#{id}")
}

/// Stores `proposal` under a new session id.
pub async fn create(records: &dyn RecordStore, proposal: &Proposal, now: DateTime<Utc>) -> Result<String> {
    let id = uuid::Uuid::new_v4().to_string();
    records
        .put(&Record {
            pk: partition(&id),
            sk: "PROPOSAL".into(),
            expires_at: Some((now + Duration::hours(TTL_HOURS)).timestamp()),
            body: serde_json::to_value(proposal).expect("proposals serialise"),
        })
        .await?;
    Ok(id)
}

/// The live proposal of session `id`.
pub async fn load(records: &dyn RecordStore, id: &str, now: DateTime<Utc>) -> Result<Option<Proposal>> {
    let record = records.get(&partition(id), "PROPOSAL", now.timestamp()).await?;
    Ok(record.and_then(|r| serde_json::from_value(r.body).ok()))
}

/// Claims the one stream of session `id`; false if it was already streamed.
pub async fn claim_stream(records: &dyn RecordStore, id: &str, now: DateTime<Utc>) -> Result<bool> {
    let record = Record {
        pk: partition(id),
        sk: "STREAM".into(),
        expires_at: Some((now + Duration::hours(TTL_HOURS)).timestamp()),
        body: serde_json::json!({"startedAt": crate::core::time::format(&now)}),
    };
    records.put_new(&record, now.timestamp()).await
}

/// Validates a session id from a path.
pub fn check_id(id: &str) -> Result<()> {
    if uuid::Uuid::parse_str(id).is_ok() { Ok(()) } else { Err(Error::NotFound(format!("no research session {id:?}"))) }
}
