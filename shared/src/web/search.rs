//! The search service: one path from a validated [`Query`] to a stored, accounted answer.
//!
//! Order of work: no provider configured -> labelled mock; cache hit -> the cached answer
//! (`cached: true`, no upstream call); a miss that another request is already answering
//! (single flight: a short lease in the record store, claimed with a conditional write) ->
//! wait up to [`flight::FOLLOW_WAIT`] for its cached answer, then go alone; otherwise the provider,
//! retried with backoff; its
//! answer's citations are cleaned, and the answer is cached, its sources stored and its cost
//! recorded before the response leaves. When every attempt fails, or nothing in the answer is
//! usable, the caller gets labelled mock data (never a 5xx), and mock data is never cached.
//!
//! Time: the wait for an identical request, every attempt, retry wait and the failover end
//! inside the service's budget (`SEARCH_BUDGET_MS`); while providers remain to fail over to,
//! one may use the time left less a quarter of the budget for each of them. The records are
//! written after the budget, so a call cut short is accounted too.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::core::clock::Clock;
use crate::core::error::Result;
use crate::core::records::RecordStore;
use crate::core::retry::{RetryPolicy, within};
use crate::core::upstream::{ProviderError, Usage};
use crate::costs::budget::Hold;
use crate::costs::ledger::{CallKind, Charge, Citations, CostRecord, CostSource, Ledger, Outcome};
use crate::web::citations::{self, Source};
use crate::web::flight::{self, Flight};
use crate::web::metrics::{ProviderCall, SearchMetrics};
use crate::web::providers::tavily::Tavily;
use crate::web::providers::{Answer, Breaker, SearchProvider, mock};
use crate::web::query::{Kind, Query};
use crate::web::response::{SearchResponse, UsageReport};
use crate::web::tools::Tools;
use crate::web::{analysis, cache};
use crate::web::{articles, sources};

/// A configured search provider and its circuit breaker.
pub struct Provider {
    pub adapter: Arc<dyn SearchProvider>,
    pub breaker: Breaker,
}

/// Everything the search routes need, built once per process.
pub struct SearchService {
    /// The providers in failover order (`SEARCH_PROVIDERS`); empty means mock data only.
    providers: Vec<Provider>,
    records: Arc<dyn RecordStore>,
    ledger: Ledger,
    clock: Arc<dyn Clock>,
    cache_ttl: Duration,
    retry: RetryPolicy,
    /// The time box of a request's upstream work (see the module doc).
    budget: Duration,
}

/// What a request keeps of its invocation's time for what follows its upstream work: settling
/// the budget hold (`BUDGET_STORE_TIMEOUT_MS`, 1 s by default), a cut call's record and the
/// answer's writes (each within [`crate::core::records::replay::WRITE_TIME`]), the
/// single-flight release ([`crate::core::records::HOT_PATH`]) and sending the answer.
pub const OWED_RESERVE: Duration = Duration::from_millis(5500);

/// The time box of a request's upstream work: when it ends, and how long it is.
#[derive(Clone, Copy)]
struct TimeBox {
    until: Instant,
    length: Duration,
}

impl SearchService {
    /// `providers` in failover order (none: labelled mock data), caching in `records` for
    /// `cache_ttl`, retrying under `retry`, each request's upstream work inside `budget`.
    pub fn new(
        providers: Vec<Provider>,
        records: Arc<dyn RecordStore>,
        ledger: Ledger,
        clock: Arc<dyn Clock>,
        cache_ttl: Duration,
        retry: RetryPolicy,
        budget: Duration,
    ) -> Self {
        Self { providers, records, ledger, clock, cache_ttl, retry, budget }
    }

    /// The ledger every call of this service is accounted in.
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// The assistants' tools over this service's store, ledger, cache and budget.
    pub fn tools(&self, tavily: Option<Arc<Tavily>>) -> Tools {
        Tools::new(
            tavily,
            self.ledger.clone(),
            Arc::clone(&self.records),
            Arc::clone(&self.clock),
            self.cache_ttl,
            self.budget,
        )
    }

