//! `cargo xtask quality --nearby [--tune]`: issue 77's set (`benches/nearby/`, written queries
//! first by an author who read no ranking code) through activity retrieval as a user searches:
//! from a place, within a radius, at the query's time, with what they turned down
//! (`satisfied: false` feedback) and stated disliking. Per kind and split: nDCG@10, the share of
//! the top 5 within the nearest half of the radius, distinct series in the top 10
//! (`series.jsonl`; an activity of none is its own), and turned-down activities in the top 10.
//!
//! Two methods: `before` (no shaping, no user: main's ranking before issue 77, which read
//! neither feedback nor dislikes) and `configured` (the deployed `Shaping`, or `RAG_*` from the
//! environment, with the user). `--tune` prints the tune split under a grid of shapings instead,
//! the held-out split unread.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};
use shared::activities::index::Near;
use shared::activities::interests::Stated;
use shared::activities::ranking::{Shaping, distance_km};
use shared::activities::request::SearchRequest;
use shared::activities::retrieval::{Ranking, Retrieval};
use shared::core::clock::{Clock, ManualClock};
use shared::core::records::LocalRecords;

use super::{config_for, lines, ndcg, tuned};

#[derive(Debug, Clone, Deserialize)]
struct Query {
    id: String,
    query: String,
    kind: String,
    split: String,
    near: Point,
    #[serde(rename = "radiusKm")]
    radius_km: f64,
    now: chrono::DateTime<chrono::Utc>,
    #[serde(default, rename = "turnedDown")]
    turned_down: Vec<String>,
    #[serde(default)]
    dislikes: Vec<String>,
    relevant: HashMap<String, u8>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
struct Point {
    lat: f64,
    lng: f64,
}

#[derive(Deserialize)]
struct Series {
    id: String,
    series: String,
}

/// Means over a group of queries.
#[derive(Debug, Default, Clone, Copy)]
struct Figures {
    ndcg10: f64,
    near_half_top5: f64,
    series_top10: f64,
    turned_down_top10: f64,
    queries: usize,
}

impl Figures {
    fn add(&mut self, other: [f64; 4]) {
        let n = self.queries as f64;
        let mean = |old: f64, new: f64| (old * n + new) / (n + 1.0);
        self.ndcg10 = mean(self.ndcg10, other[0]);
        self.near_half_top5 = mean(self.near_half_top5, other[1]);
        self.series_top10 = mean(self.series_top10, other[2]);
        self.turned_down_top10 = mean(self.turned_down_top10, other[3]);
        self.queries += 1;
    }
}

struct Set {
    activities: Vec<Value>,
    queries: Vec<Query>,
    series: HashMap<String, String>,
    places: HashMap<String, (f64, f64)>,
}

fn load(dir: &Path) -> crate::Result<Set> {
    let activities: Vec<Value> = lines(&dir.join("activities.jsonl"))?;
    let queries: Vec<Query> = lines(&dir.join("queries.jsonl"))?;
    let series = lines::<Series>(&dir.join("series.jsonl"))?.into_iter().map(|s| (s.id, s.series)).collect();
    let places = activities
        .iter()
        .filter_map(|a| {
            let id = a["id"].as_str()?.to_owned();
            Some((id, (a["location"]["lat"].as_f64()?, a["location"]["lng"].as_f64()?)))
        })
        .collect();
    Ok(Set { activities, queries, series, places })
}

/// The figures of one ranked list for `q`.
fn figures(set: &Set, q: &Query, ranked: &[String]) -> [f64; 4] {
    let top5 = &ranked[..ranked.len().min(5)];
    let near_half = top5
        .iter()
        .filter(|id| {
            set.places
                .get(*id)
                .is_some_and(|&(lat, lng)| distance_km(q.near.lat, q.near.lng, lat, lng) <= q.radius_km / 2.0)
        })
        .count() as f64
        / top5.len().max(1) as f64;
    let top10 = &ranked[..ranked.len().min(10)];
    let series: HashSet<&str> = top10.iter().map(|id| set.series.get(id).map_or(id.as_str(), String::as_str)).collect();
    let turned = top10.iter().filter(|id| q.turned_down.contains(id)).count() as f64;
    [ndcg(ranked, &q.relevant, 10), near_half, series.len() as f64, turned]
}

/// The user of query `q`, told what `q` says they turned down and dislike.
async fn user_of(retrieval: &Retrieval, q: &Query) -> crate::Result<String> {
    let user = format!("nearby-{}", q.id);
    for id in &q.turned_down {
        retrieval.feedback(&user, &json!({"activityId": id, "satisfied": false})).await?;
    }
    let stated: Vec<Stated> = q.dislikes.iter().map(|t| Stated { text: t.clone(), likes: false }).collect();
    if !stated.is_empty() {
        retrieval.remember(&user, &stated, "nearby-dislikes").await?;
    }
    Ok(user)
}

/// Ranked ids of `q` by `retrieval` (as of `q.now`), as the user when `personal`.
async fn rank(retrieval: &Retrieval, q: &Query, user: Option<String>) -> crate::Result<Vec<String>> {
    let req = SearchRequest {
        semantic_query: Some(q.query.clone()),
        near: Some(Near { lat: q.near.lat, lng: q.near.lng, radius_km: q.radius_km }),
        window: None,
        kind: None,
        limit: super::DEPTH,
        user_id: user,
    };
    let response = retrieval.search(&req, &format!("nearby-{}", q.id)).await?;
    Ok(response.results.into_iter().map(|r| r.activity.id).collect())
}

/// Runs the measure (see the module's doc).
pub async fn run(tune: bool, env: impl Fn(&str) -> Option<String>) -> crate::Result {
    crate::ensure_model()?;
    let set = load(&crate::root().join("benches/nearby"))?;
    let tmp = tempfile::tempdir()?;
    // `VECTOR_STORE=qdrant QDRANT_URL=...` measures on a Qdrant server instead of Edge.
    let ours = |k: &str| {
        ["RAG_", "EMBEDDING_", "WISH_", "HOME", "RESEARCH_BUNDLE_CACHE", "VECTOR_STORE", "QDRANT_"]
            .iter()
            .any(|p| k.starts_with(p))
    };
    let config = config_for(tmp.path(), true, |k| env(k).filter(|_| ours(k)))?;
    let records = Arc::new(LocalRecords::open(tmp.path())?);
    let first = set.queries.iter().map(|q| q.now).min().ok_or("benches/nearby has no queries")?;
    let started = std::time::Instant::now();
    let indexed = super::prepare_with(&set.activities, first, &config, records.clone()).await?;
    eprintln!(
        "== nearby on {}: {} activities, {} queries, {} in series (indexed in {:.1} s)",
        indexed.index().backend(),
        set.activities.len(),
        set.queries.len(),
        set.series.len(),
        started.elapsed().as_secs_f64()
    );
    let index = Arc::clone(indexed.index());
    // One retrieval per time of asking, over the one index and record store.
    let mut at: BTreeMap<chrono::DateTime<chrono::Utc>, Retrieval> = BTreeMap::new();
    for q in &set.queries {
        if let std::collections::btree_map::Entry::Vacant(slot) = at.entry(q.now) {
            let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(q.now));
            let r = shared::compose::retrieval(&config, Arc::clone(&index), records.clone(), clock)?;
            slot.insert(r.with_facets(indexed.facets().clone()));
        }
    }
    let mut users = HashMap::new();
    for q in &set.queries {
        users.insert(q.id.clone(), user_of(&at[&q.now], q).await?);
    }
    let configured = indexed.ranking().shaping;
    let methods: Vec<(String, Shaping, bool)> = if tune {
        let mut grid = vec![("before".to_owned(), Shaping::OFF, false)];
        for near in [0.0, 0.15, 0.3, 0.6] {
            for soon in [0.0, 0.1, 0.2, 0.4] {
                for diversity in [0.0, 0.15, 0.3] {
                    let s = Shaping { near_weight: near, soon_weight: soon, diversity, ..configured };
                    grid.push((format!("near {near} soon {soon} div {diversity}"), s, true));
                }
            }
        }
        for dislike in [0.0, 0.3, 0.6, 0.9] {
            grid.push((
                format!("configured, dislike {dislike}"),
                Shaping { dislike_weight: dislike, ..configured },
                true,
            ));
        }
        grid
    } else {
        vec![("before".to_owned(), Shaping::OFF, false), ("configured".to_owned(), configured, true)]
    };
    println!(
        "{:<36} {:<10} {:<8} {:>3} {:>8} {:>10} {:>10} {:>11}",
        "method", "kind", "split", "n", "nDCG@10", "near½ top5", "series t10", "turned t10"
    );
    for (name, shaping, personal) in &methods {
        let mut table: BTreeMap<(String, String), Figures> = BTreeMap::new();
        for q in set.queries.iter().filter(|q| tuned(&q.split) == tune) {
            let retrieval = at[&q.now].clone();
            let retrieval = retrieval.clone().ranked_by(Ranking { shaping: *shaping, ..retrieval.ranking() });
            let user = personal.then(|| users[&q.id].clone());
            let ranked = rank(&retrieval, q, user).await?;
            let f = figures(&set, q, &ranked);
            table.entry((q.kind.clone(), q.split.clone())).or_default().add(f);
            table.entry(("all".into(), q.split.clone())).or_default().add(f);
        }
        for ((kind, split), f) in &table {
            println!(
                "{name:<36} {kind:<10} {split:<8} {:>3} {:>8.3} {:>10.3} {:>10.2} {:>11.2}",
                f.queries, f.ndcg10, f.near_half_top5, f.series_top10, f.turned_down_top10
            );
        }
    }
    if !tune {
        // Warm latency, before and configured interleaved query by query (the machine's noise
        // falls on both alike): the first round warms, three are timed.
        let (mut before, mut after) = (Vec::new(), Vec::new());
        for round in 0..4 {
            for q in &set.queries {
                let r = &at[&q.now];
                let off = r.clone().ranked_by(Ranking { shaping: Shaping::OFF, ..r.ranking() });
                let t = std::time::Instant::now();
                rank(&off, q, None).await?;
                let b = t.elapsed();
                let t = std::time::Instant::now();
                rank(r, q, Some(users[&q.id].clone())).await?;
                if round > 0 {
                    before.push(b);
                    after.push(t.elapsed());
                }
            }
        }
        let p50 = |v: &mut Vec<std::time::Duration>| {
            v.sort();
            v[v.len() / 2].as_secs_f64() * 1000.0
        };
        let (b, a) = (p50(&mut before), p50(&mut after));
        println!("warm p50 on {}: before {b:.2} ms, configured {a:.2} ms ({:.2}x)", index.backend(), a / b);
    }
    Ok(())
}
