//! `cargo xtask serve`: the streaming front door on a laptop, for a newcomer and a front-end
//! developer, with the playground at `/` ([`crate::playground`]).
//!
//! At start the sample activities are indexed (through `index-activity`, into the local vector
//! store the assistant reads), so `explore_nearby` recommends from them;
//! `SAMPLE_ACTIVITIES=0` skips it, and a remote store is written only with `SAMPLE_ACTIVITIES=1`.
//!
//! The real function binaries run under the local Runtime API ([`RuntimeApi`]), each request
//! passed to them as its Function URL passes it (payload 2.0, a `lambda-url` domain, no
//! authorizer: the function verifies the user's JWT itself against `JWT_ISSUER` and
//! `JWT_AUDIENCE`), and a streamed answer passed back chunk by chunk. The environment (keys,
//! `LLM_BASE_URL`, `JWT_*`, stores) reaches the functions as it is. Routes: `/chat` (the
//! assistant, one instance, 30 s an invocation) and `/api/research...` (the timeline,
//! [`RESEARCH_INSTANCES`] instances, 900 s, one stream link key for all: `STREAM_TOKEN_KEY` or
//! one drawn here), as their Function URLs; `/rag/search` and `/users/...` (rag-search) as the
//! HTTP API passes them, the user's JWT verified here as its authorizer does; `/cost-report`
//! (cost-report) as the HTTP API passes a SigV4 caller's (on a laptop, you are its operator).
//! Without `JWT_ISSUER`, a local OpenID issuer at `/issuer` signs in any name
//! (`POST /issuer/token {"sub"}`, audience `JWT_AUDIENCE` or `playground`); without
//! `ASSISTANT_TOOLS`, a sample app tool (`cancelActivity`, MANAGE) waits for approvals. Each
//! instance is one process serving one request at a time, as a Lambda environment does; a
//! request goes to the least busy. It answers requests for 127.0.0.1 and localhost only (a
//! DNS-rebinding page names its own host), and CORS on every route, as the template's
//! `AllowedOrigins` does on every door: pages of this machine, or the origins `CORS_ORIGINS`
//! (comma-separated) names.

use std::collections::HashMap;
use std::convert::Infallible;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode};
use bytes::Bytes;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::process::Child;

use crate::runtime_api::{Reply, RuntimeApi};
use crate::template_routes::{self, Authorizer, Route};

/// Headers a browser may send, and may read.
const ALLOW_HEADERS: &str = "authorization, content-type, accept, last-event-id";
const EXPOSE_HEADERS: &str = "x-user-budget-left-usd, x-vercel-ai-ui-message-stream, retry-after";

/// Concurrent timeline streams (readers, reconnects) the door serves.
const RESEARCH_INSTANCES: usize = 4;

struct Door {
    /// The functions behind Function URLs, by the first segment of their paths.
    urls: HashMap<&'static str, Function>,
    /// The HTTP API's routes (template.yaml's) and the functions serving them, by binary.
    routes: Vec<Route>,
    functions: HashMap<&'static str, Function>,
    origins: Option<Vec<String>>,
    /// Verifies users' tokens for the HTTP API's routes (its JWT authorizer's part).
    verifier: shared::http::jwt::Verifier,
    issuer: Option<crate::playground::Issuer>,
    /// The bearer token the sample app tool accepts (`APP_TOOL_TOKEN`), when it runs.
    sample_tool_token: Option<String>,
    /// The playground's page and bundle.
    playground: Option<std::path::PathBuf>,
}

/// A function's instances: one process each, under its own Runtime API.
struct Function {
    instances: Vec<(RuntimeApi, Arc<AtomicUsize>)>,
    _processes: Vec<Child>,
}

