//! Fault injection: each store the bundle depends on hangs (a port that accepts and never
//! answers) or is gone (connections refused, as after a kill), before a request or in the
//! middle of a run. For each: the request's time, its status, and that nothing owed was lost:
//! what could not be stored is on the replay log, and written back from it to a healthy store
//! it is exactly what the answer reported. Each scenario prints its row of the README's fault
//! table (`| fault | ...`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use integration::perplexity::{self, AGENT_PATH};
use integration::rag::RagHarness;
use integration::{Harness, Setup, StoreKind, refused_url};
use serde_json::{Value, json};
use shared::core::clock::Clock;
use shared::core::records::{DynamoRecords, RecordStore, Timed, replay};
use wiremock::matchers::{method, path};
use wiremock::{Mock, ResponseTemplate};

/// The production bound on one record-store operation (`STORE_TIMEOUT_MS`'s default).
const STORE_TIMEOUT: Duration = Duration::from_millis(1000);

/// A DynamoDB store at `endpoint` (its table created first if `create`), bounded as
/// `compose::records` bounds it.
async fn dynamodb_at(endpoint: &str, create: bool) -> Arc<dyn RecordStore> {
    let store = DynamoRecords::at(endpoint, format!("faults-{}", uuid::Uuid::new_v4()), STORE_TIMEOUT).await;
    if create {
        store.create_table().await.expect("create the table");
    }
    Arc::new(Timed::new(Arc::new(store), STORE_TIMEOUT))
}

fn row(fault: &str, route: &str, status: u16, took: Duration, owed: &str) {
    println!("| {fault} | {route} | {status} | {} ms | {owed} |", took.as_millis());
}

/// A live search against a store that hangs or is gone: answered in time, and what it owed
/// (its cost record, its sources) is on the replay log; written back, it is what was answered.
async fn search_owes_nothing(fault: &str, store_endpoint: &str, within: Duration) {
    integration::logs::capture();
    let records = dynamodb_at(store_endpoint, false).await;
    let h = Harness::with(StoreKind::DynamoDb, Setup { perplexity: true, records: Some(records), ..Setup::default() })
        .await;
    Mock::given(method("POST"))
        .and(path(AGENT_PATH))
        .respond_with(ResponseTemplate::new(200).set_body_json(perplexity::plain_answer()))
        .mount(h.upstream())
        .await;
    let started = Instant::now();
    let (status, r) = h.post("/search", json!({"query": "coffee demand"})).await;
    let took = started.elapsed();
    assert_eq!(status, 200, "{r}");
    assert_eq!((r["mock"].as_bool(), r["sourcesStored"].as_bool()), (Some(false), Some(false)), "a live answer: {r}");
    assert!(took < within, "answered after {took:?}; the bound is {within:?}");

    let request_id = r["requestId"].as_str().unwrap().to_owned();
    let lines = integration::logs::lines(&request_id).into_iter().filter(|l| l.contains("replay")).collect::<Vec<_>>();
    let (healthy, _guard) = integration::store(StoreKind::DynamoDb).await;
    let done = shared::compose::replay(&*healthy, lines.clone()).await.unwrap();
    assert_eq!(
        (done.lines, done.written, done.refused),
        (2, 3, 0),
        "the cost record and the sources (one + header): {lines:#?}"
    );
    let again = shared::compose::replay(&*healthy, lines).await.unwrap();
    assert_eq!((again.lines, again.written, again.refused), (2, 0, 0), "a second replay writes nothing");

    let now = h.clock.now();
    let sources = shared::web::sources::list(&*healthy, &request_id, now).await.unwrap().expect("sources replayed");
    let urls: Vec<&str> = sources.iter().map(|s| s.url.as_str()).collect();
    assert_eq!(json!(urls), r["citations"], "the replayed sources are the answer's");
    let ledger = shared::costs::ledger::Ledger::new(
        healthy,
        Arc::new(shared::costs::pricing::PriceTable::default()),
        h.clock.clone(),
        shared::core::retry::STORE_RETRY,
    );
    let costs = ledger.between(now - chrono::Duration::hours(1), now + chrono::Duration::hours(1)).await.unwrap();
    let mine: Vec<_> = costs.iter().filter(|c| c.request_id == request_id).collect();
    assert_eq!(mine.len(), 1, "exactly one cost record, after two replays: {costs:?}");
    assert!((mine[0].cost_usd - r["usage"]["costUsd"].as_f64().unwrap()).abs() < 1e-12, "{:?} {r}", mine[0]);
    row(fault, "POST /search", status, took, "cost record and sources on the replay log; replayed twice: stored once");
}

