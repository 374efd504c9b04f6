//! `cargo xtask bench`: figures for the search function, each beside a baseline from the same
//! run (the machine is shared; ratios travel, absolute numbers do not).

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use serde_json::json;
use shared::compose::Config;
use shared::core::clock::SystemClock;
use shared::core::records::{DynamoRecords, LocalRecords, RecordStore};
use shared::core::retry::STORE_RETRY;
use shared::costs::ledger::{CallKind, CostRecord, CostSource, Ledger};
use shared::costs::pricing::PriceTable;
use shared::costs::report::{Params, Report, html as report_html, text as report_text};
use shared::costs::rollup::Day;
use shared::web::citations::{self, SearchHit};

use crate::runtime_api::RuntimeApi;
use crate::{Result, sample_upstream};

/// Runs the benches named in `only` (`search`, `cold`, `report`, `rag`, `nearby`, `backfill`,
/// `embed`), or all.
pub async fn run(only: Option<&str>) -> Result {
    if only.is_none_or(|o| o == "embed") {
        crate::embed_bench::run()?;
    }
    if only.is_none_or(|o| o == "search") {
        citation_extraction();
        handler_cache_hit().await?;
    }
    if only.is_none_or(|o| o == "cold") {
        cold_starts().await?;
    }
    if only.is_none_or(|o| o == "report") {
        cost_report().await?;
    }
    if only.is_none_or(|o| o == "rag") {
        crate::rag_bench::run().await?;
    }
    if only.is_none_or(|o| o == "nearby") {
        crate::rag_bench::nearby().await?;
    }
    if only.is_none_or(|o| o == "backfill") {
        crate::rag_bench::backfill().await?;
    }
    Ok(())
}

/// 100k cost records over the last 7 days, several agents, providers and kinds.
fn cost_records(n: usize, now: chrono::DateTime<Utc>) -> Vec<CostRecord> {
    let agents = ["research", "strategy", "writing", "rag", "milestone", "detail"];
    let span = chrono::Duration::days(7).num_milliseconds() - 1;
    (0..n)
        .map(|i| {
            let (kind, provider, model) = match i % 5 {
                0 => (CallKind::Llm, "deepseek", "deepseek-reasoner"),
                1 => (CallKind::Embedding, "zhipu", "embedding-3"),
                2 => (CallKind::Search, "tavily", "basic"),
                _ => (CallKind::Search, "perplexity", "sonar"),
            };
            CostRecord {
                request_id: format!("bench-{i:06}"),
                agent: agents[i % agents.len()].into(),
                kind,
                provider: provider.into(),
                model: model.into(),
                input_tokens: 500 + (i % 700) as u64,
                output_tokens: 200 + (i % 300) as u64,
                credits: u32::from(provider == "tavily"),
                searches: u32::from(provider == "perplexity"),
                cost_usd: 0.0001 * (1 + i % 50) as f64,
                cost_source: CostSource::PriceTable,
                cached: i % 7 == 0,
                mock: false,
                failed: i % 97 == 0,
                saved_usd: if i % 7 == 0 { 0.0012 } else { 0.0 },
                upstream_id: None,
                timestamp: now - chrono::Duration::milliseconds((i as i64 * span) / n as i64),
                citations: Default::default(),
            }
        })
        .collect()
}

async fn cost_report() -> Result {
    const N: usize = 100_000;
    let now = Utc::now();
    let records = cost_records(N, now);
    let dir = tempfile::tempdir()?;
    println!("\n== cost report over {N} cost records (7 days, 6 agents), default parameters");
    report_on(Arc::new(LocalRecords::open(dir.path())?), "embedded SQLite", &records, now).await?;
    match std::env::var("DYNAMODB_LOCAL_ENDPOINT") {
        Ok(endpoint) => {
            let store = DynamoRecords::local(&endpoint, format!("bench-{}", uuid::Uuid::new_v4())).await;
            store.create_table().await?;
            report_on(Arc::new(store), "DynamoDB Local", &records, now).await?;
        }
        Err(_) => {
            println!("DynamoDB Local: NOT MEASURED. Start it with `eval \"$(infra/dynamodb-local.sh)\"` and run again.")
        }
    }
    Ok(())
}

