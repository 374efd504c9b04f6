//! The embedded record store: one SQLite file under `DATA_DIR`, in WAL mode, so several
//! processes (functions under `cargo lambda watch`) can read and write it at once.

use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, params};

use super::{Record, RecordStore};
use crate::core::error::{Error, Result};

/// How long a write waits for another process's write to finish.
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Records in a SQLite file.
#[derive(Clone)]
pub struct LocalRecords {
    /// The connection, and whether its table is ready.
    conn: Arc<Mutex<(Connection, bool)>>,
}

impl LocalRecords {
    /// Opens (creating if needed) `dir/records.sqlite3`.
    pub fn open(dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(|e| Error::Store(format!("cannot create {}: {e}", dir.display())))?;
        let path = dir.join("records.sqlite3");
        let conn = Connection::open(&path).map_err(|e| store_error(&e))?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| store_error(&e))?;
        Ok(Self { conn: Arc::new(Mutex::new((conn, false))) })
    }

    /// The table, made on the first call rather than at open: a function's start does not wait
    /// for the file's first writes (several syncs to disk) when its first request needs no record.
    ///
    /// Two processes opening a new file at once both switch it to WAL; SQLite answers the loser
    /// `SQLITE_BUSY` at once, without its busy handler (waiting could deadlock), so the setup
    /// is retried here within the same busy timeout. Every step is idempotent.
    fn ready(conn: &mut Connection) -> rusqlite::Result<()> {
        let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
        loop {
            match conn.execute_batch(
                "PRAGMA journal_mode = WAL;
                 PRAGMA synchronous = NORMAL;
                 BEGIN IMMEDIATE;
                 CREATE TABLE IF NOT EXISTS records (
                     pk TEXT NOT NULL,
                     sk TEXT NOT NULL,
                     expires_at INTEGER,
                     body TEXT NOT NULL,
                     PRIMARY KEY (pk, sk)
                 ) WITHOUT ROWID;
                 COMMIT;",
            ) {
                Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy) => {
                    if !conn.is_autocommit() {
                        conn.execute_batch("ROLLBACK")?;
                    }
                    if std::time::Instant::now() >= deadline {
                        return Err(e);
                    }
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                other => return other,
            }
        }
    }

    async fn with_conn<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T> {
        let conn = Arc::clone(&self.conn);
        tokio::task::spawn_blocking(move || {
            let mut guard = conn.lock().unwrap_or_else(|e| e.into_inner());
            let (conn, ready) = &mut *guard;
            if !*ready {
                Self::ready(conn)?;
                *ready = true;
            }
            f(conn)
        })
        .await
        .map_err(|e| Error::Store(format!("store task failed: {e}")))?
        .map_err(|e| store_error(&e))
    }
}

/// DynamoDB refuses empty key values (and empty query bounds); so does this store, so code
/// that works here works there.
fn check_keys(keys: &[&str]) -> Result<()> {
    if keys.iter().any(|k| k.is_empty()) {
        return Err(Error::Store("a key attribute cannot be an empty string".into()));
    }
    Ok(())
}

fn store_error(e: &rusqlite::Error) -> Error {
    Error::Store(format!("sqlite: {e}"))
}

fn row_to_record(row: &rusqlite::Row<'_>) -> rusqlite::Result<Record> {
    let body: String = row.get(3)?;
    Ok(Record {
        pk: row.get(0)?,
        sk: row.get(1)?,
        expires_at: row.get(2)?,
        body: serde_json::from_str(&body)
            .map_err(|e| rusqlite::Error::FromSqlConversionFailure(3, rusqlite::types::Type::Text, Box::new(e)))?,
    })
}

const UPSERT: &str = "INSERT INTO records (pk, sk, expires_at, body) VALUES (?1, ?2, ?3, ?4)
     ON CONFLICT (pk, sk) DO UPDATE SET expires_at = excluded.expires_at, body = excluded.body";

#[async_trait]
impl RecordStore for LocalRecords {
    async fn put(&self, record: &Record) -> Result<()> {
        self.put_all(std::slice::from_ref(record)).await
    }

    async fn put_all(&self, records: &[Record]) -> Result<()> {
        for r in records {
            check_keys(&[&r.pk, &r.sk])?;
        }
        let rows: Vec<(String, String, Option<i64>, String)> =
            records.iter().map(|r| (r.pk.clone(), r.sk.clone(), r.expires_at, r.body.to_string())).collect();
        self.with_conn(move |conn| {
            // IMMEDIATE: the write lock is taken (waiting the busy timeout) before the first
            // statement, never upgraded from a read, which SQLite would refuse without waiting.
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            {
                let mut stmt = tx.prepare_cached(UPSERT)?;
                for (pk, sk, expires_at, body) in &rows {
                    stmt.execute(params![pk, sk, expires_at, body])?;
                }
            }
            tx.commit()
        })
        .await
    }

