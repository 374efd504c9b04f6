//! The `research` function's handler: timeline research (seed 003), streamed and kept.
//!
//! - `POST /api/research` `{topic, language?}` -> `{session_id, topic, language}`: the proposal
//!   is stored for a day, owned by its caller. `language` is zh, en or ja (default: detected).
//! - `GET /api/research/{session_id}/stream` -> `text/event-stream` of seed 003's events, each
//!   with an `id:` (1, 2, ...). The first one starts the research, which then runs once
//!   whatever happens to connections, to its deadline and budget; its events are stored as they
//!   happen. Every stream (a second reader, a reconnect with `Last-Event-ID`, as a header or the
//!   `lastEventId` query parameter) replays what is stored after that id, then follows the rest
//!   until the research ends: nothing lost, nothing twice. A stream the function's own time
//!   limit cuts first ends with a `resume` event (no id) naming the `Last-Event-ID` to reconnect
//!   with.
//! - `GET /api/research/{session_id}` -> `{session_id, topic, language, status, events}`: the
//!   status (`waiting`, `running`, `complete`, `failed`, `cancelled`) and every event so far.
//! - `DELETE /api/research/{session_id}` -> 202: the research stops within about a second (its
//!   model and search calls are dropped) and its streams end with `cancelled`; one that never
//!   started never will; 200 `cancelled: false` for one already ended.
//!
//! A reconnect after the end is a 204 (`EventSource` stops reconnecting); a run past its deadline
//! with no ending event (its container died) is ended with `error` by the next reader.
//!
//! Who may call: a user with their JWT (verified here on the Function URL, `AuthType: NONE`, as
//! API Gateway's JWT authorizer does; their quota and daily budget apply), or the backend with
//! SigV4 (through the HTTP API's IAM authorizer). Anyone else is a 401 before anything is
//! spent. A session is its creator's: another caller's id is a 404. `POST` and `GET
//! /api/research/{id}` also answer a `stream_url` whose `token` (30 minutes, that session only)
//! opens the stream with no header, for a browser's `EventSource`.

use std::sync::Arc;

use axum::http::HeaderMap;
use axum::http::request::Parts;
use axum::routing::{get, post};
use bytes::Bytes;
use futures::StreamExt;
use shared::compose::Config;
use shared::core::clock::{Clock, SystemClock};
use shared::core::records::RecordStore;
use shared::costs::quota::Quota;
use shared::http::auth::Users;
use shared::http::extract::{Body, HasUsers, Id, Invocation, Owner, Query};
use shared::http::stream::{door_url, no_content};
use shared::http::stream_links::StreamLinks;
use shared::http::{Response, Router, sse};
use shared::timeline::Proposal;
use shared::timeline::runs::{Beat, DEAD_AFTER, Hold, RUN_LIMIT, Runs};
use shared::timeline::sessions;
use shared::{Error, Result, compose, http};

/// Kept back from Lambda's deadline: a stream ends this long before it (the client reconnects).
const STREAM_RESERVE: std::time::Duration = std::time::Duration::from_secs(2);
/// Opens through one research's link a minute and a day (each also counts against its owner's
/// quota): a stream stays open to its research's end, so a few reconnects (a dropped signal, a
/// page reload) are all a reader needs.
const LINK_OPENS_PER_MINUTE: u32 = 10;
const LINK_OPENS_PER_DAY: u32 = 300;

/// What the research routes need, built once per process.
pub struct App {
    pub runs: Runs,
    pub users: Users,
    pub quota: Quota,
    /// What opens through one research's link may count, before its owner's quota.
    pub link_opens: Quota,
    pub links: StreamLinks,
}

impl App {
    /// Built from the environment.
    pub async fn from_env() -> Result<Self> {
        let config = Config::from_env()?;
        let records = compose::records(&config).await?;
        Self::new(&config, records, Arc::new(SystemClock))
    }

    /// Configured by `config`, over `records` and `clock`.
    pub fn new(config: &Config, records: Arc<dyn RecordStore>, clock: Arc<dyn Clock>) -> Result<Self> {
        let timeline = Arc::new(compose::timeline(config, Arc::clone(&records), Arc::clone(&clock))?);
        Ok(Self {
            users: Users::from_settings(&config.http)?,
            quota: Quota::from_settings(&config.costs, Arc::clone(&records), Arc::clone(&clock)),
            link_opens: Quota::new(LINK_OPENS_PER_MINUTE, LINK_OPENS_PER_DAY, Arc::clone(&records), Arc::clone(&clock))
                .for_links(),
            links: StreamLinks::from_settings(&config.http),
            runs: Runs { timeline, records, clock, settings: config.timeline.clone() },
        })
    }

