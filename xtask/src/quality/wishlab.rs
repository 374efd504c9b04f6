//! `cargo xtask quality lab --wishes [--tune]`: the configured ranking of the quality sets'
//! queries rebuilt in memory (two-view activity vectors, routed fusion, the wish's facets, the
//! time lift), beside every variation issue 63 tried on it, in
//! seconds: intent nDCG@10 per set and split. `LAB_FACETS=dir:dir` fits the facet model on
//! those training directories instead of reading `wish.json` (new training data, measured
//! before it is shipped); `LAB_ONLY=<part>` keeps the methods so named; `LAB_SHOW=<name>` prints
//! each intent query's first six and its missed fully relevant activities instead. Vectors are
//! kept in `~/.cache/research-bundle/wishlab.json` between runs.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use shared::activities::activity::Activity;
use shared::activities::index::bm25::Bm25;
use shared::activities::ranking::{SPECIFIC, cosine, normalised_sum, specificity};
use shared::activities::when::{Wanted, without_time};
use shared::activities::wish::{FACETS, HAS_PENALTY, Wishes, ridge};
use shared::compose::Config;

use super::lab::{self, rrf, z};
use super::negation::Negation;
use super::{DevQuery, NOW, SETS, load};

const ZONE: chrono_tz::Tz = chrono_tz::Asia::Shanghai;
/// e5's similarity floor, the channel depth and the time lift, as retrieval has them.
const FLOOR: f32 = 0.8;
const DEPTH: usize = 100;
const TIME_BOOST: f32 = 0.5;
/// The ruled-out phrases read per query, at most.
const MAX_REFUSED: usize = 3;
/// The configured facet weight (`RAG_WISH_WEIGHT`).
const WEIGHT: f32 = shared::activities::wish::DEFAULT_WEIGHT;

/// Query-side texts embedded beside the query (a second query view).
const TEMPLATES: &[(&str, &str)] =
    &[("act", "适合{q}的活动"), ("ask", "有什么{q}的活动？"), ("want", "我想参加一个活动：{q}")];

/// Each facet in plain Chinese, for a wish restated from its facets.
const FACET_WORDS: [&str; 28] = [
    "安静",
    "热闹",
    "放松治愈",
    "活动身体",
    "出汗的运动",
    "高强度",
    "刺激冒险",
    "认识新朋友",
    "一个人也能参加",
    "小规模",
    "户外",
    "室内",
    "亲近自然",
    "美食",
    "喝酒",
    "学习技能",
    "动手创作",
    "文化艺术",
    "音乐",
    "晚上",
    "白天",
    "亲子",
    "情侣约会",
    "职场商务",
    "免费或便宜",
    "动物",
    "桌游和游戏",
    "公益志愿",
];

/// e5 vectors by text, read from and written to the cache file once per run.
struct Vectors {
    model: Arc<e5::E5Model>,
    known: HashMap<String, Vec<f32>>,
    path: PathBuf,
    added: bool,
}

impl Vectors {
    /// `texts` embedded as queries (as indexing and search embed with the bundled e5).
    fn get(&mut self, texts: &[String]) -> Vec<Vec<f32>> {
        let missing: Vec<&str> = texts.iter().filter(|t| !self.known.contains_key(*t)).map(String::as_str).collect();
        if !missing.is_empty() {
            let threads = std::thread::available_parallelism().map_or(1, usize::from);
            let (vectors, _) = e5::embed_parallel(&self.model, &missing, true, threads);
            self.known.extend(missing.iter().map(|t| t.to_string()).zip(vectors));
            self.added = true;
        }
        texts.iter().map(|t| self.known[t].clone()).collect()
    }

    fn save(&self) {
        if self.added {
            let _ = std::fs::write(&self.path, serde_json::to_vec(&self.known).unwrap_or_default());
        }
    }
}

/// The facet model measured, and what the variations of it read.
struct Model {
    wishes: Wishes,
    /// The training wishes' vectors and facet rows (a nearest-neighbour desire).
    training: Vec<(Vec<f32>, Vec<f32>)>,
    /// The activity head's weights with their magnitude (and bias), not only their direction.
    has_full: Vec<Vec<f32>>,
}

