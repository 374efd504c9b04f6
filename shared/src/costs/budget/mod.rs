//! Daily spend caps per agent (`BUDGETS`), held across containers in the record store.
//!
//! Before a paid call, its worst case is held against the agent's spend of the UTC day with one
//! conditional add ([`RecordStore::add`]): a hold is admitted while the day's total is under the
//! cap, so at most one call crosses the line, by at most its own worst case. After the call the
//! hold is settled to what the call cost. A call whose worst case is free (the bundled
//! embedder, a model priced at 0) holds nothing and never touches the store.
//!
//! Budgets fail closed: when the store does not answer within [`Budgets`]' bound, a container
//! spends from a small allowance of its own (`BUDGET_OUTAGE_ALLOWANCE_USD`), then refuses.
//!
//! A signed-in user's requests run [`spending_as`] the user: each of their paid calls is also
//! held against the user's own spend of the day (`USER_BUDGET_USD_PER_DAY`), first, in the same
//! way, so one user cannot spend everyone's day and concurrent requests overshoot by at most one
//! call's worst case. The user's cap fails closed without an allowance: a store that does not
//! answer refuses the call (503).
//!
//! Users together are a pool of each agent's day: their calls are also held against the agent's
//! users' counter, capped at `USERS_BUDGET_SHARE` (half) of the agent's cap, so users spending
//! all they may never stop the backend's calls of that agent; the rest of the cap is the
//! backend's (which may also spend what users leave).
//!
//! And each user on the default cap may spend at most `USER_POOL_SHARE` (5 %) of an agent's
//! users' share a day (a counter per user and agent; a call is admitted only while it fits, the
//! day's first always), so it takes twenty accounts, not two, to spend what all users may of an
//! agent. A user an operator gave at least the default cap ([`set_user_cap`]) is vetted and not
//! held to it; and `VETTED_USERS_SHARE` (a fifth) of users' share is for vetted users only, so
//! accounts made to drain it never stop them. `UsersPoolUsedPercent` (EMF, per agent and
//! without dimensions) says how much of each users' share is spent, for the template's alarm.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use chrono::{DateTime, NaiveDate, Utc};

use crate::core::clock::Clock;
use crate::core::error::{Error, Result};
use crate::core::metrics;
use crate::core::records::{RecordStore, TOTAL, bounded};
use crate::costs::settings::BudgetCaps;

mod users;

pub use users::{
    MAX_USER_CAP_USD, Spender, UserBudget, set_user_cap, spending_as, top_spenders, user_budget, user_budget_spent,
    user_cap_key,
};
use users::{spender, user_key, user_share_key};

/// Micro-dollars: counters are integers, so concurrent adds never round.
fn micros(usd: f64) -> i64 {
    (usd.max(0.0) * 1e6).ceil() as i64
}

/// A worst case held against an agent's day; settle it with [`Budgets::settle`].
#[derive(Debug)]
#[must_use = "a hold is settled to the call's cost"]
pub struct Hold {
    agent: String,
    day: NaiveDate,
    micros: i64,
    /// Held in the store (false: free, or from the outage allowance).
    counted: bool,
    /// The user's counter the same worst case is held on, when a user is spending.
    user: Option<(String, String)>,
    /// The user's counter of this agent and the agent's users' counter, held on too when a
    /// user is spending.
    shares: Vec<(String, String)>,
}

impl Hold {
    /// A hold of nothing, for a call that costs nothing.
    pub fn free(agent: &str) -> Self {
        Self { agent: agent.to_owned(), day: NaiveDate::MIN, micros: 0, counted: false, user: None, shares: Vec::new() }
    }
}

/// Spend caps over a record store.
pub struct Budgets {
    caps: BudgetCaps,
    records: Arc<dyn RecordStore>,
    clock: Arc<dyn Clock>,
    /// How long a hold waits for the store before spending from the allowance.
    wait: Duration,
    /// What this container may still spend while the store does not answer, in micro-dollars.
    allowance: AtomicI64,
    /// Each user's daily cap in USD (0: none).
    user_cap_usd: f64,
    /// The share of each agent's cap users may spend together.
    users_share: f64,
    /// The share of that which one user on the default cap may spend.
    user_pool_share: f64,
    /// The share of it kept for vetted users.
    vetted_share: f64,
}

