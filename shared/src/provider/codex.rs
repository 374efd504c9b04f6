//! The Codex CLI provider (seed 001): `CODEX_COMMAND CODEX_ARGS... <prompt>`, the prompt one
//! argv element, never through a shell, so a prompt with `; rm -rf ~` reaches the CLI as text.
//!
//! Each run is logged with its arguments (the prompt shortened), its output captured, and the
//! process killed at `CODEX_TIMEOUT_SECS`. Timeouts and non-zero exits are retried with
//! backoff (5 s, 10 s, 20 s by default); a missing binary is reported at once, not retried.

use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

use crate::retry::{RetryPolicy, Retryable, with_backoff};

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
}

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
    pub timeout: Duration,
    pub retry: RetryPolicy,
}

fn shorten(text: &str, chars: usize) -> String {
    let mut out: String = text.chars().take(chars).collect();
    if text.chars().count() > chars {
        out.push('…');
    }
    out
}

impl CodexCli {
    /// Runs the CLI with retries; its standard output on success.
    pub async fn run(&self, prompt: &str) -> Result<String, CliError> {
        with_backoff(self.retry, "codex", |attempt| self.run_once(prompt, attempt)).await
    }

    /// One run: spawn, capture, kill at the timeout.
    pub async fn run_once(&self, prompt: &str, attempt: u32) -> Result<String, CliError> {
        tracing::info!(command = %self.command, args = ?self.args, prompt = %shorten(prompt, 100), attempt, "running CLI");
        let child = Command::new(&self.command)
            .args(&self.args)
            .arg(prompt)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => CliError::NotFound(self.command.clone()),
                _ => CliError::Spawn { command: self.command.clone(), reason: e.to_string() },
            })?;
        // Dropping the child on timeout kills it (kill_on_drop).
        let output = tokio::time::timeout(self.timeout, child.wait_with_output())
            .await
            .map_err(|_| CliError::Timeout(self.timeout))?
            .map_err(|e| CliError::Spawn { command: self.command.clone(), reason: e.to_string() })?;
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        if output.status.success() {
            tracing::info!(bytes = stdout.len(), "CLI finished");
            Ok(stdout)
        } else {
            let stderr = shorten(String::from_utf8_lossy(&output.stderr).trim(), 500);
            Err(CliError::Failed { code: output.status.code(), stderr })
        }
    }
}
