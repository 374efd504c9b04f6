//! The adversarial suite: what someone holding only the API's URL would try, fired at the real
//! handlers. Each attempt is refused with a JSON error and changes nothing.
//!
//! Here: anonymous, forged and user-token calls to every route that can spend money (401/403,
//! no upstream call) and to activity writes, acting as another user, a user's quota, missing
//! and forged identity, the calendar-edge dates, oversized research prompt pieces, unknown cost
//! groups. Budgets at the line across processes are in `budgets`; pipelines that belong to
//! their caller and the capped exclusion block in `research_node`. Beside
//! their features (same standard): 20 concurrent identical misses make 1 upstream call
//! (`search_api::concurrent_identical_misses_make_one_upstream_call`), a `--help` prompt is
//! never a flag and a runaway CLI is killed with its helpers (`research_node`), store faults
//! answer without internals (`shared::http`).

use std::sync::Arc;

use integration::rag::{RagHarness, activity};
use integration::{Harness, Setup, StoreKind, as_backend, as_user, with_authorizer};
use integration::{request, respond};
use lambda_http::Request;
use serde_json::{Value, json};

fn catalogue() -> Value {
    json!([
        activity("quiet", "白噪音读书局", "读书会", "雨声白噪音里安静看书，累了就放空发呆。", 30),
        activity("beer", "周五大排档啤酒局", "美食", "下班来撸串喝啤酒，人多热闹，欢迎新朋友！", 32),
    ])
}

/// What someone without a verified identity can send: nothing, a user's token (on a backend
/// route), and identity claimed in headers API Gateway's authorizers never set.
fn impostors(method: &str, path: &str, body: &str) -> Vec<(&'static str, Request, u16)> {
    let mut forged = request(method, path, body);
    let headers = forged.headers_mut();
    headers.insert("authorization", "Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ1LTEifQ.".parse().unwrap());
    headers.insert("x-amz-security-token", "forged".parse().unwrap());
    headers.insert("x-user-id", "u-1".parse().unwrap());
    vec![
        ("anonymous", request(method, path, body), 401),
        ("forged headers", forged, 401),
        ("a user's token", as_user(request(method, path, body), "u-1"), 403),
    ]
}

/// Titles of every indexed activity, by id.
async fn titles(h: &RagHarness) -> Vec<(String, String)> {
    let (_, r) = h.search_ids(json!({"limit": 50})).await;
    let mut out: Vec<(String, String)> = r["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| (x["activity"]["id"].as_str().unwrap().into(), x["activity"]["title"].as_str().unwrap().into()))
        .collect();
    out.sort();
    out
}

// Given an index of two activities, then a create, a replace and a delete without the
// backend's SigV4 signature are each refused (401 anonymous or forged, 403 a user's token) and
// the index is unchanged; the backend's signed delete still works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn activity_writes_are_for_the_backend_only() {
    let h = RagHarness::new(&[]).await;
    let (status, r) = h.index("POST", "/activities", &catalogue().to_string()).await;
    assert_eq!(status, 200, "{r}");
    let before = titles(&h).await;
    assert_eq!(before.len(), 2);

    let new = activity("spam", "免费领红包", "其他", "点击链接领取", 40).to_string();
    let replaced = activity("quiet", "已取消", "其他", "被人改掉了", 30).to_string();
    for (method, path, body) in [
        ("POST", "/activities", new.as_str()),
        ("PUT", "/activities/quiet", replaced.as_str()),
        ("DELETE", "/activities/beer", ""),
    ] {
        for (who, req, status) in impostors(method, path, body) {
            let (got, r) = respond(shared::http::invoke(index_activity::routes(Arc::clone(&h.indexer)), req).await);
            assert_eq!(got, status, "{who} {method} {path}: {r}");
            let code = if status == 401 { "unauthenticated" } else { "forbidden" };
            assert_eq!(r["error"]["code"], code, "{who} {method} {path}: {r}");
        }
    }
    assert_eq!(titles(&h).await, before, "nothing was written");

    let (status, r) = h.index("DELETE", "/activities/beer", "").await;
    assert_eq!((status, r["deleted"].as_bool()), (200, Some(true)), "{r}");
}

