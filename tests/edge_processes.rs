//! Qdrant Edge shared by processes, as under `cargo lambda watch` (each function its own
//! process, one `DATA_DIR`) and in Lambda (a process frozen or killed right after it answers):
//! writers in other processes and searches here interleave without errors or lost writes, and
//! every acknowledged write survives the writer being killed.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use integration::rag::RagHarness;
use serde_json::json;
use shared::activities::index::{HardFilter, point_id};

fn worker(dir: &std::path::Path, prefix: &str, count: usize) -> Child {
    Command::new(env!("CARGO_BIN_EXE_index_worker"))
        .args([dir.to_str().unwrap(), prefix, &count.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start index_worker")
}

fn acks(child: &mut Child, want: Option<usize>) -> Vec<String> {
    let stdout = child.stdout.take().unwrap();
    let mut ids = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        ids.push(line.strip_prefix("ack ").expect("ack line").to_owned());
        if want == Some(ids.len()) {
            break;
        }
    }
    ids
}

// Given two writer processes and searches here at the same time, then every search answers,
// the candidate count only grows, and all writes of both processes are there at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_in_other_processes_and_searches_here_interleave() {
    let h = RagHarness::with(None, &[]).await;
    // Enough writes that the writers outlast one lease hand-over (MAX_HOLD) on a loaded machine.
    let mut writers = [worker(h.dir.path(), "w1", 100), worker(h.dir.path(), "w2", 100)];
    let mut last = 0;
    let mut searches = 0;
    while writers.iter_mut().any(|w| w.try_wait().unwrap().is_none()) {
        let (status, r) = h.search(json!({"semanticQuery": "桌游小局", "limit": 50})).await;
        assert_eq!(status, 200, "{r}");
        let candidates = r["candidates"].as_u64().unwrap();
        assert!(candidates >= last, "{candidates} < {last}");
        last = candidates;
        searches += 1;
    }
    for w in &mut writers {
        assert!(w.wait().unwrap().success());
    }
    let index = h.rag.retrieval.index().clone();
    let ids: Vec<_> = (0..100).flat_map(|i| [point_id(&format!("w1-{i}")), point_id(&format!("w2-{i}"))]).collect();
    assert_eq!(index.get(&ids, false).await.unwrap().len(), 200);
    assert_eq!(index.count(&HardFilter::bookable(chrono::Utc::now())).await.unwrap(), 200);
    assert!(searches > 1, "the searches ran while the writers wrote");
}

// Given a writer killed (SIGKILL) in the middle of its run, then every write it acknowledged
// is in the index, and the index still takes writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_a_killed_writer() {
    let h = RagHarness::with(None, &[]).await;
    let mut writer = worker(h.dir.path(), "k", 10_000);
    let acked = acks(&mut writer, Some(20));
    writer.kill().unwrap();
    writer.wait().unwrap();
    let index = h.rag.retrieval.index().clone();
    let ids: Vec<_> = acked.iter().map(|id| point_id(id)).collect();
    assert_eq!(index.get(&ids, false).await.unwrap().len(), 20, "acknowledged: {acked:?}");
    let mut after = worker(h.dir.path(), "after", 3);
    assert_eq!(acks(&mut after, None).len(), 3);
    assert!(after.wait().unwrap().success());
    assert!(index.count(&HardFilter::bookable(chrono::Utc::now())).await.unwrap() >= 23);
}
