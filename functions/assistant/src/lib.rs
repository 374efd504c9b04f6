//! The `assistant` function's handler: `POST /chat` (seeds 002 and 004 Requirement 13).
//!
//! Three ways to talk to it, one conversation behind them:
//! - `{message, conversationId?, location?: {lat, lng}, mode?}` answers JSON
//!   `{conversationId, mode, reply, toolCalls: [{name, ok}], sources: [{title, url}], mock,
//!   remembered}`;
//! - the same body with `Accept: text/event-stream` answers this API's events: `mode`, a `tool`
//!   per tool call, `delta` per piece of text as the model writes it, then `done` (the answer)
//!   or `error`;
//! - the AI SDK's chat body (`{id, messages, trigger}`, what `useChat` sends) answers its UI
//!   message stream ([`shared::assistant::ui_stream`]).
//!
//! `GET /chat/{conversationId}?limit=10` answers `{conversationId, messages}`, the newest turns
//! (at most 50) as `useChat`'s `messages` after a page reload; `GET /chat/{id}/stream` (its
//! `resume`) is always 204, since replies are not kept to be resumed.
//!
//! Through the Function URL the events stream as they happen; API Gateway's HTTP API buffers
//! them until the reply is done. A client that leaves stops the model; what it wrote is kept
//! and what it cost recorded.
//!
//! Who may call: a user's JWT, verified by API Gateway's authorizer or, at the Function URL,
//! here ([`Users::verified`]): 401 before anything is spent. A conversation is the user's own
//! (another's `conversationId` is a 404 and reaches no model), and every message counts against
//! their quota and daily budget (429 `quota_exceeded`, `user_budget_exceeded`); the model's
//! spend is held against the agent `assistant`'s daily budget (429 `budget_exceeded`).

use std::sync::Arc;

use axum::http::HeaderMap;
use axum::http::header::ACCEPT;
use axum::routing::{get, post};
use bytes::Bytes;
use shared::assistant::ui_stream::{self, Encoder};
use shared::assistant::{Answer, Assistant, ChatInput, Event};
use shared::compose::Config;
use shared::core::clock::{Clock, SystemClock};
use shared::core::records::RecordStore;
use shared::costs::budget::spending_as;
use shared::costs::quota::Quota;
use shared::http::auth::Users;
use shared::http::extract::{Body, HasUsers, Id, Invocation, Query, User};
use shared::http::stream::no_content;
use shared::http::{Response, Router, sse};
use shared::{Result, compose, http};
use tokio::sync::mpsc;
use tracing::Instrument;

/// The assistant, who its users are, and their quota.
pub struct App {
    pub assistant: Assistant,
    pub users: Users,
    pub quota: Quota,
}

impl App {
    /// Built from `config` over `records` and `clock`.
    pub fn new(config: &Config, records: Arc<dyn RecordStore>, clock: Arc<dyn Clock>) -> Result<Self> {
        let quota = Quota::from_settings(&config.costs, Arc::clone(&records), Arc::clone(&clock));
        let assistant = compose::assistant(config, records, clock)?;
        Ok(Self { assistant, users: Users::from_settings(&config.http)?, quota })
    }

    /// Built from the environment.
    pub async fn from_env() -> Result<Self> {
        let config = Config::from_env()?;
        let records = compose::records(&config).await?;
        Self::new(&config, records, Arc::new(SystemClock))
    }
}

/// How the reply goes back.
#[derive(Clone, Copy, PartialEq)]
enum Wire {
    Json,
    Events,
    UiMessages,
}

impl HasUsers for App {
    fn users(&self) -> &Users {
        &self.users
    }

    fn quota(&self) -> &dyn shared::core::limit::PerUser {
        &self.quota
    }
}

type State = axum::extract::State<Arc<App>>;

/// The function's routes.
pub fn routes(app: Arc<App>) -> Router {
    http::finish(
        Router::new()
            .route("/chat", post(chat))
            .route("/chat/{conversationId}", get(history))
            .route("/chat/{conversationId}/stream", get(resume))
            .with_state(app),
    )
}

/// `GET /chat/{conversationId}?limit=10`: the newest turns, as `useChat`'s `messages`. A read
/// of the store, so it takes one of the user's requests like a chat does.
async fn history(app: State, User(user): User, Id(id): Id, Query(query): Query) -> Result<Response> {
    let limit = match query.first("limit") {
        None => 10,
        Some(n) => n
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=50).contains(n))
            .ok_or_else(|| shared::Error::invalid("invalid_limit", "limit must be a whole number from 1 to 50"))?,
    };
    let turns = app.assistant.history.last(&user, &id, limit, app.assistant.clock.now()).await?;
    Ok(http::json(200, &ui_stream::history(&id, &turns)))
}

