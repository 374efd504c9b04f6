//! The API Gateway (HTTP API, payload 2.0) event fixtures under `infra/events/`, the ones
//! `cargo lambda invoke --data-file` and the demo send, route through the real handler.

use std::sync::Arc;

use integration::{Harness, StoreKind};
use lambda_http::Body;
use serde_json::Value;

async fn invoke(h: &Harness, fixture: &str) -> (u16, Value) {
    let path = format!("{}/../infra/events/{fixture}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let req =
        lambda_http::request::from_str(&text).unwrap_or_else(|e| panic!("{fixture} is not an API Gateway event: {e}"));
    let response = shared::http::invoke(search::routes(Arc::clone(&h.app)), req).await;
    let body = match response.body() {
        Body::Text(t) => t.clone(),
        other => String::from_utf8_lossy(other.as_ref()).into_owned(),
    };
    (response.status().as_u16(), serde_json::from_str(&body).expect("JSON body"))
}

#[tokio::test]
async fn every_search_fixture_answers_with_its_method_on_the_embedded_default() {
    let h = Harness::without_key(StoreKind::Local).await;
    for (fixture, method, field) in [
        ("search.json", "search", "content"),
        ("search-competitors.json", "competitors", "topCompetitors"),
        ("search-trends.json", "trends", "trends"),
        ("search-topic.json", "topic", "keyPoints"),
    ] {
        let (status, r) = invoke(&h, fixture).await;
        assert_eq!(status, 200, "{fixture}: {r}");
        assert_eq!(r["method"], method, "{fixture}");
        assert_eq!(r["mock"], true, "{fixture}");
        assert!(!r[field].is_null(), "{fixture} lacks {field}");
    }
}

#[tokio::test]
async fn the_tools_and_research_fixtures_run_on_the_embedded_default() {
    let h = Harness::without_key(StoreKind::Local).await;
    let (status, r) = invoke(&h, "tools.json").await;
    assert_eq!((status, r["tools"].as_array().map(Vec::len)), (200, Some(1)), "no Tavily key: only explore_nearby");
    let (status, r) = invoke(&h, "tools-search-web.json").await;
    assert_eq!((status, r["error"]["code"].as_str()), (404, Some("not_found")));
    let (status, r) = invoke(&h, "research.json").await;
    assert_eq!(status, 200, "{r}");
    assert_eq!((r["mock"].as_bool(), r["results"].as_array().map(Vec::len)), (Some(true), Some(3)));
}

#[tokio::test]
async fn the_sources_and_malformed_fixtures_get_json_errors() {
    let h = Harness::without_key(StoreKind::Local).await;
    let (status, r) = invoke(&h, "sources.json").await;
    assert_eq!((status, r["error"]["code"].as_str()), (404, Some("not_found")));
    let (status, r) = invoke(&h, "search-malformed.json").await;
    assert_eq!((status, r["error"]["code"].as_str()), (400, Some("malformed_json")));
}

#[tokio::test]
async fn the_cost_report_fixture_answers_in_text() {
    let h = Harness::without_key(StoreKind::Local).await;
    h.post("/search", serde_json::json!({"query": "coffee"})).await;
    let app = cost_report::routes(Arc::new(h.cost_report()));
    let path = format!("{}/../infra/events/cost-report.json", env!("CARGO_MANIFEST_DIR"));
    let req = lambda_http::request::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let response = shared::http::invoke(app.clone(), req).await;
    assert_eq!(response.status(), 200);
    let text = String::from_utf8_lossy(response.body().as_ref()).into_owned();
    assert_eq!(text, "Research Agent:\n- Mock Search: $0.0000\nTotal: $0.0000\n");
}

#[tokio::test]
async fn the_research_create_fixture_opens_a_session() {
    let (records, _guard) = integration::store(StoreKind::Local).await;
    let config = integration::config::<&str, &str>(&[]);
    let clock: std::sync::Arc<dyn shared::core::clock::Clock> = std::sync::Arc::new(shared::core::clock::SystemClock);
    let app = Arc::new(research::App::new(&config, records, clock).unwrap());
    let path = format!("{}/../infra/events/research-create.json", env!("CARGO_MANIFEST_DIR"));
    let req = lambda_http::request::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let response = shared::http::invoke_streamed(research::routes(Arc::clone(&app)), req).await;
    assert_eq!(response.status(), 200);
    use http_body_util::BodyExt;
    let body: Value = serde_json::from_slice(&response.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!((body["topic"].as_str(), body["language"].as_str()), (Some("iPhone"), Some("en")));
    assert!(body["session_id"].as_str().is_some_and(|s| s.len() == 36));
}
