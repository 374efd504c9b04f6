//! The `search` function end to end: real handler, real record store (SQLite file and
//! DynamoDB Local), a fake Perplexity on 127.0.0.1 speaking its Agent API and refusing what the
//! real one refuses, including its faults. Each scenario runs on both stores.

use std::time::{Duration, Instant};

use integration::perplexity::{self, AGENT_PATH, plain_answer};
use integration::{Harness, Setup, StoreKind, TEST_KEY, on_both_stores};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, ResponseTemplate};

fn ok(body: Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(body)
}

async fn answer_with(h: &Harness, body: Value) {
    Mock::given(method("POST")).and(path(AGENT_PATH)).respond_with(ok(body)).mount(h.upstream()).await;
}

/// The one request the fake Perplexity received.
async fn last_request(h: &Harness) -> Value {
    let calls = h.upstream_calls().await;
    serde_json::from_slice(&calls.last().expect("a request reached the fake Perplexity").body).unwrap()
}

// Given no PERPLEXITY_API_KEY, when an agent searches, then it gets predefined mock data with
// content and citations, labelled 模擬資料, and nothing is cached.
async fn no_key_answers_with_labelled_mock_data_and_never_caches_it(kind: StoreKind) {
    let h = Harness::without_key(kind).await;
    let (status, r) = h.post("/search", json!({"query": "台灣咖啡市場"})).await;
    assert_eq!(status, 200);
    assert_eq!(r["mock"], true);
    assert_eq!(r["dataSource"], "模擬資料");
    assert_eq!(r["provider"], "mock");
    assert!(r["fallbackReason"].as_str().unwrap().starts_with("no_api_key"));
    assert!(r["content"].as_str().unwrap().contains("模擬資料"));
    assert!(!r["citations"].as_array().unwrap().is_empty());
    assert_eq!(r["cached"], false);
    let (_, again) = h.post("/search", json!({"query": "台灣咖啡市場"})).await;
    assert_eq!(again["cached"], false, "mock results are never cached");
    // Its sources are stored like any other, and it cost nothing.
    let id = r["requestId"].as_str().unwrap();
    let (status, stored) = h.send("GET", &format!("/sources/{id}"), "").await;
    assert_eq!(status, 200);
    assert_eq!(stored["sources"], r["sources"]);
    let costs = h.costs().await;
    assert_eq!(costs.len(), 2);
    assert!(costs.iter().all(|c| c.mock && c.cost_usd == 0.0));
}

// Given a live answer whose citations overlap, repeat and include junk, when it is returned,
// then the sources are clean, titled, stored, rendered as 參考資料, and the call is accounted.
async fn a_live_answer_yields_clean_stored_sources_references_and_a_cost_record(kind: StoreKind) {
    let h = Harness::new(kind).await;
    // Markers name result ids: [1], [2] valid, [4] a credentialed URL, [7] nothing; [3] is
    // defined in the text; result 5 repeats result 1 with a tracking parameter; an annotation
    // repeats result 2 with a fragment and another is not http(s).
    let content = "台灣咖啡消費持續成長 [1][2]，連鎖品牌擴張 [3]，但仍有爭議 [7]，另見 [4]。\n\n[3]: https://news.example.org/chains.\n[2]: https://example.com/b#frag";
    answer_with(
        &h,
        perplexity::answer(
            content,
            json!([
                {"id": 1, "title": "咖啡產業報告", "url": "https://example.com/a", "snippet": "s", "date": "2025-01-01"},
                {"id": 2, "title": "B 報導", "url": "https://example.com/b", "snippet": "s"},
                {"id": 4, "title": "evil", "url": "http://user:pw@evil.example.com/", "snippet": "s"},
                {"id": 5, "title": "A again", "url": "https://example.com/a?utm_source=pplx", "snippet": "s"}
            ]),
            json!([
                {"type": "url_citation", "url": "https://example.com/b#top", "title": "B", "start_index": 0, "end_index": 5},
                {"type": "url_citation", "url": "ftp://example.com/x", "title": "x", "start_index": 6, "end_index": 9}
            ]),
            perplexity::usage(1200, 800, 2, Some(0.0171)),
        ),
    )
    .await;
    let (status, r) = h.post("/search", json!({"query": "台灣 咖啡 市場", "region": "TW", "agent": "strategy"})).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["mock"], false);
    assert_eq!(r["provider"], "perplexity");
    assert_eq!(r["dataSource"], "perplexity");
    assert_eq!(r["cached"], false);
    assert_eq!(
        r["citations"],
        json!(["https://example.com/a", "https://example.com/b", "https://news.example.org/chains"])
    );
    assert_eq!(r["sources"][0]["title"], "咖啡產業報告");
    assert_eq!(r["sources"][2]["title"], Value::Null);
    assert_eq!(
        r["references"],
        "## 參考資料\n\n1. [咖啡產業報告](https://example.com/a)\n2. [B 報導](https://example.com/b)\n3. [news.example.org](https://news.example.org/chains)\n"
    );
    assert_eq!(r["unbackedMarkers"], json!([4, 7]));
    let reasons: Vec<_> =
        r["rejectedCitations"].as_array().unwrap().iter().map(|x| x["reason"].as_str().unwrap()).collect();
    assert_eq!(reasons, ["contains credentials", "scheme is not http or https"]);
    assert_eq!(r["images"], json!([]), "the Agent API returns no images");
    assert_eq!(
        r["usage"],
        json!({"inputTokens": 1200, "outputTokens": 800, "searches": 2, "costUsd": 0.0171, "costSource": "provider"})
    );
    // The request: the Agent API's, filters inside the web_search tool.
    let sent = last_request(&h).await;
    assert_eq!(sent["model"], "perplexity/sonar");
    assert_eq!(sent["input"], "台灣 咖啡 市場\nTarget region: TW.");
    assert_eq!(sent["tools"][0]["type"], "web_search");
    assert_eq!(sent["tools"][0]["user_location"], json!({"country": "TW"}));
    assert_eq!(sent["tools"][0]["filters"]["search_recency_filter"], "month");
    assert_eq!(r["sourcesStored"], true);
    // Stored under the request id, no TTL.
    let id = r["requestId"].as_str().unwrap();
    let (status, stored) = h.send("GET", &format!("/sources/{id}"), "").await;
    assert_eq!(status, 200);
    assert_eq!(stored["sources"], r["sources"]);
    assert_eq!(stored["references"], r["references"]);
    // One cost record, attributed to the asking agent, with the provider's own figure.
    let costs = h.costs().await;
    assert_eq!(costs.len(), 1);
    let c = &costs[0];
    assert_eq!((c.agent.as_str(), c.provider.as_str(), c.model.as_str()), ("strategy", "perplexity", "sonar"));
    assert_eq!((c.input_tokens, c.output_tokens, c.searches, c.cost_usd), (1200, 800, 2, 0.0171));
    assert_eq!(c.request_id, id);
    assert_eq!(c.upstream_id.as_deref(), Some("resp_test_1"));
    assert!(!c.cached && !c.mock);
}

