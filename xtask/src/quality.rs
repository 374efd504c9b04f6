//! `cargo xtask quality`: the intent dev set (`benches/intent/`) through activity retrieval
//! with the bundled embedder, fully offline: nDCG@10, Recall@20 and MRR per query kind and
//! split, for lexical only, dense only, 50/50 RRF and the configured fusion.

use std::sync::Arc;

use serde_json::Value;
use shared::clock::{Clock, ManualClock};
use shared::config::{Config, Fusion};
use shared::quality::{Scores, evaluate, load};
use shared::records::{LocalRecords, RecordStore};
use shared::retrieval::Retrieval;

use crate::Result;

/// The dev set's reference now: Sunday 2026-11-22, 12:00 in Shanghai.
const NOW: &str = "2026-11-22T04:00:00Z";

/// The dev set indexed into a fresh Edge shard, and the configured retrieval over it.
pub async fn prepare(dir: &std::path::Path, env: &[(&str, &str)]) -> Result<Retrieval> {
    crate::ensure_model()?;
    let (activities, _) = load(&crate::root().join("benches/intent"))?;
    let data_dir = dir.display().to_string();
    let mut vars: Vec<(&str, &str)> =
        vec![("DATA_DIR", &data_dir), ("EDGE_SHARING", "exclusive"), ("RAG_MATCH_REASON", "off")];
    vars.extend_from_slice(env);
    let config = Config::from_lookup(|k| {
        vars.iter().rev().find(|(n, _)| *n == k).map(|(_, v)| v.to_string()).or_else(|| std::env::var(k).ok())
    })?;
    let records: Arc<dyn RecordStore> = Arc::new(LocalRecords::open(dir)?);
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(NOW.parse()?));
    let index = shared::compose::vector_index(&config)?;
    let indexer = shared::compose::indexer(&config, Arc::clone(&index), Arc::clone(&records), Arc::clone(&clock))?;
    for batch in activities.chunks(100) {
        let parsed = shared::indexing::Indexer::parse(Value::Array(batch.to_vec()))?;
        let report = indexer.write(&parsed, false, "quality-index").await?;
        if let Some(reason) = report.pending_reason {
            return Err(format!("the dev set could not be embedded: {reason}").into());
        }
    }
    Ok(shared::compose::retrieval(&config, index, records, clock)?)
}

pub async fn run() -> Result {
    let dir = tempfile::tempdir()?;
    let (_, queries) = load(&crate::root().join("benches/intent"))?;
    let started = std::time::Instant::now();
    let tuned = prepare(dir.path(), &[]).await?;
    println!(
        "== intent quality: {} queries on {} (indexed in {:.1} s, multilingual-e5-small, offline)",
        queries.len(),
        crate::root().join("benches/intent").display(),
        started.elapsed().as_secs_f64()
    );
    let configured = tuned.lexical_weight;
    let variant = |f: &dyn Fn(&mut Retrieval)| -> Result<Retrieval> {
        let mut r = clone_of(&tuned);
        f(&mut r);
        Ok(r)
    };
    let variants: Vec<(String, Retrieval)> = vec![
        ("lexical only (BM25)".into(), variant(&|r| r.embedder = Err("lexical baseline".into()))?),
        ("dense only".into(), variant(&|r| r.fusion = Fusion::Dense)?),
        ("RRF 50/50".into(), variant(&|r| r.lexical_weight = 1.0)?),
        (format!("configured (RRF, lexical weight {configured})"), variant(&|_| {})?),
    ];
    println!("{:<40} {:<10} {:<5} {:>3} {:>8} {:>9} {:>6}", "pipeline", "kind", "split", "n", "nDCG@10", "Recall@20", "MRR");
    for (name, retrieval) in &variants {
        let scores = evaluate(retrieval, &queries).await?;
        for ((kind, split), s) in &scores {
            print_row(name, kind, split, s);
        }
    }
    Ok(())
}

fn print_row(name: &str, kind: &str, split: &str, s: &Scores) {
    println!(
        "{name:<40} {kind:<10} {split:<5} {:>3} {:>8.3} {:>9.3} {:>6.3}",
        s.queries, s.ndcg10, s.recall20, s.mrr
    );
}

/// A retrieval sharing `r`'s index, embedder and stores.
fn clone_of(r: &Retrieval) -> Retrieval {
    Retrieval {
        index: Arc::clone(&r.index),
        embedder: r.embedder.clone(),
        ledger: r.ledger.clone(),
        bm25: Arc::clone(&r.bm25),
        clock: Arc::clone(&r.clock),
        retry: r.retry,
        embed_timeout: r.embed_timeout,
        min_similarity: r.min_similarity,
        fusion: r.fusion,
        lexical_weight: r.lexical_weight,
        reasons: shared::retrieval::Reasons::Off,
        interests: shared::interests::Interests {
            records: Arc::clone(&r.interests.records),
            clock: Arc::clone(&r.interests.clock),
        },
        zone: r.zone,
    }
}