/// How long a day's counter is kept (the report reads spend from the cost records).
const KEEP_SECS: i64 = 3 * 86_400;

fn key(agent: &str, day: NaiveDate) -> (String, String) {
    (format!("BUDGET#{}#{agent}", day.format("%Y-%m-%d")), "spend".to_owned())
}

/// The counter of what users together spent of `agent`'s `day`.
fn pool_key(agent: &str, day: NaiveDate) -> (String, String) {
    (key(agent, day).0, "users".to_owned())
}

impl Budgets {
    /// `caps` over `records`; a hold waits `wait` for the store, then spends from
    /// `outage_allowance_usd` (this container's, for the whole outage).
    pub fn new(
        caps: BudgetCaps,
        records: Arc<dyn RecordStore>,
        clock: Arc<dyn Clock>,
        wait: Duration,
        outage_allowance_usd: f64,
    ) -> Self {
        let allowance = AtomicI64::new(micros(outage_allowance_usd));
        Self {
            caps,
            records,
            clock,
            wait,
            allowance,
            user_cap_usd: 0.0,
            users_share: 1.0,
            user_pool_share: 1.0,
            vetted_share: 0.0,
        }
    }

    /// The same budgets, users together held to `share` (0 to 1) of each agent's cap.
    pub fn with_users_share(mut self, share: f64) -> Self {
        self.users_share = share.clamp(0.0, 1.0);
        self
    }

    /// The same budgets, each user on the default cap held to `share` (0 to 1) of what users
    /// together may spend of each agent.
    pub fn with_user_pool_share(mut self, share: f64) -> Self {
        self.user_pool_share = share.clamp(0.0, 1.0);
        self
    }

    /// The same budgets, `share` (0 to 1) of what users together may spend of each agent kept
    /// for vetted users: those on the default budget spend the rest.
    pub fn with_vetted_share(mut self, share: f64) -> Self {
        self.vetted_share = share.clamp(0.0, 1.0);
        self
    }

    /// What users together may spend of `agent`'s day, in USD.
    pub fn users_cap(&self, agent: &str) -> f64 {
        self.caps.of(agent) * self.users_share
    }

    /// What users on the default budget together may spend of `agent`'s day, in USD.
    fn open_cap(&self, agent: &str) -> f64 {
        self.users_cap(agent) * (1.0 - self.vetted_share)
    }

    /// What users together have spent (and hold) of `agent`'s `day`, in USD.
    pub async fn users_spent(&self, agent: &str, day: NaiveDate) -> Result<f64> {
        let (pk, sk) = pool_key(agent, day);
        let record = self.records.get(&pk, &sk, self.clock.now().timestamp()).await?;
        Ok(record.and_then(|r| r.body[TOTAL].as_i64()).unwrap_or(0) as f64 / 1e6)
    }

    /// The same budgets, each signed-in user's spend also capped at `usd` a day (0: no cap).
    pub fn with_user_cap(mut self, usd: f64) -> Self {
        self.user_cap_usd = usd;
        self
    }

    /// Adds `delta` micro-dollars to a counter, or says why it could not (the hold stays).
    async fn adjust(&self, (pk, sk): &(String, String), delta: i64, now: DateTime<Utc>) -> Option<i64> {
        let expires = now.timestamp() + KEEP_SECS;
        match bounded(self.wait, "the budget store", self.records.add(pk, sk, delta, None, expires)).await {
            Ok(total) => total,
            Err(e) => {
                tracing::warn!(counter = pk, delta, error = %e, "budget hold not settled; it stays counted");
                None
            }
        }
    }

