//! Who holds the research function: each open stream of a timeline, and each run, holds a
//! *place* (a lease record with an expiry) in the pools that apply to it, so that one user, a
//! leaked link or all users together cannot take every execution:
//!
//! - the session's readers (`RESEARCH_SESSION_READERS`), whoever opens its stream;
//! - for a user's session, that user's streams and runs (`RESEARCH_USER_STREAMS`), and all users'
//!   together (`RESEARCH_USERS_STREAMS`), below the function's reserved concurrency so the
//!   backend's research routes always find an execution.
//!
//! A place is claimed where none is held or its lease has expired, so a reader whose Lambda was
//! killed frees its place when its lease ends; a reader whose client leaves gives it back at
//! once, and one that ends at its life keeps it for its grace, for the client's resume ([`claim`]
//! says who may take a place over; the reader that lost it sees it gone and ends). A run claims
//! its own places ([`claim_for_run`]), none among its research's streams, and never gives way.

use chrono::{DateTime, Utc};
use serde_json::json;

use crate::core::error::Result;
use crate::core::records::{REV, Record, RecordStore, key_part};

/// How many places each pool has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    pub session: u32,
    pub user: u32,
    pub users: u32,
}

/// One place held: its key, the revision this holder wrote, and whose it was (taken over).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Place {
    pk: String,
    sk: String,
    rev: i64,
    victim: Option<String>,
}

/// The places one reader (or, once handed over, one run) holds, until `until` (Unix seconds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    holder: String,
    session: String,
    kind: &'static str,
    /// When it was claimed, and until when it is held (Unix seconds).
    since: i64,
    until: i64,
    places: Vec<Place>,
}

impl Lease {
    /// Until when its places are held (Unix seconds).
    pub fn until(&self) -> i64 {
        self.until
    }
}

/// The pools a reader of `session` owned by `user` (`None`: the backend) takes a place in.
fn pools(session: &str, user: Option<&str>, caps: Caps) -> Vec<(String, u32)> {
    let mut pools = vec![(format!("SESSION#{session}"), caps.session)];
    if let Some(user) = user {
        pools.push((format!("STREAMS#{}", key_part(user, 12)), caps.user));
        pools.push(("STREAMS#users".to_owned(), caps.users));
    }
    pools
}

const PLACE: &str = "PLACE#";

fn record(pk: &str, sk: &str, lease: &Lease, rev: i64, expires_at: i64) -> Record {
    let body = json!({"holder": lease.holder, "session": lease.session, "kind": lease.kind,
                      "since": lease.since, "until": lease.until, REV: rev});
    Record { pk: pk.to_owned(), sk: sk.to_owned(), expires_at: Some(expires_at), body }
}

/// Claims a place in every pool that applies to a reader of `session` (owned by `user`), held
/// for `hold` from `now`. Where a pool is full, a stream of the same research gives way: to any
/// opener of the research, one that ended at its life (its places wait for its client); to a
/// resume (`resume`: `Last-Event-ID`, a reconnect or a reload), else its oldest open stream
/// opened at least [`SETTLED_SECS`] ago (the one it resumes, whose client left unseen). One
/// stream gives way in every pool (another is tried when two resumes chose the same).
/// `Err(seconds)`: some pool is full, and a place frees within that.
pub async fn claim(
    records: &dyn RecordStore,
    session: &str,
    user: Option<&str>,
    caps: Caps,
    hold: std::time::Duration,
    resume: bool,
    now: DateTime<Utc>,
) -> Result<std::result::Result<Lease, u64>> {
    let lease = new_lease(session, "reader", hold, now);
    claim_in(records, lease, pools(session, user, caps), resume, now).await
}

/// Claims a place for a run of `session` (owned by `user`), held for `hold`, in the pools that
/// count a user's executions (a run holds none among its research's streams, and never gives
/// way); the backend's runs hold none. `Err(seconds)`: a pool is full.
pub async fn claim_for_run(
    records: &dyn RecordStore,
    session: &str,
    user: Option<&str>,
    caps: Caps,
    hold: std::time::Duration,
    now: DateTime<Utc>,
) -> Result<std::result::Result<Lease, u64>> {
    let lease = new_lease(session, "run", hold, now);
    let pools = pools(session, user, caps).into_iter().skip(1).collect();
    claim_in(records, lease, pools, false, now).await
}

fn new_lease(session: &str, kind: &'static str, hold: std::time::Duration, now: DateTime<Utc>) -> Lease {
    let until = now + chrono::Duration::from_std(hold).unwrap_or_default();
    Lease {
        holder: uuid::Uuid::new_v4().to_string(),
        session: session.to_owned(),
        kind,
        since: now.timestamp(),
        until: until.timestamp(),
        places: Vec::new(),
    }
}

