//! The agent loop: a chat model, its tools and a structured answer, as pydantic-ai runs it
//! ([`run`]), or a free-text reply to a conversation ([`converse`]).
//!
//! Each turn sends the conversation; tool calls are executed and their results appended; a
//! final answer must be JSON that deserialises into the output type and passes its check,
//! or the model is told what was wrong and asked again (`output_retries`). A run makes at
//! most `request_limit` model requests (seed 003's `UsageLimits(request_limit=8)`) and runs at
//! most [`MAX_TOOL_CALLS_PER_REPLY`] tool calls of each reply and `tool_limit` in all, retries transient upstream
//! failures, holds every request's worst case against the agent's budget and accounts for it
//! in the ledger.

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::core::error::Error;
use crate::core::json::parse_json_object;
use crate::core::retry::Retryable;
use crate::core::retry::{RetryPolicy, with_backoff, within};
use crate::core::upstream::{ProviderError, Usage};
use crate::costs::ledger::{CallKind, Charge, Ledger, Outcome};
use crate::llm::{ChatModel, ChatRequest, Message, TextSink, ToolSpec};

/// Tool calls of one reply that are run; the model is told the rest were skipped.
pub const MAX_TOOL_CALLS_PER_REPLY: usize = 3;

/// Executes the tools an agent offers.
#[async_trait]
pub trait Tools: Send + Sync {
    /// The tool definitions sent to the model.
    fn specs(&self) -> Vec<ToolSpec>;
    /// Runs tool `name` with `arguments`; the text handed back to the model.
    async fn call(&self, name: &str, arguments: Value) -> String;
}

/// No tools.
pub struct NoTools;

#[async_trait]
impl Tools for NoTools {
    fn specs(&self) -> Vec<ToolSpec> {
        Vec::new()
    }

    async fn call(&self, name: &str, _: Value) -> String {
        format!("unknown tool {name}")
    }
}

/// What an agent is.
pub struct AgentSpec<'a> {
    /// The agent's name in cost records (`milestone`, `detail`, `assistant`).
    pub name: &'a str,
    pub model: &'a str,
    pub instructions: &'a str,
    /// Name and JSON schema of a structured answer ([`run`]); `None`: free text ([`converse`]).
    pub output: Option<(&'static str, Value)>,
    pub request_limit: u32,
    /// Tool calls the whole run may make; the model is told the rest were skipped.
    pub tool_limit: u32,
    pub output_retries: u32,
    /// When the run must end: no model request runs past it (one cut short is recorded as
    /// failed). `None`: each request is bounded by the model client's own timeout only.
    pub deadline: Option<tokio::time::Instant>,
}

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("model request failed: {0}")]
    Model(#[from] ProviderError),
    #[error("request limit of {0} reached before a valid answer")]
    RequestLimit(u32),
    #[error("answer did not match its schema after retries: {0}")]
    InvalidOutput(String),
    /// The agent's daily budget is spent: no request was made.
    #[error("{0}")]
    Budget(Error),
}

impl AgentError {
    /// What a caller is answered when a run for it failed (`request_id` in the message). What
    /// a user's own words can cause is not counted against the version that served it
    /// (`Answered5xx` would roll back a good deploy on a stranger's say): a refused request
    /// (the provider's 400/413/422, or 403: too long, filtered) is 400 `model_refused`, and a model
    /// down, slow or not answering in form is 503 `model_unavailable`, a dependency's answer
    /// with its own metric (`ModelFailure`, `ModelFailuresAlarm`). A key or plan the provider
    /// refuses, or an answer this version cannot read, stays the version's own (503).
    pub fn answer(self, request_id: &str) -> Error {
        if let Self::Budget(e) = self {
            return e;
        }
        match &self {
            // A 403 is OpenRouter's answer to input its moderation flagged (a key it refuses is
            // a 401, the version's own).
            Self::Model(
                ProviderError::Refused { status: status @ (400 | 413 | 422), .. }
                | ProviderError::Unauthorized { status: status @ 403 },
            ) => {
                // The provider's own words stay in the log: they may quote the conversation.
                tracing::warn!(request_id, error = %self, "the model's provider refused a conversation");
                crate::core::metrics::count("ModelFailure", &[], 1.0);
                Error::Invalid {
                    code: "model_refused",
                    message: format!(
                        "the model's provider refused this conversation (HTTP {status}): it may be too long, \
                         or its content was filtered (request {request_id})"
                    ),
                }
            }
            Self::Model(
                ProviderError::Timeout(_)
                | ProviderError::OutOfTime
                | ProviderError::Network(_)
                | ProviderError::RateLimited { .. }
                | ProviderError::Unavailable { .. }
                | ProviderError::RunFailed { .. },
            )
            | Self::RequestLimit(_)
            | Self::InvalidOutput(_) => {
                tracing::error!(request_id, error = %self, "the model failed");
                crate::core::metrics::count("ModelFailure", &[], 1.0);
                Error::Unavailable {
                    code: "model_unavailable",
                    message: format!(
                        "the model did not answer in time or in form; please retry (request {request_id})"
                    ),
                    retry_after_secs: 5,
                }
            }
            _ => {
                tracing::error!(request_id, error = %self, "the model failed");
                Error::Upstream(format!("the model is unavailable; please retry (request {request_id})"))
            }
        }
    }
}

