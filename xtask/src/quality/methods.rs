//! Every ranking method tried for issue 19, as `cargo xtask quality lab` measures them: kept or
//! dropped, each is here so its figures can be reproduced. Most are a [`Pipeline`]: the dense
//! candidates above the model's floor (optionally pushed away from what the query rules out),
//! fused by RRF with BM25, lifted by the time the query names. [`KEPT`] is the configured
//! retrieval; [`FIRST`] the choice the sealed test split was first read for.

use std::collections::HashMap;
use std::sync::Arc;

use super::negation::Negation;
use shared::activities::ranking::cosine;
use shared::core::config::Config;

use super::lab::{self, Lab};
use super::{DevQuery, NOW, SETS, load};

type Ranked = Vec<(usize, f32)>;
type Method = Box<dyn Fn(&Lab, &DevQuery) -> Ranked>;

/// A ranking with one dense and one sparse vector per activity (what the index holds).
#[derive(Clone, Copy)]
struct Pipeline {
    /// The lab view the dense vectors are made of, and BM25's.
    dense: &'static str,
    lexical: &'static str,
    /// Lexical weight in RRF (the dense list's is 1).
    lexical_weight: f32,
    /// How much excess closeness to a ruled-out phrase a dense hit loses (0: negations ignored).
    unwanted: f32,
    /// The time lift's weight.
    time: f32,
    /// The dense channel embeds the query without its time words (the lift and BM25 read them).
    untimed: bool,
}

/// The configured retrieval, as the lab runs it.
const KEPT: Pipeline =
    Pipeline { dense: "own", lexical: "plain", lexical_weight: 0.25, unwanted: 0.0, time: 0.5, untimed: true };
/// What the first sealed reading was of (with negations, the dense query timed).
const FIRST: Pipeline = Pipeline { unwanted: 1.0, untimed: false, ..KEPT };

fn read(query: &str, negations: bool) -> (String, Vec<String>) {
    if !negations {
        return (query.to_owned(), Vec::new());
    }
    let n = Negation::parse(query);
    (n.wanted, n.unwanted)
}

/// The dense candidates of `v` on `view` above the floor, at most 100.
fn candidates(lab: &Lab, view: &str, v: &[f32]) -> Ranked {
    let mut d = lab.dense(view, v, shared::activities::embedder::e5::MIN_SIMILARITY);
    d.truncate(100);
    d
}

impl Pipeline {
    fn rank(self, lab: &Lab, q: &DevQuery) -> Ranked {
        self.rank_with(lab, q, |lab, v| lab.embed_query(v))
    }

    /// [`Pipeline::rank`] with the query vector made by `embed` (from the query, negations read).
    fn rank_with(self, lab: &Lab, q: &DevQuery, embed: impl Fn(&Lab, &str) -> Vec<f32>) -> Ranked {
        let (wanted, unwanted) = read(&q.query, self.unwanted > 0.0);
        let dense_query = if self.untimed { shared::activities::when::without_time(&wanted) } else { wanted.clone() };
        let mut d = candidates(lab, self.dense, &embed(lab, &dense_query));
        for phrase in &unwanted {
            let c = lab.embed_query(phrase);
            let near: Vec<f32> = d.iter().map(|(i, _)| cosine(&c, lab.doc_vector(self.dense, *i))).collect();
            let mean = near.iter().sum::<f32>() / near.len().max(1) as f32;
            for ((_, s), n) in d.iter_mut().zip(&near) {
                *s -= self.unwanted * (n - mean).max(0.0);
            }
        }
        d.sort_by(|x, y| y.1.total_cmp(&x.1));
        self.fuse(lab, q, &d, &wanted)
    }

    fn fuse(self, lab: &Lab, q: &DevQuery, dense: &[(usize, f32)], wanted: &str) -> Ranked {
        let l = lab.lexical(self.lexical, wanted);
        let mut fused = lab::rrf(&[(dense, 1.0), (&l, self.lexical_weight)]);
        lab.time_lift_by(&q.query, &mut fused, self.time);
        fused
    }
}

/// Dense scores of `v` against every activity's own words mixed with its best description
/// clause, z-scored over the set (the clause and facet methods' scale).
fn closeness(lab: &Lab, v: &[f32], own: f32) -> Vec<f32> {
    let raw: Vec<f32> = (0..lab.activities.len())
        .map(|i| {
            let s = cosine(v, lab.doc_vector("own", i));
            let best = lab.clauses[i].iter().map(|c| cosine(v, c)).fold(s, f32::max);
            own * s + (1.0 - own) * best
        })
        .collect();
    lab::z(&raw)
}