// Given DynamoDB accepts connections and never answers, when an agent searches, then the answer
// is live and in time (each store step gives up at its bound: the cache read and the
// single-flight lease at 300 ms, the budget hold at 1 s then the outage allowance, the writes
// at 2 s) and the cost record and sources are on the replay log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamodb_hangs_search_answers_live_in_time_and_owes_nothing() {
    let hole = Switch::hung().await;
    search_owes_nothing("DynamoDB hangs (accepts, never answers)", &hole.url(), Duration::from_secs(5)).await;
}

// Given DynamoDB is gone (connections refused, as after a kill), then the same, sooner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamodb_gone_search_answers_live_in_time_and_owes_nothing() {
    search_owes_nothing("DynamoDB gone (connection refused)", &refused_url(), Duration::from_secs(4)).await;
}

/// A Perplexity that fails 3 calls in 10 (a 503, a 200 wrapping a failed run, a 503), never
/// three in a row, and otherwise answers.
struct Flaky(std::sync::atomic::AtomicUsize);

impl wiremock::Respond for Flaky {
    fn respond(&self, _: &wiremock::Request) -> ResponseTemplate {
        let error = json!({"error": {"message": "upstream overloaded", "type": "internal_server_error", "code": 503}});
        match self.0.fetch_add(1, Ordering::SeqCst) % 10 {
            1 | 6 => ResponseTemplate::new(503).set_body_json(error),
            2 => ResponseTemplate::new(200).set_body_json(json!({
                "id": "resp_failed", "object": "response", "created_at": 1, "model": "perplexity/sonar",
                "status": "failed", "output": [], "error": {"message": "model error", "type": "internal"}})),
            _ => ResponseTemplate::new(200).set_body_json(perplexity::plain_answer()),
        }
    }
}

// Given Perplexity fails 30% of calls (5xx and 200-wrapped failed runs, never three in a row),
// when agents search, then every search answers live within its budget, every answered call
// is costed exactly once, to the cent of its answer, and every failed run is recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transient_upstream_faults_cost_nothing_visible() {
    let h = Harness::with(StoreKind::Local, Setup { perplexity: true, ..Setup::default() }).await;
    Mock::given(method("POST"))
        .and(path(AGENT_PATH))
        .respond_with(Flaky(std::sync::atomic::AtomicUsize::new(0)))
        .mount(h.upstream())
        .await;
    let started = Instant::now();
    let mut answered = Vec::new();
    for i in 0..20 {
        let t = Instant::now();
        let (status, r) = h.post("/search", json!({"query": format!("coffee demand {i}")})).await;
        assert_eq!((status, r["mock"].as_bool()), (200, Some(false)), "search {i} answered live: {r}");
        assert!(t.elapsed() < Duration::from_secs(5), "search {i} took {:?}", t.elapsed());
        answered.push(r);
    }
    let took = started.elapsed() / 20;
    let calls = h.upstream_calls().await.len();
    assert!(calls >= 26, "the pattern failed {} of {calls} calls", calls - 20);
    let costs = h.costs().await;
    for r in &answered {
        let id = r["requestId"].as_str().unwrap();
        let paid: Vec<_> = costs.iter().filter(|c| c.request_id == id && !c.failed).collect();
        assert_eq!(paid.len(), 1, "{id} costed once: {paid:?}");
        assert!((paid[0].cost_usd - r["usage"]["costUsd"].as_f64().unwrap()).abs() < 1e-12, "{:?} {r}", paid[0]);
    }
    // Issue 53 item 10: a failed run (a 200 wrapping it) may have been billed: each such attempt
    // leaves a failed record of its own, though a retry then answered (before: none).
    let failed_runs = (0..calls).filter(|i| i % 10 == 2).count();
    assert!(failed_runs >= 2, "{calls} calls");
    let recorded = costs.iter().filter(|c| c.failed).count();
    assert_eq!(recorded, failed_runs, "one failed record per failed run: {costs:?}");
    row(
        "Perplexity fails 30% (5xx, failed runs)",
        "POST /search",
        200,
        took,
        "20 of 20 live, each costed once; each failed run recorded",
    );
}

