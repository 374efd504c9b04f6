//! The intent-quality measure of `cargo xtask quality`, run on the dev set
//! (`benches/intent/`) with the bundled model, offline: the configured pipeline must beat
//! lexical-only retrieval by a wide margin on intent queries, on the tuned (`dev`) and the
//! held-out (`test`) split alike, and must not lose exact-term queries. Needs the model
//! (`infra/fetch-model.sh`).

use std::sync::Arc;

use shared::quality::{Scores, evaluate, prepare};
use shared::records::LocalRecords;

fn get(scores: &std::collections::BTreeMap<(String, String), Scores>, kind: &str, split: &str) -> Scores {
    scores[&(kind.to_owned(), split.to_owned())]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_configured_pipeline_beats_lexical_retrieval_on_intent_queries() {
    let dir = tempfile::tempdir().unwrap();
    // Only where the model is comes from the environment.
    let config = shared::quality::config(dir.path(), |k| match k {
        "HOME" | "RESEARCH_BUNDLE_CACHE" => std::env::var(k).ok(),
        _ => None,
    })
    .unwrap();
    let set = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../benches/intent");
    let records = Arc::new(LocalRecords::open(dir.path()).unwrap());
    let (retrieval, queries) = prepare(&set, &config, records).await.unwrap_or_else(|e| {
        panic!("MISSING or broken: the dev set or the model ({e}); run `bash infra/fetch-model.sh`")
    });
    assert_eq!(queries.len(), 45);
    let configured = evaluate(&retrieval, &queries).await.unwrap();
    let mut lexical = retrieval.clone();
    lexical.embedder = Err("lexical baseline".into());
    let lexical = evaluate(&lexical, &queries).await.unwrap();
    for split in ["dev", "test"] {
        let (c, l) = (get(&configured, "intent", split), get(&lexical, "intent", split));
        eprintln!("intent/{split}: configured {c:?}, lexical {l:?}");
        assert!(c.ndcg10 >= l.ndcg10 + 0.1, "intent/{split} nDCG@10: {} vs lexical {}", c.ndcg10, l.ndcg10);
        assert!(c.recall20 >= l.recall20 + 0.1, "intent/{split} Recall@20: {} vs lexical {}", c.recall20, l.recall20);
        let (c, l) = (get(&configured, "lexical", split), get(&lexical, "lexical", split));
        assert!(c.mrr >= l.mrr && c.ndcg10 >= l.ndcg10, "exact terms/{split}: {c:?} vs lexical {l:?}");
    }
}
