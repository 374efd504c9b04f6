//! `cargo xtask quality [--tune]`: the quality sets through activity retrieval with the bundled
//! embedder, fully offline: nDCG@10, Recall@20 and MRR per set, query kind and split, for BM25
//! alone, e5 alone, 50/50 RRF and the configured ranking. `RAG_*` variables in the
//! environment change the configured pipeline; `--tune` prints the dev splits only.
//! `cargo xtask quality lab [--tune]` measures every method tried in memory ([`methods`]).
//!
//! The sets ([`SETS`], under `benches/`): graded Chinese activities and queries, each query with
//! a kind (`intent`, `lexical`, `time_vibe`) and a `dev` / `test` split. `intent/` was built
//! labels first and tuned on (issue 8); `asks/` queries first, its test split sealed before any
//! tuning (issue 19). Each query runs through [`Retrieval::search`].
//!
//! - nDCG@10: gain `2^grade - 1` (grades 1 = partly, 2 = fully relevant), log2 discount, over
//!   the ideal ordering of every graded activity.
//! - Recall@20: share of the activities of any grade found in the top 20.
//! - MRR: 1 / rank of the first fully relevant result (0 if none in the top 20).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

pub mod lab;
pub mod methods;
pub mod negation;

use serde::Deserialize;
use serde_json::Value;
use shared::core::config::Fusion;
use shared::core::records::LocalRecords;

use shared::activities::indexing::Indexer;
use shared::activities::request::SearchRequest;
use shared::activities::retrieval::{Ranking, Retrieval};
use shared::core::clock::{Clock, ManualClock};
use shared::core::config::Config;
use shared::core::records::RecordStore;
use shared::{Error, Result};

/// The dev set's reference now: Sunday 2026-11-22, 12:00 in Shanghai (its activities start in
/// the two weeks after).
pub const NOW: &str = "2026-11-22T04:00:00Z";

/// Results read per query (Recall@20).
pub const DEPTH: usize = 20;

#[derive(Debug, Clone, Deserialize)]
pub struct DevQuery {
    pub id: String,
    pub query: String,
    /// `intent`, `lexical` or `time_vibe`.
    pub kind: String,
    /// `dev` (tuned on) or `test` (held out).
    pub split: String,
    /// Activity id → grade (1 or 2).
    pub relevant: HashMap<String, u8>,
}

/// The dev set under `dir`: activities (as request bodies) and graded queries.
pub fn load(dir: &Path) -> Result<(Vec<Value>, Vec<DevQuery>)> {
    let lines = |name: &str| -> Result<Vec<String>> {
        let text = std::fs::read_to_string(dir.join(name))
            .map_err(|e| Error::Config(format!("dev set {}: {e}", dir.join(name).display())))?;
        Ok(text.lines().filter(|l| !l.trim().is_empty()).map(str::to_owned).collect())
    };
    let parse = |l: &String| serde_json::from_str(l).map_err(|e| Error::Config(format!("dev set line: {e}")));
    let activities = lines("activities.jsonl")?.iter().map(parse).collect::<Result<Vec<Value>>>()?;
    let queries = lines("queries.jsonl")?
        .iter()
        .map(|l| serde_json::from_str(l).map_err(|e| Error::Config(format!("dev set query: {e}"))))
        .collect::<Result<Vec<DevQuery>>>()?;
    Ok((activities, queries))
}

/// The configuration the measure runs with: the bundled model, an exclusive Edge shard under
/// `data_dir`, no match reasons, no time box on indexing; anything else from `rest` (the
/// environment: `RAG_*` to try another pipeline, `HOME` to find the model).
pub fn config(data_dir: &Path, rest: impl Fn(&str) -> Option<String>) -> Result<Config> {
    let data_dir = data_dir.display().to_string();
    let fixed = [
        ("DATA_DIR", data_dir.as_str()),
        ("EDGE_SHARING", "exclusive"),
        ("RAG_MATCH_REASON", "off"),
        ("EMBEDDING_PROVIDER", "local"),
        ("INDEX_EMBED_TIMEOUT_MS", "600000"),
    ];
    Config::from_lookup(|k| fixed.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string()).or_else(|| rest(k)))
}

/// The dev set under `dir` written into `config`'s vector index (with its embedder; records of
/// the calls in `records`), and the configured retrieval over it at [`NOW`]; and its queries.
pub async fn prepare(dir: &Path, config: &Config, records: Arc<dyn RecordStore>) -> Result<(Retrieval, Vec<DevQuery>)> {
    let (activities, queries) = load(dir)?;
    let now = NOW.parse().map_err(|e| Error::Config(format!("{NOW}: {e}")))?;
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(now));
    let index = shared::compose::vector_index(config)?;
    let indexer = shared::compose::indexer(config, Arc::clone(&index), Arc::clone(&records), Arc::clone(&clock))?;
    write(&indexer, &activities).await?;
    Ok((shared::compose::retrieval(config, index, records, clock)?, queries))
}

