//! `cargo xtask bench rag`: activity retrieval over 100k activities on Qdrant Edge, and with
//! `QDRANT_URL` first the same retrieval over 10k activities on that Qdrant server beside Edge.
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
use shared::activities::activity::Activity;
use shared::activities::embedder::{Embedder, EmbeddingService, Input};
use shared::activities::index::bm25::Bm25;
use shared::activities::index::edge::EdgeIndex;
use shared::activities::index::{DenseSpace, HardFilter, Near, Point, VectorIndex, point_id};
use shared::activities::indexing::payload;
use shared::activities::request::SearchRequest;
use shared::activities::retrieval::{Ranking, Reasons, Retrieval};
use shared::activities::settings::{EdgeSharing, Fusion};
use shared::compose::Config;
use shared::core::clock::{Clock, ManualClock, SystemClock};
use shared::core::records::LocalRecords;
use shared::core::retry::RetryPolicy;
use shared::core::upstream::{ProviderError, Usage};

const N: usize = 100_000;
/// Activities of the server-against-Edge comparison (`QDRANT_URL`).
const SERVER_N: usize = 10_000;
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
        let text = activity.lexical_text(chrono_tz::Asia::Shanghai);
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
    let lapsed =
        sharing_figures(EdgeSharing::Shared, shared::activities::index::edge::LEASE + Duration::from_millis(50))
            .await?;
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

/// Synthetic activities: the sample texts spread over Shanghai (±0.4°) and the next 60 days,
/// dense vectors clustered around [`TOPICS`] topics.
struct Corpus {
    topics: Vec<Vec<f32>>,
    points: Vec<Point>,
    vectors: Vec<Vec<f32>>,
    activities: Vec<Activity>,
    kinds: Vec<String>,
}

fn corpus(n: usize, dims: usize, now: DateTime<Utc>, rng: &mut Rng) -> crate::Result<Corpus> {
    let topics: Vec<Vec<f32>> = (0..TOPICS).map(|_| normalised((0..dims).map(|_| rng.gauss()).collect())).collect();
    let sample: Vec<Value> = std::fs::read_to_string(crate::root().join("infra/sample/activities.jsonl"))?
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    let bm25 = Bm25::new();
    let (mut points, mut vectors, mut activities) =
        (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        let mut a = sample[i % sample.len()].clone();
        a["id"] = json!(format!("bench-{i}"));
        a["location"] = json!({"lat": 31.23 + 0.8 * (rng.unit() - 0.5), "lng": 121.47 + 0.8 * (rng.unit() - 0.5)});
        a["startAt"] = json!(
            (now + chrono::Duration::minutes((rng.unit() * 60.0 * 24.0 * 60.0) as i64) - chrono::Duration::days(3))
                .to_rfc3339()
        );
        let activity = Activity::from_json(a)?;
        let topic = rng.below(TOPICS);
        let dense = near_topic(rng, &topics[topic], 0.08);
        let text = activity.lexical_text(chrono_tz::Asia::Shanghai);
        points.push(Point {
            id: point_id(&activity.id),
            payload: payload(&activity, chrono_tz::Asia::Shanghai, true),
            dense: Some(dense.clone()),
            sparse: bm25.document(&text),
        });
        vectors.push(dense);
        activities.push(activity);
    }
    let kinds = sample.iter().filter_map(|a| a["type"].as_str().map(String::from)).collect();
    Ok(Corpus { topics, points, vectors, activities, kinds })
}

/// The bench queries' words (each made unique by a number).
const WORDS: [&str; 8] =
    ["轻松的小局", "适合社恐的活动", "周五晚上热闹的地方", "压力大想发呆", "玩水", "桌游", "安静读书", "夜跑"];

/// One bench query: the request, the vector [`Table`] answers for its text, its hard filter.
struct Probe {
    request: SearchRequest,
    vector: Vec<f32>,
    filter: HardFilter,
}