// Given an invocation with 8 s left before Lambda's deadline and Perplexity that hangs, then the
// search ends in time for its owed writes (labelled mock data, the failed call accounted), not
// at the function's 22 s budget: every wait comes from the time the invocation has left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_ends_before_lambdas_deadline() {
    use lambda_http::RequestExt;
    let h = Harness::with(StoreKind::Local, Setup { perplexity: true, ..Setup::default() }).await;
    Mock::given(method("POST"))
        .and(path(AGENT_PATH))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(30)))
        .mount(h.upstream())
        .await;
    let left = Duration::from_secs(8);
    let mut context = lambda_http::Context::default();
    let deadline = std::time::SystemTime::now() + left;
    context.deadline = deadline.duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    let body = json!({"query": "coffee demand"}).to_string();
    let req = integration::as_backend(integration::request("POST", "/search", &body)).with_lambda_context(context);
    let started = Instant::now();
    let (status, _, r) = h.exchange_as(req, Some("deadline-1")).await;
    let took = started.elapsed();
    assert_eq!((status, r["mock"].as_bool()), (200, Some(true)), "{r}");
    let reserve = shared::web::search::OWED_RESERVE;
    assert!(
        took + reserve <= left + Duration::from_millis(300),
        "answered after {took:?}, leaving less than {reserve:?}"
    );
    let costs = h.costs().await;
    assert!(costs.iter().any(|c| c.request_id == "deadline-1" && c.failed), "the cut call is accounted: {costs:?}");
    row("Lambda's deadline 8 s away, Perplexity hangs", "POST /search", status, took, "the failed call's record");
}

// Issue 53 item 6: given DynamoDB hangs, when a user searches activities with the bundled
// embedder (nothing spent), rag-search answers in time: the user's quota fails open to this
// container's count of the same limits (before: 503, the quota failing closed), which still
// refuses the user's third search of a minute of two.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamodb_hangs_rag_search_answers_a_free_read_counted_in_the_container() {
    let hole = Switch::hung().await;
    let records = dynamodb_at(&hole.url(), false).await;
    let h = RagHarness::on_store(records, &[("USER_QUOTA_PER_MINUTE", "2"), ("USER_QUOTA_PER_DAY", "500")]).await;
    let query = json!({"semanticQuery": "周末 户外", "userId": "u-1", "limit": 5});
    let started = Instant::now();
    let (status, r) = h.search(query.clone()).await;
    let took = started.elapsed();
    assert_eq!(status, 200, "{r}");
    assert!(took < Duration::from_millis(3000), "answered after {took:?} (the store's bound is 1 s)");
    row("DynamoDB hangs", "POST /rag/search", status, took, "nothing spent; the quota counted in the container");
    assert_eq!(h.search(query.clone()).await.0, 200);
    let (status, r) = h.search(query).await;
    assert_eq!((status, r["error"]["code"].as_str()), (429, Some("quota_exceeded")), "the container's count: {r}");
}

// Issue 62 item 5: given DynamoDB throttling the user's own quota counter (a hot key: the
// store answers `ThrottlingException`, as a flood of one user's requests makes it), the request
// is refused 429 `quota_exceeded` with Retry-After 1 and not counted in the container (before:
// failed open, so each container gave the flooding user a quota of their own); given DynamoDB
// hung, it still fails open (the outage the fallback is for).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttled_quota_key_is_refused_and_a_hung_store_fails_open() {
    use shared::costs::quota::Quota;
    let dynamodb = integration::FakeServer::start().await;
    // DynamoDB's JSON 1.0 error, as it answers a throttled UpdateItem.
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(400).insert_header("content-type", "application/x-amz-json-1.0").set_body_json(
            json!({"__type": "com.amazonaws.dynamodb.v20120810#ThrottlingException",
                   "message": "Throughput exceeds the current capacity for one or more global secondary indexes or partitions."}),
        ))
        .mount(&dynamodb)
        .await;
    let clock: Arc<dyn Clock> = Arc::new(shared::core::clock::ManualClock::new(integration::rag::now()));
    let quota = Quota::new(100, 0, dynamodb_at(&dynamodb.uri(), false).await, Arc::clone(&clock));
    for _ in 0..3 {
        let e = quota.take("u-1").await.unwrap_err();
        assert_eq!((e.status(), e.code(), e.retry_after_secs()), (429, "quota_exceeded", Some(1)), "{e}");
    }
    assert!(!dynamodb.received_requests().await.unwrap_or_default().is_empty(), "the store was asked");

    let hole = Switch::hung().await;
    let quota = Quota::new(100, 0, dynamodb_at(&hole.url(), false).await, clock);
    quota.take("u-1").await.expect("a hung store fails open to the container's count");
}

/// One HTTP/1.1 request read off `stream` (its head and a `Content-Length` body), or `None` when
/// the connection ends first.
async fn read_request(stream: &mut tokio::net::TcpStream) -> Option<Vec<u8>> {
    use tokio::io::AsyncReadExt;
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&bytes[..head_end]).to_ascii_lowercase();
    let length: usize =
        head.lines().find_map(|l| l.strip_prefix("content-length:")).and_then(|v| v.trim().parse().ok()).unwrap_or(0);
    while bytes.len() < head_end + length {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
        }
    }
    Some(bytes)
}

