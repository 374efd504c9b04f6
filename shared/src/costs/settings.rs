//! What may be spent, by whom: the agents a call is billed to, their daily caps, each user's
//! quota and budget, who may set a budget, and the prices.

use std::collections::BTreeMap;
use std::time::Duration;

use super::pricing::PriceTable;
use crate::core::config::Env;
use crate::core::error::{Error, Result};

/// The agents of the seeds that call the search routes (`AGENTS` when unset): seed 000's
/// research and strategy agents, the writing agent, and seed 002's assistant (the tools).
pub const DEFAULT_AGENTS: [&str; 4] = ["research", "strategy", "writing", "assistant"];

#[derive(Debug, Clone)]
pub struct Settings {
    /// Who a caller may bill (`AGENTS`): every cost record is grouped under one of them.
    pub agents: Vec<String>,
    /// Daily spend cap of each agent (`BUDGETS`, `agent=USD,...,*=USD`).
    pub budgets: BudgetCaps,
    /// How long a budget hold or a quota count waits for the record store
    /// (`BUDGET_STORE_TIMEOUT_MS`).
    pub budget_store_timeout: Duration,
    /// What a container may spend while the budget store is unreachable
    /// (`BUDGET_OUTAGE_ALLOWANCE_USD`), then it refuses.
    pub outage_allowance_usd: f64,
    /// What one signed-in user's requests may spend a UTC day, across agents and containers
    /// (`USER_BUDGET_USD_PER_DAY`; 0: no per-user cap).
    pub user_budget_usd_per_day: f64,
    /// The share of each agent's daily cap that signed-in users' requests may spend together
    /// (`USERS_BUDGET_SHARE`, 0 to 1): the rest is the backend's, whatever users do.
    pub users_share: f64,
    /// The share (0 to 1) of what users on the default budget may spend of each agent that one
    /// of them may spend a day (`USER_POOL_SHARE`): it takes `1 / share` accounts to spend it.
    /// Vetted users (an operator gave them at least the default) are not held to it.
    pub user_pool_share: f64,
    /// The share (0 to 1) of users' share of each agent kept for vetted users, those an
    /// operator gave at least the default budget (`VETTED_USERS_SHARE`).
    pub vetted_share: f64,
    /// Requests a user may make per minute and per day on the user routes that search
    /// (`USER_QUOTA_PER_MINUTE`, `USER_QUOTA_PER_DAY`).
    pub quota_per_minute: u32,
    pub quota_per_day: u32,
    /// The IAM principals (`<account>:role/<name>`, or an ARN) that may set a user's budget
    /// (`OPERATORS`, comma-separated; unset: nobody).
    pub operators: Vec<String>,
    /// The built-in price table with `PRICES` (a JSON table of models it adds or prices anew)
    /// laid over it.
    pub prices: PriceTable,
}

impl Settings {
    pub fn read(env: &Env) -> Result<Self> {
        let count = |key: &str, default: u64| -> Result<u32> {
            Ok(u32::try_from(env.number(key, default)?).unwrap_or(u32::MAX))
        };
        let share = |key: &str, default: f64| match env.usd(key, default) {
            Ok(share) if share <= 1.0 => Ok(share),
            _ => Err(Error::Config(format!("{key} must be a number from 0 to 1"))),
        };
        Ok(Self {
            agents: env.agents("AGENTS", &DEFAULT_AGENTS.join(","))?,
            budgets: BudgetCaps::parse(&env.get("BUDGETS").unwrap_or_else(|| DEFAULT_BUDGETS.into()))
                .map_err(Error::Config)?,
            budget_store_timeout: env.millis("BUDGET_STORE_TIMEOUT_MS", 1000)?.max(Duration::from_millis(1)),
            outage_allowance_usd: env.usd("BUDGET_OUTAGE_ALLOWANCE_USD", 0.25)?,
            user_budget_usd_per_day: env.usd("USER_BUDGET_USD_PER_DAY", 0.5)?,
            users_share: share("USERS_BUDGET_SHARE", 0.5)?,
            user_pool_share: share("USER_POOL_SHARE", 0.05)?,
            vetted_share: share("VETTED_USERS_SHARE", 0.2)?,
            quota_per_minute: count("USER_QUOTA_PER_MINUTE", 30)?,
            quota_per_day: count("USER_QUOTA_PER_DAY", 1000)?,
            operators: env
                .get("OPERATORS")
                .unwrap_or_default()
                .split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(|p| match p.len() <= 256 && p.chars().all(|c| c.is_ascii_graphic()) {
                    true => Ok(p.to_owned()),
                    false => Err(Error::Config(format!("OPERATORS: {p:?} is not an IAM principal"))),
                })
                .collect::<Result<_>>()?,
            prices: match env.get("PRICES").filter(|p| !p.trim().is_empty()) {
                Some(json) => PriceTable::with_overrides(&json).map_err(Error::Config)?,
                None => PriceTable::default(),
            },
        })
    }
}

