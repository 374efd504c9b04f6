//! Test harness: real record stores (a SQLite file in a temp dir; a fresh table in DynamoDB
//! Local), a fake Perplexity on 127.0.0.1 speaking its Agent API and refusing what the real one
//! refuses (wiremock + [`perplexity::guard`]), and the real `search` handler in between.
//!
//! DynamoDB Local is started by the test command (`infra/test.sh`), which exports its
//! endpoint as `DYNAMODB_LOCAL_ENDPOINT`. A DynamoDB test without it fails loudly; it never
//! passes by skipping.

pub mod chat;
pub mod embedding;
pub mod logs;
pub mod perplexity;
pub mod rag;
pub mod secrets_manager;

use std::sync::Arc;

use chrono::Utc;
use lambda_http::{Body, Request};
use search::SearchFunction;
use serde_json::Value;
use shared::compose::Config;
use shared::core::clock::{Clock, ManualClock};
use shared::core::records::{DynamoRecords, LocalRecords, RecordStore};
use wiremock::MockServer;

/// `req` as API Gateway passes it after its IAM authorizer verified a SigV4 signature: the
/// backend's role.
pub fn as_backend(req: Request) -> Request {
    with_authorizer(
        req,
        serde_json::json!({"iam": {"accountId": "123456789012", "callerId": "AROATEST:backend",
        "userArn": "arn:aws:sts::123456789012:assumed-role/activity-backend/backend", "userId": "AROATEST:backend"}}),
    )
}

/// `req` signed by another IAM role of the account, `role`.
pub fn as_role(req: Request, role: &str) -> Request {
    with_authorizer(
        req,
        serde_json::json!({"iam": {"accountId": "123456789012", "callerId": "AROAOTHER:s",
        "userArn": format!("arn:aws:sts::123456789012:assumed-role/{role}/s"), "userId": "AROAOTHER:s"}}),
    )
}

/// `req` as API Gateway passes it after its JWT authorizer verified a token whose `sub` is `user`.
pub fn as_user(req: Request, user: &str) -> Request {
    with_authorizer(
        req,
        serde_json::json!({"jwt": {"claims": {"sub": user, "iss": "https://issuer.example"}, "scopes": null}}),
    )
}

/// `req` with `authorizer` as what API Gateway's authorizer verified (payload 2.0 form).
pub fn with_authorizer(req: Request, authorizer: Value) -> Request {
    use lambda_http::RequestExt;
    let context = serde_json::json!({
        "http": {"method": req.method().as_str(), "path": req.uri().path(), "protocol": "HTTP/1.1",
                 "sourceIp": "192.0.2.1", "userAgent": "integration-tests"},
        "authorizer": authorizer, "timeEpoch": 0});
    let context = serde_json::from_value(context).expect("an HTTP API request context");
    req.with_request_context(lambda_http::request::RequestContext::ApiGatewayV2(context))
}

/// Which record store adapter a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    Local,
    DynamoDb,
}

/// The configuration `vars` make (a later entry wins over an earlier one), nothing else from
/// the environment: the one config builder of every test binary.
pub fn config<K: AsRef<str>, V: AsRef<str>>(vars: &[(K, V)]) -> Config {
    config_result(vars).expect("test config")
}

/// The configuration `vars` make, or why a function would refuse to start with them.
pub fn config_result<K: AsRef<str>, V: AsRef<str>>(vars: &[(K, V)]) -> shared::Result<Config> {
    Config::from_lookup(|key| vars.iter().rev().find(|(k, _)| k.as_ref() == key).map(|(_, v)| v.as_ref().to_owned()))
}

/// Where the bundled model is (`infra/fetch-model.sh` puts it under the cache): the variables
/// that locate it, from this process's environment.
pub fn model_location() -> Vec<(&'static str, String)> {
    ["HOME", "RESEARCH_BUNDLE_CACHE"].into_iter().filter_map(|k| std::env::var(k).ok().map(|v| (k, v))).collect()
}

/// An API Gateway request to the handler.
pub fn request(method: &str, path: &str, body: &str) -> Request {
    let mut req = Request::new(Body::from(body.to_owned()));
    *req.method_mut() = method.parse().unwrap();
    *req.uri_mut() = format!("https://api.example.com{path}").parse().unwrap();
    req
}

/// Status and JSON body of a response.
pub fn respond(response: lambda_http::Response<Body>) -> (u16, Value) {
    let body = match response.body() {
        Body::Text(t) => t.clone(),
        other => String::from_utf8_lossy(other.as_ref()).into_owned(),
    };
    (response.status().as_u16(), serde_json::from_str(&body).unwrap_or_else(|_| serde_json::json!({"raw": body})))
}

/// A URL on 127.0.0.1 where nothing listens (connections refused: a killed server).
pub fn refused_url() -> String {
    let port =
        std::net::TcpListener::bind("127.0.0.1:0").expect("bind a port").local_addr().expect("an address").port();
    format!("http://127.0.0.1:{port}")
}

