//! `cargo xtask quality`: the intent dev set (`benches/intent/`) through activity retrieval
//! with the bundled embedder, fully offline: nDCG@10, Recall@20 and MRR per query kind and
//! split, for lexical only, dense only, 50/50 RRF and the configured fusion. `RAG_*`
//! variables in the environment change the configured pipeline.
//!
//! The measure (issue 8): a graded Chinese dev set (`benches/intent/`:
//! activities, and queries with graded relevant ids, a kind and a dev/test split) run through
//! [`Retrieval::search`] and scored per query kind and split with nDCG@10, Recall@20 and MRR.
//!
//! - nDCG@10: gain `2^grade - 1` (grades 1 = partly, 2 = fully relevant), log2 discount, over
//!   the ideal ordering of every graded activity.
//! - Recall@20: share of the activities of any grade found in the top 20.
//! - MRR: 1 / rank of the first fully relevant result (0 if none in the top 20).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

pub mod lab;

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

type Method = Box<dyn Fn(&lab::Lab, &DevQuery) -> Vec<(usize, f32)>>;

/// The ranking experiments of [`lab`] on every set; with `tune`, the dev splits only (what a
/// method may be tuned on; the test splits are read once, at the end).
pub fn run_lab(tune: bool) -> crate::Result {
    crate::ensure_model()?;
    let config = Config::from_lookup(|k| std::env::var(k).ok())?;
    let model = std::sync::Arc::new(e5::E5Model::load(&config.embedding_model_path)?);
    let now: chrono::DateTime<chrono::Utc> = NOW.parse()?;
    let dense_floor = shared::activities::embedder::e5::MIN_SIMILARITY;
    let with_time = |lab: &lab::Lab, q: &DevQuery, mut r: Vec<(usize, f32)>| {
        lab.time_lift(&q.query, &mut r);
        r
    };
    let fused = move |view: &'static str, dense_view: &'static str, w: f32| -> Method {
        Box::new(move |lab: &lab::Lab, q: &DevQuery| {
            let v = lab.embed_query(&q.query);
            let d = lab.dense(dense_view, &v, dense_floor);
            let l = lab.lexical(view, &q.query);
            with_time(lab, q, lab::rrf(&[(&d, 1.0), (&l, w)]))
        })
    };
    let mut methods: Vec<(String, Method)> = vec![
        ("BM25, plain text".into(), Box::new(|lab: &lab::Lab, q: &DevQuery| lab.lexical("plain", &q.query))),
        (
            "e5, plain text".into(),
            Box::new(|lab: &lab::Lab, q: &DevQuery| lab.dense("plain", &lab.embed_query(&q.query), 0.0)),
        ),
        (
            "e5, plain, query: both sides".into(),
            Box::new(|lab: &lab::Lab, q: &DevQuery| lab.dense("plain+query:", &lab.embed_query(&q.query), 0.0)),
        ),
        (
            "e5, own words".into(),
            Box::new(|lab: &lab::Lab, q: &DevQuery| lab.dense("own", &lab.embed_query(&q.query), 0.0)),
        ),
        (
            "e5, own, query: both sides".into(),
            Box::new(|lab: &lab::Lab, q: &DevQuery| lab.dense("own+query:", &lab.embed_query(&q.query), 0.0)),
        ),
        ("configured: RRF enriched, lex 0.5".into(), fused("enriched", "enriched", 0.5)),
        ("RRF plain, lex 0.5".into(), fused("plain", "plain", 0.5)),
        ("RRF plain, lex 0.25".into(), fused("plain", "plain", 0.25)),
        ("RRF plain lex, own dense, 0.5".into(), fused("plain", "own", 0.5)),
    ];
    for lambda in [0.5f32, 1.0, 2.0] {
        methods.push((
            format!("RRF plain 0.5 + negation (λ {lambda})"),
            Box::new(move |lab: &lab::Lab, q: &DevQuery| {
                let (positive, negated) = lab::negations(&q.query);
                let v = lab.embed_query(&positive);
                let mut d = lab.dense("plain", &v, 0.0);
                for phrase in &negated {
                    let c = lab.embed_query(phrase);
                    let all = lab.dense("plain", &c, -1.0);
                    let mean = all.iter().map(|x| x.1).sum::<f32>() / all.len().max(1) as f32;
                    let near: std::collections::HashMap<usize, f32> = all.into_iter().collect();
                    for (i, s) in d.iter_mut() {
                        *s -= lambda * (near[i] - mean).max(0.0);
                    }
                }
                d.sort_by(|a, b| b.1.total_cmp(&a.1));
                d.retain(|x| x.1 >= dense_floor - 0.05);
                let l = lab.lexical("plain", &positive);
                with_time(lab, q, lab::rrf(&[(&d, 1.0), (&l, 0.5)]))
            }),
        ));
    }
    for beta in [0.3f32, 0.7] {
        methods.push((
            format!("RRF plain 0.5 + dense PRF (top 3, β {beta})"),
            Box::new(move |lab: &lab::Lab, q: &DevQuery| {
                let v = lab.embed_query(&q.query);
                let first = lab.dense("plain", &v, 0.0);
                let mut v2 = v.clone();
                for (i, _) in first.iter().take(3) {
                    for (x, y) in v2.iter_mut().zip(lab.doc_vector("plain", *i)) {
                        *x += beta / 3.0 * y;
                    }
                }
                let d = lab.dense("plain", &v2, 0.0);
                let d: Vec<_> = d.into_iter().filter(|(i, _)| cosine_of(lab, &v, *i) >= dense_floor).collect();
                let l = lab.lexical("plain", &q.query);
                with_time(lab, q, lab::rrf(&[(&d, 1.0), (&l, 0.5)]))
            }),
        ));
    }
    methods.push((
        "RRF plain, lex weight by query length".into(),
        Box::new(move |lab: &lab::Lab, q: &DevQuery| {
            let v = lab.embed_query(&q.query);
            let d = lab.dense("plain", &v, dense_floor);
            let l = lab.lexical("plain", &q.query);
            let w = if q.query.chars().count() <= 4 { 1.0 } else { 0.25 };
            with_time(lab, q, lab::rrf(&[(&d, 1.0), (&l, w)]))
        }),
    ));
    methods.push((
        "dense max over plain and own views + BM25 0.5".into(),
        Box::new(move |lab: &lab::Lab, q: &DevQuery| {
            let v = lab.embed_query(&q.query);
            let a: std::collections::HashMap<usize, f32> = lab.dense("own", &v, -1.0).into_iter().collect();
            let mut d: Vec<(usize, f32)> =
                lab.dense("plain", &v, -1.0).into_iter().map(|(i, s)| (i, s.max(a[&i]))).collect();
            d.sort_by(|x, y| y.1.total_cmp(&x.1));
            d.retain(|x| x.1 >= dense_floor);
            let l = lab.lexical("plain", &q.query);
            with_time(lab, q, lab::rrf(&[(&d, 1.0), (&l, 0.5)]))
        }),
    ));
    for (label, template) in
        [("query template 我想找: {q}", "我想找一个活动：{q}"), ("query template 适合…的活动", "适合{q}的活动")]
    {
        methods.push((
            format!("e5 own words, {label}"),
            Box::new(move |lab: &lab::Lab, q: &DevQuery| {
                lab.dense("own", &lab.embed_query(&template.replace("{q}", &q.query)), 0.0)
            }),
        ));
    }
    for alpha in [0.5f32, 0.7] {
        methods.push((
            format!("e5 own words {alpha} + best clause"),
            Box::new(move |lab: &lab::Lab, q: &DevQuery| {
                let v = lab.embed_query(&q.query);
                let mut d: Vec<(usize, f32)> = lab
                    .dense("own", &v, -1.0)
                    .into_iter()
                    .map(|(i, s)| {
                        let best =
                            lab.clauses[i].iter().map(|c| shared::activities::ranking::cosine(&v, c)).fold(s, f32::max);
                        (i, alpha * s + (1.0 - alpha) * best)
                    })
                    .collect();
                d.sort_by(|x, y| y.1.total_cmp(&x.1));
                d
            }),
        ));
    }
    methods.push((
        "e5 mean of own and plain views".into(),
        Box::new(move |lab: &lab::Lab, q: &DevQuery| {
            let v = lab.embed_query(&q.query);
            let a: std::collections::HashMap<usize, f32> = lab.dense("own", &v, -1.0).into_iter().collect();
            let mut d: Vec<(usize, f32)> =
                lab.dense("plain", &v, -1.0).into_iter().map(|(i, s)| (i, (s + a[&i]) / 2.0)).collect();
            d.sort_by(|x, y| y.1.total_cmp(&x.1));
            d
        }),
    ));
    for (gamma, cut) in [(0.5f32, 1.0f32), (1.0, 1.0), (1.0, 1.5), (2.0, 1.5)] {
        methods.push((
            format!("e5 own + facet profile (γ {gamma}, cut {cut})"),
            Box::new(move |lab: &lab::Lab, q: &DevQuery| {
                let v = lab.embed_query(&q.query);
                let docs = lab.doc_facets("own");
                let w = lab.query_facets(&v, cut);
                let cos: Vec<f32> = (0..lab.activities.len())
                    .map(|i| shared::activities::ranking::cosine(&v, lab.doc_vector("own", i)))
                    .collect();
                let zd = lab::z(&cos);
                let mut d: Vec<(usize, f32)> = (0..lab.activities.len())
                    .map(|i| (i, zd[i] + gamma * docs[i].iter().zip(&w).map(|(a, b)| a * b).sum::<f32>()))
                    .collect();
                d.sort_by(|x, y| y.1.total_cmp(&x.1));
                d
            }),
        ));
    }
    println!(
        "{:<48} {:<6} {:<10} {:<5} {:>3} {:>8} {:>9} {:>6}",
        "method", "set", "kind", "split", "n", "nDCG@10", "Recall@20", "MRR"
    );
    let mut labs = Vec::new();
    for set in SETS {
        let (activities, queries) = load(&crate::root().join("benches").join(set))?;
        let activities = activities
            .into_iter()
            .map(shared::activities::activity::Activity::from_json)
            .collect::<Result<Vec<_>>>()?;
        let started = std::time::Instant::now();
        labs.push((set, lab::Lab::new(Arc::clone(&model), activities, queries, now)));
        eprintln!("{set}: embedded in {:.1} s", started.elapsed().as_secs_f64());
    }
    for (alpha, gamma, negation, w) in [
        (0.7f32, 0.0f32, false, 0.5f32),
        (0.7, 1.0, false, 0.5),
        (0.7, 1.0, true, 0.5),
        (0.7, 1.0, true, 0.25),
        (0.7, 0.0, true, 0.5),
        (1.0, 0.0, true, 0.5),
    ] {
        methods.push((
            format!("combo: clause {alpha}, facet γ {gamma}, neg {negation}, lex {w}"),
            Box::new(move |lab: &lab::Lab, q: &DevQuery| combo(lab, q, alpha, gamma, negation, w)),
        ));
    }
    for (dense, lexical, w, lambda) in [
        ("enriched", "enriched", 0.5f32, 0.0f32),
        ("enriched", "enriched", 0.5, 1.0),
        ("own", "plain", 0.5, 0.0),
        ("own", "plain", 0.5, 1.0),
        ("own", "plain", 0.25, 1.0),
        ("own", "enriched", 0.25, 1.0),
        ("own", "enriched", 0.5, 1.0),
        ("plain", "plain", 0.25, 1.0),
        ("own", "plain", 0.25, 2.0),
        ("described", "plain", 0.25, 1.0),
        ("titled", "plain", 0.25, 1.0),
    ] {
        methods.push((
            format!("pipeline: dense {dense}, BM25 {lexical} × {w}, negation λ {lambda}"),
            Box::new(move |lab: &lab::Lab, q: &DevQuery| pipeline(lab, q, dense, lexical, w, lambda)),
        ));
    }
    if let Ok(which) = std::env::var("LAB_SHOW") {
        for (name, method) in methods.iter().filter(|(n, _)| n.contains(which.as_str())) {
            for (set, lab) in &labs {
                for q in lab.queries.iter().filter(|q| q.split == "dev" && q.kind == "intent") {
                    let ranked = method(lab, q);
                    let ids: Vec<String> =
                        ranked.iter().take(DEPTH).map(|(i, _)| lab.activities[*i].id.clone()).collect();
                    let top: Vec<String> = ranked
                        .iter()
                        .take(5)
                        .map(|(i, _)| {
                            format!(
                                "{}{}",
                                lab.activities[*i].title,
                                q.relevant.get(&lab.activities[*i].id).map_or("✗".into(), |g| g.to_string())
                            )
                        })
                        .collect();
                    println!(
                        "{name} {set} {} {:.2} {} | {}",
                        q.id,
                        ndcg(&ids, &q.relevant, 10),
                        q.query,
                        top.join(" · ")
                    );
                }
            }
        }
        return Ok(());
    }
    for (name, method) in &methods {
        for (set, lab) in &labs {
            for ((kind, split), s) in lab.evaluate(|q| method(lab, q)) {
                if tune && split == "test" {
                    continue;
                }
                println!(
                    "{name:<48} {set:<6} {kind:<10} {split:<5} {:>3} {:>8.3} {:>9.3} {:>6.3}",
                    s.queries, s.ndcg10, s.recall20, s.mrr
                );
            }
        }
    }
    Ok(())
}

