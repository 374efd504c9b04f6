//! The `research` function's handler: timeline research (seed 003), streamed.
//!
//! - `POST /api/research` `{topic, language?}` -> `{session_id}`: the proposal is stored for a
//!   day. `language` is zh, en or ja (default: detected from the topic).
//! - `GET /api/research/{session_id}/stream` -> `text/event-stream` of seed 003's events.
//!   An unknown or expired session is a 404; a session streams once (a second request is a
//!   409 `already_streamed`: the research is paid for once, and a client that reconnects
//!   starts a new session).
//!
//! Both routes serve only a SigV4-signed caller (401 without the IAM identity in the request
//! context). The research runs while the stream is read; when the client goes away the stream is
//! dropped and the research with it, so no model call bills after the client left.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use lambda_http::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use lambda_http::http::response::Builder;
use lambda_http::{Body, Request, Response};
use shared::core::clock::{Clock, SystemClock};
use shared::core::config::Config;
use shared::core::records::RecordStore;
use shared::timeline::sessions;
use shared::timeline::{Event, Proposal, Timeline};
use shared::{Error, Result, compose, http};
use tokio::sync::mpsc;

/// Response bodies: a whole JSON document, or the event stream.
pub type ResponseBody = UnsyncBoxBody<Bytes, Infallible>;

/// What the research routes need, built once per process.
pub struct App {
    pub timeline: Arc<Timeline>,
    pub records: Arc<dyn RecordStore>,
    pub clock: Arc<dyn Clock>,
}

impl App {
    /// Built from the environment.
    pub async fn from_env() -> Result<Self> {
        let config = Config::from_env()?;
        let records = compose::records(&config).await?;
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let timeline = compose::timeline(&config, Arc::clone(&records), Arc::clone(&clock))?;
        Ok(Self { timeline: Arc::new(timeline), records, clock })
    }
}

/// Handles one request. Never fails: errors become JSON error responses.
pub async fn handle(app: &App, req: Request) -> Response<ResponseBody> {
    match route(app, &req).await {
        Ok(response) => response,
        Err(e) => whole(http::error(&e, &http::request_id(&req))),
    }
}

fn whole(response: Response<Body>) -> Response<ResponseBody> {
    response.map(|body| Full::new(Bytes::copy_from_slice(body.as_ref())).boxed_unsync())
}

async fn route(app: &App, req: &Request) -> Result<Response<ResponseBody>> {
    // Both routes lead to paid model calls: only a SigV4-signed caller (the Function URL's IAM
    // auth), whatever the deployment in front.
    http::auth::backend(req)?;
    let method = req.method().as_str();
    match (method, http::segments(req).as_slice()) {
        ("POST", ["api", "research"]) => create(app, req).await,
        ("GET", ["api", "research", id, "stream"]) => stream(app, id, http::time_left(req)).await,
        (_, ["api", "research"]) => Err(Error::MethodNotAllowed { method: method.into(), allowed: "POST" }),
        (_, ["api", "research", _, "stream"]) => Err(Error::MethodNotAllowed { method: method.into(), allowed: "GET" }),
        _ => Err(http::no_route(req)),
    }
}

async fn create(app: &App, req: &Request) -> Result<Response<ResponseBody>> {
    let proposal = Proposal::from_json(http::body(req)?)?;
    let id = sessions::create(&*app.records, &proposal, app.clock.now()).await?;
    Ok(whole(http::json(
        200,
        &serde_json::json!({"session_id": id, "topic": proposal.topic, "language": proposal.language}),
    )))
}

async fn stream(app: &App, id: &str, left: Option<std::time::Duration>) -> Result<Response<ResponseBody>> {
    sessions::check_id(id)?;
    let now = app.clock.now();
    let proposal = sessions::load(&*app.records, id, now)
        .await?
        .ok_or_else(|| Error::NotFound(format!("no research session {id} (unknown or expired)")))?;
    if !sessions::claim_stream(&*app.records, id, now).await? {
        let message = "this session was already streamed; create a new one";
        return Ok(whole(http::failure(409, "already_streamed", message)));
    }
    let (tx, rx) = mpsc::channel::<Event>(32);
    let timeline = Arc::clone(&app.timeline);
    let session = id.to_owned();
    tokio::spawn(async move {
        tokio::select! {
            () = timeline.run(&proposal, &session, &tx, left) => {}
            () = tx.closed() => tracing::info!(session = %session, "client disconnected; research cancelled"),
        }
    });
    let events = futures::stream::unfold(rx, |mut rx| async move {
        let event = rx.recv().await?;
        Some((Ok::<_, Infallible>(http_body::Frame::data(Bytes::from(event.to_sse()))), rx))
    });
    let body = StreamBody::new(events.boxed()).boxed_unsync();
    Ok(Builder::new()
        .status(200)
        .header(CONTENT_TYPE, "text/event-stream; charset=utf-8")
        .header(CACHE_CONTROL, "no-cache")
        .body(body)
        .expect("status and headers are valid"))
}
