//! Web search's settings: the providers in failover order, their keys and addresses, their
//! breaker, the cache, and the time box of one search.

use std::time::Duration;

use crate::core::config::Env;
use crate::core::error::{Error, Result};
use crate::core::secrets::Secret;

#[derive(Debug, Clone)]
pub struct Settings {
    pub perplexity_api_key: Option<Secret>,
    pub perplexity_base_url: String,
    pub tavily_api_key: Option<Secret>,
    pub tavily_base_url: String,
    /// Failover order of the search providers (names), e.g. `perplexity,tavily`.
    pub providers: Vec<String>,
    /// Consecutive failed requests after which a provider is skipped for `breaker_cooldown`.
    pub breaker_failures: u32,
    pub breaker_cooldown: Duration,
    /// How long an answer is served from the cache (`CACHE_TTL_SECS`).
    pub cache_ttl: Duration,
    /// Time box of a search's upstream work (`SEARCH_BUDGET_MS`, 25 s): waiting for an identical
    /// request, attempts, retry waits and failover all end inside it, under API Gateway's 30 s.
    pub search_budget: Duration,
    /// Agents that may ask for the expensive search (`model: sonar-pro`) (`PREMIUM_AGENTS`).
    pub premium_agents: Vec<String>,
}

impl Settings {
    pub fn read(env: &Env) -> Result<Self> {
        Ok(Self {
            perplexity_api_key: env.secret("PERPLEXITY_API_KEY")?,
            perplexity_base_url: env.base_url("PERPLEXITY_BASE_URL", "https://api.perplexity.ai"),
            tavily_api_key: match env.secret("TAVILY_API_KEY")? {
                Some(key) => Some(key),
                // Seed 002's front end named it so; a key belongs here, not in a browser bundle.
                None => {
                    let alias = env.get("VITE_TAVILY_API_KEY").and(env.secret("VITE_TAVILY_API_KEY")?);
                    if alias.is_some() {
                        tracing::warn!("VITE_TAVILY_API_KEY read as TAVILY_API_KEY: rename it (docs/search.md)");
                    }
                    alias
                }
            },
            tavily_base_url: env.base_url("TAVILY_BASE_URL", "https://api.tavily.com"),
            providers: {
                let names: Vec<String> = env
                    .get("SEARCH_PROVIDERS")
                    .unwrap_or_else(|| "perplexity,tavily".into())
                    .split(',')
                    .map(|n| n.trim().to_ascii_lowercase())
                    .filter(|n| !n.is_empty())
                    .collect();
                if let Some(bad) = names.iter().find(|n| !matches!(n.as_str(), "perplexity" | "tavily")) {
                    return Err(Error::Config(format!(
                        "SEARCH_PROVIDERS names unknown provider {bad:?} (known: perplexity, tavily)"
                    )));
                }
                names
            },
            breaker_failures: u32::try_from(env.number("BREAKER_FAILURES", 3)?).unwrap_or(u32::MAX).max(1),
            breaker_cooldown: env.secs("BREAKER_COOLDOWN_SECS", 60)?,
            cache_ttl: env.secs("CACHE_TTL_SECS", 3600)?,
            search_budget: match env.millis("SEARCH_BUDGET_MS", 25_000)? {
                budget if budget.is_zero() => {
                    return Err(Error::Config("SEARCH_BUDGET_MS must be at least 1".into()));
                }
                budget => budget,
            },
            premium_agents: env.agents("PREMIUM_AGENTS", "research")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> Result<Settings> {
        Settings::read(&Env::from_pairs(pairs))
    }

    #[test]
    fn seed_002s_tavily_key_name_is_an_alias() {
        let alias = settings(&[("VITE_TAVILY_API_KEY", "tvly-vite")]).unwrap();
        assert_eq!(alias.tavily_api_key.as_ref().and_then(Secret::given), Some("tvly-vite"));
        let both = settings(&[("VITE_TAVILY_API_KEY", "tvly-vite"), ("TAVILY_API_KEY", "tvly-own")]).unwrap();
        assert_eq!(both.tavily_api_key.as_ref().and_then(Secret::given), Some("tvly-own"), "the real name wins");
    }

    #[test]
    fn defaults_are_both_providers_without_keys() {
        let s = settings(&[]).unwrap();
        assert!(s.perplexity_api_key.is_none() && s.tavily_api_key.is_none());
        assert_eq!(s.perplexity_base_url, "https://api.perplexity.ai");
        assert_eq!(s.providers, ["perplexity", "tavily"]);
        assert_eq!((s.cache_ttl, s.search_budget), (Duration::from_secs(3600), Duration::from_secs(25)));
        let e = settings(&[("SEARCH_PROVIDERS", "perplexity,bing")]).unwrap_err();
        assert!(e.to_string().contains("bing"));
        let e = settings(&[("CACHE_TTL_SECS", "an hour")]).unwrap_err();
        assert!(e.to_string().contains("CACHE_TTL_SECS"));
    }
}