/// A proxy on 127.0.0.1 in front of DynamoDB Local (`target`, host:port) that loses DynamoDB's
/// answer to the `operation` requests (`UpdateItem`, `PutItem`) numbered in `lose` (0 the
/// first, retries counted): each is forwarded and applied, and its client is answered a 500
/// `InternalServerError` instead, as after a fault between DynamoDB's write and its answer,
/// which the SDK sends again.
async fn losing_answers(target: String, operation: &'static str, lose: &'static [usize]) -> String {
    let target_header = format!("x-amz-target: dynamodb_20120810.{}", operation.to_ascii_lowercase());
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let updates = Arc::new(AtomicUsize::new(0));
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            let (target, updates, target_header) = (target.clone(), Arc::clone(&updates), target_header.clone());
            tokio::spawn(async move {
                let Ok(mut outbound) = tokio::net::TcpStream::connect(&target).await else { return };
                let Some(first) = read_request(&mut inbound).await else { return };
                if outbound.write_all(&first).await.is_err() {
                    return;
                }
                let head = String::from_utf8_lossy(&first).to_ascii_lowercase();
                let update = head.contains(&target_header);
                if update && lose.contains(&updates.fetch_add(1, Ordering::SeqCst)) {
                    // DynamoDB's answer begins: the update is applied. Its client never hears it.
                    let mut answer = [0u8; 64];
                    let _ = outbound.read(&mut answer).await;
                    let body =
                        r#"{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"answer lost"}"#;
                    let lost = format!(
                        "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/x-amz-json-1.0\r\n\
                         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = inbound.write_all(lost.as_bytes()).await;
                    return;
                }
                let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
            });
        }
    });
    format!("http://127.0.0.1:{port}")
}

// Issue 53 item 8: a counter update DynamoDB applied but whose answer was lost (a 500 or a reset
// after the write) is sent again by the SDK; it counts once, and its caller gets the total. A
// hold and then a refund, each answer lost once: the counter is what was held less what was
// refunded (before: each counted twice, a refund given twice lifting a user over the cap).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_counter_update_whose_answer_was_lost_counts_once() {
    let endpoint = integration::dynamodb_local_endpoint();
    let table = format!("faults-{}", uuid::Uuid::new_v4());
    let direct = DynamoRecords::local(&endpoint, table.clone()).await;
    direct.create_table().await.expect("create the table");
    let proxy = losing_answers(endpoint.trim_start_matches("http://").to_owned(), "UpdateItem", &[0, 2]).await;
    let proxied = DynamoRecords::at(&proxy, table, STORE_TIMEOUT).await;
    let expires = chrono::Utc::now().timestamp() + 3600;

    assert_eq!(proxied.add("USERSPEND#u", "spend", 500, Some(1000), expires).await.unwrap(), Some(500), "the hold");
    assert_eq!(proxied.add("USERSPEND#u", "spend", -200, None, expires).await.unwrap(), Some(300), "the refund");
    let stored = direct.get("USERSPEND#u", "spend", 0).await.unwrap().expect("the counter");
    assert_eq!(stored.body, json!({"total": 300}), "each update counted once");
    // The cap still refuses: 300 + 800 reaches it, the next is refused.
    assert_eq!(proxied.add("USERSPEND#u", "spend", 800, Some(1000), expires).await.unwrap(), Some(1100));
    assert_eq!(proxied.add("USERSPEND#u", "spend", 1, Some(1000), expires).await.unwrap(), None);
    assert_eq!(direct.get("USERSPEND#u", "spend", 0).await.unwrap().unwrap().body, json!({"total": 1100}));
}