impl Function {
    /// `count` processes of `binary`, each invocation given `timeout`, with `env` added.
    async fn start(binary: &Path, count: usize, timeout: Duration, env: &[(&str, String)]) -> crate::Result<Self> {
        let (mut instances, mut processes) = (Vec::new(), Vec::new());
        // One after another: each opens the local stores at its init, and is ready once it asks
        // for its first request.
        for _ in 0..count {
            let api = RuntimeApi::with_timeout(timeout).await?;
            processes.push(api.spawn(binary, env, false)?);
            if !api.ready(Duration::from_secs(60)).await {
                return Err(format!("{} did not start within 60 s (its error is above)", binary.display()).into());
            }
            instances.push((api, Arc::default()));
        }
        Ok(Self { instances, _processes: processes })
    }

    /// The least busy instance, counted busy until the returned guard is dropped.
    fn least_busy(&self) -> (&RuntimeApi, Busy) {
        let (api, busy) = self.instances.iter().min_by_key(|(_, b)| b.load(Ordering::SeqCst)).expect("one instance");
        busy.fetch_add(1, Ordering::SeqCst);
        (api, Busy(Arc::clone(busy)))
    }
}

/// One request on an instance, until its answer is sent or dropped.
struct Busy(Arc<AtomicUsize>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The functions the door serves.
pub const SERVED: [&str; 5] = ["assistant", "research", "index-activity", "rag-search", "cost-report"];

/// Builds the functions, starts them and serves on `127.0.0.1:$PORT` (default 8787; 0 picks a
/// free port) until stopped. Prints `serving on http://127.0.0.1:<port>` once it answers.
pub async fn run() -> crate::Result {
    crate::ensure_model()?;
    let playground = crate::playground::build()
        .map_err(|e| eprintln!("the playground is not built ({e}); the door serves the API alone"))
        .ok();
    let [assistant, research, indexer, rag, costs] = crate::build_functions(SERVED, false)?;
    let port: u16 = std::env::var("PORT").ok().and_then(|p| p.parse().ok()).unwrap_or(8787);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let addr = listener.local_addr()?;
    let here = format!("http://{addr}");
    // Who signs users in: JWT_ISSUER's, else the door's own.
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let issuer = match var("JWT_ISSUER") {
        Some(_) => None,
        None => Some(crate::playground::Issuer::new(
            format!("{here}/issuer"),
            var("JWT_AUDIENCE").unwrap_or_else(|| "playground".into()),
        )?),
    };
    let (issuer_url, audience) = match &issuer {
        Some(local) => (local.url.clone(), local.audience.clone()),
        None => (var("JWT_ISSUER").unwrap_or_default(), var("JWT_AUDIENCE").unwrap_or_default()),
    };
    let verifier = shared::http::jwt::Issuer::parse(Some(&issuer_url), Some(&audience))?
        .ok_or("JWT_ISSUER and JWT_AUDIENCE are needed")
        .and_then(|i| shared::http::jwt::Verifier::new(i).map_err(|_| "the issuer cannot be used"))?;
    let mut users = vec![("JWT_ISSUER", issuer_url.clone()), ("JWT_AUDIENCE", audience.clone())];
    // The sample app tool, unless the app's own are configured.
    let sample_tool_token = var("ASSISTANT_TOOLS").is_none().then(|| uuid::Uuid::new_v4().simple().to_string());
    let mut chat_env = users.clone();
    if let Some(token) = &sample_tool_token {
        chat_env
            .extend([("ASSISTANT_TOOLS", crate::playground::sample_tools(&here)), ("APP_TOOL_TOKEN", token.clone())]);
    }
    // One key for every research instance: a link issued by one opens the stream on another.
    let key = std::env::var("STREAM_TOKEN_KEY")
        .unwrap_or_else(|_| format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple()));
    index_samples(&indexer).await;
    let chat = Function::start(&assistant, 1, Duration::from_secs(30), &chat_env).await?;
    users.push(("STREAM_TOKEN_KEY", key));
    let research = Function::start(&research, RESEARCH_INSTANCES, Duration::from_secs(900), &users).await?;
    let rag = Function::start(&rag, 1, Duration::from_secs(30), &[]).await?;
    let costs = Function::start(&costs, 1, Duration::from_secs(30), &[]).await?;
    let origins = std::env::var("CORS_ORIGINS")
        .ok()
        .map(|o| o.split(',').map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect());
    let urls = HashMap::from([("chat", chat), ("api", research)]);
    let routes = crate::template_routes::parse(&std::fs::read_to_string(crate::root().join("template.yaml"))?);
    let functions = HashMap::from([("rag-search", rag), ("cost-report", costs)]);
    let door = Arc::new(Door { urls, routes, functions, origins, verifier, issuer, sample_tool_token, playground });
    let app = Router::new().fallback(pass).with_state(door);
    // Each chunk leaves at once (no Nagle wait for the next).
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    println!(
        "serving on http://{addr}  (open it: the playground; POST /chat: the assistant, JSON, SSE or the AI SDK's \
         UI message stream; POST /api/research: the timeline, its stream_url for an EventSource; POST /rag/search; \
         GET /cost-report; a local issuer at /issuer unless JWT_ISSUER is set)"
    );
    // Stopped (Ctrl-C, or SIGTERM from a test runner): the door and its function processes go.
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        served = axum::serve(listener, app) => served?,
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
    Ok(())
}