    /// The daily cap of `agent` in USD.
    pub fn cap(&self, agent: &str) -> f64 {
        self.caps.of(agent)
    }

    /// Holds `worst_usd` against `agent`'s spend today; `Err(BudgetExceeded)` (429) when the
    /// day's budget is spent, or the store is unreachable and the allowance too.
    pub async fn hold(&self, agent: &str, worst_usd: f64) -> Result<Hold> {
        let worst = micros(worst_usd);
        if worst == 0 {
            return Ok(Hold::free(agent));
        }
        let now = self.clock.now();
        let Some(user) = spender() else { return self.hold_agent(agent, worst, now).await };
        // An agent with no budget refuses before the user's counters are touched.
        if self.caps.of(agent) <= 0.0 {
            return self.hold_agent(agent, worst, now).await;
        }
        let (mine, vetted) = self.hold_user(&user, worst, now).await?;
        let mut shares = Vec::new();
        let hold = async {
            if !vetted && self.user_pool_share < 1.0 {
                shares.extend(self.hold_user_share(&user, agent, worst, now).await?);
            }
            shares.push(self.hold_pool(agent, worst, vetted, now).await?);
            self.hold_agent(agent, worst, now).await
        }
        .await;
        match hold {
            Ok(hold) => Ok(Hold { user: mine, shares, ..hold }),
            Err(e) => {
                // Nothing was spent: every counter held for this call is given back.
                for counter in mine.iter().chain(&shares) {
                    self.adjust(counter, -worst, now).await;
                }
                Err(e)
            }
        }
    }

    /// Holds `worst` against what users together may spend of `agent`'s day (users on the
    /// default budget: all but the vetted users' reserve): the counter's key, or 429
    /// `budget_exceeded` when that is spent, or 503 when the store does not answer (fails
    /// closed, as the user's own cap).
    async fn hold_pool(&self, agent: &str, worst: i64, vetted: bool, now: DateTime<Utc>) -> Result<(String, String)> {
        let whole_usd = self.users_cap(agent);
        let cap_usd = if vetted { whole_usd } else { self.open_cap(agent) };
        let whole = micros(whole_usd);
        let (pk, sk) = pool_key(agent, now.date_naive());
        let expires = now.timestamp() + KEEP_SECS;
        let held = async {
            if micros(cap_usd) == 0 {
                return Ok(None);
            }
            self.records.add(&pk, &sk, worst, Some(micros(cap_usd)), expires).await
        };
        match bounded(self.wait, "the budget store", held).await {
            Ok(Some(total)) => {
                emit_used("UsersPoolUsedPercent", agent, total, whole, now);
                Ok((pk, sk))
            }
            Ok(None) => {
                if micros(cap_usd) > 0 {
                    emit_used("UsersPoolUsedPercent", agent, micros(cap_usd), whole, now);
                }
                tracing::warn!(
                    agent,
                    cap_usd,
                    vetted,
                    "users' share of an agent's daily budget is spent: paid call refused"
                );
                let who = if vetted { "users" } else { "users on the default budget" };
                Err(Error::BudgetExceeded {
                    code: "budget_exceeded",
                    message: format!(
                        "{who} have spent their share (${cap_usd}) of agent {agent:?}'s budget for today (UTC); \
                         it renews at midnight UTC"
                    ),
                    retry_after_secs: crate::core::time::seconds_to_midnight(now),
                })
            }
            Err(e) => Err(store_silent(&e)),
        }
    }

