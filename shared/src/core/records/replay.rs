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
/// Each such line counts its records in the EMF metric `RecordsOwed` (`RecordsOwedAlarm`).
pub fn log(what: &str, records: &[Record], error: &dyn std::fmt::Display) {
    let replay = encode(records).to_string();
    tracing::error!(error = %error, %replay, "{what} {MARKER}");
    crate::core::metrics::count("RecordsOwed", &[], records.len() as f64);
}

/// The `replay` field's value for `records`.
pub fn encode(records: &[Record]) -> Value {
    let rows: Vec<Value> =
        records.iter().map(|r| json!({"pk": r.pk, "sk": r.sk, "expiresAt": r.expires_at, "body": r.body})).collect();
    json!({ "records": rows })
}

/// The message every replay line carries (the store's own words, not a caller's).
pub const MARKER: &str = "not stored; replay with `cargo xtask replay`";

/// The records a log line holds for replay, if it is such a line: a JSON log line (Lambda's
/// JSON log format, with or without a CloudWatch export's prefix) at ERROR whose message is
/// [`MARKER`]'s, with the field `replay` among its fields. Text lines are never read: a
/// caller's text in another line (an error naming an unknown field, say) could look like one.
pub fn decode(line: &str) -> Option<Vec<Record>> {
    let v: Value = serde_json::from_str(line[line.find('{')?..].trim_end()).ok()?;
    let fields = v.get("fields")?;
    let message = fields.get("message")?.as_str()?;
    if v.get("level")?.as_str()? != "ERROR" || !message.ends_with(MARKER) {
        return None;
    }
    let value: Value = serde_json::from_str(fields.get("replay")?.as_str()?).ok()?;
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

/// What [`write_back`] did.
#[derive(Debug, Default, PartialEq)]
pub struct Replayed {
    /// Lines that held records.
    pub lines: usize,
    /// Records written (the others were already stored).
    pub written: usize,
    /// Records `owed` refused.
    pub refused: usize,
}

/// Writes back `lines`' records (each line's, as [`decode`] read them) that `owed` accepts
/// (the kinds a replay line may hold, see `compose::owed`), never over a record already stored.
/// Idempotent: run it twice, or over overlapping exports, and the second writes nothing.
pub async fn write_back(
    store: &dyn RecordStore,
    lines: &[Vec<Record>],
    owed: impl Fn(&Record) -> bool,
) -> Result<Replayed> {
    let mut done = Replayed { lines: lines.len(), ..Replayed::default() };
    // In order: a list's header (written last) lands after what it counts.
    for record in lines.iter().flatten() {
        if !owed(record) {
            tracing::warn!(pk = %record.pk, "not a record a replay line may hold; skipped");
            done.refused += 1;
            continue;
        }
        if store.put_new(record, 0).await? {
            done.written += 1;
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A source list of one (a row and its header), as `sources::keep` logs it.
    fn records() -> Vec<Record> {
        vec![
            Record {
                pk: "SOURCES#r-1".into(),
                sk: "00001".into(),
                expires_at: None,
                body: json!({"url": "https://a.example/x", "title": "A", "accessedAt": "2026-11-24T00:00:00Z"}),
            },
            Record { pk: "SOURCES#r-1".into(), sk: "#header".into(), expires_at: None, body: json!({"count": 1}) },
        ]
    }

    fn line(level: &str, message: &str, replay: &Value) -> String {
        json!({"level": level, "fields": {"message": message, "error": "timed out", "replay": replay.to_string()}})
            .to_string()
    }

    #[test]
    fn a_json_log_line_round_trips() {
        let l = line("ERROR", &format!("sources {MARKER}"), &encode(&records()));
        assert_eq!(decode(&format!("2026-11-24T00:00:00Z\t{l}")), Some(records()));
    }

    #[test]
    fn only_the_stores_own_error_lines_are_read() {
        let replay = encode(&records());
        assert_eq!(decode(&line("INFO", &format!("sources {MARKER}"), &replay)), None, "not an error");
        assert_eq!(decode(&line("ERROR", "something else", &replay)), None, "not the marker");
        let text = format!("ERROR error=unknown field `replay={replay}` sources {MARKER}");
        assert_eq!(decode(&text), None, "a text line (a caller's words may look like one)");
        assert_eq!(decode("INFO search answered"), None);
    }
}
