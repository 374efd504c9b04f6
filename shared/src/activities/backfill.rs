//! The backfill job (seed 004 Requirements 7, 16): one idempotent run that
//!
//! 1. migrates: ensures the collection, its vectors and payload indexes exist with the
//!    embedder's dimension (a dry run reports what it would create);
//! 2. imports activities from a JSON Lines file or S3 object (`s3://bucket/key`) when given
//!    (`source`), in batches;
//! 3. embeds every point still `pending` (every point with `force`), `batchSize` (100) texts
//!    per embedder call, at most `BACKFILL_RATE` calls a minute; 429s and `Retry-After` are
//!    honoured by the embedder's retries.
//!
//! A failed batch is counted and left pending, and the job goes on; running it again finishes
//! what is left. A forced sweep keeps its place in the record store after every page
//! (`BACKFILL#force` / `CURSOR`) and stops before its time is up (`until`, the invocation's
//! deadline less a margin): the next forced run resumes there (`resumed`), until one finishes
//! the collection (`complete`) and clears the place, so any collection size is re-embedded in
//! runs of 15 minutes. Progress (total, processed, skipped, errors) is logged after every batch and
//! reported to `progress` (the CLI draws a bar with it); the summary closes the run.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::activities::activity::Activity;
use crate::activities::index::PAYLOAD_INDEXES;
use crate::activities::indexing::{Embedding, Indexer};
use crate::core::aws::s3::Objects;
use crate::core::error::{Error, Result};
use crate::core::records::{Record, RecordStore};

pub const DEFAULT_BATCH: usize = 100;
pub const MAX_BATCH: usize = 1000;

/// A direct invocation's payload.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct JobBody {
    #[serde(default)]
    dry_run: bool,
    #[serde(default)]
    force: bool,
    batch_size: Option<usize>,
    source: Option<String>,
}

/// What to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub dry_run: bool,
    pub force: bool,
    pub batch_size: usize,
    /// A JSON Lines file (a path, or `s3://bucket/key`) of activities to import first.
    pub source: Option<String>,
}

impl Job {
    /// A direct invocation's payload `{dryRun?, force?, batchSize?, source?}`; an EventBridge
    /// schedule event (or `{}`) is the default sweep.
    pub fn from_event(event: &Value) -> Result<Self> {
        let invalid = |m: &str| Error::invalid("invalid_job", m.to_owned());
        let mut job = Job { dry_run: false, force: false, batch_size: DEFAULT_BATCH, source: None };
        if event.get("detail-type").is_some() {
            return Ok(job);
        }
        if !event.is_object() {
            return Err(invalid("the payload must be a JSON object"));
        }
        let body: JobBody = crate::core::json::typed(event, "invalid_job")?;
        job.dry_run = body.dry_run;
        job.force = body.force;
        if let Some(n) = body.batch_size {
            if !(1..=MAX_BATCH).contains(&n) {
                return Err(invalid("batchSize must be a whole number from 1 to 1000"));
            }
            job.batch_size = n;
        }
        if let Some(source) = body.source {
            if source.is_empty() {
                return Err(invalid("source must be a path"));
            }
            job.source = Some(source);
        }
        Ok(job)
    }
}

/// Counters of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub dry_run: bool,
    /// What the migration created (or, in a dry run, would create).
    pub migration: Vec<String>,
    pub imported: usize,
    /// Points that needed a vector (all of them with `force`).
    pub total: usize,
    pub processed: usize,
    pub skipped: usize,
    pub errors: usize,
    /// A forced sweep went on from where an earlier run stopped.
    pub resumed: bool,
    /// The sweep reached the end (false: it stopped at `until`; run it again to go on).
    pub complete: bool,
}

/// Where a forced sweep keeps its place between runs, and when this run must stop.
pub struct Place<'a> {
    pub records: &'a dyn RecordStore,
    /// Stop (between pages) at this instant; `None` runs to the end.
    pub until: Option<tokio::time::Instant>,
    pub clock: &'a dyn crate::core::clock::Clock,
}

/// How long a forced sweep's place is kept for the next run.
const PLACE_KEPT_SECS: i64 = 7 * 86_400;

impl Place<'_> {
    const PK: &'static str = "BACKFILL#force";
    const SK: &'static str = "CURSOR";

    /// Where the last forced run stopped, if it did not finish.
    async fn read(&self) -> Result<Option<uuid::Uuid>> {
        let now = self.clock.now().timestamp();
        let record = self.records.get(Self::PK, Self::SK, now).await?;
        Ok(record.and_then(|r| r.body["next"].as_str()?.parse().ok()))
    }

    /// Keeps `next` (the first point not yet swept), or, at the end, clears the place.
    async fn keep(&self, next: Option<uuid::Uuid>) -> Result<()> {
        let now = self.clock.now();
        let record = Record {
            pk: Self::PK.into(),
            sk: Self::SK.into(),
            expires_at: Some(if next.is_some() { now.timestamp() + PLACE_KEPT_SECS } else { now.timestamp() }),
            body: serde_json::json!({"next": next.map(|n| n.to_string()), "at": now.to_rfc3339()}),
        };
        self.records.put(&record).await
    }
}

