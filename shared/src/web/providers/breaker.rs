//! A circuit breaker per provider: after `threshold` consecutive failed requests (each after
//! its own retries) the provider is skipped for `cooldown`, so a dead upstream does not cost
//! every request its whole retry budget. After the cool-down one request tries it again
//! (half-open): success closes the breaker, failure opens it for another cool-down.
//!
//! The count lives in the process (a warm Lambda container); an opening is also shared through
//! the record store ([`Breaker::shared`]: `CIRCUIT#<provider>` / `OPEN`, living until the
//! cool-down ends), so a new container skips a provider another one found dead instead of
//! paying its retries again. The shared state is read at most every [`SHARED_READ_EVERY`] per
//! container, within [`crate::core::records::HOT_PATH`]; a store that does not answer leaves
//! the decision to the local state (the breaker saves time and money, it never blocks).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::core::records::{HOT_PATH, Record, RecordStore, bounded};

/// How long a container trusts its last read of the shared state.
pub const SHARED_READ_EVERY: Duration = Duration::from_secs(2);

#[derive(Debug, Default)]
struct State {
    failures: u32,
    open_until: Option<DateTime<Utc>>,
}

pub struct Breaker {
    threshold: u32,
    cooldown: Duration,
    state: Mutex<State>,
    shared: Option<Shared>,
}

/// When the shared opening was last read, and until when it said the provider is skipped.
type LastRead = Option<(DateTime<Utc>, Option<DateTime<Utc>>)>;

/// The opening shared through the record store, and this container's last read of it.
struct Shared {
    records: Arc<dyn RecordStore>,
    provider: String,
    read: Mutex<LastRead>,
}

impl Breaker {
    pub fn new(threshold: u32, cooldown: Duration) -> Self {
        Self { threshold: threshold.max(1), cooldown, state: Mutex::default(), shared: None }
    }

    /// The same breaker, its openings shared with every container through `records`.
    pub fn shared(mut self, records: Arc<dyn RecordStore>, provider: &str) -> Self {
        self.shared = Some(Shared { records, provider: provider.to_owned(), read: Mutex::default() });
        self
    }

    fn key(provider: &str) -> (String, String) {
        (format!("CIRCUIT#{provider}"), "OPEN".to_owned())
    }

    /// Whether a request may try the provider at `now`: the local state allows it and no
    /// other container opened the circuit for a cool-down still running.
    pub async fn allows_shared(&self, now: DateTime<Utc>) -> bool {
        if !self.allows(now) {
            return false;
        }
        let Some(shared) = &self.shared else { return true };
        let fresh = *shared.read.lock().unwrap_or_else(|e| e.into_inner());
        let open_until = match fresh {
            Some((at, until)) if now < at + chrono::Duration::from_std(SHARED_READ_EVERY).unwrap_or_default() => until,
            _ => {
                let (pk, sk) = Self::key(&shared.provider);
                let read = bounded(HOT_PATH, "the shared circuit", shared.records.get(&pk, &sk, now.timestamp())).await;
                let until = match read {
                    Ok(record) => record.and_then(|r| r.body["openUntil"].as_str()?.parse::<DateTime<Utc>>().ok()),
                    Err(e) => {
                        tracing::warn!(provider = %shared.provider, error = %e, "shared circuit state unread; local state decides");
                        return true;
                    }
                };
                *shared.read.lock().unwrap_or_else(|e| e.into_inner()) = Some((now, until));
                until
            }
        };
        open_until.is_none_or(|until| now >= until)
    }

    /// [`Breaker::failure`], and when the circuit opens, the opening shared with every container.
    pub async fn failure_shared(&self, now: DateTime<Utc>) -> bool {
        let opened = self.failure(now);
        let until = self.state().open_until;
        if let (true, Some(shared), Some(until)) = (opened, &self.shared, until) {
            let (pk, sk) = Self::key(&shared.provider);
            let record = Record {
                pk,
                sk,
                expires_at: Some(until.timestamp() + 1),
                body: serde_json::json!({"openUntil": until.to_rfc3339(), "openedAt": now.to_rfc3339()}),
            };
            if let Err(e) = bounded(HOT_PATH, "the shared circuit", shared.records.put(&record)).await {
                tracing::warn!(provider = %shared.provider, error = %e, "circuit opened here only (not shared)");
            }
            *shared.read.lock().unwrap_or_else(|e| e.into_inner()) = Some((now, Some(until)));
        }
        opened
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a request may try the provider at `now`.
    pub fn allows(&self, now: DateTime<Utc>) -> bool {
        self.state().open_until.is_none_or(|until| now >= until)
    }

    /// Records a successful request: the breaker closes.
    pub fn success(&self) {
        *self.state() = State::default();
    }

    /// Records a failed request at `now`; returns true if the breaker (re)opened.
    pub fn failure(&self, now: DateTime<Utc>) -> bool {
        let mut s = self.state();
        s.failures += 1;
        if s.failures >= self.threshold {
            s.open_until = Some(now + chrono::Duration::from_std(self.cooldown).unwrap_or_default());
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_after_the_threshold_and_half_opens_after_the_cooldown() {
        let b = Breaker::new(2, Duration::from_secs(60));
        let t = Utc::now();
        assert!(!b.failure(t));
        assert!(b.allows(t));
        assert!(b.failure(t));
        assert!(!b.allows(t + chrono::Duration::seconds(59)));
        assert!(b.allows(t + chrono::Duration::seconds(60)), "half-open after the cool-down");
        assert!(b.failure(t + chrono::Duration::seconds(60)), "a failed trial reopens at once");
        assert!(!b.allows(t + chrono::Duration::seconds(61)));
        b.success();
        assert!(b.allows(t + chrono::Duration::seconds(61)));
        assert!(!b.failure(t + chrono::Duration::seconds(61)), "success reset the count");
    }
}