/// One run: the model, its tools, and what the run has used so far.
struct Loop<'a> {
    llm: &'a dyn ChatModel,
    ledger: &'a Ledger,
    retry: RetryPolicy,
    spec: &'a AgentSpec<'a>,
    tools: &'a dyn Tools,
    request_id: &'a str,
    /// Where the reply's text goes as it is written ([`converse`] for a streaming client).
    text: Option<TextSink<'a>>,
    requests: u32,
    tool_calls: u32,
}

impl Loop<'_> {
    /// Sends `request` until the model answers without tool calls, running the tools it asks
    /// for in between; the answer's text.
    async fn answer(&mut self, request: &mut ChatRequest) -> Result<String, AgentError> {
        let spec = self.spec;
        loop {
            if self.requests >= spec.request_limit {
                return Err(AgentError::RequestLimit(spec.request_limit));
            }
            self.requests += 1;
            if self.requests == spec.request_limit {
                // The last request it may make: no tools, so the model answers.
                request.tools.clear();
            }
            let (llm, ledger) = (self.llm, self.ledger);
            let hold = ledger
                .hold(spec.name, llm.provider(), spec.model, &request.ceiling())
                .await
                .map_err(AgentError::Budget)?;
            let charge = |usage, outcome, upstream_id| Charge {
                request_id: self.request_id,
                agent: spec.name,
                kind: CallKind::Llm,
                provider: llm.provider(),
                model: spec.model,
                usage,
                outcome,
                saved_usd: 0.0,
                upstream_id,
            };
            let none = Usage::default();
            let failed = &charge(&none, Outcome::Failed, None);
            let in_flight = ledger.in_flight(failed);
            let (sent, text): (&ChatRequest, _) = (request, self.text);
            // Whether an attempt is waiting on the model (not recording its own failure).
            let working = &std::sync::atomic::AtomicBool::new(false);
            let attempt = |_| async move {
                working.store(true, std::sync::atomic::Ordering::Relaxed);
                let answer = match text {
                    None => llm.chat(sent).await,
                    Some(text) => {
                        // Once text reached the client, a broken stream is not retried: it would repeat.
                        let told = std::sync::atomic::AtomicBool::new(false);
                        let tell = |piece: &str| {
                            told.store(true, std::sync::atomic::Ordering::Relaxed);
                            text(piece)
                        };
                        llm.chat_streaming(sent, &tell).await.map_err(|e| {
                            match told.load(std::sync::atomic::Ordering::Relaxed) && e.retry_after().is_some() {
                                true => ProviderError::Interrupted(e.to_string()),
                                false => e,
                            }
                        })
                    }
                };
                working.store(false, std::sync::atomic::Ordering::Relaxed);
                // An attempt cut short while the model was working may be billed, whether or not
                // a retry then succeeds: each one is recorded (an attempt dropped at the deadline
                // is recorded below, as the last).
                if let Err(e) = &answer
                    && e.maybe_billed()
                {
                    ledger.charge(failed).await;
                }
                answer
            };
            let reply = match spec.deadline {
                Some(at) => within(self.retry, at, "llm", attempt).await,
                None => with_backoff(self.retry, "llm", attempt).await,
            };
            in_flight.accounted();
            let reply = match reply {
                Ok(reply) => reply,
                Err(e) => {
                    // Dropped at the deadline while the model was working: it may be billed, so it
                    // is recorded (an attempt that failed by itself recorded its own).
                    let cost = match e {
                        ProviderError::OutOfTime if working.load(std::sync::atomic::Ordering::Relaxed) => {
                            ledger.charge(failed).await
                        }
                        _ => ledger.bill(failed),
                    };
                    ledger.settle(hold, &cost, e.may_have_cost()).await;
                    return Err(e.into());
                }
            };
            let outcome = if llm.is_mock() { Outcome::Mock } else { Outcome::Live };
            let cost = ledger.charge(&charge(&reply.usage, outcome, reply.upstream_id.clone())).await;
            ledger.settle(hold, &cost, false).await;
            if reply.stopped {
                tracing::info!(agent = spec.name, request_id = self.request_id, "the client left: reply stopped");
                return Ok(reply.content.unwrap_or_default());
            }
            if reply.tool_calls.is_empty() {
                return Ok(reply.content.unwrap_or_default());
            }
            request
                .messages
                .push(Message::Assistant { content: reply.content.clone(), tool_calls: reply.tool_calls.clone() });
            for (i, call) in reply.tool_calls.iter().enumerate() {
                let content = if i < MAX_TOOL_CALLS_PER_REPLY && self.tool_calls < spec.tool_limit {
                    self.tool_calls += 1;
                    let arguments = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
                    tracing::info!(agent = spec.name, tool = %call.name, "tool call");
                    self.tools.call(&call.name, arguments).await
                } else {
                    tracing::warn!(agent = spec.name, tool = %call.name, "tool call over its cap: skipped");
                    format!(
                        "skipped: at most {MAX_TOOL_CALLS_PER_REPLY} tool calls run per reply and {} per run; \
                         answer with what you have",
                        spec.tool_limit
                    )
                };
                request.messages.push(Message::Tool { call_id: call.id.clone(), content });
            }
        }
    }
}