/// Dense: z(α·cos(own) + (1-α)·best clause) + γ·facet agreement, the negated phrases' facet
/// and closeness taken off; fused by RRF with BM25 on the plain text (weight `w`); time lift.
fn combo(lab: &lab::Lab, q: &DevQuery, alpha: f32, gamma: f32, negation: bool, w: f32) -> Vec<(usize, f32)> {
    use shared::activities::ranking::cosine;
    let (positive, negated) = if negation { lab::negations(&q.query) } else { (q.query.clone(), Vec::new()) };
    let v = lab.embed_query(&positive);
    let n = lab.activities.len();
    let closeness = |v: &[f32]| -> Vec<f32> {
        let raw: Vec<f32> = (0..n)
            .map(|i| {
                let s = cosine(v, lab.doc_vector("own", i));
                let best = lab.clauses[i].iter().map(|c| cosine(v, c)).fold(s, f32::max);
                alpha * s + (1.0 - alpha) * best
            })
            .collect();
        lab::z(&raw)
    };
    let mut score = closeness(&v);
    let docs = lab.doc_facets("own");
    if gamma > 0.0 {
        let wq = lab.query_facets(&v, 1.5);
        for i in 0..n {
            score[i] += gamma * docs[i].iter().zip(&wq).map(|(a, b)| a * b).sum::<f32>();
        }
    }
    for phrase in &negated {
        let c = lab.embed_query(phrase);
        let near = closeness(&c);
        for i in 0..n {
            score[i] -= 0.5 * near[i].max(0.0);
        }
    }
    let mut d: Vec<(usize, f32)> = score.into_iter().enumerate().collect();
    d.sort_by(|x, y| y.1.total_cmp(&x.1));
    d.truncate(100);
    let l = lab.lexical("plain", &positive);
    let mut fused = lab::rrf(&[(&d, 1.0), (&l, w)]);
    lab.time_lift(&q.query, &mut fused);
    fused
}

