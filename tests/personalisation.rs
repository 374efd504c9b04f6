//! Seed 004 Requirements 5, 6, 8: match reasons (template, model, fallback), the
//! `explore_nearby` tool, and MaxSim personalisation, through the real `rag-search` handler.

use std::sync::Arc;
use std::time::Duration;

use integration::chat_completion;
use integration::rag::{DIMS, RagHarness, activity};
use serde_json::{Value, json};
use shared::costs::ledger::CallKind;
use wiremock::matchers::{method, path};
use wiremock::{Mock, ResponseTemplate};

fn catalogue() -> Value {
    json!([
        activity("quiet", "白噪音读书局", "读书会", "雨声白噪音里安静看书，累了就放空发呆。", 30),
        activity("beer", "周五大排档啤酒局", "美食", "下班来撸串喝啤酒，人多热闹，欢迎新朋友！", 32),
        activity("surf", "室内冲浪体验课", "运动", "恒温浪池，教练一对三，零基础也能站上板。", 50),
        activity("boardgame", "新手桌游小局", "桌游", "卡坦岛这类轻策略桌游，四五个人慢慢玩。", 54),
        activity("meditate", "正念冥想入门", "冥想", "白噪音里静下心来冥想，放空发呆，结束后安静看书。", 100),
        activity("karaoke", "K歌欢唱夜", "娱乐", "大包厢欢唱到深夜，派对气氛嗨翻。", 60),
        activity("mixed", "安静与热闹之间", "沙龙", "先安静坐坐，再热闹欢唱。", 70),
        activity("run", "城市夜跑", "运动", "沿江慢跑，出汗又开心。", 80),
    ])
}

async fn harness(env: &[(&str, &str)]) -> RagHarness {
    let h = RagHarness::new(env).await;
    let (status, r) = h.index("POST", "/activities", &catalogue().to_string()).await;
    assert_eq!(status, 200, "{r}");
    h
}

async fn post(h: &RagHarness, path: &str, body: Value) -> (u16, Value) {
    h.as_user("POST", path, body).await
}

async fn put(h: &RagHarness, path: &str, body: Value) -> (u16, Value) {
    h.as_user("PUT", path, body).await
}

// Given the default template mode, then every result of a semantic search says why, from the
// matched vibe, the time and the distance; `off` omits it; a search without a query has none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn template_reasons_and_off() {
    let h = harness(&[]).await;
    let (_, r) = h
        .search_ids(json!({"semanticQuery": "热闹", "filters": {"location": {"lat": 31.2304, "lng": 121.4737, "radiusInKm": 10}}}))
        .await;
    let first = &r["results"][0];
    let reason = first["matchReason"].as_str().unwrap();
    assert!(
        reason.contains("热闹")
            && reason.contains("公里")
            && reason.contains(first["activity"]["title"].as_str().unwrap()),
        "{reason}"
    );
    assert!(r["results"].as_array().unwrap().iter().all(|x| x["matchReason"].is_string()), "{r}");
    let (_, r) = h.search_ids(json!({"limit": 5})).await;
    assert!(r["results"][0].get("matchReason").is_none(), "no query, no reason: {r}");
    let off = harness(&[("RAG_MATCH_REASON", "off")]).await;
    let (_, r) = off.search_ids(json!({"semanticQuery": "热闹"})).await;
    assert!(r["results"][0].get("matchReason").is_none(), "{r}");
}

async fn llm_server(reply: ResponseTemplate) -> integration::FakeServer {
    let server = integration::FakeServer::start().await;
    Mock::given(method("POST")).and(path("/chat/completions")).respond_with(reply).mount(&server).await;
    server
}

