//! A Lambda Runtime API on 127.0.0.1, enough to run a function binary as Lambda runs it:
//! the binary polls `GET /2018-06-01/runtime/invocation/next` and posts its answer to
//! `.../invocation/{id}/response` (or `/error`). Used by the demo and the cold-start bench.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use serde_json::Value;
use tokio::process::{Child, Command};
use tokio::sync::{Mutex, mpsc, oneshot};

type Pending = Arc<Mutex<HashMap<String, oneshot::Sender<Result<Value, Value>>>>>;

#[derive(Clone)]
struct Shared {
    queue: Arc<Mutex<mpsc::Receiver<(String, Value)>>>,
    pending: Pending,
}

/// The emulated Runtime API and the function process it serves.
pub struct RuntimeApi {
    pub addr: SocketAddr,
    sender: mpsc::Sender<(String, Value)>,
    pending: Pending,
}

impl RuntimeApi {
    pub async fn start() -> std::io::Result<Self> {
        let (sender, receiver) = mpsc::channel(16);
        let shared = Shared { queue: Arc::new(Mutex::new(receiver)), pending: Arc::default() };
        let pending = Arc::clone(&shared.pending);
        let app = Router::new()
            .route("/2018-06-01/runtime/invocation/next", get(next))
            .route("/2018-06-01/runtime/invocation/{id}/response", post(respond))
            .route("/2018-06-01/runtime/invocation/{id}/error", post(fail))
            .route("/2018-06-01/runtime/init/error", post(init_error))
            .with_state(shared);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ok(Self { addr, sender, pending })
    }

    /// Starts `binary` as a Lambda function against this Runtime API, with `env` added.
    pub fn spawn(&self, binary: &Path, env: &[(&str, String)], quiet: bool) -> std::io::Result<Child> {
        let mut cmd = Command::new(binary);
        cmd.env("AWS_LAMBDA_RUNTIME_API", self.addr.to_string())
            .env("AWS_LAMBDA_FUNCTION_NAME", binary.file_name().unwrap_or_default())
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env("AWS_LAMBDA_LOG_GROUP_NAME", "/aws/lambda/local")
            .env("AWS_LAMBDA_LOG_STREAM_NAME", "local")
            .env("AWS_REGION", "us-east-1")
            .kill_on_drop(true);
        for (k, v) in env {
            cmd.env(k, v);
        }
        if quiet {
            cmd.stdout(Stdio::null()).stderr(Stdio::null());
        }
        cmd.spawn()
    }

    /// Sends `event` to the function and waits for its response (`Err` = function error).
    pub async fn invoke(&self, event: Value) -> Result<Value, Value> {
        // Lambda request ids are unique across processes; so are these.
        let id = uuid::Uuid::new_v4().to_string();
        let (tx, rx) = oneshot::channel();
        self.pending.lock().await.insert(id.clone(), tx);
        self.sender.send((id, event)).await.map_err(|_| Value::from("runtime api closed"))?;
        match tokio::time::timeout(Duration::from_secs(120), rx).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(Value::from("invocation dropped")),
            Err(_) => Err(Value::from("no response in 120 s")),
        }
    }
}

async fn next(State(s): State<Shared>) -> impl IntoResponse {
    let item = s.queue.lock().await.recv().await;
    let Some((id, event)) = item else {
        return (StatusCode::GONE, HeaderMap::new(), String::new());
    };
    let mut headers = HeaderMap::new();
    let deadline =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_millis() + 60_000;
    headers.insert("lambda-runtime-aws-request-id", HeaderValue::from_str(&id).expect("ascii id"));
    headers.insert("lambda-runtime-deadline-ms", HeaderValue::from(deadline as u64));
    headers.insert(
        "lambda-runtime-invoked-function-arn",
        HeaderValue::from_static("arn:aws:lambda:us-east-1:123456789012:function:local"),
    );
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    (StatusCode::OK, headers, event.to_string())
}

async fn finish(s: &Shared, id: &str, result: Result<Value, Value>) -> StatusCode {
    match s.pending.lock().await.remove(id) {
        Some(tx) => {
            let _ = tx.send(result);
            StatusCode::ACCEPTED
        }
        None => StatusCode::NOT_FOUND,
    }
}

/// A buffered response is the JSON document; a streamed one (response streaming) is a JSON
/// prelude (status, headers), eight NUL bytes, then the body, returned as
/// `{"statusCode", "headers", "body"}` like a buffered one.
fn parse(body: &str) -> Value {
    if let Some((prelude, rest)) = body.split_once("\0\0\0\0\0\0\0\0") {
        let mut v: Value = serde_json::from_str(prelude).unwrap_or_default();
        v["body"] = Value::String(rest.to_owned());
        return v;
    }
    serde_json::from_str(body).unwrap_or_else(|_| Value::String(body.to_owned()))
}

async fn respond(State(s): State<Shared>, UrlPath(id): UrlPath<String>, body: String) -> StatusCode {
    finish(&s, &id, Ok(parse(&body))).await
}

async fn fail(State(s): State<Shared>, UrlPath(id): UrlPath<String>, body: String) -> StatusCode {
    finish(&s, &id, Err(parse(&body))).await
}

async fn init_error(body: String) -> StatusCode {
    eprintln!("function init error: {body}");
    StatusCode::ACCEPTED
}
