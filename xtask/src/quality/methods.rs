//! Every ranking method tried for issue 19, as `cargo xtask quality lab` measures them: kept or
//! dropped, each is here so its figures can be reproduced. Most are a [`Pipeline`]: the dense
//! candidates above the model's floor (optionally pushed away from what the query rules out),
//! fused by RRF with BM25, lifted by the time the query names. [`KEPT`] is the configured
//! retrieval; [`FIRST`] the choice the sealed test split was first read for.

use std::collections::HashMap;
use std::sync::Arc;

use super::negation::Negation;
use shared::activities::ranking::cosine;
use shared::compose::Config;

use super::lab::{self, Lab};
use super::{DevQuery, NOW, SETS, load};

type Ranked = Vec<(usize, f32)>;
type Method = Box<dyn Fn(&Lab, &DevQuery) -> Ranked>;
/// Document views and their weights.
type Views = &'static [(&'static str, f32)];

/// A ranking with one dense and one sparse vector per activity (what the index holds).
#[derive(Clone, Copy)]
pub struct Pipeline {
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

/// The retrieval issue 19 shipped, as the lab runs it (the "before" of `cargo xtask quality`).
pub const KEPT: Pipeline =
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
    pub fn rank(self, lab: &Lab, q: &DevQuery) -> Ranked {
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

/// Dense scores of `v` over several document views: the weighted mean of its cosines to each
/// (what one vector at the views' centroid measures), or with `max` the best of them.
fn views(lab: &Lab, v: &[f32], views: &[(&'static str, f32)], max: bool) -> Ranked {
    let total: f32 = views.iter().map(|(_, w)| w).sum();
    let mut out: Ranked = (0..lab.activities.len())
        .map(|i| {
            let each = views.iter().map(|(view, w)| (*w, cosine(v, lab.doc_vector(view, i))));
            let s = if max {
                each.map(|(_, c)| c).fold(f32::MIN, f32::max)
            } else {
                each.map(|(w, c)| w * c).sum::<f32>() / total
            };
            (i, s)
        })
        .collect();
    out.sort_by(|x, y| y.1.total_cmp(&x.1));
    out.truncate(100);
    out
}

/// What a query tells about itself and its two channels' answers, before fusing them.
#[derive(Debug, Clone, Copy)]
pub struct Signals {
    /// Characters of the query.
    pub chars: usize,
    /// BM25 terms of the query, and how many any document has.
    pub terms: usize,
    pub matched: usize,
    /// IDF mass of the matched terms over the largest a term can have (a term in one document).
    pub idf_mass: f32,
    /// The rarest matched term's IDF over that largest.
    pub rarest: f32,
    /// Documents the lexical channel found (any shared term), and its best score per term over
    /// the largest IDF.
    pub lexical_hits: usize,
    pub lexical_top: f32,
    /// The dense channel's best cosine and its gap to the 10th.
    pub dense_top: f32,
    pub dense_gap: f32,
}

fn signals(lab: &Lab, query: &str, dense: &[(usize, f32)], lexical: &[(usize, f32)]) -> Signals {
    let (idfs, most) = lab.idfs("plain", query);
    let matched: Vec<f32> = idfs.iter().copied().filter(|x| *x > 0.0).collect();
    Signals {
        chars: query.chars().filter(|c| !c.is_whitespace()).count(),
        terms: idfs.len(),
        matched: matched.len(),
        idf_mass: matched.iter().sum::<f32>() / most,
        rarest: matched.iter().copied().fold(0.0, f32::max) / most,
        lexical_hits: lexical.len(),
        lexical_top: lexical.first().map_or(0.0, |x| x.1) / idfs.len().max(1) as f32 / most,
        dense_top: dense.first().map_or(0.0, |x| x.1),
        dense_gap: dense.first().map_or(0.0, |x| x.1) - dense.get(9).map_or(0.0, |x| x.1),
    }
}

/// Dense views fused with BM25 at a weight the query's [`Signals`] choose, lifted by time.
fn routed(
    lab: &Lab,
    q: &DevQuery,
    dense_views: &[(&'static str, f32)],
    time: f32,
    weight: impl Fn(&Signals) -> f32,
) -> Ranked {
    let v = lab.embed_query(&shared::activities::when::without_time(&q.query));
    let d = views(lab, &v, dense_views, false);
    let l = lab.lexical("plain", &q.query);
    let w = weight(&signals(lab, &q.query, &d, &l));
    let mut fused = if w > 0.0 { lab::rrf(&[(&d, 1.0), (&l, w)]) } else { d };
    lab.time_lift_by(&q.query, &mut fused, time);
    fused
}

/// The own words embedded as query and as passage, and the synthetic questions.
const VIEWS3: &[(&str, f32)] = &[("own+query:", 1.0), ("own", 1.0), ("questions+query:", 1.0)];

/// The own words and the synthetic questions, both embedded as queries.
const VIEWS2: &[(&str, f32)] = &[("own+query:", 1.0), ("questions+query:", 1.0)];

const SYMMETRIC: &[(&str, f32)] = &[("own+query:", 1.0)];

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
    // Issue 29: document views (dense only, then routed), tuned on the dev splits.
    let view_sets: Vec<(&str, Views, bool)> = vec![
        ("own words + own, query: both", &[("own", 1.0), ("own+query:", 1.0)], false),
        ("own+query: + description, type, tags", &[("own+query:", 1.0), ("described+query:", 1.0)], false),
        ("own+query: + seed lines+query:", &[("own+query:", 1.0), ("plain+query:", 1.0)], false),
        (
            "named: title, text, when (mean)",
            &[("title+type+query:", 1.0), ("description+query:", 1.0), ("when+where+query:", 1.0)],
            false,
        ),
        (
            "named: title, text, when (max)",
            &[("title+type+query:", 1.0), ("description+query:", 1.0), ("when+where+query:", 1.0)],
            true,
        ),
        ("named: title+type, description (mean)", &[("title+type+query:", 1.0), ("description+query:", 1.0)], false),
        ("own+query: + questions", &[("own+query:", 1.0), ("questions+query:", 1.0)], false),
        ("own+query: + questions (max)", &[("own+query:", 1.0), ("questions+query:", 1.0)], true),
        ("own+query: + questions 0.5", &[("own+query:", 1.0), ("questions+query:", 0.5)], false),
        ("own+query: + own + questions", &[("own+query:", 1.0), ("own", 1.0), ("questions+query:", 1.0)], false),
        (
            "own+query: + named title+type, description",
            &[("own+query:", 1.0), ("title+type+query:", 0.5), ("description+query:", 0.5)],
            false,
        ),
    ];
    for (name, set, max) in view_sets {
        out.push((
            format!("views {name}"),
            Box::new(move |lab: &Lab, q: &DevQuery| views(lab, &lab.embed_query(&q.query), set, max)),
        ));
    }
    // Per-query routing: fixed weights first, then weights from the query's signals.
    for w in [0.0f32, 0.1, 0.25] {
        out.push((
            format!("routed sym e5 untimed + time, fixed lex {w}"),
            Box::new(move |lab: &Lab, q: &DevQuery| routed(lab, q, SYMMETRIC, 0.5, |_| w)),
        ));
    }
    out.push((
        "routed sym e5, lex 1 if rarest term ≥ 0.6 else 0".into(),
        Box::new(|lab: &Lab, q: &DevQuery| routed(lab, q, SYMMETRIC, 0.5, |s| if s.rarest >= 0.6 { 1.0 } else { 0.0 })),
    ));
    out.push((
        "routed sym e5, lex = idf mass coverage".into(),
        Box::new(|lab: &Lab, q: &DevQuery| {
            routed(lab, q, SYMMETRIC, 0.5, |s| if s.terms == 0 { 0.0 } else { s.idf_mass / s.terms as f32 })
        }),
    ));
    // Lexical weight `specific` for a query at or above retrieval's threshold, else `rest`.
    let threshold = shared::activities::ranking::SPECIFIC;
    let variants: [(&str, Views, f32, f32, f32); 8] = [
        ("views3 + time, lex 0", VIEWS3, 0.5, 0.0, 0.0),
        ("views3 + time 1, lex 0", VIEWS3, 1.0, 0.0, 0.0),
        ("views3 + time, lex 1 if top/term ≥ 0.8", VIEWS3, 0.5, 1.0, 0.0),
        ("views3 + time, lex 0.25 if top/term ≥ 0.8", VIEWS3, 0.5, 0.25, 0.0),
        ("views3 + time, lex 1 if top/term ≥ 0.8, else 0.1", VIEWS3, 0.5, 1.0, 0.1),
        ("sym + time, lex 1 if top/term ≥ 0.8", SYMMETRIC, 0.5, 1.0, 0.0),
        ("views2 + time, lex 0", VIEWS2, 0.5, 0.0, 0.0),
        ("views2 + time, lex 1 if top/term ≥ 0.8", VIEWS2, 0.5, 1.0, 0.0),
    ];
    for (name, dense, time, specific, rest) in variants {
        out.push((
            format!("routed {name}"),
            Box::new(move |lab: &Lab, q: &DevQuery| {
                routed(lab, q, dense, time, |s| if s.lexical_top >= threshold { specific } else { rest })
            }),
        ));
    }
    out.push((
        "routed views3 as one centroid vector + time".into(),
        Box::new(|lab: &Lab, q: &DevQuery| {
            let v = lab.embed_query(&shared::activities::when::without_time(&q.query));
            let mut d: Ranked = (0..lab.activities.len())
                .map(|i| {
                    let mut c = vec![0.0f32; v.len()];
                    for (view, _) in VIEWS3 {
                        for (x, y) in c.iter_mut().zip(lab.doc_vector(view, i)) {
                            *x += y;
                        }
                    }
                    (i, cosine(&v, &c))
                })
                .collect();
            d.sort_by(|x, y| y.1.total_cmp(&x.1));
            lab.time_lift_by(&q.query, &mut d, 0.5);
            d
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
    let model = Arc::new(e5::E5Model::load(&config.activities.embedding_model_path)?);
    let now: chrono::DateTime<chrono::Utc> = NOW.parse()?;
    let mut labs = Vec::new();
    for set in SETS {
        let (activities, queries) = load(&crate::root().join("benches").join(set))?;
        let activities = activities
            .into_iter()
            .map(shared::activities::activity::Activity::from_json)
            .collect::<shared::Result<Vec<_>>>()?;
        let started = std::time::Instant::now();
        labs.push((set, Lab::new(Arc::clone(&model), activities, queries, now, true)));
        eprintln!("{set}: every view embedded in {:.1} s", started.elapsed().as_secs_f64());
    }
    let methods = methods();
    if std::env::var("LAB_SIGNALS").is_ok() {
        for (set, lab) in &labs {
            for q in lab.queries.iter().filter(|q| q.split == "dev") {
                let v = lab.embed_query(&shared::activities::when::without_time(&q.query));
                let d = views(lab, &v, SYMMETRIC, false);
                let s = signals(lab, &q.query, &d, &lab.lexical("plain", &q.query));
                println!(
                    "{set:<6} {:<10} {:>2}ch {:>2}t {:>2}m mass {:.2} rarest {:.2} hits {:>3} top {:.2} dense {:.3} gap {:.3} | {}",
                    q.kind,
                    s.chars,
                    s.terms,
                    s.matched,
                    s.idf_mass,
                    s.rarest,
                    s.lexical_hits,
                    s.lexical_top,
                    s.dense_top,
                    s.dense_gap,
                    q.query
                );
            }
        }
        return Ok(());
    }
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
    let only = std::env::var("LAB_ONLY").unwrap_or_default();
    for (name, method) in methods.iter().filter(|(n, _)| n.contains(only.as_str())) {
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