// Given Perplexity reports no cost, then the price table applies: seed 000's $0.001 per 1K
// tokens plus $0.005 per search, and $0.003 per 1K for `sonar-pro`, which is sent as the Agent
// API's pro preset and billed as `sonar-pro` whatever model the preset ran.
async fn without_a_reported_cost_the_price_table_applies(kind: StoreKind) {
    let h = Harness::new(kind).await;
    answer_with(
        &h,
        perplexity::answer(
            "x [1]",
            json!([{"id": 1, "title": "X", "url": "https://example.com/x", "snippet": "x"}]),
            json!([]),
            perplexity::usage(1000, 500, 1, None),
        ),
    )
    .await;
    let (_, r) = h.post("/search", json!({"query": "x"})).await;
    assert_eq!(r["usage"]["costSource"], "price_table");
    assert!((r["usage"]["costUsd"].as_f64().unwrap() - 0.0065).abs() < 1e-12, "{}", r["usage"]);
    assert_eq!(r["model"], "sonar");
    assert_eq!(last_request(&h).await["model"], "perplexity/sonar");
    let (_, r) = h.post("/search", json!({"query": "x", "model": "sonar-pro"})).await;
    assert_eq!(r["usage"]["costSource"], "price_table");
    assert!(
        (r["usage"]["costUsd"].as_f64().unwrap() - 0.0095).abs() < 1e-12,
        "1,500 tokens at 0.003 + a search: {}",
        r["usage"]
    );
    assert_eq!(r["model"], "sonar-pro", "billed as the tier asked for");
    let sent = last_request(&h).await;
    assert_eq!((sent["preset"].as_str(), sent.get("model")), (Some("low"), None), "{sent}");
}

// Given a cached answer, when the same request comes again, then no upstream is called and the
// answer says cached: true; the hit is recorded at no cost with what it saved.
async fn a_repeated_request_is_served_from_the_cache(kind: StoreKind) {
    let h = Harness::new(kind).await;
    Mock::given(method("POST")).respond_with(ok(plain_answer())).expect(1).mount(h.upstream()).await;
    let (_, first) = h.post("/search", json!({"query": "coffee", "region": "US"})).await;
    let (status, second) = h.post("/search", json!({"query": "  coffee ", "region": "us", "agent": "writing"})).await;
    assert_eq!(status, 200);
    assert_eq!(first["cached"], false);
    assert_eq!(second["cached"], true);
    assert_ne!(second["requestId"], first["requestId"]);
    assert_eq!(second["content"], first["content"]);
    assert_eq!(second["sources"], first["sources"]);
    assert_eq!(second["usage"]["costUsd"], 0.0);
    let id = second["requestId"].as_str().unwrap();
    let (_, stored) = h.send("GET", &format!("/sources/{id}"), "").await;
    assert_eq!(stored["sources"], first["sources"], "a cache hit's sources are stored under its own request id");
    let costs = h.costs().await;
    let hit = costs.iter().find(|c| c.cached).expect("the hit is recorded");
    assert_eq!(hit.cost_usd, 0.0);
    assert!((hit.saved_usd - 0.0053).abs() < 1e-12, "300 tokens and one search: {}", hit.saved_usd);
    assert_eq!(hit.agent, "writing");
}

