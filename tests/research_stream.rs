//! The `research` function end to end: sessions, the SSE stream read by a real SSE parser,
//! against a fake OpenAI-compatible server on 127.0.0.1 that answers with tool calls and
//! structured output (and watches concurrency) and a strict fake Perplexity (Agent API) for the
//! detail searches, and in mock mode.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::response::IntoResponse;
use axum::routing::post;
use axum::{Json, Router};
use chrono::Utc;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use http_body_util::BodyExt;
use integration::perplexity::{self, AGENT_PATH};
use integration::{StoreGuard, StoreKind, on_both_stores, store};
use lambda_http::Body;
use serde_json::{Value, json};
use shared::core::clock::{Clock, ManualClock};

/// A fake OpenAI-compatible chat server for the two agents.
#[derive(Default)]
struct FakeLlm {
    nodes: usize,
    /// Milliseconds a node's final detail answer takes, by node number (1-based).
    delay: Option<fn(usize) -> u64>,
    /// Node number whose final answer is a 500.
    failing: Option<usize>,
    requests: AtomicUsize,
    active: Mutex<HashSet<usize>>,
    max_active: AtomicUsize,
    finished: Mutex<Vec<usize>>,
    /// What the `search` tool handed the detail agent, by node number.
    tool_results: Mutex<Vec<(usize, String)>>,
}

fn node_number(user: &str) -> usize {
    user.lines().find_map(|l| l.strip_prefix("标题：Node ")).and_then(|n| n.trim().parse().ok()).unwrap_or(0)
}

fn completion(message: Value) -> Json<Value> {
    Json(json!({
        "id": "fake-1", "model": "fake",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 50}
    }))
}

async fn chat(State(fake): State<Arc<FakeLlm>>, Json(body): Json<Value>) -> axum::response::Response {
    fake.requests.fetch_add(1, Ordering::SeqCst);
    let schema = body.pointer("/response_format/json_schema/name").and_then(Value::as_str).unwrap_or_default();
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let user = messages
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned();
    assert!(body["tools"][0]["function"]["name"] == "search", "the search tool is offered");
    if schema == "milestones" {
        let nodes: Vec<Value> = (1..=fake.nodes)
            .map(|i| json!({"date": format!("20{i:02}-01-01"), "title": format!("Node {i}"), "description": format!("Milestone {i}"), "significance": "high"}))
            .collect();
        return completion(json!({"role": "assistant", "content": json!({"nodes": nodes}).to_string()}))
            .into_response();
    }
    let n = node_number(&user);
    let tool_result =
        messages.iter().find(|m| m["role"] == "tool").and_then(|m| m["content"].as_str()).map(str::to_owned);
    let Some(tool_result) = tool_result else {
        // Step 2 of the seed's workflow: one search for this node.
        {
            let mut active = fake.active.lock().unwrap();
            active.insert(n);
            fake.max_active.fetch_max(active.len(), Ordering::SeqCst);
        }
        return completion(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": format!("call-{n}"), "type": "function", "function": {"name": "search", "arguments": json!({"query": format!("Node {n} facts")}).to_string()}}
        ]}))
        .into_response();
    };
    tokio::time::sleep(Duration::from_millis(fake.delay.map_or(10, |d| d(n)))).await;
    if fake.failing == Some(n) {
        return (axum::http::StatusCode::INTERNAL_SERVER_ERROR, "boom").into_response();
    }
    fake.active.lock().unwrap().remove(&n);
    fake.finished.lock().unwrap().push(n);
    fake.tool_results.lock().unwrap().push((n, tool_result.clone()));
    let url = tool_result.split("](").nth(1).and_then(|r| r.split(')').next()).unwrap_or_default().to_owned();
    completion(json!({"role": "assistant", "content": json!({
        "key_features": [format!("Node {n} a"), format!("Node {n} b"), format!("Node {n} c")],
        "impact": "big", "key_people": ["Someone — the founder"], "context": "because",
        "sources": [url, "https://invented.example.org/not-from-search"]
    }).to_string()}))
    .into_response()
}

async fn fake_llm(fake: Arc<FakeLlm>) -> String {
    let app = Router::new().route("/chat/completions", post(chat)).with_state(fake);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

/// A strict fake Perplexity answering the search for "Node n ..." with a page of node n.
async fn fake_perplexity() -> integration::FakeServer {
    let server = integration::strict_perplexity().await;
    let answer = |request: &wiremock::Request| {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let n = node_number(&format!("标题：{}", body["input"].as_str().unwrap_or_default().replace(" facts", "")));
        let mut page: Vec<Value> = (1..=7)
            .map(|i| json!({"id": i, "title": format!("Node {n} page {i}"), "url": format!("https://example.com/node-{n}/{i}"), "snippet": format!("Node {n} text {i}.")}))
            .collect();
        page[0] = json!({"id": 1, "title": format!("Node {n} page"), "url": format!("https://example.com/node-{n}"), "snippet": format!("Node {n} {}", "事".repeat(400))});
        let text = format!("Node {n} happened [1].");
        wiremock::ResponseTemplate::new(200).set_body_json(perplexity::answer(
            &text,
            Value::Array(page),
            json!([]),
            perplexity::usage(50, 50, 1, None),
        ))
    };
    wiremock::Mock::given(wiremock::matchers::path(AGENT_PATH)).respond_with(answer).mount(&server).await;
    server
}

async fn app(kind: StoreKind, llm: Option<&str>) -> (Arc<research::App>, Arc<ManualClock>, StoreGuard) {
    app_with(kind, llm, None, &[]).await
}

/// The research app with the model at `llm` and Perplexity at `search` (mock when `None`),
/// and `extra` settings.
async fn app_with(
    kind: StoreKind,
    llm: Option<&str>,
    search: Option<&str>,
    extra: &[(&str, &str)],
) -> (Arc<research::App>, Arc<ManualClock>, StoreGuard) {
    let (records, guard) = store(kind).await;
    let llm = llm.map(str::to_owned);
    let search = search.map(str::to_owned);
    let mut vars = vec![("RETRY_BASE_MS", "5".to_owned())];
    if let Some(uri) = llm {
        vars.extend([("LLM_API_KEY", "llm-test-key".into()), ("LLM_BASE_URL", uri)]);
    }
    if let Some(uri) = search {
        vars.extend([("PERPLEXITY_API_KEY", "pplx-test-key".into()), ("PERPLEXITY_BASE_URL", uri)]);
    }
    vars.extend(extra.iter().map(|(k, v)| (*k, v.to_string())));
    let config = integration::config(&vars);
    let clock = Arc::new(ManualClock::new(Utc::now()));
    let app = research::App::new(&config, records, Arc::clone(&clock) as Arc<dyn Clock>).unwrap();
    (Arc::new(app), clock, guard)
}

async fn request(app: &Arc<research::App>, method: &str, path: &str, body: &str) -> shared::http::Response {
    shared::http::invoke_streamed(research::routes(Arc::clone(app)), integration::as_backend(bare(method, path, body)))
        .await
}

/// A request with no identity at all (add one with `integration::as_user` or `as_backend`).
fn bare(method: &str, path: &str, body: &str) -> lambda_http::Request {
    lambda_http::http::Request::builder().method(method).uri(path).body(Body::from(body.to_owned())).unwrap()
}

async fn json_of(response: shared::http::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap())
}

