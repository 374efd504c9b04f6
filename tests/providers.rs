//! Tavily, the provider failover chain with its circuit breaker, and the `search_web` tool,
//! against fake Perplexity and Tavily servers on 127.0.0.1.

use std::sync::Arc;
use std::time::{Duration, Instant};

use integration::{Harness, Setup, StoreKind, TAVILY_KEY, on_both_stores, perplexity};
use serde_json::{Value, json};
use shared::core::clock::Clock;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, ResponseTemplate};

fn tavily_results() -> Value {
    json!({
        "query": "q",
        "answer": "Tavily's short answer.",
        "results": [
            {"title": "First", "url": "https://one.example.com/a", "content": "one", "score": 0.9},
            {"title": "Second", "url": "https://two.example.com/b#x", "content": "two", "score": 0.8},
            {"title": "Bad", "url": "javascript:alert(1)", "content": "bad", "score": 0.7},
            {"title": "Fourth", "url": "https://four.example.com/d", "content": "four", "score": 0.6}
        ],
        "images": [],
        "response_time": 0.4,
        "usage": {"credits": 1}
    })
}

async fn tavily_answers(h: &Harness, status: u16, body: Value) {
    Mock::given(method("POST"))
        .and(path("/search"))
        .respond_with(ResponseTemplate::new(status).set_body_json(body))
        .mount(h.tavily())
        .await;
}

fn only_tavily() -> Setup<'static> {
    Setup { tavily: true, ..Setup::default() }
}

// Given only Tavily, when searching, then its wire format is spoken and its results become
// clean, titled sources, accounted per credit.
async fn tavily_speaks_its_wire_format_and_feeds_the_citation_pipeline(kind: StoreKind) {
    let h = Harness::with(kind, only_tavily()).await;
    Mock::given(method("POST"))
        .and(path("/search"))
        .and(header("authorization", format!("Bearer {TAVILY_KEY}").as_str()))
        .and(header("content-type", "application/json"))
        .respond_with(ResponseTemplate::new(200).set_body_json(tavily_results()))
        .expect(2)
        .mount(h.tavily())
        .await;
    let (status, r) =
        h.post("/search", json!({"query": "coffee", "recency": "week", "domains": ["-spam.example.com"]})).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!((r["provider"].as_str(), r["mock"].as_bool()), (Some("tavily"), Some(false)));
    assert_eq!(
        r["citations"],
        json!(["https://one.example.com/a", "https://two.example.com/b", "https://four.example.com/d"])
    );
    assert_eq!(r["sources"][1]["title"], "Second");
    assert!(r["content"].as_str().unwrap().starts_with("Tavily's short answer."));
    let sent: Value = serde_json::from_slice(&h.tavily_calls().await[0].body).unwrap();
    assert_eq!(sent["query"], "coffee");
    assert_eq!(sent["time_range"], "week");
    assert_eq!(sent["exclude_domains"], json!(["spam.example.com"]));
    assert_eq!(sent["search_depth"], "basic");
    let costs = h.costs().await;
    assert_eq!(costs.len(), 1);
    assert_eq!((costs[0].provider.as_str(), costs[0].model.as_str(), costs[0].credits), ("tavily", "basic", 1));
    assert!((costs[0].cost_usd - 0.008).abs() < 1e-12);
    // Publication dates travel as Tavily's own date range.
    h.post("/search", json!({"query": "coffee", "publishedAfter": "2026-01-05", "publishedBefore": "2026-02-28"}))
        .await;
    let sent: Value = serde_json::from_slice(&h.tavily_calls().await[1].body).unwrap();
    assert_eq!((sent["start_date"].as_str(), sent["end_date"].as_str()), (Some("2026-01-05"), Some("2026-02-28")));
    assert!(sent.get("time_range").is_none());
}

