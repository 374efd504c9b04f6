//! `index-activity` and `rag-search` end to end (seed 004): real handlers, a real Qdrant Edge
//! directory opened by each function separately (and, for the scenarios under
//! `on_edge_and_server!`, a real Qdrant server too), a fake OpenAI-compatible embedding server
//! on 127.0.0.1 (concept vectors, latency and faults), and the event fixtures under
//! `infra/events/`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use integration::embedding::EmbeddingServer;
use integration::rag::{DIMS, RagHarness, activity, borrowed, now};
use integration::respond;
use serde_json::{Value, json};
use shared::costs::ledger::CallKind;

/// Eight activities for the seed's queries, all bookable, 1 km apart at most.
fn catalogue() -> Value {
    json!([
        activity("quiet", "白噪音读书局", "读书会", "雨声白噪音里安静看书，累了就放空发呆。", 30),
        activity("beer", "周五大排档啤酒局", "美食", "下班来撸串喝啤酒，人多热闹，欢迎新朋友！", 32),
        activity("surf", "室内冲浪体验课", "运动", "恒温浪池，教练一对三，零基础也能站上板。", 50),
        activity("boardgame", "新手桌游小局", "桌游", "卡坦岛这类轻策略桌游，四五个人慢慢玩。", 54),
        activity("coffee", "社恐友好手冲课", "咖啡", "一人一套器具专注练手冲，不用主动社交。", 74),
        activity("run", "城市夜跑5公里", "运动", "沿江慢跑，跑完一起拉伸，出汗又开心。", 80),
        activity("hotpot", "深夜火锅局", "美食", "深夜一起涮火锅，麻辣锅底配冰啤。", 90),
        activity("meditate", "正念冥想入门", "冥想", "老师带领呼吸练习，释放压力，安静下来。", 100),
    ])
}

async fn indexed(env: &[(&str, &str)]) -> RagHarness {
    let h = RagHarness::new(env).await;
    let (status, r) = h.index("POST", "/activities", &catalogue().to_string()).await;
    assert_eq!(status, 200, "{r}");
    h
}

async fn invoke_index(h: &RagHarness, fixture: &str) -> (u16, Value) {
    let path = format!("{}/../infra/events/{fixture}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let req = lambda_http::request::from_str(&text).unwrap_or_else(|e| panic!("{fixture}: {e}"));
    respond(shared::http::invoke(index_activity::routes(Arc::clone(&h.indexer)), req).await)
}

async fn invoke_search(h: &RagHarness, fixture: &str) -> (u16, Value) {
    let path = format!("{}/../infra/events/{fixture}", env!("CARGO_MANIFEST_DIR"));
    let req = lambda_http::request::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    respond(shared::http::invoke(rag_search::routes(Arc::clone(&h.rag)), req).await)
}

// Given the API Gateway and EventBridge fixtures, then each drives its route: a batch is
// created, updated, found by the seed's search body, given feedback by the fixture's user, and
// deleted.
async fn the_api_gateway_and_eventbridge_fixtures_drive_the_handlers(index: Vec<(&'static str, String)>) {
    let h = RagHarness::new(&borrowed(&index)).await;
    let (status, r) = invoke_index(&h, "activities-create.json").await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["indexed"].as_array().unwrap().len(), 2);
    let (status, r) = invoke_index(&h, "activity-update.json").await;
    assert_eq!((status, r["indexed"][0]["embedding"].as_str()), (200, Some("kept")), "{r}");
    let (status, r) = invoke_index(&h, "activity-created.json").await;
    assert_eq!((status, r["indexed"][0]["id"].as_str()), (200, Some("act-fixture-3")), "{r}");
    let (status, r) = invoke_index(&h, "activity-updated.json").await;
    assert_eq!((status, r["indexed"][0]["embedding"].as_str()), (200, Some("embedded")), "{r}");
    let (status, r) = invoke_search(&h, "rag-search.json").await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["candidates"], 3, "{r}");
    assert_eq!(r["strategy"], "filter_only", "three candidates are returned directly: {r}");
    let (status, r) = invoke_search(&h, "user-feedback.json").await;
    assert_eq!(
        (status, r["userId"].as_str(), r["satisfiedActivities"].as_u64()),
        (200, Some("u-fixture"), Some(1)),
        "{r}"
    );
    let (status, r) = invoke_index(&h, "activity-delete.json").await;
    assert_eq!((status, r["deleted"].as_bool()), (200, Some(true)), "{r}");
    let (status, r) = invoke_index(&h, "activity-deleted.json").await;
    assert_eq!((status, r["deleted"].as_bool()), (200, Some(true)), "{r}");
    let (_, r) = invoke_search(&h, "rag-search.json").await;
    assert_eq!(r["candidates"], 1, "{r}");
    let (status, r) = invoke_index(&h, "schedule.json").await;
    assert_eq!((status, r["error"]["code"].as_str()), (400, Some("unsupported_event")), "{r}");
}