/// One request through the door.
/// Indexes the sample activities through `indexer` into the local vector store (Qdrant Edge
/// under `DATA_DIR`), before the assistant opens it. A remote store (`VECTOR_STORE=qdrant`) is
/// written only when `SAMPLE_ACTIVITIES=1` asks: it may be shared. A failure is reported and
/// the door serves on.
async fn index_samples(indexer: &Path) {
    let asked = std::env::var("SAMPLE_ACTIVITIES").ok();
    let local = std::env::var("VECTOR_STORE").map_or(true, |v| v.is_empty() || v == "edge");
    match asked.as_deref() {
        Some("0") => return,
        Some("1") => {}
        _ if !local => {
            eprintln!(
                "sample activities not indexed: VECTOR_STORE is not the local one (SAMPLE_ACTIVITIES=1 writes them)"
            );
            return;
        }
        _ => {}
    }
    let indexed = async {
        let api = RuntimeApi::start().await?;
        let mut child = api.spawn(indexer, &[], false)?;
        if !api.ready(Duration::from_secs(60)).await {
            return Err("index-activity did not start within 60 s (its error is above)".into());
        }
        let done = crate::samples::index(&api, false).await;
        child.kill().await?;
        done
    };
    match indexed.await {
        Ok((count, pending)) => eprintln!("indexed {count} sample activities ({pending} waiting for an embedder)"),
        Err(e) => eprintln!("sample activities not indexed ({e}); serving without them"),
    }
}

/// Whether `host` (a `Host` header or an origin's host, with or without its port) is this
/// machine's loopback: the door answers no other (a DNS-rebinding page names its own host).
fn loopback(host: &str) -> bool {
    let name = if host.starts_with('[') { host.split(']').next().map(|h| &h[1..]) } else { host.split(':').next() };
    matches!(name, Some("127.0.0.1" | "localhost" | "::1"))
}

async fn pass(State(door): State<Arc<Door>>, request: Request<Body>) -> Response<Body> {
    let origin = request.headers().get("origin").cloned();
    let host = request.headers().get("host").and_then(|h| h.to_str().ok()).unwrap_or_default();
    if !loopback(host) {
        return refused(StatusCode::MISDIRECTED_REQUEST, "the local door answers 127.0.0.1 and localhost only");
    }
    let mut response = if request.method() == Method::OPTIONS {
        Response::builder().status(StatusCode::NO_CONTENT).body(Body::empty()).expect("valid")
    } else if origin.as_ref().is_some_and(|o| !allowed_origin(&door, o)) {
        // A page of a website the developer visits may send a simple POST (no preflight): the
        // door signs its IAM routes as you, so it refuses what CORS would only hide the answer of.
        refused(StatusCode::FORBIDDEN, "the local door serves pages of this machine (or CORS_ORIGINS) only")
    } else {
        match forward(&door, request).await {
            Ok(response) => response,
            Err((status, message)) => refused(status, &message),
        }
    };
    cors(&door, origin, response.headers_mut());
    response
}

/// A JSON answer of the door's own.
fn json_response(status: StatusCode, body: &Value) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(body.to_string().into())
        .expect("valid")
}

