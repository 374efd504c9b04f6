//! The chat model's settings: an OpenAI-compatible API; no key, the labelled mock model. Each
//! capability names its own model (`LLM_*_MODEL`, else `LLM_MODEL`) through [`model`].

use std::time::Duration;

use crate::core::config::Env;
use crate::core::error::Result;
use crate::core::secrets::Secret;

#[derive(Debug, Clone)]
pub struct Settings {
    pub api_key: Option<Secret>,
    pub base_url: String,
    /// Provider name for cost records and prices (`LLM_PROVIDER`).
    pub provider: String,
    /// Time box of one model request (`LLM_TIMEOUT_MS`).
    pub timeout: Duration,
}

impl Settings {
    pub fn read(env: &Env) -> Result<Self> {
        Ok(Self {
            api_key: env.secret("LLM_API_KEY")?,
            base_url: env.base_url("LLM_BASE_URL", "https://openrouter.ai/api/v1"),
            provider: env.get("LLM_PROVIDER").unwrap_or_else(|| "openrouter".into()),
            timeout: env.millis("LLM_TIMEOUT_MS", 120_000)?,
        })
    }
}

/// The model in `key` (`LLM_RAG_MODEL`...), else `LLM_MODEL`, else DeepSeek's chat model.
pub fn model(key: &str, env: &Env) -> String {
    env.get(key).or_else(|| env.get("LLM_MODEL")).unwrap_or_else(|| "deepseek/deepseek-chat".into())
}
