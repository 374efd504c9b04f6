//! The `assistant` function's handler: `POST /chat` (seeds 002 and 004 Requirement 13).
//!
//! Body `{message, conversationId?, location?: {lat, lng}}`; the answer is
//! `{conversationId, mode, reply, toolCalls: [{name, ok}], sources: [{title, url}], mock,
//! remembered}`, or with `Accept: text/event-stream` the same as server-sent events: `mode`, a
//! `tool` per tool call, `delta`, then `done` (the answer) or `error`. API Gateway's HTTP API
//! buffers a response, so the events arrive together when the reply is done.
//!
//! Who may call: a user's JWT (the authorizer's verified claims; 401 without). The user is the
//! token's subject: a conversation is theirs only (another's `conversationId` is a 404 and
//! reaches no model), and every message counts against their quota (429 `quota_exceeded`).
//! The model's spend is held against the agent `assistant`'s daily budget (429
//! `budget_exceeded`).

use std::sync::Arc;

use lambda_http::http::header::{ACCEPT, CACHE_CONTROL, CONTENT_TYPE};
use lambda_http::{Body, Request, Response};
use shared::assistant::{Assistant, ChatInput, Event};
use shared::core::clock::{Clock, SystemClock};
use shared::core::config::Config;
use shared::core::records::RecordStore;
use shared::costs::quota::Quota;
use shared::http::auth::Users;
use shared::{Result, compose, http};
use tokio::sync::mpsc;

/// The assistant, who its users are, and their quota.
pub struct App {
    pub assistant: Assistant,
    pub users: Users,
    pub quota: Quota,
}

impl App {
    /// Built from `config` over `records` and `clock`.
    pub fn new(config: &Config, records: Arc<dyn RecordStore>, clock: Arc<dyn Clock>) -> Result<Self> {
        let quota = Quota::from_config(config, Arc::clone(&records), Arc::clone(&clock));
        let assistant = compose::assistant(config, records, clock)?;
        Ok(Self { assistant, users: Users::new(config.user_claim.clone()), quota })
    }

    /// Built from the environment.
    pub async fn from_env() -> Result<Self> {
        let config = Config::from_env()?;
        let records = compose::records(&config).await?;
        Self::new(&config, records, Arc::new(SystemClock))
    }
}

/// Handles one request. Never fails: errors become JSON error responses.
pub async fn handle(app: &App, req: Request) -> Response<Body> {
    http::respond(&req, route(app, &req).await)
}

async fn route(app: &App, req: &Request) -> Result<Response<Body>> {
    if http::segments(req).as_slice() != ["chat"] {
        return Err(http::no_route(req));
    }
    let user = app.users.caller(req)?;
    http::allow(req, "POST")?;
    let input = ChatInput::from_json(http::body(req)?)?;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let request_id = http::request_id(req);
    let reply = app.assistant.chat(&user, &input, &request_id, http::time_left(req), &tx);
    let answer = app.quota.serve(&user, reply).await;
    let left = if answer.is_ok() { app.quota.budget_left(&user).await } else { None };
    let streamed = req
        .headers()
        .get(ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.contains("text/event-stream"));
    drop(tx);
    let mut events = Vec::new();
    while let Some(event) = rx.recv().await {
        events.push(event);
    }
    match answer {
        // Refused before the conversation started (or a JSON caller): the one error body.
        Err(e) if events.is_empty() || !streamed => Err(e),
        Ok(answer) if !streamed => Ok(http::with_budget_left(http::json(200, &answer), left)),
        result => {
            events.push(match result {
                Ok(answer) => Event::Done(answer),
                Err(e) => {
                    tracing::error!(request_id, status = e.status(), code = e.code(), error = %e, "reply ended with an error event");
                    Event::Error { code: e.code().into(), message: http::public_message(&e, &request_id) }
                }
            });
            let text: String = events.iter().map(Event::to_sse).collect();
            let response = Response::builder()
                .status(200)
                .header(CONTENT_TYPE, "text/event-stream; charset=utf-8")
                .header(CACHE_CONTROL, "no-cache")
                .body(Body::Text(text))
                .expect("status and headers are valid");
            Ok(http::with_budget_left(response, left))
        }
    }
}
