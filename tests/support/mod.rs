//! Test harness: real record stores (a SQLite file in a temp dir; a fresh table in DynamoDB
//! Local), a fake Perplexity on 127.0.0.1 speaking the real wire format (wiremock), and the
//! real `search` handler in between.
//!
//! DynamoDB Local is started by the test command (`infra/test.sh`), which exports its
//! endpoint as `DYNAMODB_LOCAL_ENDPOINT`. A DynamoDB test without it fails loudly; it never
//! passes by skipping.

use std::sync::Arc;

use chrono::Utc;
use lambda_http::{Body, Request};
use serde_json::Value;
use shared::clock::{Clock, ManualClock};
use shared::config::Config;
use shared::records::{DynamoRecords, LocalRecords, RecordStore};
use shared::search::SearchService;
use wiremock::MockServer;

/// Which record store adapter a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    Local,
    DynamoDb,
}

/// Keeps a test's store alive (the temp dir of the local store).
pub struct StoreGuard(#[allow(dead_code)] Option<tempfile::TempDir>);

/// A DynamoDB client for DynamoDB Local at `DYNAMODB_LOCAL_ENDPOINT`.
pub async fn dynamodb_local_client() -> aws_sdk_dynamodb::Client {
    let endpoint = std::env::var("DYNAMODB_LOCAL_ENDPOINT").unwrap_or_else(|_| {
        panic!(
            "DYNAMODB_LOCAL_ENDPOINT is not set: DynamoDB Local is not running. \
             Run the test suite with `bash infra/test.sh`, which installs and starts it."
        )
    });
    let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new("local", "local", None, None, "tests"))
        .endpoint_url(endpoint)
        .load()
        .await;
    aws_sdk_dynamodb::Client::new(&config)
}

/// A fresh, empty record store of `kind`.
pub async fn store(kind: StoreKind) -> (Arc<dyn RecordStore>, StoreGuard) {
    match kind {
        StoreKind::Local => {
            let dir = tempfile::tempdir().expect("temp dir");
            let store = LocalRecords::open(dir.path()).expect("open local store");
            (Arc::new(store), StoreGuard(Some(dir)))
        }
        StoreKind::DynamoDb => {
            let table = format!("test-{}", uuid::Uuid::new_v4());
            let store = DynamoRecords::new(dynamodb_local_client().await, table);
            store.create_table().await.expect("create table in DynamoDB Local");
            (Arc::new(store), StoreGuard(None))
        }
    }
}

/// The search handler wired to a real store, a movable clock and (optionally) a fake
/// Perplexity.
pub struct Harness {
    pub service: SearchService,
    pub clock: Arc<ManualClock>,
    pub records: Arc<dyn RecordStore>,
    /// The fake Perplexity; `None` when the harness runs with no key.
    pub upstream: Option<MockServer>,
    _guard: StoreGuard,
}

/// The key the harness configures; tests assert it never leaks.
pub const TEST_KEY: &str = "pplx-test-secret-key-0123456789";

impl Harness {
    /// A harness with a fake Perplexity and `PERPLEXITY_API_KEY` set.
    pub async fn new(kind: StoreKind) -> Self {
        Self::build(kind, true).await
    }

    /// A harness with no `PERPLEXITY_API_KEY` (the embedded default).
    pub async fn without_key(kind: StoreKind) -> Self {
        Self::build(kind, false).await
    }

    async fn build(kind: StoreKind, with_key: bool) -> Self {
        let upstream = if with_key { Some(MockServer::start().await) } else { None };
        let (records, guard) = store(kind).await;
        let uri = upstream.as_ref().map(MockServer::uri);
        let config = Config::from_lookup(|key| match key {
            "PERPLEXITY_API_KEY" if with_key => Some(TEST_KEY.into()),
            "PERPLEXITY_BASE_URL" => uri.clone(),
            "RETRY_BASE_MS" => Some("5".into()),
            "UPSTREAM_TIMEOUT_MS" => Some("400".into()),
            _ => None,
        })
        .expect("test config");
        let clock = Arc::new(ManualClock::new(Utc::now()));
        let service =
            shared::compose::search_service(&config, Arc::clone(&records), Arc::clone(&clock) as Arc<dyn Clock>)
                .expect("search service");
        Self { service, clock, records, upstream, _guard: guard }
    }

    /// The fake Perplexity.
    pub fn upstream(&self) -> &MockServer {
        self.upstream.as_ref().expect("this harness has a fake upstream")
    }

    /// Sends `method path` with `body` (raw text) through the real handler.
    pub async fn send(&self, method: &str, path: &str, body: &str) -> (u16, Value) {
        let req: Request = lambda_http::http::Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", "application/json")
            .body(Body::from(body.to_owned()))
            .expect("request");
        let response = search::handle(&self.service, req).await;
        let status = response.status().as_u16();
        let text = match response.body() {
            Body::Text(t) => t.clone(),
            other => String::from_utf8_lossy(other.as_ref()).into_owned(),
        };
        assert!(!text.contains(TEST_KEY), "the API key leaked into a response");
        let json = serde_json::from_str(&text).unwrap_or_else(|e| panic!("response is not JSON ({e}): {text}"));
        (status, json)
    }

    /// POSTs `body` as JSON to `path`.
    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.send("POST", path, &body.to_string()).await
    }

    /// Requests the fake upstream received so far.
    pub async fn upstream_calls(&self) -> Vec<wiremock::Request> {
        match &self.upstream {
            Some(server) => server.received_requests().await.unwrap_or_default(),
            None => Vec::new(),
        }
    }

    /// Cost records of the last day (by the harness clock).
    pub async fn costs(&self) -> Vec<shared::ledger::CostRecord> {
        let now = self.clock.now();
        shared::ledger::Ledger::new(
            Arc::clone(&self.records),
            shared::retry::RetryPolicy::new(std::time::Duration::from_millis(1)),
        )
        .between(now - chrono::Duration::days(1), now + chrono::Duration::seconds(1), now)
        .await
        .expect("read ledger")
    }
}

/// A Perplexity chat-completions response body.
pub fn completion(content: &str, citations: &[&str], search_results: Value, usage: Value) -> Value {
    serde_json::json!({
        "id": "cmpl-test-1",
        "model": "sonar",
        "object": "chat.completion",
        "created": 1_735_689_600,
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        "citations": citations,
        "search_results": search_results,
        "usage": usage,
    })
}

/// Runs each named `async fn name(kind: StoreKind)` once per record store.
#[macro_export]
macro_rules! on_both_stores {
    ($($name:ident),* $(,)?) => {
        mod local {
            $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
               async fn $name() { super::$name($crate::StoreKind::Local).await } )*
        }
        mod dynamodb {
            $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
               async fn $name() { super::$name($crate::StoreKind::DynamoDb).await } )*
        }
    };
}