/// Scores made over the whole set (clauses, facets), pushed away from ruled-out phrases, then
/// fused like [`FIRST`].
fn scored(lab: &Lab, q: &DevQuery, own: f32, facets: f32) -> Ranked {
    let (wanted, unwanted) = read(&q.query, true);
    let v = lab.embed_query(&wanted);
    let mut score = closeness(lab, &v, own);
    if facets > 0.0 {
        let docs = lab.doc_facets("own");
        let wq = lab.query_facets(&v, 1.5);
        for (s, d) in score.iter_mut().zip(&docs) {
            *s += facets * d.iter().zip(&wq).map(|(a, b)| a * b).sum::<f32>();
        }
    }
    for phrase in &unwanted {
        let near = closeness(lab, &lab.embed_query(phrase), own);
        for (s, n) in score.iter_mut().zip(near) {
            *s -= 0.5 * n.max(0.0);
        }
    }
    let mut d: Ranked = score.into_iter().enumerate().collect();
    d.sort_by(|x, y| y.1.total_cmp(&x.1));
    d.truncate(100);
    FIRST.fuse(lab, q, &d, &wanted)
}

/// Every method, named as the lab prints it.
fn methods() -> Vec<(String, Method)> {
    let dense_only = |view: &'static str| -> Method {
        Box::new(move |lab: &Lab, q: &DevQuery| lab.dense(view, &lab.embed_query(&q.query), -1.0))
    };
    let mut out: Vec<(String, Method)> = vec![
        ("baseline: BM25 (seed 004 lines)".into(), Box::new(|lab: &Lab, q: &DevQuery| lab.lexical("plain", &q.query))),
        ("baseline: e5 (own words)".into(), dense_only("own")),
        ("baseline: e5, query: both sides".into(), dense_only("own+query:")),
        ("e5 (seed 004 lines)".into(), dense_only("plain")),
        ("e5 (seed 004 lines), query: both sides".into(), dense_only("plain+query:")),
        ("e5 (description, type, tags)".into(), dense_only("described")),
        ("e5 (title: description)".into(), dense_only("titled")),
    ];
    // Before the first sealed reading (dev splits only); FIRST is what it was of.
    let plain = Pipeline { unwanted: 0.0, untimed: false, ..KEPT };
    let variants: [(&str, Pipeline); 19] = [
        ("RRF seed lines both, lex 0.5", Pipeline { dense: "plain", lexical_weight: 0.5, ..plain }),
        ("RRF seed lines both, lex 0.25", Pipeline { dense: "plain", ..plain }),
        ("RRF, lex 0.5", Pipeline { lexical_weight: 0.5, ..plain }),
        ("RRF, lex 0.5, negation 1", Pipeline { lexical_weight: 0.5, ..FIRST }),
        ("RRF, lex 0.25, negation 0.5", Pipeline { unwanted: 0.5, ..FIRST }),
        ("FIRST: RRF, lex 0.25, negation 1", FIRST),
        ("RRF, lex 0.25, negation 2", Pipeline { unwanted: 2.0, ..FIRST }),
        ("RRF, lex 0.25, negation 1, time lift 1", Pipeline { time: 1.0, ..FIRST }),
        ("RRF, lex 0.25, negation 1, time lift 2", Pipeline { time: 2.0, ..FIRST }),
        ("RRF seed lines dense, negation 1", Pipeline { dense: "plain", ..FIRST }),
        ("RRF description dense, negation 1", Pipeline { dense: "described", ..FIRST }),
        // After it (dev and test splits seen; the holdout split decides).
        ("RRF, lex 0.25, no negation", plain),
        ("RRF symmetric e5, lex 0.25", Pipeline { dense: "own+query:", ..plain }),
        ("RRF symmetric e5, lex 0.25, negation 1", Pipeline { dense: "own+query:", ..FIRST }),
        ("RRF symmetric e5, lex 0.1", Pipeline { dense: "own+query:", lexical_weight: 0.1, ..plain }),
        ("RRF symmetric e5 seed lines, lex 0.25", Pipeline { dense: "plain+query:", ..plain }),
        ("symmetric e5 + time lift only", Pipeline { dense: "own+query:", lexical_weight: 0.0, ..plain }),
        ("KEPT: RRF, lex 0.25, dense query untimed", KEPT),
        ("RRF, lex 0.25, negation 1, dense query untimed", Pipeline { unwanted: 1.0, ..KEPT }),
    ];
    for (name, p) in variants {
        out.push((name.into(), Box::new(move |lab: &Lab, q: &DevQuery| p.rank(lab, q))));
    }
    out.push((
        "FIRST + lex weight by query length (≤4 chars: 1)".into(),
        Box::new(|lab: &Lab, q: &DevQuery| {
            let w = if q.query.chars().count() <= 4 { 1.0 } else { 0.25 };
            Pipeline { lexical_weight: w, ..FIRST }.rank(lab, q)
        }),
    ));
    for beta in [0.3f32, 0.7] {
        out.push((
            format!("FIRST + dense PRF (top 3, β {beta})"),
            Box::new(move |lab: &Lab, q: &DevQuery| {
                FIRST.rank_with(lab, q, |lab, text| {
                    let v = lab.embed_query(text);
                    let mut expanded = v.clone();
                    for (i, _) in lab.dense("own", &v, -1.0).iter().take(3) {
                        for (x, y) in expanded.iter_mut().zip(lab.doc_vector("own", *i)) {
                            *x += beta / 3.0 * y;
                        }
                    }
                    expanded
                })
            }),
        ));
    }
    for template in ["我想找一个活动：{q}", "适合{q}的活动"] {
        out.push((
            format!("FIRST, query embedded as \"{template}\""),
            Box::new(move |lab: &Lab, q: &DevQuery| {
                FIRST.rank_with(lab, q, |lab, text| lab.embed_query(&template.replace("{q}", text)))
            }),
        ));
    }
    out.push((
        "FIRST, request framing stripped (适合/的活动/推荐/想找…)".into(),
        Box::new(|lab: &Lab, q: &DevQuery| {
            let mut text = q.query.clone();
            for w in
                ["有没有", "推荐", "适合", "的活动", "活动", "想找个", "想找", "找个", "地方", "去处", "去哪儿", "哪里"]
            {
                text = text.replace(w, "");
            }
            let q = DevQuery { query: if text.trim().is_empty() { q.query.clone() } else { text }, ..q.clone() };
            FIRST.rank(lab, &q)
        }),
    ));
    for (own, facets) in [(0.7f32, 0.0f32), (0.5, 0.0), (1.0, 1.0), (0.7, 1.0)] {
        out.push((
            format!("clause max-sim (own {own}) + facet bank γ {facets}, negation"),
            Box::new(move |lab: &Lab, q: &DevQuery| scored(lab, q, own, facets)),
        ));
    }
    out
}

