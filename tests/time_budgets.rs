//! Time budgets that fit the front door (API Gateway gives up at 30 s): the search function's
//! upstream work — the wait for an identical request, attempts, `Retry-After` waits and the
//! failover — ends inside `SEARCH_BUDGET_MS` with a labelled answer, and every call, one cut
//! short included, is accounted. Fake upstreams on 127.0.0.1 that hang or ask to wait; budgets
//! of a second or two stand for the deployed 25 s. Each scenario runs on both record stores.

use std::time::{Duration, Instant};

use integration::perplexity::{self, AGENT_PATH};
use integration::{Harness, Setup, StoreKind, on_both_stores};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, ResponseTemplate};

/// How long a hung fake upstream takes (longer than any budget here).
const HANG: Duration = Duration::from_secs(5);
/// What the records and the answer may take after the budget (DynamoDB Local on a busy machine).
const SLACK: Duration = Duration::from_millis(900);

fn answer() -> Value {
    perplexity::answer(
        "Coffee demand grew [1].",
        json!([{"id": 1, "title": "Coffee report", "url": "https://example.com/coffee", "snippet": "s"}]),
        json!([]),
        perplexity::usage(100, 200, 1, None),
    )
}

fn tavily_answer() -> Value {
    json!({
        "query": "coffee", "answer": "Tavily says coffee.",
        "results": [{"title": "T", "url": "https://t.example.com/a", "content": "c", "score": 0.9}],
        "images": [], "response_time": 0.2, "usage": {"credits": 1}
    })
}

async fn perplexity_hangs(h: &Harness) {
    Mock::given(method("POST"))
        .and(path(AGENT_PATH))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer()).set_delay(HANG))
        .mount(h.upstream())
        .await;
}

fn env(budget_ms: &'static str) -> [(&'static str, &'static str); 2] {
    // The client's own timeout is longer than the budget: only the budget can end the call.
    [("SEARCH_BUDGET_MS", budget_ms), ("UPSTREAM_TIMEOUT_MS", "10000")]
}

// Given Perplexity hangs and Tavily answers, then Perplexity is cut at its share of the budget
// (the time left less a quarter kept for Tavily), Tavily answers inside the budget, and both
// calls are accounted: Perplexity's as failed, Tavily's as live.
async fn a_hung_provider_is_cut_at_its_share_and_the_next_answers_inside_the_budget(kind: StoreKind) {
    let env = env("2000");
    let h = Harness::with(kind, Setup { perplexity: true, tavily: true, env: &env, ..Setup::default() }).await;
    perplexity_hangs(&h).await;
    Mock::given(method("POST"))
        .and(path("/search"))
        .respond_with(ResponseTemplate::new(200).set_body_json(tavily_answer()))
        .mount(h.tavily())
        .await;
    let started = Instant::now();
    let (status, r) = h.post("/search", json!({"query": "coffee"})).await;
    let took = started.elapsed();
    assert_eq!(status, 200, "{r}");
    assert_eq!((r["provider"].as_str(), r["mock"].as_bool()), (Some("tavily"), Some(false)), "{r}");
    assert!(took >= Duration::from_millis(1500), "Perplexity had until 2 s - 0.5 s, took {took:?}");
    assert!(took < Duration::from_millis(2000) + SLACK, "took {took:?}");
    assert_eq!(h.upstream_calls().await.len(), 1, "no retry begun past its share");
    let costs = h.costs().await;
    let pplx = costs.iter().find(|c| c.provider == "perplexity").expect("the cut call is accounted");
    assert!(pplx.failed && pplx.cost_usd == 0.0, "{pplx:?}");
    assert!(costs.iter().any(|c| c.provider == "tavily" && !c.failed && !c.mock), "{costs:?}");
}

// Issue 42 (seed 000): an attempt ends by UPSTREAM_TIMEOUT_MS, inside the budget, so a first
// attempt that hangs leaves room for the retry, which answers live inside the budget.
async fn a_hung_first_attempt_leaves_room_for_a_retry_that_answers(kind: StoreKind) {
    let env = [("SEARCH_BUDGET_MS", "2000"), ("UPSTREAM_TIMEOUT_MS", "600")];
    let h = Harness::with(kind, Setup { perplexity: true, env: &env, ..Setup::default() }).await;
    Mock::given(method("POST"))
        .and(path(AGENT_PATH))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer()).set_delay(HANG))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(h.upstream())
        .await;
    Mock::given(method("POST"))
        .and(path(AGENT_PATH))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer()))
        .with_priority(2)
        .mount(h.upstream())
        .await;
    let started = Instant::now();
    let (status, r) = h.post("/search", json!({"query": "coffee"})).await;
    let took = started.elapsed();
    assert_eq!(status, 200, "{r}");
    assert_eq!((r["provider"].as_str(), r["mock"].as_bool()), (Some("perplexity"), Some(false)), "{r}");
    assert!(took >= Duration::from_millis(600) && took < Duration::from_millis(2000), "took {took:?}");
    assert_eq!(h.upstream_calls().await.len(), 2);
}

