//! The backfill job (seed 004 Requirements 7, 16) on a real Qdrant Edge directory, with the
//! fake embedding server on 127.0.0.1: dry runs change nothing, imports and sweeps embed in
//! batches, `force` re-embeds all, a failed batch is finished by the next run, 429s slow the job
//! down without losing anything, and writes made while it runs survive it (on Qdrant Edge and
//! on a Qdrant server).

use std::sync::Arc;
use std::time::{Duration, Instant};

use backfill::App;
use integration::embedding::EmbeddingServer;
use integration::rag::{DIMS, activity};
use serde_json::json;
use shared::activities::backfill::{Job, Summary};
use shared::activities::index::HardFilter;
use wiremock::matchers::{body_string_contains, method};
use wiremock::{Mock, ResponseTemplate};

fn app(dir: &std::path::Path, embedding: Option<&EmbeddingServer>) -> App {
    let mut vars = vec![
        ("EMBEDDING_PROVIDER", "openai".to_owned()),
        ("DATA_DIR", dir.display().to_string()),
        ("EMBEDDING_DIMENSIONS", DIMS.to_string()),
        ("RETRY_BASE_MS", "5".into()),
    ];
    if let Some(server) = embedding {
        vars.push(("EMBEDDING_API_KEY", "embedding-test-key".into()));
        vars.push(("EMBEDDING_BASE_URL", server.uri()));
    }
    let config = integration::config(&vars);
    let records: Arc<dyn shared::core::records::RecordStore> =
        Arc::new(shared::core::records::LocalRecords::open(dir).unwrap());
    let index = shared::compose::vector_index(&config).unwrap();
    let clock: Arc<dyn shared::core::clock::Clock> =
        Arc::new(shared::core::clock::ManualClock::new(integration::rag::now()));
    let indexer = shared::compose::indexer(&config, index, Arc::clone(&records), Arc::clone(&clock)).unwrap();
    App { indexer, records, clock, rate: 6000, objects: None }
}

/// A JSON Lines file of `n` activities (the ones whose index is in `marked` say 故障 in their
/// title), and one broken line.
fn source(dir: &std::path::Path, n: usize, marked: &[usize]) -> String {
    let mut text = String::new();
    for i in 0..n {
        let title = if marked.contains(&i) { format!("故障测试活动 {i}") } else { format!("桌游小局 {i}") };
        text.push_str(&activity(&format!("a{i}"), &title, "桌游", "轻松的小局", 24 + i as i64).to_string());
        text.push('\n');
    }
    text.push_str("{not json\n");
    let path = dir.join("activities.jsonl");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn job(source: Option<String>, dry_run: bool, force: bool, batch_size: usize) -> Job {
    Job { dry_run, force, batch_size, source }
}

async fn run(app: &App, job: &Job) -> Summary {
    backfill::cli(app, job).await.unwrap()
}

// Given a fresh directory, when a dry run with a source runs, then it reports what it would
// create and import, and nothing is created or embedded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let server = EmbeddingServer::start(DIMS, Duration::ZERO).await;
    let app = app(dir.path(), Some(&server));
    let s = run(&app, &job(Some(source(dir.path(), 10, &[])), true, false, 4)).await;
    assert!(s.dry_run && s.migration.len() == 6, "{s:?}");
    assert_eq!((s.imported, s.total, s.processed, s.errors), (10, 10, 0, 1), "one broken line: {s:?}");
    assert!(!app.indexer.index().exists().await.unwrap());
    assert_eq!(server.calls(), 0);
}

// Given a source of 10, then they are imported and embedded 4 per call; a second sweep finds
// nothing pending; with force all 10 are embedded again; the migration is done once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imports_embed_in_batches_and_force_reembeds_all() {
    let dir = tempfile::tempdir().unwrap();
    let server = EmbeddingServer::start(DIMS, Duration::ZERO).await;
    let app = app(dir.path(), Some(&server));
    let src = source(dir.path(), 10, &[]);
    let s = run(&app, &job(Some(src), false, false, 4)).await;
    assert_eq!((s.imported, s.processed, s.errors, s.migration.len()), (10, 10, 1, 6), "{s:?}");
    assert_eq!((server.calls(), server.inputs()), (3, 10), "batches of 4, 4, 2");
    let s = run(&app, &job(None, false, false, 4)).await;
    assert_eq!((s.total, s.processed, s.migration.len()), (0, 0, 0), "nothing pending, collection exists: {s:?}");
    let s = run(&app, &job(None, false, true, 4)).await;
    assert_eq!((s.total, s.processed), (10, 10), "{s:?}");
    assert_eq!(server.inputs(), 20);
    assert_eq!(app.indexer.index().count(&HardFilter::bookable(integration::rag::now())).await.unwrap(), 10);
}

