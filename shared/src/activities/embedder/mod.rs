//! The embedder port: texts in, vectors out, for activity retrieval (seed 004).
//!
//! Two adapters: [`e5::LocalEmbedder`] (multilingual-e5-small in process, the default without a
//! key, `EMBEDDING_PROVIDER=local`) and [`openai::OpenAiEmbedder`] (any OpenAI-compatible
//! `/embeddings`, `EMBEDDING_PROVIDER=openai`). Adapters make one attempt per call;
//! [`EmbeddingService`] is the one service callers use: retries inside a time box, and every call
//! accounted in the ledger (kind `embedding`).
//!
//! Each model writes its own named dense vector ([`Embedder::vector_name`]), so switching
//! provider never mixes vector spaces; the cosine floor of a dense match belongs to the model
//! too ([`Embedder::min_similarity`]).

#[cfg(feature = "vector-index")]
pub mod e5;
pub mod openai;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

use crate::core::retry::{RetryPolicy, with_backoff, within};
use crate::core::upstream::{ProviderError, Usage};
use crate::costs::ledger::{CallKind, Charge, Ledger, Outcome};

/// What a text is, for models that embed queries and documents differently (e5's `query: ` /
/// `passage: ` prefixes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// A search query or a user's stated preferences.
    Query,
    /// An activity's text. The bundled e5 embeds activities as queries instead
    /// ([`crate::activities::activity::Activity::dense_views`]): symmetric e5 ranked better.
    Passage,
}

/// A text embedding model.
#[async_trait]
pub trait Embedder: Send + Sync {
    /// Provider name for cost records and prices (`local`, `zhipu`, ...).
    fn provider(&self) -> &str;
    /// Model name (`multilingual-e5-small`, `embedding-3`).
    fn model(&self) -> &str;
    /// Length of every vector it returns.
    fn dimensions(&self) -> usize;
    /// Cosine below which a dense hit is not a match: a property of the model (e5's cosines
    /// cluster around 0.8; OpenAI-style models spread from 0).
    fn min_similarity(&self) -> f32 {
        0.5
    }
    /// How many of an activity's views ([`crate::activities::activity::Activity::dense_views`])
    /// its vector is made of: the own words only, unless the quality sets measured more for
    /// this model (`cargo xtask quality`).
    fn views(&self) -> usize {
        1
    }
    /// Whether its calls run in process and cost nothing: one dropped mid-call (a time box, a
    /// reading no longer wanted) cannot have been billed.
    fn in_process(&self) -> bool {
        false
    }
    /// Embeds `inputs` in one call; one vector per input, in order.
    async fn embed_batch(&self, inputs: &[String], input: Input) -> Result<(Vec<Vec<f32>>, Usage), ProviderError>;
}

/// Name of the dense vector a model writes and searches: `<provider>-<model>-<dimensions>` in
/// letters, digits, `-` and `_`.
pub fn vector_name(provider: &str, model: &str, dimensions: usize) -> String {
    format!("{provider}-{model}-{dimensions}")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c.to_ascii_lowercase() } else { '_' })
        .collect()
}

/// Embeds `inputs` with retries and records the call for `agent`, by `deadline` if one is
/// given. The record is written after the deadline: a call cut short is recorded as failed.
#[allow(clippy::too_many_arguments)]
pub async fn embed(
    embedder: &dyn Embedder,
    ledger: &Ledger,
    retry: RetryPolicy,
    deadline: Option<Instant>,
    agent: &str,
    request_id: &str,
    inputs: &[String],
    input: Input,
) -> Result<Vec<Vec<f32>>, ProviderError> {
    let ceiling = Usage { input_tokens: inputs.iter().map(|t| t.len() as u64).sum(), ..Usage::default() };
    let hold = ledger
        .hold(agent, embedder.provider(), embedder.model(), &ceiling)
        .await
        .map_err(|e| ProviderError::OverBudget(e.to_string()))?;
    let charge = |usage, outcome| Charge {
        request_id,
        agent,
        kind: CallKind::Embedding,
        provider: embedder.provider(),
        model: embedder.model(),
        usage,
        outcome,
        saved_usd: 0.0,
        upstream_id: None,
    };
    let nothing = Usage::default();
    let in_flight = (!embedder.in_process()).then(|| ledger.in_flight(&charge(&nothing, Outcome::Failed)));
    let attempt = |_| embedder.embed_batch(inputs, input);
    let result = match deadline {
        Some(at) => within(retry, at, embedder.provider(), attempt).await,
        None => with_backoff(retry, embedder.provider(), attempt).await,
    };
    if let Some(in_flight) = in_flight {
        in_flight.accounted();
    }
    let (usage, outcome) = match &result {
        Ok((_, usage)) => (usage.clone(), Outcome::Live),
        Err(_) => (Usage::default(), Outcome::Failed),
    };
    let charge = charge(&usage, outcome);
    // A failure that cannot have been billed is not recorded; its hold is released all the same.
    let recorded = match &result {
        Err(e) if !e.maybe_billed() => ledger.bill(&charge),
        _ => ledger.charge(&charge).await,
    };
    ledger.settle(hold, &recorded, result.as_ref().err().is_some_and(ProviderError::may_have_cost)).await;
    result.map(|(vectors, _)| vectors)
}

