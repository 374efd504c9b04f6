//! The research & retrieval bundle's library: domain types, ports (traits) and their adapters,
//! and the citation logic. Functions under `functions/` are thin entrypoints over it; they
//! build adapters through [`compose`] and hand them to plain async handlers.

pub mod activity;
pub mod agent;
pub mod analysis;
pub mod api;
pub mod auth;
#[cfg(feature = "vector-index")]
pub mod backfill;
pub mod cache;
pub mod citations;
pub mod clock;
pub mod compose;
pub mod config;
pub mod embedder;
pub mod error;
#[cfg(feature = "vector-index")]
pub mod index;
#[cfg(feature = "vector-index")]
pub mod indexing;
#[cfg(feature = "vector-index")]
pub mod interests;
pub mod ledger;
pub mod llm;
pub mod metrics;
pub mod pricing;
pub mod provider;
#[cfg(feature = "vector-index")]
pub mod quality;
pub mod query;
#[cfg(feature = "vector-index")]
pub mod reasons;
pub mod records;
pub mod report;
pub mod research_node;
#[cfg(feature = "vector-index")]
pub mod retrieval;
pub mod retry;
pub mod script;
pub mod search;
pub mod sessions;
pub mod sources;
pub mod timeline;
pub mod tools;
pub mod topics;
pub mod when;

pub use error::{Error, Result};
