//! The one retry helper: exponential backoff for upstream calls, honouring `Retry-After`.
//!
//! Policy (seed 000): up to 3 retries after the first attempt, waiting `base`, `2 × base`,
//! `4 × base` (1 s, 2 s, 4 s by default; `RETRY_BASE_MS`). When the upstream names a wait
//! (`Retry-After`), that wait is used instead, up to `max_wait`; a longer demand ends the
//! retries, since a Lambda cannot sensibly sleep through it. Each retry is logged.
//!
//! [`within`] adds a deadline (a request's time budget): an attempt still running at the
//! deadline is dropped and reported as [`OutOfTime`], and a wait that would end past it ends
//! the retries at once. What the caller writes afterwards (cost records) is outside the budget.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

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

/// Retries for writes to our own store (records, sources, cost records).
pub const STORE_RETRY: RetryPolicy =
    RetryPolicy { retries: 2, base: Duration::from_millis(50), max_wait: Duration::from_secs(1) };

impl RetryPolicy {
    pub fn new(base: Duration) -> Self {
        Self { retries: 3, base, max_wait: Duration::from_secs(30) }
    }

    /// The wait before retry number `retry` (0-based) when the upstream named none.
    pub fn backoff(&self, retry: u32) -> Duration {
        self.base.saturating_mul(1 << retry.min(16))
    }
}

/// The request's time budget ran out before the upstream answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfTime;

/// Runs `attempt` until it succeeds, fails for good, or the retries are spent; returns the last
/// result. `what` names the upstream in the retry logs.
pub async fn with_backoff<T, E, F, Fut>(policy: RetryPolicy, what: &str, attempt: F) -> Result<T, E>
where
    E: Retryable + std::fmt::Display,
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    retry_loop(policy, None, what, attempt).await
}

/// [`with_backoff`], ending by `deadline`: no attempt starts or runs past it (one still running
/// is dropped: `E::from(OutOfTime)`), and no wait is begun that would end past it.
pub async fn within<T, E, F, Fut>(policy: RetryPolicy, deadline: Instant, what: &str, attempt: F) -> Result<T, E>
where
    E: Retryable + std::fmt::Display + From<OutOfTime>,
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    retry_loop(policy, Some((deadline, || E::from(OutOfTime))), what, attempt).await
}

async fn retry_loop<T, E, F, Fut>(
    policy: RetryPolicy,
    deadline: Option<(Instant, fn() -> E)>,
    what: &str,
    mut attempt: F,
) -> Result<T, E>
where
    E: Retryable + std::fmt::Display,
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let mut retry = 0;
    loop {
        let outcome = match deadline {
            None => attempt(retry).await,
            Some((at, expired)) => {
                let run =
                    if Instant::now() < at { tokio::time::timeout_at(at, attempt(retry)).await.ok() } else { None };
                match run {
                    Some(outcome) => outcome,
                    None => {
                        tracing::warn!(upstream = what, attempts = retry + 1, "the time budget ran out");
                        return Err(expired());
                    }
                }
            }
        };
        let err = match outcome {
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
        if deadline.is_some_and(|(at, _)| Instant::now() + wait >= at) {
            tracing::warn!(upstream = what, wait_ms = wait.as_millis() as u64, error = %err, "no time left in the budget for another attempt");
            return Err(err);
        }
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

    #[derive(Debug)]
    enum Budgeted {
        Slow,
        Spent,
    }
    impl Retryable for Budgeted {
        fn retry_after(&self) -> Option<Option<Duration>> {
            matches!(self, Self::Slow).then_some(None)
        }
    }
    impl std::fmt::Display for Budgeted {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "{self:?}")
        }
    }
    impl From<OutOfTime> for Budgeted {
        fn from(_: OutOfTime) -> Self {
            Self::Spent
        }
    }

    #[tokio::test]
    async fn within_a_deadline_a_hung_attempt_is_cut_and_no_wait_outlasts_it() {
        let ms = Duration::from_millis;
        // Hangs: cut at the deadline.
        let start = Instant::now();
        let r: Result<(), Budgeted> = within(RetryPolicy::new(ms(100)), start + ms(300), "t", |_| async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(())
        })
        .await;
        assert!(matches!(r, Err(Budgeted::Spent)));
        assert!((ms(300)..ms(600)).contains(&start.elapsed()), "{:?}", start.elapsed());
        // Fails fast, retried after 100 ms and 200 ms; the 400 ms wait would end past the
        // 500 ms deadline, so the last failure comes back at once.
        let (start, calls) = (Instant::now(), AtomicU32::new(0));
        let r: Result<(), Budgeted> = within(RetryPolicy::new(ms(100)), start + ms(500), "t", |_| {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Err(Budgeted::Slow) }
        })
        .await;
        assert!(matches!(r, Err(Budgeted::Slow)), "the last failure is returned, not a timeout");
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        assert!((ms(300)..ms(490)).contains(&start.elapsed()), "{:?}", start.elapsed());
        // A deadline already past: no attempt at all.
        let calls = AtomicU32::new(0);
        let r: Result<(), Budgeted> = within(RetryPolicy::new(ms(100)), Instant::now(), "t", |_| {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Ok(()) }
        })
        .await;
        assert!(matches!(r, Err(Budgeted::Spent)));
        assert_eq!(calls.load(Ordering::SeqCst), 0);
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
