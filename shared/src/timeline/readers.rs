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
//! once, and one that ends at its life keeps it for its grace, for the client's resume. A reader
//! that resumes (`Last-Event-ID`) may take over the places of one reader of the same session (the
//! one it resumes), which sees them gone and ends. A run's places are never taken over.

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

/// One place held: its key and the revision this holder wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Place {
    pk: String,
    sk: String,
    rev: i64,
}

/// The places one reader (or, once handed over, one run) holds, until `until` (Unix seconds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    holder: String,
    session: String,
    kind: &'static str,
    until: i64,
    places: Vec<Place>,
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
    let body = json!({"holder": lease.holder, "session": lease.session, "kind": lease.kind, "until": lease.until, REV: rev});
    Record { pk: pk.to_owned(), sk: sk.to_owned(), expires_at: Some(expires_at), body }
}

/// Claims a place in every pool that applies to a reader of `session` (owned by `user`), held
/// for `hold` from `now`; `resume`: the reader resumes this session's stream, and where a pool is
/// full it takes over the places of the session's oldest reader (one stream: the one it
/// resumes, or a stream that ended at its life, whose places wait for it). `Err(seconds)`: some
/// pool is full, and a place frees within that.
pub async fn claim(
    records: &dyn RecordStore,
    session: &str,
    user: Option<&str>,
    caps: Caps,
    hold: std::time::Duration,
    resume: bool,
    now: DateTime<Utc>,
) -> Result<std::result::Result<Lease, u64>> {
    let until = now + chrono::Duration::from_std(hold).unwrap_or_default();
    let mut lease = Lease {
        holder: uuid::Uuid::new_v4().to_string(),
        session: session.to_owned(),
        kind: "reader",
        until: until.timestamp(),
        places: Vec::new(),
    };
    let mut victim: Option<Option<String>> = None;
    for (pk, cap) in pools(session, user, caps) {
        let mut placed = place(records, &pk, cap, &lease, None, now).await;
        if resume && matches!(placed, Ok(Err(_))) {
            if victim.is_none() {
                victim = Some(oldest_reader(records, session, now).await?);
            }
            if let Some(Some(old)) = &victim {
                placed = place(records, &pk, cap, &lease, Some(old), now).await;
            }
        }
        match placed {
            Ok(Ok(place)) => lease.places.push(place),
            Ok(Err(wait)) => {
                release(records, &lease, now).await;
                return Ok(Err(wait));
            }
            Err(e) => {
                release(records, &lease, now).await;
                return Err(e);
            }
        }
    }
    Ok(Ok(lease))
}

/// The holder of the oldest reader's place among `session`'s readers, if any.
async fn oldest_reader(records: &dyn RecordStore, session: &str, now: DateTime<Utc>) -> Result<Option<String>> {
    let held = records.query(&format!("SESSION#{session}"), PLACE, &format!("{PLACE}~"), now.timestamp()).await?;
    Ok(held
        .iter()
        .filter(|r| r.body["kind"] == "reader")
        .min_by_key(|r| r.body["until"].as_i64().unwrap_or(0))
        .and_then(|r| r.body["holder"].as_str().map(str::to_owned)))
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
        if victim.is_none() {
            for k in 0..cap {
                let sk = format!("{PLACE}{k:03}");
                if records.put_new(&record(pk, &sk, lease, 1, lease.until), now.timestamp()).await? {
                    return Ok(Ok(Place { pk: pk.to_owned(), sk, rev: 1 }));
                }
            }
        }
        let held = records.query(pk, PLACE, &format!("{PLACE}~"), now.timestamp()).await?;
        if let Some(old) = victim.and_then(|v| held.iter().find(|r| r.body["holder"] == v && r.body["kind"] == "reader")) {
            let rev = old.body[REV].as_i64().unwrap_or(0);
            if records.put_if(&record(pk, &old.sk, lease, rev + 1, lease.until), Some(rev), now.timestamp()).await? {
                return Ok(Ok(Place { pk: pk.to_owned(), sk: old.sk.clone(), rev: rev + 1 }));
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

/// Keeps `lease`'s places for a run that ends within `hold`: they are the run's now (never taken
/// over), given back when it ends ([`release`]).
pub async fn hand_to_run(records: &dyn RecordStore, lease: &mut Lease, hold: std::time::Duration, now: DateTime<Utc>) {
    lease.kind = "run";
    lease.until = (now + chrono::Duration::from_std(hold).unwrap_or_default()).timestamp();
    for i in 0..lease.places.len() {
        let (pk, sk, rev) = (lease.places[i].pk.clone(), lease.places[i].sk.clone(), lease.places[i].rev);
        let kept = record(&pk, &sk, lease, rev + 1, lease.until);
        match records.put_if(&kept, Some(rev), now.timestamp()).await {
            Ok(true) => lease.places[i].rev = rev + 1,
            Ok(false) => tracing::warn!(place = %sk, "a run's place was taken before it was handed over"),
            Err(e) => tracing::warn!(place = %sk, error = %e, "a run's place was not extended; it expires with the reader's"),
        }
    }
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