// Issue 43: a forced re-embedding that runs out of time keeps its place and stops; the next
// forced run resumes there and finishes (each point embedded once over both runs); the one
// after starts from the beginning again. So a collection of any size is re-embedded in runs of
// 15 minutes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_reembedding_resumes_where_it_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let server = EmbeddingServer::start(DIMS, Duration::from_millis(250)).await;
    let app = app(dir.path(), Some(&server));
    let s = run(&app, &job(Some(source(dir.path(), 12, &[])), false, false, 2)).await;
    assert_eq!((s.processed, s.complete), (12, true), "{s:?}");
    let before = server.inputs();
    let force = job(None, false, true, 2);
    let until = Some(tokio::time::Instant::now() + Duration::from_millis(900));
    let place = shared::activities::backfill::Place { records: &*app.records, until, clock: &*app.clock };
    let first = shared::activities::backfill::run(&app.indexer, &force, app.rate, None, &place, |_| {}).await.unwrap();
    assert!(!first.complete && !first.resumed && first.processed > 0 && first.processed < 12, "{first:?}");
    let second = run(&app, &force).await;
    assert!(second.complete && second.resumed, "{second:?}");
    assert_eq!(first.processed + second.processed, 12, "each point once: {first:?} {second:?}");
    assert_eq!(server.inputs() - before, 12);
    let third = run(&app, &force).await;
    assert_eq!((third.resumed, third.processed, third.complete), (false, 12, true), "from the start: {third:?}");
}

// Given points indexed pending and a sweep whose batch with 故障 keeps failing, then that
// batch is counted as errors and the job goes on; the next run embeds only what is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rerun_after_a_failed_batch_completes_only_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let src = source(dir.path(), 9, &[3, 4, 5]);
    let s = run(&app(dir.path(), None), &job(Some(src), false, false, 3)).await;
    assert_eq!((s.imported, s.processed, s.errors), (9, 0, 9 + 1), "no embedder: all pending: {s:?}");

    let flaky = EmbeddingServer::start(DIMS, Duration::ZERO).await;
    Mock::given(method("POST"))
        .and(body_string_contains("故障"))
        .respond_with(ResponseTemplate::new(500))
        .with_priority(1)
        .mount(flaky.server())
        .await;
    // Points are swept in id order, so the three marked ones may spoil up to three batches.
    let first = run(&app(dir.path(), Some(&flaky)), &job(None, false, false, 3)).await;
    assert_eq!((first.total, first.processed + first.errors), (9, 9), "{first:?}");
    assert!(
        first.errors >= 3 && first.errors % 3 == 0 && first.processed >= 3,
        "whole batches fail, the job goes on: {first:?}"
    );

    let healthy = EmbeddingServer::start(DIMS, Duration::ZERO).await;
    let s = run(&app(dir.path(), Some(&healthy)), &job(None, false, false, 3)).await;
    assert_eq!((s.total, s.processed, s.errors), (first.errors, first.errors, 0), "{s:?}");
    assert_eq!(healthy.inputs(), first.errors, "only the rest was embedded");
}

// Given the embedder answering 429 with Retry-After: 1 once, then the job waits and finishes
// with nothing lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_slows_the_job_down_without_losing_items() {
    let dir = tempfile::tempdir().unwrap();
    let server = EmbeddingServer::start(DIMS, Duration::ZERO).await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "1"))
        .with_priority(1)
        .up_to_n_times(1)
        .mount(server.server())
        .await;
    let app = app(dir.path(), Some(&server));
    let started = Instant::now();
    let s = run(&app, &job(Some(source(dir.path(), 6, &[])), false, false, 3)).await;
    assert!(started.elapsed() >= Duration::from_secs(1), "{:?}", started.elapsed());
    assert_eq!((s.processed, s.errors), (6, 1), "only the broken line: {s:?}");
    assert_eq!(server.inputs(), 6);
}