/// The door's own refusal: `{"error": {"code": "local_door", "message"}}`.
fn refused(status: StatusCode, message: &str) -> Response<Body> {
    json_response(status, &json!({"error": {"code": "local_door", "message": message}}))
}

/// Whether `origin` (`http://localhost:5173`) is a page on this machine.
fn local_origin(origin: &[u8]) -> bool {
    let origin = String::from_utf8_lossy(origin);
    origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://")).is_some_and(loopback)
}

/// Whether a page of `origin` may call the door: pages on this machine by default (a dev server,
/// the playground), or those `CORS_ORIGINS` names; a page of any website the developer visits
/// must not spend their keys through it.
fn allowed_origin(door: &Door, origin: &HeaderValue) -> bool {
    match &door.origins {
        None => local_origin(origin.as_bytes()),
        Some(list) => list.iter().any(|o| o == "*" || o.as_bytes() == origin.as_bytes()),
    }
}

fn cors(door: &Door, origin: Option<HeaderValue>, headers: &mut HeaderMap) {
    let Some(origin) = origin else { return };
    if allowed_origin(door, &origin) {
        headers.insert("access-control-allow-origin", origin);
        headers.insert("access-control-allow-methods", HeaderValue::from_static("GET, POST, PUT, DELETE, OPTIONS"));
        headers.insert("access-control-allow-headers", HeaderValue::from_static(ALLOW_HEADERS));
        headers.insert("access-control-expose-headers", HeaderValue::from_static(EXPOSE_HEADERS));
        headers.insert("access-control-max-age", HeaderValue::from_static("600"));
        headers.insert("vary", HeaderValue::from_static("origin"));
    }
}

async fn forward(door: &Door, request: Request<Body>) -> Result<Response<Body>, (StatusCode, String)> {
    let first = request.uri().path().trim_start_matches('/').split('/').next().unwrap_or_default().to_owned();
    if let Some(answer) = local(door, &first, request.method(), request.uri().path()) {
        return answer;
    }
    if first == "issuer" || first == "sample-app" {
        return own(door, request).await;
    }
    let (function, authorizer) = match door.urls.get(first.as_str()) {
        Some(function) => (function, None),
        None => {
            // The HTTP API's routes (template.yaml's), of the functions this door runs.
            let (method, path) = (request.method().as_str(), request.uri().path());
            let Some(route) =
                door.routes.iter().find(|r| r.method == method && template_routes::matches(&r.path, path))
            else {
                return Err((StatusCode::NOT_FOUND, format!("no route {method} {path}")));
            };
            let Some(function) = door.functions.get(route.function.as_str()) else {
                return Err((
                    StatusCode::NOT_FOUND,
                    format!("{} (the {} function) is not served here", route.path, route.function),
                ));
            };
            (function, Some(authorize(door, &route.authorizer, request.headers()).await?))
        }
    };
    let mut event = function_url_event(request).await?;
    if let Some(authorizer) = authorizer {
        // The HTTP API's payload 2.0: its domain, and what its authorizer verified.
        event["requestContext"]["domainName"] = json!("local.execute-api.us-east-1.amazonaws.com");
        if !authorizer.is_null() {
            event["requestContext"]["authorizer"] = authorizer;
        }
    }
    let (api, busy) = function.least_busy();
    let reply = api.invoke_streaming(event).await.map_err(|e| (StatusCode::BAD_GATEWAY, e.to_string()))?;
    match reply {
        Reply::Whole(Ok(v)) => Ok(buffered(&v)),
        Reply::Whole(Err(e)) => Err((StatusCode::BAD_GATEWAY, format!("the function failed: {e}"))),
        Reply::Stream(chunks) => streamed(chunks, busy).await,
    }
}

