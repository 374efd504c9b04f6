//! The Codex CLI provider (seed 001): `CODEX_COMMAND CODEX_ARGS... -- <prompt>`, the prompt one
//! argv element after the separator (`CODEX_PROMPT_SEPARATOR`, `--` by default, `none` for
//! none), never through a shell: a prompt with `; rm -rf ~` reaches the CLI as text, and one
//! of `--help` is not read as a flag.
//!
//! Each run is logged with the number of its arguments (their values may carry secrets) and
//! the prompt shortened; at most [`MAX_OUTPUT`] bytes of output are read; at
//! `CODEX_TIMEOUT_SECS` (or past the output cap) the CLI's whole process group is killed, so
//! no helper it started lives on. Timeouts and non-zero exits are retried with backoff (5 s,
//! 10 s, 20 s by default); a missing binary or oversized output is reported at once. The whole
//! run, attempts and waits, ends by its bound (`RESEARCH_NODE_TIMEOUT_SECS`, seed 001's 10
//! minutes): an attempt still running then is killed with its process group.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

use crate::core::retry::{OutOfTime, RetryPolicy, Retryable, within};

/// Why a CLI run failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CliError {
    #[error("CLI {0:?} not found: install it or set CODEX_COMMAND to its path")]
    NotFound(String),
    #[error("CLI {command:?} could not be started: {reason}")]
    Spawn { command: String, reason: String },
    #[error("CLI timed out after {0:?} and was killed")]
    Timeout(Duration),
    #[error("CLI exited with status {code:?}: {stderr}")]
    Failed { code: Option<i32>, stderr: String },
    #[error("CLI wrote more than {0} bytes and was killed")]
    TooMuchOutput(usize),
    #[error("the research did not finish within its bound (attempts and waits)")]
    OutOfTime,
}

impl From<OutOfTime> for CliError {
    fn from(_: OutOfTime) -> Self {
        Self::OutOfTime
    }
}

/// Most bytes of standard output read from one run (standard error: 64 KiB).
pub const MAX_OUTPUT: usize = 8 * 1024 * 1024;

impl Retryable for CliError {
    fn retry_after(&self) -> Option<Option<Duration>> {
        matches!(self, Self::Timeout(_) | Self::Failed { .. }).then_some(None)
    }
}

/// A configured CLI.
#[derive(Debug, Clone)]
pub struct CodexCli {
    pub command: String,
    pub args: Vec<String>,
    /// Between the arguments and the prompt (`--`); `None` for a CLI that does not take one.
    pub separator: Option<String>,
    pub timeout: Duration,
    pub retry: RetryPolicy,
    /// Of the whole run: every attempt and every wait between them.
    pub bound: Duration,
}

fn shorten(text: &str, chars: usize) -> String {
    let mut out: String = text.chars().take(chars).collect();
    if text.chars().count() > chars {
        out.push('…');
    }
    out
}

impl CodexCli {
    /// Runs the CLI with retries, all within [`CodexCli::bound`]; its standard output on
    /// success.
    pub async fn run(&self, prompt: &str) -> Result<String, CliError> {
        let deadline = tokio::time::Instant::now() + self.bound;
        within(self.retry, deadline, "codex", |attempt| self.run_once(prompt, attempt)).await
    }

    /// One run: spawn in its own process group, capture, kill the group at the timeout.
    pub async fn run_once(&self, prompt: &str, attempt: u32) -> Result<String, CliError> {
        tracing::info!(command = %self.command, args = self.args.len(), prompt = %shorten(prompt, 100), attempt, "running CLI");
        let mut command = Command::new(&self.command);
        command.args(&self.args).args(&self.separator).arg(prompt);
        #[cfg(unix)]
        command.process_group(0);
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => CliError::NotFound(self.command.clone()),
                _ => CliError::Spawn { command: self.command.clone(), reason: e.to_string() },
            })?;
        let group = child.id();
        // Dropped before the run is over (the bound passed): the group goes with it.
        let mut guard = GroupGuard(group);
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        let run = async {
            let stderr = tokio::spawn(capped(stderr, 64 * 1024));
            let (stdout, over) = capped(stdout, MAX_OUTPUT).await;
            if over {
                return Err(CliError::TooMuchOutput(MAX_OUTPUT));
            }
            let status = child
                .wait()
                .await
                .map_err(|e| CliError::Spawn { command: self.command.clone(), reason: e.to_string() })?;
            let stderr = stderr.await.map(|(bytes, _)| bytes).unwrap_or_default();
            Ok((stdout, stderr, status))
        };
        let outcome = match tokio::time::timeout(self.timeout, run).await {
            Ok(outcome) => outcome,
            Err(_) => Err(CliError::Timeout(self.timeout)),
        };
        let (stdout, stderr, status) = outcome?;
        guard.0 = None;
        let stdout = String::from_utf8_lossy(&stdout).into_owned();
        if status.success() {
            tracing::info!(bytes = stdout.len(), "CLI finished");
            Ok(stdout)
        } else {
            let stderr = shorten(String::from_utf8_lossy(&stderr).trim(), 500);
            Err(CliError::Failed { code: status.code(), stderr })
        }
    }
}

/// At most `cap` bytes of `pipe` (to its end), and whether there was more.
async fn capped(pipe: Option<impl AsyncRead + Unpin>, cap: usize) -> (Vec<u8>, bool) {
    let mut bytes = Vec::new();
    if let Some(pipe) = pipe {
        // A read error ends the output; what was read is kept.
        let _ = pipe.take(cap as u64 + 1).read_to_end(&mut bytes).await;
    }
    let over = bytes.len() > cap;
    bytes.truncate(cap);
    (bytes, over)
}

/// Kills its process group when dropped, unless disarmed (`None`): a run cut short (its
/// timeout, too much output, or the whole run's bound dropping it) leaves no helper behind.
struct GroupGuard(Option<u32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        kill_group(self.0);
    }
}

/// Kills the process group the CLI leads (its helpers too); the CLI itself is also killed when
/// its handle drops.
fn kill_group(group: Option<u32>) {
    #[cfg(unix)]
    if let Some(pid) = group.and_then(|g| i32::try_from(g).ok()) {
        // SAFETY: kill(2) with a negative pid signals that process group; no memory is touched.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    #[cfg(not(unix))]
    let _ = group;
}
