//! The LLM port: an OpenAI-compatible chat model with tool calling and structured output.
//!
//! Adapters make one attempt per call and classify failures as search providers do
//! ([`ProviderError`]); the agent loop in [`crate::llm::agent`] retries, executes tools, validates
//! the structured output and accounts for every call.

pub mod agent;
pub mod mock;
pub mod openai;

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
    pub name: &'static str,
    pub description: &'static str,
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

/// The model's reply.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChatReply {
    pub content: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
    pub upstream_id: Option<String>,
}

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
}