// Given an indexed activity, when only its participants change, then its vector is kept (no
// embedder call); when its time, place or title change (lines of the embedded text), it is
// embedded again. Every embedder call is one cost record of agent rag.
async fn only_content_changes_are_embedded_again(index: Vec<(&'static str, String)>) {
    let h = indexed(&borrowed(&index)).await;
    let server = h.embedding.as_ref().unwrap();
    assert_eq!((server.calls(), server.inputs()), (1, 8), "one batch call for eight activities");
    let mut quiet = catalogue()[0].clone();
    quiet["currentParticipants"] = json!(5);
    let (status, r) = h.index("PUT", "/activities/quiet", &quiet.to_string()).await;
    assert_eq!((status, r["indexed"][0]["embedding"].as_str()), (200, Some("kept")), "{r}");
    assert_eq!(server.calls(), 1);
    let changes = [
        ("startAt", json!((now() + chrono::Duration::hours(40)).to_rfc3339())),
        ("locationName", json!("徐汇区武康路")),
        ("title", json!("白噪音读书局·周末场")),
    ];
    for (n, (field, value)) in changes.into_iter().enumerate() {
        quiet[field] = value;
        let (status, r) = h.index("PUT", "/activities/quiet", &quiet.to_string()).await;
        assert_eq!((status, r["indexed"][0]["embedding"].as_str()), (200, Some("embedded")), "{field}: {r}");
        assert_eq!((server.calls(), server.inputs()), (2 + n, 9 + n), "{field}");
    }
    let costs = h.costs().await;
    assert_eq!(costs.len(), 4);
    assert!(costs.iter().all(|c| c.kind == CallKind::Embedding && c.agent == "indexing"), "indexing pays: {costs:?}");
    // The stored activity is the updated one.
    let (ids, r) = h.search_ids(json!({"semanticQuery": "周末场"})).await;
    assert_eq!(ids.first().map(String::as_str), Some("quiet"), "{r}");
    assert_eq!(r["results"][0]["activity"]["currentParticipants"], 5);
}

// Given the embedder failing, when activities are written, then they are stored pending with
// a 202 and found lexically; a later write with the embedder back fills the vector in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedder_fault_never_blocks_a_write() {
    let h = RagHarness::new(&[]).await;
    let server = h.embedding.as_ref().unwrap();
    server.fail_with(500).await;
    let (status, r) = h.index("POST", "/activities", &catalogue().to_string()).await;
    assert_eq!(status, 202, "{r}");
    assert!(r["indexed"].as_array().unwrap().iter().all(|i| i["embedding"] == "pending"), "{r}");
    assert!(r["pendingReason"].as_str().unwrap().contains("embedder failed"), "{r}");
    let (ids, r) = h.search_ids(json!({"semanticQuery": "冲浪"})).await;
    assert_eq!((ids.first().map(String::as_str), r["strategy"].as_str()), (Some("surf"), Some("lexical")), "{r}");
    assert_eq!(r["degraded"], true);

    let healthy = EmbeddingServer::start(DIMS, Duration::ZERO).await;
    let h2 = RagHarness::with(Some(healthy), &[("DATA_DIR", &h.dir.path().display().to_string())]).await;
    let (status, r) = h2.index("PUT", "/activities/surf", &catalogue()[2].to_string()).await;
    assert_eq!((status, r["indexed"][0]["embedding"].as_str()), (200, Some("embedded")), "{r}");
}