/// What a query brings to every method, read once.
struct Query {
    q: DevQuery,
    vector: Vec<f32>,
    /// The vectors of the phrases it rules out ([`Negation`]).
    refused: Vec<Vec<f32>>,
    wanted: Wanted,
    /// BM25 hits (document, score), best first, and whether routed fusion fuses them.
    lexical: Vec<(usize, f32)>,
    specific: bool,
    /// Second query views by name ([`TEMPLATES`], `facets`: restated from its desire).
    views: HashMap<&'static str, Vec<f32>>,
    /// Its vector from the second encoder (USE multilingual v3; `--second`), else empty.
    second: Vec<f32>,
}

struct Set {
    name: &'static str,
    activities: Vec<Activity>,
    /// Unit two-view vectors (the configured dense vector).
    docs: Vec<Vec<f32>>,
    /// Each view's own vector (own words, questions).
    views: Vec<[Vec<f32>; 2]>,
    /// The two views from the second encoder, summed and normalised (`--second`), else empty.
    second: Vec<Vec<f32>>,
    queries: Vec<Query>,
}

type Ranked = Vec<(usize, f32)>;
type Method = Box<dyn Fn(&Model, &Set, &Query) -> Ranked>;

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// `desire` without what a ruled-out phrase wants (its `refused` desire): each facet it wants
/// is wanted less by as much.
fn refuse(desire: &mut [f32], refused: &[f32]) {
    for (d, r) in desire.iter_mut().zip(refused) {
        *d = (*d - r.max(0.0)).clamp(-1.0, 1.0);
    }
}

impl Model {
    /// The query's desire, with what it rules out avoided when `negations`.
    fn desire(&self, q: &Query, negations: bool) -> Vec<f32> {
        let mut desire = self.wishes.desire(&q.vector);
        for phrase in q.refused.iter().filter(|_| negations) {
            refuse(&mut desire, &self.wishes.desire(phrase));
        }
        desire
    }

    /// The mean facet row of the `k` training wishes nearest `v`, weighted by exp(cos / τ).
    fn nearest_desire(&self, v: &[f32], k: usize, tau: f32) -> Vec<f32> {
        let mut near: Vec<(f32, &Vec<f32>)> = self.training.iter().map(|(t, row)| (cosine(v, t), row)).collect();
        near.sort_by(|a, b| b.0.total_cmp(&a.0));
        let top = &near[..k.min(near.len())];
        let best = top.first().map_or(0.0, |t| t.0);
        let weights: Vec<f32> = top.iter().map(|(c, _)| ((c - best) / tau).exp()).collect();
        let total: f32 = weights.iter().sum();
        let mut out = vec![0.0; FACETS.len()];
        for ((_, row), w) in top.iter().zip(&weights) {
            out.iter_mut().zip(row.iter()).for_each(|(o, r)| *o += w / total * r);
        }
        out
    }
}

impl Set {
    /// The dense channel: documents at or above `floor`, best first, at most [`DEPTH`].
    fn dense(&self, v: &[f32], floor: f32) -> Ranked {
        let mut out: Ranked =
            self.docs.iter().enumerate().map(|(i, d)| (i, cosine(v, d))).filter(|(_, s)| *s >= floor).collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1));
        out.truncate(DEPTH);
        out
    }

    fn lift(&self, q: &Query, ranked: &mut Ranked) {
        for (i, s) in ranked.iter_mut() {
            *s *= 1.0 + TIME_BOOST * q.wanted.fit(self.activities[*i].start_at, ZONE);
        }
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
    }

    /// Routed fusion: a specific query fuses BM25; any other is its candidates by `score`
    /// (document, cosine → score).
    fn ranked(&self, q: &Query, score: &dyn Fn(usize, f32) -> f32) -> Ranked {
        let dense = self.dense(&q.vector, FLOOR);
        let mut out = if q.specific {
            rrf(&[(&dense, 1.0), (&q.lexical, 1.0)])
        } else {
            dense.iter().map(|&(i, c)| (i, score(i, c).max(0.0))).collect()
        };
        self.lift(q, &mut out);
        out
    }

    /// Candidates by cosine + `w` × the match of `desire` to their facets.
    fn with_desire(&self, m: &Model, q: &Query, desire: &[f32], w: f32) -> Ranked {
        let direction = m.wishes.direction(desire);
        self.ranked(q, &|i, c| c + w * dot(&direction, &self.docs[i]))
    }
}