async fn report_on(
    store: Arc<dyn RecordStore>,
    label: &str,
    records: &[CostRecord],
    now: chrono::DateTime<Utc>,
) -> Result {
    let ledger = Ledger::new(store, Arc::new(PriceTable::default()), Arc::new(SystemClock), STORE_RETRY);
    let t = Instant::now();
    for chunk in records.chunks(1000) {
        ledger.record_all(chunk).await?;
    }
    let write = t.elapsed();
    let params = Params::parse([], now)?;
    // Every record read and summed (no stored sums), the first report (computes and stores the
    // closed days' sums), and the reports after it (closed days from their sums, today from
    // its records).
    let t = Instant::now();
    let all = ledger.between(params.from, params.to).await?;
    let by_day = all.chunk_by(|a, b| a.timestamp.date_naive() == b.timestamp.date_naive());
    let raw: Vec<Day> = by_day.map(|c| Day::of(c[0].timestamp.date_naive(), c)).collect();
    let every_record = t.elapsed();
    assert!(all.len() >= records.len() - 1, "read {} of {} records", all.len(), records.len());
    drop(all);
    let t = Instant::now();
    let first = ledger.days(params.from, params.to).await?;
    let first_report = t.elapsed();
    let calls = |days: &[Day]| days.iter().flat_map(|d| d.tallies.values()).map(|t| t.calls).sum::<u64>();
    assert_eq!(calls(&first), calls(&raw), "the sums count every answered call");
    let (mut read, mut build, mut render) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..3 {
        let t = Instant::now();
        let days = ledger.days(params.from, params.to).await?;
        read.push(t.elapsed());
        assert_eq!(calls(&days), calls(&raw), "stored sums count what the records do");
        let t = Instant::now();
        let report = Report::build(&params, &days);
        build.push(t.elapsed());
        let t = Instant::now();
        std::hint::black_box((
            report_text::render(&report),
            report_html::render(&report),
            serde_json::to_string(&report)?,
        ));
        render.push(t.elapsed());
    }
    let (r, b, x) = (median(read), median(build), median(render));
    println!(
        "{label}: reading every record {:.0} ms; first report's read {:.0} ms (stores the closed days' sums); then read {:.0} ms ({:.0}x less) + build {:.2} ms + render json/text/html {:.1} ms (median of 3); writing the records took {:.1} s",
        ms(every_record),
        ms(first_report),
        ms(r),
        every_record.as_secs_f64() / r.as_secs_f64(),
        ms(b),
        ms(x),
        write.as_secs_f64()
    );
    Ok(())
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn p90(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[(samples.len() * 9 / 10).min(samples.len() - 1)]
}

/// 1 MB of answer text: paragraphs with inline markers, reference definitions (some junk),
/// 200 API citations with duplicates and 200 titled search results.
fn large_answer() -> (String, Vec<String>, Vec<SearchHit>) {
    let mut content = String::with_capacity(1 << 20);
    let mut i = 0;
    while content.len() < (1 << 20) - 400 {
        i += 1;
        content.push_str(&format!(
            "台灣精品咖啡市場第{i}段：消費者偏好淺焙與手沖，連鎖品牌持續擴張 [{}][{}]。The market grew {}% year over year [{}].\n",
            i % 200 + 1, i % 37 + 1, i % 50, i % 250 + 1
        ));
        if i % 10 == 0 {
            content.push_str(&format!(
                "[{}]: https://news.example.org/article/{}?utm_source=x#p{}.\n",
                200 + i % 60,
                i % 500,
                i
            ));
        }
    }
    let citations = (0..200).map(|n| format!("https://site{}.example.com/report/{}", n % 150, n)).collect();
    let hits = (0..200)
        .map(|n| SearchHit {
            url: format!("https://site{}.example.com/report/{}", n % 150, n),
            title: Some(format!("報告 {n}")),
            ..SearchHit::default()
        })
        .collect();
    (content, citations, hits)
}

fn citation_extraction() {
    let (content, api, hits) = large_answer();
    let now = Utc::now();
    let found = citations::extract(&content, &api, &hits, &[], now);
    let samples: Vec<Duration> = (0..30)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(citations::extract(std::hint::black_box(&content), &api, &hits, &[], now));
            t.elapsed()
        })
        .collect();
    // Baseline: one pass of a byte scan over the same text (the least any extraction must do).
    let scan: Vec<Duration> = (0..30)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(content.bytes().filter(|b| *b == b'[').count());
            t.elapsed()
        })
        .collect();
    let m = median(samples.clone());
    println!(
        "\n== citation extraction on {:.2} MB ({} sources, {} unbacked markers found)",
        content.len() as f64 / 1e6,
        found.sources.len(),
        found.unbacked_markers.len()
    );
    println!(
        "median {:.2} ms, p90 {:.2} ms; seed budget 100 ms -> {:.1}% of budget; {:.1}x a bare byte scan ({:.3} ms)",
        ms(m),
        ms(p90(samples)),
        ms(m) / 100.0 * 100.0,
        m.as_secs_f64() / median(scan.clone()).as_secs_f64(),
        ms(median(scan))
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

async fn handler_cache_hit() -> Result {
    let upstream = sample_upstream::start().await;
    let dir = tempfile::tempdir()?;
    let uri = upstream.uri();
    let config = Config::from_lookup(|k| match k {
        "PERPLEXITY_API_KEY" => Some("bench".into()),
        "PERPLEXITY_BASE_URL" => Some(uri.clone()),
        _ => None,
    })?;
    let records = Arc::new(LocalRecords::open(dir.path())?);
    let service = search::routes(Arc::new(search::SearchFunction::new(&config, records, Arc::new(SystemClock))?));
    // Signed by the backend, as the HTTP API's IAM authorizer passes it.
    let context: lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpRequestContext = serde_json::from_value(
        json!({
        "http": {"method": "POST", "path": "/search", "protocol": "HTTP/1.1", "sourceIp": "192.0.2.1", "userAgent": "bench"},
        "authorizer": {"iam": {"userArn": "arn:aws:sts::123456789012:assumed-role/backend/bench"}}, "timeEpoch": 0}),
    )?;
    let request = |body: serde_json::Value| {
        use lambda_http::RequestExt;
        lambda_http::http::Request::builder()
            .method("POST")
            .uri("/search")
            .body(lambda_http::Body::from(body.to_string()))
            .expect("request")
            .with_request_context(lambda_http::request::RequestContext::ApiGatewayV2(context.clone()))
    };
    let timed = |body: serde_json::Value| {
        let service = &service;
        async move {
            let t = Instant::now();
            let r = shared::http::invoke(service.clone(), request(body)).await;
            assert_eq!(r.status(), 200);
            t.elapsed()
        }
    };
    let mut misses = Vec::new();
    for i in 0..40 {
        misses.push(timed(json!({"query": format!("台灣 咖啡 市場 {i}")})).await);
    }
    let mut hits = Vec::new();
    for i in 0..400 {
        hits.push(timed(json!({"query": format!("台灣 咖啡 市場 {}", i % 40)})).await);
    }
    let (h, m) = (median(hits.clone()), median(misses));
    println!("\n== search request through the handler (SQLite store in a temp dir)");
    println!("cache hit: median {:.3} ms, p90 {:.3} ms (read + source write + cost record)", ms(h), ms(p90(hits)));
    println!(
        "cache miss against a sample upstream on loopback: median {:.3} ms -> a hit takes {:.0}% of a miss (a real Perplexity call is 1-5 s)",
        ms(m),
        h.as_secs_f64() / m.as_secs_f64() * 100.0
    );
    Ok(())
}

/// The HTTP functions, each with the route its first request asks (unsigned: the answer is a
/// 401 before any work, so the time is the function's start), beside a hello-world function.
const COLD: [(&str, &str, &str); 7] = [
    ("hello-lambda", "GET", "/"),
    ("search", "POST", "/search"),
    ("rag-search", "POST", "/rag/search"),
    ("assistant", "POST", "/chat"),
    ("research", "POST", "/api/research"),
    ("cost-report", "GET", "/cost-report"),
    ("index-activity", "POST", "/activities"),
];

/// Cold start of each release binary, built and configured as deployed (without Qdrant Edge,
/// `VECTOR_STORE=qdrant`; records in a local file): from exec to its first answer under a
/// local Runtime API, the functions taking turns round after round (the machine is shared),
/// beside a hello-world `lambda_http` function and a bare process spawn; and each binary's
/// size. `COLD_START_BINARIES=<dir>` measures the binaries there instead of building
/// them; `COLD_START_BEFORE=<dir>` measures another commit's binaries there (hello's too, or
/// it takes this one's) in the same rounds, for a before/after.
async fn cold_starts() -> Result {
    let names = COLD.map(|(name, _, _)| name);
    let after = match std::env::var_os("COLD_START_BINARIES") {
        Some(dir) => names.map(|name| std::path::PathBuf::from(&dir).join(name)),
        None => crate::build_deployed(names)?,
    };
    let mut builds = vec![("after", after.clone())];
    if let Some(dir) = std::env::var_os("COLD_START_BEFORE") {
        let before = names.map(|name| std::path::PathBuf::from(&dir).join(name));
        builds.insert(0, ("before", before.map(|p| if p.exists() { p } else { after[0].clone() })));
    }
    crate::ensure_model()?;
    let dir = tempfile::tempdir()?;
    // samples[build][function], and the warm refusals after each first answer
    let mut samples: Vec<Vec<Vec<Duration>>> = vec![vec![Vec::new(); COLD.len()]; builds.len()];
    let mut warm = samples.clone();
    const WARM: usize = 20;
    let mut baseline = Vec::new();
    const ROUNDS: usize = 15;
    let turns = COLD.len() * builds.len();
    for round in 0..ROUNDS {
        let t = Instant::now();
        tokio::process::Command::new("true").status().await?;
        baseline.push(t.elapsed());
        for turn in 0..turns {
            // Each round starts with another function, and builds take turns too.
            let k = (round + turn) % turns;
            let (b, i) = (k % builds.len(), k / builds.len());
            let (name, method, path) = COLD[i];
            let mut event = crate::api_event(method, path, None)?;
            event["requestContext"]["authorizer"] = serde_json::Value::Null;
            let data = dir.path().join(format!("{name}-{b}-{round}"));
            // A Qdrant server as deployed (connected at the first search: nothing listens here).
            let env = [
                ("RECORD_STORE", "local".to_owned()),
                ("DATA_DIR", data.display().to_string()),
                ("VECTOR_STORE", "qdrant".to_owned()),
                ("QDRANT_URL", "http://127.0.0.1:9".to_owned()),
            ];
            let api = RuntimeApi::start().await?;
            let t = Instant::now();
            let mut child = api.spawn(&builds[b].1[i], &env, true)?;
            let answer = api.invoke(event.clone()).await.map_err(|e| format!("{name}: cold invoke failed: {e}"))?;
            samples[b][i].push(t.elapsed());
            for _ in 0..WARM {
                let t = Instant::now();
                api.invoke(event.clone()).await.map_err(|e| format!("{name}: warm invoke failed: {e}"))?;
                warm[b][i].push(t.elapsed());
            }
            child.kill().await?;
            let status = answer["statusCode"].as_u64().unwrap_or_default();
            if name != "hello-lambda" && status != 401 {
                return Err(format!("{name}'s unsigned {method} {path} answered {status}, not 401: {answer}").into());
            }
        }
    }
    println!(
        "\n== cold start of each release binary (as deployed: no Qdrant Edge, VECTOR_STORE=qdrant): exec to first answer under a local Runtime API, \
         {ROUNDS} rounds taking turns; a bare process spawn: {:.2} ms",
        ms(median(baseline))
    );
    println!(
        "{:<16} {:>7} {:>9} {:>11} {:>9} {:>9} {:>13} {:>13}",
        "function", "build", "size MB", "median ms", "p90 ms", "x hello", "warm 401 ms", "401s/s/exec"
    );
    for (i, (name, _, _)) in COLD.iter().enumerate() {
        for (b, (build, binaries)) in builds.iter().enumerate() {
            let hello = median(samples[b][0].clone());
            let m = median(samples[b][i].clone());
            // A warm refusal's time is how long one anonymous request holds an execution (a
            // lower bound: Lambda's own front end adds to it), so one execution refuses at most
            // 1 / that a second, and a reservation of R fills at R times that.
            let refusal = median(warm[b][i].clone());
            println!(
                "{name:<16} {build:>7} {:>9.1} {:>11.1} {:>9.1} {:>9.2} {:>13.3} {:>13.0}",
                std::fs::metadata(&binaries[i])?.len() as f64 / 1e6,
                ms(m),
                ms(p90(samples[b][i].clone())),
                m.as_secs_f64() / hello.as_secs_f64(),
                ms(refusal),
                1.0 / refusal.as_secs_f64()
            );
        }
    }
    Ok(())
}
