//! The `backfill` function: the migration, import and embedding job of `shared::activities::backfill`,
//! invoked by an EventBridge schedule (hourly: sweep pending points), directly
//! (`{dryRun, force, batchSize, source}`; `source` a path or `s3://bucket/key`), or as a local CLI (`--dry-run`, `--force`,
//! `--from FILE`, `--batch-size N`) that draws a progress bar on a terminal.

use std::io::{IsTerminal, Write as _};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use shared::activities::backfill::{self, Job, Summary};
use shared::activities::indexing::Indexer;
use shared::compose::Config;
use shared::core::clock::{Clock, SystemClock};
use shared::core::records::RecordStore;
use shared::{Error, Result, compose};

/// An embedder call of the job may take this long (retries and `Retry-After` included).
pub const BATCH_TIMEOUT: Duration = Duration::from_secs(300);

pub struct App {
    pub indexer: Indexer,
    /// Where a forced sweep keeps its place between runs.
    pub records: Arc<dyn RecordStore>,
    pub clock: Arc<dyn Clock>,
    /// Embedder calls per minute (`BACKFILL_RATE`).
    pub rate: u32,
    /// Reads `s3://` sources; `None` builds a client from the AWS environment when one is given.
    pub objects: Option<shared::core::aws::s3::Objects>,
}

/// The job's services as the environment configures them.
pub async fn from_env() -> Result<App> {
    let config = Config::from_env()?;
    let records = compose::records(&config).await?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let indexer = compose::indexer(&config, compose::vector_index(&config)?, Arc::clone(&records), Arc::clone(&clock))?
        .embedding_at_least(BATCH_TIMEOUT);
    Ok(App { indexer, records, clock, rate: config.activities.backfill_rate, objects: None })
}

/// One invocation: a schedule event or a direct payload.
/// `left`: the time the invocation has; the job stops [`DEADLINE_MARGIN`] before it (a forced
/// sweep resumes there on the next run).
pub async fn handle(app: &App, event: &Value, left: Option<Duration>) -> Result<Summary> {
    let job = Job::from_event(event)?;
    tracing::info!(?job, "backfill started");
    let until = left.map(|left| tokio::time::Instant::now() + left.saturating_sub(DEADLINE_MARGIN));
    backfill::run(&app.indexer, &job, app.rate, app.objects.as_ref(), &app.place(until), |_| {}).await
}

/// Kept back from the invocation's deadline: one batch (its embedder call) and the summary.
pub const DEADLINE_MARGIN: Duration = Duration::from_secs(60);

impl App {
    fn place(&self, until: Option<tokio::time::Instant>) -> backfill::Place<'_> {
        backfill::Place { records: &*self.records, until, clock: &*self.clock }
    }
}

/// The CLI's job from its arguments.
pub fn job_from_args(args: &[String]) -> Result<Job> {
    let mut job = Job { dry_run: false, force: false, batch_size: backfill::DEFAULT_BATCH, source: None };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--dry-run" => job.dry_run = true,
            "--force" => job.force = true,
            "--from" => job.source = Some(it.next().ok_or_else(|| usage("--from needs a file"))?.clone()),
            "--batch-size" => {
                job.batch_size = it
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|n| (1..=backfill::MAX_BATCH).contains(n))
                    .ok_or_else(|| usage("--batch-size needs a number from 1 to 1000"))?;
            }
            other => return Err(usage(&format!("unknown argument {other:?}"))),
        }
    }
    Ok(job)
}

fn usage(problem: &str) -> Error {
    Error::invalid("usage", format!("{problem}; usage: backfill [--dry-run] [--force] [--from FILE] [--batch-size N]"))
}

/// Runs `job` from a terminal or a script: a progress bar on a terminal, the summary as JSON.
pub async fn cli(app: &App, job: &Job) -> Result<Summary> {
    let bar = std::io::stderr().is_terminal();
    let summary = backfill::run(&app.indexer, job, app.rate, app.objects.as_ref(), &app.place(None), |s| {
        if bar {
            let done = s.processed + s.skipped + s.errors;
            let width = 30;
            let filled = if s.total == 0 { 0 } else { (done * width / s.total.max(done)).min(width) };
            eprint!(
                "\r[{}{}] {done}/{} processed {} skipped {} errors {}",
                "#".repeat(filled),
                ".".repeat(width - filled),
                s.total,
                s.processed,
                s.skipped,
                s.errors
            );
            let _ = std::io::stderr().flush();
        }
    })
    .await?;
    if bar {
        eprintln!();
    }
    Ok(summary)
}
