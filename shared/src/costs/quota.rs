//! A signed-in user's limits: requests per minute and per UTC day, counted in the record store
//! so every container shares one count (a spent quota is 429 `quota_exceeded` with
//! `Retry-After`), and dollars per UTC day (`USER_BUDGET_USD_PER_DAY`): a request's paid work
//! runs as the user's spending ([`crate::costs::budget::spending_as`]). Every user route takes
//! one request as its user is extracted ([`crate::http::extract::User`]).
//!
//! Each user's limits are their own: one user flooding spends their own minute, never another
//! user's. The request counts fail open: when the store does not answer within
//! `BUDGET_STORE_TIMEOUT_MS` (1 s), or fails, the same limits are counted in this container
//! instead (a warning and the `QuotaFailedOpen` metric), as Envoy's and Stripe's rate limiters
//! do, so a hung table does not take down a read that spends nothing. A counter the store
//! throttles (a caller flooding their own key) is not an outage: 429, not counted here. Spend never fails open: each paid
//! call is held against the budgets, which refuse (503) when the store does not answer.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use chrono::Timelike;

use crate::core::clock::Clock;
use crate::core::error::{Error, Result};
use crate::core::records::{RecordStore, bounded, key_part};
use crate::costs::budget;
use crate::costs::settings::Settings;

/// How long a quota check waits for the store before refusing the request, unless the
/// configuration says (`BUDGET_STORE_TIMEOUT_MS`).
pub const WAIT: Duration = Duration::from_millis(250);

/// The longest an answer waits for the `x-user-budget-left-usd` header's read: with a hung
/// store, rag-search's worst case (a quota wait, its 3 s search, this) stays inside its 5 s.
pub const HEADER_WAIT: Duration = Duration::from_millis(250);

/// Requests per minute and per day of each user, and what they may spend a day.
pub struct Quota {
    per_minute: u32,
    per_day: u32,
    records: Arc<dyn RecordStore>,
    clock: Arc<dyn Clock>,
    /// Each user's daily budget in USD (0: none).
    budget_usd: f64,
    /// How long a count or a read waits for the store.
    wait: Duration,
    /// This container's counts, kept while the store does not answer (see the module's doc).
    fallback: Mutex<HashMap<(String, String), u32>>,
    /// Whose requests it counts: a user's (`false`), or opens of one research's stream link.
    links: bool,
}

impl Quota {
    /// `per_minute` and `per_day` requests a user (0: no limit), counted in `records`.
    pub fn new(per_minute: u32, per_day: u32, records: Arc<dyn RecordStore>, clock: Arc<dyn Clock>) -> Self {
        Self {
            per_minute,
            per_day,
            records,
            clock,
            budget_usd: 0.0,
            wait: WAIT,
            fallback: Mutex::default(),
            links: false,
        }
    }

    /// The limits `settings` set (`USER_QUOTA_PER_MINUTE`, `USER_QUOTA_PER_DAY`,
    /// `USER_BUDGET_USD_PER_DAY`), counted in `records`.
    pub fn from_settings(settings: &Settings, records: Arc<dyn RecordStore>, clock: Arc<dyn Clock>) -> Self {
        Self {
            budget_usd: settings.user_budget_usd_per_day,
            wait: settings.budget_store_timeout,
            ..Self::new(settings.quota_per_minute, settings.quota_per_day, records, clock)
        }
    }

    /// The same limits counting the opens of one research's stream link ([`Quota::take`] of a
    /// session id): counters of their own, apart from every user's.
    pub fn for_links(mut self) -> Self {
        self.links = true;
        self
    }

    /// What `user` may still spend today in USD, for an answer's header (`None`: no per-user
    /// budget, or the store did not answer within [`HEADER_WAIT`]: the answer is not held for it).
    pub async fn budget_left(&self, user: &str) -> Option<f64> {
        self.budget_within(user, self.wait.min(HEADER_WAIT)).await.map(|b| b.left_usd)
    }

    /// Refuses work for `user` when their budget for today is spent (429 `user_budget_exceeded`),
    /// before a job of many paid calls begins; a store that does not answer in time lets it
    /// begin (each paid call is still held against the budget, failing closed).
    pub async fn refuse_if_spent(&self, user: &str) -> Result<()> {
        match self.budget(user).await {
            Some(b) if b.left_usd <= 0.0 => Err(budget::user_budget_spent(b.cap_usd, self.clock.now())),
            _ => Ok(()),
        }
    }