/// The configured ranking at facet weight `w`; with `negations`, what a wish rules out avoided
/// (measured, not shipped).
fn facets(w: f32, negations: bool) -> Method {
    Box::new(move |m: &Model, s: &Set, q: &Query| s.with_desire(m, q, &m.desire(q, negations), w))
}

/// The second encoder fused at score level, on e5's candidates (its floor and depth, so a
/// specific query and the time lift are as configured): cosine + `beta` × USE's cosine, plus
/// the facets; no `beta`: USE's cosine alone over every activity (no e5).
fn second(beta: Option<f32>) -> Method {
    Box::new(move |m: &Model, s: &Set, q: &Query| {
        let direction = m.wishes.direction(&m.desire(q, false));
        let Some(beta) = beta else {
            let mut out: Ranked = (0..s.activities.len())
                .map(|i| (i, cosine(&q.second, &s.second[i]) + WEIGHT * dot(&direction, &s.docs[i])))
                .collect();
            out.sort_by(|a, b| b.1.total_cmp(&a.1));
            out.truncate(DEPTH);
            s.lift(q, &mut out);
            return out;
        };
        s.ranked(q, &|i, c| c + beta * cosine(&q.second, &s.second[i]) + WEIGHT * dot(&direction, &s.docs[i]))
    })
}

/// The methods with the second encoder (`--second`).
fn second_methods() -> Vec<(String, Method)> {
    let mut out: Vec<(String, Method)> = vec![("USE alone, every activity, with the facets".into(), second(None))];
    for beta in [0.1f32, 0.25, 0.5, 1.0] {
        out.push((format!("e5 + {beta} × USE on e5's candidates, with the facets"), second(Some(beta))));
    }
    out
}

