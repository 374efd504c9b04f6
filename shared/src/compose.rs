//! The composition root: reads the environment once and builds the adapters a function needs.
//! Only what a function asks for is built (cold start): the DynamoDB client only with
//! `RECORD_STORE=dynamodb`, the Perplexity client only with a key.

use std::sync::Arc;

use crate::clock::{Clock, SystemClock};
use crate::config::{Config, RecordStoreKind};
use crate::error::{Error, Result};
use crate::pricing::PriceTable;
use crate::provider::SearchProvider;
use crate::provider::perplexity::Perplexity;
use crate::records::{DynamoRecords, LocalRecords, RecordStore};
use crate::retry::RetryPolicy;
use crate::search::SearchService;

/// The record store `config` selects.
pub async fn records(config: &Config) -> Result<Arc<dyn RecordStore>> {
    Ok(match &config.record_store {
        RecordStoreKind::Local => Arc::new(LocalRecords::open(&config.data_dir)?),
        RecordStoreKind::DynamoDb { table } => Arc::new(DynamoRecords::from_env(table.clone()).await),
    })
}

/// The Perplexity adapter, if a key is configured.
pub fn perplexity(config: &Config) -> Result<Option<Arc<dyn SearchProvider>>> {
    let Some(key) = &config.perplexity_api_key else {
        tracing::warn!("Perplexity API Key 未設置: search answers will be labelled mock data (模擬資料)");
        return Ok(None);
    };
    let client = Perplexity::new(&config.perplexity_base_url, key.clone(), config.upstream_timeout)
        .map_err(|e| Error::Config(e.to_string()))?;
    Ok(Some(Arc::new(client)))
}

/// The search service over `records` and `clock`, configured by `config`.
pub fn search_service(config: &Config, records: Arc<dyn RecordStore>, clock: Arc<dyn Clock>) -> Result<SearchService> {
    Ok(SearchService {
        provider: perplexity(config)?,
        records,
        clock,
        prices: PriceTable::default(),
        cache_ttl: config.cache_ttl,
        retry: RetryPolicy::new(config.retry_base),
    })
}

/// The search service as the environment configures it.
pub async fn search_from_env() -> Result<SearchService> {
    let config = Config::from_env()?;
    let records = records(&config).await?;
    search_service(&config, records, Arc::new(SystemClock))
}