// Given each Tavily error class, then 401 and 432/433 are not retried, 429 honours
// Retry-After, and the reason names the class.
async fn tavily_error_classes_are_distinct(kind: StoreKind) {
    for (status, calls, needle) in [
        (401, 1, "rejected the API key"),
        (432, 1, "plan or spend limit"),
        (433, 1, "plan or spend limit"),
        (400, 1, "refused the request with HTTP 400"),
        (500, 4, "HTTP 500"),
    ] {
        let h = Harness::with(kind, only_tavily()).await;
        tavily_answers(&h, status, json!({"detail": {"error": format!("error {status}")}})).await;
        let (code, r) = h.post("/search", json!({"query": "coffee"})).await;
        assert_eq!(code, 200);
        assert_eq!(r["mock"], true, "{status}");
        assert!(r["fallbackReason"].as_str().unwrap().contains(needle), "{status}: {}", r["fallbackReason"]);
        assert_eq!(h.tavily_calls().await.len(), calls, "attempts on {status}");
    }
    let h = Harness::with(kind, only_tavily()).await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "1"))
        .up_to_n_times(1)
        .mount(h.tavily())
        .await;
    tavily_answers(&h, 200, tavily_results()).await;
    let started = Instant::now();
    let (_, r) = h.post("/search", json!({"query": "coffee"})).await;
    assert!(started.elapsed() >= Duration::from_millis(950));
    assert_eq!(r["provider"], "tavily");
}

// Given Perplexity failing, then Tavily answers; after BREAKER_FAILURES failed requests
// Perplexity is skipped until its cool-down has passed, then tried again; a new container
// skips it too, from the opening shared in the table.
async fn a_failing_provider_fails_over_and_is_skipped_during_its_cooldown(kind: StoreKind) {
    let env = [("BREAKER_FAILURES", "2"), ("BREAKER_COOLDOWN_SECS", "60"), ("CACHE_TTL_SECS", "0")];
    let h = Harness::with(kind, Setup { perplexity: true, tavily: true, env: &env, ..Setup::default() }).await;
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(503)).mount(h.upstream()).await;
    tavily_answers(&h, 200, tavily_results()).await;
    for i in 0..3 {
        let (_, r) = h.post("/search", json!({"query": format!("coffee {i}")})).await;
        assert_eq!(r["provider"], "tavily", "request {i}");
        assert_eq!(r["mock"], false);
    }
    assert_eq!(h.upstream_calls().await.len(), 8, "two requests of 4 attempts; the third skipped Perplexity");
    // Issue 43: a new container (its own breaker, the same table) skips Perplexity at once.
    let records = Some(std::sync::Arc::clone(&h.records));
    let fresh =
        Harness::with(kind, Setup { perplexity: true, tavily: true, env: &env, records, ..Setup::default() }).await;
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(503)).mount(fresh.upstream()).await;
    tavily_answers(&fresh, 200, tavily_results()).await;
    let (_, r) = fresh.post("/search", json!({"query": "coffee elsewhere"})).await;
    assert_eq!(r["provider"], "tavily", "{r}");
    assert_eq!(fresh.upstream_calls().await.len(), 0, "the opening was shared: no attempt paid again");
    h.clock.advance(chrono::Duration::seconds(61));
    h.post("/search", json!({"query": "coffee again"})).await;
    assert_eq!(h.upstream_calls().await.len(), 12, "after the cool-down Perplexity is tried again");
}

// Given a JSON-schema method and only Tavily, then no provider can answer: labelled mock data.
async fn structured_methods_skip_providers_that_cannot_answer_them(kind: StoreKind) {
    let h = Harness::with(kind, only_tavily()).await;
    let (_, r) = h.post("/search/trends", json!({"topic": "AI"})).await;
    assert_eq!(r["mock"], true);
    assert!(r["fallbackReason"].as_str().unwrap().starts_with("unsupported"));
    assert!(h.tavily_calls().await.is_empty());
}

