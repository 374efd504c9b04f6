//! One behavioural suite for the vector index port, run on Qdrant Edge (in process, on disk)
//! always, and on a Qdrant server when `QDRANT_URL` is set (it says so loudly when not).

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use integration::embedding::concept_vector;
use serde_json::json;
use shared::activities::activity::Activity;
use shared::activities::index::bm25::Bm25;
use shared::activities::index::{HardFilter, Lift, Near, NearLift, Order, Point, SoonLift, VectorIndex, point_id};
use shared::activities::indexing::{activity_of, payload};
use shared::activities::ranking::distance_km;
use shared::activities::wish::Wishes;

const DIMS: usize = 9;

fn now() -> DateTime<Utc> {
    "2026-11-22T04:00:00Z".parse().unwrap()
}

/// An active, bookable activity in Shanghai starting `hours` after [`now`].
fn activity(id: &str, title: &str, description: &str, hours: i64) -> Activity {
    Activity::from_json(json!({
        "id": id, "title": title, "description": description, "type": "休闲", "tags": [],
        "startAt": (now() + Duration::hours(hours)).to_rfc3339(), "locationName": "上海静安区",
        "location": {"lat": 31.2218, "lng": 121.4378}, "status": "active",
        "currentParticipants": 1, "maxParticipants": 8
    }))
    .unwrap()
}

fn point(a: &Activity, embedded: bool) -> Point {
    Point {
        id: point_id(&a.id),
        payload: payload(a, chrono_tz::Asia::Shanghai, embedded),
        dense: embedded.then(|| concept_vector(&a.dense_text(), DIMS)),
        sparse: Bm25::new().document(&a.lexical_text(chrono_tz::Asia::Shanghai)),
    }
}

async fn write(index: &dyn VectorIndex, activities: &[&Activity]) {
    index.upsert(activities.iter().map(|a| point(a, true)).collect()).await.unwrap();
}

fn ids(stored: &[shared::activities::index::Stored]) -> Vec<String> {
    stored.iter().map(|s| activity_of(&s.payload).unwrap().id).collect()
}

// Given the same activity written twice, then it is one point; reads come back in the order
// asked, missing ids are left out, and a pending point has no dense vector.
async fn writes_are_idempotent_and_reads_keep_order(index: Arc<dyn VectorIndex>) {
    let (a, b) = (activity("a", "读书局", "安静看书", 24), activity("b", "啤酒局", "热闹撸串", 48));
    write(&*index, &[&a, &b]).await;
    let mut a2 = a.clone();
    a2.title = "白噪音读书局".into();
    index.upsert(vec![point(&a2, false)]).await.unwrap();
    assert_eq!(index.count(&HardFilter::bookable(now())).await.unwrap(), 2);
    let got = index.get(&[point_id("b"), point_id("missing"), point_id("a")], true).await.unwrap();
    assert_eq!(ids(&got), ["b", "a"]);
    assert_eq!(activity_of(&got[1].payload).unwrap().title, "白噪音读书局");
    assert_eq!(got[1].payload["embedding"], "pending");
    assert!(got[0].dense.as_ref().is_some_and(|v| v.len() == DIMS));
    assert!(got[1].dense.is_none(), "the rewrite without a vector replaced the point");
    assert!(index.get(&[point_id("b")], false).await.unwrap()[0].dense.is_none());
}

