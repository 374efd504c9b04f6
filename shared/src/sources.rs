//! The source store: every citation a response carries, kept under its request id with no
//! expiry (seed 000: 引用來源必須 100% 儲存). A request with no sources still leaves a header
//! record, so "no sources" and "unknown request" stay distinguishable.

use chrono::{DateTime, Utc};
use serde_json::json;

use crate::citations::Source;
use crate::error::Result;
use crate::records::{Record, RecordStore};

const HEADER: &str = "#header";

fn partition(request_id: &str) -> String {
    format!("SOURCES#{request_id}")
}

/// Stores `sources` of `request_id` (all or an error; the store retries its own batches).
pub async fn store(records: &dyn RecordStore, request_id: &str, sources: &[Source], at: DateTime<Utc>) -> Result<()> {
    let pk = partition(request_id);
    let mut batch = vec![Record {
        pk: pk.clone(),
        sk: HEADER.into(),
        expires_at: None,
        body: json!({"count": sources.len(), "storedAt": crate::citations::rfc3339::format(&at)}),
    }];
    batch.extend(sources.iter().enumerate().map(|(i, s)| Record {
        pk: pk.clone(),
        sk: format!("{:05}", i + 1),
        expires_at: None,
        body: serde_json::to_value(s).expect("a source serialises"),
    }));
    records.put_all(&batch).await
}

/// The sources stored for `request_id`, in citation order; `None` if the request is unknown.
pub async fn list(records: &dyn RecordStore, request_id: &str, now: DateTime<Utc>) -> Result<Option<Vec<Source>>> {
    let rows = records.query(&partition(request_id), "#", "99999", now.timestamp()).await?;
    if !rows.iter().any(|r| r.sk == HEADER) {
        return Ok(None);
    }
    Ok(Some(rows.into_iter().filter(|r| r.sk != HEADER).filter_map(|r| serde_json::from_value(r.body).ok()).collect()))
}