    async fn put_new(&self, record: &Record, now: i64) -> Result<bool> {
        check_keys(&[&record.pk, &record.sk])?;
        let row = (record.pk.clone(), record.sk.clone(), record.expires_at, record.body.to_string());
        self.with_conn(move |conn| {
            let changed = conn
                .prepare_cached(
                    "INSERT INTO records (pk, sk, expires_at, body) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (pk, sk) DO UPDATE SET expires_at = excluded.expires_at, body = excluded.body
                 WHERE records.expires_at IS NOT NULL AND records.expires_at <= ?5",
                )?
                .execute(params![row.0, row.1, row.2, row.3, now])?;
            Ok(changed == 1)
        })
        .await
    }

    async fn put_if(&self, record: &Record, expected: Option<i64>, now: i64) -> Result<bool> {
        let Some(expected) = expected else { return self.put_new(record, now).await };
        check_keys(&[&record.pk, &record.sk])?;
        let row = (record.pk.clone(), record.sk.clone(), record.expires_at, record.body.to_string());
        self.with_conn(move |conn| {
            let changed = conn
                .prepare_cached(
                    "UPDATE records SET expires_at = ?3, body = ?4 WHERE pk = ?1 AND sk = ?2
                 AND COALESCE(json_extract(body, '$.rev'), 0) = ?5 AND (expires_at IS NULL OR expires_at > ?6)",
                )?
                .execute(params![row.0, row.1, row.2, row.3, expected, now])?;
            Ok(changed == 1)
        })
        .await
    }

    async fn get(&self, pk: &str, sk: &str, now: i64) -> Result<Option<Record>> {
        check_keys(&[pk, sk])?;
        let (pk, sk) = (pk.to_owned(), sk.to_owned());
        let record = self
            .with_conn(move |conn| {
                conn.prepare_cached("SELECT pk, sk, expires_at, body FROM records WHERE pk = ?1 AND sk = ?2")?
                    .query_row(params![pk, sk], row_to_record)
                    .optional()
            })
            .await?;
        Ok(record.filter(|r| r.is_live(now)))
    }

    async fn query(&self, pk: &str, from: &str, to: &str, now: i64) -> Result<Vec<Record>> {
        check_keys(&[pk, from, to])?;
        let (pk, from, to) = (pk.to_owned(), from.to_owned(), to.to_owned());
        let records = self
            .with_conn(move |conn| {
                conn.prepare_cached(
                    "SELECT pk, sk, expires_at, body FROM records
                     WHERE pk = ?1 AND sk >= ?2 AND sk <= ?3 ORDER BY sk",
                )?
                .query_map(params![pk, from, to], row_to_record)?
                .collect::<rusqlite::Result<Vec<_>>>()
            })
            .await?;
        Ok(records.into_iter().filter(|r| r.is_live(now)).collect())
    }

    async fn latest(&self, pk: &str, from: &str, to: &str, limit: usize, now: i64) -> Result<Vec<Record>> {
        check_keys(&[pk, from, to])?;
        let (pk, from, to, limit) = (pk.to_owned(), from.to_owned(), to.to_owned(), limit as i64);
        let records = self
            .with_conn(move |conn| {
                conn.prepare_cached(
                    "SELECT pk, sk, expires_at, body FROM records
                     WHERE pk = ?1 AND sk >= ?2 AND sk <= ?3 ORDER BY sk DESC LIMIT ?4",
                )?
                .query_map(params![pk, from, to, limit], row_to_record)?
                .collect::<rusqlite::Result<Vec<_>>>()
            })
            .await?;
        Ok(records.into_iter().filter(|r| r.is_live(now)).collect())
    }

    async fn add(&self, pk: &str, sk: &str, delta: i64, ceiling: Option<i64>, expires_at: i64) -> Result<Option<i64>> {
        check_keys(&[pk, sk])?;
        let (pk, sk) = (pk.to_owned(), sk.to_owned());
        self.with_conn(move |conn| {
            // IMMEDIATE takes the write lock before the read: other processes wait (busy
            // timeout), so read, check and write are one step, as DynamoDB's conditional update.
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let body: Option<String> = tx
                .prepare_cached("SELECT body FROM records WHERE pk = ?1 AND sk = ?2")?
                .query_row(params![pk, sk], |row| row.get(0))
                .optional()?;
            let total = body
                .and_then(|b| serde_json::from_str::<serde_json::Value>(&b).ok())
                .and_then(|b| b[super::TOTAL].as_i64())
                .unwrap_or(0);
            if ceiling.is_some_and(|c| total >= c) {
                return Ok(None);
            }
            let total = total.saturating_add(delta);
            let body = serde_json::json!({ super::TOTAL: total }).to_string();
            tx.prepare_cached(UPSERT)?.execute(params![pk, sk, expires_at, body])?;
            tx.commit()?;
            Ok(Some(total))
        })
        .await
    }
}