// Given activities that each break one hard condition, then only the bookable one in range
// passes, in counts, scrolls and both search channels.
async fn the_hard_filter_holds_every_condition(index: Arc<dyn VectorIndex>) {
    let ok = activity("ok", "安静读书局", "安静看书", 30);
    let mut draft = activity("draft", "安静读书局", "安静看书", 30);
    draft.status = shared::activities::activity::Status::Draft;
    let past = activity("past", "安静读书局", "安静看书", -2);
    let mut full = activity("full", "安静读书局", "安静看书", 30);
    full.current_participants = full.max_participants;
    let mut far = activity("far", "安静读书局", "安静看书", 31);
    far.location = shared::activities::activity::Location { lat: 39.9339, lng: 116.4547 }; // Beijing
    let mut other = activity("other", "安静读书局", "安静看书", 32);
    other.kind = "运动".into();
    let late = activity("late", "安静读书局", "安静看书", 24 * 10);
    write(&*index, &[&ok, &draft, &past, &full, &far, &other, &late]).await;

    let bookable = HardFilter::bookable(now());
    assert_eq!(index.count(&bookable).await.unwrap(), 4, "ok, far, other, late");
    let strict = HardFilter {
        after: now(),
        near: Some(Near { lat: 31.2304, lng: 121.4737, radius_km: 10.0 }),
        kind: Some("休闲".into()),
        window: Some((now(), now() + Duration::days(3))),
    };
    assert_eq!(index.count(&strict).await.unwrap(), 1);
    assert_eq!(ids(&index.scroll(&strict, Order::Any, 100).await.unwrap()), ["ok"]);
    let query = concept_vector("安静", DIMS);
    let dense = index.search_dense(&query, &strict, 10, 0.0).await.unwrap();
    assert_eq!(dense.iter().map(|h| h.id).collect::<Vec<_>>(), [point_id("ok")]);
    let sparse = index.search_sparse(&Bm25::new().query("读书局"), &strict, 10).await.unwrap();
    assert_eq!(sparse.iter().map(|h| h.id).collect::<Vec<_>>(), [point_id("ok")]);
    // Soonest first, and a limit.
    assert_eq!(ids(&index.scroll(&bookable, Order::StartAt, 2).await.unwrap()), ["ok", "far"]);
}

// Given a quiet, a loud and a watery activity, then dense search ranks by cosine, drops what
// is under the threshold, and skips a point whose embedding is pending; the lexical channel
// still finds the pending one by its words.
async fn dense_and_lexical_channels_rank_and_threshold(index: Arc<dyn VectorIndex>) {
    let quiet = activity("quiet", "白噪音读书局", "安静看书，放空发呆", 24);
    let loud = activity("loud", "大排档啤酒局", "人多热闹", 25);
    let surf = activity("surf", "室内冲浪", "浪池里学冲浪", 26);
    let pending = activity("pending", "冥想静心课", "安静冥想", 27);
    write(&*index, &[&quiet, &loud, &surf]).await;
    index.upsert(vec![point(&pending, false)]).await.unwrap();
    let filter = HardFilter::bookable(now());

    let hits = index.search_dense(&concept_vector("想找个安静的地方发呆", DIMS), &filter, 10, 0.5).await.unwrap();
    assert_eq!(hits.first().map(|h| h.id), Some(point_id("quiet")));
    assert!(hits.iter().all(|h| h.score >= 0.5), "{hits:?}");
    assert!(!hits.iter().any(|h| h.id == point_id("loud") || h.id == point_id("pending")), "{hits:?}");
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));

    let water = index.search_dense(&concept_vector("玩水", DIMS), &filter, 10, 0.5).await.unwrap();
    assert_eq!(
        water.iter().map(|h| h.id).collect::<Vec<_>>(),
        [point_id("surf")],
        "玩水 finds 冲浪 without sharing a word"
    );

    let words = index.search_sparse(&Bm25::new().query("冥想"), &filter, 10).await.unwrap();
    assert_eq!(words.first().map(|h| h.id), Some(point_id("pending")));
    assert!(index.search_sparse(&Bm25::new().query(""), &filter, 10).await.unwrap().is_empty());

    // Both channels at once (the server: one request) answer what each answers alone.
    let (q, sparse) = (concept_vector("安静 发呆", DIMS), Bm25::new().query("安静"));
    let both = index.search_both(&q, 0.5, &sparse, &filter, 10).await.unwrap();
    let alone = (
        index.search_dense(&q, &filter, 10, 0.5).await.unwrap(),
        index.search_sparse(&sparse, &filter, 10).await.unwrap(),
    );
    assert_eq!(both, alone);
    assert!(!both.0.is_empty() && !both.1.is_empty(), "{both:?}");
    let no_words = index.search_both(&q, 0.5, &Bm25::new().query(""), &filter, 10).await.unwrap();
    assert_eq!(no_words, (alone.0, Vec::new()));
}

