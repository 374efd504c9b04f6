//! The research node's settings: where its results come from, and the Codex CLI's command,
//! time boxes and retries.

use std::time::Duration;

use crate::core::config::Env;
use crate::core::error::Result;

/// The research node's source of results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResearchProvider {
    /// The search provider chain (`SEARCH_PROVIDERS`), falling back to labelled mock data.
    Search,
    /// The Codex CLI (`CODEX_COMMAND CODEX_ARGS <prompt>`).
    Codex,
}

#[derive(Debug, Clone)]
pub struct Settings {
    /// Which provider the research node uses (`RESEARCH_PROVIDER`).
    pub research_provider: ResearchProvider,
    /// The CLI provider: program, its arguments before the prompt, per-run timeout, and
    /// the first retry delay (then doubled: 5 s, 10 s, 20 s by default).
    pub codex_command: String,
    pub codex_args: Vec<String>,
    /// What goes between `codex_args` and the prompt (`--`, so a prompt is never a flag).
    pub codex_prompt_separator: Option<String>,
    pub codex_timeout: Duration,
    pub codex_retry_base: Duration,
    /// Of a whole CLI research run, attempts and waits (`RESEARCH_NODE_TIMEOUT_SECS`; seed 001:
    /// 10 minutes).
    pub research_node_timeout: Duration,
}

impl Settings {
    pub fn read(env: &Env) -> Result<Self> {
        Ok(Self {
            research_provider: env.choice(
                "RESEARCH_PROVIDER",
                "search",
                &[("search", ResearchProvider::Search), ("codex", ResearchProvider::Codex)],
            )?,
            codex_command: env.get("CODEX_COMMAND").unwrap_or_else(|| "codex".into()),
            codex_args: env
                .get("CODEX_ARGS")
                .unwrap_or_else(|| "--search".into())
                .split_whitespace()
                .map(str::to_owned)
                .collect(),
            codex_prompt_separator: match env.get("CODEX_PROMPT_SEPARATOR").as_deref() {
                None => Some("--".into()),
                Some("none") => None,
                Some(s) => Some(s.to_owned()),
            },
            codex_timeout: env.secs("CODEX_TIMEOUT_SECS", 600)?,
            codex_retry_base: env.millis("CODEX_RETRY_BASE_MS", 5000)?,
            research_node_timeout: env.secs("RESEARCH_NODE_TIMEOUT_SECS", 600)?.max(Duration::from_secs(1)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_node_searches_unless_codex_is_chosen() {
        let s = Settings::read(&Env::from_pairs(&[])).unwrap();
        assert_eq!(s.research_provider, ResearchProvider::Search);
        assert_eq!((s.codex_command.as_str(), s.codex_args.as_slice()), ("codex", &["--search".to_string()][..]));
        assert_eq!((s.codex_timeout, s.codex_retry_base), (Duration::from_secs(600), Duration::from_secs(5)));
        let e = Settings::read(&Env::from_pairs(&[("RESEARCH_PROVIDER", "bing")])).unwrap_err();
        assert!(e.to_string().contains("RESEARCH_PROVIDER"));
    }
}
