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
use std::time::Duration;

use bytes::Bytes;
use lambda_http::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use lambda_http::http::response::Builder;
use lambda_http::{Request, RequestExt, Response};
use shared::compose::Config;
use shared::core::clock::{Clock, SystemClock};
use shared::core::records::{RecordStore, bounded};
use shared::costs::budget;
use shared::costs::quota::Quota;
use shared::http::auth::{Caller, Users};
use shared::http::stream::{Ticket, door_url, no_content, streamed, whole};
use shared::http::stream_links::StreamLinks;
use shared::timeline::readers::{self, Lease};
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
/// A run this long past its deadline without an ending event is dead (its container died, or
/// its claim's answer was lost): the next reader ends it with `error`.
const DEAD_AFTER: Duration = Duration::from_secs(30);
/// How long a quiet stream waits between looks for a dead run.
const DEAD_CHECK: Duration = Duration::from_secs(5);
/// Tries at storing one event of a run (the waits between them double from 200 ms).
const STORE_TRIES: u32 = 5;
/// The longest a run may take when Lambda gives no deadline (as the function's timeout).
const RUN_LIMIT: Duration = Duration::from_secs(900);
/// A place's lease outlives its holder's planned end by this much (a killed Lambda's frees then).
const PLACE_GRACE: Duration = Duration::from_secs(15);
/// Opens through one research's link a minute and a day (each also counts against its owner's
/// quota): a stream resumes about every 90 s, a page reload or two on top.
const LINK_OPENS_PER_MINUTE: u32 = 10;
const LINK_OPENS_PER_DAY: u32 = 300;
/// How often an open stream looks whether its places are still its own.
const PLACE_CHECK: Duration = Duration::from_secs(5);
/// How often an open stream marks its session read (a run looks each [`CANCEL_POLL`]).
const READ_BEAT: Duration = Duration::from_secs(15);

/// What the research routes need, built once per process.
pub struct App {
    pub timeline: Arc<Timeline>,
    pub records: Arc<dyn RecordStore>,
    pub clock: Arc<dyn Clock>,
    pub users: Users,
    pub quota: Quota,
    /// What opens through one research's link may count, before its owner's quota.
    pub link_opens: Quota,
    pub links: StreamLinks,
    /// Readers' and runs' places, how long a stream stays open, when an unread run stops.
    pub settings: shared::timeline::settings::Settings,
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
        let timeline = compose::timeline(config, Arc::clone(&records), Arc::clone(&clock))?;
        Ok(Self {
            timeline: Arc::new(timeline),
            users: Users::from_settings(&config.http)?,
            quota: Quota::from_settings(&config.costs, Arc::clone(&records), Arc::clone(&clock)),
            link_opens: Quota::new(LINK_OPENS_PER_MINUTE, LINK_OPENS_PER_DAY, Arc::clone(&records), Arc::clone(&clock))
                .for_links(),
            links: StreamLinks::from_settings(&config.http),
            settings: config.timeline.clone(),
            records,
            clock,
        })
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
    let method = req.method().as_str();
    match (method, http::segments(req).as_slice()) {
        ("POST", ["api", "research"]) => create(app, req).await,
        ("GET", ["api", "research", id, "stream"]) => stream(app, req, id).await,
        ("GET", ["api", "research", id]) => status(app, req, id).await,
        ("DELETE", ["api", "research", id]) => cancel(app, id, &owner(app, req).await?).await,
        (_, ["api", "research"]) => Err(Error::MethodNotAllowed { method: method.into(), allowed: "POST" }),
        (_, ["api", "research", _, "stream"]) => Err(Error::MethodNotAllowed { method: method.into(), allowed: "GET" }),
        (_, ["api", "research", _]) => Err(Error::MethodNotAllowed { method: method.into(), allowed: "GET, DELETE" }),
        _ => Err(http::no_route(req)),
    }
}

/// Who owns what `req` asks for: `iam:<principal>` for a SigV4-signed caller (the HTTP API's IAM
/// authorizer), else `user:<id>` for a verified user's JWT; 401 for anyone else. Every route
/// leads to paid model calls or a session's data.
async fn owner(app: &App, req: &Request) -> Result<String> {
    match Caller::of(req) {
        Caller::Backend { .. } => Ok(format!("iam:{}", http::auth::backend(req)?)),
        _ => Ok(format!("user:{}", app.users.verified(req).await?)),
    }
}