    /// `user`'s budget today (`None`: no per-user budget, or the store did not answer in time).
    async fn budget(&self, user: &str) -> Option<budget::UserBudget> {
        self.budget_within(user, self.wait).await
    }

    async fn budget_within(&self, user: &str, wait: Duration) -> Option<budget::UserBudget> {
        if self.budget_usd <= 0.0 {
            return None;
        }
        let read = budget::user_budget(&*self.records, self.budget_usd, user, self.clock.now());
        bounded(wait, "the budget store", read).await.ok()
    }

    /// Counts one request of `user`: `Err(QuotaExceeded)` when its minute or its day is spent.
    /// When the store does not answer in time, counts it in this container instead.
    pub async fn take(&self, user: &str) -> Result<()> {
        let now = self.clock.now();
        let minute = now.format("%Y-%m-%dT%H:%M").to_string();
        let day = now.format("%Y-%m-%d").to_string();
        let windows = [
            (self.per_minute, format!("m#{minute}"), 120, 60 - u64::from(now.second()), "minute"),
            (self.per_day, format!("d#{day}"), 2 * 86_400, crate::core::time::seconds_to_midnight(now), "day"),
        ];
        let pk = if self.links { format!("LINKQUOTA#{}", key_part(user, 12)) } else { key(user) };
        let mut store_answers = true;
        for (limit, sk, keep_secs, retry_after_secs, window) in windows {
            if limit == 0 {
                continue;
            }
            let counted = if store_answers {
                let counted = self.records.add(&pk, &sk, 1, Some(i64::from(limit)), now.timestamp() + keep_secs);
                match bounded(self.wait, "the quota store", counted).await {
                    Ok(counted) => counted.is_some(),
                    // The store answers, throttling this key: the caller's own flood (a hot key),
                    // not an outage. Counting it here instead would give each container a
                    // quota of its own.
                    Err(e) if e.is_throttled() => {
                        tracing::warn!(error = %e, "the quota's counter is throttled: refused");
                        crate::core::metrics::count("QuotaThrottled", &[], 1.0);
                        return Err(Error::QuotaExceeded {
                            message: "too many requests at once; retry in a second".into(),
                            retry_after_secs: 1,
                        });
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "quota store unavailable: counted in this container");
                        crate::core::metrics::count("QuotaFailedOpen", &[], 1.0);
                        store_answers = false;
                        self.count_here(&pk, &sk, limit)
                    }
                }
            } else {
                self.count_here(&pk, &sk, limit)
            };
            if !counted {
                return Err(Error::QuotaExceeded {
                    message: if self.links {
                        format!("this research's link was opened {limit} times this {window}; retry later")
                    } else {
                        format!("user quota of {limit} requests per {window} is spent; retry later")
                    },
                    retry_after_secs,
                });
            }
        }
        Ok(())
    }

    /// Counts one request in this container's window `sk` of user `pk`; false when `limit` is
    /// reached. Counts of past windows are dropped as windows pass.
    fn count_here(&self, pk: &str, sk: &str, limit: u32) -> bool {
        let mut counts = self.fallback.lock().unwrap_or_else(PoisonError::into_inner);
        let window = &sk[..2];
        counts.retain(|(_, kept), _| !kept.starts_with(window) || kept == sk);
        let count = counts.entry((pk.to_owned(), sk.to_owned())).or_insert(0);
        if *count >= limit {
            return false;
        }
        *count += 1;
        true
    }
}

/// The HTTP edge's per-user limit ([`crate::core::limit::PerUser`]): [`Quota::take`].
#[async_trait::async_trait]
impl crate::core::limit::PerUser for Quota {
    async fn take(&self, user: &str) -> Result<()> {
        Quota::take(self, user).await
    }
}

/// The partition of `user`'s counters: a hash, so a claim of any length or content (an email,
/// 2 KB of text) is a valid key of fixed size.
fn key(user: &str) -> String {
    format!("QUOTA#{}", key_part(user, 12))
}
