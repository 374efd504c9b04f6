//! Web search with trustworthy citations (seeds 000 and 002), served by the `search` function:
//! validated queries, the search service (cache, single flight, time budget, failover), the
//! provider port with its Perplexity, Tavily and mock adapters and their circuit breaker,
//! citation cleaning, structured-answer validation, the source stores (per request and per
//! article), and the tools for AI assistants.

pub mod analysis;
pub mod articles;
pub mod cache;
pub mod citations;
mod flight;
pub mod metrics;
pub mod providers;
pub mod query;
pub mod response;
pub mod search;
pub mod settings;
pub mod sources;
pub mod tools;