/// The ranking experiments on every set; with `tune`, the dev splits only (what a method may be
/// tuned on; the test splits are read once, at the end). `LAB_SHOW=<name part>` prints the top
/// five of each dev intent query for the methods so named instead.
pub fn run(tune: bool) -> crate::Result {
    crate::ensure_model()?;
    let config = Config::from_lookup(|k| std::env::var(k).ok())?;
    let model = Arc::new(e5::E5Model::load(&config.embedding_model_path)?);
    let now: chrono::DateTime<chrono::Utc> = NOW.parse()?;
    let mut labs = Vec::new();
    for set in SETS {
        let (activities, queries) = load(&crate::root().join("benches").join(set))?;
        let activities = activities
            .into_iter()
            .map(shared::activities::activity::Activity::from_json)
            .collect::<shared::Result<Vec<_>>>()?;
        let started = std::time::Instant::now();
        labs.push((set, Lab::new(Arc::clone(&model), activities, queries, now)));
        eprintln!("{set}: every view embedded in {:.1} s", started.elapsed().as_secs_f64());
    }
    let methods = methods();
    if let Ok(which) = std::env::var("LAB_SHOW") {
        for (name, method) in methods.iter().filter(|(n, _)| n.contains(which.as_str())) {
            for (set, lab) in &labs {
                for q in lab.queries.iter().filter(|q| q.split == "dev" && q.kind == "intent") {
                    show(name, set, lab, q, &method(lab, q));
                }
            }
        }
        return Ok(());
    }
    super::print_header("method");
    for (name, method) in &methods {
        for (set, lab) in &labs {
            super::print_scores(name, set, &lab.evaluate(|q| method(lab, q)), tune);
        }
    }
    Ok(())
}

fn show(name: &str, set: &str, lab: &Lab, q: &DevQuery, ranked: &[(usize, f32)]) {
    let ids: Vec<String> = ranked.iter().take(super::DEPTH).map(|(i, _)| lab.activities[*i].id.clone()).collect();
    let grade: HashMap<&str, u8> = q.relevant.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    let top: Vec<String> = ranked
        .iter()
        .take(5)
        .map(|(i, _)| {
            let a = &lab.activities[*i];
            format!("{}{}", a.title, grade.get(a.id.as_str()).map_or("✗".into(), |g| g.to_string()))
        })
        .collect();
    println!("{name} {set} {} {:.2} {} | {}", q.id, super::ndcg(&ids, &q.relevant, 10), q.query, top.join(" · "));
}