// Given RAG_MATCH_REASON=llm, then one model call writes the reasons (a cost record of agent
// rag); a result the model left out, a model error and a model slower than the time box each
// get the template reason, and the search still answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_reasons_fall_back_to_the_template() {
    let answer = json!({"reasons": [{"id": "quiet", "reason": "你想发呆，这里的白噪音正适合放空。"}]}).to_string();
    let usage = json!({"prompt_tokens": 300, "completion_tokens": 40, "total_tokens": 340});
    let good = llm_server(ResponseTemplate::new(200).set_body_json(chat_completion(&answer, usage))).await;
    let uri = good.uri();
    let env = [
        ("RAG_MATCH_REASON", "llm"),
        ("LLM_API_KEY", "llm-test-key"),
        ("LLM_BASE_URL", uri.as_str()),
        ("RETRY_BASE_MS", "5"),
    ];
    let h = harness(&env).await;
    let (ids, r) = h.search_ids(json!({"semanticQuery": "压力大想发呆", "limit": 3})).await;
    let reasons: Vec<&str> =
        r["results"].as_array().unwrap().iter().map(|x| x["matchReason"].as_str().unwrap()).collect();
    let quiet = ids.iter().position(|i| i == "quiet").expect("quiet is found");
    assert_eq!(reasons[quiet], "你想发呆，这里的白噪音正适合放空。");
    assert!(reasons.iter().enumerate().all(|(i, r)| i == quiet || r.starts_with("推荐「")), "{reasons:?}");
    assert_eq!(good.received_requests().await.unwrap().len(), 1, "one call for all results");
    assert!(h.costs().await.iter().any(|c| c.kind == CallKind::Llm && c.agent == "rag"));

    for reply in [ResponseTemplate::new(500), ResponseTemplate::new(200).set_delay(Duration::from_secs(5))] {
        let bad = llm_server(reply).await;
        let uri = bad.uri();
        let env = [
            ("RAG_MATCH_REASON", "llm"),
            ("LLM_API_KEY", "llm-test-key"),
            ("LLM_BASE_URL", uri.as_str()),
            ("RAG_REASON_TIMEOUT_MS", "400"),
            ("RETRY_BASE_MS", "5"),
        ];
        let h = harness(&env).await;
        let started = std::time::Instant::now();
        let (_, r) = h.search_ids(json!({"semanticQuery": "压力大想发呆", "limit": 3})).await;
        assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
        assert!(
            r["results"].as_array().unwrap().iter().all(|x| x["matchReason"].as_str().unwrap().starts_with("推荐「")),
            "{r}"
        );
    }
}

// Given the tool, then GET /tools (search function) lists it with its schema, and POST
// /tools/explore_nearby runs the same retrieval, answering the model-facing text with reasons;
// bad arguments come back as text the model can read; a down embedder degrades the results.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explore_nearby_runs_the_same_retrieval() {
    let search = integration::Harness::without_key(integration::StoreKind::Local).await;
    let (status, r) = search.send("GET", "/tools", "").await;
    assert_eq!(status, 200);
    let tool =
        r["tools"].as_array().unwrap().iter().find(|t| t["function"]["name"] == "explore_nearby").expect("listed");
    assert_eq!(tool["function"]["parameters"]["required"], json!(["lat", "lng", "radiusInKm"]));
    for p in ["semanticQuery", "type", "limit"] {
        assert!(tool["function"]["parameters"]["properties"][p].is_object(), "{p}");
    }

    let h = harness(&[]).await;
    let args = json!({"semanticQuery": "玩水", "lat": 31.2304, "lng": 121.4737, "radiusInKm": 10});
    let (status, text) = h.tool("explore_nearby", args.clone()).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(text["strategy"], "hybrid");
    assert_eq!(text["activities"][0]["id"], "surf");
    assert!(
        text["activities"][0]["matchReason"].is_string() && text["activities"][0]["distanceKm"].is_number(),
        "{text}"
    );
    let (_, same) = h.search(json!({"semanticQuery": "玩水", "filters": {"location": {"lat": 31.2304, "lng": 121.4737, "radiusInKm": 10}}, "limit": 10})).await;
    let ids = |v: &Value, key: &str, id: &str| {
        v[key].as_array().unwrap().iter().map(|x| x.pointer(id).unwrap().clone()).collect::<Vec<_>>()
    };
    assert_eq!(ids(&text, "activities", "/id"), ids(&same, "results", "/activity/id"), "one code path");
    let (status, camel) = h.tool("exploreNearby", args.clone()).await;
    assert_eq!(status, 200, "seed 004's clients call it exploreNearby: {camel}");
    assert_eq!(ids(&camel, "activities", "/id"), ids(&text, "activities", "/id"), "the same tool");

    let (status, text) = h.tool("explore_nearby", json!({"lat": 95, "lng": 121.4, "radiusInKm": 5})).await;
    assert_eq!((status, text["error"].as_str()), (200, Some("invalid_arguments")), "{text}");
    assert!(text["message"].as_str().unwrap().contains("lat"), "{text}");

    h.embedding.as_ref().unwrap().fail_with(503).await;
    let (status, text) = h.tool("explore_nearby", args).await;
    assert_eq!(
        (status, text["strategy"].as_str(), text["degraded"].as_bool()),
        (200, Some("lexical"), Some(true)),
        "{text}"
    );
}