/// The user an owner names, whose quota and daily budget a research spends.
fn user_of(owner: &str) -> Option<&str> {
    owner.strip_prefix("user:")
}

/// The stream URL of session `id` for `owner`, with a fresh link token: absolute when `req`
/// came through the Function URL, else the path to append to it (the stack's `ResearchUrl`,
/// which ends with `/`).
async fn stream_url(app: &App, req: &Request, id: &str, owner: &str) -> Result<String> {
    let token = app.links.issue(owner, id, app.clock.now()).await?;
    let path = format!("api/research/{id}/stream?token={token}");
    Ok(match door_url(req) {
        Some(door) => format!("{door}/{path}"),
        None => path,
    })
}

async fn create(app: &App, req: &Request) -> Result<Response<ResponseBody>> {
    let owner = owner(app, req).await?;
    let proposal = Proposal::from_json(http::body(req)?)?;
    // The link's key first: a session is stored only when its link can be signed.
    app.links.key().await?;
    if let Some(user) = user_of(&owner) {
        // A research is many paid calls: one whose user has spent today's budget is not begun.
        app.quota.refuse_if_spent(user).await?;
        app.quota.take(user).await?;
    }
    // The backend reads its runs later: they run on unread unless it says otherwise.
    let proposal = Proposal { background: Some(proposal.background.unwrap_or(user_of(&owner).is_none())), ..proposal };
    let id = sessions::create(&*app.records, &proposal, &owner, app.clock.now()).await?;
    Ok(whole(http::json(
        200,
        &serde_json::json!({"session_id": id, "topic": proposal.topic, "language": proposal.language,
                            "background": proposal.background, "stream_url": stream_url(app, req, &id, &owner).await?}),
    )))
}

/// The id of the last event the client saw: `Last-Event-ID` (what `EventSource` sends when it
/// reconnects) or the `lastEventId` query parameter; 0 for none.
fn last_event_id(req: &Request) -> Result<u32> {
    let invalid = |id: &str| {
        Error::invalid("invalid_last_event_id", format!("Last-Event-ID {id:?} is not an event id of this stream"))
    };
    let header = match req.headers().get("last-event-id").map(|v| v.to_str()) {
        None => None,
        Some(Ok(v)) => Some(v.to_owned()),
        Some(Err(_)) => return Err(invalid("(not text)")),
    };
    let query = req.query_string_parameters_ref().and_then(|q| q.first("lastEventId").map(str::to_owned));
    match header.or(query).as_deref().map(str::trim) {
        None | Some("") => Ok(0),
        Some(id) => id.parse().map_err(|_| invalid(id)),
    }
}