/// Runs `spec` on `prompt` and returns its validated answer.
#[allow(clippy::too_many_arguments)]
pub async fn run<T: DeserializeOwned>(
    llm: &dyn ChatModel,
    ledger: &Ledger,
    retry: RetryPolicy,
    spec: &AgentSpec<'_>,
    prompt: String,
    tools: &dyn Tools,
    check: impl Fn(&T) -> Result<(), String>,
    request_id: &str,
) -> Result<T, AgentError> {
    let mut request = ChatRequest {
        model: spec.model.to_owned(),
        messages: vec![Message::System(spec.instructions.to_owned()), Message::User(prompt)],
        tools: tools.specs(),
        output_schema: spec.output.clone(),
    };
    let mut run = Loop { llm, ledger, retry, spec, tools, request_id, text: None, requests: 0, tool_calls: 0 };
    let mut invalid = 0;
    loop {
        let content = run.answer(&mut request).await?;
        let problem = match parse_json_object(&content).map(serde_json::from_value::<T>) {
            Some(Ok(answer)) => match check(&answer) {
                Ok(()) => return Ok(answer),
                Err(e) => e,
            },
            Some(Err(e)) => e.to_string(),
            None => "the answer is not a JSON object".to_owned(),
        };
        invalid += 1;
        tracing::warn!(agent = spec.name, attempt = invalid, %problem, "answer failed validation");
        if invalid > spec.output_retries {
            return Err(AgentError::InvalidOutput(problem));
        }
        request.messages.push(Message::Assistant { content: Some(content), tool_calls: Vec::new() });
        request.messages.push(Message::User(format!(
            "Your answer did not match the required JSON schema: {problem}. Answer again with only the JSON object."
        )));
    }
}