// Given a user who enjoyed two loud activities and a quiet one, then MaxSim boosts both loud
// and quiet candidates above a "middle" activity an average vector would favour; the boost is
// at most 20 % and shown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_sim_picks_the_max_not_the_mean() {
    let h = harness(&[]).await;
    for (activity, satisfied) in [("beer", true), ("run", false), ("quiet", true), ("karaoke", true)] {
        let (status, r) =
            post(&h, "/users/u-1/feedback", json!({"activityId": activity, "satisfied": satisfied})).await;
        assert_eq!(status, 200, "{r}");
    }
    let (_, r) = post(&h, "/users/u-1/feedback", json!({"activityId": "beer", "satisfied": true})).await;
    assert_eq!((r["satisfiedActivities"].as_u64(), r["interestVectors"].as_u64()), (Some(3), Some(3)), "{r}");

    // A query every activity matches lexically, so each is a candidate.
    let body = json!({"semanticQuery": "安静 热闹 看书 欢唱 啤酒 冥想", "userId": "u-1"});
    let (_, r) = h.search_ids(body).await;
    assert_eq!(r["personalization"], "history", "{r}");
    let result =
        |id: &str| r["results"].as_array().unwrap().iter().find(|x| x["activity"]["id"] == id).cloned().unwrap();
    let sim = |id: &str| result(id)["maxSim"].as_f64().unwrap();
    // Both kinds the user liked are lifted more than the lukewarm middle...
    assert!(sim("meditate") > sim("mixed"), "quiet {} vs middle {}", sim("meditate"), sim("mixed"));
    assert!(sim("karaoke") > sim("mixed"), "loud {} vs middle {}", sim("karaoke"), sim("mixed"));
    // ...where the mean of the same three vectors would have preferred the middle.
    let vector = |i: usize| {
        let a = shared::activities::activity::Activity::from_json(catalogue()[i].clone()).unwrap();
        integration::embedding::concept_vector(&a.dense_text(), DIMS)
    };
    let normal = |v: Vec<f32>| {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / n).collect::<Vec<f32>>()
    };
    let kept: Vec<Vec<f32>> = [1, 0, 5].into_iter().map(|i| normal(vector(i))).collect();
    let mean: Vec<f32> = (0..DIMS).map(|d| kept.iter().map(|v| v[d]).sum::<f32>() / 3.0).collect();
    let cos = shared::activities::ranking::cosine;
    let (middle, quiet, loud) = (cos(&mean, &vector(6)), cos(&mean, &vector(4)), cos(&mean, &vector(5)));
    assert!(middle > quiet && middle > loud, "the mean prefers the middle: {middle} vs {quiet}, {loud}");
    for x in r["results"].as_array().unwrap() {
        let boost = x["boost"].as_f64().unwrap();
        let expected = 1.0 + 0.2 * x["maxSim"].as_f64().unwrap().clamp(0.0, 1.0);
        assert!((1.0..=1.2 + 1e-6).contains(&boost) && (boost - expected).abs() < 1e-5, "{x}");
    }

    // The app's backend reports who attended (SigV4, any user); a user's token is not the backend.
    let report = |user: &str, activity: &str| {
        let body = json!({"activityId": activity, "satisfied": true}).to_string();
        integration::request("POST", &format!("/backend/users/{user}/feedback"), &body)
    };
    let backend = |user: &str| report(user, "quiet");
    for (n, activity) in ["quiet", "meditate", "beer"].into_iter().enumerate() {
        let req = integration::as_backend(report("u-2", activity));
        let (status, r) = integration::respond(shared::http::invoke(rag_search::routes(Arc::clone(&h.rag)), req).await);
        assert_eq!((status, r["satisfiedActivities"].as_u64()), (200, Some(n as u64 + 1)), "{r}");
    }
    let (_, r) = h.search_ids(json!({"semanticQuery": "安静 看书", "userId": "u-2"})).await;
    assert_eq!(r["personalization"], "history", "the backend's report personalises u-2: {r}");
    let (status, _) = integration::respond(
        shared::http::invoke(rag_search::routes(Arc::clone(&h.rag)), integration::as_user(backend("u-2"), "u-2")).await,
    );
    let (anonymous, _) =
        integration::respond(shared::http::invoke(rag_search::routes(Arc::clone(&h.rag)), backend("u-2")).await);
    assert_eq!((status, anonymous), (403, 401), "only the backend reports for others");

    let (status, r) = post(&h, "/users/u-1/feedback", json!({"activityId": "nope", "satisfied": true})).await;
    assert_eq!(status, 404, "{r}");
    // A path's user no record could be keyed by is a 400; a token naming one is refused first (the
    // caller is checked before the path).
    let long = format!("/users/{}/feedback", "u".repeat(257));
    let body = json!({"activityId": "beer", "satisfied": true}).to_string();
    let req = integration::as_user(integration::request("POST", &long, &body), "u-1");
    let (status, r) = integration::respond(shared::http::invoke(rag_search::routes(Arc::clone(&h.rag)), req).await);
    assert_eq!(status, 400, "{r}");
    let (status, r) = post(&h, &long, json!({"activityId": "beer", "satisfied": true})).await;
    assert_eq!(status, 403, "{r}");
    let (status, r) = post(&h, "/users/u-1/feedback", json!({"activityId": "beer", "satisfied": "yes"})).await;
    assert_eq!(status, 400, "{r}");
}