// Given points, when some are deleted (twice, and one never written), then they are gone and
// the rest stay.
async fn deletes_are_idempotent(index: Arc<dyn VectorIndex>) {
    let (a, b) = (activity("a", "读书局", "看书", 24), activity("b", "啤酒局", "撸串", 25));
    write(&*index, &[&a, &b]).await;
    index.delete(&[point_id("a"), point_id("never")]).await.unwrap();
    index.delete(&[point_id("a")]).await.unwrap();
    assert_eq!(ids(&index.get(&[point_id("a"), point_id("b")], false).await.unwrap()), ["b"]);
    assert_eq!(index.count(&HardFilter::bookable(now())).await.unwrap(), 1);
}

/// `a` as of `minutes` after [`now`].
fn versioned(a: &Activity, minutes: i64, embedded: bool) -> Point {
    let mut a = a.clone();
    a.updated_at = Some(now() + Duration::minutes(minutes));
    point(&a, embedded)
}

fn version(at_minutes: i64) -> i64 {
    shared::activities::index::version_of(now() + Duration::minutes(at_minutes))
}

// Given versioned writes delivered out of order, then an older write never replaces a newer
// one, a deletion's tombstone holds off older writes and is found by no filter, an equal
// version rewrites (a replay), a deletion wins a tie of versions whichever arrives first, and
// a later write brings the activity back.
async fn writes_never_go_back_in_time(index: Arc<dyn VectorIndex>) {
    let a = activity("a", "读书局", "安静看书", 24);
    let mut renamed = a.clone();
    renamed.title = "新名字".into();
    index.upsert(vec![versioned(&renamed, 2, true)]).await.unwrap();
    index.upsert(vec![versioned(&a, 1, true)]).await.unwrap();
    let title = |s: &[shared::activities::index::Stored]| activity_of(&s[0].payload).unwrap().title;
    assert_eq!(title(&index.get(&[point_id("a")], false).await.unwrap()), "新名字", "the older write changed nothing");
    index.upsert(vec![versioned(&renamed, 2, true)]).await.unwrap();

    index.upsert(vec![shared::activities::index::tombstone("a", version(3))]).await.unwrap();
    index.upsert(vec![versioned(&a, 2, true)]).await.unwrap();
    let got = index.get(&[point_id("a")], true).await.unwrap();
    assert!(got[0].is_tombstone() && got[0].dense.is_none(), "{:?}", got[0].payload);
    assert_eq!(got[0].version(), Some(version(3)));
    assert_eq!(index.count(&HardFilter::bookable(now())).await.unwrap(), 0, "no filter finds a tombstone");
    let q = concept_vector(&a.dense_text(), DIMS);
    assert!(index.search_dense(&q, &HardFilter::bookable(now()), 10, 0.0).await.unwrap().is_empty());

    index.upsert(vec![versioned(&a, 3, true)]).await.unwrap();
    assert!(
        index.get(&[point_id("a")], false).await.unwrap()[0].is_tombstone(),
        "an update of the deletion's version never revives it"
    );

    index.upsert(vec![versioned(&a, 4, true)]).await.unwrap();
    assert_eq!(title(&index.get(&[point_id("a")], false).await.unwrap()), "读书局", "a later write revives it");
    assert_eq!(index.count(&HardFilter::bookable(now())).await.unwrap(), 1);
    index.upsert(vec![shared::activities::index::tombstone("a", version(4))]).await.unwrap();
    assert!(
        index.get(&[point_id("a")], false).await.unwrap()[0].is_tombstone(),
        "a deletion of an update's version wins when it arrives second too"
    );
}

