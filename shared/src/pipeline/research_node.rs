//! The research node of a content pipeline (seed 001): a research prompt in, `ResearchData`
//! out, with topics the pipeline covered recently excluded.
//!
//! The prompt is the caller's `prompts.researchPrompt`, or is built from `strategy`
//! (`contentTheme`, `keywords`) or the config defaults with the seed's template (a fixed
//! prefix and suffix that cannot be overridden, custom requirements and instructions, a topic
//! count). Results come from the search provider chain or the Codex CLI (`RESEARCH_PROVIDER`);
//! CLI output is parsed as JSON, then as text, then replaced by placeholders. Titles the same
//! as or similar to a recent topic are dropped, and the rest join the topic history.

use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;

use crate::core::clock::Clock;
use crate::core::error::Error;
use crate::core::records::RecordStore;
use crate::pipeline::codex::{CliError, CodexCli};
use crate::pipeline::output::{ParsedAs, ResearchData, parse_output};
use crate::pipeline::prompt::{NodeRequest, exclusion_block};
use crate::pipeline::settings::ResearchProvider;
use crate::pipeline::topics;
use crate::web::citations::{self, Source};
use crate::web::query::{Kind, Query};
use crate::web::search::SearchService;
use crate::web::sources;

/// Execution facts of one run (seed 001's `metadata`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    pub execution_time: u64,
    pub timestamp: String,
    pub unique_topic_count: usize,
    pub duplicates_filtered: usize,
}

/// The node's answer: `ResearchData` plus where it came from and what was filtered.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeOutput {
    pub request_id: String,
    #[serde(flatten)]
    pub data: ResearchData,
    pub metadata: Metadata,
    /// `search` provider name, `mock`, or `codex`.
    pub provider: String,
    pub mock: bool,
    pub parsed_as: ParsedAs,
    pub warnings: Vec<String>,
    /// Whether the results' sources are stored under the request id (`GET /sources/{id}`);
    /// false only when the store failed after retries (they are logged for replay).
    pub sources_stored: bool,
}

/// The research node with its provider.
pub struct ResearchNode {
    search: Arc<SearchService>,
    codex: CodexCli,
    provider: ResearchProvider,
    records: Arc<dyn RecordStore>,
    clock: Arc<dyn Clock>,
}

impl ResearchNode {
    /// The node asking `provider` (the `search` chain or the `codex` CLI); topic history in
    /// `records`.
    pub fn new(
        search: Arc<SearchService>,
        codex: CodexCli,
        provider: ResearchProvider,
        records: Arc<dyn RecordStore>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self { search, codex, provider, records, clock }
    }

    /// Runs the node for `owner` (the signed caller, whose pipelines' topic history it reads
    /// and writes). A CLI that is missing or keeps failing stops the pipeline with an error.
    /// Logs seed 001's lines (start, prompt, topics loaded and saved, completed or failed),
    /// each with the request id.
    pub async fn run(&self, req: &NodeRequest, owner: &str, request_id: &str) -> Result<NodeOutput, Error> {
        tracing::info!(request_id, "Starting Research Node");
        let result = self.research(req, owner, request_id).await;
        if let Ok(output) = &result {
            tracing::info!(request_id, "Research Node completed: {} unique results found", output.data.results.len());
        }
        result.map_err(|e| {
            // The detail (the CLI's path, its error, its stderr) stays in this line.
            let detail = e.to_string();
            let e = Error::from(e);
            tracing::error!(request_id, code = e.code(), "Research Node failed: {detail}");
            e
        })
    }

