//! `cargo xtask bench embed`: the bundled embedder (multilingual-e5-small, 4-bit) on this
//! machine: model load from a warm page cache (beside a plain read of the file), one short
//! query on one core (p50/p95), batched passage throughput on 1 and all cores, peak memory, and
//! the cold path a new Lambda container pays (file evicted from the page cache: load + first
//! query).

use std::path::Path;
use std::time::{Duration, Instant};

use e5::E5Model;
use shared::compose::Config;

use crate::Result;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    samples[((samples.len() - 1) as f64 * p).round() as usize]
}

/// `VmHWM` / `VmRSS` of this process, in MB.
fn memory(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// Drops `path` from the page cache (clean pages; no root needed).
fn evict(path: &Path) -> Result {
    use std::os::fd::AsRawFd;
    let file = std::fs::File::open(path)?;
    // SAFETY: a valid descriptor; POSIX_FADV_DONTNEED only drops cached pages.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if rc != 0 {
        return Err(format!("posix_fadvise: {rc}").into());
    }
    Ok(())
}

pub fn run() -> Result {
    crate::ensure_model()?;
    let config = Config::from_env()?;
    let path = config.activities.embedding_model_path.clone();
    println!("== bundled embedder: {} ({} MB)", path.display(), std::fs::metadata(&path)?.len() / 1_000_000);
    println!("peak memory before the model: {:.0} MB", memory("VmHWM:"));

    // Cold: the file out of the page cache, as in a new container (the layer's first read).
    evict(&path)?;
    let started = Instant::now();
    let model = E5Model::load(&path)?;
    let cold_load = started.elapsed();
    let started = Instant::now();
    model.embed(&["周五晚上热闹的地方"], true);
    let cold_query = started.elapsed();
    drop(model);

    // Warm load, beside reading the same bytes.
    let mut reads = Vec::new();
    let mut loads = Vec::new();
    for _ in 0..7 {
        let started = Instant::now();
        std::hint::black_box(std::fs::read(&path)?);
        reads.push(started.elapsed());
        let started = Instant::now();
        std::hint::black_box(E5Model::load(&path)?);
        loads.push(started.elapsed());
    }
    let model = E5Model::load(&path)?;
    let started = Instant::now();
    model.embed(&["周五晚上热闹的地方"], true);
    let warm_first = started.elapsed();
    println!(
        "load (warm page cache): median {:.1} ms, min {:.1} ms (reading the file: median {:.1} ms)",
        ms(percentile(&mut loads, 0.5)),
        ms(percentile(&mut loads, 0.0)),
        ms(percentile(&mut reads, 0.5))
    );
    println!(
        "cold (file evicted from the page cache): load {:.1} ms + first query {:.1} ms = {:.1} ms; warm first query {:.1} ms",
        ms(cold_load),
        ms(cold_query),
        ms(cold_load + cold_query),
        ms(warm_first)
    );

    // Short queries, one core; then the dev set's activities as passages.
    let (activities, queries) = crate::quality::load(&crate::root().join("benches/intent"))?;
    let texts: Vec<&str> = queries.iter().map(|q| q.query.as_str()).collect();
    let mut latencies = Vec::new();
    let mut tokens = 0;
    for round in 0..5 {
        for text in &texts {
            let started = Instant::now();
            std::hint::black_box(model.embed(&[text], true));
            if round > 0 {
                latencies.push(started.elapsed());
                tokens += model.token_ids(text, true).len();
            }
        }
    }
    let n = latencies.len();
    println!(
        "short query, one core: p50 {:.2} ms, p95 {:.2} ms over {n} queries (mean {:.1} tokens)",
        ms(percentile(&mut latencies, 0.5)),
        ms(percentile(&mut latencies, 0.95)),
        tokens as f64 / n as f64
    );

    // Passages as the indexer embeds them, batched.
    let passages: Vec<String> = activities
        .iter()
        .map(|a| Ok(shared::activities::activity::Activity::from_json(a.clone())?.dense_text()))
        .collect::<Result<_>>()?;
    let refs: Vec<&str> = passages.iter().map(String::as_str).collect();
    let tokens: usize = refs.iter().map(|p| model.token_ids(p, false).len()).sum();
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    for threads in [1, cores] {
        let started = Instant::now();
        std::hint::black_box(e5::embed_parallel(&model, &refs, false, threads));
        let took = started.elapsed().as_secs_f64();
        println!(
            "passages, {threads} thread(s): {:.1} passages/s, {:.0} tokens/s ({} passages, mean {:.0} tokens, {:.2} s)",
            refs.len() as f64 / took,
            tokens as f64 / took,
            refs.len(),
            tokens as f64 / refs.len() as f64,
            took
        );
    }
    println!("memory: peak (VmHWM) {:.0} MB, resident now (VmRSS) {:.0} MB", memory("VmHWM:"), memory("VmRSS:"));
    Ok(())
}
