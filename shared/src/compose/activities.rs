//! The activities' composition (seed 004): the embedder, the vector index, the wish facets'
//! reader, the write path and retrieval, each as the configuration selects.

use std::sync::Arc;

use super::{Config, ledger, llm};
use crate::core::clock::Clock;
use crate::core::error::{Error, Result};
use crate::core::records::RecordStore;
use crate::core::retry::RetryPolicy;
use crate::costs::ledger::Ledger;

/// The embedder `EMBEDDING_PROVIDER` selects, or why there is none (the OpenAI adapter without
/// `EMBEDDING_API_KEY`). The local model is mapped on its first embedding, not here.
pub fn embedder(config: &Config) -> Result<crate::activities::embedder::Configured> {
    use crate::activities::embedder::Embedder;
    use crate::activities::embedder::openai::OpenAiEmbedder;
    use crate::activities::settings::EmbedderKind;
    let embedder: Arc<dyn Embedder> = match config.activities.embedder {
        EmbedderKind::Local => Arc::new(crate::activities::embedder::e5::LocalEmbedder::new(
            config.activities.embedding_model_path.clone(),
        )),
        EmbedderKind::OpenAi => {
            let Some(key) = &config.activities.embedding_api_key else {
                return Ok(Err("no embedder configured (EMBEDDING_PROVIDER=openai, EMBEDDING_API_KEY unset)".into()));
            };
            Arc::new(
                OpenAiEmbedder::new(
                    &config.activities.embedding_base_url,
                    key.clone(),
                    &config.activities.embedding_provider,
                    &config.activities.embedding_model,
                    config.activities.embedding_dimensions,
                    config.core.upstream_timeout,
                )
                .map_err(|e| Error::Config(e.to_string()))?
                .with_views(config.activities.embedding_views),
            )
        }
    };
    Ok(Ok(embedder))
}

/// The dense vector the configured model writes and searches: its own name, its dimension.
pub fn dense_space(config: &Config) -> crate::activities::index::DenseSpace {
    use crate::activities::embedder::{e5, vector_name};
    use crate::activities::settings::EmbedderKind;
    let (provider, model, dimensions) = match config.activities.embedder {
        EmbedderKind::Local => ("local", e5::MODEL, e5::DIMENSIONS),
        EmbedderKind::OpenAi => (
            config.activities.embedding_provider.as_str(),
            config.activities.embedding_model.as_str(),
            config.activities.embedding_dimensions,
        ),
    };
    crate::activities::index::DenseSpace { name: vector_name(provider, model, dimensions), dimensions }
}

/// The vector index `VECTOR_STORE` selects, for the configured model's dense vector.
pub fn vector_index(config: &Config) -> Result<Arc<dyn crate::activities::index::VectorIndex>> {
    use crate::activities::index::qdrant::QdrantIndex;
    use crate::activities::settings::VectorStoreKind;
    Ok(match &config.activities.vector_store {
        #[cfg(feature = "edge")]
        VectorStoreKind::Edge => Arc::new(crate::activities::index::edge::EdgeIndex::new(
            &config.core.data_dir,
            &config.activities.qdrant_collection,
            dense_space(config),
            config.activities.edge_sharing,
        )),
        VectorStoreKind::Qdrant { url, api_key, read_only } => {
            let index = QdrantIndex::new(
                url,
                api_key.as_ref(),
                &config.activities.qdrant_collection,
                dense_space(config),
                config.activities.qdrant_timeout,
            )?;
            Arc::new(if *read_only { index.read_only() } else { index })
        }
    })
}

/// The embedding service of activity writes or searches over `embedder`, timed by `timeout`.
fn embedding(
    config: &Config,
    embedder: crate::activities::embedder::Configured,
    ledger: Ledger,
    timeout: std::time::Duration,
) -> crate::activities::embedder::EmbeddingService {
    crate::activities::embedder::EmbeddingService::new(
        embedder,
        ledger,
        RetryPolicy::new(config.core.retry_base),
        timeout,
    )
}

/// The wish facets' reader beside `ranking` ([`crate::activities::facets`]): the bundled e5's
/// own vectors where it ranks, else the bundled e5 in process (`WISH_FACETS=bundled`, mapped on
/// first use), timed by `timeout` and accounted in `ledger` to `agent`; none when
/// `RAG_WISH_WEIGHT` is 0.
fn facets(
    config: &Config,
    ranking: &crate::activities::embedder::EmbeddingService,
    ledger: Ledger,
    timeout: std::time::Duration,
    agent: &'static str,
) -> crate::activities::facets::Facets {
    use crate::activities::embedder::e5::LocalEmbedder;
    use crate::activities::facets::Facets;
    let settings = &config.activities;
    if settings.wish_weight == 0.0 {
        return Facets::off();
    }
    let bundled = settings.wish_facets.then(|| {
        let e5: Arc<dyn crate::activities::embedder::Embedder> =
            Arc::new(LocalEmbedder::new(settings.embedding_model_path.clone()));
        (embedding(config, Ok(e5), ledger, timeout), agent)
    });
    Facets::new(ranking, bundled)
}

/// The activity write path over `index`, `records` and `clock`.
pub fn indexer(
    config: &Config,
    index: Arc<dyn crate::activities::index::VectorIndex>,
    records: Arc<dyn RecordStore>,
    clock: Arc<dyn Clock>,
) -> Result<crate::activities::indexing::Indexer> {
    use crate::activities::indexing::{self, Indexer};
    let ledger = ledger(config, records, Arc::clone(&clock))?;
    let embedding = embedding(config, embedder(config)?, ledger.clone(), config.activities.index_embed_timeout);
    let facets = facets(config, &embedding, ledger, config.activities.index_embed_timeout, indexing::AGENT);
    Ok(Indexer::new(index, embedding, config.activities.timezone, clock).with_facets(facets))
}

/// Activity retrieval over `index`, `records` and `clock`.
pub fn retrieval(
    config: &Config,
    index: Arc<dyn crate::activities::index::VectorIndex>,
    records: Arc<dyn RecordStore>,
    clock: Arc<dyn Clock>,
) -> Result<crate::activities::retrieval::Retrieval> {
    use crate::activities::reasons;
    use crate::activities::retrieval::{LEDGER_WRITE_TIME, Ranking, Reasons, Retrieval};
    use crate::activities::settings::MatchReason;
    let ledger = ledger(config, Arc::clone(&records), Arc::clone(&clock))?.writing_within(LEDGER_WRITE_TIME);
    let embedding = embedding(config, embedder(config)?, ledger.clone(), config.activities.search_embed_timeout);
    let facets = facets(config, &embedding, ledger.clone(), config.activities.search_embed_timeout, reasons::AGENT);
    let reasons = match config.activities.match_reason {
        MatchReason::Off => Reasons::Off,
        MatchReason::Template => Reasons::Template,
        MatchReason::Llm => Reasons::Llm {
            llm: llm(config)?,
            model: config.activities.reason_model.clone(),
            timeout: config.activities.reason_timeout,
            ledger,
            retry: RetryPolicy::new(config.core.retry_base),
        },
    };
    let ranking = Ranking {
        min_similarity: config.activities.min_similarity,
        fusion: config.activities.fusion,
        lexical_weight: config.activities.lexical_weight,
        wish_weight: config.activities.wish_weight,
        shaping: config.activities.shaping,
        zone: config.activities.timezone,
    };
    let interests = crate::activities::interests::Interests::new(records, Arc::clone(&clock));
    Ok(Retrieval::new(index, embedding, interests, reasons, ranking, clock).with_facets(facets))
}
