//! The `search` function end to end: real handler, real record store (SQLite file and
//! DynamoDB Local), a fake Perplexity on 127.0.0.1 speaking the chat-completions wire format,
//! including its faults. Each scenario runs on both stores.

use std::time::{Duration, Instant};

use integration::{Harness, StoreKind, TEST_KEY, completion, on_both_stores};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, ResponseTemplate};

fn ok(body: Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(body)
}

fn plain_answer() -> Value {
    completion(
        "Coffee demand grew [1].",
        &["https://example.com/coffee"],
        json!([{"title": "Coffee report", "url": "https://example.com/coffee", "date": "2025-01-01"}]),
        json!({"prompt_tokens": 100, "completion_tokens": 200, "total_tokens": 300}),
    )
}

async fn answer_with(h: &Harness, body: Value) {
    Mock::given(method("POST")).and(path("/chat/completions")).respond_with(ok(body)).mount(h.upstream()).await;
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
    let content = "台灣咖啡消費持續成長 [1][2]，連鎖品牌擴張 [3]，但仍有爭議 [7]。\n\n[3]: https://news.example.org/chains.\n[2]: https://example.com/b#frag";
    answer_with(
        &h,
        completion(
            content,
            &["https://example.com/a", "https://example.com/b", "ftp://example.com/x", "https://example.com/a?utm_source=pplx"],
            json!([
                {"title": "咖啡產業報告", "url": "https://example.com/a", "date": "2025-01-01"},
                {"title": "B 報導", "url": "https://example.com/b"},
                {"url": "http://user:pw@evil.example.com/"}
            ]),
            json!({"prompt_tokens": 1200, "completion_tokens": 800, "total_tokens": 2000, "cost": {"total_cost": 0.0071}}),
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
    assert_eq!(r["unbackedMarkers"], json!([7]));
    let reasons: Vec<_> =
        r["rejectedCitations"].as_array().unwrap().iter().map(|x| x["reason"].as_str().unwrap()).collect();
    assert_eq!(reasons, ["scheme is not http or https", "contains credentials"]);
    assert_eq!(
        r["usage"],
        json!({"inputTokens": 1200, "outputTokens": 800, "costUsd": 0.0071, "costSource": "provider"})
    );
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
    assert_eq!((c.input_tokens, c.output_tokens, c.cost_usd), (1200, 800, 0.0071));
    assert_eq!(c.request_id, id);
    assert_eq!(c.upstream_id.as_deref(), Some("cmpl-test-1"));
    assert!(!c.cached && !c.mock);
}

// Given Perplexity reports no cost, then seed 000's price table applies (sonar-pro $0.003/1K).
async fn without_a_reported_cost_the_price_table_applies(kind: StoreKind) {
    let h = Harness::new(kind).await;
    answer_with(
        &h,
        completion(
            "x [1]",
            &["https://example.com/x"],
            json!([]),
            json!({"prompt_tokens": 1000, "completion_tokens": 500}),
        ),
    )
    .await;
    let (_, r) = h.post("/search", json!({"query": "x", "model": "sonar-pro"})).await;
    assert_eq!(r["usage"]["costSource"], "price_table");
    assert!((r["usage"]["costUsd"].as_f64().unwrap() - 0.0045).abs() < 1e-12);
    let sent: Value = serde_json::from_slice(&h.upstream_calls().await[0].body).unwrap();
    assert_eq!(sent["model"], "sonar-pro");
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
    assert!((hit.saved_usd - 0.0003).abs() < 1e-12);
    assert_eq!(hit.agent, "writing");
}

// Given a cached answer, when a filter changes, then it is a different request: a miss.
async fn a_change_of_filter_never_hits_another_requests_entry(kind: StoreKind) {
    let h = Harness::new(kind).await;
    Mock::given(method("POST")).respond_with(ok(plain_answer())).expect(5).mount(h.upstream()).await;
    for body in [
        json!({"query": "coffee"}),
        json!({"query": "coffee", "recency": "week"}),
        json!({"query": "coffee", "domains": ["example.com"]}),
        json!({"query": "coffee", "model": "sonar-pro"}),
        json!({"query": "coffee", "region": "JP"}),
    ] {
        let (_, r) = h.post("/search", body.clone()).await;
        assert_eq!(r["cached"], false, "{body} must miss");
    }
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

// Given a 429 with Retry-After: 1, then the retry waits that second (not the 5 ms backoff).
async fn rate_limits_honour_retry_after(kind: StoreKind) {
    let h = Harness::new(kind).await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "1"))
        .up_to_n_times(1)
        .mount(h.upstream())
        .await;
    answer_with(&h, plain_answer()).await;
    let started = Instant::now();
    let (_, r) = h.post("/search", json!({"query": "coffee"})).await;
    assert!(started.elapsed() >= Duration::from_millis(950), "waited {:?}", started.elapsed());
    assert_eq!(r["mock"], false);
    assert_eq!(h.upstream_calls().await.len(), 2);
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
    h.upstream().reset().await;
    answer_with(&h, plain_answer()).await;
    let (_, r) = h.post("/search", json!({"query": "coffee"})).await;
    assert_eq!(r["mock"], false, "the earlier mock answer was not cached");
}

// Given a 200 whose body is not JSON, then it is not retried and the caller gets mock data.
async fn malformed_json_falls_back_to_mock(kind: StoreKind) {
    let h = Harness::new(kind).await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_string("{\"choices\": ["))
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
        json!({"id": "x", "citations": ["https://example.com/only", 42], "search_results": [{"title": "Only", "url": "https://example.com/only"}]}),
    )
    .await;
    let (_, r) = h.post("/search", json!({"query": "coffee"})).await;
    assert_eq!(r["mock"], false);
    assert_eq!(r["partial"], true);
    assert_eq!(r["sources"][0]["title"], "Only");
    let errors = r["validationErrors"].to_string();
    assert!(
        errors.contains("content is missing") && errors.contains("citations[1]") && errors.contains("usage is missing"),
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
    assert!(
        sent["messages"][0]["content"].as_str().unwrap().contains("針對中文查詢，請優先搜尋繁體中文和簡體中文的資源")
    );
    assert_eq!(sent["messages"][1]["content"], "台灣 手搖飲 趨勢");
    assert_eq!(sent["search_recency_filter"], "month");
    let domains: Vec<_> =
        sent["search_domain_filter"].as_array().unwrap().iter().map(|d| d.as_str().unwrap()).collect();
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
    answer_with(
        &h,
        completion(
            &competitors.to_string(),
            &["https://a.example.com/guide"],
            json!([]),
            json!({"prompt_tokens": 10, "completion_tokens": 10}),
        ),
    )
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
    let sent: Value = serde_json::from_slice(&h.upstream_calls().await[0].body).unwrap();
    assert_eq!(sent["response_format"]["type"], "json_schema");
    assert!(sent["messages"][1]["content"].as_str().unwrap().contains("ours.example.com"));

    h.upstream().reset().await;
    let trends = json!({"trends": [{"topic": "AI", "description": "d", "relevance": 0.9}], "insights": ["go"]});
    answer_with(
        &h,
        completion(
            &format!("```json\n{trends}\n```"),
            &[],
            json!([]),
            json!({"prompt_tokens": 1, "completion_tokens": 1}),
        ),
    )
    .await;
    let (_, r) = h.post("/search/trends", json!({"topic": "AI", "timeframe": "day"})).await;
    assert_eq!(r["trends"], trends["trends"]);
    assert_eq!(r["insights"], json!(["go"]));
    assert_eq!(r["partial"], false);
    let sent: Value = serde_json::from_slice(&h.upstream_calls().await[0].body).unwrap();
    assert_eq!(sent["search_recency_filter"], "day");

    h.upstream().reset().await;
    let topic = json!({"summary": "s", "keyPoints": ["k"], "statistics": [{"stat": "42%", "source": "https://example.com/s"}], "expertOpinions": [], "relatedTopics": ["r"]});
    answer_with(
        &h,
        completion(
            &topic.to_string(),
            &["https://example.com/s"],
            json!([]),
            json!({"prompt_tokens": 1, "completion_tokens": 1}),
        ),
    )
    .await;
    let (_, r) = h.post("/search/topic", json!({"topic": "coffee", "aspects": ["market size", "health"]})).await;
    for field in ["summary", "keyPoints", "statistics", "expertOpinions", "relatedTopics"] {
        assert_eq!(r[field], topic[field], "{field}");
    }
    let sent: Value = serde_json::from_slice(&h.upstream_calls().await[0].body).unwrap();
    assert!(sent["messages"][1]["content"].as_str().unwrap().contains("market size; health"));
}