    fn records(&self) -> &dyn RecordStore {
        &*self.runs.records
    }
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

/// The function's routes. Every one leads to paid model calls or a session's data: the caller
/// is the backend (SigV4, `iam:<principal>`) or a verified user (`user:<id>`), else 401.
pub fn routes(app: Arc<App>) -> Router {
    http::finish(
        Router::new()
            .route("/api/research", post(create))
            .route("/api/research/{id}/stream", get(stream))
            .route("/api/research/{id}", get(status).delete(cancel))
            .with_state(app),
    )
}

/// The stream URL of session `id` for `owner`, with a fresh link token: absolute when `req`
/// came through the Function URL, else the path to append to it (the stack's `ResearchUrl`,
/// which ends with `/`).
async fn stream_url(app: &App, req: &Parts, id: &str, owner: &Owner) -> Result<String> {
    let token = app.links.issue(owner, id, app.runs.clock.now()).await?;
    let path = format!("api/research/{id}/stream?token={token}");
    Ok(match door_url(req) {
        Some(door) => format!("{door}/{path}"),
        None => path,
    })
}

async fn create(app: State, parts: Parts, owner: Owner, body: Body) -> Result<Response> {
    let proposal = Proposal::from_json(&body)?;
    // The link's key first: a session is stored only when its link can be signed.
    app.links.key().await?;
    if let Some(user) = owner.user() {
        // A research is many paid calls: one whose user has spent today's budget is not begun.
        app.quota.refuse_if_spent(user).await?;
    }
    // The backend reads its runs later: they run on unread unless it says otherwise.
    let proposal = Proposal { background: Some(proposal.background.unwrap_or(owner.user().is_none())), ..proposal };
    let id = sessions::create(app.records(), &proposal, &owner.key(), app.runs.clock.now()).await?;
    Ok(http::json(
        200,
        &serde_json::json!({"session_id": id, "topic": proposal.topic, "language": proposal.language,
                            "background": proposal.background, "stream_url": stream_url(&app, &parts, &id, &owner).await?}),
    ))
}

/// The id of the last event the client saw: `Last-Event-ID` (what `EventSource` sends when it
/// reconnects) or the `lastEventId` query parameter; 0 for none.
fn last_event_id(headers: &HeaderMap, query: &Query) -> Result<u32> {
    let invalid = |id: &str| {
        Error::invalid("invalid_last_event_id", format!("Last-Event-ID {id:?} is not an event id of this stream"))
    };
    let header = match headers.get("last-event-id").map(|v| v.to_str()) {
        None => None,
        Some(Ok(v)) => Some(v.to_owned()),
        Some(Err(_)) => return Err(invalid("(not text)")),
    };
    let query = query.0.first("lastEventId").map(str::to_owned);
    match header.or(query).as_deref().map(str::trim) {
        None | Some("") => Ok(0),
        Some(id) => id.parse().map_err(|_| invalid(id)),
    }
}

/// `GET /api/research/{id}/stream`: opened by the owner, or by anyone with the session's link
/// `token` (a browser's `EventSource` sends no header).
async fn stream(app: State, mut parts: Parts, Id(id): Id, query: Query, invocation: Invocation) -> Result<Response> {
    sessions::check_id(&id)?;
    let now = app.runs.clock.now();
    let token = query.0.first("token").map(str::to_owned);
    // Each open stream holds an execution: opens count against the session owner's quota (the
    // owner's extractor takes a signed-in opener's), a reconnect too, or Last-Event-ID would
    // dodge it, and before anything is read. A link's opens (whoever holds it) count first
    // against a small quota of the session's own, so a leaked link can spend at most that much
    // of its owner's.
    let owner = match &token {
        Some(token) => {
            let owner = app.links.verify(token, &id, now).await?;
            app.link_opens.take(&id).await?;
            if let Some(user) = owner.user() {
                app.quota.take(user).await?;
            }
            owner
        }
        None => {
            use axum::extract::FromRequestParts;
            Owner::from_request_parts(&mut parts, &app).await?
        }
    };
    let after = last_event_id(&parts.headers, &query)?;
    let proposal = sessions::load(app.records(), &id, &owner.key(), now).await?;
    if after > 0 {
        // A reconnect: after the end there is nothing more (204 stops EventSource reconnecting);
        // an id past the last stored one is not this stream's.
        let invalid = |why: String| Err(Error::invalid("invalid_last_event_id", why));
        match sessions::last(app.records(), &id, now).await? {
            Some(last) if after > last.seq => {
                return invalid(format!("event {after} is past this stream's last ({})", last.seq));
            }
            Some(last) if last.ends() && after == last.seq => return Ok(no_content()),
            Some(_) => {}
            None => return invalid(format!("event {after} is not in this stream yet")),
        }
    }
    // Open to the research's end, unless the function's own time ends first.
    let life = shared::core::deadline::budget(RUN_LIMIT, invocation.left, STREAM_RESERVE, "the stream");
    let ticket = invocation.ticket;
    let hold = move || -> Hold { ticket.clone().map(|t| Box::new(t) as _) };
    let reader = app.runs.open(&id, owner.user(), proposal, after, life, invocation.left, hold).await?;
    // A stream cut by the function's time limit says so last: a client that reconnects with the
    // Last-Event-ID it names (EventSource does, after 1 s) resumes it.
    let beats = futures::stream::unfold(reader, |mut reader| async move {
        let beat = reader.next().await?;
        Some((beat, reader))
    })
    .map(|beat| match beat {
        Beat::Events(events) => Bytes::from(
            events.iter().map(|e| sse::frame(Some(e.seq), Some(&e.name), &e.data.to_string())).collect::<String>(),
        ),
        Beat::Quiet => sse::KEEPALIVE,
        Beat::Paused { after } => Bytes::from(sse::frame(None, Some("resume"), &resume(after).to_string())),
    });
    Ok(sse::response(futures::stream::once(async { sse::RETRY }).chain(beats), &[]))
}

/// The data of the `resume` event that ends a stream cut before the research ended.
fn resume(after: u32) -> serde_json::Value {
    serde_json::json!({
        "last_event_id": after,
        "message": format!("this stream reached the function's time limit; the research goes on: \
                            open the same URL again with the header Last-Event-ID: {after} \
                            (EventSource does so by itself)"),
    })
}

async fn status(app: State, parts: Parts, owner: Owner, Id(id): Id) -> Result<Response> {
    sessions::check_id(&id)?;
    let (records, now) = (app.records(), app.runs.clock.now());
    let proposal = sessions::load(records, &id, &owner.key(), now).await?;
    sessions::mark_read(records, &id, now).await?;
    sessions::end_if_dead(records, &id, DEAD_AFTER, now).await?;
    let events = sessions::events_after(records, &id, 0, now).await?;
    let status = match events.last().map(|e| e.name.as_str()) {
        Some("complete") => "complete",
        Some("error") => "failed",
        Some("cancelled") => "cancelled",
        _ if sessions::deadline(records, &id, now).await?.is_some() => "running",
        _ => "waiting",
    };
    let events: Vec<_> =
        events.into_iter().map(|e| serde_json::json!({"id": e.seq, "event": e.name, "data": e.data})).collect();
    Ok(http::json(
        200,
        &serde_json::json!({"session_id": id, "topic": proposal.topic, "language": proposal.language,
                            "background": proposal.background.unwrap_or(owner.user().is_none()), "status": status, "events": events,
                            "stream_url": stream_url(&app, &parts, &id, &owner).await?}),
    ))
}

async fn cancel(app: State, owner: Owner, Id(id): Id) -> Result<Response> {
    sessions::check_id(&id)?;
    let (records, now) = (app.records(), app.runs.clock.now());
    sessions::load(records, &id, &owner.key(), now).await?;
    if sessions::last(records, &id, now).await?.is_some_and(|last| last.ends()) {
        return Ok(http::json(200, &serde_json::json!({"session_id": id, "cancelled": false})));
    }
    sessions::cancel(records, &id, now).await?;
    Ok(http::json(202, &serde_json::json!({"session_id": id, "cancelled": true})))
}
