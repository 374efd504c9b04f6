//! Records: the one storage port behind the cache, the cost ledger and the source store.
//!
//! A record is a JSON body under a partition key and a sort key, with an optional expiry
//! (`expires_at`, epoch seconds; DynamoDB's TTL attribute). Both adapters treat a record whose
//! `expires_at` is not after `now` as absent, because DynamoDB deletes expired items lazily
//! (up to days later). Domain modules (`cache`, `ledger`, `sources`) build on this port and
//! never on an adapter.

mod dynamodb;
mod local;
pub mod replay;
mod timed;

pub use dynamodb::DynamoRecords;
pub use local::LocalRecords;
pub use timed::Timed;

use async_trait::async_trait;
use serde_json::Value;

use crate::core::error::Result;

/// `text` (a principal, a user id, a URL: any length, any characters) as a key part of fixed
/// size: the hex of the first `bytes` bytes of its SHA-256. No caller's text is ever a key.
pub fn key_part(text: &str, bytes: usize) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(&Sha256::digest(text.as_bytes())[..bytes])
}

/// `call`, or a store error naming `what` when it has not answered within `time`: the one way a
/// caller bounds a wait on a store, so a timeout and a failure take the same fallback.
pub async fn bounded<T>(
    time: std::time::Duration,
    what: &str,
    call: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    tokio::time::timeout(time, call).await.unwrap_or_else(|_| {
        Err(crate::core::error::Error::Store(format!("{what} did not answer within {} ms", time.as_millis())))
    })
}

/// How long a step on a request's hot path (a cache read, the single-flight lease) waits for the
/// store before its fallback (a miss; answering alone).
pub const HOT_PATH: std::time::Duration = std::time::Duration::from_millis(300);

/// One stored item.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub pk: String,
    pub sk: String,
    /// Epoch seconds after which the record is gone; `None` keeps it for ever.
    pub expires_at: Option<i64>,
    pub body: Value,
}

impl Record {
    /// Whether the record is still live at `now` (epoch seconds).
    pub fn is_live(&self, now: i64) -> bool {
        self.expires_at.is_none_or(|t| t > now)
    }
}

/// Storage of records. Writes replace the record with the same `(pk, sk)`. Keys and query
/// bounds must not be empty (DynamoDB's rule, enforced by both adapters).
#[async_trait]
pub trait RecordStore: Send + Sync {
    /// Writes one record.
    async fn put(&self, record: &Record) -> Result<()>;
    /// Writes `record` only if no live record has its key (an atomic claim); true if written.
    async fn put_new(&self, record: &Record, now: i64) -> Result<bool>;
    /// Writes `record` only if the live record at its key is at revision `expected` (its
    /// body's [`REV`], 0 when it has none; `None`: no live record): optimistic concurrency for a read-modify-write.
    /// The caller sets the written body's `rev` (usually `expected + 1`). True if written; false
    /// when another write came between (read again, merge, retry).
    async fn put_if(&self, record: &Record, expected: Option<i64>, now: i64) -> Result<bool>;
    /// Writes all `records`, or fails: none is silently dropped.
    async fn put_all(&self, records: &[Record]) -> Result<()>;
    /// The live record at `(pk, sk)`, if any.
    async fn get(&self, pk: &str, sk: &str, now: i64) -> Result<Option<Record>>;
    /// The live records of partition `pk` whose sort key lies in `from..=to`, ascending.
    async fn query(&self, pk: &str, from: &str, to: &str, now: i64) -> Result<Vec<Record>>;
    /// The newest `limit` live records of partition `pk` whose sort key lies in `from..=to`,
    /// descending: a read bounded by what the caller needs, however large the partition.
    async fn latest(&self, pk: &str, from: &str, to: &str, limit: usize, now: i64) -> Result<Vec<Record>>;
    /// Adds `delta` to the counter at `(pk, sk)` (absent: 0) in one atomic, conditional step,
    /// unless the counter has already reached `ceiling`; returns the new total, or `None` when
    /// refused. The record's body reads `{"total": n}`; it expires at `expires_at`. Budgets and
    /// quotas count here, so containers and processes share one count.
    async fn add(&self, pk: &str, sk: &str, delta: i64, ceiling: Option<i64>, expires_at: i64) -> Result<Option<i64>>;
}

/// The body field of a record's revision ([`RecordStore::put_if`]).
pub const REV: &str = "rev";

/// The body field of a counter ([`RecordStore::add`]).
pub const TOTAL: &str = "total";