// Given a Tavily key, then /tools lists search_web beside explore_nearby (served by
// rag-search); without one, search_web is neither listed nor routed.
async fn tools_are_listed_only_when_they_can_run(kind: StoreKind) {
    let names = |r: &serde_json::Value| -> Vec<String> {
        r["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap().to_owned()).collect()
    };
    let h = Harness::with(kind, only_tavily()).await;
    let (status, r) = h.send("GET", "/tools", "").await;
    assert_eq!(status, 200);
    assert_eq!(names(&r), ["explore_nearby", "search_web"]);
    let web = r["tools"].as_array().unwrap().iter().find(|t| t["function"]["name"] == "search_web").unwrap();
    let f = &web["function"];
    assert_eq!(web["type"].as_str(), Some("function"));
    assert_eq!(f["parameters"]["required"], json!(["query"]));
    assert!(!f["description"].as_str().unwrap().is_empty());

    let h = Harness::without_key(kind).await;
    let (_, r) = h.send("GET", "/tools", "").await;
    assert_eq!(names(&r), ["explore_nearby"]);
    let (status, r) = h.post("/tools/search_web", json!({"query": "x"})).await;
    assert_eq!((status, r["error"]["code"].as_str()), (404, Some("not_found")));
}

// Given search_web is called, then Tavily gets exactly seed 002's body and the model gets a
// JSON string of at most 3 {title, url, content}; on failure a JSON error string, HTTP 200.
async fn search_web_returns_a_model_ready_string(kind: StoreKind) {
    let h = Harness::with(kind, only_tavily()).await;
    tavily_answers(&h, 200, tavily_results()).await;
    let (status, r) = h.post("/tools/search_web", json!({"query": "最新的识字教学方法"})).await;
    assert_eq!(status, 200);
    let sent: Value = serde_json::from_slice(&h.tavily_calls().await[0].body).unwrap();
    assert_eq!(
        sent,
        json!({"query": "最新的识字教学方法", "search_depth": "basic", "max_results": 3, "include_answer": false,
               "include_raw_content": false, "include_images": false})
    );
    assert_eq!(
        r,
        json!([
            {"title": "First", "url": "https://one.example.com/a", "content": "one"},
            {"title": "Second", "url": "https://two.example.com/b", "content": "two"}
        ]),
        "at most 3 results; the invalid URL is dropped"
    );
    assert_eq!(h.costs().await.iter().filter(|c| c.provider == "tavily").count(), 1);
    // Its URLs are the request's stored sources.
    let body = json!({"query": "最新的识字教学方法"}).to_string();
    let (status, headers, again) = h.exchange("POST", "/tools/search_web", &body, Some("tool-call-1")).await;
    assert_eq!((status, &again), (200, &r));
    assert_eq!(headers.get("x-sources-stored").unwrap(), "true");
    let (_, stored) = h.send("GET", "/sources/tool-call-1", "").await;
    let urls: Vec<_> = stored["sources"].as_array().unwrap().iter().map(|s| s["url"].as_str().unwrap()).collect();
    assert_eq!(urls, ["https://one.example.com/a", "https://two.example.com/b"]);
    assert_eq!(stored["sources"][0]["title"], "First");
    // The same question again (spacing aside): answered from the cache, free, accounted.
    let (status, again) = h.post("/tools/search_web", json!({"query": "  最新的识字教学方法 "})).await;
    assert_eq!((status, &again), (200, &r));
    assert_eq!(h.tavily_calls().await.len(), 1, "a repeat makes no upstream call");
    let costs = h.costs().await;
    let hit = costs.iter().find(|c| c.cached).expect("the hit is accounted");
    assert_eq!((hit.cost_usd, hit.saved_usd, hit.agent.as_str()), (0.0, 0.008, "assistant"));
    // After the TTL it is asked again.
    h.clock.advance(chrono::Duration::seconds(3601));
    h.post("/tools/search_web", json!({"query": "最新的识字教学方法"})).await;
    assert_eq!(h.tavily_calls().await.len(), 2);

    let h = Harness::with(kind, only_tavily()).await;
    tavily_answers(&h, 432, json!({"detail": {"error": "plan limit"}})).await;
    let (status, r) = h.post("/tools/search_web", json!({"query": "x"})).await;
    assert_eq!(status, 200);
    assert_eq!(r["error"], "search_failed");
    assert!(r["message"].as_str().unwrap().contains("temporarily unavailable"));
    let (status, r) = h.post("/tools/search_web", json!({"q": "x"})).await;
    assert_eq!((status, r["error"]["code"].as_str()), (400, Some("unknown_field")), "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("expected `query` or `agent`"), "{r}");
    let (status, r) = h.post("/tools/search_web", json!({"agent": "a"})).await;
    assert_eq!((status, r["error"]["code"].as_str()), (400, Some("missing_query")));
    let (status, r) = h.post("/tools/search_web", json!({"query": "x", "agent": "a b"})).await;
    assert_eq!((status, r["error"]["code"].as_str()), (400, Some("invalid_agent")));
    let (status, r) = h.post("/tools/search_web", json!({"query": "x", "agent": "someone-else"})).await;
    assert_eq!((status, r["error"]["code"].as_str()), (400, Some("invalid_agent")), "not one of AGENTS");
}

// Issue 42, seed 002's app: a signed-in user calls search_web with their JWT (a mini-program
// cannot sign SigV4) and gets the model-ready string, billed to `assistant`, within their
// quota; bad input is a 400 that reaches no upstream and counts as one of the user's requests
// (issue 73: the quota is taken where the user is known, so a flood of malformed calls is
// limited too); no token, or a backend's signature, is a 401 that reaches no upstream.
async fn a_user_calls_search_web_with_their_token(kind: StoreKind) {
    let h = Harness::with(kind, Setup { env: &[("USER_QUOTA_PER_MINUTE", "4")], ..only_tavily() }).await;
    tavily_answers(&h, 200, tavily_results()).await;
    let post = |body: Value| integration::request("POST", "/me/tools/search_web", &body.to_string());
    let as_alice = |body: Value| integration::as_user(post(body), "u-alice");
    let (status, _, r) = h.exchange_as(as_alice(json!({"query": "最新的识字教学方法"})), None).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r[0]["url"], "https://one.example.com/a", "{r}");
    let costs = h.costs().await;
    assert_eq!(
        costs.iter().map(|c| (c.provider.as_str(), c.agent.as_str())).collect::<Vec<_>>(),
        [("tavily", "assistant")]
    );
    for (body, code) in
        [(json!({"query": "x", "agent": "research"}), "invalid_agent"), (json!({"q": "x"}), "unknown_field")]
    {
        let (status, _, r) = h.exchange_as(as_alice(body), None).await;
        assert_eq!((status, r["error"]["code"].as_str()), (400, Some(code)), "{r}");
    }
    let (status, _, r) = h.exchange_as(as_alice(json!({"query": "明天天气"})), None).await;
    assert_eq!(status, 200, "the fourth of four a minute (the two refused counted): {r}");
    let (status, _, r) = h.exchange_as(as_alice(json!({"query": "后天天气"})), None).await;
    assert_eq!((status, r["error"]["code"].as_str()), (429, Some("quota_exceeded")), "{r}");
    let (status, _, r) = h.exchange_as(integration::as_user(post(json!({"query": "后天天气"})), "u-bob"), None).await;
    assert_eq!(status, 200, "another user has a quota of their own: {r}");
    let calls = h.tavily_calls().await.len();
    let (anonymous, _, _) = h.exchange_as(post(json!({"query": "x"})), None).await;
    let (backend, _) = h.post("/me/tools/search_web", json!({"query": "x"})).await;
    assert_eq!((anonymous, backend), (401, 401), "a user's route needs a user's token");
    assert_eq!(h.tavily_calls().await.len(), calls, "a refused call reaches no upstream");
}

// Issue 41: one user's money is their own. Twenty calls of one user at once, against a daily cap
// of three calls' worth (a Tavily credit each, $0.008): three served, the rest 429
// `user_budget_exceeded` saying when it renews; another user still has all of theirs, and
// each answer says what is left; the cost report lists the day's top spenders.
async fn one_users_concurrent_calls_cross_their_dollar_cap_by_at_most_one(kind: StoreKind) {
    let env = [("USER_BUDGET_USD_PER_DAY", "0.024")];
    let h = Harness::with(kind, Setup { env: &env, ..only_tavily() }).await;
    tavily_answers(&h, 200, tavily_results()).await;
    let as_user = |user: &str, n: usize| {
        let body = json!({"query": format!("question {n}")}).to_string();
        integration::as_user(integration::request("POST", "/me/tools/search_web", &body), user)
    };
    let calls = (0..20).map(|n| h.exchange_as(as_user("u-alice", n), None));
    let answers = futures::future::join_all(calls).await;
    let served = answers.iter().filter(|(status, _, _)| *status == 200).count();
    // A hold is admitted while the day's total is under the cap: 0, 0.008 and 0.016 are; 0.024 is
    // not. Holds of a larger worst case would cross it by at most one.
    assert_eq!(served, 3, "three calls' worth, none over");
    for (status, headers, r) in answers.iter().filter(|(status, _, _)| *status != 200) {
        assert_eq!((*status, r["error"]["code"].as_str()), (429, Some("user_budget_exceeded")), "{r}");
        assert!(headers.get("retry-after").is_some(), "says when it renews");
    }
    assert_eq!(h.tavily_calls().await.len(), served, "a refused call reaches no upstream");
    let (status, headers, r) = h.exchange_as(as_user("u-bob", 99), None).await;
    assert_eq!(status, 200, "another user's budget is their own: {r}");
    let left: f64 = headers.get("x-user-budget-left-usd").unwrap().to_str().unwrap().parse().unwrap();
    assert!((left - 0.016).abs() < 1e-9, "{left}");
    // The operators' cost report lists the day's top spenders, most first.
    let report = cost_report::routes(Arc::new(cost_report::App { user_budget_usd: 0.024, ..h.cost_report() }));
    let get = lambda_http::http::Request::builder().uri("/cost-report").body(lambda_http::Body::Empty).unwrap();
    let (status, r) = integration::respond(shared::http::invoke(report.clone(), integration::as_backend(get)).await);
    assert_eq!(status, 200, "{r}");
    let top = &r["topSpenders"];
    assert_eq!(top["day"], h.clock.now().format("%Y-%m-%d").to_string());
    assert_eq!(top["users"], json!([{"user": "u-alice", "usd": 0.024}, {"user": "u-bob", "usd": 0.008}]), "{top}");
}

// Issue 41: an operator raises one user's daily budget without a deploy, and sets it back.
async fn an_operator_raises_one_users_budget_without_a_deploy(kind: StoreKind) {
    let env = [("USER_BUDGET_USD_PER_DAY", "0.008")];
    let h = Harness::with(kind, Setup { env: &env, ..only_tavily() }).await;
    tavily_answers(&h, 200, tavily_results()).await;
    let ask = |n: usize| {
        let body = json!({"query": format!("question {n}")}).to_string();
        integration::as_user(integration::request("POST", "/me/tools/search_web", &body), "auth0|alice")
    };
    assert_eq!(h.exchange_as(ask(1), None).await.0, 200);
    assert_eq!(h.exchange_as(ask(2), None).await.0, 429, "one call's worth a day");
    let operator = cost_report::routes(Arc::new(cost_report::App {
        user_budget_usd: 0.008,
        operators: vec!["123456789012:role/operator".into()],
        ..h.cost_report()
    }));
    let set = |body: &str, backend: bool| {
        let req = lambda_http::http::Request::builder()
            .method("PUT")
            .uri("/backend/users/auth0%7Calice/budget")
            .body(lambda_http::Body::Text(body.to_owned()))
            .unwrap();
        if backend {
            integration::with_authorizer(
                req,
                json!({"iam": {"accountId": "123456789012", "userArn": "arn:aws:sts::123456789012:assumed-role/operator/s"}}),
            )
        } else {
            integration::as_user(req, "auth0|alice")
        }
    };
    let (status, r) =
        integration::respond(shared::http::invoke(operator.clone(), set("{\"usdPerDay\": 0.024}", false)).await);
    assert_eq!(status, 403, "a user cannot raise their own: {r}");
    let by_backend = integration::as_backend(
        lambda_http::http::Request::builder()
            .method("PUT")
            .uri("/backend/users/auth0%7Calice/budget")
            .body(lambda_http::Body::Text("{\"usdPerDay\": 1000}".into()))
            .unwrap(),
    );
    let (status, r) = integration::respond(shared::http::invoke(operator.clone(), by_backend).await);
    assert_eq!(status, 403, "the app's backend signs too, but is not an operator: {r}");
    assert_eq!(h.exchange_as(ask(2), None).await.0, 429, "the refused requests changed nothing");
    let (status, r) = integration::respond(shared::http::invoke(operator.clone(), set("{}", true)).await);
    assert_eq!(
        (status, r["error"]["code"].as_str()),
        (400, Some("invalid_budget")),
        "an empty body resets nothing: {r}"
    );
    let (status, r) =
        integration::respond(shared::http::invoke(operator.clone(), set("{\"usdPerDay\": -1}", true)).await);
    assert_eq!((status, r["error"]["code"].as_str()), (400, Some("invalid_budget")), "{r}");
    let (status, r) =
        integration::respond(shared::http::invoke(operator.clone(), set("{\"usdPerDay\": 0.024}", true)).await);
    assert_eq!(status, 200, "{r}");
    assert_eq!((r["userId"].as_str(), r["usdPerDay"].as_f64()), (Some("auth0|alice"), Some(0.024)), "{r}");
    assert!((r["leftTodayUsd"].as_f64().unwrap() - 0.016).abs() < 1e-9, "{r}");
    assert_eq!(h.exchange_as(ask(3), None).await.0, 200, "the raised budget holds at once");
    let (status, r) =
        integration::respond(shared::http::invoke(operator.clone(), set("{\"usdPerDay\": null}", true)).await);
    assert_eq!((status, r["usdPerDay"].as_f64()), (200, Some(0.008)), "back to the default: {r}");
    assert_eq!(h.exchange_as(ask(4), None).await.0, 429);
    // 0 stops the user's paid calls, even the first of a day (on both stores).
    h.clock.advance(chrono::Duration::days(1));
    let (status, _) =
        integration::respond(shared::http::invoke(operator.clone(), set("{\"usdPerDay\": 0}", true)).await);
    assert_eq!(status, 200);
    assert_eq!(h.exchange_as(ask(5), None).await.0, 429, "a stopped user's first call of a new day");
}

// Issue 41: fair throttling. One user floods (30 requests at once, a quota of 5 a minute) while
// another sends 5: every one of the other user's requests is answered.
async fn one_user_flooding_never_turns_another_users_requests_away(kind: StoreKind) {
    let env = [("USER_QUOTA_PER_MINUTE", "5")];
    let h = Harness::with(kind, Setup { env: &env, ..only_tavily() }).await;
    tavily_answers(&h, 200, tavily_results()).await;
    let as_user = |user: &str, n: usize| {
        let body = json!({"query": format!("{user} question {n}")}).to_string();
        integration::as_user(integration::request("POST", "/me/tools/search_web", &body), user)
    };
    let flood = (0..30).map(|n| h.exchange_as(as_user("u-mallory", n), None));
    let fair = (0..5).map(|n| h.exchange_as(as_user("u-carol", n), None));
    let (flood, fair) = tokio::join!(futures::future::join_all(flood), futures::future::join_all(fair));
    assert!(fair.iter().all(|(status, _, _)| *status == 200), "{:?}", fair.iter().map(|a| a.0).collect::<Vec<_>>());
    assert_eq!(flood.iter().filter(|(status, _, _)| *status == 200).count(), 5, "the flood spends its own minute");
    assert!(
        flood
            .iter()
            .filter(|(status, _, _)| *status != 200)
            .all(|(s, _, r)| *s == 429 && r["error"]["code"] == "quota_exceeded")
    );
}

// Given Perplexity answers, then Tavily is never asked (the chain's order holds).
async fn the_first_provider_that_answers_wins(kind: StoreKind) {
    let h = Harness::with(kind, Setup { perplexity: true, tavily: true, ..Setup::default() }).await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(perplexity::answer(
            "ok [1]",
            json!([{"id": 1, "title": "X", "url": "https://example.com/x", "snippet": "x"}]),
            json!([]),
            perplexity::usage(1, 1, 1, None),
        )))
        .mount(h.upstream())
        .await;
    let (_, r) = h.post("/search", json!({"query": "coffee"})).await;
    assert_eq!(r["provider"], "perplexity");
    assert!(h.tavily_calls().await.is_empty());
}