// Issue 62 item 5: a conditional put DynamoDB applied but whose answer was lost is sent again by
// the SDK and refused by its own write; it is told it wrote (a reader's place or a research's
// claim is not orphaned), while another writer's put on the same key is still refused (before:
// the retry's refusal read as "someone else holds it").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conditional_put_whose_answer_was_lost_is_its_own() {
    use shared::core::records::Record;
    let endpoint = integration::dynamodb_local_endpoint();
    let table = format!("faults-{}", uuid::Uuid::new_v4());
    let direct = DynamoRecords::local(&endpoint, table.clone()).await;
    direct.create_table().await.expect("create the table");
    // PutItem requests: 0 the claim (answer lost), 1 its retry, 2 another writer's claim, 3 the
    // next revision (answer lost), 4 its retry, 5 a stale revision.
    let proxy = losing_answers(endpoint.trim_start_matches("http://").to_owned(), "PutItem", &[0, 3]).await;
    let proxied = DynamoRecords::at(&proxy, table, STORE_TIMEOUT).await;
    let now = chrono::Utc::now().timestamp();
    let claim = Record {
        pk: "SESSION#s".into(),
        sk: "PLACE#1".into(),
        expires_at: Some(now + 60),
        body: json!({"holder": "a", "rev": 1}),
    };
    assert!(proxied.put_new(&claim, now).await.unwrap(), "the claim whose answer was lost is this call's");
    let other = Record { body: json!({"holder": "b", "rev": 1}), ..claim.clone() };
    assert!(!proxied.put_new(&other, now).await.unwrap(), "another writer's claim on the key is refused");
    let next = Record { body: json!({"holder": "a", "rev": 2}), ..claim.clone() };
    assert!(proxied.put_if(&next, Some(1), now).await.unwrap(), "the revision whose answer was lost is this call's");
    assert!(!proxied.put_if(&claim, Some(1), now).await.unwrap(), "a stale revision is refused");
    assert_eq!(direct.get("SESSION#s", "PLACE#1", now).await.unwrap().expect("the place").body, next.body);
}

/// A TCP proxy on 127.0.0.1 in front of `target` whose behaviour can be switched: forward,
/// hang (accept and never answer) or refuse (close at once); switching away from forward
/// cuts the connections it was forwarding (the server was killed).
struct Switch {
    port: u16,
    mode: Arc<AtomicU8>,
    cut: Arc<tokio::sync::Notify>,
}

const FORWARD: u8 = 0;
const HANG: u8 = 1;
const REFUSE: u8 = 2;

impl Switch {
    async fn start(target: String, mode: u8) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (mode, cut) = (Arc::new(AtomicU8::new(mode)), Arc::new(tokio::sync::Notify::new()));
        let (m, c) = (Arc::clone(&mode), Arc::clone(&cut));
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((mut inbound, _)) = listener.accept().await {
                match m.load(Ordering::SeqCst) {
                    FORWARD => {
                        let (target, cut) = (target.clone(), Arc::clone(&c));
                        tokio::spawn(async move {
                            let Ok(mut outbound) = tokio::net::TcpStream::connect(&target).await else { return };
                            tokio::select! {
                                _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                                _ = cut.notified() => {}
                            }
                        });
                    }
                    HANG => held.push(inbound),
                    _ => drop(inbound),
                }
            }
        });
        Self { port, mode, cut }
    }

    /// A port that accepts every connection and never answers (a hung DynamoDB or Qdrant).
    async fn hung() -> Self {
        Self::start(String::new(), HANG).await
    }

    fn set(&self, mode: u8) {
        self.mode.store(mode, Ordering::SeqCst);
        if mode != FORWARD {
            self.cut.notify_waiters();
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

/// The Qdrant server the test command started (its gRPC port), or a loud skip.
fn qdrant_grpc() -> Option<String> {
    let Ok(url) = std::env::var("QDRANT_URL") else {
        eprintln!("NOT RUN: the Qdrant server scenarios need QDRANT_URL (the test command starts the server)");
        assert!(std::env::var("CI").is_err(), "CI runs every fault scenario: QDRANT_URL must be set");
        return None;
    };
    Some(url.trim_start_matches("http://").to_owned())
}

/// A Qdrant server of its own with an API key and a read-only key (`infra/qdrant-server.sh`
/// on the binary the test command names, `QDRANT_BIN`): its gRPC URL; killed on drop.
struct KeyedQdrant {
    url: String,
    pid: String,
}

impl KeyedQdrant {
    const KEY: &str = "rw-test-key";
    const READ_ONLY_KEY: &str = "ro-test-key";

    fn start() -> Option<Self> {
        let Ok(bin) = std::env::var("QDRANT_BIN") else {
            eprintln!("NOT RUN: the read-only key scenario needs QDRANT_BIN (the test command sets it)");
            assert!(std::env::var("CI").is_err(), "CI runs the read-only key scenario: QDRANT_BIN must be set");
            return None;
        };
        let out = std::process::Command::new("bash")
            .args(["../infra/qdrant-server.sh", &bin])
            .env("QDRANT__SERVICE__API_KEY", Self::KEY)
            .env("QDRANT__SERVICE__READ_ONLY_API_KEY", Self::READ_ONLY_KEY)
            .output()
            .expect("infra/qdrant-server.sh runs");
        let exports = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "the keyed Qdrant server did not start: {exports}");
        let value = |name: &str| {
            exports.split_whitespace().find_map(|w| w.strip_prefix(&format!("{name}="))).unwrap().to_owned()
        };
        Some(Self { url: value("QDRANT_URL"), pid: value("QDRANT_PID") })
    }
}

impl Drop for KeyedQdrant {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill").arg(&self.pid).status();
    }
}