    /// The agent's part of [`Budgets::hold`].
    async fn hold_agent(&self, agent: &str, worst: i64, now: DateTime<Utc>) -> Result<Hold> {
        let cap_usd = self.caps.of(agent);
        let cap = micros(cap_usd);
        let refused = || Error::BudgetExceeded {
            code: "budget_exceeded",
            message: format!(
                "agent {agent:?} has spent its budget of ${cap_usd} for today (UTC); it renews at midnight UTC"
            ),
            retry_after_secs: crate::core::time::seconds_to_midnight(now),
        };
        if cap == 0 {
            return Err(refused());
        }
        let day = now.date_naive();
        let (pk, sk) = key(agent, day);
        let expires = now.timestamp() + KEEP_SECS;
        match bounded(self.wait, "the budget store", self.records.add(&pk, &sk, worst, Some(cap), expires)).await {
            Ok(Some(total)) => {
                emit_used("BudgetUsedPercent", agent, total, cap, now);
                Ok(Hold { agent: agent.to_owned(), day, micros: worst, counted: true, user: None, shares: Vec::new() })
            }
            Ok(None) => {
                tracing::warn!(agent, cap_usd, "daily budget spent: paid call refused");
                emit_used("BudgetUsedPercent", agent, cap, cap, now);
                Err(refused())
            }
            Err(e) => self.take_allowance(agent, worst, &e.to_string()).map_err(|()| refused()),
        }
    }

    /// The outage path: this container's allowance pays, while it lasts.
    fn take_allowance(&self, agent: &str, worst: i64, why: &str) -> std::result::Result<Hold, ()> {
        let taken = self
            .allowance
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| (left >= worst).then_some(left - worst));
        match taken {
            Ok(left) => {
                tracing::warn!(
                    agent,
                    why,
                    allowance_left_usd = (left - worst) as f64 / 1e6,
                    "budget store unavailable: paid call allowed from this container's outage allowance"
                );
                let day = NaiveDate::MIN;
                Ok(Hold { agent: agent.to_owned(), day, micros: worst, counted: false, user: None, shares: Vec::new() })
            }
            Err(_) => {
                tracing::error!(
                    agent,
                    why,
                    "budget store unavailable and the outage allowance is spent: paid call refused"
                );
                Err(())
            }
        }
    }

    /// Keeps `hold` as it is (the user's part too): the call may have cost its worst case.
    pub fn keep(&self, hold: Hold) {
        if hold.counted || hold.user.is_some() || !hold.shares.is_empty() {
            tracing::info!(
                agent = hold.agent,
                held_usd = hold.micros as f64 / 1e6,
                "budget hold kept at its worst case"
            );
        }
    }

    /// Settles `hold` to `cost_usd`, what the call cost (0 if it failed). A hold of nothing
    /// that turns out to have cost something (an upstream's reported cost) adds it. Never
    /// fails: a settlement the store refuses leaves the hold counted (the budget errs closed).
    pub async fn settle(&self, hold: Hold, cost_usd: f64) {
        let now = self.clock.now();
        // A cost past its hold (an upstream's reported cost above the priced worst case): the
        // caps overshoot by the difference. Counted below as any cost is, logged, and alarmed.
        if hold.micros > 0 && micros(cost_usd) > hold.micros {
            tracing::warn!(
                agent = hold.agent,
                held_usd = hold.micros as f64 / 1e6,
                cost_usd,
                "a call cost more than its hold: the price table's worst case is too low for it"
            );
            metrics::count("SettledAboveHold", &[], 1.0);
        }
        // A free hold that cost something after all (a reported cost) is the user's too.
        let user = hold.user.or_else(|| {
            (hold.micros == 0 && cost_usd > 0.0 && self.user_cap_usd > 0.0)
                .then(spender)
                .flatten()
                .map(|user| user_key(&user, now.date_naive()))
        });
        let shares = match (hold.shares.is_empty() && hold.micros == 0 && cost_usd > 0.0, spender()) {
            (true, Some(user)) => {
                let day = now.date_naive();
                vec![user_share_key(&user, &hold.agent, day), pool_key(&hold.agent, day)]
            }
            _ => hold.shares,
        };
        let delta = micros(cost_usd) - hold.micros;
        if delta != 0 {
            for counter in &shares {
                self.adjust(counter, delta, now).await;
            }
        }
        if let Some(counter) = &user {
            // A paid call also reads back the user's total (an add of 0 when it cost its hold),
            // for the operators' board of the day's spenders.
            let total = if delta != 0 || cost_usd > 0.0 { self.adjust(counter, delta, now).await } else { None };
            if let (Some(total), Some(spender)) = (total, spender().filter(|_| cost_usd > 0.0)) {
                self.post_spender(&spender, total, now).await;
            }
        }
        let (day, held) = match (hold.counted, hold.micros) {
            (true, held) => (hold.day, held),
            (false, 0) if cost_usd > 0.0 => (now.date_naive(), 0),
            (false, _) => return,
        };
        let delta = micros(cost_usd) - held;
        if delta != 0 {
            self.adjust(&key(&hold.agent, day), delta, now).await;
        }
    }

    /// What `agent` has spent (and holds) on `day`, in USD.
    pub async fn spent(&self, agent: &str, day: NaiveDate) -> Result<f64> {
        let (pk, sk) = key(agent, day);
        let record = self.records.get(&pk, &sk, self.clock.now().timestamp()).await?;
        Ok(record.and_then(|r| r.body[TOTAL].as_i64()).unwrap_or(0) as f64 / 1e6)
    }
}