/// Subjects as Auth0 (a connection, `|`, an id; percent-encoded in a path), Cognito (a UUID) and
/// Firebase (a 28-character uid) name their users.
const SUBJECTS: [(&str, &str); 4] = [
    ("auth0|abc123", "auth0%7Cabc123"),
    ("samlp|corp|ann.lee+x@example.com", "samlp%7Ccorp%7Cann.lee%2Bx%40example.com"),
    ("3f1c2a9e-5b7d-4e21-9c8a-0d6b2f4e7a11", "3f1c2a9e-5b7d-4e21-9c8a-0d6b2f4e7a11"),
    ("kX9aQ2bR7tY1uI3oP5sD8fG0hJ4l", "kX9aQ2bR7tY1uI3oP5sD8fG0hJ4l"),
];

// Issue 53 item 9: any issuer's subject is a user at every door of rag-search: its feedback,
// preferences and search all answer 200 (before, `auth0|abc` was charged a quota
// and then refused 400), and what they wrote is kept as theirs. A path's id no door can take
// (257 bytes) is a 400 and an undecodable one a 400 too, each counted as one of the caller's
// requests (issue 73: the quota is taken where the user is known, before anything else is
// read, so a flood of malformed requests is limited like any other); a token whose claim holds
// a control character is a 403 at the door, before any count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_issuers_subject_is_a_user_at_every_door() {
    let h = RagHarness::new(&[("USER_QUOTA_PER_MINUTE", "3")]).await;
    let (status, r) = h.index("POST", "/activities", &catalogue().to_string()).await;
    assert_eq!(status, 200, "{r}");
    let rag = &h.rag;
    for (user, in_path) in SUBJECTS {
        let send = |method: &str, path: String, body: Value| {
            let req = as_user(request(method, &path, &body.to_string()), user);
            async move { respond(shared::http::invoke(rag_search::routes(Arc::clone(rag)), req).await) }
        };
        let (status, r) =
            send("POST", format!("/users/{in_path}/feedback"), json!({"activityId": "quiet", "satisfied": true})).await;
        assert_eq!(status, 200, "{user}: {r}");
        let (status, r) = send("PUT", format!("/users/{in_path}/preferences"), json!({"tags": ["读书"]})).await;
        assert_eq!((status, r["userId"].as_str()), (200, Some(user)), "{r}");
        let (status, r) = send("POST", "/rag/search".into(), json!({"semanticQuery": "安静"})).await;
        assert_eq!(status, 200, "{user}: {r}");
        let kept = h.records.query(&format!("USER#{user}"), "A", "\u{10FFFF}", 0).await.unwrap();
        assert!(kept.iter().any(|r| r.sk.starts_with("FB#")), "{user}'s feedback is kept: {kept:?}");
        assert!(kept.iter().any(|r| r.sk == "PREFERENCES"), "{user}'s preferences are kept: {kept:?}");
    }

    let h = RagHarness::new(&[("USER_QUOTA_PER_MINUTE", "3")]).await;
    let user = SUBJECTS[0].0;
    let long = format!("/users/{}/preferences", "x".repeat(257));
    let bad = as_user(request("PUT", &long, &json!({"tags": ["读书"]}).to_string()), user);
    let (status, r) = respond(shared::http::invoke(rag_search::routes(Arc::clone(&h.rag)), bad).await);
    assert_eq!((status, r["error"]["code"].as_str()), (400, Some("invalid_user_id")), "{r}");
    let bad = as_user(request("PUT", "/users/%FF/preferences", &json!({"tags": ["读书"]}).to_string()), user);
    let (status, r) = respond(shared::http::invoke(rag_search::routes(Arc::clone(&h.rag)), bad).await);
    assert_eq!((status, r["error"]["code"].as_str()), (400, Some("invalid_path")), "{r}");
    let search = as_user(request("POST", "/rag/search", &json!({"semanticQuery": "安静"}).to_string()), user);
    let (status, r) = respond(shared::http::invoke(rag_search::routes(Arc::clone(&h.rag)), search).await);
    assert_eq!(status, 200, "the third of three a minute: {r}");
    let search = as_user(request("POST", "/rag/search", &json!({"semanticQuery": "安静"}).to_string()), user);
    let (status, r) = respond(shared::http::invoke(rag_search::routes(Arc::clone(&h.rag)), search).await);
    assert_eq!((status, r["error"]["code"].as_str()), (429, Some("quota_exceeded")), "the two refused counted: {r}");
    // A token whose claim no door could key is refused at the door (403), before any count.
    let search = as_user(request("POST", "/rag/search", &json!({"semanticQuery": "安静"}).to_string()), "a\u{7}b");
    let (status, r) = respond(shared::http::invoke(rag_search::routes(Arc::clone(&h.rag)), search).await);
    assert_eq!((status, r["error"]["code"].as_str()), (403, Some("forbidden")), "{r}");
}

