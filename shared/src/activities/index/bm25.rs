//! The lexical channel's encoder: BM25 term weights from Qdrant Edge's tokenizer pipeline
//! (multilingual segmentation, so Chinese is cut into words; Chinese stopwords dropped).
//!
//! Documents get BM25 term-frequency weights; queries get unit weights; the index multiplies
//! in IDF (the `sparse` vector's `idf` modifier). Both index adapters use this encoder, so a
//! term hashes to the same id everywhere.

use qdrant_edge::TokenizerType;
use qdrant_edge::bm25_embed::{EdgeBm25, EdgeBm25Config};
use qdrant_edge::external::ordered_float::NotNan;

use super::SparseVector;

/// Average enriched-text length in tokens (seed 004's seven lines, a short description).
const AVERAGE_TOKENS: f64 = 60.0;

/// The encoder, built at its first use: a function's start does not build it for a request
/// that needs no lexical weights.
pub struct Bm25(std::sync::OnceLock<EdgeBm25>);

impl Bm25 {
    pub fn new() -> Self {
        Self(std::sync::OnceLock::new())
    }

    fn encoder(&self) -> &EdgeBm25 {
        self.0.get_or_init(|| {
            let config = EdgeBm25Config {
                avg_len: NotNan::new(AVERAGE_TOKENS).expect("a number"),
                tokenizer: TokenizerType::Multilingual,
                language: Some("chinese".into()),
                ..EdgeBm25Config::default()
            };
            EdgeBm25::new(config).expect("the built-in configuration is valid")
        })
    }

    /// Weights of a document (an activity's lexical text).
    pub fn document(&self, text: &str) -> SparseVector {
        let v = self.encoder().embed_document(text);
        SparseVector { indices: v.indices, values: v.values }
    }

    /// Weights of a query.
    pub fn query(&self, text: &str) -> SparseVector {
        let v = self.encoder().embed_query(text);
        SparseVector { indices: v.indices, values: v.values }
    }
}

/// Loads the tokenizer's dictionaries (the Chinese segmenter's, over a second unoptimised) on a
/// background thread, once per process (the first search calls it): the searches after it do
/// not pay for them inside their budget, and a function's start does not wait for them.
pub fn warm() {
    static WARM: std::sync::Once = std::sync::Once::new();
    WARM.call_once(|| {
        let started =
            std::thread::Builder::new().name("tokenizer-warm".into()).spawn(|| Bm25::new().query("预热中文分词"));
        if let Err(e) = started {
            tracing::warn!(error = %e, "tokenizer warm-up not started; the first query loads it");
        }
    });
}

impl Default for Bm25 {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chinese_text_is_cut_into_words_that_queries_share() {
        let bm25 = Bm25::new();
        let doc = bm25.document("标题: 白噪音读书局\n描述: 雨声白噪音里安静看书");
        let query = bm25.query("安静看书");
        assert!(doc.indices.len() >= 4, "{doc:?}");
        assert!(!query.indices.is_empty());
        assert!(query.indices.iter().all(|i| doc.indices.contains(i)), "{query:?} vs {doc:?}");
        let unrelated = bm25.query("室内冲浪");
        assert!(unrelated.indices.iter().all(|i| !doc.indices.contains(i)));
    }
}
