//! A research's one run and its readers. The first stream of a session starts its run, which
//! then goes on whatever happens to connections, to its deadline and budget, each event stored
//! in order as it happens; every stream (a second reader, a reconnect after event `after`)
//! replays what is stored after that, then follows the rest until the research ends. Runs and
//! streams hold places ([`readers`]): none free is 429 `too_many_streams`.
//!
//! Whoever serves the stream holds an invocation open with `hold` (any value whose drop says the
//! work is done) while a run or a reader's clean-up still works after the response.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tracing::Instrument;

use super::readers::{self, Lease};
use super::sessions::{self, Logged};
use super::settings::Settings;
use super::{Event, Proposal, Timeline};
use crate::core::clock::Clock;
use crate::core::error::{Error, Result};
use crate::core::records::{RecordStore, bounded};
use crate::core::retry::{RetryPolicy, with_backoff};
use crate::costs::budget;

/// How often a stream looks for newly stored events.
const POLL: Duration = Duration::from_millis(250);
/// How often a run looks for a cancel request: billing stops within about this.
const CANCEL_POLL: Duration = Duration::from_secs(1);
/// Time box of one store call of a run or a stream.
const STORE_TIME: Duration = Duration::from_secs(2);
/// A comment line sent when nothing happened for this long, so proxies keep the stream open.
pub const KEEPALIVE: Duration = Duration::from_secs(15);
/// A run this long past its deadline without an ending event is dead (its container died, or
/// its claim's answer was lost): the next reader ends it with `error`.
pub const DEAD_AFTER: Duration = Duration::from_secs(30);
/// How long a quiet stream waits between looks for a dead run.
const DEAD_CHECK: Duration = Duration::from_secs(5);
/// Storing one event of a run: 5 tries, the waits between them doubling from 200 ms.
const STORE_EVENT: RetryPolicy =
    RetryPolicy { retries: 4, base: Duration::from_millis(200), max_wait: Duration::from_millis(1600) };
/// The longest a run or a stream may take when Lambda gives no deadline (as the function's
/// timeout).
pub const RUN_LIMIT: Duration = Duration::from_secs(900);
/// A place's lease outlives its holder's planned end by this much (a killed Lambda's frees then).
const PLACE_GRACE: Duration = Duration::from_secs(15);
/// How often an open stream looks whether its places are still its own.
const PLACE_CHECK: Duration = Duration::from_secs(5);
/// How often an open stream marks its session read (a run looks each [`CANCEL_POLL`]).
const READ_BEAT: Duration = Duration::from_secs(15);

/// What keeps an invocation open while work outlives its response.
pub type Hold = Option<Box<dyn std::any::Any + Send + Sync>>;

/// The runs and readers of timeline research.
pub struct Runs {
    pub timeline: Arc<Timeline>,
    pub records: Arc<dyn RecordStore>,
    pub clock: Arc<dyn Clock>,
    /// Readers' and runs' places, how long a stream stays open, when an unread run stops.
    pub settings: Settings,
}

/// What a stream sends next.
#[derive(Debug)]
pub enum Beat {
    /// Events stored since the last beat, in order (the last may end the research).
    Events(Vec<Logged>),
    /// Nothing happened for [`KEEPALIVE`].
    Quiet,
    /// The stream reached its life (the function's own time limit) before the research ended,
    /// having sent every event up to `after`: its client resumes with `Last-Event-ID: after`.
    Paused { after: u32 },
}