/// What retrieval can do with one dense and one sparse vector per activity: the dense
/// candidates above the floor, those close to a negated phrase pushed down (cosine minus λ ×
/// its excess over the candidates' mean closeness to it), RRF with BM25, the time lift.
fn pipeline(lab: &lab::Lab, q: &DevQuery, dense: &str, lexical: &str, w: f32, lambda: f32) -> Vec<(usize, f32)> {
    use shared::activities::ranking::cosine;
    let (positive, negated) = if lambda > 0.0 { lab::negations(&q.query) } else { (q.query.clone(), Vec::new()) };
    let v = lab.embed_query(&positive);
    let mut d = lab.dense(dense, &v, shared::activities::embedder::e5::MIN_SIMILARITY);
    d.truncate(100);
    for phrase in &negated {
        let c = lab.embed_query(phrase);
        let near: Vec<f32> = d.iter().map(|(i, _)| cosine(&c, lab.doc_vector(dense, *i))).collect();
        let mean = near.iter().sum::<f32>() / near.len().max(1) as f32;
        for ((_, s), n) in d.iter_mut().zip(&near) {
            *s -= lambda * (n - mean).max(0.0);
        }
    }
    d.sort_by(|x, y| y.1.total_cmp(&x.1));
    let l = lab.lexical(lexical, &positive);
    let mut fused = lab::rrf(&[(&d, 1.0), (&l, w)]);
    lab.time_lift(&q.query, &mut fused);
    fused
}

