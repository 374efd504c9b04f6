//! The answer cache: whole results under `perplexity:search:<hash>` with an expiry.
//! A cache fault is never the caller's problem: a failed or slow read (past [`HOT_PATH`]) is a
//! miss, a failed write is logged.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::core::records::{HOT_PATH, Record, RecordStore, bounded};

const SK: &str = "CACHE";

/// The live cached value under `key`, if any.
pub async fn get<T: DeserializeOwned>(records: &dyn RecordStore, key: &str, now: DateTime<Utc>) -> Option<T> {
    match bounded(HOT_PATH, "the cache read", records.get(key, SK, now.timestamp())).await {
        Ok(Some(r)) => serde_json::from_value(r.body)
            .inspect_err(|e| tracing::warn!(key, error = %e, "cached value unreadable; treating as a miss"))
            .ok(),
        Ok(None) => None,
        Err(e) => {
            tracing::warn!(key, error = %e, "cache read failed; treating as a miss");
            None
        }
    }
}

/// Stores `value` under `key` for `ttl` from `now`.
pub async fn put<T: Serialize>(records: &dyn RecordStore, key: &str, value: &T, now: DateTime<Utc>, ttl: Duration) {
    let expires_at = now + chrono::Duration::from_std(ttl).unwrap_or_default();
    let record = Record {
        pk: key.to_owned(),
        sk: SK.to_owned(),
        expires_at: Some(expires_at.timestamp()),
        body: serde_json::to_value(value).expect("cached values serialise"),
    };
    if let Err(e) = records.put(&record).await {
        tracing::warn!(key, error = %e, "cache write failed");
    }
}
