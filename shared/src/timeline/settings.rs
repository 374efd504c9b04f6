//! Timeline research's settings: its two models, how many detail agents run at once, and the
//! time box of one research.

use std::time::Duration;

use crate::core::config::Env;
use crate::core::error::Result;
use crate::llm::settings::model;

#[derive(Debug, Clone)]
pub struct Settings {
    /// The models of the milestone and the detail agents (`LLM_MILESTONE_MODEL`,
    /// `LLM_DETAIL_MODEL`, else `LLM_MODEL`).
    pub milestone_model: String,
    pub detail_model: String,
    /// Detail agents at once (`DETAIL_CONCURRENCY`, 1-32).
    pub detail_concurrency: usize,
    /// Of one whole timeline research (`TIMELINE_BUDGET_SECS`), inside Lambda's 900 s.
    pub budget: Duration,
}

impl Settings {
    pub fn read(env: &Env) -> Result<Self> {
        Ok(Self {
            milestone_model: model("LLM_MILESTONE_MODEL", env),
            detail_model: model("LLM_DETAIL_MODEL", env),
            detail_concurrency: usize::try_from(env.number("DETAIL_CONCURRENCY", 4)?).unwrap_or(4).clamp(1, 32),
            budget: env.secs("TIMELINE_BUDGET_SECS", 840)?.max(Duration::from_secs(1)),
        })
    }
}
