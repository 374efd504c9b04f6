//! Each signed-in user's share: the user spending now ([`spending_as`]), their daily cap (the
//! default, or an operator's for them), and the day's board of who spent most.

use chrono::{DateTime, NaiveDate, Utc};

use super::{Budgets, KEEP_SECS, micros, store_silent};
use crate::core::error::{Error, Result};
use crate::core::records::{RecordStore, TOTAL, bounded, key_part};

tokio::task_local! {
    /// The signed-in user whose request is spending, set by [`spending_as`].
    static SPENDER: String;
}

/// Runs `work` as `user`'s spending: every paid call in it (on this task) is also held against
/// `user`'s daily cap.
pub async fn spending_as<F: std::future::Future>(user: &str, work: F) -> F::Output {
    SPENDER.scope(user.to_owned(), work).await
}

/// The user spending now, if any.
pub(super) fn spender() -> Option<String> {
    SPENDER.try_with(String::clone).ok()
}

/// A user's daily budget on one day: the cap and what is left of it, in USD.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UserBudget {
    pub cap_usd: f64,
    pub left_usd: f64,
}

/// `user`'s budget on `now`'s day: the operator's cap for them, else `default_usd`, and what
/// is left of it.
pub async fn user_budget(
    records: &dyn RecordStore,
    default_usd: f64,
    user: &str,
    now: DateTime<Utc>,
) -> Result<UserBudget> {
    let cap_usd = user_cap(records, default_usd, user, now).await?;
    let (pk, sk) = user_key(user, now.date_naive());
    let spent = records.get(&pk, &sk, now.timestamp()).await?.and_then(|r| r.body[TOTAL].as_i64()).unwrap_or(0);
    Ok(UserBudget { cap_usd, left_usd: (cap_usd - spent as f64 / 1e6).max(0.0) })
}

/// 429 `user_budget_exceeded`: a user's part of `agent`'s users' share, `cap_usd`, is spent
/// for `now`'s day.
fn user_share_spent(agent: &str, cap_usd: f64, now: DateTime<Utc>) -> Error {
    Error::BudgetExceeded {
        code: "user_budget_exceeded",
        message: format!(
            "you have spent your part (${cap_usd:.4}) of what users may spend on {agent:?} today (UTC); \
             it renews at midnight UTC"
        ),
        retry_after_secs: crate::core::time::seconds_to_midnight(now),
    }
}

/// 429 `user_budget_exceeded`: a user's budget of `cap_usd` for `now`'s day is spent.
pub fn user_budget_spent(cap_usd: f64, now: DateTime<Utc>) -> Error {
    Error::BudgetExceeded {
        code: "user_budget_exceeded",
        message: format!("you have spent your budget of ${cap_usd} for today (UTC); it renews at midnight UTC"),
        retry_after_secs: crate::core::time::seconds_to_midnight(now),
    }
}

/// The record of an operator's cap for one user (`PUT /backend/users/{userId}/budget`).
pub fn user_cap_key(user: &str) -> (String, String) {
    (format!("USERCAP#{}", key_part(user, 12)), "cap".to_owned())
}

/// `user`'s daily cap in USD: the operator's for this user, else `default_usd`.
async fn user_cap(records: &dyn RecordStore, default_usd: f64, user: &str, now: DateTime<Utc>) -> Result<f64> {
    Ok(operator_cap(records, user, now).await?.unwrap_or(default_usd))
}

/// The daily cap an operator set for `user`, if any.
async fn operator_cap(records: &dyn RecordStore, user: &str, now: DateTime<Utc>) -> Result<Option<f64>> {
    let (pk, sk) = user_cap_key(user);
    let set = records.get(&pk, &sk, now.timestamp()).await?;
    Ok(set.and_then(|r| r.body["usdPerDay"].as_f64()))
}

/// The most an operator may give one user a day.
pub const MAX_USER_CAP_USD: f64 = 1_000.0;

/// The body of `PUT /backend/users/{userId}/budget`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SetCap {
    /// USD a day, or `null` for the default.
    usd_per_day: Option<f64>,
}

/// Sets `user`'s daily cap as `operator` asks in `body` (`{"usdPerDay": n}`, 0 to
/// [`MAX_USER_CAP_USD`]; `null`: the default again), from the next paid call on.
pub async fn set_user_cap(
    records: &dyn RecordStore,
    operator: &str,
    user: &str,
    body: &[u8],
    now: DateTime<Utc>,
) -> Result<()> {
    let value = crate::core::json::json_object(body)?;
    if value.get("usdPerDay").is_none() {
        return Err(Error::invalid("invalid_budget", "usdPerDay is required: USD a day, or null for the default"));
    }
    let set: SetCap = crate::core::json::typed(&value, "invalid_budget")?;
    if set.usd_per_day.is_some_and(|usd| !(0.0..=MAX_USER_CAP_USD).contains(&usd)) {
        return Err(Error::invalid(
            "invalid_budget",
            format!("usdPerDay must be from 0 to {MAX_USER_CAP_USD}, or null for the default"),
        ));
    }
    let (pk, sk) = user_cap_key(user);
    let record = crate::core::records::Record {
        pk,
        sk,
        // `null`: the operator's cap ends now, and the default applies again.
        expires_at: set.usd_per_day.is_none().then(|| now.timestamp()),
        body: serde_json::json!({"usdPerDay": set.usd_per_day, "setBy": operator,
                                 "setAt": crate::core::time::format(&now)}),
    };
    records.put(&record).await?;
    tracing::info!(operator, user = key_part(user, 12), usd_per_day = ?set.usd_per_day, "a user's daily budget was set");
    Ok(())
}

