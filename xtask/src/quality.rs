//! `cargo xtask quality`: the intent dev set (`benches/intent/`) through activity retrieval
//! with the bundled embedder, fully offline: nDCG@10, Recall@20 and MRR per query kind and
//! split, for lexical only, dense only, 50/50 RRF and the configured fusion. `RAG_*`
//! variables in the environment change the configured pipeline.

use std::sync::Arc;

use shared::config::Fusion;
use shared::quality::{evaluate, prepare};
use shared::records::LocalRecords;
use shared::retrieval::Retrieval;

use crate::Result;

pub async fn run() -> Result {
    crate::ensure_model()?;
    let set = crate::root().join("benches/intent");
    let tmp = tempfile::tempdir()?;
    let config = shared::quality::config(tmp.path(), |k| std::env::var(k).ok())?;
    let started = std::time::Instant::now();
    let (tuned, queries) = prepare(&set, &config, Arc::new(LocalRecords::open(tmp.path())?)).await?;
    println!(
        "== intent quality: {} queries, {} (indexed in {:.1} s, multilingual-e5-small, offline)",
        queries.len(),
        set.display(),
        started.elapsed().as_secs_f64()
    );
    let variant = |name: String, change: &dyn Fn(&mut Retrieval)| {
        let mut r = tuned.clone();
        change(&mut r);
        (name, r)
    };
    let variants = [
        variant("lexical only (BM25)".into(), &|r| r.embedder = Err("lexical baseline".into())),
        variant("dense only".into(), &|r| r.fusion = Fusion::Dense),
        variant("RRF 50/50".into(), &|r| r.lexical_weight = 1.0),
        variant(format!("configured (RRF, lexical weight {})", tuned.lexical_weight), &|_| {}),
    ];
    println!(
        "{:<40} {:<10} {:<5} {:>3} {:>8} {:>9} {:>6}",
        "pipeline", "kind", "split", "n", "nDCG@10", "Recall@20", "MRR"
    );
    for (name, retrieval) in &variants {
        for ((kind, split), s) in evaluate(retrieval, &queries).await? {
            println!(
                "{name:<40} {kind:<10} {split:<5} {:>3} {:>8.3} {:>9.3} {:>6.3}",
                s.queries, s.ndcg10, s.recall20, s.mrr
            );
        }
    }
    Ok(())
}