async fn claim_in(
    records: &dyn RecordStore,
    mut lease: Lease,
    pools: Vec<(String, u32)>,
    resume: bool,
    now: DateTime<Utc>,
) -> Result<std::result::Result<Lease, u64>> {
    let claimed = async {
        let mut victim: Option<Option<String>> = None;
        let mut passed_over: Vec<String> = Vec::new();
        for (pk, cap) in &pools {
            let mut placed = place(records, pk, *cap, &lease, None, now).await?;
            for _ in 0..2 {
                if placed.is_ok() || lease.kind == "run" {
                    break;
                }
                if victim.is_none() {
                    victim = Some(giving_way(records, &lease, resume, &passed_over, now).await?);
                }
                let Some(Some(old)) = &victim else { break };
                placed = place(records, pk, *cap, &lease, Some(old), now).await?;
                // Another resume took it first: the next stream gives way, if none of its
                // places is taken yet.
                if placed.is_err() && lease.places.iter().all(|p| p.victim.as_deref() != Some(old.as_str())) {
                    passed_over.push(old.clone());
                    victim = None;
                } else {
                    break;
                }
            }
            match placed {
                Ok(place) => lease.places.push(place),
                Err(wait) => return Ok(Err(wait)),
            }
        }
        Ok::<_, crate::core::error::Error>(Ok(()))
    };
    let claimed = claimed.await;
    if !matches!(claimed, Ok(Ok(()))) {
        release(records, &lease, now).await;
    }
    match claimed {
        Ok(Ok(())) => Ok(Ok(lease)),
        Ok(Err(wait)) => Ok(Err(wait)),
        Err(e) => Err(e),
    }
}

/// How long an open stream is safe from being taken over: a resume never knocks off a stream
/// that just opened (two tabs of one research trading places), only one its client may have left.
const SETTLED_SECS: i64 = 30;

/// The holder of the stream of `lease`'s research that gives way to it, if any: one that ended
/// at its life, else (`open`: a resume) the oldest open one opened at least [`SETTLED_SECS`]
/// ago; never `lease` itself nor one `passed_over`.
async fn giving_way(
    records: &dyn RecordStore,
    lease: &Lease,
    open: bool,
    passed_over: &[String],
    now: DateTime<Utc>,
) -> Result<Option<String>> {
    let pk = format!("SESSION#{}", lease.session);
    let held = records.query(&pk, PLACE, &format!("{PLACE}~"), now.timestamp()).await?;
    let others = || {
        held.iter().filter(|r| {
            let holder = r.body["holder"].as_str().unwrap_or_default();
            holder != lease.holder && !passed_over.iter().any(|p| p == holder)
        })
    };
    let oldest =
        |kind: &str| others().filter(|r| r.body["kind"] == kind).min_by_key(|r| r.body["until"].as_i64().unwrap_or(0));
    let settled = || {
        others()
            .filter(|r| r.body["kind"] == "reader")
            .filter(|r| r.body["since"].as_i64().is_some_and(|since| now.timestamp() - since >= SETTLED_SECS))
            .min_by_key(|r| r.body["since"].as_i64().unwrap_or(0))
    };
    let victim = oldest("ended").or_else(|| if open { settled() } else { None });
    Ok(victim.and_then(|r| r.body["holder"].as_str().map(str::to_owned)))
}

/// One place in pool `pk` of `cap` places: a free one, or (`victim`) the one that holder has;
/// else how long until one frees. A place freed or taken while it looked is looked for again.
async fn place(
    records: &dyn RecordStore,
    pk: &str,
    cap: u32,
    lease: &Lease,
    victim: Option<&str>,
    now: DateTime<Utc>,
) -> Result<std::result::Result<Place, u64>> {
    let mut wait = 1;
    for _ in 0..2 {
        let held = records.query(pk, PLACE, &format!("{PLACE}~"), now.timestamp()).await?;
        match victim {
            // Only the places nobody holds are tried: a full pool costs one query, not a write a place.
            None => {
                let taken: std::collections::HashSet<&str> = held.iter().map(|r| r.sk.as_str()).collect();
                for k in 0..cap {
                    let sk = format!("{PLACE}{k:03}");
                    if !taken.contains(sk.as_str())
                        && records.put_new(&record(pk, &sk, lease, 1, lease.until), now.timestamp()).await?
                    {
                        return Ok(Ok(Place { pk: pk.to_owned(), sk, rev: 1, victim: None }));
                    }
                }
            }
            Some(victim) => {
                let old = held.iter().find(|r| r.body["holder"] == victim && r.body["kind"] != "run");
                if let Some(old) = old {
                    let rev = old.body[REV].as_i64().unwrap_or(0);
                    let taken = record(pk, &old.sk, lease, rev + 1, lease.until);
                    if records.put_if(&taken, Some(rev), now.timestamp()).await? {
                        let victim = Some(victim.to_owned());
                        return Ok(Ok(Place { pk: pk.to_owned(), sk: old.sk.clone(), rev: rev + 1, victim }));
                    }
                }
            }
        }
        let soonest = held.iter().filter_map(|r| r.expires_at).min().unwrap_or(now.timestamp() + 1);
        wait = u64::try_from(soonest - now.timestamp()).unwrap_or(1).max(1);
        if victim.is_none() && u32::try_from(held.len()).unwrap_or(u32::MAX) >= cap {
            break;
        }
    }
    Ok(Err(wait))
}