async fn new_session(app: &Arc<research::App>, topic: &str) -> String {
    let (status, r) = json_of(request(app, "POST", "/api/research", &json!({"topic": topic}).to_string()).await).await;
    assert_eq!(status, 200, "{r}");
    r["session_id"].as_str().unwrap().to_owned()
}

/// Opens the stream and parses it as SSE; `(event, data)` pairs.
async fn events(app: &Arc<research::App>, session: &str) -> impl futures::Stream<Item = (String, Value)> + use<> {
    let response = request(app, "GET", &format!("/api/research/{session}/stream"), "").await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream; charset=utf-8");
    response.into_body().into_data_stream().eventsource().map(|e| {
        let e = e.expect("well-formed SSE");
        (e.event, serde_json::from_str(&e.data).expect("JSON data"))
    })
}

// Given no LLM key and no search key (the embedded default), then the whole flow runs on
// labelled mock data, in seed 003's event order, with each node's sources in its event.
async fn mock_mode_streams_the_whole_flow_in_order(kind: StoreKind) {
    let (app, _clock, _g) = app(kind, None).await;
    let session = new_session(&app, "人工智能发展史").await;
    let got: Vec<(String, Value)> = events(&app, &session).await.collect().await;
    let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "progress",
            "skeleton",
            "progress",
            "node_detail",
            "node_detail",
            "node_detail",
            "node_detail",
            "node_detail",
            "complete"
        ]
    );
    assert_eq!(got[0].1, json!({"phase": "skeleton", "message": "正在构建时间线骨架...", "percent": 0}));
    assert_eq!(got[2].1, json!({"phase": "detail", "message": "正在深度补充节点详情...", "percent": 0}));
    let skeleton = &got[1].1;
    assert_eq!(skeleton["mock"], true);
    let ids: Vec<&str> = skeleton["nodes"].as_array().unwrap().iter().map(|n| n["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["ms_001", "ms_002", "ms_003", "ms_004", "ms_005"]);
    assert_eq!(skeleton["nodes"][0]["status"], "skeleton");
    assert!(skeleton["nodes"][0]["title"].as_str().unwrap().starts_with("【模擬資料】"));
    for (_, data) in &got[3..8] {
        assert!(ids.contains(&data["node_id"].as_str().unwrap()));
        let d = &data["details"];
        assert_eq!(d["key_features"].as_array().unwrap().len(), 3);
        for field in ["impact", "context"] {
            assert!(d[field].as_str().unwrap().starts_with("【模擬資料】"));
        }
        assert!(!d["sources"].as_array().unwrap().is_empty(), "the search tool's sources reach the event");
        assert_eq!(data["sources"][0]["url"], d["sources"][0]);
    }
    assert_eq!(got[8].1, json!({"total_nodes": 5, "detailed_nodes": 5}));
    for (name, data) in &got {
        assert!(!data.to_string().contains("【模擬資料】【模擬資料】"), "{name}: the label is said once: {data}");
    }
    // Each node's search keeps its own stored sources (request `<session>_<node>_<n>`).
    for node in ["ms_001", "ms_005"] {
        let stored =
            shared::web::sources::list(&*app.runs.records, &format!("{session}_{node}_1"), app.runs.clock.now())
                .await
                .unwrap();
        assert!(stored.is_some_and(|s| !s.is_empty()), "sources of {node}'s search");
    }
}

// Given a real-protocol model and Perplexity, then tool calls and structured output drive the
// agents, detail runs are at most 4 at once, events arrive in completion order, and a node only
// cites what its Agent API search returned.
async fn detail_runs_are_bounded_and_delivered_in_completion_order(kind: StoreKind) {
    let fake = Arc::new(FakeLlm {
        nodes: 8,
        delay: Some(|n| [0, 9000, 1800, 5400, 600, 2700, 900, 3600, 900][n]),
        ..FakeLlm::default()
    });
    let pplx = fake_perplexity().await;
    let (app, _clock, _g) = app_with(kind, Some(&fake_llm(Arc::clone(&fake)).await), Some(&pplx.uri()), &[]).await;
    let session = new_session(&app, "iPhone").await;
    let got: Vec<(String, Value)> = events(&app, &session).await.collect().await;
    assert_eq!(got[0].1["message"], "Building timeline skeleton...");
    let delivered: Vec<usize> = got
        .iter()
        .filter(|(n, _)| n == "node_detail")
        .map(|(_, d)| d["node_id"].as_str().unwrap()[3..].parse().unwrap())
        .collect();
    assert_eq!(delivered.len(), 8);
    // Finish times are at least 600 ms apart (4, 2, 6, 5, 8, 3, 7, 1), more than the store adds to
    // the runs before one (DynamoDB Local, shared with the stream's reader, on a loaded machine),
    // so the order is not a race; 8 and 7 each follow two runs (4, 5 and 2, 6).
    assert_eq!(delivered, *fake.finished.lock().unwrap(), "pushed as each node finished");
    assert_eq!(delivered, [4, 2, 6, 5, 8, 3, 7, 1]);
    assert_ne!(delivered, (1..=8).collect::<Vec<_>>(), "not in skeleton order");
    assert_eq!(
        fake.max_active.load(Ordering::SeqCst),
        4,
        "at most DETAIL_CONCURRENCY (4) detail runs at once, and all 4 used"
    );
    let detail = &got.iter().find(|(n, _)| n == "node_detail").unwrap().1;
    assert_eq!(detail["node_id"], "ms_004");
    assert_eq!(
        detail["details"]["sources"],
        json!(["https://example.com/node-4"]),
        "Perplexity's result is kept, the invented URL is dropped"
    );
    assert_eq!(detail["sources"][0]["title"], "Node 4 page");
    assert_eq!(got.last().unwrap(), &("complete".to_owned(), json!({"total_nodes": 8, "detailed_nodes": 8})));
    // Every model request is a cost record: 1 for the skeleton, 2 per node (search, answer).
    let now = app.runs.clock.now();
    let costs = app
        .runs
        .timeline
        .ledger()
        .between(now - chrono::Duration::hours(1), now + chrono::Duration::hours(1))
        .await
        .unwrap();
    let llm = |agent: &str| {
        costs.iter().filter(|c| c.kind == shared::costs::ledger::CallKind::Llm && c.agent == agent).count()
    };
    assert_eq!((llm("milestone"), llm("detail")), (1, 16));
    let searches: Vec<_> = costs.iter().filter(|c| c.kind == shared::costs::ledger::CallKind::Search).collect();
    assert_eq!(searches.len(), 8, "one Agent API search per node");
    assert!(searches.iter().all(|c| c.provider == "perplexity" && !c.mock && !c.failed && c.searches == 1));
    assert_eq!(pplx.received_requests().await.unwrap().len(), 8);
    assert_eq!(fake.requests.load(Ordering::SeqCst), 17);
    let detail = costs.iter().find(|c| c.agent == "detail" && c.kind == shared::costs::ledger::CallKind::Llm).unwrap();
    assert_eq!(
        (detail.provider.as_str(), detail.model.as_str(), detail.input_tokens),
        ("openrouter", "deepseek/deepseek-chat", 100)
    );
    assert!(
        (detail.cost_usd - (0.1 * 0.00027 + 0.05 * 0.0011)).abs() < 1e-12,
        "priced from prices.json: {}",
        detail.cost_usd
    );
}

// Issue 42 (seed 003): the detail agent's search tool gives each result's title, URL and up to 300
// characters of its text, for at most 5 results, and the node may cite only those.
async fn the_search_tool_gives_five_results_with_their_text(kind: StoreKind) {
    let fake = Arc::new(FakeLlm { nodes: 1, ..FakeLlm::default() });
    let pplx = fake_perplexity().await;
    let (app, _clock, _g) = app_with(kind, Some(&fake_llm(Arc::clone(&fake)).await), Some(&pplx.uri()), &[]).await;
    let session = new_session(&app, "iPhone").await;
    let got: Vec<(String, Value)> = events(&app, &session).await.collect().await;
    let results = fake.tool_results.lock().unwrap().clone();
    let (n, text) = &results[0];
    assert_eq!(*n, 1);
    let first = format!("Node 1 {}", "事".repeat(400)).chars().take(300).collect::<String>();
    let mut expected = vec![
        "Summary: Node 1 happened [1].\n".to_owned(),
        format!("- [Node 1 page](https://example.com/node-1)\n  {first}"),
    ];
    expected
        .extend((2..=5).map(|i| format!("- [Node 1 page {i}](https://example.com/node-1/{i})\n  Node 1 text {i}.")));
    assert_eq!(*text, expected.join("\n"));
    assert!(!text.contains("page 6"), "at most 5 results");
    let detail = &got.iter().find(|(n, _)| n == "node_detail").unwrap().1;
    assert_eq!(detail["sources"][0]["snippet"].as_str().map(|s| s.chars().count()), Some(300));
}

// Given one node whose detail run keeps failing, then it stays a skeleton and the rest complete.
async fn a_failing_node_is_skipped_and_the_rest_complete(kind: StoreKind) {
    let fake = Arc::new(FakeLlm { nodes: 4, failing: Some(2), ..FakeLlm::default() });
    let (app, _clock, _g) = app(kind, Some(&fake_llm(Arc::clone(&fake)).await)).await;
    let session = new_session(&app, "iPhone").await;
    let got: Vec<(String, Value)> = events(&app, &session).await.collect().await;
    let mut ids: Vec<&str> =
        got.iter().filter(|(n, _)| n == "node_detail").map(|(_, d)| d["node_id"].as_str().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["ms_001", "ms_003", "ms_004"]);
    assert_eq!(got.last().unwrap().1, json!({"total_nodes": 4, "detailed_nodes": 3}));
}

// Issue 42 (seed 003): one deadline bounds the whole research (TIMELINE_BUDGET_SECS, 1 s here):
// nodes not detailed by then stay skeletons, their runs are dropped, and the stream still ends
// with `complete`, saying how many were detailed.
async fn the_research_ends_by_its_deadline(kind: StoreKind) {
    let fake = Arc::new(FakeLlm { nodes: 4, delay: Some(|n| [0, 100, 100, 8000, 8000][n]), ..FakeLlm::default() });
    let llm = fake_llm(Arc::clone(&fake)).await;
    let (app, _clock, _g) = app_with(kind, Some(&llm), None, &[("TIMELINE_BUDGET_SECS", "1")]).await;
    let session = new_session(&app, "iPhone").await;
    let started = std::time::Instant::now();
    let got: Vec<(String, Value)> = events(&app, &session).await.collect().await;
    assert!(started.elapsed() < Duration::from_secs(3), "ended after {:?}", started.elapsed());
    let mut ids: Vec<&str> =
        got.iter().filter(|(n, _)| n == "node_detail").map(|(_, d)| d["node_id"].as_str().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["ms_001", "ms_002"]);
    assert_eq!(got.last().unwrap(), &("complete".to_owned(), json!({"total_nodes": 4, "detailed_nodes": 2})));
}

/// Opens the stream after event `last` (as `Last-Event-ID`), signed by `principal`; `(id,
/// event, data)` triples.
async fn events_after(
    app: &Arc<research::App>,
    session: &str,
    last: Option<u32>,
) -> impl futures::Stream<Item = (u32, String, Value)> + use<> {
    let mut req = lambda_http::http::Request::builder()
        .method("GET")
        .uri(format!("/api/research/{session}/stream"))
        .body(Body::Empty)
        .unwrap();
    if let Some(last) = last {
        req.headers_mut().insert("last-event-id", last.to_string().parse().unwrap());
    }
    let response = shared::http::invoke_streamed(research::routes(Arc::clone(app)), integration::as_backend(req)).await;
    assert_eq!(response.status(), 200);
    response.into_body().into_data_stream().eventsource().map(|e| {
        let e = e.expect("well-formed SSE");
        (e.id.parse().expect("every event has an id"), e.event, serde_json::from_str(&e.data).expect("JSON data"))
    })
}

// Issue 40: a client that leaves does not stop the research (it runs once, to the end, its
// events stored), and a reconnect with Last-Event-ID replays exactly what was missed, then
// follows: ids consecutive, nothing twice, nothing lost.
async fn a_client_that_leaves_misses_nothing_when_it_reconnects(kind: StoreKind) {
    let fake = Arc::new(FakeLlm { nodes: 6, delay: Some(|n| 100 + 40 * n as u64), ..FakeLlm::default() });
    let (app, _clock, _g) = app(kind, Some(&fake_llm(Arc::clone(&fake)).await)).await;
    let session = new_session(&app, "iPhone").await;
    let mut first = Box::pin(events_after(&app, &session, None).await);
    let mut seen = Vec::new();
    while let Some((id, name, data)) = first.next().await {
        seen.push((id, name.clone(), data));
        if name == "node_detail" {
            break;
        }
    }
    drop(first);
    tokio::time::sleep(Duration::from_millis(400)).await;
    let last = seen.last().unwrap().0;
    let rest: Vec<(u32, String, Value)> = events_after(&app, &session, Some(last)).await.collect().await;
    let all: Vec<(u32, String, Value)> = seen.into_iter().chain(rest).collect();
    let ids: Vec<u32> = all.iter().map(|(id, _, _)| *id).collect();
    assert_eq!(ids, (1..=all.len() as u32).collect::<Vec<_>>(), "consecutive, from 1, nothing twice");
    assert_eq!(all.last().unwrap().1, "complete");
    assert_eq!(
        all.last().unwrap().2,
        json!({"total_nodes": 6, "detailed_nodes": 6}),
        "the run went on without a client"
    );
    let details = all.iter().filter(|(_, n, _)| n == "node_detail").count();
    assert_eq!(details, 6);
    // A second reader, from the start, reads the same run; no reader starts another.
    let requests = fake.requests.load(Ordering::SeqCst);
    let again: Vec<(u32, String, Value)> = events_after(&app, &session, None).await.collect().await;
    assert_eq!(again, all, "the same events, in the same order");
    assert_eq!(fake.requests.load(Ordering::SeqCst), requests, "the research ran once");
    assert_eq!(fake.finished.lock().unwrap().len(), 6, "each node's detail once");
}

// Issue 40: the owner can stop a research: DELETE stops its model calls within about a second
// and its streams end with `cancelled`; the status says so; another caller can neither see nor
// stop it.
async fn the_owner_cancels_a_research_and_billing_stops(kind: StoreKind) {
    let fake = Arc::new(FakeLlm { nodes: 12, delay: Some(|n| 200 + 50 * n as u64), ..FakeLlm::default() });
    let (app, _clock, _g) = app(kind, Some(&fake_llm(Arc::clone(&fake)).await)).await;
    let session = new_session(&app, "iPhone").await;
    let mut stream = Box::pin(events_after(&app, &session, None).await);
    while let Some((_, name, _)) = stream.next().await {
        if name == "node_detail" {
            break;
        }
    }
    let path = format!("/api/research/{session}");
    let other = |method: &str| {
        let req = lambda_http::http::Request::builder().method(method).uri(&path).body(Body::Empty).unwrap();
        integration::as_role(req, "someone-else")
    };
    for method in ["GET", "DELETE"] {
        let (status, _) =
            json_of(shared::http::invoke_streamed(research::routes(Arc::clone(&app)), other(method)).await).await;
        assert_eq!(status, 404, "{method} by another caller");
    }
    let (status, r) = json_of(request(&app, "DELETE", &path, "").await).await;
    assert_eq!((status, r["cancelled"].as_bool()), (202, Some(true)));
    let rest: Vec<(u32, String, Value)> = stream.collect().await;
    assert_eq!(rest.last().map(|(_, n, _)| n.as_str()), Some("cancelled"), "{rest:?}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = fake.requests.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(fake.requests.load(Ordering::SeqCst), after, "model calls went on after the cancel");
    assert!(fake.finished.lock().unwrap().len() < 12);
    let (status, r) = json_of(request(&app, "GET", &path, "").await).await;
    assert_eq!((status, r["status"].as_str()), (200, Some("cancelled")), "{r}");
    // Issue 62 item 5: every model request it made is on the ledger, those the cancel cut in
    // flight as failed (they may have been billed): none is left out.
    let (made, now) = (fake.requests.load(Ordering::SeqCst), app.runs.clock.now());
    let mut recorded = Vec::new();
    for _ in 0..40 {
        let costs =
            app.runs.timeline.ledger().between(now - chrono::Duration::hours(1), now + chrono::Duration::hours(1));
        recorded =
            costs.await.unwrap().into_iter().filter(|c| c.kind == shared::costs::ledger::CallKind::Llm).collect();
        if recorded.len() >= made {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(recorded.len() >= made, "{} model calls recorded of {made} made", recorded.len());
    assert!(recorded.iter().any(|c| c.failed), "the calls cut in flight are recorded as failed");
}

// Issue 40: GET /api/research/{id} answers the status and every event so far; a reader replays
// 200 stored events at once (the figure is printed).
async fn the_status_and_a_long_replay(kind: StoreKind) {
    let (app, _clock, _g) = app(kind, None).await;
    let session = new_session(&app, "人工智能发展史").await;
    let path = format!("/api/research/{session}");
    let (status, r) = json_of(request(&app, "GET", &path, "").await).await;
    assert_eq!((status, r["status"].as_str(), r["events"].as_array().map(Vec::len)), (200, Some("waiting"), Some(0)));
    let streamed: Vec<(u32, String, Value)> = events_after(&app, &session, None).await.collect().await;
    let (_, r) = json_of(request(&app, "GET", &path, "").await).await;
    assert_eq!(r["status"], "complete");
    let listed: Vec<(u32, String, Value)> = r["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["id"].as_u64().unwrap() as u32, e["event"].as_str().unwrap().to_owned(), e["data"].clone()))
        .collect();
    assert_eq!(listed, streamed);

    let long = new_session(&app, "iPhone").await;
    let now = app.runs.clock.now();
    let hour = Duration::from_secs(3600);
    assert!(shared::timeline::sessions::claim_run(&*app.runs.records, &long, hour, now).await.unwrap());
    let progress = shared::timeline::Event::Progress { phase: "detail", message: "m", percent: 0 };
    for seq in 1..200 {
        shared::timeline::sessions::log(&*app.runs.records, &long, seq, &progress, now).await.unwrap();
    }
    let end = shared::timeline::Event::Complete { total_nodes: 0, detailed_nodes: 0 };
    shared::timeline::sessions::log(&*app.runs.records, &long, 200, &end, now).await.unwrap();
    let started = std::time::Instant::now();
    let replayed: Vec<(u32, String, Value)> = events_after(&app, &long, Some(0)).await.collect().await;
    let took = started.elapsed();
    println!("figure: replay of 200 stored events after a reconnect ({kind:?}): {:.1} ms", took.as_secs_f64() * 1000.0);
    assert_eq!(replayed.iter().map(|(id, _, _)| *id).collect::<Vec<_>>(), (1..=200).collect::<Vec<_>>());
    assert!(took < Duration::from_secs(2), "{took:?}");
}

// Issue 40: every stream ends. A reconnect after the end is a 204 (EventSource stops); an id past
// the last is a 400; a research cancelled before its first stream never runs; cancelling an
// ended one changes nothing, nor does a repeated one (its `CANCEL` is written once); a run past
// its deadline with no end (its container died) is ended with `error` by the next reader or
// status.
async fn every_stream_ends(kind: StoreKind) {
    use shared::timeline::sessions;
    let fake = Arc::new(FakeLlm { nodes: 2, ..FakeLlm::default() });
    let (app, clock, _g) = app(kind, Some(&fake_llm(Arc::clone(&fake)).await)).await;
    let done = new_session(&app, "iPhone").await;
    let all: Vec<(u32, String, Value)> = events_after(&app, &done, None).await.collect().await;
    let last = all.last().unwrap().0;
    let reconnect = |after: u32| {
        let mut req = lambda_http::http::Request::builder()
            .method("GET")
            .uri(format!("/api/research/{done}/stream"))
            .body(Body::Empty)
            .unwrap();
        req.headers_mut().insert("last-event-id", after.to_string().parse().unwrap());
        shared::http::invoke_streamed(research::routes(Arc::clone(&app)), integration::as_backend(req))
    };
    assert_eq!(reconnect(last).await.status(), 204, "nothing after the end");
    let (status, r) = json_of(reconnect(last + 1).await).await;
    assert_eq!((status, r["error"]["code"].as_str()), (400, Some("invalid_last_event_id")));
    let (status, r) = json_of(request(&app, "DELETE", &format!("/api/research/{done}"), "").await).await;
    assert_eq!((status, r["cancelled"].as_bool()), (200, Some(false)), "an ended research is not cancelled");

    let requests = fake.requests.load(Ordering::SeqCst);
    let early = new_session(&app, "iPhone").await;
    let (status, _) = json_of(request(&app, "DELETE", &format!("/api/research/{early}"), "").await).await;
    assert_eq!(status, 202);
    // Issue 73: a repeated cancel of a research not begun answers the same and writes nothing.
    let cancel = || async { app.runs.records.get(&format!("SESSION#{early}"), "CANCEL", 0).await.unwrap().unwrap() };
    let first = cancel().await;
    clock.advance(chrono::Duration::seconds(5));
    let (status, _) = json_of(request(&app, "DELETE", &format!("/api/research/{early}"), "").await).await;
    assert_eq!(status, 202);
    assert_eq!(cancel().await, first, "the CANCEL record was written again");
    let got: Vec<(u32, String, Value)> = events_after(&app, &early, None).await.collect().await;
    assert_eq!(got.iter().map(|(id, n, _)| (*id, n.as_str())).collect::<Vec<_>>(), [(1, "cancelled")]);
    assert_eq!(fake.requests.load(Ordering::SeqCst), requests, "a research cancelled before it started never ran");

    let dead = new_session(&app, "iPhone").await;
    let now = app.runs.clock.now();
    assert!(sessions::claim_run(&*app.runs.records, &dead, Duration::from_secs(60), now).await.unwrap());
    let progress = shared::timeline::Event::Progress { phase: "skeleton", message: "m", percent: 0 };
    sessions::log(&*app.runs.records, &dead, 1, &progress, now).await.unwrap();
    let (_, r) = json_of(request(&app, "GET", &format!("/api/research/{dead}"), "").await).await;
    assert_eq!(r["status"], "running", "inside its deadline");
    clock.advance(chrono::Duration::seconds(91));
    let (_, r) = json_of(request(&app, "GET", &format!("/api/research/{dead}"), "").await).await;
    assert_eq!(r["status"], "failed", "past its deadline with no end: {r}");
    let got: Vec<(u32, String, Value)> = events_after(&app, &dead, Some(1)).await.collect().await;
    assert_eq!(got.iter().map(|(id, n, _)| (*id, n.as_str())).collect::<Vec<_>>(), [(2, "error")]);
}

// Given unknown or expired sessions and bad input, then JSON errors; a session's stream may be
// opened again (it follows the same run).
async fn sessions_expire_and_bad_input_is_refused(kind: StoreKind) {
    let (app, clock, _g) = app(kind, None).await;
    let (status, r) =
        json_of(request(&app, "GET", "/api/research/3f1d2c4e-0000-4000-8000-000000000000/stream", "").await).await;
    assert_eq!((status, r["error"]["code"].as_str()), (404, Some("not_found")));
    let (status, _) = json_of(request(&app, "GET", "/api/research/not-a-session/stream", "").await).await;
    assert_eq!(status, 404);
    let session = new_session(&app, "iPhone").await;
    let first: Vec<_> = events(&app, &session).await.collect().await;
    let second: Vec<_> = events(&app, &session).await.collect().await;
    assert_eq!(first, second, "a second stream replays the one run");
    let mut bad = lambda_http::http::Request::builder()
        .method("GET")
        .uri(format!("/api/research/{session}/stream"))
        .body(Body::Empty)
        .unwrap();
    bad.headers_mut().insert("last-event-id", "seven".parse().unwrap());
    let (status, r) =
        json_of(shared::http::invoke_streamed(research::routes(Arc::clone(&app)), integration::as_backend(bad)).await)
            .await;
    assert_eq!((status, r["error"]["code"].as_str()), (400, Some("invalid_last_event_id")));
    let stale = new_session(&app, "iPhone").await;
    clock.advance(chrono::Duration::hours(25));
    let (status, _) = json_of(request(&app, "GET", &format!("/api/research/{stale}/stream"), "").await).await;
    assert_eq!(status, 404, "expired after a day");
    for (body, code) in [
        (json!({}).to_string(), "missing_topic"),
        (json!({"topic": "x", "language": "fr"}).to_string(), "unknown_language"),
        (json!({"topic": "x", "lang": "zh"}).to_string(), "unknown_field"),
        (json!({"topic": "x", "background": "yes"}).to_string(), "invalid_background"),
        ("{".to_owned(), "malformed_json"),
    ] {
        let (status, r) = json_of(request(&app, "POST", "/api/research", &body).await).await;
        assert_eq!((status, r["error"]["code"].as_str()), (400, Some(code)), "{body}");
    }
    let (status, _) = json_of(request(&app, "GET", "/api/research", "").await).await;
    assert_eq!(status, 405);
}

/// Status and JSON of `req` through the research function.
async fn send(app: &Arc<research::App>, req: lambda_http::Request) -> (u16, Value) {
    json_of(shared::http::invoke_streamed(research::routes(Arc::clone(app)), req).await).await
}

/// `GET` of a `stream_url` as a browser's EventSource sends it: no header, the token in the query
/// (as Lambda parses `rawQueryString`).
fn open_link(stream_url: &str) -> lambda_http::Request {
    use lambda_http::RequestExt;
    let url = url::Url::parse(&format!("https://door.example/{stream_url}")).unwrap();
    let query: std::collections::HashMap<String, String> = url.query_pairs().into_owned().collect();
    bare("GET", url.path(), "").with_query_string_parameters(query)
}

// Issue 40: a user (their verified token) and the backend (SigV4) each own what they create,
// and see nothing of another's (404), even a user whose id reads like the backend's principal.
// A session's stream_url opens its stream with no header, and nothing else: not another
// session's stream, not its status, not a cancel; it expires after 30 minutes and the status
// gives a fresh one. A user's researches, status reads and their links' opens count against
// their quota, and a research of a user whose budget an operator set to 0 is not begun.
async fn each_caller_owns_their_sessions_and_a_link_opens_one_stream(kind: StoreKind) {
    let (app, clock, _g) = app_with(kind, None, None, &[("USER_QUOTA_PER_MINUTE", "6")]).await;
    let topic = json!({"topic": "iPhone"}).to_string();
    let (status, mine) = send(&app, integration::as_user(bare("POST", "/api/research", &topic), "u-1")).await;
    assert_eq!(status, 200, "{mine}");
    let (mine_id, link) = (mine["session_id"].as_str().unwrap(), mine["stream_url"].as_str().unwrap());
    assert!(link.starts_with(&format!("api/research/{mine_id}/stream?token=")), "through the HTTP API a path: {link}");
    let (status, theirs) = send(&app, integration::as_backend(bare("POST", "/api/research", &topic))).await;
    assert_eq!(status, 200, "{theirs}");
    let theirs_id = theirs["session_id"].as_str().unwrap();

    // Each sees only their own.
    let status_of = |id: &str| format!("/api/research/{id}");
    assert_eq!(send(&app, integration::as_backend(bare("GET", &status_of(mine_id), ""))).await.0, 404);
    assert_eq!(send(&app, integration::as_user(bare("GET", &status_of(theirs_id), ""), "u-1")).await.0, 404);
    assert_eq!(send(&app, integration::as_user(bare("DELETE", &status_of(mine_id), ""), "u-2")).await.0, 404);
    let lookalike = integration::as_user(bare("GET", &status_of(theirs_id), ""), "123456789012:role/activity-backend");
    assert_eq!(send(&app, lookalike).await.0, 404, "a user named like the backend's principal");
    let (status, r) = send(&app, integration::as_user(bare("GET", &status_of(mine_id), ""), "u-1")).await;
    assert_eq!((status, r["status"].as_str()), (200, Some("waiting")), "{r}");

    // The link opens this stream alone, with no header, to the end.
    let response = shared::http::invoke_streamed(research::routes(Arc::clone(&app)), open_link(link)).await;
    assert_eq!(response.status(), 200, "{:?}", response.headers());
    let names: Vec<String> = response
        .into_body()
        .into_data_stream()
        .eventsource()
        .map(|e| e.expect("well-formed SSE").event)
        .collect()
        .await;
    assert_eq!(names.last().map(String::as_str), Some("complete"), "{names:?}");
    let other_session = link.replace(mine_id, theirs_id);
    let (status, r) = send(&app, open_link(&other_session)).await;
    assert_eq!((status, r["error"]["code"].as_str()), (401, Some("unauthenticated")), "another session: {r}");
    let token_only = link.replace("/stream?", "?");
    assert_eq!(send(&app, open_link(&token_only)).await.0, 401, "the link does not read the status");
    let mut cancel = open_link(&token_only);
    *cancel.method_mut() = lambda_http::http::Method::DELETE;
    assert_eq!(send(&app, cancel).await.0, 401, "nor cancel");
    assert_eq!(send(&app, open_link(&format!("{link}x"))).await.0, 401, "a changed token");

    // It expires; the status gives a fresh one.
    clock.advance(chrono::Duration::minutes(31));
    let (status, r) = send(&app, open_link(link)).await;
    assert_eq!(status, 401, "expired: {r}");
    let (status, r) = send(&app, integration::as_user(bare("GET", &status_of(mine_id), ""), "u-1")).await;
    assert_eq!((status, r["status"].as_str()), (200, Some("complete")), "{r}");
    let fresh = r["stream_url"].as_str().unwrap();
    assert_ne!(fresh, link);
    let reopen = || {
        let mut reopened = open_link(fresh);
        reopened.headers_mut().insert("last-event-id", "1".parse().unwrap());
        shared::http::invoke_streamed(research::routes(Arc::clone(&app)), reopened)
    };
    assert_eq!(reopen().await.status(), 200, "the fresh link resumes");

    // Opens through a link count against the session owner's quota (6 a minute here), whoever
    // holds it (issue 53: a leaked link spends its owner's requests, not a quota of its own): u-1
    // read its status and resumed once this minute, so four opens more are let in, the fifth
    // refused, and u-1's own next research too; another user's quota is their own. An open
    // refused for what it asks (an event past the stream's last) counts too: it is taken before
    // anything is read.
    for open in 0..3 {
        assert_eq!(reopen().await.status(), 200, "open {open}");
    }
    let mut past = open_link(fresh);
    past.headers_mut().insert("last-event-id", "999".parse().unwrap());
    let (status, r) = json_of(shared::http::invoke_streamed(research::routes(Arc::clone(&app)), past).await).await;
    assert_eq!((status, r["error"]["code"].as_str()), (400, Some("invalid_last_event_id")), "{r}");
    let (status, r) = json_of(reopen().await).await;
    assert_eq!((status, r["error"]["code"].as_str()), (429, Some("quota_exceeded")), "{r}");
    let (status, r) = send(&app, integration::as_user(bare("POST", "/api/research", &topic), "u-1")).await;
    assert_eq!((status, r["error"]["code"].as_str()), (429, Some("quota_exceeded")), "{r}");
    let (status, _) = send(&app, integration::as_user(bare("POST", "/api/research", &topic), "u-2")).await;
    assert_eq!(status, 200, "another user's quota is their own");

    // A user an operator stopped (budget 0) begins no research.
    shared::costs::budget::set_user_cap(&*app.runs.records, "ops", "u-3", br#"{"usdPerDay": 0}"#, clock.now())
        .await
        .unwrap();
    let (status, r) = send(&app, integration::as_user(bare("POST", "/api/research", &topic), "u-3")).await;
    assert_eq!((status, r["error"]["code"].as_str()), (429, Some("user_budget_exceeded")), "{r}");

    // Nobody else gets in.
    assert_eq!(send(&app, bare("POST", "/api/research", &topic)).await.0, 401);
    assert_eq!(send(&app, bare("GET", &format!("{}/stream", status_of(mine_id)), "")).await.0, 401);
}

/// A research of `user` (`background` as sent), its session id.
async fn users_session(app: &Arc<research::App>, user: &str, background: Option<bool>) -> String {
    let mut body = json!({"topic": "iPhone"});
    if let Some(b) = background {
        body["background"] = json!(b);
    }
    let (status, r) = send(app, integration::as_user(bare("POST", "/api/research", &body.to_string()), user)).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["background"], json!(background.unwrap_or(false)), "a user's research stops unread unless asked");
    r["session_id"].as_str().unwrap().to_owned()
}

/// `user`'s stream of `session` (resuming after `last`, if given): the response as it comes.
async fn users_stream(
    app: &Arc<research::App>,
    session: &str,
    user: &str,
    last: Option<u32>,
) -> shared::http::Response {
    let mut req = bare("GET", &format!("/api/research/{session}/stream"), "");
    if let Some(last) = last {
        req.headers_mut().insert("last-event-id", last.to_string().parse().unwrap());
    }
    shared::http::invoke_streamed(research::routes(Arc::clone(app)), integration::as_user(req, user)).await
}

/// The events of an open stream as they come: `(id, event)`.
fn sse(response: shared::http::Response) -> std::pin::Pin<Box<dyn futures::Stream<Item = (u32, String)> + Send>> {
    assert_eq!(response.status(), 200);
    Box::pin(
        response
            .into_body()
            .into_data_stream()
            .eventsource()
            .map(|e| e.expect("well-formed SSE"))
            .map(|e| (e.id.parse().expect("an id"), e.event)),
    )
}

/// `user`'s stream of `session` once a place is free (a stream that ended gives its places back
/// on a task of its own, a moment later).
async fn users_stream_when_free(app: &Arc<research::App>, session: &str, user: &str) -> shared::http::Response {
    let started = Instant::now();
    loop {
        let response = users_stream(app, session, user, None).await;
        if response.status() != 429 || started.elapsed() > Duration::from_secs(5) {
            return response;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The 429 of a refused stream: its code and Retry-After.
async fn refused(response: shared::http::Response) -> (String, u64) {
    let retry = response.headers().get("retry-after").map(|v| v.to_str().unwrap().parse().unwrap());
    let (status, r) = json_of(response).await;
    assert_eq!(status, 429, "{r}");
    (r["error"]["code"].as_str().unwrap().to_owned(), retry.expect("Retry-After"))
}

// Issue 53 item 2: open streams are capped, per research (2 streams here), per user (5: their
// streams and runs, a run holding a place of its own) and for all users together (7, below the
// function's reserved concurrency so the backend always finds an execution), each refusal a 429
// `too_many_streams` with Retry-After. A stream that resumes (Last-Event-ID: a reconnect, a page
// reload) takes the places of its research's oldest stream open 30 s or more, which ends; a
// stream whose client leaves gives its places back.
async fn open_streams_are_capped_and_a_resume_takes_the_place_it_resumes(kind: StoreKind) {
    let fake = Arc::new(FakeLlm { nodes: 12, delay: Some(|n| 4000 + 50 * n as u64), ..FakeLlm::default() });
    let env = [
        ("RESEARCH_SESSION_READERS", "2"),
        ("RESEARCH_USER_STREAMS", "5"),
        ("RESEARCH_USERS_STREAMS", "7"),
        ("USER_QUOTA_PER_MINUTE", "100"),
    ];
    let (app, clock, _g) = app_with(kind, Some(&fake_llm(Arc::clone(&fake)).await), None, &env).await;
    let one = users_session(&app, "u-1", None).await;
    // The first stream starts the run: two of u-1's places (the stream's and the run's).
    let mut first = sse(users_stream(&app, &one, "u-1", None).await);
    assert_eq!(first.next().await.map(|(id, _)| id), Some(1));
    let mut second = sse(users_stream(&app, &one, "u-1", None).await);
    assert_eq!(second.next().await.map(|(id, _)| id), Some(1));
    let (code, retry) = refused(users_stream(&app, &one, "u-1", None).await).await;
    assert_eq!(code, "too_many_streams");
    assert!((1..=105).contains(&retry), "Retry-After {retry}");
    // A resume never knocks off a stream that just opened (two tabs would trade places); once
    // the streams have been open 30 s, it takes the oldest one's places (the stream it resumes,
    // whose client may have left unseen), which ends without an ending event; the run goes on.
    assert_eq!(refused(users_stream(&app, &one, "u-1", Some(1)).await).await.0, "too_many_streams");
    clock.advance(chrono::Duration::seconds(31));
    let mut resumed = sse(users_stream(&app, &one, "u-1", Some(1)).await);
    let ended = tokio::time::timeout(Duration::from_secs(8), async {
        let mut names = Vec::new();
        while let Some((_, name)) = first.next().await {
            names.push(name);
        }
        names
    })
    .await
    .expect("the stream whose places were taken ends");
    assert!(!ended.iter().any(|n| n == "complete" || n == "cancelled"), "{ended:?}");
    assert_eq!(resumed.next().await.map(|(id, _)| id), Some(2), "the resume goes on where it was");

    // Per user: a second research of u-1 takes their fourth and fifth places, a third is refused.
    let two = users_session(&app, "u-1", None).await;
    let _two = sse(users_stream_when_free(&app, &two, "u-1").await);
    let three = users_session(&app, "u-1", None).await;
    assert_eq!(refused(users_stream(&app, &three, "u-1", None).await).await.0, "too_many_streams");
    // All users: u-2 takes the sixth and seventh places, u-3 is refused; the backend is not
    // counted.
    let four = users_session(&app, "u-2", None).await;
    let _four = sse(users_stream_when_free(&app, &four, "u-2").await);
    let five = users_session(&app, "u-3", None).await;
    assert_eq!(refused(users_stream(&app, &five, "u-3", None).await).await.0, "too_many_streams");
    let backend = new_session(&app, "iPhone").await;
    let mut theirs = Box::pin(events_after(&app, &backend, None).await);
    assert!(theirs.next().await.is_some(), "the backend's stream opens while users' places are full");

    // Streams whose client leaves give their places back: u-1 closes two, and opens another.
    drop((second, resumed));
    let response = users_stream_when_free(&app, &three, "u-1").await;
    assert_eq!(response.status(), 200, "places freed when their streams' clients left");
}

/// Every frame of a stream as it comes: `(id line, event, data)`, an event without an `id:`
/// line having `None`.
async fn frames(response: shared::http::Response) -> Vec<(Option<u32>, String, Value)> {
    assert_eq!(response.status(), 200);
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    text.split("\n\n")
        .filter_map(|frame| {
            let field = |name: &str| frame.lines().find_map(|l| l.strip_prefix(name)).map(str::trim);
            let event = field("event:")?.to_owned();
            let data = serde_json::from_str(field("data:").unwrap_or("null")).unwrap();
            Some((field("id:").map(|id| id.parse().unwrap()), event, data))
        })
        .collect()
}

// Issue 62 item 2: a reader that stays connected sees every event to `complete`, however long
// the research runs past RESEARCH_READER_SECS (1 here; before: every stream ended after it with
// no ending event, so curl saw only the start). Its places are renewed while it reads: past the
// lease it first took (16 s on the store's clock), a second opener of the research still finds
// the one reader's place taken (before: expired, taken).
async fn a_connected_reader_sees_the_research_to_its_end_holding_its_place(kind: StoreKind) {
    // About 8 s: two waves of detail runs, of 3.6-3.9 s and 4.0-4.1 s.
    let fake = Arc::new(FakeLlm { nodes: 6, delay: Some(|n| 3500 + 100 * n as u64), ..FakeLlm::default() });
    let env = [("RESEARCH_READER_SECS", "1"), ("RESEARCH_SESSION_READERS", "1"), ("USER_QUOTA_PER_MINUTE", "100")];
    let (app, clock, _g) = app_with(kind, Some(&fake_llm(Arc::clone(&fake)).await), None, &env).await;
    let session = users_session(&app, "u-1", None).await;
    let started = Instant::now();
    let reader = tokio::spawn(frames(users_stream(&app, &session, "u-1", None).await));
    // Past half its lease on the store's clock, then past all of it once the reader renewed.
    tokio::time::sleep(Duration::from_millis(500)).await;
    clock.advance(chrono::Duration::seconds(12));
    tokio::time::sleep(Duration::from_millis(5600)).await;
    clock.advance(chrono::Duration::seconds(12));
    let (code, _) = refused(users_stream(&app, &session, "u-1", None).await).await;
    assert_eq!(code, "too_many_streams", "the reader's place, renewed, is still its own");
    let seen = reader.await.unwrap();
    assert!(started.elapsed() > Duration::from_secs(6), "the research outlived RESEARCH_READER_SECS many times");
    assert_eq!(seen.last().map(|(_, event, _)| event.as_str()), Some("complete"), "{seen:?}");
    let ids: Vec<Option<u32>> = seen.iter().map(|(id, _, _)| *id).collect();
    assert_eq!(ids, (1..=seen.len() as u32).map(Some).collect::<Vec<_>>(), "one stream, every event once");
}

// Issue 62 item 2: a stream the function's own time limit cuts before the research ends (a
// Lambda deadline 2.6 s away, 2 s kept back) ends with a `resume` event, with no id, naming the
// Last-Event-ID to reconnect with; a client that does so, stream after stream, misses nothing.
// (The run was started by a first stream without a deadline, so that the run has its time.)
async fn a_stream_cut_by_the_functions_time_limit_says_how_to_resume(kind: StoreKind) {
    use lambda_http::RequestExt;
    let fake = Arc::new(FakeLlm { nodes: 6, delay: Some(|n| 300 + 100 * n as u64), ..FakeLlm::default() });
    let env = [("USER_QUOTA_PER_MINUTE", "100")];
    let (app, _clock, _g) = app_with(kind, Some(&fake_llm(Arc::clone(&fake)).await), None, &env).await;
    let session = users_session(&app, "u-1", None).await;
    let mut first = sse(users_stream(&app, &session, "u-1", None).await);
    let (id, event) = first.next().await.unwrap();
    drop(first);
    let (mut seen, mut last, mut streams) = (vec![(Some(id), event, Value::Null)], id, 0);
    loop {
        assert!(streams < 40, "{seen:?}");
        let mut req = bare("GET", &format!("/api/research/{session}/stream"), "");
        req.headers_mut().insert("last-event-id", last.to_string().parse().unwrap());
        let mut context = lambda_http::Context::default();
        context.deadline = (Utc::now() + chrono::Duration::milliseconds(2600)).timestamp_millis() as u64;
        let req = integration::as_user(req.with_lambda_context(context), "u-1");
        let started = Instant::now();
        let response = shared::http::invoke_streamed(research::routes(Arc::clone(&app)), req).await;
        if response.status() == 204 {
            break;
        }
        let frames = frames(response).await;
        assert!(
            started.elapsed() < Duration::from_millis(2600),
            "a stream outlived its deadline: {:?}",
            started.elapsed()
        );
        streams += 1;
        let Some((None, event, data)) = frames.last().cloned() else {
            seen.extend(frames);
            break;
        };
        assert_eq!(event, "resume", "{frames:?}");
        seen.extend(frames.into_iter().filter(|(id, _, _)| id.is_some()));
        let named = data["last_event_id"].as_u64().unwrap() as u32;
        assert_eq!(Some(named), seen.last().map_or(Some(last), |(id, _, _)| *id), "the last id it sent: {data}");
        assert!(data["message"].as_str().unwrap().contains(&format!("Last-Event-ID: {named}")), "{data}");
        last = named;
    }
    assert!(streams >= 2, "the run outlived one stream");
    assert_eq!(seen.last().map(|(_, event, _)| event.as_str()), Some("complete"), "{seen:?}");
    let ids: Vec<Option<u32>> = seen.iter().map(|(id, _, _)| *id).collect();
    assert_eq!(ids, (1..=seen.len() as u32).map(Some).collect::<Vec<_>>(), "consecutive across {streams} streams");
}

// Issue 53 item 3: a research nobody reads (no stream, no status) for RESEARCH_ABANDON_AFTER_S
// (120) stops itself, its streams ending with `cancelled` (`abandoned`), and its model calls stop
// (seed 003: a disconnect stops it); one started with `"background": true` runs on unread, as do
// the backend's (background by default, since it reads them later).
async fn an_unread_research_stops_itself_unless_in_the_background(kind: StoreKind) {
    use shared::timeline::sessions;
    let fake = Arc::new(FakeLlm { nodes: 12, delay: Some(|n| 300 + 50 * n as u64), ..FakeLlm::default() });
    let env = [("USER_QUOTA_PER_MINUTE", "100")];
    let (app, clock, _g) = app_with(kind, Some(&fake_llm(Arc::clone(&fake)).await), None, &env).await;
    let ending = |session: String| {
        let records = Arc::clone(&app.runs.records);
        let clock = Arc::clone(&clock);
        async move {
            let started = Instant::now();
            loop {
                let last = sessions::last(&*records, &session, clock.now()).await.unwrap();
                if let Some(last) = last.filter(|l| l.ends()) {
                    return (last.name, last.data);
                }
                assert!(started.elapsed() < Duration::from_secs(30), "{session} never ended");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    };
    // A user's research, read once: its client leaves and two minutes pass unread.
    let left = users_session(&app, "u-1", None).await;
    let mut stream = sse(users_stream(&app, &left, "u-1", None).await);
    assert!(stream.next().await.is_some());
    drop(stream);
    clock.advance(chrono::Duration::seconds(121));
    let (name, data) = ending(left).await;
    assert_eq!((name.as_str(), &data["abandoned"]), ("cancelled", &json!(true)), "{data}");
    let requests = fake.requests.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(fake.requests.load(Ordering::SeqCst), requests, "its model calls stopped");
    assert!(fake.finished.lock().unwrap().len() < 12, "it stopped before its end");

    // In the background (asked, or the backend's by default), the same runs to its end.
    let kept = users_session(&app, "u-1", Some(true)).await;
    let (status, r) =
        json_of(request(&app, "POST", "/api/research", &json!({"topic": "iPhone"}).to_string()).await).await;
    assert_eq!((status, &r["background"]), (200, &json!(true)), "the backend's: {r}");
    let backend = r["session_id"].as_str().unwrap().to_owned();
    let mut theirs = Box::pin(events_after(&app, &backend, None).await);
    assert!(theirs.next().await.is_some());
    let mut mine = sse(users_stream(&app, &kept, "u-1", None).await);
    assert!(mine.next().await.is_some());
    drop((theirs, mine));
    clock.advance(chrono::Duration::seconds(121));
    for session in [kept, backend] {
        assert_eq!(ending(session).await.0, "complete");
    }
}

on_both_stores!(
    each_caller_owns_their_sessions_and_a_link_opens_one_stream,
    open_streams_are_capped_and_a_resume_takes_the_place_it_resumes,
    a_connected_reader_sees_the_research_to_its_end_holding_its_place,
    a_stream_cut_by_the_functions_time_limit_says_how_to_resume,
    an_unread_research_stops_itself_unless_in_the_background,
    mock_mode_streams_the_whole_flow_in_order,
    detail_runs_are_bounded_and_delivered_in_completion_order,
    the_search_tool_gives_five_results_with_their_text,
    a_failing_node_is_skipped_and_the_rest_complete,
    the_research_ends_by_its_deadline,
    a_client_that_leaves_misses_nothing_when_it_reconnects,
    the_owner_cancels_a_research_and_billing_stops,
    the_status_and_a_long_replay,
    every_stream_ends,
    sessions_expire_and_bad_input_is_refused,
);