// Given a cached answer, when a filter changes, then it is a different request: a miss.
async fn a_change_of_filter_never_hits_another_requests_entry(kind: StoreKind) {
    let h = Harness::new(kind).await;
    Mock::given(method("POST")).respond_with(ok(plain_answer())).expect(7).mount(h.upstream()).await;
    for body in [
        json!({"query": "coffee"}),
        json!({"query": "coffee", "recency": "week"}),
        json!({"query": "coffee", "domains": ["example.com"]}),
        json!({"query": "coffee", "model": "sonar-pro"}),
        json!({"query": "coffee", "region": "JP"}),
        json!({"query": "coffee", "publishedAfter": "2026-01-01"}),
        json!({"query": "coffee", "publishedAfter": "2026-01-01", "publishedBefore": "2026-03-31"}),
    ] {
        let (_, r) = h.post("/search", body.clone()).await;
        assert_eq!(r["cached"], false, "{body} must miss");
        assert_eq!(r["mock"], false, "{body}: the strict Agent API accepted the request: {r}");
    }
    let sent = last_request(&h).await;
    assert_eq!(
        sent["tools"][0]["filters"],
        json!({"search_after_date_filter": "01/01/2026", "search_before_date_filter": "03/31/2026"})
    );
}

// Given a cached answer older than CACHE_TTL_SECS, then it is a miss even though the store
// still holds the item, and the fresh answer replaces it.
async fn an_expired_cache_entry_is_a_miss(kind: StoreKind) {
    let h = Harness::new(kind).await;
    Mock::given(method("POST")).respond_with(ok(plain_answer())).expect(2).mount(h.upstream()).await;
    h.post("/search", json!({"query": "coffee"})).await;
    h.clock.advance(chrono::Duration::seconds(3599));
    assert_eq!(h.post("/search", json!({"query": "coffee"})).await.1["cached"], true);
    h.clock.advance(chrono::Duration::seconds(2));
    assert_eq!(h.post("/search", json!({"query": "coffee"})).await.1["cached"], false);
    assert_eq!(h.post("/search", json!({"query": "coffee"})).await.1["cached"], true);
}

// Given Perplexity fails with 500 twice, then the third attempt's answer is returned.
async fn server_errors_are_retried_with_backoff(kind: StoreKind) {
    let h = Harness::new(kind).await;
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(500)).up_to_n_times(2).mount(h.upstream()).await;
    answer_with(&h, plain_answer()).await;
    let (status, r) = h.post("/search", json!({"query": "coffee"})).await;
    assert_eq!(status, 200);
    assert_eq!(r["mock"], false);
    assert_eq!(h.upstream_calls().await.len(), 3);
}

// Given a 429 with Retry-After: 1, or only X-RateLimit-Reset: 1, then the retry waits that
// second (not the 5 ms backoff).
async fn rate_limits_honour_retry_after(kind: StoreKind) {
    for (header, value) in [("retry-after", "1"), ("x-ratelimit-reset", "1")] {
        let h = Harness::new(kind).await;
        let limited = perplexity::Refusal::rate_limited();
        Mock::given(method("POST"))
            .respond_with(limited.response().insert_header(header, value).insert_header("x-ratelimit-remaining", "0"))
            .up_to_n_times(1)
            .mount(h.upstream())
            .await;
        answer_with(&h, plain_answer()).await;
        let started = Instant::now();
        let (_, r) = h.post("/search", json!({"query": "coffee"})).await;
        assert!(started.elapsed() >= Duration::from_millis(950), "{header}: waited {:?}", started.elapsed());
        assert_eq!(r["mock"], false);
        assert_eq!(h.upstream_calls().await.len(), 2);
    }
}

// Given HTTP 200 whose run ended `failed`, then it is retried like a 5xx; when every attempt
// fails that way, the caller gets labelled mock data saying why.
async fn a_failed_run_inside_http_200_is_a_failed_attempt(kind: StoreKind) {
    let h = Harness::new(kind).await;
    let failed = json!({"id": "resp_f", "object": "response", "created_at": 1, "model": "perplexity/sonar",
        "status": "failed", "output": [], "error": {"message": "upstream model error", "type": "internal_error"}});
    Mock::given(method("POST")).respond_with(ok(failed.clone())).up_to_n_times(1).mount(h.upstream()).await;
    answer_with(&h, plain_answer()).await;
    let (_, r) = h.post("/search", json!({"query": "coffee"})).await;
    assert_eq!((r["mock"].as_bool(), h.upstream_calls().await.len()), (Some(false), 2), "{r}");

    h.reset_upstream().await;
    let cancelled = json!({"status": "cancelled", "error": {"message": "cancelled by the server"}, "output": []});
    Mock::given(method("POST")).respond_with(ok(cancelled)).mount(h.upstream()).await;
    let (status, r) = h.post("/search", json!({"query": "tea"})).await;
    assert_eq!((status, r["mock"].as_bool()), (200, Some(true)));
    let reason = r["fallbackReason"].as_str().unwrap();
    assert!(reason.contains("upstream run cancelled: cancelled by the server"), "{reason}");
    assert_eq!(h.upstream_calls().await.len(), 4, "1 attempt + 3 retries");
}