/// The configured embedder, or why there is none (`compose::embedder`): callers then rank
/// lexically and write points pending, saying why.
pub type Configured = Result<Arc<dyn Embedder>, String>;

/// The one embedding service: the configured embedder (or why there is none), its retries
/// inside a time box, every call accounted to the ledger. Indexing, retrieval, preferences and
/// the backfill embed through it.
#[derive(Clone)]
pub struct EmbeddingService {
    embedder: Configured,
    ledger: Ledger,
    retry: RetryPolicy,
    timeout: Duration,
}

impl EmbeddingService {
    /// `embedder` retried under `retry`, all within `timeout`, accounted in `ledger`.
    pub fn new(embedder: Configured, ledger: Ledger, retry: RetryPolicy, timeout: Duration) -> Self {
        Self { embedder, ledger, retry, timeout }
    }

    /// The same service with a time box of at least `timeout` (the backfill's large batches).
    pub fn lasting_at_least(mut self, timeout: Duration) -> Self {
        self.timeout = self.timeout.max(timeout);
        self
    }

    /// The same service without an embedder, for `reason` (lexical ranking, pending writes).
    pub fn without(mut self, reason: &str) -> Self {
        self.embedder = Err(reason.to_owned());
        self
    }

    /// How many views an activity's vector is made of ([`Embedder::views`]); 1 without an
    /// embedder.
    pub fn views(&self) -> usize {
        self.embedder.as_ref().map_or(1, |e| e.views())
    }

    /// The cosine floor of the model's dense matches; `None` without an embedder.
    pub fn min_similarity(&self) -> Option<f32> {
        self.embedder.as_ref().ok().map(|e| e.min_similarity())
    }

    /// The name of the model's vectors ([`vector_name`]); `None` without an embedder.
    pub fn vector_name(&self) -> Option<String> {
        self.embedder.as_ref().ok().map(|e| vector_name(e.provider(), e.model(), e.dimensions()))
    }

    /// Vectors of `inputs` for `agent`, or the reason to report when there are none
    /// (`no embedder …`, `embedder failed: …`, `embedder took longer than N ms`).
    pub async fn vectors(
        &self,
        agent: &str,
        request_id: &str,
        inputs: &[String],
        input: Input,
    ) -> Result<Vec<Vec<f32>>, String> {
        let embedder = self.embedder.as_deref().map_err(Clone::clone)?;
        let deadline = Instant::now() + self.timeout;
        match embed(embedder, &self.ledger, self.retry, Some(deadline), agent, request_id, inputs, input).await {
            Ok(vectors) if vectors.len() == inputs.len() => Ok(vectors),
            Ok(vectors) => Err(format!("embedder failed: {} vectors for {} inputs", vectors.len(), inputs.len())),
            Err(ProviderError::OutOfTime) => Err(format!("embedder took longer than {} ms", self.timeout.as_millis())),
            Err(e) => Err(format!("embedder failed: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn vector_names_are_safe_and_distinct_per_model() {
        assert_eq!(super::vector_name("local", "multilingual-e5-small", 384), "local-multilingual-e5-small-384");
        assert_eq!(super::vector_name("zhipu", "embedding-3", 1024), "zhipu-embedding-3-1024");
        assert_eq!(super::vector_name("openai", "text/embed.v3", 256), "openai-text_embed_v3-256");
    }
}