/// Writes the dev set's activities through `indexer`, batch by batch; an activity left without
/// its dense vector is an error (a measure of dense retrieval needs them all).
async fn write(indexer: &Indexer, activities: &[Value]) -> Result<()> {
    for batch in activities.chunks(shared::activities::indexing::MAX_BATCH) {
        let parsed = Indexer::parse(Value::Array(batch.to_vec()))?;
        let report = indexer.write(&parsed, indexer.now(), false, "quality-index").await?;
        if let Some(reason) = report.pending_reason {
            return Err(Error::Config(format!("the dev set could not be embedded: {reason}")));
        }
    }
    Ok(())
}

/// nDCG at `k` of `ranked` ids against graded `relevant`.
pub fn ndcg(ranked: &[String], relevant: &HashMap<String, u8>, k: usize) -> f64 {
    let gain = |g: u8| f64::from((1u32 << g) - 1);
    let discount = |i: usize| 1.0 / ((i + 2) as f64).log2();
    let dcg: f64 =
        ranked.iter().take(k).enumerate().map(|(i, id)| relevant.get(id).map_or(0.0, |&g| gain(g)) * discount(i)).sum();
    let mut ideal: Vec<u8> = relevant.values().copied().collect();
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    let idcg: f64 = ideal.iter().take(k).enumerate().map(|(i, &g)| gain(g) * discount(i)).sum();
    if idcg > 0.0 { dcg / idcg } else { 0.0 }
}

/// Share of the graded activities found in the first `k` of `ranked`.
pub fn recall(ranked: &[String], relevant: &HashMap<String, u8>, k: usize) -> f64 {
    if relevant.is_empty() {
        return 0.0;
    }
    ranked.iter().take(k).filter(|id| relevant.contains_key(*id)).count() as f64 / relevant.len() as f64
}

/// 1 / rank of the first fully relevant (grade 2) id, 0 if none.
pub fn reciprocal_rank(ranked: &[String], relevant: &HashMap<String, u8>) -> f64 {
    ranked.iter().position(|id| relevant.get(id) == Some(&2)).map_or(0.0, |i| 1.0 / (i + 1) as f64)
}

/// Mean scores of a group of queries.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Scores {
    pub ndcg10: f64,
    pub recall20: f64,
    pub mrr: f64,
    pub queries: usize,
}

impl Scores {
    fn add(&mut self, ranked: &[String], relevant: &HashMap<String, u8>) {
        let n = self.queries as f64;
        let mean = |old: f64, new: f64| (old * n + new) / (n + 1.0);
        self.ndcg10 = mean(self.ndcg10, ndcg(ranked, relevant, 10));
        self.recall20 = mean(self.recall20, recall(ranked, relevant, DEPTH));
        self.mrr = mean(self.mrr, reciprocal_rank(ranked, relevant));
        self.queries += 1;
    }
}

/// Scores of `retrieval` on `queries` by (kind, split), plus `("all", split)`; a query's
/// search is the request `/rag/search` would get for `{semanticQuery, limit: 20}`.
pub async fn evaluate(retrieval: &Retrieval, queries: &[DevQuery]) -> Result<BTreeMap<(String, String), Scores>> {
    let mut out: BTreeMap<(String, String), Scores> = BTreeMap::new();
    for q in queries {
        let req = SearchRequest {
            semantic_query: Some(q.query.clone()),
            near: None,
            window: None,
            kind: None,
            limit: DEPTH,
            user_id: None,
        };
        let response = retrieval.search(&req, &format!("quality-{}", q.id)).await?;
        let ranked: Vec<String> = response.results.iter().map(|r| r.activity.id.clone()).collect();
        for kind in [q.kind.as_str(), "all"] {
            out.entry((kind.to_owned(), q.split.clone())).or_default().add(&ranked, &q.relevant);
        }
    }
    Ok(out)
}

/// The quality sets, each a directory of `activities.jsonl` and `queries.jsonl`.
pub const SETS: [&str; 2] = ["intent", "asks"];

/// The header of the score table.
pub fn print_header(first: &str) {
    println!(
        "{first:<52} {:<6} {:<10} {:<7} {:>3} {:>8} {:>9} {:>6}",
        "set", "kind", "split", "n", "nDCG@10", "Recall@20", "MRR"
    );
}

/// One row per kind and split of `scores` (the dev splits only with `tune`).
pub fn print_scores(name: &str, set: &str, scores: &BTreeMap<(String, String), Scores>, tune: bool) {
    for ((kind, split), s) in scores {
        if tune && split != "dev" {
            continue;
        }
        println!(
            "{name:<52} {set:<6} {kind:<10} {split:<7} {:>3} {:>8.3} {:>9.3} {:>6.3}",
            s.queries, s.ndcg10, s.recall20, s.mrr
        );
    }
}