/// `BUDGETS` when unset: every agent may spend $20 a day.
pub const DEFAULT_BUDGETS: &str = "*=20";

/// The daily cap of each agent: `agent=USD,...,*=USD` (`*` for every agent not named; without
/// `*`, an agent not named may spend nothing).
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetCaps {
    named: BTreeMap<String, f64>,
    others: Option<f64>,
}

impl BudgetCaps {
    /// Parses `agent=USD,...,*=USD`.
    pub fn parse(spec: &str) -> std::result::Result<Self, String> {
        let mut caps = Self { named: BTreeMap::new(), others: None };
        for entry in spec.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (agent, usd) =
                entry.split_once('=').ok_or_else(|| format!("BUDGETS entry {entry:?} is not agent=USD"))?;
            let (agent, usd) = (agent.trim(), usd.trim());
            let usd: f64 = usd
                .parse()
                .ok()
                .filter(|u: &f64| u.is_finite() && *u >= 0.0)
                .ok_or_else(|| format!("BUDGETS: {usd:?} (for {agent}) is not an amount of USD"))?;
            if agent == "*" {
                caps.others = Some(usd);
            } else if crate::core::validate::is_id(agent, 64) {
                caps.named.insert(agent.to_ascii_lowercase(), usd);
            } else {
                return Err(format!("BUDGETS: {agent:?} is not an agent name (1-64 of a-z, 0-9, '-', '_') or *"));
            }
        }
        Ok(caps)
    }

    /// The daily cap of `agent` in USD. `indexing`, when not named, has `rag`'s cap (the budget
    /// that paid for indexing before it had its own), so a deployment's older `BUDGETS` keeps
    /// indexing running.
    pub fn of(&self, agent: &str) -> f64 {
        let named = self.named.get(agent).or_else(|| (agent == "indexing").then(|| self.named.get("rag")).flatten());
        named.copied().or(self.others).unwrap_or(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> Result<Settings> {
        Settings::read(&Env::from_pairs(pairs))
    }

    #[test]
    fn indexing_has_rags_budget_until_it_is_named() {
        let older = BudgetCaps::parse("rag=2,*=0").unwrap();
        assert_eq!((older.of("indexing"), older.of("other")), (2.0, 0.0));
        let named = BudgetCaps::parse("rag=2,indexing=3,*=0").unwrap();
        assert_eq!(named.of("indexing"), 3.0);
        assert_eq!(BudgetCaps::parse("*=1").unwrap().of("indexing"), 1.0);
    }

    #[test]
    fn caps_name_agents_and_everyone_else() {
        let caps = BudgetCaps::parse("research=5, assistant=2.5,*=1").unwrap();
        assert_eq!((caps.of("research"), caps.of("assistant"), caps.of("writing")), (5.0, 2.5, 1.0));
        assert_eq!(BudgetCaps::parse("research=5").unwrap().of("writing"), 0.0, "no * : others spend nothing");
        assert_eq!(BudgetCaps::parse(DEFAULT_BUDGETS).unwrap().of("anyone"), 20.0);
        for bad in ["research", "research=-1", "research=lots", "a b=1", "x=NaN"] {
            assert!(BudgetCaps::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn defaults_bill_the_seeds_agents_and_bad_values_are_named() {
        let s = settings(&[]).unwrap();
        assert_eq!(s.agents, DEFAULT_AGENTS);
        assert_eq!((s.quota_per_minute, s.quota_per_day, s.user_budget_usd_per_day), (30, 1000, 0.5));
        assert!(s.operators.is_empty());
        assert_eq!((s.users_share, s.user_pool_share, s.vetted_share), (0.5, 0.05, 0.2));
        for (key, bad) in [("USER_POOL_SHARE", "1.5"), ("USER_POOL_SHARE", "-0.1"), ("VETTED_USERS_SHARE", "a fifth")] {
            let e = settings(&[(key, bad)]).unwrap_err();
            assert!(e.to_string().contains(key), "{e}");
        }
        assert!(settings(&[("BUDGETS", "research")]).unwrap_err().to_string().contains("BUDGETS"));
        assert!(settings(&[("AGENTS", "a b c!")]).unwrap_err().to_string().contains("AGENTS"));
        let e = settings(&[("OPERATORS", "111:role/ops, a b")]).unwrap_err();
        assert!(e.to_string().contains("OPERATORS: \"a b\""), "{e}");
    }
}
