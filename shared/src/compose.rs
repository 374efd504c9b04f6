//! The composition root: reads the environment once ([`Config`]) and builds the adapters a
//! function needs. Only what a function asks for is built (cold start): the DynamoDB client only
//! with `RECORD_STORE=dynamodb`, the Perplexity client only with a key.

use std::sync::Arc;

use crate::core::clock::Clock;
use crate::core::config::{Env, RecordStoreKind};
use crate::core::error::{Error, Result};
use crate::core::records::{DynamoRecords, LocalRecords, RecordStore, Timed};
use crate::core::retry::{RetryPolicy, STORE_RETRY};
use crate::costs::budget::Budgets;
use crate::costs::ledger::Ledger;
use crate::llm::ChatModel;
use crate::llm::mock::MockLlm;
use crate::llm::openai::OpenAiCompatible;
use crate::timeline::Timeline;
use crate::web::providers::perplexity::Perplexity;
use crate::web::providers::tavily::Tavily;
use crate::web::providers::{Breaker, SearchProvider};
use crate::web::search::{Provider, SearchService};

#[cfg(feature = "vector-index")]
mod activities;
#[cfg(feature = "vector-index")]
pub use activities::{dense_space, embedder, indexer, retrieval, vector_index};

/// Every setting a function reads, each part read and checked by the capability that owns it.
/// A function built without a feature neither has nor reads that feature's part.
#[derive(Debug, Clone)]
pub struct Config {
    pub core: crate::core::config::Settings,
    pub http: crate::http::settings::Settings,
    pub costs: crate::costs::settings::Settings,
    pub web: crate::web::settings::Settings,
    pub llm: crate::llm::settings::Settings,
    pub pipeline: crate::pipeline::settings::Settings,
    pub timeline: crate::timeline::settings::Settings,
    #[cfg(feature = "vector-index")]
    pub activities: crate::activities::settings::Settings,
    #[cfg(feature = "assistant")]
    pub assistant: crate::assistant::settings::Settings,
}

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Result<Self> {
        Self::read(&Env::process())
    }

    /// Reads the variables `lookup` gives (a test passes a map). Empty values count as unset.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self> {
        Self::read(&Env::from_lookup(lookup))
    }

    /// Every part from `env`; the first mistake found names its variable. A paid model the
    /// price table does not price is one ([`Config::check_prices`]).
    pub fn read(env: &Env) -> Result<Self> {
        let config = Self {
            core: crate::core::config::Settings::read(env)?,
            http: crate::http::settings::Settings::read(env)?,
            costs: crate::costs::settings::Settings::read(env)?,
            web: crate::web::settings::Settings::read(env)?,
            llm: crate::llm::settings::Settings::read(env)?,
            pipeline: crate::pipeline::settings::Settings::read(env)?,
            timeline: crate::timeline::settings::Settings::read(env)?,
            #[cfg(feature = "vector-index")]
            activities: crate::activities::settings::Settings::read(env)?,
            #[cfg(feature = "assistant")]
            assistant: crate::assistant::settings::Settings::read(env)?,
        };
        config.check_prices()?;
        Ok(config)
    }

    /// Refuses a paid model (a chat model with `LLM_API_KEY`, an embeddings model with
    /// `EMBEDDING_API_KEY`) that the price table does not price: its calls could hold no worst
    /// case against the budgets, and would be reported as costing $0.
    fn check_prices(&self) -> Result<()> {
        let table = &self.costs.prices;
        let mut paid: Vec<(&str, &str, &str)> = Vec::new();
        let llm = self.llm.provider.as_str();
        if self.llm.api_key.is_some() {
            paid.push(("LLM_MILESTONE_MODEL", llm, &self.timeline.milestone_model));
            paid.push(("LLM_DETAIL_MODEL", llm, &self.timeline.detail_model));
            #[cfg(feature = "assistant")]
            paid.push(("LLM_ASSISTANT_MODEL", llm, &self.assistant.model));
            #[cfg(feature = "vector-index")]
            paid.push(("LLM_RAG_MODEL", llm, &self.activities.reason_model));
        }
        #[cfg(feature = "vector-index")]
        if self.activities.embedder == crate::activities::settings::EmbedderKind::OpenAi
            && self.activities.embedding_api_key.is_some()
        {
            paid.push(("EMBEDDING_MODEL", &self.activities.embedding_provider, &self.activities.embedding_model));
        }
        match paid.into_iter().find(|(_, provider, model)| !table.prices(provider, model)) {
            None => Ok(()),
            Some((variable, provider, model)) => Err(Error::Config(format!(
                "{variable}: the price table has no \"{provider}/{model}\" (the provider's name, then the model; \
                 LLM_MODEL stands for each LLM_*_MODEL not set): price it in PRICES (the stack's Prices \
                 parameter, docs/costs.md#prices) or choose a priced model, since an unpriced model's calls cannot be held \
                 against the budgets"
            ))),
        }
    }
}