// Given user u-1 with feedback and preferences, then nobody else can read or write them:
// another user's token is 403, no token 401, a token without the user claim 403, forged
// headers 401 — on feedback, preferences and a personalised search — and u-1's records are
// unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_act_only_as_themselves() {
    let h = RagHarness::new(&[]).await;
    let (status, r) = h.index("POST", "/activities", &catalogue().to_string()).await;
    assert_eq!(status, 200, "{r}");
    let (status, r) = h.as_user("POST", "/users/u-1/feedback", json!({"activityId": "quiet", "satisfied": true})).await;
    assert_eq!(status, 200, "{r}");
    let (status, r) = h.as_user("PUT", "/users/u-1/preferences", json!({"tags": ["读书"]})).await;
    assert_eq!(status, 200, "{r}");
    let records = |h: &RagHarness| {
        let store = h.records.clone();
        async move { store.query("USER#u-1", "A", "\u{10FFFF}", 0).await.unwrap() }
    };
    let before = records(&h).await;
    assert_eq!(before.len(), 3, "one feedback and its counter, one preferences record: {before:?}");

    let attempts = [
        ("POST", "/users/u-1/feedback", json!({"activityId": "beer", "satisfied": true})),
        ("PUT", "/users/u-1/preferences", json!({"tags": ["啤酒"]})),
        ("POST", "/rag/search", json!({"semanticQuery": "安静", "userId": "u-1"})),
    ];
    for (method, path, body) in attempts {
        let text = body.to_string();
        let no_claim = with_authorizer(
            request(method, path, &text),
            json!({"jwt": {"claims": {"email": "u-1@example.com"}, "scopes": null}}),
        );
        let mut forged = request(method, path, &text);
        forged.headers_mut().insert("authorization", "Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ1LTEifQ.".parse().unwrap());
        let cases = [
            ("another user's token", as_user(request(method, path, &text), "u-2"), 403),
            ("no token", request(method, path, &text), 401),
            ("a token without the user claim", no_claim, 403),
            ("forged headers", forged, 401),
            ("the backend's signature", as_backend(request(method, path, &text)), 401),
        ];
        for (who, req, status) in cases {
            let (got, r) = respond(shared::http::invoke(rag_search::routes(Arc::clone(&h.rag)), req).await);
            assert_eq!(got, status, "{who}: {method} {path}: {r}");
            assert!(r["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{r}");
            assert!(r.get("results").is_none(), "{who} got u-1's results: {r}");
        }
    }
    assert_eq!(records(&h).await.len(), before.len(), "nothing was written for u-1");
    let (_, r) = h.search_ids(json!({"semanticQuery": "安静", "userId": "u-1"})).await;
    assert_eq!(r["personalization"], "preferences", "u-1 still gets their own: {r}");
    let (_, r) = h.search_ids(json!({"semanticQuery": "安静"})).await;
    assert_eq!(r["personalization"], json!(null), "a search without userId is not personalised: {r}");
}