/// Every method measured, the configured one first.
fn methods() -> Vec<(String, Method)> {
    let mut out: Vec<(String, Method)> = vec![
        ("configured: the wish's facets".into(), facets(WEIGHT, false)),
        ("what a wish rules out avoided".into(), facets(WEIGHT, true)),
        ("no facets".into(), Box::new(|_: &Model, s: &Set, q: &Query| s.ranked(q, &|_, c| c))),
    ];
    // Each activity's two views (own words, questions) matched apart instead of summed.
    for (name, mix) in [("the better view", 1.0f32), ("own words only", 0.0), ("better view and sum, half each", 0.5)] {
        out.push((
            format!("views scored apart: {name}"),
            Box::new(move |m: &Model, s: &Set, q: &Query| {
                let direction = m.wishes.direction(&m.desire(q, false));
                s.ranked(q, &|i, c| {
                    let [own, asked] = &s.views[i];
                    let (a, b) = (cosine(&q.vector, own), cosine(&q.vector, asked));
                    let apart = if mix == 0.0 { a } else { a.max(b) };
                    let mixed = if mix == 1.0 { apart } else { (1.0 - mix) * apart + mix * c };
                    mixed + WEIGHT * dot(&direction, &s.docs[i])
                })
            }),
        ));
    }
    for w in [0.6f32, 1.0, 3.0] {
        out.push((format!("facet weight {w}"), facets(w, false)));
    }
    for (view, _) in TEMPLATES.iter().chain(&[("facets", "")]) {
        for beta in [0.5f32, 1.0] {
            out.push((
                format!("second query view {view} β {beta}"),
                Box::new(move |m: &Model, s: &Set, q: &Query| {
                    let direction = m.wishes.direction(&m.desire(q, false));
                    let second = q.views.get(view);
                    s.ranked(q, &|i, c| {
                        c + second.map_or(0.0, |v| beta * cosine(v, &s.docs[i])) + WEIGHT * dot(&direction, &s.docs[i])
                    })
                }),
            ));
        }
    }
    out.push((
        "desire averaged over the query views".into(),
        Box::new(|m: &Model, s: &Set, q: &Query| {
            let mut d = m.desire(q, false);
            for (view, _) in TEMPLATES {
                m.wishes.desire(&q.views[view]).iter().zip(d.iter_mut()).for_each(|(x, y)| *y += x);
            }
            d.iter_mut().for_each(|y| *y /= (TEMPLATES.len() + 1) as f32);
            s.with_desire(m, q, &d, WEIGHT)
        }),
    ));
    for (k, tau) in [(10usize, 0.02f32), (20, 0.02), (10, 0.01)] {
        out.push((
            format!("desire half from the {k} nearest training wishes, τ {tau}"),
            Box::new(move |m: &Model, s: &Set, q: &Query| {
                let near = m.nearest_desire(&q.vector, k, tau);
                let d: Vec<f32> = m.desire(q, false).iter().zip(near).map(|(r, n)| (r + n) / 2.0).collect();
                s.with_desire(m, q, &d, WEIGHT)
            }),
        ));
    }
    for cut in [0.15f32, 0.3] {
        out.push((
            format!("desire below {cut} dropped"),
            Box::new(move |m: &Model, s: &Set, q: &Query| {
                let d: Vec<f32> =
                    m.desire(q, false).iter().map(|d| d.signum() * (d.abs() - cut).max(0.0) / (1.0 - cut)).collect();
                s.with_desire(m, q, &d, WEIGHT)
            }),
        ));
    }
    for w in [0.1f32, 0.4] {
        out.push((
            format!("activity head with its magnitude, weight {w}"),
            Box::new(move |m: &Model, s: &Set, q: &Query| {
                let d = m.desire(q, false);
                s.ranked(q, &|i, c| c + w * m.has_full.iter().zip(&d).map(|(h, x)| x * dot(h, &s.docs[i])).sum::<f32>())
            }),
        ));
    }
    for w in [1.0f32, 1.5] {
        out.push((
            format!("z-scored over the candidates: cosine + {w} × match"),
            Box::new(move |m: &Model, s: &Set, q: &Query| {
                let dense = s.dense(&q.vector, FLOOR);
                if q.specific || dense.len() < 2 {
                    return s.ranked(q, &|_, c| c);
                }
                let direction = m.wishes.direction(&m.desire(q, false));
                let cos = z(&dense.iter().map(|(_, c)| *c).collect::<Vec<_>>());
                let met = z(&dense.iter().map(|(i, _)| dot(&direction, &s.docs[*i])).collect::<Vec<_>>());
                let mut out: Ranked =
                    dense.iter().enumerate().map(|(k, (i, _))| (*i, 10.0 + cos[k] + w * met[k])).collect();
                s.lift(q, &mut out);
                out
            }),
        ));
    }
    for (k, beta) in [(3usize, 0.3f32), (3, 0.6)] {
        out.push((
            format!("pseudo-relevance feedback: top {k}, β {beta}"),
            Box::new(move |m: &Model, s: &Set, q: &Query| {
                let first = facets(WEIGHT, false)(m, s, q);
                if q.specific {
                    return first;
                }
                let mut moved = q.vector.clone();
                for (i, _) in first.iter().take(k) {
                    moved.iter_mut().zip(&s.docs[*i]).for_each(|(v, d)| *v += beta / k as f32 * d);
                }
                let direction = m.wishes.direction(&m.desire(q, false));
                let mut out: Ranked = first
                    .iter()
                    .map(|&(i, _)| (i, cosine(&moved, &s.docs[i]) + WEIGHT * dot(&direction, &s.docs[i])))
                    .collect();
                s.lift(q, &mut out);
                out
            }),
        ));
    }
    out
}

/// A desire restated as an activity description: "一个安静、放松治愈的活动，不要热闹".
fn restated(desire: &[f32]) -> Option<String> {
    let pick = |keep: &dyn Fn(f32) -> bool| -> Vec<&str> {
        FACET_WORDS.iter().zip(desire).filter(|(_, d)| keep(**d)).map(|(w, _)| *w).collect()
    };
    let (wants, avoids) = (pick(&|d| d >= 0.3), pick(&|d| d <= -0.3));
    if wants.is_empty() && avoids.is_empty() {
        return None;
    }
    let avoided = if avoids.is_empty() { String::new() } else { format!("，不要{}", avoids.join("、")) };
    Some(format!("一个{}的活动{avoided}", wants.join("、")))
}

