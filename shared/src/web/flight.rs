//! Single flight: while one request asks the upstream for a cache key, an identical request
//! waits for its cached answer instead of paying for the same call. The one asking holds a short
//! lease in the record store, claimed with a conditional write; every store call is bounded by
//! [`HOT_PATH`], and a store fault leaves a request to answer alone, never to fail.

use std::time::Duration;

use serde_json::json;
use tokio::time::Instant;

use crate::core::clock::Clock;
use crate::core::records::{HOT_PATH, Record, RecordStore, bounded};
use crate::web::cache;
use crate::web::response::SearchResponse;

/// How long a request waits for an identical one in flight before calling the upstream itself.
pub const FOLLOW_WAIT: Duration = Duration::from_secs(15);

/// How long a claim on answering a request lasts unless its holder releases it first.
const LEASE_SECS: i64 = 60;

/// What single flight decided for a cache miss.
pub(super) enum Flight {
    /// Another request in flight answered it.
    Answered(Box<SearchResponse>),
    /// This request holds the claim, or may (its claim was cut short by [`HOT_PATH`] and may
    /// still land): it asks, then releases the claim if it is its own.
    Leads,
    /// This request asks without the claim (another one holds it, gave up, or the store failed).
    Alone,
}

fn lease_key(key: &str) -> String {
    format!("lease:{key}")
}

/// Claims answering `key` as `owner`; if another request holds the claim, waits (up to
/// [`FOLLOW_WAIT`], and half the time left before `deadline`) for its cached answer.
pub(super) async fn follow(
    records: &dyn RecordStore,
    clock: &dyn Clock,
    key: &str,
    owner: &str,
    deadline: Instant,
) -> Flight {
    let now = clock.now();
    let lease = Record {
        pk: lease_key(key),
        sk: "lease".into(),
        expires_at: Some(now.timestamp() + LEASE_SECS),
        body: json!({"claimedAt": now.timestamp(), "owner": owner}),
    };
    // The claim as the store has it now; the answer, once its holder cached it.
    let claim =
        || bounded(HOT_PATH, "the single-flight claim", records.get(&lease.pk, &lease.sk, clock.now().timestamp()));
    let answered = || async {
        let hit = cache::get::<SearchResponse>(&*records, key, clock.now()).await;
        hit.map(|hit| Flight::Answered(Box::new(hit)))
    };
    match tokio::time::timeout(HOT_PATH, records.put_new(&lease, now.timestamp())).await {
        Ok(Ok(true)) => return Flight::Leads,
        Ok(Ok(false)) => {}
        // A store fault leaves this request to answer alone, never to fail.
        Ok(Err(_)) => return Flight::Alone,
        // Cut short (a slow store), the claim may still land: another request's claim is
        // followed; else this one answers, then releases the claim if it did land.
        Err(_) => match claim().await {
            Ok(Some(held)) if held.body["owner"].as_str() != Some(owner) => {}
            _ => return Flight::Leads,
        },
    }
    let waiting = Instant::now();
    let until = waiting + FOLLOW_WAIT.min(deadline.saturating_duration_since(waiting) / 2);
    while Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if let Some(flight) = answered().await {
            return flight;
        }
        if !matches!(claim().await, Ok(Some(_))) {
            // Released: its holder cached the answer first, unless it had none. Read the
            // cache again, or a release between the two reads above sends this one upstream;
            // released without a cached answer: ask ourselves.
            return answered().await.unwrap_or(Flight::Alone);
        }
    }
    Flight::Alone
}

/// Ends `owner`'s claim on `key` (it is answered, or it could not be); a claim that is not
/// `owner`'s (another request's, after this one's expired) is left alone.
pub(super) async fn release(records: &dyn RecordStore, clock: &dyn Clock, key: &str, owner: &str) {
    let now = clock.now().timestamp();
    let pk = lease_key(key);
    let release = async {
        let held = records.get(&pk, "lease", now).await?;
        if held.is_some_and(|r| r.body["owner"] == owner) {
            let ended = Record { pk: pk.clone(), sk: "lease".into(), expires_at: Some(now), body: json!({}) };
            records.put(&ended).await?;
        }
        Ok(())
    };
    if let Err(e) = bounded(HOT_PATH, "the single-flight release", release).await {
        tracing::warn!(error = %e, "single-flight claim not released; it expires by itself");
    }
}