// Given an `incomplete` run (max_output_tokens), then its text is served, marked partial with
// the reason, and not cached.
async fn an_incomplete_run_keeps_its_text_and_says_why(kind: StoreKind) {
    let h = Harness::new(kind).await;
    let mut cut = plain_answer();
    cut["status"] = json!("incomplete");
    cut["incomplete_details"] = json!({"reason": "max_output_tokens"});
    Mock::given(method("POST")).respond_with(ok(cut)).expect(2).mount(h.upstream()).await;
    let (status, r) = h.post("/search", json!({"query": "coffee"})).await;
    assert_eq!((status, r["mock"].as_bool()), (200, Some(false)));
    assert_eq!(r["content"], "Coffee demand grew [1].");
    assert_eq!((r["partial"].as_bool(), r["incompleteReason"].as_str()), (Some(true), Some("max_output_tokens")));
    assert_eq!(r["sources"][0]["url"], "https://example.com/coffee");
    let (_, again) = h.post("/search", json!({"query": "coffee"})).await;
    assert_eq!(again["cached"], false, "a cut-short answer is not cached");
}

// Given Perplexity refuses our request (HTTP 400, unknown field), then it is not retried, the
// refused param is named, and the refusal does not open the circuit for everyone.
async fn a_refused_request_is_not_retried_and_does_not_trip_the_breaker(kind: StoreKind) {
    let h = Harness::new(kind).await;
    let refused = perplexity::Refusal {
        status: 400,
        kind: "invalid_request",
        message: "invalid request body: json: unknown field \"temperature\"".into(),
        param: Some("temperature".into()),
    };
    Mock::given(method("POST")).respond_with(refused.response()).mount(h.upstream()).await;
    for n in 1..=5 {
        let (status, r) = h.post("/search", json!({"query": format!("coffee {n}")})).await;
        assert_eq!((status, r["mock"].as_bool()), (200, Some(true)));
        assert!(r["fallbackReason"].as_str().unwrap().contains("(param: temperature)"), "{r}");
        assert_eq!(h.upstream_calls().await.len(), n, "one call per request: no retry, no open circuit");
    }
}

// Given Perplexity never answers in time, then after 1 + 3 attempts the caller gets labelled
// mock data with a 200, and the mock is not cached.
async fn timeouts_end_in_labelled_mock_data_not_a_5xx(kind: StoreKind) {
    let h = Harness::new(kind).await;
    Mock::given(method("POST"))
        .respond_with(ok(plain_answer()).set_delay(Duration::from_secs(2)))
        .mount(h.upstream())
        .await;
    let (status, r) = h.post("/search", json!({"query": "coffee"})).await;
    assert_eq!(status, 200);
    assert_eq!(r["mock"], true);
    assert_eq!(r["dataSource"], "模擬資料");
    assert!(r["fallbackReason"].as_str().unwrap().contains("timed out"), "{}", r["fallbackReason"]);
    assert_eq!(h.upstream_calls().await.len(), 4);
    h.reset_upstream().await;
    answer_with(&h, plain_answer()).await;
    let (_, r) = h.post("/search", json!({"query": "coffee"})).await;
    assert_eq!(r["mock"], false, "the earlier mock answer was not cached");
}

// Given a 200 whose body is not JSON, then it is not retried and the caller gets mock data.
async fn malformed_json_falls_back_to_mock(kind: StoreKind) {
    let h = Harness::new(kind).await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_string("{\"output\": ["))
        .mount(h.upstream())
        .await;
    let (status, r) = h.post("/search", json!({"query": "coffee"})).await;
    assert_eq!(status, 200);
    assert_eq!(r["mock"], true);
    assert!(r["fallbackReason"].as_str().unwrap().contains("malformed"));
    assert_eq!(h.upstream_calls().await.len(), 1);
}

// Given a response missing fields, then what parses is kept and the gaps are reported.
async fn a_response_missing_fields_is_partially_extracted(kind: StoreKind) {
    let h = Harness::new(kind).await;
    answer_with(
        &h,
        json!({"id": "x", "status": "completed", "output": [
            {"type": "search_results", "results": [{"id": 1, "title": "Only", "url": "https://example.com/only"}, {"id": 2, "title": "no url"}]},
            {"type": "message", "content": [{"type": "output_text", "text": 42}]}
        ]}),
    )
    .await;
    let (_, r) = h.post("/search", json!({"query": "coffee"})).await;
    assert_eq!(r["mock"], false);
    assert_eq!(r["partial"], true);
    assert_eq!(r["sources"][0]["title"], "Only");
    let errors = r["validationErrors"].to_string();
    assert!(
        errors.contains("output[0].results[1] has no url")
            && errors.contains("output[1].content[0].text is not a string")
            && errors.contains("usage is missing"),
        "{errors}"
    );
}

