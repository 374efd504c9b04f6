//! The search service: one path from a validated [`Query`] to a stored, accounted answer.
//!
//! Order of work: no provider configured -> labelled mock; cache hit -> the cached answer
//! (`cached: true`, no upstream call); otherwise the provider, retried with backoff; its
//! answer's citations are cleaned, and the answer is cached, its sources stored and its cost
//! recorded before the response leaves. When every attempt fails, or nothing in the answer is
//! usable, the caller gets labelled mock data (never a 5xx), and mock data is never cached.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::analysis;
use crate::cache;
use crate::citations::{self, Rejected, Source};
use crate::clock::Clock;
use crate::error::Result;
use crate::ledger::{CostRecord, CostSource, Ledger};
use crate::pricing::PriceTable;
use crate::provider::{Answer, SearchProvider, mock};
use crate::query::Query;
use crate::records::RecordStore;
use crate::retry::{RetryPolicy, with_backoff};
use crate::sources;

/// Tokens and cost of this request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageReport {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
    pub cost_source: CostSource,
}

/// The answer to one search request (the HTTP response body of the `search` routes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchResponse {
    pub request_id: String,
    /// `search`, `competitors`, `trends` or `topic`.
    pub method: String,
    /// The upstream that answered, or `mock`.
    pub provider: String,
    pub model: String,
    pub cached: bool,
    pub mock: bool,
    /// Where the data comes from: the provider's name, or `模擬資料` for mock data.
    pub data_source: String,
    /// Why mock data was served, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_reason: Option<String>,
    pub content: String,
    /// The cleaned citation URLs, in order (seed 000's `citations`).
    pub citations: Vec<String>,
    pub images: Vec<String>,
    pub sources: Vec<Source>,
    /// Seed 000's `## 參考資料` block.
    pub references: String,
    /// Inline `[n]` markers that no source backs.
    pub unbacked_markers: Vec<u32>,
    pub rejected_citations: Vec<Rejected>,
    /// True when parts of the upstream response failed validation and were left out.
    pub partial: bool,
    pub validation_errors: Vec<String>,
    pub usage: UsageReport,
    /// False only if the sources could not be stored (the store was down); they are logged.
    pub sources_stored: bool,
    /// The structured fields of `competitors`, `trends` and `topic` (seed 000 names).
    #[serde(flatten)]
    pub data: Map<String, Value>,
}

/// Everything the search routes need, built once per process.
pub struct SearchService {
    pub provider: Option<Arc<dyn SearchProvider>>,
    pub records: Arc<dyn RecordStore>,
    pub clock: Arc<dyn Clock>,
    pub prices: PriceTable,
    pub cache_ttl: Duration,
    pub retry: RetryPolicy,
}

/// Retries for writes to our own store.
const STORE_RETRY: RetryPolicy =
    RetryPolicy { retries: 2, base: Duration::from_millis(50), max_wait: Duration::from_secs(1) };

impl SearchService {
    fn ledger(&self) -> Ledger {
        Ledger::new(Arc::clone(&self.records), STORE_RETRY)
    }

    /// Answers `query`. Never fails: upstream faults become labelled mock data.
    #[tracing::instrument(skip_all, fields(request_id = %request_id, agent = %query.agent, method = query.kind.name()))]
    pub async fn run(&self, query: &Query, request_id: &str) -> SearchResponse {
        let Some(provider) = &self.provider else {
            tracing::warn!("Perplexity API Key 未設置");
            return self.fallback(query, request_id, "no_api_key: PERPLEXITY_API_KEY is not set").await;
        };
        let key = query.cache_key();
        if let Some(mut hit) = cache::get::<SearchResponse>(&*self.records, &key, self.clock.now()).await {
            tracing::info!(cache_key = %key, "使用快取的 Perplexity 結果");
            let saved = hit.usage.cost_usd;
            hit.request_id = request_id.to_owned();
            hit.cached = true;
            hit.usage = UsageReport { input_tokens: 0, output_tokens: 0, cost_usd: 0.0, cost_source: CostSource::Free };
            self.finish(&mut hit, query, provider.name(), None, saved).await;
            return hit;
        }
        let answer = with_backoff(self.retry, provider.name(), |_| provider.answer(query)).await;
        let answer = match answer {
            Ok(answer) => answer,
            Err(e) => {
                tracing::error!(provider = provider.name(), error = %e, "upstream failed; answering with mock data");
                return self.fallback(query, request_id, &format!("upstream_failed: {e}")).await;
            }
        };
        let usage = self.price(provider.name(), query, &answer);
        let cost =
            self.cost_record(query, request_id, provider.name(), &usage, answer.upstream_id.clone(), false, false, 0.0);
        let Some(mut response) = self.build(query, request_id, provider.name(), answer, usage) else {
            // Paid for, but nothing usable: account for it, then fall back.
            self.ledger().record(&cost).await;
            return self
                .fallback(query, request_id, "unusable_response: nothing in the upstream answer matched the schema")
                .await;
        };
        let expires = self.clock.now() + chrono::Duration::from_std(self.cache_ttl).unwrap_or_default();
        let cached = response.clone();
        tokio::join!(
            cache::put(&*self.records, &key, &cached, expires),
            self.finish(&mut response, query, provider.name(), Some(cost), 0.0),
        );
        response
    }