impl Runs {
    /// A stream of session `id` (owned by `user`, `None` for the backend) from after event
    /// `after`, for `life` at most (the invocation's time: a stream is not ended by a clock of
    /// its own): a place in each pool that applies (429 when one is full), held
    /// `RESEARCH_READER_SECS` at a time and renewed while it reads; the session marked read, and
    /// its run started if this is its first stream.
    pub async fn open(
        &self,
        id: &str,
        user: Option<&str>,
        proposal: Proposal,
        after: u32,
        life: Duration,
        left: Option<Duration>,
        hold: impl Fn() -> Hold,
    ) -> Result<Reader> {
        let now = self.clock.now();
        // A place in each pool that applies, renewed while the stream reads: a resume takes the
        // places of the stream it resumes.
        let places = readers::claim(
            &*self.records,
            id,
            user,
            self.settings.caps,
            self.settings.reader_life + PLACE_GRACE,
            after > 0,
            now,
        );
        let lease = match places.await? {
            Ok(lease) => lease,
            Err(retry_after_secs) => {
                // Someone wants to read it: an unread research does not stop while its reader waits.
                let _ = sessions::mark_read(&*self.records, id, now).await;
                return Err(too_many(retry_after_secs));
            }
        };
        // A stream that does not open gives its places back.
        if let Err(e) = self.begin(id, user, proposal, left, hold()).await {
            readers::release(&*self.records, &lease, now).await;
            return Err(e);
        }
        let started = tokio::time::Instant::now();
        Ok(Reader {
            records: Arc::clone(&self.records),
            clock: Arc::clone(&self.clock),
            session: id.to_owned(),
            after,
            until: started + life,
            quiet_since: started,
            checked: started,
            placed: started,
            read_marked: started,
            lease: Some(lease),
            place_hold: self.settings.reader_life + PLACE_GRACE,
            lapsing: false,
            hold: hold(),
            ended: false,
        })
    }

    /// Marks session `id` read and, for its first stream, starts its run, with places of its own
    /// (a user's run holds one of the user's and one of all users'; none free: 429). The run goes
    /// on in this execution after the stream ends.
    async fn begin(
        &self,
        id: &str,
        user: Option<&str>,
        proposal: Proposal,
        left: Option<Duration>,
        hold: Hold,
    ) -> Result<()> {
        let (records, now) = (&*self.records, self.clock.now());
        let run_limit = left.unwrap_or(RUN_LIMIT);
        sessions::mark_read(records, id, now).await?;
        if sessions::deadline(records, id, now).await?.is_some() {
            return Ok(());
        }
        let places = readers::claim_for_run(records, id, user, self.settings.caps, run_limit + PLACE_GRACE, now);
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
                let background = proposal.background.unwrap_or(user.is_none());
                self.start(proposal, id, left, user.map(str::to_owned), background, lease, hold);
                Ok(())
            }
            not_started => {
                readers::release(records, &lease, now).await;
                not_started.map(|_| ())
            }
        }
    }

    /// Starts session `id`'s one run on its own task: each event stored in order as it happens,
    /// a cancel request checked every [`CANCEL_POLL`], its paid calls held against `spender`'s
    /// daily budget (a user's research). `hold` keeps the invocation open while the run goes on
    /// after its first client left.
    #[allow(clippy::too_many_arguments)]
    fn start(
        &self,
        proposal: Proposal,
        id: &str,
        left: Option<Duration>,
        spender: Option<String>,
        background: bool,
        lease: Lease,
        hold: Hold,
    ) {
        let (timeline, records, clock) =
            (Arc::clone(&self.timeline), Arc::clone(&self.records), Arc::clone(&self.clock));
        let session = id.to_owned();
        // Unread for this long, a run that is not in the background stops itself.
        let abandon_after = (!background).then_some(self.settings.abandon_after);
        let run = async move {
            let _hold = hold;
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
                    let stored = with_backoff(STORE_EVENT, "storing a research event", |_| {
                        let log = sessions::log(&*records, &session, seq, &event, clock.now());
                        bounded(STORE_TIME, "storing a research event", log)
                    });
                    if let Err(e) = stored.await {
                        tracing::error!(session = %session, seq, error = %e, "a research event was not stored; readers miss it");
                    }
                }
            };
            tokio::join!(drive, record);
            readers::release(&*records, &lease, clock.now()).await;
        };
        tokio::spawn(crate::core::background::kept(run.in_current_span()));
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

