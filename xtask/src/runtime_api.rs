//! A Lambda Runtime API on 127.0.0.1, enough to run a function binary as Lambda runs it:
//! the binary polls `GET /2018-06-01/runtime/invocation/next` and posts its answer to
//! `.../invocation/{id}/response` (or `/error`). A streamed response (`Lambda-Runtime-Function-
//! Response-Mode: streaming`) is passed on chunk by chunk as the function writes it. Used by the
//! demo, the cold-start bench and `cargo xtask serve`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use bytes::Bytes;
use futures::StreamExt;
use serde_json::Value;
use tokio::process::{Child, Command};
use tokio::sync::{Mutex, mpsc, oneshot};

/// A function's answer: a whole document (`Err`: the function failed), or the chunks of a
/// streamed one as they come (the prelude, eight NUL bytes, the body).
pub enum Reply {
    Whole(Result<Value, Value>),
    Stream(mpsc::Receiver<Bytes>),
}

type Pending = Arc<Mutex<HashMap<String, oneshot::Sender<Reply>>>>;

#[derive(Clone)]
struct Shared {
    queue: Arc<Mutex<mpsc::Receiver<(String, Value)>>>,
    pending: Pending,
    /// The Extensions API: each invocation the function takes is an INVOKE event for its
    /// registered extension (the functions register an internal one, `http::stream::run`).
    registered: Arc<std::sync::atomic::AtomicBool>,
    /// Each invocation taken: its id and deadline (ms since the epoch).
    invoked: mpsc::UnboundedSender<(String, u64)>,
    invokes: Arc<Mutex<mpsc::UnboundedReceiver<(String, u64)>>>,
    /// Each invocation's time (the function's `Timeout`): its deadline is this after it is taken.
    timeout: Duration,
    /// Set once the function asks for its first invocation (its init is done).
    polled: Arc<tokio::sync::watch::Sender<bool>>,
}

/// The ARN every local invocation names.
const FUNCTION_ARN: &str = "arn:aws:lambda:us-east-1:123456789012:function:local";

/// The emulated Runtime API and the function process it serves.
pub struct RuntimeApi {
    pub addr: SocketAddr,
    sender: mpsc::Sender<(String, Value)>,
    pending: Pending,
    polled: tokio::sync::watch::Receiver<bool>,
}

impl RuntimeApi {
    /// A Runtime API whose invocations each have 60 s.
    pub async fn start() -> std::io::Result<Self> {
        Self::with_timeout(Duration::from_secs(60)).await
    }

    /// A Runtime API whose invocations each have `timeout` (as a function's `Timeout`).
    pub async fn with_timeout(timeout: Duration) -> std::io::Result<Self> {
        let (sender, receiver) = mpsc::channel(16);
        let (invoked, invokes) = mpsc::unbounded_channel();
        let (polled, polled_rx) = tokio::sync::watch::channel(false);
        let shared = Shared {
            queue: Arc::new(Mutex::new(receiver)),
            pending: Arc::default(),
            registered: Arc::default(),
            invoked,
            invokes: Arc::new(Mutex::new(invokes)),
            timeout,
            polled: Arc::new(polled),
        };
        let pending = Arc::clone(&shared.pending);
        let app = Router::new()
            .route("/2018-06-01/runtime/invocation/next", get(next))
            .route("/2018-06-01/runtime/invocation/{id}/response", post(respond))
            .route("/2018-06-01/runtime/invocation/{id}/error", post(fail))
            .route("/2018-06-01/runtime/init/error", post(init_error))
            .route("/2020-01-01/extension/register", post(register))
            .route("/2020-01-01/extension/event/next", get(extension_next))
            .with_state(shared);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ok(Self { addr, sender, pending, polled: polled_rx })
    }