fn cosine_of(lab: &lab::Lab, v: &[f32], i: usize) -> f32 {
    shared::activities::ranking::cosine(v, lab.doc_vector("plain", i))
}

/// Prints every pipeline variant on every kind and split.
pub async fn run() -> crate::Result {
    crate::ensure_model()?;
    let set = crate::root().join("benches/intent");
    let tmp = tempfile::tempdir()?;
    let config = config(tmp.path(), |k| std::env::var(k).ok())?;
    let started = std::time::Instant::now();
    let (tuned, queries) = prepare(&set, &config, Arc::new(LocalRecords::open(tmp.path())?)).await?;
    println!(
        "== intent quality: {} queries, {} (indexed in {:.1} s, multilingual-e5-small, offline)",
        queries.len(),
        set.display(),
        started.elapsed().as_secs_f64()
    );
    let ranking = tuned.ranking();
    let variants = [
        ("lexical only (BM25)".to_owned(), tuned.clone().without_embedder("lexical baseline")),
        ("dense only".into(), tuned.clone().ranked_by(Ranking { fusion: Fusion::Dense, ..ranking })),
        ("RRF 50/50".into(), tuned.clone().ranked_by(Ranking { lexical_weight: 1.0, ..ranking })),
        (format!("configured (RRF, lexical weight {})", ranking.lexical_weight), tuned.clone()),
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
        let dir = tempfile::tempdir().unwrap();
        // Only where the model is comes from the environment.
        let config = config(dir.path(), |k| match k {
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
        let lexical = evaluate(&retrieval.clone().without_embedder("lexical baseline"), &queries).await.unwrap();
        for split in ["dev", "test"] {
            let (c, l) = (get(&configured, "intent", split), get(&lexical, "intent", split));
            eprintln!("intent/{split}: configured {c:?}, lexical {l:?}");
            assert!(c.ndcg10 >= l.ndcg10 + 0.1, "intent/{split} nDCG@10: {} vs lexical {}", c.ndcg10, l.ndcg10);
            assert!(
                c.recall20 >= l.recall20 + 0.1,
                "intent/{split} Recall@20: {} vs lexical {}",
                c.recall20,
                l.recall20
            );
            let (c, l) = (get(&configured, "lexical", split), get(&lexical, "lexical", split));
            assert!(c.mrr >= l.mrr && c.ndcg10 >= l.ndcg10, "exact terms/{split}: {c:?} vs lexical {l:?}");
        }
    }
}