// Issue 41, least privilege: the functions that only read the index (rag-search, the assistant)
// run with Qdrant's read-only key and `QDRANT_READ_ONLY=true`: they search what the writer
// indexed, and they cannot write: before the collection exists they answer a 503 naming the
// collection step (they do not create it), and the same key without the flag fails at its first
// write (the payload indexes), which is why the flag exists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_key_searches_and_cannot_write() {
    let Some(server) = KeyedQdrant::start() else { return };
    let collection = format!("readonly-{}", uuid::Uuid::new_v4());
    let with = |key: &'static str, read_only: &'static str| {
        let (url, collection) = (server.url.clone(), collection.clone());
        async move {
            RagHarness::new(&[
                ("VECTOR_STORE", "qdrant"),
                ("QDRANT_URL", &url),
                ("QDRANT_COLLECTION", &collection),
                ("QDRANT_API_KEY", key),
                ("QDRANT_READ_ONLY", read_only),
            ])
            .await
        }
    };
    let reader = with(KeyedQdrant::READ_ONLY_KEY, "true").await;
    let (status, r) = reader.search(query()).await;
    assert_eq!((status, r["error"]["code"].as_str()), (503, Some("store_unavailable")), "{r}");
    let writer = with(KeyedQdrant::KEY, "false").await;
    let catalogue =
        json!([integration::rag::activity("hike", "周末户外徒步", "户外", "周末一起去郊外徒步，呼吸新鲜空气。", 20),]);
    let (status, r) = writer.index("POST", "/activities", &catalogue.to_string()).await;
    assert_eq!(status, 200, "{r}");
    let (ids, r) = reader.search_ids(query()).await;
    assert_eq!(ids, ["hike"], "the read-only reader searches what was indexed: {r}");
    let unflagged = with(KeyedQdrant::READ_ONLY_KEY, "false").await;
    let (status, r) = unflagged.search(query()).await;
    assert_eq!(status, 503, "a read-only key cannot create the payload indexes: {r}");
    let (status, _) = reader.index("POST", "/activities", &catalogue.to_string()).await;
    assert_ne!(status, 200, "nor write a point");
}

async fn rag_search_on(url: &str) -> RagHarness {
    let collection = format!("faults-{}", uuid::Uuid::new_v4());
    RagHarness::new(&[("VECTOR_STORE", "qdrant"), ("QDRANT_URL", url), ("QDRANT_COLLECTION", &collection)]).await
}

/// The search every Qdrant scenario makes.
fn query() -> Value {
    json!({"semanticQuery": "周末 户外", "limit": 5})
}

/// [`query`], answered (`when`: why it should be).
async fn answers(h: &RagHarness, when: &str) {
    let (status, r) = h.search(query()).await;
    assert_eq!(status, 200, "{when}: {r}");
}

/// A search on `h` while its Qdrant server is down (`fault`): a 503 JSON error asking for a
/// retry, well inside seed 004's 3 s. Prints the fault table's row.
async fn fails_fast(h: &RagHarness, fault: &str) {
    let started = Instant::now();
    let (status, r) = h.search(query()).await;
    let took = started.elapsed();
    assert_eq!((status, r["error"]["code"].as_str()), (503, Some("store_unavailable")), "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("please retry"), "{r}");
    assert!(took < Duration::from_millis(2500), "503 after {took:?}");
    row(fault, "POST /rag/search", status, took, "nothing owed (a read)");
}

// Given the Qdrant server hangs, when a user searches, then rag-search answers a 503 JSON error
// naming the vector index well inside seed 004's 3 s; and when the server is back, the next
// request answers (nothing about the failure was kept).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qdrant_hangs_rag_search_fails_fast_and_recovers() {
    let Some(target) = qdrant_grpc() else { return };
    let switch = Switch::start(target, HANG).await;
    let h = rag_search_on(&switch.url()).await;
    fails_fast(&h, "Qdrant hangs").await;

    switch.set(FORWARD);
    answers(&h, "the next request after the server is back").await;
}