// Given the cost report, then an anonymous caller or a user is refused before any date is read,
// and the backend's calendar-edge dates are a 400, not a crash.
#[tokio::test]
async fn the_cost_report_is_for_operators_and_survives_the_calendars_edge() {
    let h = Harness::without_key(StoreKind::Local).await;
    let app = cost_report::routes(Arc::new(h.cost_report()));
    let get = |query: &str| {
        let uri = format!("https://api.example.com/cost-report?{query}");
        let req = lambda_http::http::Request::builder().method("GET").uri(uri).body(lambda_http::Body::Empty).unwrap();
        let params: std::collections::HashMap<String, String> =
            query.split('&').filter_map(|p| p.split_once('=')).map(|(k, v)| (k.into(), v.into())).collect();
        lambda_http::RequestExt::with_query_string_parameters(req, params)
    };
    for (who, req, status) in [("anonymous", get("to=2026-11-01"), 401), ("a user", as_user(get(""), "u-1"), 403)] {
        let (got, r) = respond(shared::http::invoke(app.clone(), req).await);
        assert_eq!(got, status, "{who}: {r}");
    }
    for query in ["to=+262143-12-31", "to=-262144-01-01", "from=+262143-12-31", "from=0000-01-01&to=9999-12-31"] {
        let (got, r) = respond(shared::http::invoke(app.clone(), as_backend(get(query))).await);
        assert_eq!(got, 400, "{query}: {r}");
        assert!(r["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{query}: {r}");
    }
}

// Given the paid routes, then what would run up cost or crash is a 400 and reaches no
// upstream: calendar-edge dates, an agent outside AGENTS, research prompt pieces over the
// bounds, a body over the limit.
async fn paid_routes_refuse_what_runs_up_cost(kind: StoreKind) {
    let h = Harness::new(kind).await;
    let long = "长".repeat(501);
    let many: Vec<String> = (0..21).map(|i| format!("k{i}")).collect();
    let cases = [
        ("/search", json!({"query": "x", "publishedAfter": "+262143-12-31"}), 400),
        ("/search", json!({"query": "x", "publishedBefore": "-262144-01-01"}), 400),
        ("/search", json!({"query": "x", "agent": "nonce-4711"}), 400),
        ("/search", json!({"query": "x".repeat(70 * 1024)}), 413),
        ("/research", json!({"strategy": {"keywords": many}}), 400),
        ("/research", json!({"strategy": {"keywords": [long.clone()]}}), 400),
        ("/research", json!({"config": {"promptTemplate": {"customRequirements": [long.clone()]}}}), 400),
        ("/research", json!({"config": {"promptTemplate": {"customInstructions": "x".repeat(4001)}}}), 400),
        ("/research", json!({"prompts": {"researchPrompt": "x".repeat(20_001)}}), 400),
    ];
    for (path, body, status) in cases {
        let (got, r) = h.post(path, body.clone()).await;
        assert_eq!(got, status, "{path} {body}: {r}");
        assert!(r["error"]["code"].as_str().is_some(), "{r}");
    }
    assert!(h.upstream_calls().await.is_empty(), "no upstream call was made");
    assert!(h.costs().await.is_empty(), "nothing was billed");
}

integration::on_both_stores!(paid_routes_refuse_what_runs_up_cost);

// Given fake Perplexity and Tavily, then every route of the search function that can spend
// money, called anonymously, with forged identity headers or with a user's token, is refused
// before its body is read and reaches no upstream; what spends nothing stays public.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paid_search_routes_are_for_signed_callers_only() {
    let h = Harness::with(StoreKind::Local, Setup { perplexity: true, tavily: true, ..Setup::default() }).await;
    let routes = [
        ("/search", json!({"query": "x"})),
        ("/search/competitors", json!({"keyword": "x"})),
        ("/search/trends", json!({"topic": "x"})),
        ("/search/topic", json!({"topic": "x"})),
        ("/tools/search_web", json!({"query": "x"})),
        ("/research", json!({"pipelineId": "victim"})),
    ];
    for (path, body) in routes {
        for (who, req, status) in impostors("POST", path, &body.to_string()) {
            let (got, _, r) = h.exchange_as(req, None).await;
            assert_eq!(got, status, "{who} POST {path}: {r}");
        }
    }
    assert!(h.upstream_calls().await.is_empty() && h.tavily_calls().await.is_empty(), "no upstream was called");
    assert!(h.costs().await.is_empty(), "nothing was billed");
    for path in ["/tools", "/sources/some-request"] {
        let (got, _, r) = h.exchange_as(request("GET", path, ""), None).await;
        assert!(got == 200 || got == 404, "GET {path} is public: {got} {r}");
    }
}

