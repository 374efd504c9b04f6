//! Qdrant Edge shared by processes, as under `cargo lambda watch` (each function its own
//! process, one `DATA_DIR`) and in Lambda (a process frozen or killed right after it answers):
//! writers in other processes and searches here interleave without errors or lost writes, and
//! every acknowledged write survives the writer being killed.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use integration::rag::RagHarness;
use serde_json::json;
use shared::activities::index::edge::{EdgeIndex, LEASE, MAX_HOLD, MAX_TURN};
use shared::activities::index::one_turn;
use shared::activities::index::{DenseSpace, HardFilter, VectorIndex, point_id};
use shared::activities::settings::EdgeSharing;

/// A writer process, killed when dropped: a failing test never deletes its directory under a
/// writer still writing (which then fails for that, hiding the first failure).
struct Worker(Child);

impl std::ops::Deref for Worker {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for Worker {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

fn worker(dir: &std::path::Path, prefix: &str, count: usize) -> Worker {
    Worker(
        Command::new(env!("CARGO_BIN_EXE_index_worker"))
            .args([dir.to_str().unwrap(), prefix, &count.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start index_worker"),
    )
}

fn acks(child: &mut Worker, want: Option<usize>) -> Vec<String> {
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

/// A turn of `length` from its first operation (reads every LEASE / 4) on one index while
/// another index on the directory asks for the shard after that first operation: when the turn's
/// last read ended, and when the other had the shard.
async fn turn_beside_a_waiter(length: Duration) -> (Instant, Instant) {
    let dir = tempfile::tempdir().unwrap();
    let space = DenseSpace { name: "turns".into(), dimensions: 3 };
    let open = || EdgeIndex::new(dir.path(), "turns", space.clone(), EdgeSharing::Shared);
    let (searcher, other) = (open(), open());
    searcher.ensure().await.unwrap();
    let filter = HardFilter::bookable(chrono::Utc::now());
    let (first_done, other_may_start) = tokio::sync::oneshot::channel();
    let turn = one_turn(async {
        searcher.count(&filter).await.unwrap();
        let first = Instant::now();
        first_done.send(()).unwrap();
        let mut last = first;
        while first.elapsed() < length {
            tokio::time::sleep(LEASE / 4).await;
            searcher.count(&filter).await.unwrap();
            last = Instant::now();
        }
        last
    });
    let waiting = async {
        other_may_start.await.unwrap();
        other.count(&filter).await.unwrap();
        Instant::now()
    };
    tokio::join!(turn, waiting)
}

// Given a turn (a search's operations) holding the shard past MAX_HOLD while another index on
// the directory waits for it, then the turn keeps the shard to its last operation and the other
// gets it after: a search waits for the others once, not between its own reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_keeps_the_shard_to_its_last_operation() {
    let (last_of_turn, other_got_it) = turn_beside_a_waiter(MAX_HOLD * 3).await;
    assert!(other_got_it > last_of_turn, "the waiting index had the shard in the middle of the turn");
}

// Given a turn longer than MAX_TURN (overlapping searches in one process), then the waiting
// index gets the shard before the turn ends: a process's turns never starve the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_longer_than_max_turn_lets_a_waiter_in() {
    let (last_of_turn, other_got_it) = turn_beside_a_waiter(MAX_TURN * 2).await;
    assert!(other_got_it < last_of_turn, "the waiting index waited for the whole turn");
}
