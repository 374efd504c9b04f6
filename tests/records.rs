//! One behavioural suite for the record store port, run on the embedded SQLite store and on
//! DynamoDB Local: same writes, same reads, same TTL-on-read semantics.

use std::sync::Arc;

use chrono::{Duration, Utc};
use integration::{StoreKind, on_both_stores, store};
use serde_json::json;
use shared::core::clock::{Clock, ManualClock};
use shared::core::records::{LocalRecords, Record, RecordStore};
use shared::core::retry::STORE_RETRY;
use shared::core::upstream::Usage;
use shared::costs::ledger::{CallKind, Charge, Ledger, Outcome};
use shared::costs::pricing::PriceTable;

fn record(pk: &str, sk: &str, expires_at: Option<i64>, body: serde_json::Value) -> Record {
    Record { pk: pk.into(), sk: sk.into(), expires_at, body }
}

async fn a_written_record_reads_back_with_its_body_intact(kind: StoreKind) {
    let (s, _g) = store(kind).await;
    let body = json!({"content": "台灣咖啡市場 [1]", "n": 3, "cost": 0.0012, "ok": true, "none": null, "list": [{"url": "https://example.com"}]});
    s.put(&record("p", "a", None, body.clone())).await.unwrap();
    let got = s.get("p", "a", 0).await.unwrap().expect("record present");
    assert_eq!(got.body, body);
    assert_eq!(got.expires_at, None);
    assert!(s.get("p", "b", 0).await.unwrap().is_none());
    assert!(s.get("q", "a", 0).await.unwrap().is_none());
}

async fn a_second_write_to_the_same_key_replaces_the_first(kind: StoreKind) {
    let (s, _g) = store(kind).await;
    s.put(&record("p", "a", Some(100), json!({"v": 1}))).await.unwrap();
    s.put(&record("p", "a", None, json!({"v": 2}))).await.unwrap();
    let got = s.get("p", "a", 1000).await.unwrap().expect("replaced record is live");
    assert_eq!(got.body, json!({"v": 2}));
    assert_eq!(s.query("p", "!", "~", 1000).await.unwrap().len(), 1);
}

async fn an_expired_record_is_absent_even_before_the_store_deletes_it(kind: StoreKind) {
    let (s, _g) = store(kind).await;
    // The readers' clock, an hour ahead of the table's: none of these is expired in real time,
    // so DynamoDB Local's own TTL sweep (which may delete an expired item at once) removes none.
    let now = Utc::now().timestamp() + 3600;
    s.put(&record("p", "old", Some(now - 1), json!({}))).await.unwrap();
    s.put(&record("p", "edge", Some(now), json!({}))).await.unwrap();
    s.put(&record("p", "new", Some(now + 60), json!({}))).await.unwrap();
    assert!(s.get("p", "old", now).await.unwrap().is_none());
    assert!(s.get("p", "edge", now).await.unwrap().is_none(), "expires_at == now is expired");
    assert!(s.get("p", "new", now).await.unwrap().is_some());
    let live: Vec<_> = s.query("p", "!", "~", now).await.unwrap().into_iter().map(|r| r.sk).collect();
    assert_eq!(live, ["new"]);
    // The same item is live to a reader whose clock is earlier.
    assert!(s.get("p", "old", now - 10).await.unwrap().is_some());
}

async fn a_query_returns_the_range_in_sort_key_order(kind: StoreKind) {
    let (s, _g) = store(kind).await;
    for sk in ["c", "a", "e", "b", "d"] {
        s.put(&record("p", sk, None, json!({"sk": sk}))).await.unwrap();
    }
    s.put(&record("other", "b", None, json!({}))).await.unwrap();
    let got: Vec<_> = s.query("p", "b", "d", 0).await.unwrap().into_iter().map(|r| r.sk).collect();
    assert_eq!(got, ["b", "c", "d"]);
}

async fn a_batch_larger_than_dynamodbs_limit_is_written_whole(kind: StoreKind) {
    let (s, _g) = store(kind).await;
    let batch: Vec<_> = (0..61).map(|i| record("batch", &format!("{i:05}"), None, json!({"i": i}))).collect();
    s.put_all(&batch).await.unwrap();
    let got = s.query("batch", "00000", "99999", 0).await.unwrap();
    assert_eq!(got.len(), 61);
    assert_eq!(got[60].body, json!({"i": 60}));
}

async fn the_ledger_reads_cost_records_by_time_range_across_days(kind: StoreKind) {
    let (s, _g) = store(kind).await;
    let t0 = Utc::now() - Duration::days(3);
    let clock = Arc::new(ManualClock::new(t0));
    let ledger = Ledger::new(Arc::clone(&s), Arc::new(PriceTable::default()), clock.clone(), STORE_RETRY);
    let usage = Usage { input_tokens: 100, output_tokens: 50, ..Usage::default() };
    for i in 0..4 {
        let request_id = format!("r{i}");
        let charge = Charge {
            request_id: &request_id,
            agent: "research",
            kind: CallKind::Search,
            provider: "perplexity",
            model: "sonar",
            usage: &usage,
            outcome: Outcome::Live,
            saved_usd: 0.0,
            upstream_id: None,
        };
        let record = ledger.charge(&charge).await;
        assert!((record.cost_usd - 0.00015).abs() < 1e-12);
        clock.advance(Duration::days(1));
    }
    // Calls of one request at the same instant are all kept.
    let same = Charge {
        request_id: "same",
        agent: "detail",
        kind: CallKind::Llm,
        provider: "openrouter",
        model: "m",
        usage: &usage,
        outcome: Outcome::Live,
        saved_usd: 0.0,
        upstream_id: None,
    };
    for _ in 0..3 {
        ledger.charge(&same).await;
    }
    assert_eq!(ledger.between(clock.now(), clock.now()).await.unwrap().len(), 3);
    let got = ledger.between(t0 + Duration::hours(12), t0 + Duration::days(2)).await.unwrap();
    let ids: Vec<_> = got.iter().map(|c| c.request_id.as_str()).collect();
    assert_eq!(ids, ["r1", "r2"], "inclusive of `to`");
    assert_eq!(ledger.between(t0, clock.now()).await.unwrap().len(), 7);
}

