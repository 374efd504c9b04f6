//! The composition root: reads the environment once and builds the adapters a function needs.
//! Only what a function asks for is built (cold start): the DynamoDB client only with
//! `RECORD_STORE=dynamodb`, the Perplexity client only with a key.

use std::sync::Arc;

use crate::core::clock::Clock;
use crate::core::config::{Config, RecordStoreKind};
use crate::core::error::{Error, Result};
use crate::core::records::{DynamoRecords, LocalRecords, RecordStore, Timed};
use crate::core::retry::{RetryPolicy, STORE_RETRY};
use crate::costs::budget::Budgets;
use crate::costs::ledger::Ledger;
use crate::costs::pricing::PriceTable;
use crate::llm::ChatModel;
use crate::llm::mock::MockLlm;
use crate::llm::openai::OpenAiCompatible;
use crate::timeline::Timeline;
use crate::web::providers::perplexity::Perplexity;
use crate::web::providers::tavily::Tavily;
use crate::web::providers::{Breaker, SearchProvider};
use crate::web::search::{Provider, SearchService};

/// The record store `config` selects, every operation bounded by `STORE_TIMEOUT_MS`.
pub async fn records(config: &Config) -> Result<Arc<dyn RecordStore>> {
    let store: Arc<dyn RecordStore> = match &config.record_store {
        RecordStoreKind::Local => Arc::new(LocalRecords::open(&config.data_dir)?),
        RecordStoreKind::DynamoDb { table } => {
            Arc::new(DynamoRecords::from_env(table.clone(), config.store_timeout).await)
        }
    };
    Ok(Arc::new(Timed::new(store, config.store_timeout)))
}

/// The price table: the defaults, with `PRICE_TABLE_PATH` laid over them.
pub fn prices(config: &Config) -> Result<PriceTable> {
    match &config.price_table_path {
        Some(path) => PriceTable::with_overrides(path).map_err(Error::Config),
        None => Ok(PriceTable::default()),
    }
}

/// The one cost ledger over `records`, holding paid calls against the daily `BUDGETS`.
pub fn ledger(config: &Config, records: Arc<dyn RecordStore>, clock: Arc<dyn Clock>) -> Result<Ledger> {
    let budgets = Budgets::new(
        config.budgets.clone(),
        Arc::clone(&records),
        Arc::clone(&clock),
        config.budget_store_timeout,
        config.budget_outage_allowance_usd,
    )
    .with_user_cap(config.user_budget_usd_per_day);
    Ok(Ledger::new(records, Arc::new(prices(config)?), clock, STORE_RETRY).with_budgets(Arc::new(budgets)))
}

/// The Tavily adapter, if a key is configured (it also backs the `search_web` tool).
pub fn tavily(config: &Config) -> Result<Option<Arc<Tavily>>> {
    let Some(key) = &config.tavily_api_key else { return Ok(None) };
    let client = Tavily::new(&config.tavily_base_url, key.clone(), config.upstream_timeout)
        .map_err(|e| Error::Config(e.to_string()))?;
    Ok(Some(Arc::new(client)))
}

/// The configured search providers in `SEARCH_PROVIDERS` order, each with its breaker.
/// A provider without a key is left out; with none at all, answers are labelled mock data.
/// Their breakers share their openings through `records`.
pub fn providers(
    config: &Config,
    tavily: Option<Arc<Tavily>>,
    records: &Arc<dyn RecordStore>,
) -> Result<Vec<Provider>> {
    let mut out = Vec::new();
    for name in &config.search_providers {
        let adapter: Option<Arc<dyn SearchProvider>> = match name.as_str() {
            "perplexity" => match &config.perplexity_api_key {
                Some(key) => Some(Arc::new(
                    Perplexity::new(&config.perplexity_base_url, key.clone(), config.upstream_timeout)
                        .map_err(|e| Error::Config(e.to_string()))?,
                )),
                None => {
                    tracing::warn!("Perplexity API Key 未設置");
                    None
                }
            },
            "tavily" => tavily.clone().map(|t| t as Arc<dyn SearchProvider>),
            _ => None,
        };
        if let Some(adapter) = adapter {
            let breaker = Breaker::new(config.breaker_failures, config.breaker_cooldown)
                .shared(Arc::clone(records), adapter.name());
            out.push(Provider { adapter, breaker });
        }
    }
    if out.is_empty() {
        tracing::warn!("no search provider configured: answers will be labelled mock data (模擬資料)");
    }
    Ok(out)
}