// Given bad input of every kind, then each is a 4xx naming what was wrong, and nothing is
// written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_and_changes_nothing() {
    let h = RagHarness::new(&[]).await;
    let mut bad = catalogue();
    bad[3]["location"]["lat"] = json!(120.0);
    for (method, path, body, status, needle) in [
        ("POST", "/activities", bad.to_string(), 400, "activities[3].location.lat"),
        ("POST", "/activities", "{not json".into(), 400, "not valid JSON"),
        ("POST", "/activities", "[]".into(), 400, "1 to 100"),
        ("POST", "/activities", json!([catalogue()[0], catalogue()[0]]).to_string(), 400, "repeats"),
        ("PUT", "/activities/other-id", catalogue()[0].to_string(), 400, "the path says"),
        ("PUT", "/activities/quiet", json!({"title": "x"}).to_string(), 400, "type: is required"),
        ("DELETE", "/activities/quiet", String::new(), 404, "not indexed"),
        ("GET", "/activities", String::new(), 405, "GET"),
        ("POST", "/nowhere", "{}".into(), 404, "no route"),
    ] {
        let (got, r) = h.index(method, path, &body).await;
        assert_eq!(got, status, "{method} {path}: {r}");
        assert!(r["error"]["message"].as_str().unwrap().contains(needle), "{method} {path}: {r}");
    }
    for (body, needle) in [
        (json!({"limit": 100}), "limit"),
        (json!({"filters": {"location": {"lat": 31.2, "lng": 121.4}}}), "radiusInKm"),
        (json!({"semanticQuery": "安静", "user": "u1"}), "user"),
    ] {
        let (status, r) = h.search(body.clone()).await;
        assert_eq!(status, 400, "{body}: {r}");
        assert!(r["error"]["message"].as_str().unwrap().contains(needle), "{body}: {r}");
    }
    let (_, r) = h.search(json!({})).await;
    assert_eq!(r["candidates"], 0, "nothing was written: {r}");
    assert_eq!(h.embedding.as_ref().unwrap().calls(), 0);
}

// Given EMBEDDING_PROVIDER=openai without EMBEDDING_API_KEY, then writes are pending (202) and a
// semantic search is ranked lexically, saying so, never an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_embedder_without_a_key_means_lexical_retrieval_saying_so() {
    let h = RagHarness::with(None, &[]).await;
    let (status, r) = h.index("POST", "/activities", &catalogue().to_string()).await;
    assert_eq!(status, 202, "{r}");
    assert!(r["pendingReason"].as_str().unwrap().contains("EMBEDDING_API_KEY"), "{r}");
    let (ids, r) = h.search_ids(json!({"semanticQuery": "桌游小局"})).await;
    assert_eq!(ids.first().map(String::as_str), Some("boardgame"), "{r}");
    assert_eq!((r["strategy"].as_str(), r["degraded"].as_bool()), (Some("lexical"), Some(true)));
    assert!(r["degradedReason"].as_str().unwrap().contains("EMBEDDING_API_KEY"));
    assert!(r["results"][0].get("similarity").is_none(), "no similarity without vectors: {r}");
}

// Given the catalogue, then each path of seed 004's two-stage retrieval is taken when it should:
// three or fewer candidates come back directly without embedding the query; no query orders
// by distance (or start time); a query fuses dense and lexical hits, and "玩水" finds the
// surfing class without sharing a word with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_retrieval_path_is_taken_when_it_should() {
    let h = indexed(&[]).await;
    let server = h.embedding.as_ref().unwrap();
    let calls = server.calls();

    let (ids, r) = h.search_ids(json!({"semanticQuery": "热闹", "filters": {"type": "美食"}})).await;
    assert_eq!(r["strategy"], "filter_only", "{r}");
    assert_eq!(ids, ["beer", "hotpot"], "soonest first");
    assert_eq!(server.calls(), calls, "the query was not embedded");

    let mut near = catalogue()[5].clone();
    near["id"] = json!("run-near");
    near["location"] = json!({"lat": 31.2304, "lng": 121.4737});
    h.index("POST", "/activities", &near.to_string()).await;
    let (ids, r) = h
        .search_ids(json!({"filters": {"location": {"lat": 31.2304, "lng": 121.4737, "radiusInKm": 10}}, "limit": 3}))
        .await;
    assert_eq!(r["strategy"], "distance", "{r}");
    assert_eq!(ids[0], "run-near");
    let distances: Vec<f64> =
        r["results"].as_array().unwrap().iter().map(|x| x["distanceKm"].as_f64().unwrap()).collect();
    assert!(distances[0] < 0.1 && distances.windows(2).all(|w| w[0] <= w[1]), "{distances:?}");

    let (ids, r) = h.search_ids(json!({"limit": 2})).await;
    assert_eq!((r["strategy"].as_str(), ids), (Some("start_time"), vec!["quiet".to_owned(), "beer".to_owned()]));

    let (ids, r) = h.search_ids(json!({"semanticQuery": "玩水"})).await;
    assert_eq!(r["strategy"], "hybrid", "{r}");
    assert_eq!(ids.first().map(String::as_str), Some("surf"), "{r}");
    assert!(r["results"][0]["similarity"].as_f64().unwrap() > 0.8, "{r}");
    assert!(ids.len() < 9, "unrelated activities under the similarity floor are left out: {ids:?}");

    let (ids, _) = h.search_ids(json!({"semanticQuery": "适合社恐的活动"})).await;
    assert_eq!(ids.first().map(String::as_str), Some("coffee"));
    let (ids, _) = h.search_ids(json!({"semanticQuery": "压力大想发呆"})).await;
    assert!(ids[..2].contains(&"quiet".to_owned()) && ids[..2].contains(&"meditate".to_owned()), "{ids:?}");
}