/// The record store `config` selects, every operation bounded by `STORE_TIMEOUT_MS`.
pub async fn records(config: &Config) -> Result<Arc<dyn RecordStore>> {
    let store: Arc<dyn RecordStore> = match &config.core.record_store {
        RecordStoreKind::Local => Arc::new(LocalRecords::open(&config.core.data_dir)?),
        RecordStoreKind::DynamoDb { table } => {
            Arc::new(DynamoRecords::from_env(table.clone(), config.core.store_timeout).await)
        }
    };
    Ok(Arc::new(Timed::new(store, config.core.store_timeout)))
}

/// The one cost ledger over `records`, holding paid calls against the daily `BUDGETS`.
pub fn ledger(config: &Config, records: Arc<dyn RecordStore>, clock: Arc<dyn Clock>) -> Result<Ledger> {
    let budgets = Budgets::new(
        config.costs.budgets.clone(),
        Arc::clone(&records),
        Arc::clone(&clock),
        config.costs.budget_store_timeout,
        config.costs.outage_allowance_usd,
    )
    .with_user_cap(config.costs.user_budget_usd_per_day)
    .with_users_share(config.costs.users_share)
    .with_user_pool_share(config.costs.user_pool_share)
    .with_vetted_share(config.costs.vetted_share);
    Ok(Ledger::new(records, Arc::new(config.costs.prices.clone()), clock, STORE_RETRY).with_budgets(Arc::new(budgets)))
}

/// The Tavily adapter, if a key is configured (it also backs the `search_web` tool).
pub fn tavily(config: &Config) -> Result<Option<Arc<Tavily>>> {
    let Some(key) = &config.web.tavily_api_key else { return Ok(None) };
    let client = Tavily::new(&config.web.tavily_base_url, key.clone(), config.core.upstream_timeout)
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
    for name in &config.web.providers {
        let adapter: Option<Arc<dyn SearchProvider>> = match name.as_str() {
            "perplexity" => match &config.web.perplexity_api_key {
                Some(key) => Some(Arc::new(
                    Perplexity::new(&config.web.perplexity_base_url, key.clone(), config.core.upstream_timeout)
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
            let breaker = Breaker::new(config.web.breaker_failures, config.web.breaker_cooldown)
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
        config.web.cache_ttl,
        RetryPolicy::new(config.core.retry_base),
        config.web.search_budget,
    ))
}

/// The chat model: OpenAI-compatible with `LLM_API_KEY`, else the labelled mock.
pub fn llm(config: &Config) -> Result<Arc<dyn ChatModel>> {
    match &config.llm.api_key {
        Some(key) => Ok(Arc::new(
            OpenAiCompatible::new(&config.llm.base_url, key.clone(), &config.llm.provider, config.llm.timeout)
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
        (config.timeline.milestone_model.clone(), config.timeline.detail_model.clone()),
        config.timeline.detail_concurrency,
        RetryPolicy::new(config.core.retry_base),
        config.timeline.budget,
    ))
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
            config.web.cache_ttl,
            config.assistant.tool_timeout,
        ))
    });
    Ok(Assistant {
        llm: llm(config)?,
        model: config.assistant.model.clone(),
        ledger,
        retry: RetryPolicy::new(config.core.retry_base),
        classifier: Classifier::new(retrieval.embedding().clone()),
        persona: config.assistant.persona.clone(),
        retrieval,
        web,
        app: AppTools::new(config.assistant.tools.clone(), config.assistant.tool_timeout)?,
        approvals: crate::assistant::approvals::Approvals::new(Arc::clone(&records), config.assistant.history_ttl),
        history: History::new(records, config.assistant.history_ttl, config.assistant.history_turns),
        budget: config.assistant.budget,
        tool_time: config.assistant.tool_timeout,
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

    use super::{Config, owed};
    use crate::core::config::Env;
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

    #[test]
    fn no_secret_shows_in_the_whole_configuration() {
        let secrets = [
            ("PERPLEXITY_API_KEY", "pplx-very-secret"),
            ("TAVILY_API_KEY", "tvly-very-secret"),
            ("LLM_API_KEY", "llm-very-secret"),
            ("STREAM_TOKEN_KEY", "stream-very-secret-0123456789abcdef"),
        ];
        let config = Config::read(&Env::from_pairs(&secrets));
        let shown = format!("{:?}", config.unwrap());
        assert!(!shown.contains("very-secret"), "{shown}");
    }

    #[test]
    fn a_bad_value_names_its_variable_whichever_capability_reads_it() {
        for (key, bad) in [
            ("STORE_TIMEOUT_MS", "soon"),
            ("USER_CLAIM", "a claim"),
            ("BUDGETS", "research"),
            ("SEARCH_PROVIDERS", "bing"),
            ("LLM_TIMEOUT_MS", "-1"),
            ("RESEARCH_PROVIDER", "bing"),
            ("TIMELINE_BUDGET_SECS", "1.5"),
        ] {
            let e = Config::read(&Env::from_pairs(&[(key, bad)])).unwrap_err();
            assert!(e.to_string().contains(key) && e.code() == "misconfigured", "{key}: {e}");
        }
    }
}
