//! The agent loop: a chat model, its tools and a structured answer, as pydantic-ai runs it.
//!
//! Each turn sends the conversation; tool calls are executed and their results appended; a
//! final answer must be JSON that deserialises into the output type and passes its check,
//! or the model is told what was wrong and asked again (`output_retries`). A run makes at
//! most `request_limit` model requests (seed 003's `UsageLimits(request_limit=8)`), retries
//! transient upstream failures, and accounts for every request in the ledger.

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::core::json::parse_json_object;
use crate::core::retry::{RetryPolicy, with_backoff, within};
use crate::core::upstream::{ProviderError, Usage};
use crate::costs::ledger::{CallKind, Charge, Ledger, Outcome};
use crate::llm::{ChatModel, ChatRequest, Message, ToolSpec};

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
    /// The agent's name in cost records (`milestone`, `detail`).
    pub name: &'a str,
    pub model: &'a str,
    pub instructions: &'a str,
    /// Name and JSON schema of the answer.
    pub output: (&'static str, Value),
    pub request_limit: u32,
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
        output_schema: Some(spec.output.clone()),
    };
    let (mut requests, mut invalid) = (0, 0);
    loop {
        if requests >= spec.request_limit {
            return Err(AgentError::RequestLimit(spec.request_limit));
        }
        requests += 1;
        let attempt = |_| llm.chat(&request);
        let reply = match spec.deadline {
            Some(at) => within(retry, at, "llm", attempt).await,
            None => with_backoff(retry, "llm", attempt).await,
        };
        let charge = |usage, outcome, upstream_id| Charge {
            request_id,
            agent: spec.name,
            kind: CallKind::Llm,
            provider: llm.provider(),
            model: spec.model,
            usage,
            outcome,
            saved_usd: 0.0,
            upstream_id,
        };
        let reply = match reply {
            Ok(reply) => reply,
            Err(e) => {
                // Cut short while the model was working: it may be billed, so it is recorded.
                if e.maybe_billed() {
                    ledger.charge(&charge(&Usage::default(), Outcome::Failed, None)).await;
                }
                return Err(e.into());
            }
        };
        let outcome = if llm.is_mock() { Outcome::Mock } else { Outcome::Live };
        ledger.charge(&charge(&reply.usage, outcome, reply.upstream_id.clone())).await;
        if !reply.tool_calls.is_empty() {
            request
                .messages
                .push(Message::Assistant { content: reply.content.clone(), tool_calls: reply.tool_calls.clone() });
            for call in &reply.tool_calls {
                let arguments = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
                tracing::info!(agent = spec.name, tool = %call.name, "tool call");
                let content = tools.call(&call.name, arguments).await;
                request.messages.push(Message::Tool { call_id: call.id.clone(), content });
            }
            continue;
        }
        let content = reply.content.unwrap_or_default();
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
