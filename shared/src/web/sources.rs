//! The source store: every citation a response carries, kept under its request id with no
//! expiry (seed 000: 引用來源必須 100% 儲存). A request with no sources still leaves a header
//! record, so "no sources" and "unknown request" stay distinguishable.
//!
//! Never half-stored: the sources are written first and the header, which holds their count,
//! last; a list without its header is absent, and a list whose rows do not match its header's
//! count is reported as a fault, never served short.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};

use crate::core::error::{Error, Result};
use crate::core::records::{Record, RecordStore, replay};
use crate::web::citations::{self, Source};

const HEADER: &str = "#header";

fn partition(request_id: &str) -> String {
    format!("SOURCES#{request_id}")
}

/// The records of `sources` of `request_id`: one per source, then the header.
fn rows(request_id: &str, sources: &[Source], at: DateTime<Utc>) -> Vec<Record> {
    let pk = partition(request_id);
    let mut rows: Vec<Record> = sources
        .iter()
        .enumerate()
        .map(|(i, s)| Record {
            pk: pk.clone(),
            sk: format!("{:05}", i + 1),
            expires_at: None,
            body: serde_json::to_value(s).expect("a source serialises"),
        })
        .collect();
    rows.push(Record {
        pk,
        sk: HEADER.into(),
        expires_at: None,
        body: json!({"count": sources.len(), "storedAt": crate::core::time::format(&at)}),
    });
    rows
}

/// Stores `rows` (see [`rows`]): the sources, then the header (all or an error).
async fn store(records: &dyn RecordStore, rows: &[Record]) -> Result<()> {
    let Some((header, sources)) = rows.split_last() else { return Ok(()) };
    if !sources.is_empty() {
        records.put_all(sources).await?;
    }
    records.put(header).await
}

/// [`store`] within [`replay::WRITE_TIME`]; whether the sources are stored. When they could not
/// be, they are logged for replay: never dropped.
pub async fn keep(records: &dyn RecordStore, request_id: &str, sources: &[Source], at: DateTime<Utc>) -> bool {
    let rows = rows(request_id, sources, at);
    replay::keep("sources", &rows, replay::WRITE_TIME, |_| store(records, &rows)).await
}

/// The sources stored for `request_id`, in citation order; `None` if the request is unknown
/// (or its sources never finished storing).
pub async fn list(records: &dyn RecordStore, request_id: &str, now: DateTime<Utc>) -> Result<Option<Vec<Source>>> {
    let rows = records.query(&partition(request_id), "#", "99999", now.timestamp()).await?;
    let Some(header) = rows.iter().find(|r| r.sk == HEADER) else {
        return Ok(None);
    };
    let count = header.body.get("count").and_then(serde_json::Value::as_u64).unwrap_or(0) as usize;
    let sources: Vec<Source> =
        rows.into_iter().filter(|r| r.sk != HEADER).filter_map(|r| serde_json::from_value(r.body).ok()).collect();
    if sources.len() != count {
        return Err(Error::Store(format!(
            "the sources of request {request_id} are incomplete: {} of {count} readable",
            sources.len()
        )));
    }
    Ok(Some(sources))
}

/// The sources the structured fields name (`statistics[].source` of a topic, `results[].source`
/// of research) that are valid public URLs and not already cited: listed (and stored) after the
/// citations, so every source an answer relies on is kept.
pub fn field_sources(data: &Map<String, Value>, cited: &[Source], at: chrono::DateTime<chrono::Utc>) -> Vec<Source> {
    let items = ["statistics", "results"].into_iter().filter_map(|field| data.get(field)?.as_array()).flatten();
    let mut out: Vec<Source> = Vec::new();
    for item in items {
        let Some(Ok(url)) = item.get("source").and_then(Value::as_str).map(citations::normalise) else { continue };
        if cited.iter().chain(&out).any(|s| s.url == url) {
            continue;
        }
        let title = ["title", "stat"].iter().find_map(|k| item.get(*k)?.as_str()).map(str::to_owned);
        out.push(Source { url, title, accessed_at: at, snippet: None });
    }
    out
}
