//! The LLM port: an OpenAI-compatible chat model with tool calling and structured output.
//!
//! Adapters make one attempt per call and classify failures as search providers do
//! ([`ProviderError`]); the agent loop in [`crate::llm::agent`] retries, executes tools, validates
//! the structured output and accounts for every call.

pub mod agent;
pub mod mock;
pub mod openai;
pub mod settings;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::core::upstream::{ProviderError, Usage};

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// JSON text, as the model wrote it.
    pub arguments: String,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    System(String),
    User(String),
    Assistant { content: Option<String>, tool_calls: Vec<ToolCall> },
    Tool { call_id: String, content: String },
}

/// A tool the model may call (OpenAI function schema).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// One chat request.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    /// The JSON schema the final answer must follow (`response_format: json_schema`).
    pub output_schema: Option<(&'static str, Value)>,
}

/// The longest reply asked for (`max_tokens`): bounds what one call may cost.
pub const MAX_TOKENS: u64 = 4096;

impl ChatRequest {
    /// The most this request may use: no more input tokens than the bytes it sends (tokens are
    /// at least a byte each), no more output than [`MAX_TOKENS`].
    pub fn ceiling(&self) -> Usage {
        let text = |m: &Message| match m {
            Message::System(t) | Message::User(t) => t.len(),
            Message::Assistant { content, tool_calls } => {
                content.as_ref().map_or(0, String::len)
                    + tool_calls.iter().map(|c| c.name.len() + c.arguments.len()).sum::<usize>()
            }
            Message::Tool { content, .. } => content.len(),
        };
        let tools: usize = self.tools.iter().map(|t| t.description.len() + t.parameters.to_string().len()).sum();
        let schema = self.output_schema.as_ref().map_or(0, |(_, s)| s.to_string().len());
        let bytes = self.messages.iter().map(text).sum::<usize>() + tools + schema;
        Usage { input_tokens: bytes as u64, output_tokens: MAX_TOKENS, ..Usage::default() }
    }
}

/// The model's reply.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChatReply {
    pub content: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
    pub upstream_id: Option<String>,
    /// The listener left mid-reply ([`ChatModel::chat_streaming`]): the model was stopped, the
    /// content is what it had written, and the usage an estimate from above.
    pub stopped: bool,
}

/// Told each piece of a reply's text as the model writes it; `false` when nobody listens any
/// more (the client left), which stops the model.
pub type TextSink<'a> = &'a (dyn Fn(&str) -> bool + Send + Sync);

/// A chat model.
#[async_trait]
pub trait ChatModel: Send + Sync {
    /// Provider name for accounting (`openrouter`, `deepseek`, `mock`, ...).
    fn provider(&self) -> &str;
    /// Whether answers are labelled mock data.
    fn is_mock(&self) -> bool {
        false
    }
    /// One completion.
    async fn chat(&self, request: &ChatRequest) -> Result<ChatReply, ProviderError>;
    /// One completion, its text told to `text` as it is written. By default the whole text at
    /// once, when the reply is complete.
    async fn chat_streaming(&self, request: &ChatRequest, text: TextSink<'_>) -> Result<ChatReply, ProviderError> {
        let reply = self.chat(request).await?;
        if let Some(content) = reply.content.as_deref().filter(|c| !c.is_empty()) {
            text(content);
        }
        Ok(reply)
    }
}