/// Marks `lease`'s places as those of a stream that ended at its life: they wait `keep` for its
/// client's resume, and any opener of the same research may take them.
pub async fn ended_at_life(
    records: &dyn RecordStore,
    lease: &mut Lease,
    keep: std::time::Duration,
    now: DateTime<Utc>,
) {
    lease.kind = "ended";
    lease.until = now.timestamp() + i64::try_from(keep.as_secs()).unwrap_or(i64::MAX);
    for i in 0..lease.places.len() {
        let (pk, sk, rev) = (lease.places[i].pk.clone(), lease.places[i].sk.clone(), lease.places[i].rev);
        if let Ok(true) =
            records.put_if(&record(&pk, &sk, lease, rev + 1, lease.until), Some(rev), now.timestamp()).await
        {
            lease.places[i].rev = rev + 1;
        }
    }
}

/// Keeps `lease`'s places while its reader reads: when less than half of `hold` is left of them,
/// held for `hold` from `now` again (each conditional on its revision, so one a resuming reader
/// took over is not taken back). False when a place is no longer its own.
pub async fn renew(
    records: &dyn RecordStore,
    lease: &mut Lease,
    hold: std::time::Duration,
    now: DateTime<Utc>,
) -> Result<bool> {
    let hold_secs = i64::try_from(hold.as_secs()).unwrap_or(i64::MAX);
    if lease.until - now.timestamp() > hold_secs / 2 {
        return held(records, lease, now).await;
    }
    // Held longer in memory only once stored: a renewal the store did not take is tried again.
    let renewed = Lease { until: now.timestamp() + hold_secs, ..lease.clone() };
    let mut until = renewed.until;
    for i in 0..lease.places.len() {
        let (pk, sk, rev) = (lease.places[i].pk.clone(), lease.places[i].sk.clone(), lease.places[i].rev);
        if records.put_if(&record(&pk, &sk, &renewed, rev + 1, renewed.until), Some(rev), now.timestamp()).await? {
            lease.places[i].rev = rev + 1;
            continue;
        }
        // Refused: taken over, or this renewal's own earlier write landed (a timed-out call, an
        // SDK retry of an applied write): the place is still ours if it names us.
        match records.get(&pk, &sk, now.timestamp()).await? {
            Some(r) if r.body["holder"] == lease.holder.as_str() && r.body["kind"] == lease.kind => {
                lease.places[i].rev = r.body[REV].as_i64().unwrap_or(rev);
                until = until.min(r.body["until"].as_i64().unwrap_or(lease.until));
            }
            _ => return Ok(false),
        }
    }
    lease.until = until;
    Ok(true)
}

/// Whether `lease` still holds every place it claimed (false: a resuming reader took them over).
pub async fn held(records: &dyn RecordStore, lease: &Lease, now: DateTime<Utc>) -> Result<bool> {
    for place in &lease.places {
        let record = records.get(&place.pk, &place.sk, now.timestamp()).await?;
        if !record.is_some_and(|r| r.body["holder"] == lease.holder.as_str()) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Gives back every place `lease` still holds (one taken over is left to its new holder);
/// a store that does not answer leaves them to expire.
pub async fn release(records: &dyn RecordStore, lease: &Lease, now: DateTime<Utc>) {
    for place in &lease.places {
        let gone = record(&place.pk, &place.sk, lease, place.rev + 1, now.timestamp());
        if let Err(e) = records.put_if(&gone, Some(place.rev), now.timestamp()).await {
            tracing::warn!(place = %place.sk, error = %e, "a reader's place was not given back; it expires");
        }
    }
}