// Given a pending point, then the backfill's dense write sets its vector, `ready` and its
// facets, and nothing else; a point whose content changed since it was read, or was deleted, is left alone.
async fn dense_writes_touch_only_unchanged_points(index: Arc<dyn VectorIndex>) {
    let (a, b, c) =
        (activity("a", "读书局", "看书", 24), activity("b", "啤酒局", "撸串", 25), activity("c", "夜跑", "慢跑", 26));
    index.upsert(vec![versioned(&a, 1, false), versioned(&b, 1, false), versioned(&c, 1, false)]).await.unwrap();
    let read = index.get(&[point_id("a"), point_id("b"), point_id("c")], false).await.unwrap();
    let hash = |s: &shared::activities::index::Stored| s.payload["contentHash"].as_str().unwrap().to_owned();
    // Meanwhile: b is renamed (another text, another hash), c is deleted.
    let mut b2 = b.clone();
    b2.title = "精酿啤酒局".into();
    index.upsert(vec![versioned(&b2, 2, false), shared::activities::index::tombstone("c", version(2))]).await.unwrap();
    let updates = read
        .iter()
        .map(|s| shared::activities::index::DenseUpdate {
            id: s.id,
            content_hash: hash(s),
            dense: vec![0.5; DIMS],
            facets: Some(
                json!({"model": Wishes::shipped_id(), "has": vec![0.25; shared::activities::wish::FACETS.len()]}),
            ),
        })
        .collect();
    index.set_dense(updates).await.unwrap();
    let after = index.get(&[point_id("a"), point_id("b"), point_id("c")], true).await.unwrap();
    assert!(after[0].dense.is_some() && after[0].payload["embedding"] == "ready", "{:?}", after[0].payload);
    assert_eq!(
        shared::activities::facets::stored(&after[0].payload),
        Some(vec![0.25; shared::activities::wish::FACETS.len()]),
        "its facets (of the shipped model) are stored with the vector"
    );
    assert_eq!(activity_of(&after[0].payload).unwrap().title, "读书局", "the rest of a is as it was");
    assert_eq!(after[0].version(), Some(version(1)));
    assert!(after[1].dense.is_none() && after[1].payload["embedding"] == "pending", "b changed: left alone");
    assert!(after[1].payload.get("facets").is_none(), "nor its facets");
    assert_eq!(activity_of(&after[1].payload).unwrap().title, "精酿啤酒局");
    assert!(after[2].is_tombstone() && after[2].dense.is_none(), "c stays deleted");
}

// Given a collection built for 9-d vectors, when it is opened for another size, then that
// is an error naming both sizes; opening it again for 9-d is fine and keeps the points.
async fn a_dimension_mismatch_is_an_error_naming_both(index: Arc<dyn VectorIndex>, reopen: Reopen) {
    write(&*index, &[&activity("a", "读书局", "看书", 24)]).await;
    index.ensure().await.unwrap();
    let e = reopen(12).ensure().await.unwrap_err();
    let message = e.to_string();
    assert!(message.contains("9-d") && message.contains("12-d"), "{message}");
    let same = reopen(DIMS);
    same.ensure().await.unwrap();
    assert_eq!(same.count(&HardFilter::bookable(now())).await.unwrap(), 1);
}

type Reopen = Box<dyn Fn(usize) -> Arc<dyn VectorIndex>>;

/// A fresh collection on the backend, and a way to open it again with another dimension.
enum Backend {
    Edge,
    Qdrant,
}

struct Fresh {
    index: Arc<dyn VectorIndex>,
    reopen: Reopen,
    _dir: Option<tempfile::TempDir>,
}