    /// The stored sources of `request_id`; `None` if no such request was answered.
    pub async fn sources(&self, request_id: &str) -> Result<Option<Vec<Source>>> {
        sources::list(&*self.records, request_id, self.clock.now()).await
    }

    async fn fallback(&self, query: &Query, request_id: &str, reason: &str) -> SearchResponse {
        let answer = mock::answer(query);
        let usage = UsageReport { input_tokens: 0, output_tokens: 0, cost_usd: 0.0, cost_source: CostSource::Free };
        let mut response = self.build(query, request_id, "mock", answer, usage).expect("mock answers always validate");
        response.mock = true;
        response.data_source = mock::DATA_SOURCE.to_owned();
        response.fallback_reason = Some(reason.to_owned());
        self.finish(&mut response, query, "mock", None, 0.0).await;
        response
    }

    /// Stores the sources and records the cost (a free one if `cost` is `None`).
    async fn finish(
        &self,
        response: &mut SearchResponse,
        query: &Query,
        provider: &str,
        cost: Option<CostRecord>,
        saved_usd: f64,
    ) {
        let cost = cost.unwrap_or_else(|| {
            let free = UsageReport { input_tokens: 0, output_tokens: 0, cost_usd: 0.0, cost_source: CostSource::Free };
            self.cost_record(
                query,
                &response.request_id,
                provider,
                &free,
                None,
                response.cached,
                response.mock,
                saved_usd,
            )
        });
        let now = self.clock.now();
        let store = with_backoff(STORE_RETRY, "sources", |_| {
            sources::store(&*self.records, &response.request_id, &response.sources, now)
        });
        let ledger = self.ledger();
        let (stored, ()) = tokio::join!(store, ledger.record(&cost));
        response.sources_stored = match stored {
            Ok(()) => true,
            Err(e) => {
                let sources = serde_json::to_string(&response.sources).unwrap_or_default();
                tracing::error!(error = %e, request_id = %response.request_id, %sources, "sources not stored; logged here for replay");
                false
            }
        };
    }

    fn price(&self, provider: &str, query: &Query, answer: &Answer) -> UsageReport {
        let u = &answer.usage;
        let (cost_usd, cost_source) = match u.provider_cost_usd {
            Some(c) => (c, CostSource::Provider),
            None => match self.prices.cost(provider, query.model.as_str(), u.input_tokens, u.output_tokens) {
                Some(c) => (c, CostSource::PriceTable),
                None => (0.0, CostSource::Unpriced),
            },
        };
        UsageReport { input_tokens: u.input_tokens, output_tokens: u.output_tokens, cost_usd, cost_source }
    }

    #[allow(clippy::too_many_arguments)]
    fn cost_record(
        &self,
        query: &Query,
        request_id: &str,
        provider: &str,
        usage: &UsageReport,
        upstream_id: Option<String>,
        cached: bool,
        mock: bool,
        saved_usd: f64,
    ) -> CostRecord {
        CostRecord {
            request_id: request_id.to_owned(),
            agent: query.agent.clone(),
            provider: provider.to_owned(),
            model: query.model.as_str().to_owned(),
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cost_usd: usage.cost_usd,
            cost_source: usage.cost_source,
            cached,
            mock,
            saved_usd,
            upstream_id,
            timestamp: self.clock.now(),
        }
    }

    /// Builds the response from an answer; `None` if a structured method got nothing usable.
    fn build(
        &self,
        query: &Query,
        request_id: &str,
        provider: &str,
        answer: Answer,
        usage: UsageReport,
    ) -> Option<SearchResponse> {
        let structured = analysis::extract(&query.kind, &answer.content);
        let data = match (&query.kind, structured.fields) {
            (crate::query::Kind::Search, _) => Map::new(),
            (_, Some(fields)) => fields,
            (_, None) => {
                tracing::warn!(errors = ?structured.errors, "structured answer failed validation entirely");
                return None;
            }
        };
        let found = citations::extract(&answer.content, &answer.citations, &answer.search_results, self.clock.now());
        if !found.rejected.is_empty() {
            tracing::warn!(rejected = ?found.rejected, "citations refused");
        }
        let mut validation_errors = answer.schema_errors;
        validation_errors.extend(structured.errors);
        if !validation_errors.is_empty() {
            tracing::warn!(errors = ?validation_errors, "upstream response partly failed validation; kept what parsed");
        }
        Some(SearchResponse {
            request_id: request_id.to_owned(),
            method: query.kind.name().to_owned(),
            provider: provider.to_owned(),
            model: if answer.model.is_empty() { query.model.as_str().to_owned() } else { answer.model },
            cached: false,
            mock: false,
            data_source: provider.to_owned(),
            fallback_reason: None,
            citations: found.sources.iter().map(|s| s.url.clone()).collect(),
            references: citations::references_markdown(&found.sources),
            content: answer.content,
            images: answer.images,
            sources: found.sources,
            unbacked_markers: found.unbacked_markers,
            rejected_citations: found.rejected,
            partial: !validation_errors.is_empty(),
            validation_errors,
            usage,
            sources_stored: false,
            data,
        })
    }
}