/// [`QUERIES`] queries: a topic vector, a place, sometimes a type, sometimes a 7-day window.
fn probes(c: &Corpus, now: DateTime<Utc>, rng: &mut Rng, table: &Table) -> crate::Result<Vec<Probe>> {
    let mut out = Vec::with_capacity(QUERIES);
    for q in 0..QUERIES {
        let topic = rng.below(TOPICS);
        let vector = near_topic(rng, &c.topics[topic], 0.05);
        let text = format!("{} #{q}", WORDS[q % WORDS.len()]);
        table.0.lock().unwrap().insert(text.clone(), vector.clone());
        let near = Near {
            lat: 31.23 + 0.6 * (rng.unit() - 0.5),
            lng: 121.47 + 0.6 * (rng.unit() - 0.5),
            radius_km: [5.0, 10.0, 20.0][q % 3],
        };
        let kind = (q % 4 == 0).then(|| c.kinds[rng.below(c.kinds.len())].clone());
        let window = (q % 2 == 0).then(|| (now, now + chrono::Duration::days(7)));
        let mut body = json!({"semanticQuery": text, "filters": {"location": {"lat": near.lat, "lng": near.lng, "radiusInKm": near.radius_km}}, "limit": 20});
        if let Some(k) = &kind {
            body["filters"]["type"] = json!(k);
        }
        if let Some((s, e)) = window {
            body["filters"]["timeRange"] = json!({"start": s.to_rfc3339(), "end": e.to_rfc3339()});
        }
        let request = SearchRequest::from_json(&body)?;
        out.push(Probe { request, vector, filter: HardFilter { after: now, near: Some(near), kind, window } });
    }
    Ok(out)
}

/// Retrieval as `rag-search` runs it (RRF fusion, no match reasons) over `index`, embedding
/// with `table`.
fn retrieval(
    index: Arc<dyn VectorIndex>,
    table: Arc<Table>,
    dir: &std::path::Path,
    now: DateTime<Utc>,
) -> crate::Result<Retrieval> {
    let records = Arc::new(LocalRecords::open(dir)?);
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(now));
    let config = Config::from_lookup(|_| None)?;
    let ledger = shared::compose::ledger(&config, records.clone(), clock.clone())?;
    let embedding =
        EmbeddingService::new(Ok(table), ledger, RetryPolicy::new(Duration::from_millis(10)), Duration::from_secs(5));
    let ranking = Ranking {
        min_similarity: Some(0.5),
        fusion: Fusion::Rrf,
        lexical_weight: shared::activities::settings::DEFAULT_LEXICAL_WEIGHT,
        wish_weight: shared::activities::wish::DEFAULT_WEIGHT,
        shaping: shared::activities::ranking::Shaping::DEFAULT,
        zone: chrono_tz::Asia::Shanghai,
    };
    let interests = shared::activities::interests::Interests::new(records, clock.clone());
    Ok(Retrieval::new(index, embedding, interests, Reasons::Off, ranking, clock))
}

/// Writes `points` in batches of [`BATCH`]; how long it took.
async fn load(index: &dyn VectorIndex, points: Vec<Point>) -> crate::Result<Duration> {
    let started = Instant::now();
    for batch in points.chunks(BATCH) {
        index.upsert(batch.to_vec()).await?;
    }
    Ok(started.elapsed())
}

/// Each probe through `Retrieval::search`, sorted latencies and the candidate counts.
async fn timed(retrieval: &Retrieval, probes: &[Probe]) -> crate::Result<(Vec<Duration>, Vec<usize>)> {
    let (mut took, mut candidates) = (Vec::with_capacity(probes.len()), Vec::with_capacity(probes.len()));
    for p in probes {
        let started = Instant::now();
        let response = retrieval.search(&p.request, "bench").await?;
        took.push(started.elapsed());
        candidates.push(response.candidates);
    }
    took.sort();
    Ok((took, candidates))
}