async fn stream(app: &App, req: &Request, id: &str) -> Result<Response<ResponseBody>> {
    sessions::check_id(id)?;
    let now = app.clock.now();
    // A stream link's token (a browser's EventSource sends no header), else the caller's own.
    let token = req.query_string_parameters_ref().and_then(|q| q.first("token").map(str::to_owned));
    let owner = match &token {
        Some(token) => app.links.verify(token, id, now).await?,
        None => owner(app, req).await?,
    };
    let after = last_event_id(req)?;
    let proposal = sessions::load(&*app.records, id, &owner, now).await?;
    if after > 0 {
        // A reconnect: after the end there is nothing more (204 stops EventSource reconnecting);
        // an id past the last stored one is not this stream's.
        let invalid = |why: String| Err(Error::invalid("invalid_last_event_id", why));
        match sessions::last(&*app.records, id, now).await? {
            Some(last) if after > last.seq => {
                return invalid(format!("event {after} is past this stream's last ({})", last.seq));
            }
            Some(last) if last.ends() && after == last.seq => {
                return Ok(no_content());
            }
            Some(_) => {}
            None => return invalid(format!("event {after} is not in this stream yet")),
        }
    }
    // Each open stream holds an execution: opens count against the session owner's quota, a
    // reconnect too, or Last-Event-ID would dodge it. A link's opens (whoever holds it) count
    // first against a small quota of the session's own, so a leaked link can spend at most that
    // much of its owner's.
    if token.is_some() {
        app.link_opens.take(id).await?;
    }
    if let Some(user) = user_of(&owner) {
        app.quota.take(user).await?;
    }
    // A place in each pool that applies, held at most the stream's life: a resume takes the
    // places of the stream it resumes.
    let life = app.settings.reader_life;
    let places =
        readers::claim(&*app.records, id, user_of(&owner), app.settings.caps, life + PLACE_GRACE, after > 0, now);
    let lease = match places.await? {
        Ok(lease) => lease,
        Err(retry_after_secs) => {
            // Someone wants to read it: an unread research does not stop while its reader waits.
            let _ = sessions::mark_read(&*app.records, id, now).await;
            return Err(too_many(retry_after_secs));
        }
    };
    let ticket = req.extensions().get::<Ticket>().cloned();
    let left = http::time_left(req);
    // A stream that does not open gives its places back.
    if let Err(e) = begin(app, id, &owner, proposal, left, ticket.clone()).await {
        readers::release(&*app.records, &lease, now).await;
        return Err(e);
    }
    let deadline = shared::core::deadline::budget(life, left, STREAM_RESERVE, "the stream");
    let started = tokio::time::Instant::now();
    let reader = Reader {
        records: Arc::clone(&app.records),
        clock: Arc::clone(&app.clock),
        session: id.to_owned(),
        after,
        until: Some(started + deadline),
        quiet_since: started,
        checked: started,
        placed: started,
        read_marked: started,
        lease: Some(lease),
        ticket,
        begun: false,
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

/// Marks session `id` read and, for its first stream, starts its run, with places of its own (a
/// user's run holds one of the user's and one of all users'; none free: 429). The run goes on
/// in this execution after the stream ends.
async fn begin(
    app: &App,
    id: &str,
    owner: &str,
    proposal: Proposal,
    left: Option<Duration>,
    ticket: Option<Ticket>,
) -> Result<()> {
    let (records, now) = (&*app.records, app.clock.now());
    let run_limit = left.unwrap_or(RUN_LIMIT);
    sessions::mark_read(records, id, now).await?;
    if sessions::deadline(records, id, now).await?.is_some() {
        return Ok(());
    }
    let places = readers::claim_for_run(records, id, user_of(owner), app.settings.caps, run_limit + PLACE_GRACE, now);
    let lease = match places.await? {
        Ok(lease) => lease,
        // Another first stream started it meanwhile: this one reads it.
        Err(_) if sessions::deadline(records, id, now).await?.is_some() => return Ok(()),
        Err(wait) => return Err(too_many(wait)),
    };
    let started = async {
        if !sessions::claim_run(records, id, run_limit, now).await? {
            return Ok(false);
        }
        // Claimed: from here a store fault must not leave it claimed and never run. A cancel
        // check that fails is no cancel (the run's watcher looks again each second).
        if sessions::cancelled(records, id, now).await.unwrap_or(false) {
            // Cancelled before it started: it never runs (an unstored end is ended by a reader).
            if let Err(e) = sessions::log(records, id, 1, &Event::Cancelled { abandoned: false }, now).await {
                tracing::warn!(session = id, error = %e, "a research cancelled before it began: its end not stored");
            }
            return Ok(false);
        }
        Ok::<_, Error>(true)
    };
    match started.await {
        Ok(true) => {
            // Sessions stored before `background` existed: the backend's run in the background.
            let background = proposal.background.unwrap_or(user_of(owner).is_none());
            let spender = user_of(owner).map(str::to_owned);
            start(app, proposal, id, left, spender, background, lease, ticket);
            Ok(())
        }
        not_started => {
            readers::release(records, &lease, now).await;
            not_started.map(|_| ())
        }
    }
}

/// 429 `too_many_streams`: a pool of open streams and runs is full; a place frees within
/// `retry_after_secs`.
fn too_many(retry_after_secs: u64) -> Error {
    Error::TooMany {
        code: "too_many_streams",
        message: "this research, its owner or all users have as many streams and runs as they may \
                  (close one, or retry after Retry-After)"
            .into(),
        retry_after_secs,
    }
}

/// Starts session `id`'s one run on its own task: each event stored in order as it happens,
/// a cancel request checked every [`CANCEL_POLL`], its paid calls held against `spender`'s daily
/// budget (a user's research). `ticket` keeps the environment from being frozen while the run
/// goes on after its first client left.
#[allow(clippy::too_many_arguments)]
fn start(
    app: &App,
    proposal: Proposal,
    id: &str,
    left: Option<Duration>,
    spender: Option<String>,
    background: bool,
    lease: Lease,
    ticket: Option<Ticket>,
) {
    let (timeline, records, clock) = (Arc::clone(&app.timeline), Arc::clone(&app.records), Arc::clone(&app.clock));
    let session = id.to_owned();
    // Unread for this long, a run that is not in the background stops itself.
    let abandon_after = (!background).then_some(app.settings.abandon_after);
    let run = async move {
        let _ticket = ticket;
        let (tx, mut rx) = mpsc::channel::<Event>(32);
        let run = {
            let (timeline, session, tx) = (Arc::clone(&timeline), session.clone(), tx.clone());
            async move {
                let run = timeline.run(&proposal, &session, &tx, left);
                match spender {
                    Some(user) => budget::spending_as(&user, run).await,
                    None => run.await,
                }
            }
        };
        // Ends the run when its owner cancels it (false) or nobody reads it (true).
        let watch = async {
            loop {
                tokio::time::sleep(CANCEL_POLL).await;
                // A store that cannot say is not a cancel: the run goes on.
                if let Ok(true) =
                    bounded(STORE_TIME, "cancel check", sessions::cancelled(&*records, &session, clock.now())).await
                {
                    return false;
                }
                let Some(after) = abandon_after else { continue };
                let now = clock.now();
                if let Ok(Some(read)) =
                    bounded(STORE_TIME, "read check", sessions::last_read(&*records, &session, now)).await
                    && (now - read).to_std().is_ok_and(|unread| unread > after)
                {
                    return true;
                }
            }
        };
        let drive = async {
            tokio::select! {
                () = run => {}
                abandoned = watch => {
                    if abandoned {
                        tracing::info!(session = %session, "research stopped: nobody read it");
                    } else {
                        tracing::info!(session = %session, "research cancelled by its owner");
                    }
                    let _ = tx.send(Event::Cancelled { abandoned }).await;
                }
            }
            drop(tx);
        };
        let record = async {
            let mut seq = 0;
            while let Some(event) = rx.recv().await {
                seq += 1;
                // Readers skip a place never filled: each event is tried until it is stored.
                let mut wait = Duration::from_millis(200);
                for attempt in 1..=STORE_TRIES {
                    let log = sessions::log(&*records, &session, seq, &event, clock.now());
                    match bounded(STORE_TIME, "storing a research event", log).await {
                        Ok(()) => break,
                        Err(e) if attempt == STORE_TRIES => {
                            tracing::error!(session = %session, seq, error = %e, "a research event was not stored; readers miss it");
                        }
                        Err(_) => {
                            tokio::time::sleep(wait).await;
                            wait *= 2;
                        }
                    }
                }
            }
        };
        tokio::join!(drive, record);
        readers::release(&*records, &lease, clock.now()).await;
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
    /// When it last looked for a dead run.
    checked: tokio::time::Instant,
    /// When it last looked whether its place is still its own.
    placed: tokio::time::Instant,
    /// When it last marked its session read.
    read_marked: tokio::time::Instant,
    /// Its places (`None` once given back or marked ended at its life).
    lease: Option<Lease>,
    /// Its invocation's, held by the task that gives its places back.
    ticket: Option<Ticket>,
    /// Whether its first chunk (the reconnect delay) was sent.
    begun: bool,
    ended: bool,
}

impl Drop for Reader {
    /// A stream whose research ended, or whose client left, gives its places back (its
    /// invocation held until they are); one that ended at its life keeps them for its client's
    /// resume, until they expire.
    fn drop(&mut self) {
        if let (Some(lease), Ok(runtime)) = (self.lease.take(), tokio::runtime::Handle::try_current()) {
            let (records, clock, ticket) = (Arc::clone(&self.records), Arc::clone(&self.clock), self.ticket.take());
            runtime.spawn(async move {
                let _ticket = ticket;
                readers::release(&*records, &lease, clock.now()).await;
            });
        }
    }
}

impl Reader {
    async fn next(&mut self) -> Option<Bytes> {
        if !self.begun {
            // The stream ends at its life: a client that reconnects after 1 s resumes it.
            self.begun = true;
            return Some(Bytes::from_static(b"retry: 1000\n\n"));
        }
        loop {
            let left = self.until.map(|u| u.saturating_duration_since(tokio::time::Instant::now()));
            if self.ended {
                return None;
            }
            if left.is_some_and(|l| l.is_zero()) {
                // Its life is over, not the research: the places wait for the client's resume
                // (marked so, any opener of the research may take them).
                if let Some(mut lease) = self.lease.take() {
                    let mark = readers::ended_at_life(&*self.records, &mut lease, self.clock.now());
                    let _ = tokio::time::timeout(STORE_TIME, mark).await;
                }
                return None;
            }
            // No store call or wait runs past the stream's end.
            let (read_time, wait) = left.map_or((STORE_TIME, POLL), |l| (STORE_TIME.min(l), POLL.min(l)));
            let read = sessions::events_after(&*self.records, &self.session, self.after, self.clock.now());
            match bounded(read_time, "reading research events", read).await {
                Ok(events) if !events.is_empty() => return Some(self.frames(&events)),
                Ok(_) => {}
                Err(e) => tracing::warn!(session = %self.session, error = %e, "research events not read; retrying"),
            }
            if self.read_marked.elapsed() >= READ_BEAT {
                self.read_marked = tokio::time::Instant::now();
                let mark = sessions::mark_read(&*self.records, &self.session, self.clock.now());
                if let Err(e) = bounded(read_time, "marking a research read", mark).await {
                    tracing::warn!(session = %self.session, error = %e, "a research was not marked read");
                }
            }
            if self.placed.elapsed() >= PLACE_CHECK {
                self.placed = tokio::time::Instant::now();
                // A resuming stream took this one's place: it ends (its client is gone).
                if let Some(lease) = &self.lease
                    && let Ok(false) = bounded(
                        read_time,
                        "checking a reader's place",
                        readers::held(&*self.records, lease, self.clock.now()),
                    )
                    .await
                {
                    return None;
                }
            }
            if self.checked.elapsed() >= DEAD_CHECK {
                self.checked = tokio::time::Instant::now();
                let end = sessions::end_if_dead(&*self.records, &self.session, DEAD_AFTER, self.clock.now());
                if let Ok(Some(end)) = bounded(read_time, "ending a dead run", end).await
                    && end.seq <= self.after
                {
                    return None;
                }
            }
            if self.quiet_since.elapsed() >= KEEPALIVE {
                self.quiet_since = tokio::time::Instant::now();
                return Some(Bytes::from_static(b": keepalive\n\n"));
            }
            tokio::time::sleep(wait).await;
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

async fn status(app: &App, req: &Request, id: &str) -> Result<Response<ResponseBody>> {
    sessions::check_id(id)?;
    let owner = owner(app, req).await?;
    if let Some(user) = user_of(&owner) {
        app.quota.take(user).await?;
    }
    let now = app.clock.now();
    let proposal = sessions::load(&*app.records, id, &owner, now).await?;
    sessions::mark_read(&*app.records, id, now).await?;
    sessions::end_if_dead(&*app.records, id, DEAD_AFTER, now).await?;
    let events = sessions::events_after(&*app.records, id, 0, now).await?;
    let status = match events.last().map(|e| e.name.as_str()) {
        Some("complete") => "complete",
        Some("error") => "failed",
        Some("cancelled") => "cancelled",
        _ if sessions::deadline(&*app.records, id, now).await?.is_some() => "running",
        _ => "waiting",
    };
    let events: Vec<_> =
        events.into_iter().map(|e| serde_json::json!({"id": e.seq, "event": e.name, "data": e.data})).collect();
    Ok(whole(http::json(
        200,
        &serde_json::json!({"session_id": id, "topic": proposal.topic, "language": proposal.language,
                            "background": proposal.background.unwrap_or(user_of(&owner).is_none()), "status": status, "events": events,
                            "stream_url": stream_url(app, req, id, &owner).await?}),
    )))
}

async fn cancel(app: &App, id: &str, owner: &str) -> Result<Response<ResponseBody>> {
    sessions::check_id(id)?;
    let now = app.clock.now();
    sessions::load(&*app.records, id, owner, now).await?;
    if sessions::last(&*app.records, id, now).await?.is_some_and(|last| last.ends()) {
        return Ok(whole(http::json(200, &serde_json::json!({"session_id": id, "cancelled": false}))));
    }
    sessions::cancel(&*app.records, id, now).await?;
    Ok(whole(http::json(202, &serde_json::json!({"session_id": id, "cancelled": true}))))
}