/// The facet model: `wish.json`, or fitted on `LAB_FACETS`'s directories.
fn model(vectors: &mut Vectors) -> crate::Result<Model> {
    let dirs: Vec<PathBuf> = match std::env::var("LAB_FACETS") {
        Ok(dirs) => dirs.split(':').map(PathBuf::from).collect(),
        Err(_) => vec![crate::root().join("benches/facets")],
    };
    let (wishes, activities) = super::wishes::training(&dirs)?;
    let texts: Vec<String> = wishes.iter().map(|(t, _)| t.clone()).collect();
    let training: Vec<(Vec<f32>, Vec<f32>)> =
        vectors.get(&texts).into_iter().zip(wishes).map(|(v, (_, row))| (v, row)).collect();
    let views: Vec<String> = activities.iter().flat_map(|(a, _)| a.dense_views(ZONE)).collect();
    let labelled: Vec<(Vec<f32>, Vec<f32>)> =
        vectors.get(&views).chunks(2).map(normalised_sum).zip(activities).map(|(v, (_, row))| (v, row)).collect();
    let shipped = Wishes::shipped();
    let fitted = Wishes::fit(&training, &labelled, &shipped.vector);
    eprintln!(
        "facet model: {} wishes, {} activities; the shipped one: {}",
        training.len(),
        labelled.len(),
        &fitted == shipped
    );
    Ok(Model { wishes: fitted, training, has_full: ridge(&labelled, HAS_PENALTY) })
}

/// A quality set with every query read.
fn set(
    name: &'static str,
    vectors: &mut Vectors,
    m: &Model,
    tune: bool,
    use_model: Option<&usem::UseModel>,
) -> crate::Result<Set> {
    let (values, graded) = load(&crate::root().join("benches").join(name))?;
    let activities = values.into_iter().map(Activity::from_json).collect::<shared::Result<Vec<_>>>()?;
    let views: Vec<String> = activities.iter().flat_map(|a| a.dense_views(ZONE)).collect();
    let embedded = vectors.get(&views);
    let docs: Vec<Vec<f32>> = embedded.chunks(2).map(normalised_sum).collect();
    let views: Vec<[Vec<f32>; 2]> = embedded.chunks(2).map(|p| [p[0].clone(), p[1].clone()]).collect();
    let bm25 = Bm25::new();
    let sparse = lab::sparse(&bm25, &activities.iter().map(|a| a.lexical_text(ZONE)).collect::<Vec<_>>());
    let now: DateTime<Utc> = NOW.parse()?;
    let mut queries = Vec::new();
    for q in graded.into_iter().filter(|q| !tune || super::tuned(&q.split)) {
        let text = without_time(&q.query);
        let mut texts = vec![text.clone()];
        texts.extend(TEMPLATES.iter().map(|(_, t)| t.replace("{q}", &text)));
        let mut embedded = vectors.get(&texts).into_iter();
        let vector = embedded.next().unwrap_or_default();
        let mut views: HashMap<&'static str, Vec<f32>> = TEMPLATES.iter().map(|(n, _)| *n).zip(embedded).collect();
        let refused: Vec<String> = Negation::parse(&text).unwanted.into_iter().take(MAX_REFUSED).collect();
        let refused = vectors.get(&refused);
        let mut lexical = lab::lexical(&bm25, &sparse, &q.query);
        lexical.truncate(DEPTH);
        let top = lexical.first().map_or(0.0, |h| h.1);
        let specific = specificity(top, bm25.query(&q.query).indices.len(), activities.len()) >= SPECIFIC;
        let wanted = Wanted::parse(&q.query, now, ZONE);
        let second = use_model.map_or_else(Vec::new, |u| u.embed(&[text.as_str()]).remove(0));
        let mut query = Query { q, vector, refused, wanted, lexical, specific, views: HashMap::new(), second };
        if let Some(text) = restated(&m.desire(&query, true)) {
            views.insert("facets", vectors.get(&[text]).remove(0));
        }
        query.views = views;
        queries.push(query);
    }
    let second = match use_model {
        Some(u) => {
            let texts: Vec<String> = activities.iter().flat_map(|a| a.dense_views(ZONE)).collect();
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            u.embed(&refs).chunks(2).map(normalised_sum).collect()
        }
        None => Vec::new(),
    };
    Ok(Set { name, activities, docs, views, second, queries })
}