// Given RAG_FUSION=dense, then results are the dense hits by similarity, all at or above
// RAG_MIN_SIMILARITY.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dense_fusion_ranks_by_similarity_above_the_floor() {
    let h = indexed(&[("RAG_FUSION", "dense"), ("RAG_MIN_SIMILARITY", "0.6")]).await;
    let (ids, r) = h.search_ids(json!({"semanticQuery": "安静发呆"})).await;
    assert_eq!(r["strategy"], "dense", "{r}");
    assert!(!ids.is_empty());
    let sims: Vec<f64> = r["results"].as_array().unwrap().iter().map(|x| x["similarity"].as_f64().unwrap()).collect();
    assert!(sims.iter().all(|&s| s >= 0.6 - 1e-6) && sims.windows(2).all(|w| w[0] >= w[1] - 1e-6), "{sims:?}");
    assert!(ids[..2].contains(&"quiet".to_owned()) && ids[..2].contains(&"meditate".to_owned()), "{ids:?}");
}

// Issue 42 (seed 004 R3.3): a wish returns nothing under the similarity floor, lexical hits
// included. The wish names no meaning an activity has; "慢慢" and "一起" are words of three.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wish_returns_nothing_under_the_similarity_floor_lexical_hits_included() {
    let wish = json!({"semanticQuery": "想找个地方，大家一起慢慢来"});
    let fused = indexed(&[("RAG_FUSION", "rrf")]).await;
    let (ids, r) = fused.search_ids(wish.clone()).await;
    assert!(!ids.is_empty(), "BM25 finds the shared words: {r}");
    assert!(r["results"].as_array().unwrap().iter().all(|x| x["similarity"].as_f64().unwrap() < 0.5), "{r}");
    let h = indexed(&[]).await;
    let (ids, r) = h.search_ids(wish).await;
    assert_eq!(r["strategy"], "hybrid", "{r}");
    assert!(ids.is_empty(), "a wish under the floor returns nothing: {r}");
    // A wish with matches keeps only those at or above the floor.
    let (ids, r) = h.search_ids(json!({"semanticQuery": "压力大想一个人安静一下"})).await;
    assert!(!ids.is_empty(), "{r}");
    assert!(r["results"].as_array().unwrap().iter().all(|x| x["similarity"].as_f64().unwrap() >= 0.5 - 1e-6), "{r}");
}

// Given an embedder slower than the time box, then the search degrades to lexical ranking in
// about the time box, well inside seed 004's 3 s, instead of waiting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_embedder_is_time_boxed() {
    let h = indexed(&[]).await;
    let slow = EmbeddingServer::start(DIMS, Duration::from_secs(5)).await;
    let dir = h.dir.path().display().to_string();
    let h2 = RagHarness::with(Some(slow), &[("DATA_DIR", &dir), ("RAG_EMBED_TIMEOUT_MS", "300")]).await;
    let started = Instant::now();
    let (ids, r) = h2.search_ids(json!({"semanticQuery": "冲浪"})).await;
    let took = started.elapsed();
    assert_eq!((r["strategy"].as_str(), r["degraded"].as_bool()), (Some("lexical"), Some(true)), "{r}");
    assert!(r["degradedReason"].as_str().unwrap().contains("300 ms"), "{r}");
    assert_eq!(ids.first().map(String::as_str), Some("surf"));
    assert!(took < Duration::from_secs(2), "took {took:?} with a 300 ms time box");
}