// Given explore_nearby (the assistant's tool, which embeds the query and may ask a model for
// reasons), then an anonymous, forged or user caller is refused and nothing is embedded; the
// research function's routes refuse anyone with neither a signature nor a user's verified token
// (nor, for a stream, a signed link) before a session is created or streamed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explore_nearby_and_timeline_research_are_for_known_callers_only() {
    let h = RagHarness::new(&[]).await;
    let (status, r) = h.index("POST", "/activities", &catalogue().to_string()).await;
    assert_eq!(status, 200, "{r}");
    let embedded = h.embedding.as_ref().unwrap().calls();
    let args = json!({"semanticQuery": "安静", "lat": 31.22, "lng": 121.44, "radiusInKm": 5}).to_string();
    for (who, req, status) in impostors("POST", "/tools/explore_nearby", &args) {
        let (got, r) = respond(shared::http::invoke(rag_search::routes(Arc::clone(&h.rag)), req).await);
        assert_eq!(got, status, "{who}: {r}");
    }
    assert_eq!(h.embedding.as_ref().unwrap().calls(), embedded, "nothing was embedded");

    let (records, _guard) = integration::store(StoreKind::Local).await;
    let config = integration::config::<&str, &str>(&[]);
    let clock: std::sync::Arc<dyn shared::core::clock::Clock> = std::sync::Arc::new(shared::core::clock::SystemClock);
    let app = Arc::new(research::App::new(&config, records, clock).unwrap());
    for (method, path, body) in [
        ("POST", "/api/research", r#"{"topic": "iPhone"}"#),
        ("GET", "/api/research/00000000-0000-4000-8000-000000000000/stream", ""),
    ] {
        // A user's own token is let in (their research, on their quota); nothing else is.
        for (who, req, status) in impostors(method, path, body).into_iter().filter(|(who, ..)| *who != "a user's token")
        {
            let response = shared::http::invoke_streamed(research::routes(Arc::clone(&app)), req).await;
            assert_eq!(response.status().as_u16(), status, "{who} {method} {path}");
        }
        let mut link = request(method, &format!("{path}?token=eyJhbGciOiJub25lIn0.eyJzdWIiOiJ1LTEifQ."), body);
        link.headers_mut().insert("last-event-id", "1".parse().unwrap());
        let response = shared::http::invoke_streamed(research::routes(Arc::clone(&app)), link).await;
        assert_eq!(response.status().as_u16(), 401, "an unsigned stream link {method} {path}");
    }
}

// Given a quota of 2 searches a minute, then a user's third search in the minute is 429
// quota_exceeded with Retry-After and another user is not affected; the next minute it is
// answered again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_search_quota_is_counted_across_requests() {
    let h = RagHarness::new(&[("USER_QUOTA_PER_MINUTE", "2")]).await;
    let (status, r) = h.index("POST", "/activities", &catalogue().to_string()).await;
    assert_eq!(status, 200, "{r}");
    let search = |user: &'static str| {
        let req = as_user(request("POST", "/rag/search", &json!({"semanticQuery": "安静"}).to_string()), user);
        shared::http::invoke(rag_search::routes(Arc::clone(&h.rag)), req)
    };
    for _ in 0..2 {
        assert_eq!(search("u-1").await.status(), 200);
    }
    let refused = search("u-1").await;
    assert_eq!(refused.status(), 429);
    let retry_after: u64 = refused.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry_after), "{retry_after}");
    let (_, r) = respond(refused);
    assert_eq!(r["error"]["code"], "quota_exceeded", "{r}");
    assert_eq!(search("u-2").await.status(), 200, "another user has their own quota");
    h.clock.advance(chrono::Duration::seconds(60));
    assert_eq!(search("u-1").await.status(), 200, "a new minute");
}