/// The counter of `user`'s spend on `day`: one partition per user and day (a hash, so a claim
/// of any length is a key of fixed size).
pub(super) fn user_key(user: &str, day: NaiveDate) -> (String, String) {
    (format!("USERSPEND#{}#{}", day.format("%Y-%m-%d"), key_part(user, 12)), "spend".to_owned())
}

/// The counter of what `user` spent of `agent` on `day`, beside their day's counter.
pub(super) fn user_share_key(user: &str, agent: &str, day: NaiveDate) -> (String, String) {
    (user_key(user, day).0, format!("agent#{agent}"))
}

/// The day's board of spenders: one item per user who spent that day (`USERSPENDERS#<day>` /
/// the user's key), what they had spent at their last paid call.
pub(super) fn spender_key(user: &str, day: NaiveDate) -> (String, String) {
    (spenders_pk(day), key_part(user, 12))
}

fn spenders_pk(day: NaiveDate) -> String {
    format!("USERSPENDERS#{}", day.format("%Y-%m-%d"))
}

/// How long a day's board is kept.
pub(super) const SPENDERS_KEEP_SECS: i64 = 35 * 86_400;

/// One user's spend of a day.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Spender {
    pub user: String,
    pub usd: f64,
}

/// The `limit` users who spent most on `day`, most first. Reads the day's board: one item per
/// user who made a paid call that day, never the cost records.
pub async fn top_spenders(records: &dyn RecordStore, day: NaiveDate, limit: usize, now: i64) -> Result<Vec<Spender>> {
    let mut spenders: Vec<Spender> = records
        .query(&spenders_pk(day), "0", "~", now)
        .await?
        .into_iter()
        .filter_map(|r| Some(Spender { user: r.body["user"].as_str()?.to_owned(), usd: r.body["usd"].as_f64()? }))
        .collect();
    spenders.sort_by(|a, b| b.usd.total_cmp(&a.usd).then_with(|| a.user.cmp(&b.user)));
    spenders.truncate(limit);
    Ok(spenders)
}

impl Budgets {
    /// Holds `worst` micro-dollars against `user`'s day: the counter's key and whether an
    /// operator set the user's cap (vetted), or 429 `user_budget_exceeded`, or 503 when the
    /// store does not answer (fails closed).
    pub(super) async fn hold_user(
        &self,
        user: &str,
        worst: i64,
        now: DateTime<Utc>,
    ) -> Result<(Option<(String, String)>, bool)> {
        if self.user_cap_usd <= 0.0 {
            return Ok((None, false));
        }
        let (pk, sk) = user_key(user, now.date_naive());
        let expires = now.timestamp() + KEEP_SECS;
        let held = async {
            let set = operator_cap(&*self.records, user, now).await?;
            let cap_usd = set.unwrap_or(self.user_cap_usd);
            // A cap of 0 (an operator stopped the user) admits nothing, not even a first call.
            if cap_usd <= 0.0 {
                return Ok((cap_usd, false, None));
            }
            let total = self.records.add(&pk, &sk, worst, Some(micros(cap_usd)), expires).await?;
            // Vetted: an operator gave the user at least the default (a lower cap restricts).
            Ok::<_, Error>((cap_usd, set.is_some_and(|set| set >= self.user_cap_usd), total))
        };
        match bounded(self.wait, "the budget store", held).await {
            Ok((_, vetted, Some(_))) => Ok((Some((pk, sk)), vetted)),
            Ok((cap_usd, _, None)) => {
                tracing::warn!(cap_usd, "a user's daily budget is spent: paid call refused");
                Err(user_budget_spent(cap_usd, now))
            }
            Err(e) => Err(store_silent(&e)),
        }
    }

    /// Holds `worst` against what `user` may spend of `agent`'s users' share: the counter's
    /// key, or 429 `user_budget_exceeded` when their part is spent, or 503 when the store does
    /// not answer (fails closed).
    pub(super) async fn hold_user_share(
        &self,
        user: &str,
        agent: &str,
        worst: i64,
        now: DateTime<Utc>,
    ) -> Result<Option<(String, String)>> {
        let cap_usd = self.open_cap(agent) * self.user_pool_share;
        let cap = micros(cap_usd);
        if cap == 0 {
            return Err(user_share_spent(agent, cap_usd, now));
        }
        // Admitted only while the call fits (the first call of the day always is): an account
        // never spends past its part, so spending users' share takes `1 / share` accounts.
        let ceiling = (cap - worst + 1).max(1);
        let (pk, sk) = user_share_key(user, agent, now.date_naive());
        let expires = now.timestamp() + KEEP_SECS;
        match bounded(self.wait, "the budget store", self.records.add(&pk, &sk, worst, Some(ceiling), expires)).await {
            Ok(Some(_)) => Ok(Some((pk, sk))),
            Ok(None) => {
                tracing::warn!(agent, cap_usd, "a user's share of an agent's day is spent: paid call refused");
                Err(user_share_spent(agent, cap_usd, now))
            }
            Err(e) => Err(store_silent(&e)),
        }
    }

    /// Keeps `user`'s spend of `now`'s day, `total` micro-dollars, on the day's board of
    /// spenders ([`top_spenders`]).
    pub(super) async fn post_spender(&self, user: &str, total: i64, now: DateTime<Utc>) {
        let (pk, sk) = spender_key(user, now.date_naive());
        let user: String = user.chars().take(128).collect();
        let record = crate::core::records::Record {
            pk,
            sk,
            expires_at: Some(now.timestamp() + SPENDERS_KEEP_SECS),
            body: serde_json::json!({"user": user, "usd": total as f64 / 1e6}),
        };
        if let Err(e) = bounded(self.wait, "the spenders board", self.records.put(&record)).await {
            tracing::warn!(error = %e, "a user's spend was not posted on the day's board");
        }
    }
}