/// What the HTTP API's `authorizer` puts in the request context (none: null), or its 401.
async fn authorize(door: &Door, authorizer: &Authorizer, headers: &HeaderMap) -> Result<Value, (StatusCode, String)> {
    Ok(match authorizer {
        Authorizer::None => Value::Null,
        // As the HTTP API's JWT authorizer: a 401 before the function is invoked.
        Authorizer::UserJwt => {
            // As API Gateway's authorizer: the token, with or without `Bearer `.
            let header = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default();
            let token = header.strip_prefix("Bearer ").or_else(|| header.strip_prefix("bearer ")).unwrap_or(header);
            if token.is_empty() {
                return Err((StatusCode::UNAUTHORIZED, "Unauthorized".to_owned()));
            }
            let claims =
                door.verifier.verify(token).await.map_err(|e| {
                    (StatusCode::from_u16(e.status()).unwrap_or(StatusCode::UNAUTHORIZED), e.to_string())
                })?;
            json!({"jwt": {"claims": claims, "scopes": null}})
        }
        // On a laptop, you are the operator: your requests are signed.
        Authorizer::Iam => json!({"iam": {"accountId": "000000000000", "callerId": "LOCAL:operator",
            "userArn": "arn:aws:sts::000000000000:assumed-role/local-operator/you", "userId": "LOCAL:operator"}}),
    })
}

/// The playground's page and bundle, when asked for.
fn local(
    door: &Door,
    first: &str,
    method: &Method,
    path: &str,
) -> Option<Result<Response<Body>, (StatusCode, String)>> {
    if method != Method::GET || !(first.is_empty() || path == "/app.js") {
        return None;
    }
    let Some(bundle) = &door.playground else {
        return Some(Err((StatusCode::NOT_FOUND, "the playground is not built (npm is needed: see the log)".into())));
    };
    let (file, kind) = if path == "/app.js" {
        (bundle.clone(), "text/javascript; charset=utf-8")
    } else {
        (crate::playground::dir().join("index.html"), "text/html; charset=utf-8")
    };
    Some(match std::fs::read(&file) {
        Ok(bytes) => Ok(Response::builder()
            .header("content-type", kind)
            .header("cache-control", "no-store")
            .body(bytes.into())
            .expect("valid")),
        Err(e) => Err((StatusCode::NOT_FOUND, format!("{}: {e}", file.display()))),
    })
}

/// What the door answers itself: the local issuer and the sample app tool.
async fn own(door: &Door, request: Request<Body>) -> Result<Response<Body>, (StatusCode, String)> {
    let path = request.uri().path().to_owned();
    let answer = |body: Value| Ok(json_response(StatusCode::OK, &body));
    let bearer = request.headers().get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let origin = request.headers().get("origin").cloned();
    let body = axum::body::to_bytes(request.into_body(), 1 << 16)
        .await
        .map_err(|e| (StatusCode::PAYLOAD_TOO_LARGE, e.to_string()))?;
    match (path.as_str(), &door.issuer, &door.sample_tool_token) {
        ("/issuer/.well-known/openid-configuration", Some(issuer), _) => answer(issuer.discovery()),
        ("/issuer/jwks.json", Some(issuer), _) => answer(issuer.jwks()),
        ("/issuer/token", _, _) if origin.as_ref().is_some_and(|o| !local_origin(o.as_bytes())) => {
            Err((StatusCode::FORBIDDEN, "the local issuer signs in pages of this machine only".into()))
        }
        ("/issuer/token", Some(issuer), _) => match issuer.token(&body) {
            Ok(token) => answer(token),
            Err(why) => Err((StatusCode::BAD_REQUEST, why)),
        },
        ("/sample-app/tools/cancel", _, Some(token)) if bearer.as_deref() == Some(&format!("Bearer {token}")) => {
            answer(crate::playground::sample_answer(&body))
        }
        ("/sample-app/tools/cancel", _, Some(_)) => Err((StatusCode::UNAUTHORIZED, "not the app tool's token".into())),
        _ => Err((StatusCode::NOT_FOUND, format!("nothing at {path} here"))),
    }
}