/// The search service (provider chain, cache, ledger) over `records` and `clock`.
pub fn search_service(
    config: &Config,
    records: Arc<dyn RecordStore>,
    clock: Arc<dyn Clock>,
    tavily: Option<Arc<Tavily>>,
) -> Result<SearchService> {
    Ok(SearchService::new(
        providers(config, tavily, &records)?,
        Arc::clone(&records),
        ledger(config, records, Arc::clone(&clock))?,
        clock,
        config.cache_ttl,
        RetryPolicy::new(config.retry_base),
        config.search_budget,
    ))
}

/// The chat model: OpenAI-compatible with `LLM_API_KEY`, else the labelled mock.
pub fn llm(config: &Config) -> Result<Arc<dyn ChatModel>> {
    match &config.llm_api_key {
        Some(key) => Ok(Arc::new(
            OpenAiCompatible::new(&config.llm_base_url, key.clone(), &config.llm_provider, config.llm_timeout)
                .map_err(|e| Error::Config(e.to_string()))?,
        )),
        None => {
            tracing::warn!("LLM_API_KEY is not set: research answers will be labelled mock data (模擬資料)");
            Ok(Arc::new(MockLlm))
        }
    }
}

/// The timeline research over `records` and `clock`, configured by `config`.
pub fn timeline(config: &Config, records: Arc<dyn RecordStore>, clock: Arc<dyn Clock>) -> Result<Timeline> {
    let search = Arc::new(search_service(config, records, clock, tavily(config)?)?);
    Ok(Timeline::new(
        llm(config)?,
        search,
        (config.llm_milestone_model.clone(), config.llm_detail_model.clone()),
        config.detail_concurrency,
        RetryPolicy::new(config.retry_base),
        config.timeline_budget,
    ))
}

/// The embedder `EMBEDDING_PROVIDER` selects, or why there is none (the OpenAI adapter without
/// `EMBEDDING_API_KEY`). The local model is mapped on its first embedding, not here.
#[cfg(feature = "vector-index")]
pub fn embedder(config: &Config) -> Result<crate::activities::embedder::Configured> {
    use crate::activities::embedder::Embedder;
    use crate::activities::embedder::openai::OpenAiEmbedder;
    use crate::core::config::EmbedderKind;
    let embedder: Arc<dyn Embedder> = match config.embedder {
        EmbedderKind::Local => {
            Arc::new(crate::activities::embedder::e5::LocalEmbedder::new(config.embedding_model_path.clone()))
        }
        EmbedderKind::OpenAi => {
            let Some(key) = &config.embedding_api_key else {
                return Ok(Err("no embedder configured (EMBEDDING_PROVIDER=openai, EMBEDDING_API_KEY unset)".into()));
            };
            Arc::new(
                OpenAiEmbedder::new(
                    &config.embedding_base_url,
                    key.clone(),
                    &config.embedding_provider,
                    &config.embedding_model,
                    config.embedding_dimensions,
                    config.upstream_timeout,
                )
                .map_err(|e| Error::Config(e.to_string()))?,
            )
        }
    };
    Ok(Ok(embedder))
}

/// The dense vector the configured model writes and searches: its own name, its dimension.
#[cfg(feature = "vector-index")]
pub fn dense_space(config: &Config) -> crate::activities::index::DenseSpace {
    use crate::activities::embedder::{e5, vector_name};
    use crate::core::config::EmbedderKind;
    let (provider, model, dimensions) = match config.embedder {
        EmbedderKind::Local => ("local", e5::MODEL, e5::DIMENSIONS),
        EmbedderKind::OpenAi => {
            (config.embedding_provider.as_str(), config.embedding_model.as_str(), config.embedding_dimensions)
        }
    };
    crate::activities::index::DenseSpace { name: vector_name(provider, model, dimensions), dimensions }
}