// Given a 401, then it is not retried (the caller's key is wrong; retrying cannot help).
async fn client_errors_other_than_429_are_not_retried(kind: StoreKind) {
    let h = Harness::new(kind).await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(401)
                .set_body_json(json!({"error": {"message": "Invalid API key", "type": "invalid_api_key"}})),
        )
        .mount(h.upstream())
        .await;
    let (status, r) = h.post("/search", json!({"query": "coffee"})).await;
    assert_eq!(status, 200);
    assert_eq!(r["mock"], true);
    assert!(r["fallbackReason"].as_str().unwrap().contains("401"));
    assert_eq!(h.upstream_calls().await.len(), 1);
}

// Given a Chinese query, then the request carries seed 000's system line, the TW/HK/CN domain
// filter and recency month, and the key only in the Authorization header.
async fn chinese_queries_are_tuned_for_chinese_sources(kind: StoreKind) {
    let h = Harness::new(kind).await;
    answer_with(&h, plain_answer()).await;
    h.post("/search", json!({"query": "台灣 手搖飲 趨勢"})).await;
    let calls = h.upstream_calls().await;
    let sent: Value = serde_json::from_slice(&calls[0].body).unwrap();
    assert!(sent["instructions"].as_str().unwrap().contains("針對中文查詢，請優先搜尋繁體中文和簡體中文的資源"));
    assert_eq!(sent["input"], "台灣 手搖飲 趨勢");
    let filters = &sent["tools"][0]["filters"];
    assert_eq!(filters["search_recency_filter"], "month");
    let domains: Vec<_> =
        filters["search_domain_filter"].as_array().unwrap().iter().map(|d| d.as_str().unwrap()).collect();
    assert!(domains.contains(&"gov.tw") && domains.contains(&"com.hk") && domains.contains(&"com.cn"));
    assert!(domains.len() <= 20);
    assert_eq!(calls[0].headers.get("authorization").unwrap(), &format!("Bearer {TEST_KEY}"));
    assert!(!String::from_utf8_lossy(&calls[0].body).contains(TEST_KEY));
}

// Given the structured methods, then their answers are validated into seed 000's shapes,
// keeping the valid items of a partly invalid answer.
async fn structured_methods_return_seed_shapes_with_partial_extraction(kind: StoreKind) {
    let h = Harness::new(kind).await;
    let competitors = json!({
        "topCompetitors": [
            {"domain": "a.example.com", "title": "A", "description": "Guide", "strengths": ["depth"]},
            {"domain": "b.example.com"}
        ],
        "contentGaps": ["pricing"], "recommendations": ["add a calculator"]
    });
    let guide = json!([{"id": 1, "title": "Guide", "url": "https://a.example.com/guide", "snippet": "s"}]);
    answer_with(&h, perplexity::answer(&competitors.to_string(), guide, json!([]), perplexity::usage(10, 10, 1, None)))
        .await;
    let (status, r) =
        h.post("/search/competitors", json!({"keyword": "espresso machine", "domain": "ours.example.com"})).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["method"], "competitors");
    assert_eq!(r["topCompetitors"].as_array().unwrap().len(), 1);
    assert_eq!(r["topCompetitors"][0]["strengths"], json!(["depth"]));
    assert_eq!(r["contentGaps"], json!(["pricing"]));
    assert_eq!(r["partial"], true);
    assert!(r["validationErrors"][0].as_str().unwrap().starts_with("topCompetitors[1]"));
    let sent = last_request(&h).await;
    assert_eq!(sent["response_format"]["type"], "json_schema");
    assert_eq!(sent["response_format"]["json_schema"]["name"], "competitors");
    assert!(sent["input"].as_str().unwrap().contains("ours.example.com"));

    h.reset_upstream().await;
    let trends = json!({"trends": [{"topic": "AI", "description": "d", "relevance": 0.9}], "insights": ["go"]});
    let body = format!("```json\n{trends}\n```");
    answer_with(&h, perplexity::answer(&body, json!([]), json!([]), perplexity::usage(1, 1, 1, None))).await;
    let (_, r) = h.post("/search/trends", json!({"topic": "AI", "timeframe": "day"})).await;
    assert_eq!(r["trends"], trends["trends"]);
    assert_eq!(r["insights"], json!(["go"]));
    assert_eq!(r["partial"], false);
    assert_eq!(last_request(&h).await["tools"][0]["filters"]["search_recency_filter"], "day");

    h.reset_upstream().await;
    let topic = json!({"summary": "s", "keyPoints": ["k"], "statistics": [{"stat": "42%", "source": "https://example.com/s"}], "expertOpinions": [], "relatedTopics": ["r"]});
    let stat = json!([{"id": 1, "title": "S", "url": "https://example.com/s", "snippet": "42%"}]);
    answer_with(&h, perplexity::answer(&topic.to_string(), stat, json!([]), perplexity::usage(1, 1, 1, None))).await;
    let (_, r) = h.post("/search/topic", json!({"topic": "coffee", "aspects": ["market size", "health"]})).await;
    for field in ["summary", "keyPoints", "statistics", "expertOpinions", "relatedTopics"] {
        assert_eq!(r[field], topic[field], "{field}");
    }
    assert!(last_request(&h).await["input"].as_str().unwrap().contains("market size; health"));
}