/// Continues a conversation: `spec`'s instructions, then `history` (earlier turns, oldest
/// first, ending with the user's new message); the model's free-text answer, after the tool
/// calls it asked for (the same caps, budget, deadline and accounting as [`run`]). With `text`,
/// the model streams and its text goes there as it is written; when `text` says nobody
/// listens, the model is stopped and what it wrote (and cost) is the answer.
#[allow(clippy::too_many_arguments)]
pub async fn converse(
    llm: &dyn ChatModel,
    ledger: &Ledger,
    retry: RetryPolicy,
    spec: &AgentSpec<'_>,
    history: Vec<Message>,
    tools: &dyn Tools,
    request_id: &str,
    text: Option<TextSink<'_>>,
) -> Result<String, AgentError> {
    let mut messages = vec![Message::System(spec.instructions.to_owned())];
    messages.extend(history);
    let mut request = ChatRequest {
        model: spec.model.to_owned(),
        messages,
        tools: tools.specs(),
        output_schema: spec.output.clone(),
    };
    Loop { llm, ledger, retry, spec, tools, request_id, text, requests: 0, tool_calls: 0 }.answer(&mut request).await
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::core::clock::SystemClock;
    use crate::core::records::LocalRecords;
    use crate::costs::pricing::PriceTable;
    use crate::llm::{ChatReply, ToolCall};

    /// Asks for ten searches in each of its first three replies, then answers.
    struct Greedy(AtomicUsize);

    #[async_trait]
    impl ChatModel for Greedy {
        fn provider(&self) -> &str {
            "test"
        }

        async fn chat(&self, _: &ChatRequest) -> Result<ChatReply, ProviderError> {
            if self.0.fetch_add(1, Ordering::SeqCst) >= 3 {
                return Ok(ChatReply { content: Some(r#"{"ok": true}"#.into()), ..ChatReply::default() });
            }
            let calls = (0..10)
                .map(|i| ToolCall { id: format!("c{i}"), name: "search".into(), arguments: r#"{"query": "x"}"#.into() })
                .collect();
            Ok(ChatReply { tool_calls: calls, ..ChatReply::default() })
        }
    }

    struct Counted(AtomicUsize);

    #[async_trait]
    impl Tools for Counted {
        fn specs(&self) -> Vec<ToolSpec> {
            Vec::new()
        }

        async fn call(&self, _: &str, _: Value) -> String {
            self.0.fetch_add(1, Ordering::SeqCst);
            "results".into()
        }
    }

    /// A ledger over a fresh local store in its own directory (removed by the test).
    fn ledger() -> (std::path::PathBuf, Ledger) {
        let dir = std::env::temp_dir().join(format!("agent-{}", uuid::Uuid::new_v4()));
        let records = Arc::new(LocalRecords::open(&dir).unwrap());
        let ledger = Ledger::new(
            records,
            Arc::new(PriceTable::default()),
            Arc::new(SystemClock),
            crate::core::retry::STORE_RETRY,
        );
        (dir, ledger)
    }

    /// A `detail` agent answering a JSON object in at most 8 requests and `tool_limit` tool calls.
    fn spec(tool_limit: u32) -> AgentSpec<'static> {
        AgentSpec {
            name: "detail",
            model: "m",
            instructions: "",
            output: Some(("answer", serde_json::json!({"type": "object"}))),
            request_limit: 8,
            tool_limit,
            output_retries: 0,
            deadline: None,
        }
    }

    /// Times out (while working: maybe billed) on its first `failures` requests, then answers.
    struct Flaky {
        failures: usize,
        asked: AtomicUsize,
    }

    #[async_trait]
    impl ChatModel for Flaky {
        fn provider(&self) -> &str {
            "test"
        }

        async fn chat(&self, _: &ChatRequest) -> Result<ChatReply, ProviderError> {
            if self.asked.fetch_add(1, Ordering::SeqCst) < self.failures {
                return Err(ProviderError::Timeout(std::time::Duration::from_millis(5)));
            }
            Ok(ChatReply { content: Some(r#"{"ok": true}"#.into()), ..ChatReply::default() })
        }
    }

    // Issue 41: an attempt that timed out while the model was working may be billed even when a
    // retry then succeeds, so each one is recorded (failed), beside the answer's own record.
    #[tokio::test]
    async fn every_maybe_billed_attempt_is_recorded_even_when_a_retry_succeeds() {
        let (dir, ledger) = ledger();
        let spec = spec(0);
        let llm = Flaky { failures: 2, asked: AtomicUsize::new(0) };
        let retry = RetryPolicy::new(std::time::Duration::from_millis(1));
        let started = chrono::Utc::now() - chrono::Duration::seconds(1);
        let answer: Value =
            run(&llm, &ledger, retry, &spec, "p".into(), &Counted(AtomicUsize::new(0)), |_| Ok(()), "r-1")
                .await
                .unwrap();
        assert_eq!(answer["ok"], true);
        assert_eq!(llm.asked.load(Ordering::SeqCst), 3, "two timeouts, then the answer");
        let costs = ledger.between(started, chrono::Utc::now() + chrono::Duration::seconds(1)).await.unwrap();
        let mut outcomes: Vec<bool> = costs.iter().filter(|c| c.request_id == "r-1").map(|c| c.failed).collect();
        outcomes.sort();
        assert_eq!(outcomes, [false, true, true], "two failed attempts and the answer: {costs:?}");
        let _ = std::fs::remove_dir_all(dir);
    }

    // Given a model that asks for ten tool calls a reply, then a run makes at most its
    // tool_limit of them (and at most three of one reply), and still gets its answer.
    #[tokio::test]
    async fn tool_calls_are_capped_per_reply_and_per_run() {
        let (dir, ledger) = ledger();
        let retry = RetryPolicy::new(std::time::Duration::from_millis(1));
        for (tool_limit, expected) in [(4, 4), (100, 9)] {
            let spec = spec(tool_limit);
            let (llm, tools) = (Greedy(AtomicUsize::new(0)), Counted(AtomicUsize::new(0)));
            let answer: Value = run(&llm, &ledger, retry, &spec, "p".into(), &tools, |_| Ok(()), "r").await.unwrap();
            assert_eq!(answer["ok"], true);
            assert_eq!(tools.0.load(Ordering::SeqCst), expected, "tool_limit {tool_limit}");
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}