/// The text of `source`: a local file, or an S3 object read through `objects`.
async fn read_source(source: &str, objects: Option<&Objects>) -> Result<String> {
    match source.strip_prefix("s3://") {
        Some(rest) => {
            let (bucket, key) = rest
                .split_once('/')
                .filter(|(b, k)| !b.is_empty() && !k.is_empty())
                .ok_or_else(|| Error::invalid("invalid_source", format!("{source}: expected s3://bucket/key")))?;
            match objects {
                Some(objects) => objects.get(bucket, key).await,
                None => Objects::from_env()?.get(bucket, key).await,
            }
        }
        None => std::fs::read_to_string(source)
            .map_err(|e| Error::invalid("invalid_source", format!("source {source}: {e}"))),
    }
}

/// Runs `job`; `progress` sees the counters after each batch. `objects` reads `s3://`
/// sources (a client from the AWS environment is built when `None` and one is needed).
pub async fn run(
    indexer: &Indexer,
    job: &Job,
    rate_per_minute: u32,
    objects: Option<&Objects>,
    place: &Place<'_>,
    mut progress: impl FnMut(&Summary),
) -> Result<Summary> {
    let mut summary = Summary { dry_run: job.dry_run, complete: true, ..Summary::default() };
    let index = indexer.index();
    let existed = index.exists().await?;
    if !existed {
        summary.migration.push("collection with vectors dense (cosine) and sparse (BM25, idf)".to_owned());
        summary
            .migration
            .extend(PAYLOAD_INDEXES.iter().map(|(field, kind)| format!("payload index {field} ({kind:?})")));
    }
    if !job.dry_run {
        index.ensure().await?;
    }
    let gap = Duration::from_secs_f64(60.0 / f64::from(rate_per_minute.max(1)));
    let mut last_call: Option<tokio::time::Instant> = None;
    let mut pace = || {
        let wait = last_call.map(|t| (t + gap).saturating_duration_since(tokio::time::Instant::now()));
        last_call = Some(tokio::time::Instant::now() + wait.unwrap_or_default());
        wait.unwrap_or_default()
    };

    // Points written by this run are not tried twice in it.
    let mut seen = std::collections::HashSet::new();
    if let Some(path) = &job.source {
        let text = read_source(path, objects).await?;
        let mut activities = Vec::new();
        for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            match serde_json::from_str(line)
                .map_err(|e| e.to_string())
                .and_then(|v| Activity::from_json(v).map_err(|e| e.to_string()))
            {
                Ok(a) => activities.push(a),
                Err(e) => {
                    tracing::warn!(line = n + 1, error = %e, "source line skipped");
                    summary.errors += 1;
                }
            }
        }
        summary.imported = activities.len();
        seen.extend(activities.iter().map(|a| crate::activities::index::point_id(&a.id)));
        if job.dry_run {
            summary.total = activities.len();
            summary.skipped = activities.len();
            progress(&summary);
        } else {
            for batch in activities.chunks(job.batch_size) {
                tokio::time::sleep(pace()).await;
                account(&mut summary, indexer.write(batch, indexer.now(), job.force, "backfill").await, batch.len());
                log(&summary);
                progress(&summary);
            }
        }
    }

    // The sweep: pending points (all with force), page by page. A point that got its vector
    // leaves the pending filter, so a real pending sweep reads from the same place again; a
    // point seen once (a failure stays pending) is not tried twice in one run.
    let pending_only = !job.force;
    let mut offset = None;
    if job.force {
        seen.clear();
        if !job.dry_run {
            offset = place.read().await?;
            summary.resumed = offset.is_some();
        }
    }
    loop {
        if place.until.is_some_and(|until| tokio::time::Instant::now() >= until) {
            tracing::warn!(?offset, "out of time: the next forced run resumes here");
            summary.complete = false;
            break;
        }
        // A dry run on a directory that does not exist yet has nothing to sweep (and creates nothing).
        if !existed && job.dry_run {
            break;
        }
        let (page, next) = index.scan(pending_only, offset, job.batch_size).await?;
        let points: Vec<_> = page.into_iter().filter(|p| seen.insert(p.id) && !p.is_tombstone()).collect();
        if points.is_empty() {
            match next {
                Some(n) => {
                    offset = Some(n);
                    continue;
                }
                None => break,
            }
        }
        summary.total += points.len();
        if job.dry_run {
            summary.skipped += points.len();
        } else {
            tokio::time::sleep(pace()).await;
            account(&mut summary, indexer.embed_stored(&points, "backfill").await, points.len());
        }
        log(&summary);
        progress(&summary);
        if !pending_only || job.dry_run {
            if job.force && !job.dry_run {
                place.keep(next).await?;
            }
            match next {
                Some(n) => offset = Some(n),
                None => break,
            }
        }
    }
    tracing::info!(summary = %serde_json::to_string(&summary).unwrap_or_default(), "backfill finished");
    Ok(summary)
}

fn account(summary: &mut Summary, result: Result<crate::activities::indexing::Report>, size: usize) {
    match result {
        Ok(report) => {
            for i in &report.indexed {
                match i.embedding {
                    Embedding::Embedded => summary.processed += 1,
                    Embedding::Kept | Embedding::Stale => summary.skipped += 1,
                    Embedding::Pending => summary.errors += 1,
                }
            }
            if let Some(reason) = report.pending_reason {
                tracing::warn!(%reason, "batch left pending");
            }
        }
        Err(e) => {
            tracing::error!(error = %e, "batch failed");
            summary.errors += size;
        }
    }
}

fn log(s: &Summary) {
    tracing::info!(
        total = s.total,
        processed = s.processed,
        skipped = s.skipped,
        errors = s.errors,
        "backfill progress"
    );
}