// Given template.yaml, then the search function's attempt timeout leaves room inside its budget
// for the first attempt, seed 000's first wait (1 s) and a whole second attempt.
#[test]
fn the_deployed_attempt_timeout_leaves_room_for_a_retry() {
    let template = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml")).unwrap();
    let value = |name: &str| -> u64 {
        let line = template.lines().find(|l| l.trim_start().starts_with(&format!("{name}:"))).unwrap();
        line.split('"').nth(1).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{line}"))
    };
    let (budget, attempt) = (value("SEARCH_BUDGET_MS"), value("UPSTREAM_TIMEOUT_MS"));
    assert!(2 * attempt + 1000 <= budget, "{attempt} ms attempts leave no room for a retry in {budget} ms");
}

// Given the only provider hangs, then the answer is labelled mock data saying the budget ran
// out, it comes inside the budget, and the cut call and the mock answer are both accounted.
async fn a_hung_only_provider_ends_in_labelled_mock_data_inside_the_budget(kind: StoreKind) {
    let env = env("1500");
    let h = Harness::with(kind, Setup { perplexity: true, env: &env, ..Setup::default() }).await;
    perplexity_hangs(&h).await;
    let started = Instant::now();
    let (status, r) = h.post("/search", json!({"query": "coffee"})).await;
    let took = started.elapsed();
    assert_eq!(status, 200);
    assert_eq!((r["mock"].as_bool(), r["dataSource"].as_str()), (Some(true), Some("模擬資料")));
    let reason = r["fallbackReason"].as_str().unwrap();
    assert!(reason.starts_with("upstream_failed: perplexity:") && reason.contains("time budget ran out"), "{reason}");
    assert!(took >= Duration::from_millis(1500) && took < Duration::from_millis(1500) + SLACK, "took {took:?}");
    let costs = h.costs().await;
    let request: Vec<_> = costs.iter().filter(|c| c.request_id == r["requestId"].as_str().unwrap()).collect();
    assert!(request.iter().any(|c| c.provider == "perplexity" && c.failed), "{request:?}");
    assert!(request.iter().any(|c| c.mock), "{request:?}");
}

// Given a 429 whose Retry-After is longer than the budget has left, then no wait begins: the
// answer comes at once (labelled, saying why) after one call.
async fn a_retry_after_past_the_budget_ends_the_retries_at_once(kind: StoreKind) {
    let env = env("1500");
    let h = Harness::with(kind, Setup { perplexity: true, env: &env, ..Setup::default() }).await;
    let limited = perplexity::Refusal::rate_limited();
    Mock::given(method("POST"))
        .respond_with(limited.response().insert_header("retry-after", "2"))
        .mount(h.upstream())
        .await;
    let started = Instant::now();
    let (_, r) = h.post("/search", json!({"query": "coffee"})).await;
    let took = started.elapsed();
    assert_eq!(r["mock"], true);
    assert!(r["fallbackReason"].as_str().unwrap().contains("rate limited"), "{}", r["fallbackReason"]);
    assert!(took < Duration::from_millis(1000), "waited {took:?} for a retry that could not fit");
    assert_eq!(h.upstream_calls().await.len(), 1);
}

// Given two identical requests while the provider hangs, then the one waiting for the other's
// answer waits only part of the budget, and both answers come inside it.
async fn waiting_for_an_identical_request_is_inside_the_budget(kind: StoreKind) {
    let env = env("1500");
    let h = Harness::with(kind, Setup { perplexity: true, env: &env, ..Setup::default() }).await;
    perplexity_hangs(&h).await;
    let started = Instant::now();
    let body = json!({"query": "coffee"}).to_string();
    let ((_, a), (_, b)) = tokio::join!(h.send("POST", "/search", &body), h.send("POST", "/search", &body));
    let took = started.elapsed();
    assert_eq!((a["mock"].as_bool(), b["mock"].as_bool()), (Some(true), Some(true)));
    assert!(took < Duration::from_millis(1500) + SLACK, "took {took:?}");
}

// Given the search_web tool while Tavily hangs, then the tool answers its error string inside
// the budget, and the cut call is accounted as failed.
async fn the_search_web_tool_ends_inside_the_budget(kind: StoreKind) {
    let env = env("1000");
    let h = Harness::with(kind, Setup { tavily: true, env: &env, ..Setup::default() }).await;
    Mock::given(method("POST"))
        .and(path("/search"))
        .respond_with(ResponseTemplate::new(200).set_body_json(tavily_answer()).set_delay(HANG))
        .mount(h.tavily())
        .await;
    let started = Instant::now();
    let (status, r) = h.post("/tools/search_web", json!({"query": "coffee"})).await;
    let took = started.elapsed();
    assert_eq!((status, r["error"].as_str()), (200, Some("search_failed")), "{r}");
    assert!(took >= Duration::from_millis(1000) && took < Duration::from_millis(1000) + SLACK, "took {took:?}");
    let costs = h.costs().await;
    assert!(costs.iter().any(|c| c.provider == "tavily" && c.failed), "{costs:?}");
}

on_both_stores!(
    a_hung_provider_is_cut_at_its_share_and_the_next_answers_inside_the_budget,
    a_hung_only_provider_ends_in_labelled_mock_data_inside_the_budget,
    a_hung_first_attempt_leaves_room_for_a_retry_that_answers,
    a_retry_after_past_the_budget_ends_the_retries_at_once,
    waiting_for_an_identical_request_is_inside_the_budget,
    the_search_web_tool_ends_inside_the_budget,
);