/// The vector index `VECTOR_STORE` selects, for the configured model's dense vector.
#[cfg(feature = "vector-index")]
pub fn vector_index(config: &Config) -> Result<Arc<dyn crate::activities::index::VectorIndex>> {
    use crate::activities::index::edge::EdgeIndex;
    use crate::activities::index::qdrant::QdrantIndex;
    use crate::core::config::VectorStoreKind;
    Ok(match &config.vector_store {
        VectorStoreKind::Edge => Arc::new(EdgeIndex::new(
            &config.data_dir,
            &config.qdrant_collection,
            dense_space(config),
            config.edge_sharing,
        )),
        VectorStoreKind::Qdrant { url, api_key, read_only } => {
            let index = QdrantIndex::new(
                url,
                api_key.as_ref(),
                &config.qdrant_collection,
                dense_space(config),
                config.qdrant_timeout,
            )?;
            Arc::new(if *read_only { index.read_only() } else { index })
        }
    })
}

/// The embedding service of activity writes or searches, timed by `timeout`.
#[cfg(feature = "vector-index")]
fn embedding(
    config: &Config,
    ledger: Ledger,
    timeout: std::time::Duration,
) -> Result<crate::activities::embedder::EmbeddingService> {
    Ok(crate::activities::embedder::EmbeddingService::new(
        embedder(config)?,
        ledger,
        RetryPolicy::new(config.retry_base),
        timeout,
    ))
}

/// The activity write path over `index`, `records` and `clock`.
#[cfg(feature = "vector-index")]
pub fn indexer(
    config: &Config,
    index: Arc<dyn crate::activities::index::VectorIndex>,
    records: Arc<dyn RecordStore>,
    clock: Arc<dyn Clock>,
) -> Result<crate::activities::indexing::Indexer> {
    let embedding = embedding(config, ledger(config, records, Arc::clone(&clock))?, config.index_embed_timeout)?;
    Ok(crate::activities::indexing::Indexer::new(index, embedding, config.activity_timezone, clock))
}

/// Activity retrieval over `index`, `records` and `clock`.
#[cfg(feature = "vector-index")]
pub fn retrieval(
    config: &Config,
    index: Arc<dyn crate::activities::index::VectorIndex>,
    records: Arc<dyn RecordStore>,
    clock: Arc<dyn Clock>,
) -> Result<crate::activities::retrieval::Retrieval> {
    use crate::activities::retrieval::{LEDGER_WRITE_TIME, Ranking, Reasons, Retrieval};
    use crate::core::config::MatchReason;
    let ledger = ledger(config, Arc::clone(&records), Arc::clone(&clock))?.writing_within(LEDGER_WRITE_TIME);
    let embedding = embedding(config, ledger.clone(), config.rag_embed_timeout)?;
    let reasons = match config.rag_match_reason {
        MatchReason::Off => Reasons::Off,
        MatchReason::Template => Reasons::Template,
        MatchReason::Llm => Reasons::Llm {
            llm: llm(config)?,
            model: config.llm_rag_model.clone(),
            timeout: config.rag_reason_timeout,
            ledger,
            retry: RetryPolicy::new(config.retry_base),
        },
    };
    let ranking = Ranking {
        min_similarity: config.rag_min_similarity,
        fusion: config.rag_fusion,
        lexical_weight: config.rag_lexical_weight,
        zone: config.activity_timezone,
    };
    let interests = crate::activities::interests::Interests::new(records, Arc::clone(&clock));
    Ok(Retrieval::new(index, embedding, interests, reasons, ranking, clock))
}

