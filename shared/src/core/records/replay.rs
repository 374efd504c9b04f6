//! Records that could not be stored in time, kept in the log: one structured line each, with
//! the field `replay` holding `{"records": [{pk, sk, expiresAt, body}, ...]}` (a JSON string),
//! so `cargo xtask replay` can write them back from exported logs. Writes are idempotent (a
//! record replaces the one with its key), so a line replayed twice changes nothing more.

use std::future::Future;
use std::time::Duration;

use serde_json::{Value, json};

use super::{Record, RecordStore};
use crate::core::error::Result;
use crate::core::retry::{STORE_RETRY, within};

/// How long a write owed after an answer (a cost record, sources) may take, retries included;
/// then it is logged for replay and the answer goes out.
pub const WRITE_TIME: Duration = Duration::from_secs(2);

/// Runs `write` (retried as [`STORE_RETRY`]) for at most `time` ([`WRITE_TIME`] unless a route
/// has less); if it has not succeeded by then, logs `records` (what it writes) for replay.
/// Whether they were stored.
pub async fn keep<F, Fut>(what: &str, records: &[Record], time: Duration, write: F) -> bool
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<()>>,
{
    let deadline = tokio::time::Instant::now() + time;
    match within(STORE_RETRY, deadline, what, write).await {
        Ok(()) => true,
        Err(e) => {
            log(what, records, &e);
            false
        }
    }
}

/// Logs `records` for replay at ERROR: `what` could not be stored because of `error`.
pub fn log(what: &str, records: &[Record], error: &dyn std::fmt::Display) {
    let replay = encode(records).to_string();
    tracing::error!(error = %error, %replay, "{what} not stored; replay with `cargo xtask replay`");
}

/// The `replay` field's value for `records`.
pub fn encode(records: &[Record]) -> Value {
    let rows: Vec<Value> =
        records.iter().map(|r| json!({"pk": r.pk, "sk": r.sk, "expiresAt": r.expires_at, "body": r.body})).collect();
    json!({ "records": rows })
}

/// The records a log line holds for replay, if it is such a line: a JSON log line (the field
/// at the top or under `fields`, as the JSON subscriber writes it), or a text line with
/// `replay={...}`, with or without a CloudWatch export's timestamp before it.
pub fn decode(line: &str) -> Option<Vec<Record>> {
    let value = match line.find('{').map(|at| serde_json::from_str::<Value>(&line[at..])) {
        Some(Ok(v)) if field(&v).is_some() => field(&v).cloned()?,
        _ => text_field(line)?,
    };
    let value = match value {
        Value::String(s) => serde_json::from_str(&s).ok()?,
        v => v,
    };
    value["records"]
        .as_array()?
        .iter()
        .map(|r| {
            Some(Record {
                pk: r["pk"].as_str()?.to_owned(),
                sk: r["sk"].as_str()?.to_owned(),
                expires_at: r["expiresAt"].as_i64(),
                body: r.get("body")?.clone(),
            })
        })
        .collect()
}

/// Writes back every record that `lines` (log lines, any mix) hold for replay; returns how many
/// lines held records and how many records were written. Idempotent: run it twice, or over
/// overlapping exports, and the store ends the same.
pub async fn write_back(store: &dyn RecordStore, lines: impl IntoIterator<Item = String>) -> Result<(usize, usize)> {
    let (mut found, mut written) = (0, 0);
    for line in lines {
        let Some(records) = decode(&line) else { continue };
        found += 1;
        // In order: a list's header (written last) lands after what it counts.
        for record in &records {
            store.put(record).await?;
        }
        written += records.len();
    }
    Ok((found, written))
}

fn field(v: &Value) -> Option<&Value> {
    v.get("replay").or_else(|| v.get("fields")?.get("replay"))
}

/// `replay={...}` in a text log line: the JSON object that follows.
fn text_field(line: &str) -> Option<Value> {
    let at = line.find("replay={")? + "replay=".len();
    serde_json::Deserializer::from_str(&line[at..]).into_iter::<Value>().next()?.ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records() -> Vec<Record> {
        vec![
            Record {
                pk: "COST#2026-11-24#3".into(),
                sk: "t#r#p#1".into(),
                expires_at: None,
                body: json!({"costUsd": 0.01}),
            },
            Record {
                pk: "SRC#r".into(),
                sk: "00001".into(),
                expires_at: Some(1_800_000_000),
                body: json!({"url": "https://a.example/ x=1"}),
            },
        ]
    }

    #[test]
    fn a_json_log_line_round_trips() {
        let line = json!({"level": "ERROR", "fields": {"message": "m", "replay": encode(&records()).to_string()}});
        assert_eq!(decode(&format!("2026-11-24T00:00:00Z {line}")), Some(records()));
    }

    #[test]
    fn a_text_log_line_round_trips() {
        let line = format!("ERROR error=timed out replay={} cost record not stored", encode(&records()));
        assert_eq!(decode(&line), Some(records()));
    }

    #[test]
    fn other_lines_hold_nothing() {
        assert_eq!(decode("INFO search answered"), None);
        assert_eq!(decode(r#"{"level":"INFO","fields":{"message":"x"}}"#), None);
        assert_eq!(decode(r#"ERROR replay={"records": [{"pk": "a"}]}"#), None);
    }
}
