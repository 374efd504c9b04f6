//! What an invocation's deadline leaves for its work: one rule for every function.
//!
//! Lambda gives each invocation a deadline (`Lambda-Runtime-Deadline-Ms`, ms since the epoch);
//! a function keeps a reserve back from it for what it owes after its upstream work (records,
//! the answer). Two cases are not Lambda's own and must not stop the work at once:
//! - a deadline already past when the request is read: Lambda never invokes after it, so it is
//!   an emulator's fixed value (`cargo lambda watch` 1.9 sends 600 000 ms, in 1970) and is read
//!   as none: the configured budgets apply (logged once);
//! - a deadline shorter than the reserve (a function deployed with a short `Timeout`): the work
//!   still gets a quarter of what is left, and the log says the timeout is the cause.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The time left until `deadline_ms` (ms since the epoch); `None` for none (0) or for one
/// already past, which is not a real Lambda deadline.
pub fn left(deadline_ms: u64) -> Option<Duration> {
    if deadline_ms == 0 {
        return None;
    }
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as u64;
    match deadline_ms.checked_sub(now) {
        Some(ms) if ms > 0 => Some(Duration::from_millis(ms)),
        _ => {
            static SAID: AtomicBool = AtomicBool::new(false);
            if !SAID.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    deadline_ms,
                    "the runtime's deadline had passed before the invocation began (an emulator's fixed \
                     value, not Lambda's): the configured time budgets apply"
                );
            }
            None
        }
    }
}

/// The part of `budget` the invocation's `left` allows for `what`, keeping `reserve` back for
/// what is owed after it; at least a quarter of `left`, so a deadline under the reserve shortens
/// the work (logged as the function's timeout) instead of leaving it none.
pub fn budget(budget: Duration, left: Option<Duration>, reserve: Duration, what: &str) -> Duration {
    let Some(left) = left else { return budget };
    let floor = left / 4;
    let allowed = left.saturating_sub(reserve);
    if allowed < floor && floor < budget {
        tracing::warn!(
            left_ms = left.as_millis() as u64,
            reserve_ms = reserve.as_millis() as u64,
            budget_ms = floor.as_millis() as u64,
            "the function's timeout leaves less than its reserve: {what} gets a quarter of what is left; \
             raise the function's Timeout"
        );
    }
    budget.min(allowed.max(floor))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn no_deadline_or_a_past_one_leaves_the_configured_budget() {
        assert_eq!(left(0), None);
        assert_eq!(left(600_000), None, "cargo lambda watch's fixed deadline, in 1970");
        let soon = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64 + 30_000;
        assert!(left(soon).is_some_and(|l| l > ms(29_000) && l <= ms(30_000)));
        assert_eq!(budget(ms(22_000), None, ms(7_000), "the model"), ms(22_000));
    }

    #[test]
    fn the_reserve_is_kept_while_the_deadline_allows_it() {
        // Lambda's 30 s: the configured 22 s and the 7 s reserve both fit.
        assert_eq!(budget(ms(22_000), Some(ms(30_000)), ms(7_000), "the model"), ms(22_000));
        // 8 s left, 5.5 s reserve: 2.5 s of work.
        assert_eq!(budget(ms(22_000), Some(ms(8_000)), ms(5_500), "the search"), ms(2_500));
    }

    #[test]
    fn a_deadline_under_the_reserve_shortens_the_work_instead_of_leaving_none() {
        // A 5 s timeout under a 7 s reserve: a quarter of it, never zero.
        assert_eq!(budget(ms(22_000), Some(ms(5_000)), ms(7_000), "the model"), ms(1_250));
        assert_eq!(budget(ms(22_000), Some(ms(7_000)), ms(7_000), "the model"), ms(1_750));
        // Never more than configured.
        assert_eq!(budget(ms(1_000), Some(ms(5_000)), ms(7_000), "the model"), ms(1_000));
    }
}
