//! `cargo xtask bench rag`: activity retrieval over 100k activities on Qdrant Edge.
//!
//! First, on the 240 sample activities: what sharing the directory between processes costs
//! (`EDGE_SHARING=shared` against `exclusive`, warm and after the lease lapsed).
//!
//! Prints indexing throughput (batched upserts, then the HNSW build), the seed 004 hybrid
//! query (hard filter + lexical + dense + RRF + reads, through `Retrieval::search` with an
//! in-process embedder that answers instantly) p50/p95, and recall@20 of the dense channel
//! against an exact brute-force search over the same hard filter. Vectors are synthetic but
//! clustered like real embeddings (200 topics, Gaussian spread), `BENCH_DIMS` long (384 by
//! default, the bundled model's size).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use shared::activity::Activity;
use shared::clock::{Clock, ManualClock};
use shared::config::{Config, EdgeSharing, Fusion};
use shared::embedder::{Embedder, Input};
use shared::index::bm25::Bm25;
use shared::index::edge::EdgeIndex;
use shared::index::{DenseSpace, HardFilter, Near, Point, VectorIndex, point_id};
use shared::indexing::payload;
use shared::provider::{ProviderError, Usage};
use shared::records::LocalRecords;
use shared::retrieval::{Retrieval, SearchRequest};
use shared::retry::RetryPolicy;

const N: usize = 100_000;
const TOPICS: usize = 200;
const QUERIES: usize = 200;
const BATCH: usize = 1000;

/// xorshift64*: deterministic, dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn gauss(&mut self) -> f32 {
        let (u, v) = (self.unit().max(1e-12), self.unit());
        ((-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
    }
}

fn normalised(mut v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= n);
    v
}

fn near_topic(rng: &mut Rng, topic: &[f32], spread: f32) -> Vec<f32> {
    normalised(topic.iter().map(|x| x + spread * rng.gauss()).collect())
}

/// Answers each query with the vector the bench chose for it.
struct Table(std::sync::Mutex<std::collections::HashMap<String, Vec<f32>>>, usize);