/// `GET /chat/{conversationId}/stream`, `useChat`'s `resume`: replies are not kept to be
/// resumed, so there is never anything to stream (204).
async fn resume(_: User, Id(id): Id) -> Result<Response> {
    shared::assistant::history::check_id(&id)?;
    Ok(no_content())
}

/// `POST /chat`: the reply as JSON, this API's events or the UI message stream.
async fn chat(
    app: State,
    User(user): User,
    headers: HeaderMap,
    invocation: Invocation,
    body: Body,
) -> Result<Response> {
    let (mut input, wire) = if ui_stream::is_ui_request(&body) {
        (ui_stream::input(&body)?, Wire::UiMessages)
    } else {
        let accept = headers.get(ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or_default();
        (ChatInput::from_json(&body)?, if accept.contains("text/event-stream") { Wire::Events } else { Wire::Json })
    };
    input.streamed = wire != Wire::Json;
    let (tx, mut rx) = mpsc::unbounded_channel();
    // The reply runs on its own task: it ends (its costs recorded, its turn stored) even when
    // the client leaves mid-stream, which closes `rx` and so stops the model. The ticket is held
    // until the reply's task ends, so Lambda does not freeze it mid-way (`stream::run`), and by
    // what the reply leaves behind (`background::kept`: a cost record still being written).
    let Invocation { request_id, left, ticket } = invocation;
    let reply = tokio::spawn(shared::core::background::kept(
        {
            let (app, id) = (Arc::clone(&app), request_id.clone());
            async move {
                let _ticket = ticket;
                let answer = spending_as(&user, app.assistant.chat(&user, &input, &id, left, &tx)).await;
                let json = answer.is_ok() && !input.streamed;
                let budget_left = if json { app.quota.budget_left(&user).await } else { None };
                (answer, budget_left)
            }
        }
        .in_current_span(),
    ));
    let first = match wire {
        Wire::Json => None,
        _ => rx.recv().await,
    };
    let Some(first) = first else {
        let (answer, budget_left) =
            reply.await.map_err(|e| shared::Error::Upstream(format!("the reply failed: {e}")))?;
        return Ok(http::with_budget_left(http::json(200, &answer?), budget_left));
    };
    let mut encoder = Encoder::default();
    let mut frame = move |event: &Event| -> Bytes {
        let frames: String = match wire {
            Wire::UiMessages => encoder.chunks(event).iter().map(|data| sse::frame(None, None, data)).collect(),
            _ => event.named().map(|(name, data)| sse::frame(None, Some(name), &data.to_string())).unwrap_or_default(),
        };
        Bytes::from(frames)
    };
    let head = frame(&first);
    let events = futures::stream::unfold((Some(rx), Some(reply), Some(frame)), move |(rx, reply, frame)| {
        let request_id = request_id.clone();
        async move {
            let mut frame = frame?;
            if let Some(mut rx) = rx
                && let Some(event) = rx.recv().await
            {
                let chunk = frame(&event);
                return Some((chunk, (Some(rx), reply, Some(frame))));
            }
            let last = last_event(reply?.await.map(|(answer, _)| answer), &request_id);
            Some((frame(&last), (None, None, None)))
        }
    });
    let chunks = futures::StreamExt::chain(futures::stream::once(async move { head }), events);
    let headers: &[(&str, &str)] = match wire {
        Wire::UiMessages => &[ui_stream::HEADER],
        _ => &[],
    };
    Ok(sse::response(chunks, headers))
}

/// The event that ends a stream: the answer, or the error it ended with.
fn last_event(answer: std::result::Result<Result<Answer>, tokio::task::JoinError>, request_id: &str) -> Event {
    let answer = answer.map_err(failed).and_then(|answer| answer);
    match answer {
        Ok(answer) => Event::Done(answer),
        Err(e) => {
            tracing::error!(request_id, status = e.status(), code = e.code(), error = %e, "reply ended with an error event");
            Event::Error { code: e.code().into(), message: http::public_message(&e, request_id) }
        }
    }
}

/// A reply's task that did not finish (it panicked): logged whole, told to the client plainly.
fn failed(e: tokio::task::JoinError) -> shared::Error {
    tracing::error!(error = %e, "the reply's task failed");
    shared::Error::Upstream("the assistant failed; please retry".into())
}