/// Keeps a test's store alive (the temp dir of the local store).
pub struct StoreGuard(#[allow(dead_code)] Option<tempfile::TempDir>);

/// The endpoint of the DynamoDB Local the test command started.
pub fn dynamodb_local_endpoint() -> String {
    std::env::var("DYNAMODB_LOCAL_ENDPOINT").unwrap_or_else(|_| {
        panic!(
            "DYNAMODB_LOCAL_ENDPOINT is not set: DynamoDB Local is not running. \
             Run the test suite with `bash infra/test.sh`, which installs and starts it."
        )
    })
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
            let store = DynamoRecords::local(&dynamodb_local_endpoint(), table).await;
            store.create_table().await.expect("create table in DynamoDB Local");
            (Arc::new(store), StoreGuard(None))
        }
    }
}

/// The search handler wired to a real store, a movable clock and fake upstreams.
pub struct Harness {
    pub app: Arc<SearchFunction>,
    pub clock: Arc<ManualClock>,
    pub records: Arc<dyn RecordStore>,
    /// The fake Perplexity; `None` when the harness runs without its key.
    pub upstream: Option<FakeServer>,
    /// The fake Tavily; `None` when the harness runs without its key.
    pub tavily: Option<FakeServer>,
    _guard: StoreGuard,
}

/// A wiremock server on 127.0.0.1 that is dropped on a thread of its own. Wiremock's drop
/// blocks on a tokio lock; on a runtime thread whose cooperative budget is spent (the end of a
/// long test) that lock keeps answering "later" and the drop spins forever, hanging the suite.
pub struct FakeServer(Option<MockServer>);

impl FakeServer {
    pub async fn start() -> Self {
        Self(Some(MockServer::start().await))
    }
}

impl std::ops::Deref for FakeServer {
    type Target = MockServer;
    fn deref(&self) -> &MockServer {
        self.0.as_ref().expect("present until dropped")
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        if let Some(server) = self.0.take() {
            let _ = std::thread::spawn(move || drop(server)).join();
        }
    }
}

/// The keys the harness configures; tests assert they never leak.
pub const TEST_KEY: &str = "pplx-test-secret-key-0123456789";
pub const TAVILY_KEY: &str = "tvly-test-secret-key-9876543210";

/// Which fake upstreams a harness has, and extra environment.
#[derive(Default)]
pub struct Setup<'a> {
    pub perplexity: bool,
    pub tavily: bool,
    pub env: &'a [(&'a str, &'a str)],
    /// The record store is down: a DynamoDB Local table that was never created, so every
    /// read and write fails as a deleted table's would.
    pub store_down: bool,
    /// This record store instead of a fresh one (a faulty one, say).
    pub records: Option<Arc<dyn RecordStore>>,
}

impl Harness {
    /// A harness with a fake Perplexity and `PERPLEXITY_API_KEY` set.
    pub async fn new(kind: StoreKind) -> Self {
        Self::with(kind, Setup { perplexity: true, ..Setup::default() }).await
    }

    /// A harness with no keys at all (the embedded default).
    pub async fn without_key(kind: StoreKind) -> Self {
        Self::with(kind, Setup::default()).await
    }

    /// A harness as `setup` says.
    pub async fn with(kind: StoreKind, setup: Setup<'_>) -> Self {
        let upstream = if setup.perplexity { Some(strict_perplexity().await) } else { None };
        let tavily = if setup.tavily { Some(FakeServer::start().await) } else { None };
        let (records, guard) = if let Some(records) = setup.records {
            (records, StoreGuard(None))
        } else if setup.store_down {
            let table = format!("missing-{}", uuid::Uuid::new_v4());
            let down: Arc<dyn RecordStore> = Arc::new(DynamoRecords::local(&dynamodb_local_endpoint(), table).await);
            (down, StoreGuard(None))
        } else {
            store(kind).await
        };
        let (pplx_uri, tavily_uri) = (upstream.as_ref().map(|s| s.uri()), tavily.as_ref().map(|s| s.uri()));
        let mut vars: Vec<(&str, String)> = vec![("RETRY_BASE_MS", "5".into()), ("UPSTREAM_TIMEOUT_MS", "400".into())];
        if let Some(uri) = &pplx_uri {
            vars.extend([("PERPLEXITY_API_KEY", TEST_KEY.into()), ("PERPLEXITY_BASE_URL", uri.clone())]);
        }
        if let Some(uri) = &tavily_uri {
            vars.extend([("TAVILY_API_KEY", TAVILY_KEY.into()), ("TAVILY_BASE_URL", uri.clone())]);
        }
        vars.extend(setup.env.iter().map(|(k, v)| (*k, (*v).to_owned())));
        let config = config(&vars);
        let clock = Arc::new(ManualClock::new(Utc::now()));
        let app = SearchFunction::new(&config, Arc::clone(&records), Arc::clone(&clock) as Arc<dyn Clock>)
            .expect("search function");
        Self { app: Arc::new(app), clock, records, upstream, tavily, _guard: guard }
    }