// Given a structured answer with nothing usable, then the caller gets mock data, and the paid
// call is still accounted.
async fn an_unusable_structured_answer_falls_back_but_is_still_accounted(kind: StoreKind) {
    let h = Harness::new(kind).await;
    answer_with(
        &h,
        completion(
            "I cannot answer that as JSON.",
            &[],
            json!([]),
            json!({"prompt_tokens": 500, "completion_tokens": 500}),
        ),
    )
    .await;
    let (status, r) = h.post("/search/trends", json!({"topic": "AI"})).await;
    assert_eq!(status, 200);
    assert_eq!(r["mock"], true);
    assert!(r["fallbackReason"].as_str().unwrap().contains("unusable_response"), "{}", r["fallbackReason"]);
    assert!(r["trends"].as_array().is_some(), "mock data has the seed shape");
    let costs = h.costs().await;
    assert!(costs.iter().any(|c| !c.mock && (c.cost_usd - 0.001).abs() < 1e-12), "{costs:?}");
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

on_both_stores!(
    no_key_answers_with_labelled_mock_data_and_never_caches_it,
    a_live_answer_yields_clean_stored_sources_references_and_a_cost_record,
    without_a_reported_cost_the_price_table_applies,
    a_repeated_request_is_served_from_the_cache,
    a_change_of_filter_never_hits_another_requests_entry,
    an_expired_cache_entry_is_a_miss,
    server_errors_are_retried_with_backoff,
    rate_limits_honour_retry_after,
    timeouts_end_in_labelled_mock_data_not_a_5xx,
    malformed_json_falls_back_to_mock,
    a_response_missing_fields_is_partially_extracted,
    client_errors_other_than_429_are_not_retried,
    chinese_queries_are_tuned_for_chinese_sources,
    structured_methods_return_seed_shapes_with_partial_extraction,
    an_unusable_structured_answer_falls_back_but_is_still_accounted,
    bad_input_gets_a_named_4xx_and_changes_nothing,
);
