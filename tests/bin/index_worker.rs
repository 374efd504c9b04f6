//! A second process for the multi-process tests: indexes `count` activities one at a time
//! into the Qdrant Edge directory under `data_dir` (shared mode, no embedder), printing
//! `ack <id>` after each write is acknowledged.
//!
//! Usage: `index_worker <data_dir> <id prefix> <count>`

use std::io::Write as _;
use std::sync::Arc;

use serde_json::json;
use shared::activities::activity::Activity;
use shared::core::clock::SystemClock;
use shared::core::records::LocalRecords;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, data_dir, prefix, count] = args.as_slice() else {
        eprintln!("usage: index_worker <data_dir> <id prefix> <count>");
        std::process::exit(2);
    };
    let count: usize = count.parse().expect("count is a number");
    // The harness's space: the API embedder's vector, no key (points stay pending).
    let config = integration::config(&[
        ("DATA_DIR", data_dir.as_str()),
        ("EMBEDDING_DIMENSIONS", "9"),
        ("EMBEDDING_PROVIDER", "openai"),
    ]);
    let records = Arc::new(LocalRecords::open(&config.core.data_dir).expect("records"));
    let index = shared::compose::vector_index(&config).expect("index");
    let indexer = shared::compose::indexer(&config, index, records, Arc::new(SystemClock)).expect("indexer");
    let start = chrono::Utc::now() + chrono::Duration::days(2);
    let mut out = std::io::stdout().lock();
    for i in 0..count {
        let id = format!("{prefix}-{i}");
        let activity = Activity::from_json(json!({
            "id": id, "title": format!("桌游小局 {i}"), "description": "轻松的小局", "type": "桌游",
            "startAt": (start + chrono::Duration::minutes(i as i64)).to_rfc3339(),
            "location": {"lat": 31.22, "lng": 121.44}, "status": "active",
            "currentParticipants": 1, "maxParticipants": 6
        }))
        .expect("valid activity");
        indexer.upsert(&[activity], &id).await.expect("indexed");
        writeln!(out, "ack {id}").and_then(|()| out.flush()).expect("stdout");
    }
}
