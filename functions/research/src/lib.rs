//! The `research` function's handler: timeline research (seed 003), streamed and kept.
//!
//! - `POST /api/research` `{topic, language?}` -> `{session_id, topic, language}`: the proposal
//!   is stored for a day, owned by its caller. `language` is zh, en or ja (default: detected).
//! - `GET /api/research/{session_id}/stream` -> `text/event-stream` of seed 003's events, each
//!   with an `id:` (1, 2, ...). The first one starts the research, which then runs once
//!   whatever happens to connections, to its deadline and budget; its events are stored as they
//!   happen. Every stream (a second reader, a reconnect with `Last-Event-ID`, as a header or the
//!   `lastEventId` query parameter) replays what is stored after that id, then follows the rest
//!   until the research ends: nothing lost, nothing twice.
//! - `GET /api/research/{session_id}` -> `{session_id, topic, language, status, events}`: the
//!   status (`waiting`, `running`, `complete`, `failed`, `cancelled`) and every event so far.
//! - `DELETE /api/research/{session_id}` -> 202: the research stops within about a second (its
//!   model and search calls are dropped) and its streams end with `cancelled`.
//!
//! Every route serves only a SigV4-signed caller (401 without the IAM identity in the request
//! context); a session is its creator's (another caller's id is a 404).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use lambda_http::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use lambda_http::http::response::Builder;
use lambda_http::{Request, RequestExt, Response};
use shared::core::clock::{Clock, SystemClock};
use shared::core::config::Config;
use shared::core::records::{RecordStore, bounded};
use shared::http::stream::{Ticket, streamed, whole};
use shared::timeline::sessions::{self, Logged};
use shared::timeline::{Event, Proposal, Timeline};
use shared::{Error, Result, compose, http};
use tokio::sync::mpsc;
use tracing::Instrument;

pub use shared::http::stream::ResponseBody;

/// How often a stream looks for newly stored events.
const POLL: Duration = Duration::from_millis(250);
/// How often a run looks for a cancel request: billing stops within about this.
const CANCEL_POLL: Duration = Duration::from_secs(1);
/// Time box of one store call of a run or a stream.
const STORE_TIME: Duration = Duration::from_secs(2);
/// A comment line sent when nothing happened for this long, so proxies keep the stream open.
const KEEPALIVE: Duration = Duration::from_secs(15);
/// Kept back from Lambda's deadline: a stream ends this long before it (the client reconnects).
const STREAM_RESERVE: Duration = Duration::from_secs(2);

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

async fn route(app: &App, req: &Request) -> Result<Response<ResponseBody>> {
    // Every route leads to paid model calls or a session's data: only a SigV4-signed caller
    // (the Function URL's IAM auth), whatever the deployment in front.
    let owner = http::auth::backend(req)?;
    let method = req.method().as_str();
    match (method, http::segments(req).as_slice()) {
        ("POST", ["api", "research"]) => create(app, req, &owner).await,
        ("GET", ["api", "research", id, "stream"]) => stream(app, req, id, &owner).await,
        ("GET", ["api", "research", id]) => status(app, id, &owner).await,
        ("DELETE", ["api", "research", id]) => cancel(app, id, &owner).await,
        (_, ["api", "research"]) => Err(Error::MethodNotAllowed { method: method.into(), allowed: "POST" }),
        (_, ["api", "research", _, "stream"]) => Err(Error::MethodNotAllowed { method: method.into(), allowed: "GET" }),
        (_, ["api", "research", _]) => Err(Error::MethodNotAllowed { method: method.into(), allowed: "GET, DELETE" }),
        _ => Err(http::no_route(req)),
    }
}

async fn create(app: &App, req: &Request, owner: &str) -> Result<Response<ResponseBody>> {
    let proposal = Proposal::from_json(http::body(req)?)?;
    let id = sessions::create(&*app.records, &proposal, owner, app.clock.now()).await?;
    Ok(whole(http::json(
        200,
        &serde_json::json!({"session_id": id, "topic": proposal.topic, "language": proposal.language}),
    )))
}