// Given the Qdrant server is killed mid-run (its connections cut, then refused), then the
// next search is a 503 in time and the one after its return answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qdrant_killed_mid_run_fails_fast_and_recovers() {
    let Some(target) = qdrant_grpc() else { return };
    let switch = Switch::start(target, FORWARD).await;
    let h = rag_search_on(&switch.url()).await;
    answers(&h, "healthy first").await;
    switch.set(REFUSE);
    fails_fast(&h, "Qdrant killed mid-run").await;
    switch.set(FORWARD);
    answers(&h, "the server is back").await;
}

// Given DynamoDB is killed mid-run (a healthy run, then connections refused), then searches
// keep answering live in time, and what each owed is on the replay log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamodb_killed_mid_run_search_keeps_answering() {
    integration::logs::capture();
    let target = integration::dynamodb_local_endpoint().trim_start_matches("http://").to_owned();
    let switch = Switch::start(target, FORWARD).await;
    let records = dynamodb_at(&switch.url(), true).await;
    let h = Harness::with(StoreKind::DynamoDb, Setup { perplexity: true, records: Some(records), ..Setup::default() })
        .await;
    Mock::given(method("POST"))
        .and(path(AGENT_PATH))
        .respond_with(ResponseTemplate::new(200).set_body_json(perplexity::plain_answer()))
        .mount(h.upstream())
        .await;
    let (status, r) = h.post("/search", json!({"query": "coffee demand"})).await;
    assert_eq!((status, r["sourcesStored"].as_bool()), (200, Some(true)), "healthy first: {r}");
    switch.set(REFUSE);
    let started = Instant::now();
    let (status, r) = h.post("/search", json!({"query": "coffee prices"})).await;
    let took = started.elapsed();
    assert_eq!((status, r["mock"].as_bool()), (200, Some(false)), "{r}");
    assert!(took < Duration::from_secs(4), "{took:?}");
    let request_id = r["requestId"].as_str().unwrap();
    let replays = integration::logs::lines(request_id).into_iter().filter(|l| replay::decode(l).is_some()).count();
    assert_eq!(replays, 2, "the cost record and the sources are on the replay log");
    row("DynamoDB killed mid-run", "POST /search", status, took, "cost record and sources on the replay log");
}

// Given the dead-letter queue holds an event EventBridge could not deliver, Lambda's
// on-failure record of an event that failed on our side, one of an event the function refused
// (4xx) and an unreadable body, when `infra/replay-dlq.sh` runs (against a fake `aws`
// executable that speaks the CLI's JSON), then the two retryable events are invoked
// asynchronously on the function, unwrapped from their records, and deleted after they were
// sent; the refused and the unreadable stay in the queue.
#[test]
fn the_dead_letter_replay_sends_each_event_back_and_deletes_it() {
    let dir = tempfile::tempdir().unwrap();
    let event = json!({"detail-type": "ActivityUpdated", "source": "juchang.activities", "detail": {"id": "surf'; rm -rf /; '"}});
    let failed = json!({"requestContext": {"condition": "RetriesExhausted"}, "requestPayload": event,
        "responsePayload": {"errorMessage": "event not applied; retry (HTTP 503): ..."}});
    let refused = json!({"requestContext": {"condition": "RetriesExhausted"}, "requestPayload": event,
        "responsePayload": {"errorMessage": "event refused (HTTP 400): ..."}});
    let messages = json!({"Messages": [
        {"ReceiptHandle": "h-1", "Body": event.to_string()},
        {"ReceiptHandle": "h-2", "Body": failed.to_string()},
        {"ReceiptHandle": "h-3", "Body": refused.to_string()},
        {"ReceiptHandle": "h-4", "Body": "not json"},
    ]});
    std::fs::write(dir.path().join("batch.json"), messages.to_string()).unwrap();
    let fake = r#"#!/usr/bin/env bash
d="$(dirname "$0")"
case "$1 $2" in
  "sqs receive-message") if [ -f "$d/batch.json" ]; then cat "$d/batch.json"; rm "$d/batch.json"; else echo '{}'; fi ;;
  "lambda invoke") for a in "$@"; do [ "$prev" = "--payload" ] && cat "${a#fileb://}" >> "$d/invoked" && echo >> "$d/invoked"; [ "$prev" = "--invocation-type" ] && echo "$a" >> "$d/types"; prev="$a"; done ;;
  "sqs delete-message") for a in "$@"; do [ "$prev" = "--receipt-handle" ] && echo "$a" >> "$d/deleted"; prev="$a"; done ;;
  *) echo "unexpected: $*" >&2; exit 2 ;;