/// One stream's reader: what is stored after `after`, then what is stored next, until the run
/// ends or the stream's life does (then [`Beat::Paused`], once).
pub struct Reader {
    records: Arc<dyn RecordStore>,
    clock: Arc<dyn Clock>,
    session: String,
    after: u32,
    until: tokio::time::Instant,
    quiet_since: tokio::time::Instant,
    /// When it last looked for a dead run.
    checked: tokio::time::Instant,
    /// When it last looked whether its place is still its own.
    placed: tokio::time::Instant,
    /// When it last marked its session read.
    read_marked: tokio::time::Instant,
    /// Its places (`None` once given back or marked ended at its life).
    lease: Option<Lease>,
    /// How long its places are held from each renewal.
    place_hold: Duration,
    /// Its places could not be renewed and lapse before the next look: it ends.
    lapsing: bool,
    /// Its invocation's, held by the task that gives its places back.
    hold: Hold,
    ended: bool,
}

impl Drop for Reader {
    /// A stream whose research ended, or whose client left, gives its places back (its
    /// invocation held until they are); one that ended at its life keeps them for its client's
    /// resume, until they expire.
    fn drop(&mut self) {
        if let (Some(lease), Ok(runtime)) = (self.lease.take(), tokio::runtime::Handle::try_current()) {
            let (records, clock, hold) = (Arc::clone(&self.records), Arc::clone(&self.clock), self.hold.take());
            runtime.spawn(async move {
                let _hold = hold;
                readers::release(&*records, &lease, clock.now()).await;
            });
        }
    }
}

impl Reader {
    /// What the stream sends next; `None` when it ends (the research ended, its life is over and
    /// [`Beat::Paused`] was sent, or a resuming stream took its place).
    pub async fn next(&mut self) -> Option<Beat> {
        loop {
            let left = self.until.saturating_duration_since(tokio::time::Instant::now());
            if self.ended {
                return None;
            }
            if left.is_zero() || self.lapsing {
                self.ended = true;
                // Its life is over, not the research: the places wait for the client's resume
                // (marked so, any opener of the research may take them).
                if let Some(mut lease) = self.lease.take() {
                    let mark = readers::ended_at_life(&*self.records, &mut lease, PLACE_GRACE, self.clock.now());
                    let _ = tokio::time::timeout(STORE_TIME, mark).await;
                }
                return Some(Beat::Paused { after: self.after });
            }
            // No store call or wait runs past the stream's end.
            let (read_time, wait) = (STORE_TIME.min(left), POLL.min(left));
            let read = sessions::events_after(&*self.records, &self.session, self.after, self.clock.now());
            match bounded(read_time, "reading research events", read).await {
                Ok(events) if !events.is_empty() => return Some(Beat::Events(self.take(events))),
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
                // Its places renewed while it reads; a resuming stream took them: it ends (its
                // client is gone). A store that does not answer is asked again next time.
                let (hold, now) = (self.place_hold, self.clock.now());
                if let Some(lease) = &mut self.lease {
                    let renewed = readers::renew(&*self.records, lease, hold, now);
                    match bounded(read_time, "renewing a reader's places", renewed).await {
                        Ok(true) => {}
                        Ok(false) => return None,
                        // Not renewed before the next look would be too late: it ends as at its
                        // life (its client resumes), before a pool counts its places free.
                        Err(e) => {
                            tracing::warn!(session = %self.session, error = %e, "a reader's places were not renewed");
                            let next = now.timestamp() + PLACE_CHECK.as_secs() as i64 + 1;
                            self.lapsing = lease.until() <= next;
                        }
                    }
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
                return Some(Beat::Quiet);
            }
            tokio::time::sleep(wait).await;
        }
    }

    /// The events after the last one sent, up to the one that ends the research.
    fn take(&mut self, events: Vec<Logged>) -> Vec<Logged> {
        let mut taken = Vec::new();
        for event in events {
            if event.seq <= self.after {
                continue;
            }
            self.after = event.seq;
            let ends = event.ends();
            taken.push(event);
            if ends {
                self.ended = true;
                break;
            }
        }
        self.quiet_since = tokio::time::Instant::now();
        taken
    }
}