// Given the job's payloads, then the schedule event is the default sweep, a direct payload is
// read, and bad ones are refused naming the field; CLI arguments likewise.
#[test]
fn payloads_and_arguments_are_read_and_checked() {
    let schedule: serde_json::Value = serde_json::from_str(include_str!("../infra/events/schedule.json")).unwrap();
    assert_eq!(Job::from_event(&schedule).unwrap(), job(None, false, false, 100));
    let direct = json!({"dryRun": true, "force": true, "batchSize": 50, "source": "a.jsonl"});
    assert_eq!(Job::from_event(&direct).unwrap(), job(Some("a.jsonl".into()), true, true, 50));
    for (bad, needle) in [
        (json!({"batchSize": 0}), "batchSize"),
        (json!({"dryrun": true}), "dryrun"),
        (json!({"force": "yes"}), "force"),
    ] {
        let e = Job::from_event(&bad).unwrap_err();
        assert!(e.to_string().contains(needle), "{bad}: {e}");
    }
    let args: Vec<String> = ["--dry-run", "--from", "x.jsonl", "--batch-size", "7"].map(String::from).to_vec();
    assert_eq!(backfill::job_from_args(&args).unwrap(), job(Some("x.jsonl".into()), true, false, 7));
    assert!(backfill::job_from_args(&["--fast".to_owned()]).is_err());
}

// Given a source in S3 (a fake S3 endpoint on 127.0.0.1 speaking GetObject, answering only a
// request signed for S3 as S3 wants it: SigV4 scoped to s3, the payload's hash in its header),
// then it is imported like a file, through S3's own failure (a 503 SlowDown, read again); a
// missing object is a 400 naming it, asked once, and nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_s3_source_is_imported_like_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(source(dir.path(), 5, &[])).unwrap();
    let s3 = integration::FakeServer::start().await;
    Mock::given(method("GET"))
        .and(wiremock::matchers::path("/imports/activities.jsonl"))
        .respond_with(
            ResponseTemplate::new(503).set_body_string(
                "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>",
            ),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&s3)
        .await;
    Mock::given(method("GET"))
        .and(wiremock::matchers::path("/imports/activities.jsonl"))
        .and(wiremock::matchers::header_regex(
            "authorization",
            r"^AWS4-HMAC-SHA256 Credential=local/\d{8}/us-east-1/s3/aws4_request, SignedHeaders=[a-z0-9;-]*x-amz-content-sha256",
        ))
        .and(wiremock::matchers::header(
            "x-amz-content-sha256",
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        ))
        .respond_with(ResponseTemplate::new(200).set_body_string(text))
        .mount(&s3)
        .await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(404).set_body_string(
            "<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>",
        ))
        .mount(&s3)
        .await;
    let server = EmbeddingServer::start(DIMS, Duration::ZERO).await;
    let mut app = app(dir.path(), Some(&server));
    app.objects = Some(shared::core::aws::s3::Objects::local(&s3.uri()));
    let s = run(&app, &job(Some("s3://imports/activities.jsonl".into()), false, false, 100)).await;
    assert_eq!((s.imported, s.processed), (5, 5), "{s:?}");
    let e = backfill::cli(&app, &job(Some("s3://imports/missing.jsonl".into()), false, false, 100)).await.unwrap_err();
    assert_eq!(e.status(), 400);
    assert!(e.to_string().contains("s3://imports/missing.jsonl") && e.to_string().contains("NoSuchKey"), "{e}");
    let requests = s3.received_requests().await.unwrap_or_default();
    let asked = |path: &str| requests.iter().filter(|r| r.url.path() == path).count();
    assert_eq!(asked("/imports/activities.jsonl"), 2, "the 503 was read again");
    assert_eq!(asked("/imports/missing.jsonl"), 1, "a refusal is not asked again");
    assert_eq!(app.indexer.index().count(&HardFilter::bookable(integration::rag::now())).await.unwrap(), 5);
}

// Issue 62 item 5. Given an import bucket whose name another account now holds (deleted, then
// taken), then the read says which account must own it (`x-amz-expected-bucket-owner`, signed)
// and S3's 403 is a refusal naming it, nothing imported; the bucket of the right owner is read.
// An endpoint override in plain http beyond a loopback host is refused as a configuration error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_s3_import_reads_only_the_expected_owners_bucket() {
    use shared::core::aws::s3::Objects;
    let s3 = integration::FakeServer::start().await;
    // As S3 answers a bucket owned by 210987654321: the header names another owner, 403.
    Mock::given(method("GET"))
        .and(wiremock::matchers::path("/imports/activities.jsonl"))
        .and(wiremock::matchers::header("x-amz-expected-bucket-owner", "210987654321"))
        .and(wiremock::matchers::header_regex("authorization", r"SignedHeaders=[a-z0-9;-]*x-amz-expected-bucket-owner"))
        .respond_with(ResponseTemplate::new(200).set_body_string("{}"))
        .mount(&s3)
        .await;
    Mock::given(method("GET"))
        .and(wiremock::matchers::header_exists("x-amz-expected-bucket-owner"))
        .respond_with(ResponseTemplate::new(403).set_body_string(
            "<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>",
        ))
        .mount(&s3)
        .await;
    let e = Objects::local(&s3.uri()).owned_by("123456789012").get("imports", "activities.jsonl").await.unwrap_err();
    assert_eq!(e.status(), 400, "{e}");
    assert!(e.to_string().contains("AccessDenied") && e.to_string().contains("s3://imports/activities.jsonl"), "{e}");
    let read = Objects::local(&s3.uri()).owned_by("210987654321").get("imports", "activities.jsonl").await;
    assert_eq!(read.unwrap(), "{}", "the owner's own bucket is read");

    for (endpoint, ok) in
        [("http://s3.example.com", false), ("http://127.0.0.1:9000", true), ("https://s3.example.com", true)]
    {
        let refused = shared::core::validate::endpoint("AWS_ENDPOINT_URL_S3", endpoint);
        assert_eq!(refused.is_ok(), ok, "{endpoint}: {refused:?}");
    }
}