    /// Answers `query` from the first provider that can: when none is configured or all fail,
    /// the answer is labelled mock data. Fails only when the agent's daily budget is spent
    /// (`budget_exceeded`; labelled mock data instead if the query asks for it: `overBudget`).
    /// Emits one metrics line per request.
    ///
    /// `left`: the time the invocation has left (Lambda's deadline), when known: the upstream
    /// work then ends [`OWED_RESERVE`] before it, so the writes owed after the answer fit too.
    #[tracing::instrument(skip_all, fields(request_id = %request_id, agent = %query.agent, method = query.kind.name()))]
    pub async fn run(&self, query: &Query, request_id: &str, left: Option<Duration>) -> Result<SearchResponse> {
        let mut calls: Vec<ProviderCall> = Vec::new();
        let budget = crate::core::deadline::budget(self.budget, left, OWED_RESERVE, "the search");
        let time = TimeBox { until: Instant::now() + budget, length: budget };
        let response = match self.answer(query, request_id, time, &mut calls).await {
            Ok(response) => response,
            Err(e) if query.mock_over_budget && e.code() == "budget_exceeded" => {
                self.fallback(query, request_id, &format!("budget_exceeded: {e}")).await
            }
            Err(e) => return Err(e),
        };
        let usage = &response.usage;
        let metrics = SearchMetrics {
            provider: response.provider.clone(),
            calls,
            cached: response.cached,
            mock: response.mock,
            citations: response.sources.len(),
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cost_usd: usage.cost_usd,
        };
        metrics.emit();
        Ok(response)
    }

    async fn answer(
        &self,
        query: &Query,
        request_id: &str,
        time: TimeBox,
        calls: &mut Vec<ProviderCall>,
    ) -> Result<SearchResponse> {
        if self.providers.is_empty() {
            tracing::warn!("Perplexity API Key 未設置");
            let reason = "no_api_key: no search provider key is set (PERPLEXITY_API_KEY, TAVILY_API_KEY)";
            return Ok(self.fallback(query, request_id, reason).await);
        }
        let candidates: Vec<&Provider> = self.providers.iter().filter(|p| p.adapter.supports(&query.kind)).collect();
        if candidates.is_empty() {
            let reason = format!("unsupported: no configured provider answers {} requests", query.kind.name());
            return Ok(self.fallback(query, request_id, &reason).await);
        }
        let key = query.cache_key();
        if let Some(hit) = cache::get::<SearchResponse>(&*self.records, &key, self.clock.now()).await {
            tracing::info!(cache_key = %key, "使用快取的 Perplexity 結果");
            return Ok(self.served_from_cache(query, request_id, hit).await);
        }
        let owner = uuid::Uuid::new_v4().simple().to_string();
        match flight::follow(&*self.records, &*self.clock, &key, &owner, time.until).await {
            Flight::Answered(hit) => {
                tracing::info!(cache_key = %key, "an identical request in flight answered this one");
                Ok(self.served_from_cache(query, request_id, *hit).await)
            }
            Flight::Leads => {
                let response = self.ask(query, request_id, &key, candidates, time, calls).await;
                flight::release(&*self.records, &*self.clock, &key, &owner).await;
                response
            }
            Flight::Alone => self.ask(query, request_id, &key, candidates, time, calls).await,
        }
    }

    /// The cached answer `hit`, as this request's: free, accounted with what it saved.
    async fn served_from_cache(&self, query: &Query, request_id: &str, mut hit: SearchResponse) -> SearchResponse {
        hit.request_id = request_id.to_owned();
        hit.cached = true;
        let saved_usd = hit.usage.cost_usd;
        let cost = self.bill(query, &hit, &Usage::default(), Outcome::Cached, saved_usd, None);
        self.finish(&mut hit, cost).await;
        hit
    }