/// An EventBridge event of `detail_type` that happened at `time`, as Lambda delivers it.
fn event(detail_type: &str, time: &str, detail: Value) -> lambda_http::Request {
    let event = json!({
        "version": "0", "id": uuid::Uuid::new_v4().to_string(), "detail-type": detail_type,
        "source": "juchang.activities", "account": "123456789012", "time": time, "region": "us-east-1",
        "resources": [], "detail": detail
    });
    lambda_http::request::from_str(&event.to_string()).expect("an event passes through")
}

// Given activity events retried and delivered out of order, then none undoes a newer one: a
// create, a delete, then a late update from before the delete leaves it deleted; a delete that
// arrives before its create keeps the create out; a replayed create is harmless; an update
// newer than the delete brings the activity back.
async fn events_are_idempotent_and_order_safe(index: Vec<(&'static str, String)>) {
    let h = RagHarness::new(&borrowed(&index)).await;
    let send = |e| async { respond(shared::http::invoke(index_activity::routes(Arc::clone(&h.indexer)), e).await) };
    let surf = activity("surf", "室内冲浪体验课", "运动", "恒温浪池，零基础也能站上板。", 50);
    let created = event("ActivityCreated", "2026-11-22T01:00:00Z", surf.clone());
    assert_eq!(send(created).await.0, 200);
    let replay = event("ActivityCreated", "2026-11-22T01:00:00Z", surf.clone());
    assert_eq!(send(replay).await.0, 200, "a replay is applied again, harmlessly");
    let (status, r) = send(event("ActivityDeleted", "2026-11-22T03:00:00Z", json!({"id": "surf"}))).await;
    assert_eq!((status, r["deleted"].as_bool()), (200, Some(true)), "{r}");
    let mut older = surf.clone();
    older["title"] = json!("室内冲浪体验课（改期）");
    let (status, r) = send(event("ActivityUpdated", "2026-11-22T02:00:00Z", older.clone())).await;
    assert_eq!((status, r["indexed"][0]["embedding"].as_str()), (200, Some("stale")), "{r}");
    assert!(found(&h).await.is_empty(), "the late update did not bring it back");
    // The same, with the order in updatedAt rather than the event time.
    older["updatedAt"] = json!("2026-11-22T02:30:00Z");
    let (_, r) = send(event("ActivityUpdated", "2026-11-22T05:00:00Z", older.clone())).await;
    assert_eq!(r["indexed"][0]["embedding"], "stale", "{r}");
    assert!(found(&h).await.is_empty());

    let run = activity("run", "城市夜跑", "运动", "沿江慢跑。", 60);
    let deleted_first = json!({"id": "run", "updatedAt": "2026-11-22T03:00:00Z"});
    let (status, r) = send(event("ActivityDeleted", "2026-11-22T03:00:01Z", deleted_first)).await;
    assert_eq!((status, r["deleted"].as_bool()), (200, Some(false)), "nothing was there yet: {r}");
    let (_, r) = send(event("ActivityCreated", "2026-11-22T01:00:00Z", run.clone())).await;
    assert_eq!(r["indexed"][0]["embedding"], "stale", "the create from before the delete stays out: {r}");
    assert!(found(&h).await.is_empty());

    let (_, r) = send(event("ActivityUpdated", "2026-11-22T04:00:00Z", surf.clone())).await;
    assert_eq!(r["indexed"][0]["embedding"], "embedded", "{r}");
    assert_eq!(found(&h).await, ["surf"], "an update after the delete is a new life");
    let (status, r) = send(event("ActivityDeleted", "2026-11-22T03:00:00Z", json!({"id": "bad id!"}))).await;
    assert_eq!((status, r["error"]["code"].as_str()), (400, Some("invalid_activity")), "{r}");

    // What the runtime sees: a refused event is an error naming why (so it lands in the
    // on-failure queue with its reason), and it changed nothing.
    let refused = event("ActivityUpdated", "2026-11-22T06:00:00Z", json!({"id": "surf", "title": 7}));
    let e =
        shared::http::answer(index_activity::routes(Arc::clone(&h.indexer)), refused).await.unwrap_err().to_string();
    assert!(e.contains("refused (HTTP 400)") && e.contains("invalid_activity"), "{e}");
    assert_eq!(found(&h).await, ["surf"], "the refused event changed nothing");
    let applied = event("ActivityUpdated", "2026-11-22T06:00:00Z", surf.clone());
    assert!(
        shared::http::answer(index_activity::routes(Arc::clone(&h.indexer)), applied).await.is_ok(),
        "an applied event is no error"
    );
}

/// Great-circle distance in km, as a reader would compute it (mean Earth radius).
fn km(a: (f64, f64), b: (f64, f64)) -> f64 {
    let (la1, la2) = (a.0.to_radians(), b.0.to_radians());
    let (dla, dlo) = (la2 - la1, (b.1 - a.1).to_radians());
    let h = (dla / 2.0).sin().powi(2) + la1.cos() * la2.cos() * (dlo / 2.0).sin().powi(2);
    2.0 * 6371.0088 * h.sqrt().asin()
}

// Given 400 activities over Shanghai, half of them packed within 300 m of the centre (dense
// and sparse areas), some past or full, then a search with only a location answers the
// bookable ones nearest first, exactly the brute-force nearest, wherever it is asked (in the
// packed centre, at its edge, out in the sparse part) and for any limit; `candidates` counts
// every bookable one in the circle.
async fn nearest_first_is_exact_whatever_the_density(index: Vec<(&'static str, String)>) {
    let h = RagHarness::with(None, &borrowed(&index)).await;
    let centre = (31.2304, 121.4737);
    let mut seed = 0x2545_f491_u64;
    let mut unit = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % 1_000_000) as f64 / 1_000_000.0
    };
    let mut all = Vec::new();
    for i in 0..400 {
        let spread = if i % 2 == 0 { 0.003 } else { 0.4 };
        let place = (centre.0 + spread * (unit() - 0.5), centre.1 + spread * (unit() - 0.5));
        let hours = if i % 13 == 0 { -5 } else { 2 + i as i64 % 200 };
        let mut a = activity(&format!("a{i:03}"), "活动", "运动", "一起来", hours);
        a["location"] = json!({"lat": place.0, "lng": place.1});
        if i % 17 == 0 {
            a["currentParticipants"] = json!(8);
        }
        let bookable = hours > 0 && i % 17 != 0;
        all.push((format!("a{i:03}"), place, bookable, a));
    }
    for batch in all.chunks(100) {
        let body = Value::Array(batch.iter().map(|(.., a)| a.clone()).collect());
        let (status, r) = h.index("POST", "/activities", &body.to_string()).await;
        assert_eq!((status, r["indexed"].as_array().map(Vec::len)), (202, Some(100)), "accepted, embeddings pending");
    }
    for (at, radius, limit) in
        [(centre, 10.0, 10), ((centre.0 + 0.002, centre.1), 5.0, 3), ((31.33, 121.6), 30.0, 20), (centre, 1.0, 50)]
    {
        let body = json!({"filters": {"location": {"lat": at.0, "lng": at.1, "radiusInKm": radius}}, "limit": limit});
        let (ids, r) = h.search_ids(body).await;
        let mut truth: Vec<(f64, &str)> = all
            .iter()
            .filter(|(_, p, bookable, _)| *bookable && km(at, *p) <= radius)
            .map(|(id, p, ..)| (km(at, *p), id.as_str()))
            .collect();
        truth.sort_by(|a, b| a.0.total_cmp(&b.0));
        assert_eq!(r["candidates"].as_u64(), Some(truth.len() as u64), "{at:?} {radius} km");
        let want: Vec<f64> = truth.iter().take(limit).map(|t| t.0).collect();
        let got: Vec<f64> =
            r["results"].as_array().unwrap().iter().map(|x| x["distanceKm"].as_f64().unwrap()).collect();
        assert_eq!(ids.len(), want.len(), "{at:?} {radius} km limit {limit}");
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() < 0.01, "{at:?} {radius} km: distances {got:?}, brute force {want:?}");
        }
    }
}

integration::on_edge_and_server!(
    nearest_first_is_exact_whatever_the_density,
    the_api_gateway_and_eventbridge_fixtures_drive_the_handlers,
    only_content_changes_are_embedded_again,
    events_are_idempotent_and_order_safe,
);

/// Every bookable activity's id.
async fn found(h: &RagHarness) -> Vec<String> {
    h.search_ids(json!({"limit": 50})).await.0
}
