//! A circuit breaker per provider: after `threshold` consecutive failed requests (each after
//! its own retries) the provider is skipped for `cooldown`, so a dead upstream does not cost
//! every request its whole retry budget. After the cool-down one request tries it again
//! (half-open): success closes the breaker, failure opens it for another cool-down.
//! State lives in the process (a warm Lambda container), which is where the waste is.

use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};

#[derive(Debug, Default)]
struct State {
    failures: u32,
    open_until: Option<DateTime<Utc>>,
}

#[derive(Debug)]
pub struct Breaker {
    threshold: u32,
    cooldown: Duration,
    state: Mutex<State>,
}

impl Breaker {
    pub fn new(threshold: u32, cooldown: Duration) -> Self {
        Self { threshold: threshold.max(1), cooldown, state: Mutex::default() }
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