/// `second`: also the methods fusing USE multilingual v3 (`infra/fetch-use.sh`'s weights).
pub fn run(tune: bool, second: bool) -> crate::Result {
    crate::ensure_model()?;
    let use_model = second.then(crate::use_model).transpose()?;
    let config = Config::from_lookup(|k| std::env::var(k).ok())?;
    let model_file = Arc::new(e5::E5Model::load(&config.activities.embedding_model_path)?);
    let home = PathBuf::from(std::env::var("HOME").unwrap_or_else(|_| ".".into())).join(".cache/research-bundle");
    std::fs::create_dir_all(&home)?;
    let path = home.join("wishlab.json");
    let known = std::fs::read(&path).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default();
    let mut vectors = Vectors { model: model_file, known, path, added: false };
    let m = model(&mut vectors)?;
    let started = std::time::Instant::now();
    let sets = SETS
        .iter()
        .map(|name| set(name, &mut vectors, &m, tune, use_model.as_ref()))
        .collect::<crate::Result<Vec<_>>>()?;
    if use_model.is_some() {
        eprintln!("sets read, USE embedded, in {:.1} s", started.elapsed().as_secs_f64());
    }
    vectors.save();
    let only = std::env::var("LAB_ONLY").unwrap_or_default();
    let mut methods = methods();
    if second {
        methods.extend(second_methods());
    }
    let methods: Vec<(String, Method)> = methods.into_iter().filter(|(n, _)| n.contains(only.as_str())).collect();
    if let Ok(which) = std::env::var("LAB_SHOW") {
        for (name, method) in methods.iter().filter(|(n, _)| *n == which) {
            for set in &sets {
                for q in set.queries.iter().filter(|q| q.q.kind == "intent") {
                    show(name, set, q, &method(&m, set, q));
                }
            }
        }
        return Ok(());
    }
    super::print_header("method");
    for (name, method) in &methods {
        for set in &sets {
            let ranked: HashMap<String, Vec<String>> = set
                .queries
                .iter()
                .map(|q| {
                    let ids =
                        method(&m, set, q).into_iter().take(super::DEPTH).map(|(i, _)| set.activities[i].id.clone());
                    (q.q.id.clone(), ids.collect())
                })
                .collect();
            let graded: Vec<DevQuery> = set.queries.iter().map(|q| q.q.clone()).collect();
            let intent: BTreeMap<_, _> =
                super::scores_of(&graded, &ranked).into_iter().filter(|((kind, _), _)| kind == "intent").collect();
            super::print_scores(name, set.name, &intent, tune);
        }
    }
    Ok(())
}

/// One query: its nDCG@10, first six (grade or ✗) and fully relevant activities missed from
/// the first ten (with their rank).
fn show(name: &str, set: &Set, q: &Query, ranked: &[(usize, f32)]) {
    let ids: Vec<String> = ranked.iter().take(super::DEPTH).map(|(i, _)| set.activities[*i].id.clone()).collect();
    let grade = |i: usize| q.q.relevant.get(&set.activities[i].id).map_or("✗".to_owned(), u8::to_string);
    let top: Vec<String> =
        ranked.iter().take(6).map(|(i, _)| format!("{}{}", set.activities[*i].title, grade(*i))).collect();
    let missed: Vec<String> = q
        .q
        .relevant
        .iter()
        .filter(|(_, g)| **g == 2)
        .filter_map(|(id, _)| {
            let i = set.activities.iter().position(|a| &a.id == id)?;
            let at = ranked.iter().position(|(j, _)| *j == i);
            at.is_none_or(|r| r >= 10)
                .then(|| format!("{}@{}", set.activities[i].title, at.map_or("-".to_owned(), |r| (r + 1).to_string())))
        })
        .collect();
    println!(
        "{name} | {} {} {:.2} | {}\n    top: {}\n    missed: {}",
        set.name,
        q.q.id,
        super::ndcg(&ids, &q.q.relevant, 10),
        q.q.query,
        top.join(" · "),
        missed.join(" · ")
    );
}