#[async_trait]
impl Embedder for Table {
    fn provider(&self) -> &str {
        "bench"
    }
    fn model(&self) -> &str {
        "synthetic"
    }
    fn dimensions(&self) -> usize {
        self.1
    }
    async fn embed_batch(&self, inputs: &[String], _: Input) -> Result<(Vec<Vec<f32>>, Usage), ProviderError> {
        let table = self.0.lock().unwrap();
        let vectors = inputs.iter().map(|t| table.get(t).cloned().unwrap_or_else(|| vec![0.0; self.1])).collect();
        Ok((vectors, Usage::default()))
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Warm operations on the sample activities in one mode: median filter-only count, median
/// hybrid legs (dense + BM25 searches under the hard filter), median upsert of one activity.
async fn sharing_figures(sharing: EdgeSharing, pause: Duration) -> crate::Result<[Duration; 3]> {
    let dims = 384;
    let now: DateTime<Utc> = "2026-11-22T04:00:00Z".parse()?;
    let dir = tempfile::tempdir()?;
    let mut rng = Rng(0x5eed_0018);
    let bm25 = Bm25::new();
    let mut points = Vec::new();
    for line in std::fs::read_to_string(crate::root().join("infra/sample/activities.jsonl"))?.lines() {
        let activity = Activity::from_json(serde_json::from_str(line)?)?;
        let text = activity.indexed_text(chrono_tz::Asia::Shanghai);
        points.push(Point {
            id: point_id(&activity.id),
            payload: payload(&activity, chrono_tz::Asia::Shanghai, true),
            dense: Some(normalised((0..dims).map(|_| rng.gauss()).collect())),
            sparse: bm25.document(&text),
        });
    }
    let space = DenseSpace { name: "bench".into(), dimensions: dims };
    let index = EdgeIndex::new(dir.path(), "activities", space, sharing);
    index.upsert(points.clone()).await?;
    let filter = HardFilter::bookable(now);
    let query = normalised((0..dims).map(|_| rng.gauss()).collect());
    let sparse = bm25.query("轻松 小局 桌游");
    let median = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (mut counts, mut hybrids, mut writes) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..30 {
        tokio::time::sleep(pause).await;
        let t = Instant::now();
        index.count(&filter).await?;
        counts.push(t.elapsed());
        tokio::time::sleep(pause).await;
        let t = Instant::now();
        index.search_dense(&query, &filter, 20, 0.0).await?;
        index.search_sparse(&sparse, &filter, 20).await?;
        hybrids.push(t.elapsed());
        tokio::time::sleep(pause).await;
        let mut one = points[i % points.len()].clone();
        one.dense = Some(normalised((0..dims).map(|_| rng.gauss()).collect()));
        let t = Instant::now();
        index.upsert(vec![one]).await?;
        writes.push(t.elapsed());
    }
    Ok([median(counts), median(hybrids), median(writes)])
}

/// Prints the cost of `EDGE_SHARING=shared` beside `exclusive`, measured in this run.
async fn sharing() -> crate::Result {
    println!("== EDGE_SHARING on the 240 sample activities (384-d dense, BM25), medians of 30");
    let exclusive = sharing_figures(EdgeSharing::Exclusive, Duration::ZERO).await?;
    let warm = sharing_figures(EdgeSharing::Shared, Duration::ZERO).await?;
    let lapsed = sharing_figures(EdgeSharing::Shared, shared::index::edge::LEASE + Duration::from_millis(50)).await?;
    for (i, what) in ["filter-only count", "hybrid legs (dense + BM25)", "index one activity"].iter().enumerate() {
        println!(
            "{what}: exclusive {:.2} ms; shared warm {:.2} ms ({:.2}x); shared after the lease lapsed (reopens) {:.2} ms ({:.1}x)",
            ms(exclusive[i]),
            ms(warm[i]),
            warm[i].as_secs_f64() / exclusive[i].as_secs_f64(),
            ms(lapsed[i]),
            lapsed[i].as_secs_f64() / exclusive[i].as_secs_f64(),
        );
    }
    Ok(())
}

pub async fn run() -> crate::Result {
    sharing().await?;
    let dims: usize = std::env::var("BENCH_DIMS").ok().and_then(|d| d.parse().ok()).unwrap_or(384);
    let now: DateTime<Utc> = "2026-11-22T04:00:00Z".parse()?;
    let dir = tempfile::tempdir()?;
    let mut rng = Rng(0x5eed_0004);
    let topics: Vec<Vec<f32>> = (0..TOPICS).map(|_| normalised((0..dims).map(|_| rng.gauss()).collect())).collect();
    let sample: Vec<Value> = std::fs::read_to_string(crate::root().join("infra/sample/activities.jsonl"))?
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    println!("== retrieval over {N} activities on Qdrant Edge ({dims}-d dense, BM25 sparse), {}", dir.path().display());

    // Activities: sample texts, spread over Shanghai (±0.4°) and the next 60 days.
    let bm25 = Bm25::new();
    let mut points_of = Vec::with_capacity(N);
    let mut vectors = Vec::with_capacity(N);
    let mut activities = Vec::with_capacity(N);
    let started = Instant::now();
    for i in 0..N {
        let mut a = sample[i % sample.len()].clone();
        a["id"] = json!(format!("bench-{i}"));
        a["location"] = json!({"lat": 31.23 + 0.8 * (rng.unit() - 0.5), "lng": 121.47 + 0.8 * (rng.unit() - 0.5)});
        a["startAt"] = json!(
            (now + chrono::Duration::minutes((rng.unit() * 60.0 * 24.0 * 60.0) as i64) - chrono::Duration::days(3))
                .to_rfc3339()
        );
        let activity = Activity::from_json(a)?;
        let topic = rng.below(TOPICS);
        let dense = near_topic(&mut rng, &topics[topic], 0.08);
        let text = activity.indexed_text(chrono_tz::Asia::Shanghai);
        points_of.push(Point {
            id: point_id(&activity.id),
            payload: payload(&activity, chrono_tz::Asia::Shanghai, true),
            dense: Some(dense.clone()),
            sparse: bm25.document(&text),
        });
        vectors.push(dense);
        activities.push(activity);
    }
    println!("prepared (BM25 of the enriched texts) in {:.1} s", started.elapsed().as_secs_f64());

    let space = DenseSpace { name: "bench".into(), dimensions: dims };
    let index = Arc::new(EdgeIndex::new(dir.path(), "activities", space.clone(), EdgeSharing::Exclusive));
    let started = Instant::now();
    let mut batch = Vec::with_capacity(BATCH);
    for p in points_of {
        batch.push(p);
        if batch.len() == BATCH {
            index.upsert(std::mem::take(&mut batch)).await?;
        }
    }
    index.upsert(batch).await?;
    let upsert = started.elapsed();
    let started = Instant::now();
    index.optimize().await?;
    let optimise = started.elapsed();
    println!(
        "indexing: {:.0} activities/s in batches of {BATCH} ({:.1} s, each batch flushed to disk); HNSW build {:.1} s; total {:.0} activities/s",
        N as f64 / upsert.as_secs_f64(),
        upsert.as_secs_f64(),
        optimise.as_secs_f64(),
        N as f64 / (upsert + optimise).as_secs_f64()
    );

    // Queries: a topic vector, a place, sometimes a type, sometimes a 7-day window.
    let table = Arc::new(Table(Default::default(), dims));
    let records = Arc::new(LocalRecords::open(dir.path())?);
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(now));
    let config = Config::from_lookup(|_| None)?;
    let retrieval = Retrieval {
        index: index.clone(),
        embedder: Ok(table.clone()),
        ledger: shared::compose::ledger(&config, records.clone(), clock.clone())?,
        interests: shared::interests::Interests { records, clock: clock.clone() },
        bm25: Arc::new(Bm25::new()),
        clock,
        retry: RetryPolicy::new(Duration::from_millis(10)),
        embed_timeout: Duration::from_secs(5),
        min_similarity: Some(0.5),
        fusion: Fusion::Rrf,
        lexical_weight: shared::config::DEFAULT_LEXICAL_WEIGHT,
        reasons: shared::retrieval::Reasons::Off,
        zone: chrono_tz::Asia::Shanghai,
    };
    let kinds: Vec<String> = sample.iter().filter_map(|a| a["type"].as_str().map(String::from)).collect();
    let words =
        ["轻松的小局", "适合社恐的活动", "周五晚上热闹的地方", "压力大想发呆", "玩水", "桌游", "安静读书", "夜跑"];
    let mut hybrid = Vec::with_capacity(QUERIES);
    let mut dense_only = Vec::with_capacity(QUERIES);
    let mut recalls = Vec::with_capacity(QUERIES);
    let mut candidates = Vec::with_capacity(QUERIES);
    for q in 0..QUERIES {
        let topic = rng.below(TOPICS);
        let vector = near_topic(&mut rng, &topics[topic], 0.05);
        let text = format!("{} #{q}", words[q % words.len()]);
        table.0.lock().unwrap().insert(text.clone(), vector.clone());
        let near = Near {
            lat: 31.23 + 0.6 * (rng.unit() - 0.5),
            lng: 121.47 + 0.6 * (rng.unit() - 0.5),
            radius_km: [5.0, 10.0, 20.0][q % 3],
        };
        let kind = (q % 4 == 0).then(|| kinds[rng.below(kinds.len())].clone());
        let window = (q % 2 == 0).then(|| (now, now + chrono::Duration::days(7)));
        let mut body = json!({"semanticQuery": text, "filters": {"location": {"lat": near.lat, "lng": near.lng, "radiusInKm": near.radius_km}}, "limit": 20});
        if let Some(k) = &kind {
            body["filters"]["type"] = json!(k);
        }
        if let Some((s, e)) = window {
            body["filters"]["timeRange"] = json!({"start": s.to_rfc3339(), "end": e.to_rfc3339()});
        }
        let request = SearchRequest::from_json(body.as_object().unwrap())?;
        let started = Instant::now();
        let response = retrieval.search(&request, "bench").await?;
        hybrid.push(started.elapsed());
        candidates.push(response.candidates);

        // Recall@20 of the dense channel: the index's answer against brute force on the same filter.
        let filter = HardFilter { after: now, near: Some(near), kind: kind.clone(), window };
        let started = Instant::now();
        let got = index.search_dense(&vector, &filter, 20, -1.0).await?;
        dense_only.push(started.elapsed());
        let mut exact: Vec<(f32, usize)> = activities
            .iter()
            .enumerate()
            .filter(|(_, a)| passes(a, &filter))
            .map(|(i, _)| (vectors[i].iter().zip(&vector).map(|(x, y)| x * y).sum::<f32>(), i))
            .collect();
        exact.sort_by(|a, b| b.0.total_cmp(&a.0));
        let truth: HashSet<_> = exact.iter().take(20).map(|&(_, i)| point_id(&activities[i].id)).collect();
        if !truth.is_empty() {
            recalls.push(got.iter().filter(|h| truth.contains(&h.id)).count() as f64 / truth.len() as f64);
        }
    }
    hybrid.sort();
    dense_only.sort();
    candidates.sort();
    println!(
        "hybrid query (count + BM25 + dense + RRF + reads, through Retrieval::search): p50 {:.2} ms, p95 {:.2} ms; hard-filter candidates p50 {} (min {}, max {})",
        ms(percentile(&hybrid, 0.5)),
        ms(percentile(&hybrid, 0.95)),
        candidates[candidates.len() / 2],
        candidates[0],
        candidates[candidates.len() - 1]
    );
    println!(
        "dense channel alone: p50 {:.2} ms, p95 {:.2} ms; recall@20 vs exact brute force on the same filter: mean {:.4} over {} queries (min {:.2})",
        ms(percentile(&dense_only, 0.5)),
        ms(percentile(&dense_only, 0.95)),
        recalls.iter().sum::<f64>() / recalls.len() as f64,
        recalls.len(),
        recalls.iter().cloned().fold(1.0, f64::min)
    );

    // The cost of sharing the directory between processes: the first operation loads the shard.
    let shared_index = EdgeIndex::new(dir.path(), "activities", space, EdgeSharing::Shared);
    drop(retrieval);
    drop(index);
    let mut counts = Vec::new();
    for _ in 0..5 {
        tokio::time::sleep(shared::index::edge::LEASE + Duration::from_millis(50)).await;
        let started = Instant::now();
        shared_index.count(&HardFilter::bookable(now)).await?;
        counts.push(started.elapsed());
    }
    counts.sort();
    println!("EDGE_SHARING=shared: one count on the 100k shard, load included: median {:.1} ms", ms(counts[2]));
    Ok(())
}

/// The hard filter, evaluated in Rust for the brute-force reference.
fn passes(a: &Activity, f: &HardFilter) -> bool {
    a.status == shared::activity::Status::Active
        && a.start_at > f.after
        && a.spots_left() > 0
        && f.kind.as_ref().is_none_or(|k| &a.kind == k)
        && f.window.is_none_or(|(s, e)| a.start_at >= s && a.start_at <= e)
        && f.near
            .is_none_or(|n| shared::retrieval::distance_km(n.lat, n.lng, a.location.lat, a.location.lng) <= n.radius_km)
}

/// Answers `/embeddings` after `latency` with a vector per input.
struct SlowEmbeddings(Duration, usize);

impl wiremock::Respond for SlowEmbeddings {
    fn respond(&self, request: &wiremock::Request) -> wiremock::ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let n = body["input"].as_array().map_or(1, Vec::len);
        let data: Vec<Value> =
            (0..n).map(|i| json!({"index": i, "embedding": (0..self.1).map(|d| ((i + d) % 7) as f32 + 0.5).collect::<Vec<_>>()})).collect();
        wiremock::ResponseTemplate::new(200)
            .set_delay(self.0)
            .set_body_json(json!({"data": data, "usage": {"prompt_tokens": n * 50}}))
    }
}