    /// Asks the candidate providers in order within `time`; labelled mock data when none answers.
    /// Each call is held against the agent's budget first: a spent budget ends the asking.
    async fn ask(
        &self,
        query: &Query,
        request_id: &str,
        key: &str,
        candidates: Vec<&Provider>,
        time: TimeBox,
        calls: &mut Vec<ProviderCall>,
    ) -> Result<SearchResponse> {
        let mut failures = Vec::new();
        let count = candidates.len();
        for (i, provider) in candidates.into_iter().enumerate() {
            let name = provider.adapter.name();
            if !provider.breaker.allows_shared(self.clock.now()).await {
                tracing::info!(provider = name, "circuit open; skipping provider");
                failures.push(format!("{name}: skipped (circuit open after repeated failures)"));
                continue;
            }
            if Instant::now() >= time.until {
                tracing::warn!(provider = name, "no time left in the budget; skipping provider");
                failures.push(format!("{name}: skipped (the request's time is spent)"));
                continue;
            }
            // Keep a quarter of the budget for each provider still to fail over to.
            let kept = (time.length / 4).saturating_mul((count - i - 1) as u32);
            let until = time.until.checked_sub(kept).filter(|t| *t > Instant::now()).unwrap_or(time.until);
            let (model, ceiling) = provider.adapter.worst_case(query);
            let hold = self.ledger.hold(&query.agent, name, model, &ceiling).await?;
            let in_flight = self.ledger.in_flight(&self.failed_call(query, request_id, name));
            let started = Instant::now();
            // Attempts that failed after the provider may have billed them (a failed run, a
            // call cut short), each recorded as a failed call whatever the next attempt does.
            let billed = std::sync::atomic::AtomicU32::new(0);
            let attempt = |_| async {
                let answer = provider.adapter.answer(query).await;
                if answer.as_ref().is_err_and(ProviderError::may_have_cost) {
                    billed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                answer
            };
            let outcome = within(self.retry, until, name, attempt).await;
            in_flight.accounted();
            let took = started.elapsed();
            // The last attempt's failure is recorded below; one cut by the deadline was dropped
            // before it could be counted here.
            let last_billed =
                outcome.as_ref().is_err_and(|e| e.may_have_cost() && !matches!(e, ProviderError::OutOfTime));
            let earlier = billed.load(std::sync::atomic::Ordering::Relaxed).saturating_sub(u32::from(last_billed));
            for _ in 0..earlier {
                self.ledger.charge(&self.failed_call(query, request_id, name)).await;
            }
            // Its hold stays counted, as for a failed call: what those attempts cost is unknown.
            let hold = if earlier > 0 {
                let cost = self.ledger.bill(&self.failed_call(query, request_id, name));
                self.ledger.settle(hold, &cost, true).await;
                Hold::free(&query.agent)
            } else {
                hold
            };
            let (failure, against_upstream) = match outcome {
                Ok(answer) => match self.answered(query, request_id, name, answer, key, hold).await {
                    Some(response) => {
                        provider.breaker.success();
                        calls.push(ProviderCall { provider: name, took, answered: true });
                        return Ok(response);
                    }
                    None => ("unusable_response: nothing in the answer matched the schema".to_owned(), true),
                },
                Err(e) => {
                    // Free as far as we know (a call cut short may be billed; its record
                    // says failed), and it counts against the provider's availability.
                    let cost = self.ledger.charge(&self.failed_call(query, request_id, name)).await;
                    self.ledger.settle(hold, &cost, e.may_have_cost()).await;
                    (e.to_string(), e.counts_against_upstream())
                }
            };
            tracing::error!(provider = name, error = %failure, "provider failed; trying the next");
            // A refusal of this request (HTTP 400) is no sign of the provider's health.
            if against_upstream && provider.breaker.failure_shared(self.clock.now()).await {
                tracing::warn!(provider = name, "circuit opened: provider skipped during its cool-down");
            }
            calls.push(ProviderCall { provider: name, took, answered: false });
            failures.push(format!("{name}: {failure}"));
        }
        Ok(self.fallback(query, request_id, &format!("upstream_failed: {}", failures.join("; "))).await)
    }

    /// The record of a failed call to `provider` for `query`: $0 as far as we know, `failed`.
    fn failed_call<'a>(&self, query: &'a Query, request_id: &'a str, provider: &'a str) -> Charge<'a> {
        static NOTHING: std::sync::LazyLock<Usage> = std::sync::LazyLock::new(Usage::default);
        Charge {
            request_id,
            agent: &query.agent,
            kind: CallKind::Search,
            provider,
            model: "",
            usage: &NOTHING,
            outcome: Outcome::Failed,
            saved_usd: 0.0,
            upstream_id: None,
        }
    }

    /// Accounts for a live answer and, if it is usable, cleans, caches and stores it.
    async fn answered(
        &self,
        query: &Query,
        request_id: &str,
        provider: &str,
        answer: Answer,
        key: &str,
        hold: Hold,
    ) -> Option<SearchResponse> {
        let usage = answer.usage.clone();
        let upstream_id = answer.upstream_id.clone();
        let (mut response, usable) = self.build(query, request_id, provider, answer);
        let cost = self.bill(query, &response, &usage, Outcome::Live, 0.0, upstream_id);
        self.ledger.settle(hold, &cost, false).await;
        if !usable {
            // Paid for, but nothing usable: account for it all the same.
            self.ledger.record(&cost).await;
            return None;
        }
        response.usage = UsageReport::from(&cost);
        if response.incomplete_reason.is_some() {
            // Cut short: served as it is, but the next request asks again.
            self.finish(&mut response, cost).await;
            return Some(response);
        }
        let cached = response.clone();
        let store = cache::put(&*self.records, key, &cached, self.clock.now(), self.cache_ttl);
        tokio::join!(store, self.finish(&mut response, cost));
        Some(response)
    }

    /// The stored sources of `request_id`; `None` if no such request was answered.
    pub async fn sources(&self, request_id: &str) -> Result<Option<Vec<Source>>> {
        sources::list(&*self.records, request_id, self.clock.now()).await
    }

    /// Adds `response`'s sources to `owner`'s article `article` (not a mock answer's: they are
    /// no one's citations); whether they are stored.
    pub async fn keep_for_article(&self, owner: &str, article: &str, response: &SearchResponse) -> bool {
        if response.mock {
            return true;
        }
        let (records, now) = (&*self.records, self.clock.now());
        articles::keep(records, owner, article, &response.request_id, &response.sources, now).await
    }

    /// The sources of `owner`'s article `article`, de-duplicated, in the order first cited, and
    /// whether there were more than are listed ([`articles::list`]).
    pub async fn article_sources(&self, owner: &str, article: &str) -> Result<(Vec<Source>, bool)> {
        articles::list(&*self.records, owner, article, self.clock.now()).await
    }

    async fn fallback(&self, query: &Query, request_id: &str, reason: &str) -> SearchResponse {
        let (mut response, _) = self.build(query, request_id, "mock", mock::answer(query));
        response.mock = true;
        response.data_source = mock::DATA_SOURCE.to_owned();
        response.fallback_reason = Some(reason.to_owned());
        let cost = self.bill(query, &response, &Usage::default(), Outcome::Mock, 0.0, None);
        self.finish(&mut response, cost).await;
        response
    }

    /// Reports `cost` as this request's usage, stores the sources and records the cost.
    async fn finish(&self, response: &mut SearchResponse, cost: CostRecord) {
        response.usage = UsageReport::from(&cost);
        let store = sources::keep(&*self.records, &response.request_id, &response.sources, self.clock.now());
        let (stored, ()) = tokio::join!(store, self.ledger.record(&cost));
        response.sources_stored = stored;
    }

    /// The cost record of `response` (its request, provider and model) for `usage`.
    fn bill(
        &self,
        query: &Query,
        response: &SearchResponse,
        usage: &Usage,
        outcome: Outcome,
        saved_usd: f64,
        upstream_id: Option<String>,
    ) -> CostRecord {
        let mut cost = self.ledger.bill(&Charge {
            request_id: &response.request_id,
            agent: &query.agent,
            kind: CallKind::Search,
            provider: &response.provider,
            model: &response.model,
            usage,
            outcome,
            saved_usd,
            upstream_id,
        });
        if outcome == Outcome::Live {
            cost.citations = Citations::counted(
                response.sources.len(),
                response.rejected_citations.len(),
                response.unbacked_markers.len(),
            );
        }
        cost
    }

    /// Builds the response from an answer, and says whether it is usable: a structured method
    /// needs at least one field that validated.
    fn build(&self, query: &Query, request_id: &str, provider: &str, answer: Answer) -> (SearchResponse, bool) {
        let structured = analysis::extract(&query.kind, &answer.content);
        let usable = query.kind == Kind::Search || structured.fields.is_some();
        if !usable {
            tracing::warn!(errors = ?structured.errors, "structured answer failed validation entirely");
        }
        let data = structured.fields.unwrap_or_default();
        let found = citations::extract(
            &answer.content,
            &answer.citations,
            &answer.search_results,
            &answer.annotations,
            self.clock.now(),
        );
        if !found.rejected.is_empty() {
            tracing::warn!(rejected = ?found.rejected, "citations refused");
        }
        let mut validation_errors = answer.schema_errors;
        validation_errors.extend(structured.errors);
        if !validation_errors.is_empty() {
            tracing::warn!(errors = ?validation_errors, "upstream response partly failed validation; kept what parsed");
        }
        let cited: Vec<String> = found.sources.iter().map(|s| s.url.clone()).collect();
        let mut sources = found.sources;
        let named = sources::field_sources(&data, &sources, self.clock.now());
        sources.extend(named);
        let response = SearchResponse {
            request_id: request_id.to_owned(),
            method: query.kind.name().to_owned(),
            provider: provider.to_owned(),
            model: answer.model,
            cached: false,
            mock: false,
            data_source: provider.to_owned(),
            fallback_reason: None,
            citations: cited,
            references: citations::references_markdown(&sources),
            content: answer.content,
            images: answer.images,
            sources,
            unbacked_markers: found.unbacked_markers,
            rejected_citations: found.rejected,
            partial: !validation_errors.is_empty() || answer.incomplete.is_some(),
            incomplete_reason: answer.incomplete,
            validation_errors,
            // Set from the cost record when the request is billed.
            usage: UsageReport {
                input_tokens: 0,
                output_tokens: 0,
                credits: 0,
                searches: 0,
                cost_usd: 0.0,
                cost_source: CostSource::Free,
            },
            sources_stored: false,
            data,
        };
        (response, usable)
    }
}