pub async fn run() -> crate::Result {
    sharing().await?;
    let dims: usize = std::env::var("BENCH_DIMS").ok().and_then(|d| d.parse().ok()).unwrap_or(384);
    let now: DateTime<Utc> = "2026-11-22T04:00:00Z".parse()?;
    if let Ok(url) = std::env::var("QDRANT_URL") {
        server_and_edge(&url, dims, now).await?;
    }
    let dir = tempfile::tempdir()?;
    let mut rng = Rng(0x5eed_0004);
    println!("== retrieval over {N} activities on Qdrant Edge ({dims}-d dense, BM25 sparse), {}", dir.path().display());
    let started = Instant::now();
    let c = corpus(N, dims, now, &mut rng)?;
    println!("prepared (BM25 of the lexical texts) in {:.1} s", started.elapsed().as_secs_f64());

    let space = DenseSpace { name: "bench".into(), dimensions: dims };
    let index = Arc::new(EdgeIndex::new(dir.path(), "activities", space.clone(), EdgeSharing::Exclusive));
    let upsert = load(&*index, c.points.clone()).await?;
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

    let table = Arc::new(Table(Default::default(), dims));
    let probes = probes(&c, now, &mut rng, &table)?;
    let retrieval = retrieval(index.clone(), table, dir.path(), now)?;
    let (hybrid, mut candidates) = timed(&retrieval, &probes).await?;
    let mut dense_only = Vec::with_capacity(QUERIES);
    let mut recalls = Vec::with_capacity(QUERIES);
    for p in &probes {
        // Recall@20 of the dense channel: the index's answer against brute force on the same filter.
        let started = Instant::now();
        let got = index.search_dense(&p.vector, &p.filter, 20, -1.0).await?;
        dense_only.push(started.elapsed());
        let mut exact: Vec<(f32, usize)> = c
            .activities
            .iter()
            .enumerate()
            .filter(|(_, a)| passes(a, &p.filter))
            .map(|(i, _)| (c.vectors[i].iter().zip(&p.vector).map(|(x, y)| x * y).sum::<f32>(), i))
            .collect();
        exact.sort_by(|a, b| b.0.total_cmp(&a.0));
        let truth: HashSet<_> = exact.iter().take(20).map(|&(_, i)| point_id(&c.activities[i].id)).collect();
        if !truth.is_empty() {
            recalls.push(got.iter().filter(|h| truth.contains(&h.id)).count() as f64 / truth.len() as f64);
        }
    }
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
        tokio::time::sleep(shared::activities::index::edge::LEASE + Duration::from_millis(50)).await;
        let started = Instant::now();
        shared_index.count(&HardFilter::bookable(now)).await?;
        counts.push(started.elapsed());
    }
    counts.sort();
    println!("EDGE_SHARING=shared: one count on the 100k shard, load included: median {:.1} ms", ms(counts[2]));
    Ok(())
}

/// The settings of a fresh bench collection of `dims`-d vectors on the Qdrant server at `url`.
fn server_config(url: &str, dims: usize) -> crate::Result<Config> {
    let collection = format!("bench-{}", uuid::Uuid::new_v4().simple());
    Ok(Config::from_lookup(|k| match k {
        "VECTOR_STORE" => Some("qdrant".into()),
        "QDRANT_URL" => Some(url.to_owned()),
        "QDRANT_API_KEY" => std::env::var("QDRANT_API_KEY").ok(),
        "QDRANT_COLLECTION" => Some(collection.clone()),
        "EMBEDDING_PROVIDER" => Some("openai".into()),
        "EMBEDDING_MODEL" => Some("bench".into()),
        "EMBEDDING_DIMENSIONS" => Some(dims.to_string()),
        _ => None,
    })?)
}