// Given a user with no history but stated preferences, then those are embedded once and boost
// matching activities; without either, the search is not personalised.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preferences_stand_in_for_history() {
    let h = harness(&[]).await;
    let calls = h.embedding.as_ref().unwrap().calls();
    let (status, r) =
        put(&h, "/users/new-user/preferences", json!({"tags": ["冲浪"], "vibes": ["玩水"], "text": "喜欢游泳"})).await;
    assert_eq!((status, r["embedded"].as_bool()), (200, Some(true)), "{r}");
    assert_eq!(h.embedding.as_ref().unwrap().calls(), calls + 1, "embedded once");
    let (_, r) = h.search_ids(json!({"semanticQuery": "运动", "userId": "new-user"})).await;
    assert_eq!(r["personalization"], "preferences", "{r}");
    let boost = |id: &str| {
        r["results"].as_array().unwrap().iter().find(|x| x["activity"]["id"] == id).unwrap()["boost"].as_f64().unwrap()
    };
    assert!(boost("surf") > 1.15 && boost("surf") > boost("run") + 0.05, "surf {} run {}", boost("surf"), boost("run"));
    let (_, r) = h.search_ids(json!({"semanticQuery": "运动", "userId": "stranger"})).await;
    assert_eq!(r["personalization"], "none");
    assert!(r["results"][0].get("boost").is_none());
    let (status, r) = put(&h, "/users/new-user/preferences", json!({})).await;
    assert_eq!(status, 400, "{r}");
}