/// `cargo xtask bench backfill`: the backfill sweep of 200 pending activities against a fake
/// embedding server answering every call after 100 ms: batched (100 per call), batched under
/// `BACKFILL_RATE=60`, and one at a time.
pub async fn backfill() -> crate::Result {
    const PENDING: usize = 200;
    const DIMS: usize = 64;
    let server = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .respond_with(SlowEmbeddings(Duration::from_millis(100), DIMS))
        .mount(&server)
        .await;
    let sample: Vec<Value> = std::fs::read_to_string(crate::root().join("infra/sample/activities.jsonl"))?
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    println!("== backfill of {PENDING} pending activities, embedder answering after 100 ms per call");
    for (label, batch, rate) in [
        ("batched, 100 per call", 100, 6000),
        ("batched, BACKFILL_RATE=60 (1 call/s)", 100, 60),
        ("one at a time", 1, 6000),
    ] {
        let dir = tempfile::tempdir()?;
        let mut lines = String::new();
        for (i, a) in sample.iter().cycle().take(PENDING).enumerate() {
            let mut a = a.clone();
            a["id"] = json!(format!("b-{i}"));
            a["startAt"] = json!((Utc::now() + chrono::Duration::days(3)).to_rfc3339());
            lines.push_str(&format!("{a}\n"));
        }
        let source = dir.path().join("activities.jsonl");
        std::fs::write(&source, lines)?;
        let build = |key: bool| -> crate::Result<shared::indexing::Indexer> {
            let uri = server.uri();
            let data = dir.path().display().to_string();
            let config = Config::from_lookup(|k| match k {
                "DATA_DIR" => Some(data.clone()),
                "EMBEDDING_DIMENSIONS" => Some(DIMS.to_string()),
                "EMBEDDING_API_KEY" if key => Some("bench".into()),
                "EMBEDDING_BASE_URL" => Some(uri.clone()),
                "EDGE_SHARING" => Some("exclusive".into()),
                _ => None,
            })?;
            let records = Arc::new(LocalRecords::open(dir.path())?);
            Ok(shared::compose::indexer(
                &config,
                shared::compose::vector_index(&config)?,
                records,
                Arc::new(shared::clock::SystemClock),
            )?)
        };
        let import = shared::backfill::Job {
            dry_run: false,
            force: false,
            batch_size: 100,
            source: Some(source.display().to_string()),
        };
        shared::backfill::run(&build(false)?, &import, 6000, None, |_| {}).await?;
        let sweep = shared::backfill::Job { dry_run: false, force: false, batch_size: batch, source: None };
        let started = Instant::now();
        let summary = shared::backfill::run(&build(true)?, &sweep, rate, None, |_| {}).await?;
        let took = started.elapsed();
        println!(
            "{label}: {} embedded, {} errors in {:.2} s = {:.0} activities/s",
            summary.processed,
            summary.errors,
            took.as_secs_f64(),
            summary.processed as f64 / took.as_secs_f64()
        );
    }
    Ok(())
}