/// 503: the budget store did not answer a user's hold (`e`), which fails closed.
fn store_silent(e: &Error) -> Error {
    tracing::error!(error = %e, "budget store unavailable: a user's paid call refused");
    Error::Store("the budget store did not answer; paid calls wait until it does".into())
}

/// `name` (`BudgetUsedPercent`, `UsersPoolUsedPercent`): `total` of `cap` per agent, and
/// without dimensions for the template's alarms at 80 %.
fn emit_used(name: &str, agent: &str, total: i64, cap: i64, now: DateTime<Utc>) {
    let used = total as f64 * 100.0 / cap.max(1) as f64;
    let metric = [(name, "Percent", used)];
    metrics::emit(&metrics::render(&[("Agent", agent)], &metric, now.timestamp_millis()));
    metrics::emit(&metrics::render(&[], &metric, now.timestamp_millis()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_users_holds_are_settled_and_given_back_when_the_agent_refuses() {
        use crate::core::clock::SystemClock;
        use crate::core::records::LocalRecords;
        let dir = std::env::temp_dir().join(format!("budget-{}", uuid::Uuid::new_v4()));
        let records: Arc<dyn RecordStore> = Arc::new(LocalRecords::open(&dir).unwrap());
        let caps = BudgetCaps::parse("a=0.01,free=0,*=0").unwrap();
        let budgets = Budgets::new(caps, Arc::clone(&records), Arc::new(SystemClock), Duration::from_secs(5), 0.0)
            .with_user_cap(1.0);
        let left = || async { user_budget(&*records, 1.0, "u", Utc::now()).await.unwrap().left_usd };
        spending_as("u", async {
            let first = budgets.hold("a", 0.02).await.unwrap();
            assert!((left().await - 0.98).abs() < 1e-9, "held against the user first");
            let refused = budgets.hold("a", 0.02).await.unwrap_err();
            assert_eq!(refused.code(), "budget_exceeded");
            assert!((left().await - 0.98).abs() < 1e-9, "the agent refused: the user's hold is given back");
            assert_eq!(budgets.hold("free", 0.02).await.unwrap_err().code(), "budget_exceeded");
            assert!((left().await - 0.98).abs() < 1e-9, "an agent without a budget never touches the user's");
            budgets.settle(first, 0.005).await;
            assert!((left().await - 0.995).abs() < 1e-9, "settled to what the call cost");
        })
        .await;
        assert!((left().await - 0.995).abs() < 1e-9);
        let outside = budgets.hold("a", 0.001).await.unwrap();
        budgets.settle(outside, 0.001).await;
        assert!((left().await - 0.995).abs() < 1e-9, "a call outside the user's request is not theirs");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn worst_cases_are_whole_micro_dollars_rounded_up() {
        assert_eq!((micros(0.0), micros(0.0000001), micros(0.08), micros(-1.0)), (0, 1, 80_000, 0));
    }
}
