//! The one retry helper: exponential backoff for upstream calls, honouring `Retry-After`.
//!
//! Policy (seed 000): up to 3 retries after the first attempt, waiting `base`, `2 × base`,
//! `4 × base` (1 s, 2 s, 4 s by default; `RETRY_BASE_MS`). When the upstream names a wait
//! (`Retry-After`), that wait is used instead, up to `max_wait`; a longer demand ends the
//! retries, since a Lambda cannot sensibly sleep through it. Each retry is logged.

use std::future::Future;
use std::time::Duration;

/// How one attempt failed, as far as retrying is concerned.
pub trait Retryable {
    /// `Some(wait)` if another attempt may succeed; the wait is the upstream's demand if any.
    fn retry_after(&self) -> Option<Option<Duration>>;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    pub retries: u32,
    pub base: Duration,
    pub max_wait: Duration,
}

impl RetryPolicy {
    pub fn new(base: Duration) -> Self {
        Self { retries: 3, base, max_wait: Duration::from_secs(30) }
    }

    /// The wait before retry number `retry` (0-based) when the upstream named none.
    pub fn backoff(&self, retry: u32) -> Duration {
        self.base.saturating_mul(1 << retry.min(16))
    }
}

/// Runs `attempt` until it succeeds, fails for good, or the retries are spent; returns the last
/// result. `what` names the upstream in the retry logs.
pub async fn with_backoff<T, E, F, Fut>(policy: RetryPolicy, what: &str, mut attempt: F) -> Result<T, E>
where
    E: Retryable + std::fmt::Display,
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let mut retry = 0;
    loop {
        let err = match attempt(retry).await {
            Ok(value) => return Ok(value),
            Err(err) => err,
        };
        let Some(demanded) = err.retry_after() else {
            return Err(err);
        };
        if retry >= policy.retries {
            tracing::warn!(upstream = what, attempts = retry + 1, error = %err, "retries exhausted");
            return Err(err);
        }
        let wait = match demanded {
            Some(wait) if wait > policy.max_wait => {
                tracing::warn!(upstream = what, retry_after_ms = wait.as_millis() as u64, error = %err, "upstream asks to wait longer than we may; giving up");
                return Err(err);
            }
            Some(wait) => wait,
            None => policy.backoff(retry),
        };
        retry += 1;
        tracing::warn!(upstream = what, retry, of = policy.retries, wait_ms = wait.as_millis() as u64, error = %err, "retrying upstream call");
        tokio::time::sleep(wait).await;
    }
}

/// Parses a `Retry-After` header value: delay-seconds or an HTTP date.
pub fn parse_retry_after(value: &str, now: std::time::SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[derive(Debug)]
    struct Fail(Option<Option<Duration>>);
    impl Retryable for Fail {
        fn retry_after(&self) -> Option<Option<Duration>> {
            self.0
        }
    }
    impl std::fmt::Display for Fail {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("fail")
        }
    }

    #[test]
    fn backoff_doubles_from_the_base() {
        let p = RetryPolicy::new(Duration::from_secs(1));
        let waits: Vec<_> = (0..3).map(|r| p.backoff(r).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4]);
    }

    #[tokio::test]
    async fn transient_failures_are_retried_three_times_then_returned() {
        let calls = AtomicU32::new(0);
        let r: Result<(), Fail> = with_backoff(RetryPolicy::new(Duration::from_millis(1)), "t", |_| {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Err(Fail(Some(None))) }
        })
        .await;
        assert!(r.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 4);
    }

    #[tokio::test]
    async fn permanent_failures_and_excessive_retry_after_are_not_retried() {
        for err in [None, Some(Some(Duration::from_secs(3600)))] {
            let calls = AtomicU32::new(0);
            let r: Result<(), Fail> = with_backoff(RetryPolicy::new(Duration::from_millis(1)), "t", |_| {
                calls.fetch_add(1, Ordering::SeqCst);
                async move { Err(Fail(err)) }
            })
            .await;
            assert!(r.is_err());
            assert_eq!(calls.load(Ordering::SeqCst), 1);
        }
    }

    #[test]
    fn retry_after_accepts_seconds_and_http_dates() {
        let now = std::time::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(90));
        assert_eq!(parse_retry_after(&later, now), Some(Duration::from_secs(90)));
        assert_eq!(parse_retry_after("soon", now), None);
    }
}