/// With `QDRANT_URL`: the same [`SERVER_N`] activities and queries through `Retrieval::search`
/// on the Qdrant server (a fresh collection, dropped after) and on Qdrant Edge, alternating
/// query by query so both see the same machine load.
async fn server_and_edge(url: &str, dims: usize, now: DateTime<Utc>) -> crate::Result {
    let mut rng = Rng(0x5eed_0015);
    let c = corpus(SERVER_N, dims, now, &mut rng)?;
    let dir = tempfile::tempdir()?;
    let config = server_config(url, dims)?;
    let server = shared::compose::vector_index(&config)?;
    let space = shared::compose::dense_space(&config);
    let edge: Arc<dyn VectorIndex> = Arc::new(EdgeIndex::new(dir.path(), "activities", space, EdgeSharing::Exclusive));
    println!("== Qdrant server ({url}) against Qdrant Edge: the same {SERVER_N} activities and {QUERIES} queries");
    let on_server = load(&*server, c.points.clone()).await?;
    let on_edge = load(&*edge, c.points.clone()).await?;
    println!(
        "indexing in batches of {BATCH}: server {:.0} activities/s, Edge {:.0} activities/s",
        SERVER_N as f64 / on_server.as_secs_f64(),
        SERVER_N as f64 / on_edge.as_secs_f64()
    );
    let table = Arc::new(Table(Default::default(), dims));
    let probes = probes(&c, now, &mut rng, &table)?;
    let on = |index: &Arc<dyn VectorIndex>| retrieval(index.clone(), table.clone(), dir.path(), now);
    let (server_rag, edge_rag) = (on(&server)?, on(&edge)?);
    // Warm both (connections, caches), then alternate.
    timed(&server_rag, &probes[..20]).await?;
    timed(&edge_rag, &probes[..20]).await?;
    let (mut s, mut e) = (Vec::with_capacity(QUERIES), Vec::with_capacity(QUERIES));
    for p in probes.chunks(1) {
        s.extend(timed(&server_rag, p).await?.0);
        e.extend(timed(&edge_rag, p).await?.0);
    }
    s.sort();
    e.sort();
    let (s50, s95, e50, e95) = (percentile(&s, 0.5), percentile(&s, 0.95), percentile(&e, 0.5), percentile(&e, 0.95));
    println!(
        "hybrid query through Retrieval::search (count, one batched dense + BM25 request, RRF, one read): server p50 {:.2} ms, p95 {:.2} ms; Edge p50 {:.2} ms, p95 {:.2} ms; server/Edge {:.1}x at p50, {:.1}x at p95",
        ms(s50),
        ms(s95),
        ms(e50),
        ms(e95),
        s50.as_secs_f64() / e50.as_secs_f64(),
        s95.as_secs_f64() / e95.as_secs_f64()
    );
    // The two channels as two requests against one batch request, alternating.
    let bm25 = Bm25::new();
    let (mut apart, mut batched) = (Vec::with_capacity(QUERIES), Vec::with_capacity(QUERIES));
    for (p, words) in probes.iter().zip(WORDS.iter().cycle()) {
        let sparse = bm25.query(words);
        let started = Instant::now();
        server.search_dense(&p.vector, &p.filter, 100, 0.5).await?;
        server.search_sparse(&sparse, &p.filter, 100).await?;
        apart.push(started.elapsed());
        let started = Instant::now();
        server.search_both(&p.vector, 0.5, &sparse, &p.filter, 100).await?;
        batched.push(started.elapsed());
    }
    apart.sort();
    batched.sort();
    println!(
        "the two channels on the server: two requests p50 {:.2} ms, p95 {:.2} ms; one batch request p50 {:.2} ms, p95 {:.2} ms ({:.2}x at p50)",
        ms(percentile(&apart, 0.5)),
        ms(percentile(&apart, 0.95)),
        ms(percentile(&batched, 0.5)),
        ms(percentile(&batched, 0.95)),
        percentile(&batched, 0.5).as_secs_f64() / percentile(&apart, 0.5).as_secs_f64()
    );
    let mut client = qdrant_client::Qdrant::from_url(url).skip_compatibility_check();
    if let Ok(key) = std::env::var("QDRANT_API_KEY") {
        client = client.api_key(key);
    }
    client.build()?.delete_collection(&config.activities.qdrant_collection).await?;
    Ok(())
}

/// The hard filter, evaluated in Rust for the brute-force reference.
fn passes(a: &Activity, f: &HardFilter) -> bool {
    a.status == shared::activities::activity::Status::Active
        && a.start_at > f.after
        && a.spots_left() > 0
        && f.kind.as_ref().is_none_or(|k| &a.kind == k)
        && f.window.is_none_or(|(s, e)| a.start_at >= s && a.start_at <= e)
        && f.near.is_none_or(|n| {
            shared::activities::ranking::distance_km(n.lat, n.lng, a.location.lat, a.location.lng) <= n.radius_km
        })
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
        let build = |key: bool| -> crate::Result<shared::activities::indexing::Indexer> {
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
                Arc::new(SystemClock),
            )?)
        };
        let import = shared::activities::backfill::Job {
            dry_run: false,
            force: false,
            batch_size: 100,
            source: Some(source.display().to_string()),
        };
        // Neither run is forced: the place is never read or kept.
        let records = LocalRecords::open(dir.path())?;
        let place = shared::activities::backfill::Place { records: &records, until: None, clock: &SystemClock };
        shared::activities::backfill::run(&build(false)?, &import, 6000, None, &place, |_| {}).await?;
        let sweep = shared::activities::backfill::Job { dry_run: false, force: false, batch_size: batch, source: None };
        let started = Instant::now();
        let summary = shared::activities::backfill::run(&build(true)?, &sweep, rate, None, &place, |_| {}).await?;
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