// Given a user who posts feedback 120 times, then what is stored for them stays bounded (the
// newest FEEDBACK_KEPT participations and their counter), and the kept vectors still come
// from the most recent satisfied activities.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn feedback_is_kept_in_a_bounded_ring() {
    use shared::activities::interests::FEEDBACK_KEPT;
    let h = harness(&[]).await;
    for i in 0..120 {
        let id = ["beer", "karaoke", "quiet", "surf"][i % 4];
        let (status, r) = post(&h, "/users/u-ring/feedback", json!({"activityId": id, "satisfied": i >= 110})).await;
        assert_eq!(status, 200, "{r}");
    }
    let stored = h.records.query("USER#u-ring", "A", "\u{10FFFF}", 0).await.unwrap();
    assert!(stored.len() as i64 <= FEEDBACK_KEPT + 2, "{} records for one user", stored.len());
    let (status, r) = post(&h, "/users/u-ring/feedback", json!({"activityId": "run", "satisfied": true})).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["satisfiedActivities"], 5, "the four of the last ten, and run: {r}");
}

/// The harness on Qdrant Edge, or on the Qdrant server (`None` when there is none: said loudly).
async fn on(server: bool, env: &[(&str, &str)]) -> Option<RagHarness> {
    if !server {
        return Some(harness(env).await);
    }
    let vars = integration::rag::server_env()?;
    let mut all: Vec<(&str, &str)> = integration::rag::borrowed(&vars);
    all.extend_from_slice(env);
    Some(harness(&all).await)
}

// Given the same activity twice, one at the searcher's place and one 8 km off and a week later,
// then the nearer and sooner one ranks first, its lift (from the index's formula) is shown and
// its reason says it is close by and soon; with the lift weights at 0 the order is the index's
// and no lift is shown. On Qdrant Edge and on the Qdrant server alike.
async fn nearer_and_sooner_rank_first(server: bool) {
    let Some(h) = on(server, &[]).await else { return };
    let mut far = activity("far-run", "滨江夜跑团", "运动", "沿江慢跑五公里，跑完一起拉伸。", 24 * 7);
    far["location"] = json!({"lat": 31.2218 + 8.0 / 111.2, "lng": 121.4378});
    let near = activity("near-run", "滨江夜跑团", "运动", "沿江慢跑五公里，跑完一起拉伸。", 3);
    let (status, r) = h.index("POST", "/activities", &json!([far, near]).to_string()).await;
    assert_eq!(status, 200, "{r}");
    let body = json!({"semanticQuery": "想跑跑步", "filters": {"location": {"lat": 31.2218, "lng": 121.4378, "radiusInKm": 20}}});
    let (ids, r) = h.search_ids(body.clone()).await;
    let at = |id: &str| ids.iter().position(|x| x == id).unwrap();
    assert!(at("near-run") < at("far-run"), "{ids:?}");
    let result = |id: &str| r["results"][at(id)].clone();
    let (near_lift, far_lift) =
        (result("near-run")["lift"].as_f64().unwrap(), result("far-run")["lift"].as_f64().unwrap());
    // The defaults: 1 + 0.3 + 0.2 × 2^(-3/72) here and now; 1 + 0.3 × 2^(-(8/3)²) + 0.2 × 2^(-168/72)
    // far and later.
    assert!((near_lift - 1.494).abs() < 2e-3 && (far_lift - 1.042).abs() < 2e-3, "{near_lift} {far_lift}");
    let reason = result("near-run")["matchReason"].as_str().unwrap().to_owned();
    assert!(reason.contains("很快就开始") && reason.contains("就在附近"), "{reason}");
    assert!(!result("far-run")["matchReason"].as_str().unwrap().contains("就在附近"));

    let Some(off) = on(server, &[("RAG_NEAR_WEIGHT", "0"), ("RAG_SOON_WEIGHT", "0")]).await else { return };
    let (status, _) = off.index("POST", "/activities", &json!([far, near]).to_string()).await;
    assert_eq!(status, 200);
    let (_, r) = off.search_ids(body).await;
    assert!(r["results"].as_array().unwrap().iter().all(|x| x.get("lift").is_none()), "{r}");
}