// Given three activities indexed pending, when a forced backfill has read them and waits on a
// slow embedder while one is replaced (new title) and one deleted through index-activity, then
// the backfill's vectors land only on the untouched one: the replacement keeps its content
// (pending, for the next run) and the deletion stays a deletion.
async fn writes_during_a_forced_backfill_survive_it(index: Vec<(&'static str, String)>) {
    let mut env = integration::rag::borrowed(&index);
    env.push(("INDEX_EMBED_TIMEOUT_MS", "100"));
    let server = EmbeddingServer::start(DIMS, Duration::from_millis(800)).await;
    let h = integration::rag::RagHarness::with(Some(server), &env).await;
    let catalogue = json!([
        activity("a", "白噪音读书局", "读书会", "安静看书", 30),
        activity("b", "周五啤酒局", "美食", "撸串喝啤酒", 32),
        activity("c", "城市夜跑", "运动", "沿江慢跑", 34),
    ]);
    let (status, r) = h.index("POST", "/activities", &catalogue.to_string()).await;
    assert_eq!(status, 202, "written pending (the embedder is slower than the write's time box): {r}");

    let mut config = h.config.clone();
    config.activities.index_embed_timeout = Duration::from_secs(20);
    let clock: Arc<dyn shared::core::clock::Clock> = h.clock.clone();
    let indexer = shared::compose::indexer(
        &config,
        shared::compose::vector_index(&config).unwrap(),
        h.records.clone(),
        Arc::clone(&clock),
    )
    .unwrap();
    let app = App { indexer, records: h.records.clone(), clock, rate: 6000, objects: None };
    let embedder = h.embedding.as_ref().unwrap();
    let before = embedder.calls();
    let sweep = tokio::spawn(async move { backfill::cli(&app, &job(None, false, true, 100)).await });
    // The writes come once the sweep has read the three and asked for their vectors (not after a
    // fixed wait: on a loaded machine the read may take longer).
    let asked = tokio::time::Instant::now() + Duration::from_secs(20);
    while embedder.calls() == before {
        assert!(tokio::time::Instant::now() < asked, "the sweep never asked for vectors");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let renamed = activity("a", "白噪音读书局·改期", "读书会", "安静看书", 30);
    let (status, r) = h.index("PUT", "/activities/a", &renamed.to_string()).await;
    assert_eq!((status, r["indexed"][0]["embedding"].as_str()), (202, Some("pending")), "{r}");
    let (status, r) = h.index("DELETE", "/activities/b", "").await;
    assert_eq!((status, r["deleted"].as_bool()), (200, Some(true)), "{r}");
    let summary = sweep.await.unwrap().unwrap();
    assert_eq!(summary.total, 3, "the sweep had read all three before the writes: {summary:?}");

    let ids = ["a", "b", "c"].map(shared::activities::index::point_id);
    let after = h.indexer.index().get(&ids, true).await.unwrap();
    let a = shared::activities::indexing::activity_of(&after[0].payload).unwrap();
    assert_eq!(a.title, "白噪音读书局·改期", "the PUT survived");
    assert!(after[0].dense.is_none() && after[0].payload["embedding"] == "pending", "{:?}", after[0].payload);
    assert!(after[1].is_tombstone(), "the DELETE survived: {:?}", after[1].payload);
    assert!(after[2].dense.is_some() && after[2].payload["embedding"] == "ready", "{:?}", after[2].payload);
    let (found, _) = h.search_ids(json!({"limit": 10})).await;
    assert_eq!(found, ["a", "c"]);
}

integration::on_edge_and_server!(writes_during_a_forced_backfill_survive_it);
