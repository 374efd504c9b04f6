//! Activity recommendations (seed 004), served by `index-activity`, `rag-search` and `backfill`:
//! the activity model and its vibe vocabulary, time wishes in queries, what a wish wants
//! ([`wish`]), indexing, retrieval and
//! its ranking maths, user interests and whereabouts, match reasons, the backfill, and the two ports with their
//! adapters: the vector index (Qdrant Edge in process, the Qdrant server) and the embedder
//! (bundled multilingual-e5-small, any OpenAI-compatible API).

pub mod activity;
#[cfg(feature = "vector-index")]
pub mod backfill;
pub mod embedder;
#[cfg(feature = "vector-index")]
pub mod facets;
#[cfg(feature = "vector-index")]
pub mod index;
#[cfg(feature = "vector-index")]
pub mod indexing;
#[cfg(feature = "vector-index")]
pub mod interests;
#[cfg(feature = "vector-index")]
pub mod ranking;
#[cfg(feature = "vector-index")]
pub mod reasons;
#[cfg(feature = "vector-index")]
pub mod request;
#[cfg(feature = "vector-index")]
pub mod retrieval;
#[cfg(feature = "vector-index")]
pub mod settings;
pub mod vibes;
pub mod when;
#[cfg(feature = "vector-index")]
pub mod whereabouts;
pub mod wish;

/// The partition of `user`'s own records: interests, preferences ([`interests`]) and places
/// ([`whereabouts`]).
#[cfg(feature = "vector-index")]
pub(crate) fn user_pk(user: &str) -> String {
    format!("USER#{user}")
}