async fn empty_keys_are_refused_as_dynamodb_refuses_them(kind: StoreKind) {
    let (s, _g) = store(kind).await;
    assert!(s.put(&record("p", "", None, json!({}))).await.is_err());
    assert!(s.get("", "a", 0).await.is_err());
    assert!(s.query("p", "", "z", 0).await.is_err());
    assert!(s.query("p", "a", "z", 0).await.unwrap().is_empty(), "nothing was written");
}

async fn put_new_claims_a_key_once_unless_the_holder_expired(kind: StoreKind) {
    let (s, _g) = store(kind).await;
    assert!(s.put_new(&record("claim", "x", Some(100), json!({"by": "a"})), 50).await.unwrap());
    assert!(!s.put_new(&record("claim", "x", Some(200), json!({"by": "b"})), 60).await.unwrap(), "held");
    assert_eq!(s.get("claim", "x", 60).await.unwrap().unwrap().body, json!({"by": "a"}));
    assert!(s.put_new(&record("claim", "x", Some(300), json!({"by": "c"})), 100).await.unwrap(), "the holder expired");
    assert_eq!(s.get("claim", "x", 150).await.unwrap().unwrap().body, json!({"by": "c"}));
    s.put(&record("claim", "forever", None, json!({}))).await.unwrap();
    assert!(!s.put_new(&record("claim", "forever", None, json!({})), i64::MAX).await.unwrap());
}

// Issue 41: a read-modify-write lands only over the revision it read: a write that came
// between (another merge, a plain put) makes it fail, to be read and merged again; a record
// written before revisions is at revision 0; `None` writes only where nothing lives.
async fn put_if_writes_only_over_the_revision_it_read(kind: StoreKind) {
    let (s, _g) = store(kind).await;
    assert!(s.put_if(&record("prefs", "u", None, json!({"rev": 1, "v": "a"})), None, 10).await.unwrap());
    assert!(!s.put_if(&record("prefs", "u", None, json!({"rev": 1, "v": "b"})), None, 10).await.unwrap(), "exists");
    assert!(s.put_if(&record("prefs", "u", None, json!({"rev": 2, "v": "c"})), Some(1), 10).await.unwrap());
    assert!(!s.put_if(&record("prefs", "u", None, json!({"rev": 2, "v": "stale"})), Some(1), 10).await.unwrap());
    assert_eq!(s.get("prefs", "u", 10).await.unwrap().unwrap().body, json!({"rev": 2, "v": "c"}));
    s.put(&record("old", "u", None, json!({"v": "before revisions"}))).await.unwrap();
    assert!(!s.put_if(&record("old", "u", None, json!({"rev": 2})), Some(1), 10).await.unwrap());
    assert!(s.put_if(&record("old", "u", None, json!({"rev": 1, "v": "merged"})), Some(0), 10).await.unwrap());
    assert_eq!(s.get("old", "u", 10).await.unwrap().unwrap().body, json!({"rev": 1, "v": "merged"}));
    s.put(&record("gone", "u", Some(5), json!({"rev": 3}))).await.unwrap();
    assert!(!s.put_if(&record("gone", "u", None, json!({"rev": 4})), Some(3), 10).await.unwrap(), "expired");
}

on_both_stores!(
    put_if_writes_only_over_the_revision_it_read,
    put_new_claims_a_key_once_unless_the_holder_expired,
    empty_keys_are_refused_as_dynamodb_refuses_them,
    a_written_record_reads_back_with_its_body_intact,
    a_second_write_to_the_same_key_replaces_the_first,
    an_expired_record_is_absent_even_before_the_store_deletes_it,
    a_query_returns_the_range_in_sort_key_order,
    a_batch_larger_than_dynamodbs_limit_is_written_whole,
    the_ledger_reads_cost_records_by_time_range_across_days,
);

/// Under `cargo lambda watch` each function is its own process on the same `DATA_DIR`: two
/// independent connections writing at once must both land and see each other's writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_openers_of_one_local_store_write_concurrently_and_see_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let a = LocalRecords::open(dir.path()).unwrap();
    let b = LocalRecords::open(dir.path()).unwrap();
    let write = |s: LocalRecords, who: &'static str| async move {
        for i in 0..200 {
            s.put(&Record { pk: "shared".into(), sk: format!("{who}{i:04}"), expires_at: None, body: json!(i) })
                .await
                .unwrap();
        }
    };
    tokio::join!(write(a.clone(), "a"), write(b.clone(), "b"));
    assert_eq!(a.query("shared", "!", "~", 0).await.unwrap().len(), 400);
    assert_eq!(b.query("shared", "b", "b~", 0).await.unwrap().len(), 200);
}