// Given only Tavily, then the research node gets its results as topics.
async fn tavily_results_are_research_topics(kind: StoreKind) {
    let h = Harness::with(kind, only_tavily()).await;
    tavily_answers(&h, 200, tavily_results()).await;
    let (status, r) = h.post("/research", json!({"strategy": {"contentTheme": "coffee"}})).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!((r["provider"].as_str(), r["query"].as_str()), (Some("tavily"), Some("coffee")));
    let titles: Vec<_> = r["results"].as_array().unwrap().iter().map(|x| x["title"].as_str().unwrap()).collect();
    assert_eq!(titles, ["First", "Second", "Bad", "Fourth"]);
    assert_eq!(r["results"][0]["source"], "https://one.example.com/a");
    assert!(r["results"][2].get("source").is_none(), "an invalid URL is not passed on");
    assert_eq!(r["summary"], "Tavily's short answer.");
}

on_both_stores!(
    tavily_results_are_research_topics,
    tavily_speaks_its_wire_format_and_feeds_the_citation_pipeline,
    tavily_error_classes_are_distinct,
    a_failing_provider_fails_over_and_is_skipped_during_its_cooldown,
    structured_methods_skip_providers_that_cannot_answer_them,
    tools_are_listed_only_when_they_can_run,
    search_web_returns_a_model_ready_string,
    a_user_calls_search_web_with_their_token,
    one_users_concurrent_calls_cross_their_dollar_cap_by_at_most_one,
    one_user_flooding_never_turns_another_users_requests_away,
    an_operator_raises_one_users_budget_without_a_deploy,
    the_first_provider_that_answers_wins,
);