// Given a user who turned an activity down and stated a dislike, then that activity is never
// recommended (with or without a query), what is like it is pushed down, and both show in
// `GET /users/{userId}/preferences`; `DELETE .../preferences/dislikes` clears them, and the
// activity comes back. Only the user sees or clears theirs; a malformed user is a 400.
async fn what_a_user_turned_down_is_not_recommended(server: bool) {
    let Some(h) = on(server, &[]).await else { return };
    let (status, r) = post(&h, "/users/u-no/feedback", json!({"activityId": "beer", "satisfied": false})).await;
    assert_eq!((status, r["turnedDown"].as_u64()), (200, Some(1)), "{r}");
    let stated =
        [shared::activities::interests::Stated { text: "不喜欢派对欢唱那种嗨的".into(), likes: false }];
    h.rag.retrieval.remember("u-no", &stated, "test-remember").await.unwrap();
    let (status, shown) = h.as_user("GET", "/users/u-no/preferences", Value::Null).await;
    assert_eq!(status, 200, "{shown}");
    assert_eq!(
        (shown["turnedDown"].clone(), shown["dislikes"].clone()),
        (json!(["beer"]), json!(["不喜欢派对欢唱那种嗨的"]))
    );

    let query = json!({"semanticQuery": "下班喝啤酒撸串 热闹 欢唱", "userId": "u-no"});
    let stranger = json!({"semanticQuery": "下班喝啤酒撸串 热闹 欢唱", "userId": "u-other"});
    let (ids, r) = h.search_ids(query.clone()).await;
    assert!(!ids.contains(&"beer".to_owned()), "turned down: {ids:?}");
    let (theirs, r_other) = h.search_ids(stranger).await;
    assert!(theirs.contains(&"beer".to_owned()), "another user still sees it: {theirs:?}");
    // Karaoke is like what they turned down and what they said: lowered for them, not for another
    // (by rank: a score is a share of its own list's range, not comparable across lists).
    let rank = |ids: &[String], id: &str| ids.iter().filter(|x| *x != "beer").position(|x| x == id);
    let (mine, other) = (rank(&ids, "karaoke").unwrap(), rank(&theirs, "karaoke").unwrap());
    assert!(mine > other, "karaoke at {mine} for the user who dislikes it, {other} for another: {r} {r_other}");
    let (ids, _) = h.search_ids(json!({"userId": "u-no", "limit": 20})).await;
    assert!(!ids.contains(&"beer".to_owned()), "not by time either: {ids:?}");

    // Only the user sees and clears theirs.
    let req = integration::as_user(integration::request("GET", "/users/u-no/preferences", ""), "u-other");
    let (status, _) = integration::respond(shared::http::invoke(rag_search::routes(Arc::clone(&h.rag)), req).await);
    let req = integration::request("DELETE", "/users/u-no/preferences/dislikes", "");
    let (anonymous, _) = integration::respond(shared::http::invoke(rag_search::routes(Arc::clone(&h.rag)), req).await);
    assert_eq!((status, anonymous), (403, 401));
    let long = format!("/users/{}/preferences", "u".repeat(257));
    let req = integration::as_user(integration::request("GET", &long, ""), "u-no");
    let (status, r) = integration::respond(shared::http::invoke(rag_search::routes(Arc::clone(&h.rag)), req).await);
    assert_eq!(status, 400, "{r}");

    let (status, r) = h.as_user("DELETE", "/users/u-no/preferences/dislikes", Value::Null).await;
    assert_eq!(status, 200, "{r}");
    let (_, shown) = h.as_user("GET", "/users/u-no/preferences", Value::Null).await;
    assert_eq!((shown["turnedDown"].clone(), shown["dislikes"].clone()), (json!([]), json!([])), "{shown}");
    let (ids, _) = h.search_ids(query).await;
    assert_eq!(ids, theirs, "cleared: ranked as for anyone else");
    // A later turn-down counts again.
    h.clock.advance(chrono::Duration::seconds(1));
    let (_, r) = post(&h, "/users/u-no/feedback", json!({"activityId": "karaoke", "satisfied": false})).await;
    assert_eq!(r["turnedDown"], 1, "only what came after the clear: {r}");
}

macro_rules! on_both_stores {
    ($($name:ident),*) => {
        mod edge {
            $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
               async fn $name() { super::$name(false).await } )*
        }
        mod qdrant {
            $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
               async fn $name() { super::$name(true).await } )*
        }
    };
}

on_both_stores!(nearer_and_sooner_rank_first, what_a_user_turned_down_is_not_recommended);