esac
"#;
    let aws = dir.path().join("aws");
    std::fs::write(&aws, fake).unwrap();
    std::process::Command::new("chmod").arg("+x").arg(&aws).status().unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../infra/replay-dlq.sh");
    let path = format!("{}:{}", dir.path().display(), std::env::var("PATH").unwrap());
    let out = std::process::Command::new("bash")
        .args([script, "https://sqs.example/dlq", "index-activity"])
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("sent 2 events") && stdout.contains("left 2 in the queue"), "{stdout}");
    let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap();
    let invoked: Vec<Value> = read("invoked").lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(invoked, [event.clone(), event], "the event itself, unwrapped from the on-failure record");
    assert_eq!(read("types").lines().collect::<Vec<_>>(), ["Event", "Event"]);
    assert_eq!(read("deleted").lines().collect::<Vec<_>>(), ["h-1", "h-2"], "only what was sent is deleted");
}

// Issue 43: every log line of a request carries its request id and its caller (the on-call
// engineer's filter), from the span each function's entrypoint opens: a signed backend by its
// principal, a user by the hash of their id (never the id), anything else as anonymous.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_log_line_of_a_request_names_its_id_and_caller() {
    use lambda_http::RequestExt;
    integration::logs::capture();
    let with_id = |req: lambda_http::Request, id: &str| {
        let mut context = lambda_http::Context::default();
        context.request_id = id.to_owned();
        req.with_lambda_context(context)
    };
    let cases = [
        (integration::as_backend(integration::request("POST", "/search", "{}")), "span-test-backend"),
        (integration::as_user(integration::request("POST", "/rag/search", "{}"), "u-span"), "span-test-user"),
        (integration::request("GET", "/tools", ""), "span-test-anonymous"),
    ];
    for (req, id) in cases {
        let (parts, _) = with_id(req, id).into_parts();
        let span = shared::http::span(&parts);
        lambda_http::tracing::Instrument::instrument(
            async { lambda_http::tracing::warn!(code = "span_test", "a line inside the request") },
            span,
        )
        .await;
    }
    let caller = |id: &str| {
        let lines = integration::logs::lines(id);
        assert_eq!(lines.len(), 1, "{lines:?}");
        let line: Value = serde_json::from_str(&lines[0]).unwrap();
        assert_eq!(line["span"]["request_id"], id, "{line}");
        line["span"]["caller"].as_str().unwrap().to_owned()
    };
    assert_eq!(caller("span-test-backend"), "backend:123456789012:role/activity-backend");
    let user = caller("span-test-user");
    assert_eq!(user, format!("user:{}", shared::core::records::key_part("u-span", 12)));
    assert!(!user.contains("u-span"), "the user's id itself is not logged");
    assert_eq!(caller("span-test-anonymous"), "anonymous");
}

// Issue 62 item 5: given an embedder slower than the search's 3 s (a deployer's
// RAG_EMBED_TIMEOUT_MS above it), the search answers 503 in time and the embedding call its
// bound cut in flight is recorded as failed (it may have been billed) with the request's id, its
// hold kept (before: no record of it at all).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paid_call_cut_in_flight_by_the_search_bound_is_recorded() {
    use integration::rag::activity;
    let embedding = integration::embedding::EmbeddingServer::start(integration::rag::DIMS, Duration::ZERO).await;
    let h = RagHarness::with(Some(embedding), &[("RAG_EMBED_TIMEOUT_MS", "10000")]).await;
    let catalogue: Vec<Value> = (0..5)
        .map(|i| activity(&format!("a{i}"), &format!("桌游小局 {i}"), "桌游", "轻策略桌游，四五个人慢慢玩。", 30 + i))
        .collect();
    assert_eq!(h.index("POST", "/activities", &Value::from(catalogue).to_string()).await.0, 200);
    let server = h.embedding.as_ref().unwrap().server();
    server.reset().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(10)))
        .mount(server)
        .await;
    let started = Instant::now();
    let (status, r) = h.search(json!({"semanticQuery": "桌游", "limit": 3})).await;
    let took = started.elapsed();
    assert_eq!((status, r["error"]["code"].as_str()), (503, Some("store_unavailable")), "{r}");
    assert!(took < Duration::from_millis(3500), "answered after {took:?}");
    row("embedder slower than the search's 3 s", "POST /rag/search", status, took, "the cut call's failed record");
    let mut cut = Vec::new();
    for _ in 0..50 {
        cut = h.costs().await.into_iter().filter(|c| c.failed).collect();
        if !cut.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(cut.len(), 1, "one failed record for the call cut in flight: {cut:?}");
    assert_eq!(cut[0].kind, shared::costs::ledger::CallKind::Embedding);
    assert!(!cut[0].request_id.is_empty());
}