/// `cargo xtask bench nearby`: "what is near me" (no query, a location, `limit` 10) over 1k,
/// 10k and 100k activities on Qdrant Edge (and 1k, 10k on the server with `QDRANT_URL`),
/// through `Retrieval::search` (the ring search and the index's distance formula), against what
/// it replaced in the same run: reading every match of the filter and sorting in memory. Each
/// result list is checked against brute force.
pub async fn nearby() -> crate::Result {
    let now: DateTime<Utc> = "2026-11-22T04:00:00Z".parse()?;
    let dims = 8;
    println!("== explore nearby (no query, 10 km, limit 10): the ring search against reading every match");
    println!("| index | activities | matches p50 | ring search p50 | p95 | read-all p50 | read-all / ring |");
    println!("|---|---|---|---|---|---|---|");
    for n in [1_000, 10_000, 100_000] {
        let dir = tempfile::tempdir()?;
        let mut rng = Rng(0x5eed_0027);
        let c = corpus(n, dims, now, &mut rng)?;
        let space = DenseSpace { name: "bench".into(), dimensions: dims };
        let edge: Arc<dyn VectorIndex> =
            Arc::new(EdgeIndex::new(dir.path(), "activities", space, EdgeSharing::Exclusive));
        load(&*edge, c.points.clone()).await?;
        nearby_row("Edge", n, edge, &c, now, dir.path()).await?;
        if n <= SERVER_N
            && let Ok(url) = std::env::var("QDRANT_URL")
        {
            let server = shared::compose::vector_index(&server_config(&url, dims)?)?;
            load(&*server, c.points.clone()).await?;
            nearby_row("server", n, server, &c, now, dir.path()).await?;
        }
    }
    Ok(())
}

/// One row of [`nearby`]: 100 places in the city, each searched both ways, alternating.
async fn nearby_row(
    name: &str,
    n: usize,
    index: Arc<dyn VectorIndex>,
    c: &Corpus,
    now: DateTime<Utc>,
    dir: &std::path::Path,
) -> crate::Result {
    let retrieval = retrieval(index.clone(), Arc::new(Table(Default::default(), 8)), dir, now)?;
    let mut rng = Rng(0x0000_0027 + n as u64);
    let (mut ring, mut all, mut matches) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..100 {
        let near =
            Near { lat: 31.23 + 0.6 * (rng.unit() - 0.5), lng: 121.47 + 0.6 * (rng.unit() - 0.5), radius_km: 10.0 };
        let body = json!({"filters": {"location": {"lat": near.lat, "lng": near.lng, "radiusInKm": 10}}, "limit": 10});
        let request = SearchRequest::from_json(&body)?;
        let started = Instant::now();
        let response = retrieval.search(&request, "bench").await?;
        ring.push(started.elapsed());
        // What it replaced: every match read, then sorted by distance.
        let filter = HardFilter { after: now, near: Some(near), kind: None, window: None };
        let started = Instant::now();
        let count = index.count(&filter).await?;
        let mut every = index.scroll(&filter, shared::activities::index::Order::Any, count).await?;
        let distance = |s: &shared::activities::index::Stored| {
            let (lat, lng) = (
                s.payload["location"]["lat"].as_f64().unwrap_or(0.0),
                s.payload["location"]["lon"].as_f64().unwrap_or(0.0),
            );
            shared::activities::ranking::distance_km(near.lat, near.lng, lat, lng)
        };
        every.sort_by(|a, b| distance(a).total_cmp(&distance(b)));
        every.truncate(10);
        all.push(started.elapsed());
        matches.push(count);
        // The answer is exact: the same distances as brute force over the corpus.
        let mut truth: Vec<f64> = c
            .activities
            .iter()
            .filter(|a| passes(a, &filter))
            .map(|a| shared::activities::ranking::distance_km(near.lat, near.lng, a.location.lat, a.location.lng))
            .collect();
        truth.sort_by(f64::total_cmp);
        truth.truncate(10);
        let got: Vec<f64> = response.results.iter().filter_map(|r| r.distance_km).collect();
        if got.len() != truth.len() || got.iter().zip(&truth).any(|(g, t)| (g - t).abs() > 1e-6) {
            return Err(format!("{name} {n}: nearest {got:?} is not brute force's {truth:?}").into());
        }
    }
    ring.sort();
    all.sort();
    matches.sort();
    println!(
        "| {name} | {n} | {} | {:.2} ms | {:.2} ms | {:.2} ms | {:.1}× |",
        matches[matches.len() / 2],
        ms(percentile(&ring, 0.5)),
        ms(percentile(&ring, 0.95)),
        ms(percentile(&all, 0.5)),
        ms(percentile(&all, 0.5)) / ms(percentile(&ring, 0.5)).max(1e-9)
    );
    Ok(())
}