/// The assistant (`POST /chat`) over `records` and `clock`: the chat model, retrieval in
/// process, `search_web` with a Tavily key only, the app's tools, conversations.
#[cfg(feature = "assistant")]
pub fn assistant(
    config: &Config,
    records: Arc<dyn RecordStore>,
    clock: Arc<dyn Clock>,
) -> Result<crate::assistant::Assistant> {
    use crate::assistant::{Assistant, app_tools::AppTools, history::History, intent::Classifier};
    let retrieval = retrieval(config, vector_index(config)?, Arc::clone(&records), Arc::clone(&clock))?;
    let ledger = ledger(config, Arc::clone(&records), Arc::clone(&clock))?;
    let web = tavily(config)?.map(|tavily| {
        Arc::new(crate::web::tools::Tools::new(
            Some(tavily),
            ledger.clone(),
            Arc::clone(&records),
            Arc::clone(&clock),
            config.cache_ttl,
            config.assistant_tool_timeout,
        ))
    });
    Ok(Assistant {
        llm: llm(config)?,
        model: config.llm_assistant_model.clone(),
        ledger,
        retry: RetryPolicy::new(config.retry_base),
        classifier: Classifier::new(retrieval.embedding().clone()),
        persona: config.assistant_persona.clone(),
        retrieval,
        web,
        app: AppTools::new(config.assistant_tools.clone(), config.assistant_tool_timeout)?,
        approvals: crate::assistant::approvals::Approvals::new(Arc::clone(&records), config.assistant_history_ttl),
        history: History::new(records, config.assistant_history_ttl, config.assistant_history_turns),
        budget: config.assistant_budget,
        tool_time: config.assistant_tool_timeout,
        clock,
    })
}

/// Writes back the records `lines` (exported log lines) hold for replay, of the kinds [`owed`]
/// accepts, then marks the days of the cost records among them for recomputing by the next
/// report ([`rollup::revise`](crate::costs::rollup::revise)), even when the writing failed
/// part way (what was written is counted); idempotent.
pub async fn replay(
    store: &dyn RecordStore,
    lines: impl IntoIterator<Item = String>,
) -> Result<crate::core::records::replay::Replayed> {
    use crate::core::records::replay;
    let lines: Vec<_> = lines.into_iter().filter_map(|line| replay::decode(&line)).collect();
    let days: std::collections::BTreeSet<_> =
        lines.iter().flatten().filter(|r| owed(r)).filter_map(|r| crate::costs::ledger::day_of(&r.pk)).collect();
    let done = replay::write_back(store, &lines, owed).await;
    for day in days {
        crate::costs::rollup::revise(store, day).await?;
    }
    done
}

/// Whether `record` is of a kind a replay line may hold (`cargo xtask replay`): a cost record,
/// a row of a request's source list or an article's source, its body of that type. Anything
/// else (a cache entry, a budget counter) is never written from a log.
pub fn owed(record: &crate::core::records::Record) -> bool {
    use crate::costs::ledger::CostRecord;
    use crate::web::citations::Source;
    let body = || record.body.clone();
    if record.pk.starts_with("COST#") {
        serde_json::from_value::<CostRecord>(body()).is_ok()
    } else if record.pk.starts_with("SOURCES#") {
        record.body.get("count").is_some_and(serde_json::Value::is_u64)
            || serde_json::from_value::<Source>(body()).is_ok()
    } else if record.pk.starts_with("ARTICLE#") {
        serde_json::from_value::<Source>(body()).is_ok()
    } else {
        false
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::owed;
    use crate::core::records::Record;
    use crate::web::citations::Source;

    fn record(pk: &str, body: serde_json::Value) -> Record {
        Record { pk: pk.into(), sk: "x".into(), expires_at: None, body }
    }

    #[test]
    fn only_cost_records_and_sources_may_be_replayed() {
        let source =
            Source { url: "https://a.example/x".into(), title: None, accessed_at: chrono::Utc::now(), snippet: None };
        assert!(owed(&record("SOURCES#r", serde_json::to_value(&source).unwrap())));
        assert!(owed(&record("SOURCES#r", json!({"count": 1, "storedAt": "2026-11-24T00:00:00Z"}))));
        assert!(!owed(&record("perplexity:search:abc", json!({}))), "a cache entry");
        assert!(!owed(&record("BUDGET#research", json!({"total": 0}))), "a budget counter");
        assert!(!owed(&record("COST#2026-11-24#1", json!({"costUsd": -5}))), "not a cost record");
        assert!(!owed(&record("SOURCES#r", json!({"url": 7}))), "not a source");
        let mut cited = serde_json::to_value(&source).unwrap();
        cited["firstCited"] = json!("2026-11-24T00:00:00.000000Z#r#00000");
        assert!(owed(&record("ARTICLE#0123456789abcdef#a-1", cited)), "an article's source");
        assert!(!owed(&record("ARTICLE#0123456789abcdef#a-1", json!({"total": 3}))), "not a source");
    }
}