/// The request as a Function URL passes it to the function (payload format 2.0).
async fn function_url_event(request: Request<Body>) -> Result<Value, (StatusCode, String)> {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 1 << 20).await.map_err(|e| (StatusCode::PAYLOAD_TOO_LARGE, e.to_string()))?;
    let mut headers = serde_json::Map::new();
    for (name, value) in &parts.headers {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        match headers.get_mut(name.as_str()) {
            Some(Value::String(existing)) => *existing = format!("{existing},{value}"),
            _ => {
                headers.insert(name.as_str().to_owned(), Value::String(value));
            }
        }
    }
    // As a Function URL sets it (there `https`): the scheme the client called.
    headers.insert("x-forwarded-proto".into(), Value::from("http"));
    let now = chrono::Utc::now();
    let text = String::from_utf8(body.to_vec())
        .map_err(|_| (StatusCode::BAD_REQUEST, "the local door passes UTF-8 bodies only".to_owned()))?;
    Ok(json!({
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": parts.uri.path(),
        "rawQueryString": parts.uri.query().unwrap_or_default(),
        "headers": headers,
        "requestContext": {
            "accountId": "anonymous",
            "apiId": "local",
            "domainName": "local.lambda-url.us-east-1.on.aws",
            "domainPrefix": "local",
            "http": {
                "method": parts.method.as_str(),
                "path": parts.uri.path(),
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": parts.headers.get("user-agent").and_then(|v| v.to_str().ok()).unwrap_or_default(),
            },
            "requestId": uuid::Uuid::new_v4().to_string(),
            "routeKey": "$default",
            "stage": "$default",
            "time": now.format("%d/%b/%Y:%H:%M:%S %z").to_string(),
            "timeEpoch": now.timestamp_millis(),
        },
        "body": text,
        "isBase64Encoded": false,
    }))
}

/// The status (`statusCode`, else `default`) and headers of a function's answer or prelude.
fn status_and_headers(v: &Value, default: u16) -> axum::http::response::Builder {
    let mut response = Response::builder().status(v["statusCode"].as_u64().map_or(default, |s| s as u16));
    for (name, value) in v["headers"].as_object().into_iter().flatten() {
        if let (Ok(name), Some(value)) = (HeaderName::try_from(name.as_str()), value.as_str()) {
            response = response.header(name, value);
        }
    }
    response
}

/// A buffered function answer (`{statusCode, headers, body}`) as an HTTP response.
fn buffered(v: &Value) -> Response<Body> {
    let response = status_and_headers(v, 502);
    let body = v["body"].as_str().unwrap_or_default().to_owned();
    response.body(body.into()).unwrap_or_else(|_| Response::new(Body::empty()))
}

/// A streamed function answer: its prelude (status, headers) up to the eight NUL bytes, then
/// every chunk passed on as it arrives.
/// The instance stays `busy` until the body is sent or the client leaves.
async fn streamed(
    mut chunks: tokio::sync::mpsc::Receiver<Bytes>,
    busy: Busy,
) -> Result<Response<Body>, (StatusCode, String)> {
    const SEPARATOR: &[u8] = &[0; 8];
    let mut head = Vec::new();
    let (prelude, rest) = loop {
        let Some(chunk) = chunks.recv().await else {
            return Err((StatusCode::BAD_GATEWAY, "the stream ended before its prelude".into()));
        };
        head.extend_from_slice(&chunk);
        if let Some(at) = head.windows(SEPARATOR.len()).position(|w| w == SEPARATOR) {
            break (head[..at].to_vec(), Bytes::copy_from_slice(&head[at + SEPARATOR.len()..]));
        }
    };
    let prelude: Value = serde_json::from_slice(&prelude).map_err(|e| (StatusCode::BAD_GATEWAY, e.to_string()))?;
    let response = status_and_headers(&prelude, 200);
    let body = futures::stream::once(async move { rest })
        .chain(futures::stream::unfold(chunks, |mut chunks| async move { chunks.recv().await.map(|c| (c, chunks)) }))
        .filter(|c| std::future::ready(!c.is_empty()))
        .map(move |c| {
            let _busy = &busy;
            Ok::<_, Infallible>(c)
        });
    response.body(Body::from_stream(body)).map_err(|e| (StatusCode::BAD_GATEWAY, e.to_string()))
}