// Given activities nearer and farther, sooner and later, then the index's formula gives each the
// lift `Lift::factor` defines (one definition: the same on Edge and on the server), with the
// points' payload and dense vectors; ids not stored are left out, and an empty ask reads nothing.
async fn the_lift_is_the_formula_on_both_stores(index: Arc<dyn VectorIndex>) {
    index.ensure().await.unwrap();
    let (lat, lng) = (31.2218, 121.4378);
    let placed = |id: &str, north_km: f64, hours: i64| {
        let mut a = activity(id, "夜跑", "沿江慢跑", hours);
        a.location.lat = lat + north_km / 111.2;
        a
    };
    let all = [placed("here", 0.0, 2), placed("near", 1.5, 24), placed("far", 9.0, 24 * 20), placed("mid", 3.0, 72)];
    write(&*index, &all.iter().collect::<Vec<_>>()).await;
    let lift = Lift {
        near: Some(NearLift { lat, lng, scale_km: 3.0, weight: 0.3 }),
        soon: Some(SoonLift { now: now(), scale_hours: 72.0, weight: 0.2 }),
    };
    let mut asked: Vec<_> = all.iter().map(|a| point_id(&a.id)).collect();
    asked.push(point_id("never-written"));
    let lifted = index.get_lifted(&asked, true, &lift).await.unwrap();
    assert_eq!(lifted.len(), all.len(), "the unwritten id is left out");
    for (stored, factor) in &lifted {
        let a = activity_of(&stored.payload).unwrap();
        let d = distance_km(lat, lng, a.location.lat, a.location.lng);
        let hours = (a.start_at - now()).num_seconds() as f64 / 3600.0;
        let want = lift.factor(d, hours);
        assert!((f64::from(*factor) - want).abs() < 1e-3, "{}: the index gave {factor}, the formula {want}", a.id);
        assert!(stored.dense.is_some(), "{}: its dense vector", a.id);
    }
    let factor = |id: &str| lifted.iter().find(|(s, _)| activity_of(&s.payload).unwrap().id == id).unwrap().1;
    assert!(factor("here") > factor("near") && factor("near") > factor("mid") && factor("mid") > factor("far"));
    // At its scale, each term is half its weight: 3 km and 72 h away gives 1 + 0.15 + 0.1.
    assert!((lift.factor(3.0, 72.0) - 1.25).abs() < 1e-6, "weights are f32");
    let near_only = Lift { near: lift.near, soon: None };
    let (s, f) = &index.get_lifted(&[point_id("mid")], false, &near_only).await.unwrap()[0];
    assert!((f64::from(*f) - 1.15).abs() < 2e-3 && s.dense.is_none(), "{f}");
    assert!(index.get_lifted(&[], true, &lift).await.unwrap().is_empty());
}

/// Opens `collection` through the composition root, as the functions do.
fn open(vars: Vec<(&'static str, String)>, dims: usize) -> Arc<dyn VectorIndex> {
    let mut vars = vars;
    vars.extend([("EMBEDDING_DIMENSIONS", dims.to_string()), ("EMBEDDING_PROVIDER", "openai".into())]);
    let config = integration::config(&vars);
    shared::compose::vector_index(&config).unwrap()
}

fn fresh(backend: Backend) -> Option<Fresh> {
    match backend {
        Backend::Edge => {
            let dir = tempfile::tempdir().unwrap();
            let vars = vec![("DATA_DIR", dir.path().display().to_string())];
            let reopen = move |dims| open(vars.clone(), dims);
            Some(Fresh { index: reopen(DIMS), reopen: Box::new(reopen), _dir: Some(dir) })
        }
        Backend::Qdrant => {
            let vars = integration::rag::server_env()?;
            let reopen = move |dims| open(vars.clone(), dims);
            Some(Fresh { index: reopen(DIMS), reopen: Box::new(reopen), _dir: None })
        }
    }
}

macro_rules! on_both_indexes {
    ($($name:ident),* $(,)?) => {
        mod edge {
            $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
               async fn $name() {
                   let f = super::fresh(super::Backend::Edge).unwrap();
                   super::$name(f.index.clone()).await
               } )*
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_dimension_mismatch_is_an_error_naming_both() {
                let f = super::fresh(super::Backend::Edge).unwrap();
                super::a_dimension_mismatch_is_an_error_naming_both(f.index.clone(), f.reopen).await
            }
        }
        mod qdrant {
            $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
               async fn $name() {
                   let Some(f) = super::fresh(super::Backend::Qdrant) else { return };
                   super::$name(f.index.clone()).await
               } )*
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_dimension_mismatch_is_an_error_naming_both() {
                let Some(f) = super::fresh(super::Backend::Qdrant) else { return };
                super::a_dimension_mismatch_is_an_error_naming_both(f.index.clone(), f.reopen).await
            }
        }
    };
}

on_both_indexes!(
    writes_are_idempotent_and_reads_keep_order,
    the_hard_filter_holds_every_condition,
    dense_and_lexical_channels_rank_and_threshold,
    deletes_are_idempotent,
    writes_never_go_back_in_time,
    dense_writes_touch_only_unchanged_points,
    the_lift_is_the_formula_on_both_stores,
);