/// Every pipeline variant through the real retrieval, on every set, kind and split (dev only
/// with `tune`): BM25 alone, e5 alone (the plain-e5 baseline), RRF 50/50 and the configured
/// ranking. `RAG_*` in the environment changes the configured one.
pub async fn run(tune: bool) -> crate::Result {
    crate::ensure_model()?;
    print_header("pipeline");
    for set in SETS {
        let dir = crate::root().join("benches").join(set);
        let tmp = tempfile::tempdir()?;
        let config = config(tmp.path(), |k| std::env::var(k).ok())?;
        let started = std::time::Instant::now();
        let (configured, queries) = prepare(&dir, &config, Arc::new(LocalRecords::open(tmp.path())?)).await?;
        eprintln!(
            "== {set}: {} queries, {} (indexed in {:.1} s, multilingual-e5-small, offline)",
            queries.len(),
            dir.display(),
            started.elapsed().as_secs_f64()
        );
        let ranking = configured.ranking();
        let variants = [
            ("BM25 only".to_owned(), configured.clone().without_embedder("lexical baseline")),
            ("e5 only (dense)".into(), configured.clone().ranked_by(Ranking { fusion: Fusion::Dense, ..ranking })),
            ("RRF 50/50".into(), configured.clone().ranked_by(Ranking { lexical_weight: 1.0, ..ranking })),
            (format!("configured (RRF, lexical weight {})", ranking.lexical_weight), configured.clone()),
        ];
        for (name, retrieval) in &variants {
            print_scores(name, set, &evaluate(retrieval, &queries).await?, tune);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn metrics_follow_their_definitions() {
        let relevant: HashMap<String, u8> = [("a".into(), 2), ("b".into(), 1)].into();
        assert_eq!(ndcg(&ids(&["a", "b", "x"]), &relevant, 10), 1.0);
        // b (gain 1) first, a (gain 3) second: (1 + 3/log2 3) / (3 + 1/log2 3).
        let want = (1.0 + 3.0 / 3f64.log2()) / (3.0 + 1.0 / 3f64.log2());
        assert!((ndcg(&ids(&["b", "a"]), &relevant, 10) - want).abs() < 1e-12);
        assert_eq!(recall(&ids(&["x", "b"]), &relevant, 20), 0.5);
        assert_eq!(reciprocal_rank(&ids(&["x", "b", "a"]), &relevant), 1.0 / 3.0);
        assert_eq!(reciprocal_rank(&ids(&["b"]), &relevant), 0.0);
        let mut s = Scores::default();
        s.add(&ids(&["a"]), &relevant);
        s.add(&ids(&["x"]), &relevant);
        assert_eq!((s.mrr, s.queries), (0.5, 2));
    }

    // The configured pipeline must beat lexical-only retrieval by a wide margin on intent
    // queries, on the tuned (`dev`) and the held-out (`test`) split alike, and must not lose
    // exact-term queries. Needs the model (`infra/fetch-model.sh`).

    fn get(scores: &std::collections::BTreeMap<(String, String), Scores>, kind: &str, split: &str) -> Scores {
        scores[&(kind.to_owned(), split.to_owned())]
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_configured_pipeline_beats_lexical_retrieval_on_intent_queries() {
        // The intent set on both splits; the second set on its dev split only (its held-out
        // splits are read by `cargo xtask quality`, never by a check one could tune to pass).
        for (set, count, splits) in [("intent", 45, &["dev", "test"][..]), ("asks", 64, &["dev"][..])] {
            let dir = tempfile::tempdir().unwrap();
            // Only where the model is comes from the environment.
            let config = config(dir.path(), |k| match k {
                "HOME" | "RESEARCH_BUNDLE_CACHE" => std::env::var(k).ok(),
                _ => None,
            })
            .unwrap();
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../benches").join(set);
            let records = Arc::new(LocalRecords::open(dir.path()).unwrap());
            let (retrieval, queries) = prepare(&path, &config, records).await.unwrap_or_else(|e| {
                panic!("MISSING or broken: the {set} set or the model ({e}); run `bash infra/fetch-model.sh`")
            });
            assert_eq!(queries.len(), count);
            let configured = evaluate(&retrieval, &queries).await.unwrap();
            let lexical = evaluate(&retrieval.clone().without_embedder("lexical baseline"), &queries).await.unwrap();
            for split in splits {
                let (c, l) = (get(&configured, "intent", split), get(&lexical, "intent", split));
                eprintln!("{set} intent/{split}: configured {c:?}, lexical {l:?}");
                assert!(
                    c.ndcg10 >= l.ndcg10 + 0.1,
                    "{set} intent/{split} nDCG@10: {} vs lexical {}",
                    c.ndcg10,
                    l.ndcg10
                );
                assert!(
                    c.recall20 >= l.recall20 + 0.1,
                    "{set} intent/{split} Recall@20: {} vs lexical {}",
                    c.recall20,
                    l.recall20
                );
                let (c, l) = (get(&configured, "lexical", split), get(&lexical, "lexical", split));
                assert!(c.mrr >= l.mrr && c.ndcg10 >= l.ndcg10, "{set} exact terms/{split}: {c:?} vs lexical {l:?}");
            }
        }
    }
}