/// The id of the last event the client saw: `Last-Event-ID` (what `EventSource` sends when it
/// reconnects) or the `lastEventId` query parameter; 0 for none.
fn last_event_id(req: &Request) -> Result<u32> {
    let header = req.headers().get("last-event-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let query = req.query_string_parameters_ref().and_then(|q| q.first("lastEventId").map(str::to_owned));
    match header.or(query).as_deref().map(str::trim) {
        None | Some("") => Ok(0),
        Some(id) => id.parse().map_err(|_| {
            Error::invalid("invalid_last_event_id", format!("Last-Event-ID {id:?} is not an event id of this stream"))
        }),
    }
}

async fn stream(app: &App, req: &Request, id: &str, owner: &str) -> Result<Response<ResponseBody>> {
    sessions::check_id(id)?;
    let after = last_event_id(req)?;
    let now = app.clock.now();
    let proposal = sessions::load(&*app.records, id, owner, now).await?;
    let left = http::time_left(req);
    if sessions::claim_run(&*app.records, id, now).await? {
        start(app, proposal, id, left, req.extensions().get::<Ticket>().cloned());
    }
    let until = left.map(|l| tokio::time::Instant::now() + l.saturating_sub(STREAM_RESERVE));
    let reader = Reader {
        records: Arc::clone(&app.records),
        clock: Arc::clone(&app.clock),
        session: id.to_owned(),
        after,
        until,
        quiet_since: tokio::time::Instant::now(),
        ended: false,
    };
    let chunks = futures::stream::unfold(reader, |mut reader| async move {
        let chunk = reader.next().await?;
        Some((chunk, reader))
    });
    Ok(Builder::new()
        .status(200)
        .header(CONTENT_TYPE, "text/event-stream; charset=utf-8")
        .header(CACHE_CONTROL, "no-cache")
        .body(streamed(chunks))
        .expect("status and headers are valid"))
}

/// Starts session `id`'s one run on its own task: each event stored in order as it happens,
/// a cancel request checked every [`CANCEL_POLL`]. `ticket` keeps the environment from being frozen
/// while the run goes on after its first client left.
fn start(app: &App, proposal: Proposal, id: &str, left: Option<Duration>, ticket: Option<Ticket>) {
    let (timeline, records, clock) = (Arc::clone(&app.timeline), Arc::clone(&app.records), Arc::clone(&app.clock));
    let session = id.to_owned();
    let run = async move {
        let _ticket = ticket;
        let (tx, mut rx) = mpsc::channel::<Event>(32);
        let run = {
            let (timeline, session, tx) = (Arc::clone(&timeline), session.clone(), tx.clone());
            async move { timeline.run(&proposal, &session, &tx, left).await }
        };
        let watch = async {
            loop {
                tokio::time::sleep(CANCEL_POLL).await;
                // A store that cannot say is not a cancel: the run goes on.
                if let Ok(true) =
                    bounded(STORE_TIME, "cancel check", sessions::cancelled(&*records, &session, clock.now())).await
                {
                    return;
                }
            }
        };
        let drive = async {
            tokio::select! {
                () = run => {}
                () = watch => {
                    tracing::info!(session = %session, "research cancelled by its owner");
                    let _ = tx.send(Event::Cancelled).await;
                }
            }
            drop(tx);
        };
        let record = async {
            let mut seq = 0;
            while let Some(event) = rx.recv().await {
                seq += 1;
                let stored = bounded(
                    STORE_TIME,
                    "storing a research event",
                    sessions::log(&*records, &session, seq, &event, clock.now()),
                )
                .await;
                if let Err(e) = stored {
                    tracing::error!(session = %session, seq, error = %e, "a research event was not stored; readers miss it");
                }
            }
        };
        tokio::join!(drive, record);
    };
    tokio::spawn(run.in_current_span());
}

/// One stream's reader: what is stored after `after`, then what is stored next, until the run
/// ends or Lambda's deadline nears.
struct Reader {
    records: Arc<dyn RecordStore>,
    clock: Arc<dyn Clock>,
    session: String,
    after: u32,
    until: Option<tokio::time::Instant>,
    quiet_since: tokio::time::Instant,
    ended: bool,
}

impl Reader {
    async fn next(&mut self) -> Option<Bytes> {
        loop {
            if self.ended || self.until.is_some_and(|u| tokio::time::Instant::now() >= u) {
                return None;
            }
            let read = sessions::events_after(&*self.records, &self.session, self.after, self.clock.now());
            match bounded(STORE_TIME, "reading research events", read).await {
                Ok(events) if !events.is_empty() => return Some(self.frames(&events)),
                Ok(_) => {}
                Err(e) => tracing::warn!(session = %self.session, error = %e, "research events not read; retrying"),
            }
            if self.quiet_since.elapsed() >= KEEPALIVE {
                self.quiet_since = tokio::time::Instant::now();
                return Some(Bytes::from_static(b": keepalive\n\n"));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    fn frames(&mut self, events: &[Logged]) -> Bytes {
        let mut text = String::new();
        for event in events {
            if event.seq <= self.after {
                continue;
            }
            text.push_str(&event.to_sse());
            self.after = event.seq;
            if event.ends() {
                self.ended = true;
                break;
            }
        }
        self.quiet_since = tokio::time::Instant::now();
        Bytes::from(text)
    }
}

async fn status(app: &App, id: &str, owner: &str) -> Result<Response<ResponseBody>> {
    sessions::check_id(id)?;
    let now = app.clock.now();
    let proposal = sessions::load(&*app.records, id, owner, now).await?;
    let events = sessions::events_after(&*app.records, id, 0, now).await?;
    let status = match events.last().map(|e| e.name.as_str()) {
        Some("complete") => "complete",
        Some("error") => "failed",
        Some("cancelled") => "cancelled",
        _ if sessions::started(&*app.records, id, now).await?.is_some() => "running",
        _ => "waiting",
    };
    let events: Vec<_> =
        events.into_iter().map(|e| serde_json::json!({"id": e.seq, "event": e.name, "data": e.data})).collect();
    Ok(whole(http::json(
        200,
        &serde_json::json!({"session_id": id, "topic": proposal.topic, "language": proposal.language,
                            "status": status, "events": events}),
    )))
}

async fn cancel(app: &App, id: &str, owner: &str) -> Result<Response<ResponseBody>> {
    sessions::check_id(id)?;
    let now = app.clock.now();
    sessions::load(&*app.records, id, owner, now).await?;
    sessions::cancel(&*app.records, id, now).await?;
    Ok(whole(http::json(202, &serde_json::json!({"session_id": id, "cancelled": true}))))
}
