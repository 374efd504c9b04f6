//! Per-user request quotas (requests per minute and per UTC day), counted in the record store so
//! every container shares one count. A spent quota is 429 `quota_exceeded` with `Retry-After`.
//!
//! When the store does not answer within a short bound the request goes ahead (fails open,
//! said in the log), since a search needs no record store: what a search may spend (a paid
//! embedder, model match reasons) is capped by its agent's daily budget all the same.

use std::sync::Arc;
use std::time::Duration;

use chrono::Timelike;

use crate::core::clock::Clock;
use crate::core::error::{Error, Result};
use crate::core::records::{RecordStore, bounded};

/// How long a quota check waits for the store before letting the request through.
pub const WAIT: Duration = Duration::from_millis(250);

/// Requests per minute and per day of each user.
pub struct Quota {
    per_minute: u32,
    per_day: u32,
    records: Arc<dyn RecordStore>,
    clock: Arc<dyn Clock>,
}

impl Quota {
    /// `per_minute` and `per_day` requests a user (0: no limit), counted in `records`.
    pub fn new(per_minute: u32, per_day: u32, records: Arc<dyn RecordStore>, clock: Arc<dyn Clock>) -> Self {
        Self { per_minute, per_day, records, clock }
    }

    /// Counts one request of `user`: `Err(QuotaExceeded)` when its minute or its day is spent.
    pub async fn take(&self, user: &str) -> Result<()> {
        let now = self.clock.now();
        let minute = now.format("%Y-%m-%dT%H:%M").to_string();
        let day = now.format("%Y-%m-%d").to_string();
        let windows = [
            (self.per_minute, format!("m#{minute}"), 120, 60 - u64::from(now.second()), "minute"),
            (self.per_day, format!("d#{day}"), 2 * 86_400, crate::core::time::seconds_to_midnight(now), "day"),
        ];
        let pk = key(user);
        for (limit, sk, keep_secs, retry_after_secs, window) in windows {
            if limit == 0 {
                continue;
            }
            let counted = self.records.add(&pk, &sk, 1, Some(i64::from(limit)), now.timestamp() + keep_secs);
            match bounded(WAIT, "the quota store", counted).await {
                Ok(Some(_)) => {}
                Ok(None) => {
                    return Err(Error::QuotaExceeded {
                        message: format!("user quota of {limit} requests per {window} is spent; retry later"),
                        retry_after_secs,
                    });
                }
                // Unavailable or slow: a search needs no record store.
                Err(e) => {
                    tracing::warn!(error = %e, "quota store unavailable: request allowed");
                    return Ok(());
                }
            }
        }
        Ok(())
    }
}

/// The partition of `user`'s counters: a hash, so a claim of any length or content (an email,
/// 2 KB of text) is a valid key of fixed size.
fn key(user: &str) -> String {
    use sha2::{Digest, Sha256};
    format!("QUOTA#{}", hex::encode(&Sha256::digest(user.as_bytes())[..12]))
}