// Given a topic answer whose statistics name a source the citations do not list, then it is
// listed and stored after the citations (not among them), and a source that is no URL stays
// only in its statistic.
async fn sources_named_in_structured_fields_are_stored_too(kind: StoreKind) {
    let h = Harness::new(kind).await;
    let topic = json!({"summary": "s", "keyPoints": ["k"], "statistics": [
        {"stat": "42% drink coffee daily", "source": "https://stats.example.org/coffee?utm_source=x"},
        {"stat": "7% more cafés", "source": "https://example.com/s"},
        {"stat": "1 in 3 roast at home", "source": "Statista 2024"}
    ], "expertOpinions": [], "relatedTopics": ["r"]});
    let cited = json!([{"id": 1, "title": "S", "url": "https://example.com/s", "snippet": "42%"}]);
    answer_with(&h, perplexity::answer(&topic.to_string(), cited, json!([]), perplexity::usage(1, 1, 1, None))).await;
    let (status, r) = h.post("/search/topic", json!({"topic": "coffee"})).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["citations"], json!(["https://example.com/s"]));
    let urls: Vec<_> = r["sources"].as_array().unwrap().iter().map(|s| s["url"].as_str().unwrap()).collect();
    assert_eq!(urls, ["https://example.com/s", "https://stats.example.org/coffee"]);
    assert_eq!(r["sources"][1]["title"], "42% drink coffee daily");
    assert_eq!(r["sourcesStored"], true);
    let (_, stored) = h.send("GET", &format!("/sources/{}", r["requestId"].as_str().unwrap()), "").await;
    assert_eq!(stored["sources"], r["sources"]);
    assert!(
        stored["references"]
            .as_str()
            .unwrap()
            .contains("2. [42% drink coffee daily](https://stats.example.org/coffee)")
    );
}

// Given a source list whose writing stopped before its header (the header is written last),
// then it is absent (404); given a header whose count its rows do not match, then reading it
// is a store fault (503), never a short list.
async fn a_source_list_is_complete_or_absent(kind: StoreKind) {
    use shared::core::records::Record;
    let h = Harness::new(kind).await;
    let row = |request: &str, n: u32| Record {
        pk: format!("SOURCES#{request}"),
        sk: format!("{n:05}"),
        expires_at: None,
        body: json!({"url": format!("https://example.com/{n}"), "title": null, "accessed_at": "2026-11-23T10:00:00Z"}),
    };
    h.records.put_all(&[row("half", 1), row("half", 2)]).await.unwrap();
    let (status, r) = h.send("GET", "/sources/half", "").await;
    assert_eq!((status, r["error"]["code"].as_str()), (404, Some("not_found")), "{r}");

    let header = Record {
        pk: "SOURCES#short".into(),
        sk: "#header".into(),
        expires_at: None,
        body: json!({"count": 3, "storedAt": "2026-11-23T10:00:00Z"}),
    };
    h.records.put_all(&[row("short", 1), row("short", 2), header]).await.unwrap();
    let (status, r) = h.send("GET", "/sources/short", "").await;
    assert_eq!((status, r["error"]["code"].as_str()), (503, Some("store_unavailable")), "{r}");
    assert!(r.get("sources").is_none());
}

// Given the record store is down, then a live answer still comes (nothing lost: the sources
// and the cost record are logged for replay), saying `sourcesStored: false`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_store_down_the_answer_says_its_sources_are_not_stored() {
    let h = Harness::with(StoreKind::DynamoDb, Setup { perplexity: true, store_down: true, ..Setup::default() }).await;
    answer_with(&h, plain_answer()).await;
    let (status, r) = h.post("/search", json!({"query": "coffee"})).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!((r["mock"].as_bool(), r["sourcesStored"].as_bool()), (Some(false), Some(false)), "{r}");
    assert_eq!(r["citations"], json!(["https://example.com/coffee"]));
    let (status, r) = h.send("GET", &format!("/sources/{}", r["requestId"].as_str().unwrap()), "").await;
    assert_eq!((status, r["error"]["code"].as_str()), (503, Some("store_unavailable")));
}

// Given a structured answer with nothing usable, then the caller gets mock data, and the paid
// call is still accounted.
async fn an_unusable_structured_answer_falls_back_but_is_still_accounted(kind: StoreKind) {
    let h = Harness::new(kind).await;
    let text = "I cannot answer that as JSON.";
    answer_with(&h, perplexity::answer(text, json!([]), json!([]), perplexity::usage(500, 500, 1, None))).await;
    let (status, r) = h.post("/search/trends", json!({"topic": "AI"})).await;
    assert_eq!(status, 200);
    assert_eq!(r["mock"], true);
    assert!(r["fallbackReason"].as_str().unwrap().contains("unusable_response"), "{}", r["fallbackReason"]);
    assert!(r["trends"].as_array().is_some(), "mock data has the seed shape");
    let costs = h.costs().await;
    assert!(costs.iter().any(|c| !c.mock && (c.cost_usd - 0.006).abs() < 1e-12), "{costs:?}");
}

