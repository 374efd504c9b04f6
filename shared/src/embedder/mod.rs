//! The embedder port: texts in, vectors out, for activity retrieval (seed 004).
//!
//! Adapters make one attempt per call; [`embed`] is the one path callers use: it retries
//! like the search providers and accounts for every call in the ledger (kind `embedding`).
//! Without `EMBEDDING_API_KEY` there is no embedder and retrieval is lexical only (issue 8
//! brings a local model).

pub mod openai;

use async_trait::async_trait;

use crate::ledger::{CallKind, Charge, Ledger, Outcome};
use crate::provider::{ProviderError, Usage};
use crate::retry::{RetryPolicy, with_backoff};

/// A text embedding model.
#[async_trait]
pub trait Embedder: Send + Sync {
    /// Provider name for cost records and prices (`zhipu`, ...).
    fn provider(&self) -> &str;
    /// Model name (`embedding-3`).
    fn model(&self) -> &str;
    /// Length of every vector it returns.
    fn dimensions(&self) -> usize;
    /// Embeds `inputs` in one call; one vector per input, in order.
    async fn embed_batch(&self, inputs: &[String]) -> Result<(Vec<Vec<f32>>, Usage), ProviderError>;
}

/// Embeds `inputs` with retries and records the call for `agent`.
pub async fn embed(
    embedder: &dyn Embedder,
    ledger: &Ledger,
    retry: RetryPolicy,
    agent: &str,
    request_id: &str,
    inputs: &[String],
) -> Result<Vec<Vec<f32>>, ProviderError> {
    let (vectors, usage) = with_backoff(retry, embedder.provider(), |_| embedder.embed_batch(inputs)).await?;
    let charge = Charge {
        request_id,
        agent,
        kind: CallKind::Embedding,
        provider: embedder.provider(),
        model: embedder.model(),
        usage: &usage,
        outcome: Outcome::Live,
        saved_usd: 0.0,
        upstream_id: None,
    };
    ledger.charge(&charge).await;
    Ok(vectors)
}