    /// The fake Tavily.
    pub fn tavily(&self) -> &MockServer {
        self.tavily.as_ref().expect("this harness has a fake Tavily")
    }

    /// The fake Perplexity.
    pub fn upstream(&self) -> &MockServer {
        self.upstream.as_ref().expect("this harness has a fake upstream")
    }

    /// Forgets the fake Perplexity's mocks and requests; it stays strict.
    pub async fn reset_upstream(&self) {
        self.upstream().reset().await;
        perplexity::guard(self.upstream()).await;
    }

    /// The cost-report function over this harness's ledger, records and clock (the default
    /// agents, a user budget of $0.5, no operators).
    pub fn cost_report(&self) -> cost_report::App {
        cost_report::App {
            ledger: self.app.search.ledger().clone(),
            clock: self.clock.clone(),
            records: self.records.clone(),
            agents: shared::costs::settings::DEFAULT_AGENTS.map(String::from).to_vec(),
            user_budget_usd: 0.5,
            operators: Vec::new(),
        }
    }

    /// Sends `method path` with `body` (raw text) through the real handler.
    pub async fn send(&self, method: &str, path: &str, body: &str) -> (u16, Value) {
        let (status, _, json) = self.exchange(method, path, body, None).await;
        (status, json)
    }

    /// [`Self::send`] as Lambda invocation `request_id` (when given), with the response headers.
    /// Signed as the backend (the IAM authorizer's identity), as every paid route needs.
    pub async fn exchange(
        &self,
        method: &str,
        path: &str,
        body: &str,
        request_id: Option<&str>,
    ) -> (u16, lambda_http::http::HeaderMap, Value) {
        self.exchange_as(as_backend(request(method, path, body)), request_id).await
    }

    /// `req` (with whatever identity it carries) through the real handler, as Lambda invocation
    /// `request_id` (when given): status, response headers and JSON body.
    pub async fn exchange_as(
        &self,
        mut req: Request,
        request_id: Option<&str>,
    ) -> (u16, lambda_http::http::HeaderMap, Value) {
        use lambda_http::RequestExt;
        req.headers_mut().insert("content-type", "application/json".parse().expect("a header value"));
        if let Some(id) = request_id {
            let mut context = req.lambda_context_ref().cloned().unwrap_or_default();
            context.request_id = id.to_owned();
            req = req.with_lambda_context(context);
        }
        let response = shared::http::invoke(search::routes(Arc::clone(&self.app)), req).await;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = match response.body() {
            Body::Text(t) => t.clone(),
            other => String::from_utf8_lossy(other.as_ref()).into_owned(),
        };
        assert!(!text.contains(TEST_KEY) && !text.contains(TAVILY_KEY), "an API key leaked into a response");
        let json = serde_json::from_str(&text).unwrap_or_else(|e| panic!("response is not JSON ({e}): {text}"));
        (status, headers, json)
    }

    /// POSTs `body` as JSON to `path`.
    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.send("POST", path, &body.to_string()).await
    }

    /// Requests the fake Perplexity received so far.
    pub async fn upstream_calls(&self) -> Vec<wiremock::Request> {
        received(&self.upstream).await
    }

    /// Requests the fake Tavily received so far.
    pub async fn tavily_calls(&self) -> Vec<wiremock::Request> {
        received(&self.tavily).await
    }

    /// Cost records of the last day (by the harness clock).
    pub async fn costs(&self) -> Vec<shared::costs::ledger::CostRecord> {
        let now = self.clock.now();
        self.app
            .search
            .ledger()
            .between(now - chrono::Duration::days(1), now + chrono::Duration::seconds(1))
            .await
            .expect("read ledger")
    }
}

async fn received(server: &Option<FakeServer>) -> Vec<wiremock::Request> {
    match server {
        Some(server) => server.received_requests().await.unwrap_or_default(),
        None => Vec::new(),
    }
}

/// A fake Perplexity on 127.0.0.1: strict from the start ([`perplexity::guard`]).
pub async fn strict_perplexity() -> FakeServer {
    let server = FakeServer::start().await;
    perplexity::guard(&server).await;
    server
}

/// An OpenAI-compatible chat-completions response body (the LLM port's wire format).
pub fn chat_completion(content: &str, usage: Value) -> Value {
    serde_json::json!({
        "id": "cmpl-test-1",
        "model": "deepseek-chat",
        "object": "chat.completion",
        "created": 1_735_689_600,
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
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

/// The Rust files under `dir`, at any depth.
pub fn rust_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files
}
