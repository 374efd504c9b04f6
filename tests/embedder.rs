//! The embedder port's OpenAI-compatible adapter against a fake `/embeddings` server on
//! 127.0.0.1, through the one `embed` path (retries, cost records) on both record stores.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use integration::{StoreKind, on_both_stores, store};
use serde_json::json;
use shared::activities::embedder::{Input, embed};
use shared::core::clock::{Clock, ManualClock};
use shared::core::retry::RetryPolicy;
use shared::costs::ledger::CallKind;
use wiremock::matchers::{body_partial_json, header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const KEY: &str = "embedding-test-key";

fn vectors(n: usize, dims: usize) -> serde_json::Value {
    let data: Vec<_> =
        (0..n).map(|i| json!({"index": i, "object": "embedding", "embedding": vec![i as f32 + 0.5; dims]})).collect();
    json!({"object": "list", "model": "embedding-3", "data": data, "usage": {"prompt_tokens": 2000, "total_tokens": 2000}})
}

async fn setup(
    kind: StoreKind,
    server: &MockServer,
) -> (Arc<dyn shared::activities::embedder::Embedder>, shared::costs::ledger::Ledger, integration::StoreGuard) {
    let (records, guard) = store(kind).await;
    let uri = server.uri();
    let config =
        integration::config(&[("EMBEDDING_API_KEY", KEY), ("EMBEDDING_BASE_URL", &uri), ("EMBEDDING_DIMENSIONS", "8")]);
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(Utc::now()));
    let ledger = shared::compose::ledger(&config, records, clock).unwrap();
    (shared::compose::embedder(&config).unwrap().expect("an embedder with a key"), ledger, guard)
}

// Given a batch of texts, then one request carries them all (model, dimensions, key) and the
// call is one cost record of kind embedding, priced from prices.json.
async fn a_batch_is_one_accounted_call(kind: StoreKind) {
    let server = integration::FakeServer::start().await;
    Mock::given(method("POST"))
        .and(path("/embeddings"))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .and(body_partial_json(
            json!({"model": "embedding-3", "dimensions": 8, "input": ["标题: 读书局", "标题: 啤酒局", "标题: 徒步"]}),
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(vectors(3, 8)))
        .expect(1)
        .mount(&server)
        .await;
    let (embedder, ledger, _g) = setup(kind, &server).await;
    let inputs: Vec<String> = ["标题: 读书局", "标题: 啤酒局", "标题: 徒步"].map(String::from).to_vec();
    let got = embed(
        &*embedder,
        &ledger,
        RetryPolicy::new(Duration::from_millis(5)),
        None,
        "rag",
        "req-1",
        &inputs,
        Input::Passage,
    )
    .await
    .unwrap();
    assert_eq!(got.len(), 3);
    assert_eq!(got[2], vec![2.5; 8]);
    let costs =
        ledger.between(Utc::now() - chrono::Duration::hours(1), Utc::now() + chrono::Duration::hours(1)).await.unwrap();
    assert_eq!(costs.len(), 1);
    let c = &costs[0];
    assert_eq!(
        (c.kind, c.agent.as_str(), c.provider.as_str(), c.model.as_str(), c.input_tokens),
        (CallKind::Embedding, "rag", "zhipu", "embedding-3", 2000)
    );
    assert!((c.cost_usd - 0.00014).abs() < 1e-12, "{}", c.cost_usd);
}

// Given 429 with Retry-After then success, and 500s then success, then the call succeeds; a
// wrong dimension is an error, not silent corruption.
async fn faults_are_retried_and_wrong_dimensions_refused(kind: StoreKind) {
    let server = integration::FakeServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "0"))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(503)).up_to_n_times(1).mount(&server).await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(vectors(1, 8)))
        .mount(&server)
        .await;
    let (embedder, ledger, _g) = setup(kind, &server).await;
    let retry = RetryPolicy::new(Duration::from_millis(5));
    let got = embed(&*embedder, &ledger, retry, None, "rag", "req-2", &["x".to_owned()], Input::Query).await.unwrap();
    assert_eq!(got, vec![vec![0.5; 8]]);
    assert_eq!(server.received_requests().await.unwrap().len(), 3);

    server.reset().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(vectors(1, 4)))
        .mount(&server)
        .await;
    let err =
        embed(&*embedder, &ledger, retry, None, "rag", "req-3", &["x".to_owned()], Input::Query).await.unwrap_err();
    assert!(err.to_string().contains("4 dimensions, expected 8"), "{err}");
    assert_eq!(server.received_requests().await.unwrap().len(), 1, "a malformed answer is not retried");
}

on_both_stores!(a_batch_is_one_accounted_call, faults_are_retried_and_wrong_dimensions_refused);