    async fn research(
        &self,
        req: &NodeRequest,
        owner: &str,
        request_id: &str,
    ) -> std::result::Result<NodeOutput, NodeError> {
        let started = Instant::now();
        let now = self.clock.now();
        let c = &req.config;
        let previous = if c.enable_duplicate_check {
            match topics::recent(&*self.records, owner, &req.pipeline_id, c.duplicate_check_days, now).await {
                Ok(recent) => {
                    let days = c.duplicate_check_days;
                    tracing::info!(request_id, "Loaded {} topics from the last {days} days", recent.len());
                    recent
                }
                Err(e) => {
                    tracing::warn!(request_id, error = %e, "Failed to load topic history");
                    Vec::new()
                }
            }
        } else {
            Vec::new()
        };
        if req.research_prompt.is_some() {
            tracing::info!(request_id, "Using the research prompt of the request (prompts.researchPrompt)");
        } else {
            tracing::warn!(request_id, "No research prompt given, generating default research prompt");
        }
        let mut prompt = req.prompt();
        if !previous.is_empty() {
            prompt.push_str(&exclusion_block(&previous, c.duplicate_check_days));
        }
        tracing::debug!(request_id, "Research prompt: {}...", prompt.chars().take(100).collect::<String>());
        let query_label = if req.research_prompt.is_some() {
            prompt.lines().next().unwrap_or_default().to_owned()
        } else {
            req.theme.clone()
        };
        // `None`: the sources are stored with the answer below; `Some`: the search stored them.
        let (mut data, parsed_as, provider, mock, searched) = match self.provider {
            ResearchProvider::Codex => {
                let output = self.codex.run(&prompt).await.map_err(NodeError::Cli)?;
                let (data, how) = parse_output(&output, &query_label);
                (data, how, "codex".to_owned(), false, None)
            }
            ResearchProvider::Search => {
                let query = Query::plain(Kind::Research { topic_count: c.topic_count }, prompt, "research");
                let answer = self.search.run(&query, request_id, None).await.map_err(NodeError::Budget)?;
                let (data, how) = parse_output(&Value::Object(answer.data).to_string(), &query_label);
                (data, how, answer.provider, answer.mock, Some(answer.sources_stored))
            }
        };
        // Sources are upstream URLs: only valid public http(s) ones are passed on.
        for r in &mut data.results {
            r.source = r.source.take().and_then(|s| crate::web::citations::normalise(&s).ok());
        }
        let total = data.results.len();
        data.results.retain(|r| !topics::is_duplicate(&r.title, &previous));
        let duplicates = total - data.results.len();
        if duplicates > 0 {
            tracing::info!(request_id, "Filtered out {duplicates} duplicate topics");
        }
        if data.results.len() < c.topic_count as usize {
            tracing::warn!(request_id, "Only {} unique topics found (expected {})", data.results.len(), c.topic_count);
        }
        let unique: Vec<String> = data.results.iter().map(|r| r.title.clone()).collect();
        // Placeholders and mock data are not topics the pipeline covered.
        let record = parsed_as != ParsedAs::Placeholder && !mock && !unique.is_empty();
        if record {
            match topics::save(&*self.records, owner, &req.pipeline_id, request_id, &unique, c.max_history_days, now)
                .await
            {
                Ok(()) => tracing::info!(request_id, "Saved {} topics to history", unique.len()),
                Err(e) => tracing::error!(request_id, error = %e, "Failed to save topic history"),
            }
        }
        let sources_stored = match searched {
            Some(stored) => stored,
            None => {
                let found: Vec<Source> = data
                    .results
                    .iter()
                    .filter_map(|r| {
                        let url = citations::normalise(r.source.as_deref()?).ok()?;
                        Some(Source {
                            url,
                            title: Some(r.title.clone()),
                            accessed_at: now,
                            snippet: citations::snippet(&r.content),
                        })
                    })
                    .collect();
                sources::keep(&*self.records, request_id, &found, now).await
            }
        };
        Ok(NodeOutput {
            request_id: request_id.to_owned(),
            sources_stored,
            data,
            metadata: Metadata {
                execution_time: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                timestamp: crate::core::time::format(&now),
                unique_topic_count: unique.len(),
                duplicates_filtered: duplicates,
            },
            provider,
            mock,
            parsed_as,
            warnings: req.warnings.clone(),
        })
    }
}

/// Why the node stopped the pipeline.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error(transparent)]
    Cli(CliError),
    /// The research agent's daily budget is spent.
    #[error(transparent)]
    Budget(crate::core::error::Error),
}

/// The answer to a stop: a missing CLI is our misconfiguration (500); a CLI that kept failing is
/// an upstream failure (502), one out of time 504. The message says why without the CLI's path,
/// its OS error or its output (those stay in the log line of [`ResearchNode::run`]).
impl From<NodeError> for Error {
    fn from(e: NodeError) -> Self {
        let (status, code, message) = match e {
            NodeError::Budget(e) => return e,
            NodeError::Cli(CliError::NotFound(_) | CliError::Spawn { .. }) => {
                (500, "cli_not_found", "the research CLI is not available; its operator's log says why".to_owned())
            }
            NodeError::Cli(CliError::Failed { .. }) => {
                (502, "cli_failed", "the research CLI failed after its retries".to_owned())
            }
            NodeError::Cli(e @ CliError::OutOfTime) => (504, "research_timeout", e.to_string()),
            NodeError::Cli(e @ (CliError::Timeout(_) | CliError::TooMuchOutput(_))) => {
                (502, "cli_failed", e.to_string())
            }
        };
        Error::Tool { status, code, message }
    }
}