    /// Whether the function finished its init (asked for an invocation) within `within`.
    pub async fn ready(&self, within: Duration) -> bool {
        let mut polled = self.polled.clone();
        tokio::time::timeout(within, polled.wait_for(|p| *p)).await.is_ok_and(|r| r.is_ok())
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

    /// Sends `event` to the function and waits for its response (`Err` = function error); a
    /// streamed one read to its end, as `{"statusCode", "headers", "body"}`.
    pub async fn invoke(&self, event: Value) -> Result<Value, Value> {
        match self.invoke_streaming(event).await? {
            Reply::Whole(result) => result,
            Reply::Stream(mut chunks) => {
                let mut all = Vec::new();
                while let Some(chunk) = chunks.recv().await {
                    all.extend_from_slice(&chunk);
                }
                Ok(parse(&String::from_utf8_lossy(&all)))
            }
        }
    }

    /// Sends `event` to the function; its answer as soon as it starts.
    pub async fn invoke_streaming(&self, event: Value) -> Result<Reply, Value> {
        // Lambda request ids are unique across processes; so are these.
        let id = uuid::Uuid::new_v4().to_string();
        let (tx, rx) = oneshot::channel();
        self.pending.lock().await.insert(id.clone(), tx);
        self.sender.send((id, event)).await.map_err(|_| Value::from("runtime api closed"))?;
        match tokio::time::timeout(Duration::from_secs(120), rx).await {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(_)) => Err(Value::from("invocation dropped")),
            Err(_) => Err(Value::from("no response in 120 s")),
        }
    }
}

async fn next(State(s): State<Shared>) -> impl IntoResponse {
    s.polled.send_replace(true);
    let item = s.queue.lock().await.recv().await;
    let Some((id, event)) = item else {
        // Shutting down: no invocation will come. Lambda's Runtime API never answers then either,
        // and lambda_runtime takes an answer without a request id for a panic.
        return std::future::pending().await;
    };
    let mut headers = HeaderMap::new();
    let deadline = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_millis()
        as u64
        + s.timeout.as_millis() as u64;
    headers.insert("lambda-runtime-aws-request-id", HeaderValue::from_str(&id).expect("ascii id"));
    headers.insert("lambda-runtime-deadline-ms", HeaderValue::from(deadline));
    headers.insert("lambda-runtime-invoked-function-arn", HeaderValue::from_static(FUNCTION_ARN));
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    if s.registered.load(std::sync::atomic::Ordering::SeqCst) {
        let _ = s.invoked.send((id, deadline));
    }
    (StatusCode::OK, headers, event.to_string())
}

async fn register(State(s): State<Shared>) -> impl IntoResponse {
    s.registered.store(true, std::sync::atomic::Ordering::SeqCst);
    let mut headers = HeaderMap::new();
    headers.insert("lambda-extension-identifier", HeaderValue::from_static("local-extension"));
    let body = serde_json::json!({"functionName": "local", "functionVersion": "$LATEST", "handler": "bootstrap"});
    (StatusCode::OK, headers, body.to_string())
}

/// The next INVOKE event for the extension, once the function took its invocation.
async fn extension_next(State(s): State<Shared>) -> impl IntoResponse {
    let Some((id, deadline)) = s.invokes.lock().await.recv().await else {
        return (StatusCode::GONE, String::new());
    };
    let event = serde_json::json!({
        "eventType": "INVOKE", "deadlineMs": deadline, "requestId": id,
        "invokedFunctionArn": FUNCTION_ARN,
        "tracing": {"type": "X-Amzn-Trace-Id", "value": ""},
    });
    (StatusCode::OK, event.to_string())
}

async fn finish(s: &Shared, id: &str, reply: Reply) -> StatusCode {
    match s.pending.lock().await.remove(id) {
        Some(tx) => {
            let _ = tx.send(reply);
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

async fn respond(State(s): State<Shared>, UrlPath(id): UrlPath<String>, headers: HeaderMap, body: Body) -> StatusCode {
    let streaming = headers
        .get("lambda-runtime-function-response-mode")
        .is_some_and(|m| m.as_bytes().eq_ignore_ascii_case(b"streaming"));
    if !streaming {
        let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
        return finish(&s, &id, Reply::Whole(Ok(parse(&String::from_utf8_lossy(&bytes))))).await;
    }
    let (tx, rx) = mpsc::channel(64);
    let status = finish(&s, &id, Reply::Stream(rx)).await;
    let mut chunks = body.into_data_stream();
    while let Some(Ok(chunk)) = chunks.next().await {
        if tx.send(chunk).await.is_err() {
            // The client left: answering now, with the body unread, closes the function's
            // connection, as Lambda does when a stream's client goes away.
            break;
        }
    }
    status
}

async fn fail(State(s): State<Shared>, UrlPath(id): UrlPath<String>, body: String) -> StatusCode {
    finish(&s, &id, Reply::Whole(Err(parse(&body)))).await
}

async fn init_error(body: String) -> StatusCode {
    eprintln!("function init error: {body}");
    StatusCode::ACCEPTED
}