// Given bad input, then a 4xx JSON error names the problem and nothing is called or stored.
async fn bad_input_gets_a_named_4xx_and_changes_nothing(kind: StoreKind) {
    let h = Harness::new(kind).await;
    answer_with(&h, plain_answer()).await;
    let long = "長".repeat(4001);
    let cases: Vec<(&str, &str, String, u16, &str)> = vec![
        ("POST", "/search", "{\"query\": \"x\"".into(), 400, "malformed_json"),
        ("POST", "/search", "".into(), 400, "malformed_json"),
        ("POST", "/search", json!({}).to_string(), 400, "missing_query"),
        ("POST", "/search", json!({"query": ""}).to_string(), 400, "missing_query"),
        ("POST", "/search", json!({"query": long}).to_string(), 400, "query_too_long"),
        ("POST", "/search", json!({"query": "x", "model": "gpt-5"}).to_string(), 400, "unknown_model"),
        ("POST", "/search/trends", json!({"topic": "x", "timeframe": "decade"}).to_string(), 400, "unknown_timeframe"),
        ("POST", "/search", json!({"query": "x", "regoin": "TW"}).to_string(), 400, "unknown_field"),
        ("POST", "/search", json!({"query": "x", "agent": "marketing"}).to_string(), 400, "invalid_agent"),
        ("POST", "/search", json!({"query": "x", "publishedAfter": "+262143-12-31"}).to_string(), 400, "invalid_date"),
        ("POST", "/search", "x".repeat(70_000), 413, "payload_too_large"),
        ("GET", "/search", "".into(), 405, "method_not_allowed"),
        ("DELETE", "/sources/abc", "".into(), 405, "method_not_allowed"),
        ("POST", "/search/everything", json!({"query": "x"}).to_string(), 404, "not_found"),
        ("GET", "/sources/no-such-request", "".into(), 404, "not_found"),
        ("GET", "/sources/..%2Fetc", "".into(), 400, "invalid_request_id"),
    ];
    for (m, p, body, status, code) in cases {
        let (got, r) = h.send(m, p, &body).await;
        assert_eq!((got, r["error"]["code"].as_str().unwrap_or_default()), (status, code), "{m} {p}: {r}");
        assert!(!r["error"]["message"].as_str().unwrap().is_empty());
    }
    assert!(h.upstream_calls().await.is_empty(), "bad input must not reach the upstream");
    assert!(h.costs().await.is_empty(), "bad input must not be accounted");
}

// Issue 42 (seed 000's article_sources): searches with an articleId add their sources to the
// backend's article, de-duplicated in the order first cited; another principal's same id is
// another article, and a mock answer adds nothing.
async fn an_articles_sources_gather_its_searches_citations(kind: StoreKind) {
    let h = Harness::new(kind).await;
    let page = |n: u32, url: &str| json!({"id": n, "title": format!("Page {n}"), "url": url, "snippet": "s"});
    Mock::given(method("POST"))
        .and(wiremock::matchers::body_string_contains("coffee"))
        .respond_with(ok(perplexity::answer(
            "Coffee [1][2].",
            json!([page(1, "https://example.com/a"), page(2, "https://example.com/b")]),
            json!([]),
            perplexity::usage(10, 10, 1, None),
        )))
        .mount(h.upstream())
        .await;
    Mock::given(method("POST"))
        .respond_with(ok(perplexity::answer(
            "Tea [1][2].",
            json!([page(1, "https://example.com/b?utm_source=x"), page(2, "https://example.com/c")]),
            json!([]),
            perplexity::usage(10, 10, 1, None),
        )))
        .mount(h.upstream())
        .await;
    let (_, first) = h.post("/search", json!({"query": "coffee", "articleId": "article-1"})).await;
    assert_eq!(first["sourcesStored"], true, "{first}");
    h.clock.advance(chrono::Duration::seconds(1));
    let (_, second) = h.post("/search", json!({"query": "tea", "articleId": "article-1"})).await;
    assert_eq!(second["sourcesStored"], true, "{second}");
    h.post("/search", json!({"query": "coffee again"})).await;
    let (status, r) = h.send("GET", "/articles/article-1/sources", "").await;
    assert_eq!(status, 200, "{r}");
    let urls: Vec<&str> = r["sources"].as_array().unwrap().iter().map(|s| s["url"].as_str().unwrap()).collect();
    assert_eq!(urls, ["https://example.com/a", "https://example.com/b", "https://example.com/c"]);
    assert_eq!(r["sources"][1]["title"], "Page 2", "the first citation's title is kept");
    assert!(r["references"].as_str().unwrap().starts_with("## 參考資料\n\n1. [Page 1](https://example.com/a)"));
    // Another backend's article-1 is not this one; an unknown article is 404; a bad id 400.
    let other = integration::with_authorizer(
        integration::request("GET", "/articles/article-1/sources", ""),
        json!({"iam": {"accountId": "210987654321", "userArn": "arn:aws:sts::210987654321:assumed-role/other/s"}}),
    );
    assert_eq!(h.exchange_as(other, None).await.0, 404);
    assert_eq!(h.send("GET", "/articles/article-2/sources", "").await.0, 404);
    let (status, r) = h.send("GET", "/articles/a%20b/sources", "").await;
    assert_eq!((status, r["error"]["code"].as_str()), (400, Some("invalid_article_id")), "{r}");
    let (status, r) = h.post("/search", json!({"query": "x", "articleId": "../etc"})).await;
    assert_eq!((status, r["error"]["code"].as_str()), (400, Some("invalid_article_id")), "{r}");
    let anonymous = h.exchange_as(integration::request("GET", "/articles/article-1/sources", ""), None).await;
    assert_eq!(anonymous.0, 401);
}

