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
    /// A run nobody reads (a stream, a status) for this long stops itself, unless it runs in
    /// the background (`RESEARCH_ABANDON_AFTER_S`).
    pub abandon_after: Duration,
    /// How long an open stream's places are held at a time (`RESEARCH_READER_SECS`, 1-840),
    /// renewed while it reads: a stream whose container died frees them within this.
    pub reader_life: Duration,
    /// Places in the pools of open streams and runs ([`crate::timeline::readers`]):
    /// `RESEARCH_SESSION_READERS`, `RESEARCH_USER_STREAMS`, `RESEARCH_USERS_STREAMS`.
    pub caps: crate::timeline::readers::Caps,
}

impl Settings {
    pub fn read(env: &Env) -> Result<Self> {
        let places = |key: &str, default: u64| -> Result<u32> {
            Ok(u32::try_from(env.number(key, default)?).unwrap_or(u32::MAX).clamp(1, 999))
        };
        Ok(Self {
            milestone_model: model("LLM_MILESTONE_MODEL", env),
            detail_model: model("LLM_DETAIL_MODEL", env),
            detail_concurrency: usize::try_from(env.number("DETAIL_CONCURRENCY", 4)?).unwrap_or(4).clamp(1, 32),
            budget: env.secs("TIMELINE_BUDGET_SECS", 840)?.max(Duration::from_secs(1)),
            abandon_after: env.secs("RESEARCH_ABANDON_AFTER_S", 120)?.max(Duration::from_secs(1)),
            reader_life: env.secs("RESEARCH_READER_SECS", 90)?.clamp(Duration::from_secs(1), Duration::from_secs(840)),
            caps: crate::timeline::readers::Caps {
                session: places("RESEARCH_SESSION_READERS", 2)?,
                user: places("RESEARCH_USER_STREAMS", 6)?,
                users: places("RESEARCH_USERS_STREAMS", 40)?,
            },
        })
    }
}
