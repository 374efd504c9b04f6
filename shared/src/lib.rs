//! The research & retrieval bundle's library, one folder per capability (see
//! `ARCHITECTURE.md` for the code map and its invariants):
//!
//! - [`core`]: errors, config, clock, retries, the upstream client, the record store, metrics;
//! - [`http`]: the functions' HTTP edge: routers, extractors (who the caller is), the one error
//!   body, `serve` (a function's `main`), server-sent events;
//! - [`costs`]: the ledger, prices and the cost report;
//! - [`llm`]: the chat-model port, its adapters and the agent loop;
//! - [`web`]: web search with citations, its providers, sources and tools;
//! - [`pipeline`]: the research node and its topic history;
//! - [`timeline`]: multi-step timeline research and its sessions;
//! - [`activities`]: activity indexing, retrieval and recommendations;
//! - `assistant`: the conversation of `POST /chat`, its modes and tools (feature `assistant`).
//!
//! Capabilities depend on `core` and on each other only one way (checked by
//! `tests/architecture.rs`); [`compose`] wires them for the functions under `functions/`.

pub mod activities;
#[cfg(feature = "assistant")]
pub mod assistant;
pub mod compose;
pub mod core;
pub mod costs;
pub mod http;
pub mod llm;
pub mod pipeline;
pub mod timeline;
pub mod web;

pub use crate::core::error::{Error, Result};