// Given no search key, then a search with an articleId answers labelled mock data and adds no
// source to the article.
async fn a_mock_answer_adds_nothing_to_an_article(kind: StoreKind) {
    let h = Harness::with(kind, Setup::default()).await;
    let (_, r) = h.post("/search", json!({"query": "coffee", "articleId": "article-9"})).await;
    assert_eq!(r["mock"], true);
    assert_eq!(h.send("GET", "/articles/article-9/sources", "").await.0, 404);
}

// Given 20 identical requests at once, then one upstream call answers them all (single
// flight): the others wait for its cached answer and are free cache hits.
async fn concurrent_identical_misses_make_one_upstream_call(kind: StoreKind) {
    // A client timeout well above the answer's 300 ms: on a loaded machine the harness's 400 ms
    // can cut the leader's call, and its retry is a second call that single flight is not about.
    let env = [("UPSTREAM_TIMEOUT_MS", "3000")];
    let h = Harness::with(kind, Setup { perplexity: true, env: &env, ..Setup::default() }).await;
    Mock::given(method("POST"))
        .respond_with(ok(plain_answer()).set_delay(Duration::from_millis(300)))
        .mount(h.upstream())
        .await;
    let asks = (0..20).map(|_| h.post("/search", json!({"query": "coffee", "region": "TW"})));
    let answers = futures::future::join_all(asks).await;
    assert_eq!(h.upstream_calls().await.len(), 1, "one call for 20 identical requests");
    for (status, r) in &answers {
        assert_eq!((*status, r["mock"].as_bool()), (200, Some(false)), "{r}");
        assert_eq!(r["content"], answers[0].1["content"]);
    }
    assert_eq!(answers.iter().filter(|(_, r)| r["cached"] == false).count(), 1);
    let costs = h.costs().await;
    assert_eq!((costs.iter().filter(|c| !c.cached).count(), costs.iter().filter(|c| c.cached).count()), (1, 19));
    // A different request is not held up by it, and the claim is gone once answered.
    let (_, r) = h.post("/search", json!({"query": "tea"})).await;
    assert_eq!(r["cached"], false);
    assert_eq!(h.upstream_calls().await.len(), 2);
}

// Given AGENTS, then exactly those agents may be billed: a configured one is answered, the
// seeds' defaults are not any more.
async fn only_configured_agents_are_billed(kind: StoreKind) {
    let h = Harness::with(
        kind,
        Setup { perplexity: true, env: &[("AGENTS", "marketing, seo-writer")], ..Setup::default() },
    )
    .await;
    answer_with(&h, plain_answer()).await;
    let (status, r) = h.post("/search", json!({"query": "coffee", "agent": "seo-writer"})).await;
    assert_eq!((status, r["mock"].as_bool()), (200, Some(false)), "{r}");
    let (status, r) = h.post("/search", json!({"query": "coffee", "agent": "research"})).await;
    assert_eq!((status, r["error"]["code"].as_str()), (400, Some("invalid_agent")));
    assert!(r["error"]["message"].as_str().unwrap().contains("marketing, seo-writer"), "{r}");
    let (status, _) = h.post("/search", json!({"query": "coffee"})).await;
    assert_eq!(status, 400, "the default agent (research) is not configured here");
    assert_eq!(h.upstream_calls().await.len(), 1);
    assert!(h.costs().await.iter().all(|c| c.agent == "seo-writer"));
}

on_both_stores!(
    an_articles_sources_gather_its_searches_citations,
    a_mock_answer_adds_nothing_to_an_article,
    concurrent_identical_misses_make_one_upstream_call,
    only_configured_agents_are_billed,
    no_key_answers_with_labelled_mock_data_and_never_caches_it,
    a_live_answer_yields_clean_stored_sources_references_and_a_cost_record,
    without_a_reported_cost_the_price_table_applies,
    a_repeated_request_is_served_from_the_cache,
    a_change_of_filter_never_hits_another_requests_entry,
    an_expired_cache_entry_is_a_miss,
    server_errors_are_retried_with_backoff,
    rate_limits_honour_retry_after,
    a_failed_run_inside_http_200_is_a_failed_attempt,
    an_incomplete_run_keeps_its_text_and_says_why,
    a_refused_request_is_not_retried_and_does_not_trip_the_breaker,
    timeouts_end_in_labelled_mock_data_not_a_5xx,
    malformed_json_falls_back_to_mock,
    a_response_missing_fields_is_partially_extracted,
    client_errors_other_than_429_are_not_retried,
    chinese_queries_are_tuned_for_chinese_sources,
    structured_methods_return_seed_shapes_with_partial_extraction,
    an_unusable_structured_answer_falls_back_but_is_still_accounted,
    bad_input_gets_a_named_4xx_and_changes_nothing,
    sources_named_in_structured_fields_are_stored_too,
    a_source_list_is_complete_or_absent,
);
