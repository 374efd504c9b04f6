//! OpenAI-compatible chat completions (`POST {LLM_BASE_URL}/chat/completions`): OpenRouter,
//! DeepSeek and the like. Tools as `tools[{type: function, function}]`, structured output as
//! `response_format: json_schema`. A reported cost (OpenRouter's `usage.cost`) wins over the
//! price table.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{ChatModel, ChatReply, ChatRequest, Message, ToolCall};
use crate::core::config::Secret;
use crate::core::upstream::JsonClient;
use crate::core::upstream::{ProviderError, Usage};

pub struct OpenAiCompatible {
    http: JsonClient,
    endpoint: String,
    key: Secret,
    provider: String,
}

impl OpenAiCompatible {
    pub fn new(base_url: &str, key: Secret, provider: &str, timeout: Duration) -> Result<Self, ProviderError> {
        Ok(Self {
            http: JsonClient::new(timeout)?,
            endpoint: format!("{}/chat/completions", base_url.trim_end_matches('/')),
            key,
            provider: provider.to_owned(),
        })
    }

    /// The JSON body for `request`.
    pub fn request_body(request: &ChatRequest) -> Value {
        let messages: Vec<Value> = request
            .messages
            .iter()
            .map(|m| match m {
                Message::System(text) => json!({"role": "system", "content": text}),
                Message::User(text) => json!({"role": "user", "content": text}),
                Message::Assistant { content, tool_calls } => {
                    let mut v = json!({"role": "assistant", "content": content});
                    if !tool_calls.is_empty() {
                        v["tool_calls"] = tool_calls
                            .iter()
                            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
                            .collect();
                    }
                    v
                }
                Message::Tool { call_id, content } => json!({"role": "tool", "tool_call_id": call_id, "content": content}),
            })
            .collect();
        let mut body =
            json!({"model": request.model, "messages": messages, "temperature": 0.3, "max_tokens": super::MAX_TOKENS});
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
                .collect();
        }
        if let Some((name, schema)) = &request.output_schema {
            body["response_format"] =
                json!({"type": "json_schema", "json_schema": {"name": name, "strict": true, "schema": schema}});
        }
        body
    }
}

/// Reads a chat-completions reply: the first choice's content and tool calls, and usage.
pub fn parse_reply(bytes: &[u8]) -> Result<ChatReply, ProviderError> {
    let v: Value =
        serde_json::from_slice(bytes).map_err(|e| ProviderError::Malformed(format!("response is not JSON: {e}")))?;
    let message =
        v.pointer("/choices/0/message").ok_or_else(|| ProviderError::Malformed("no choices[0].message".into()))?;
    let tool_calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .filter_map(|c| {
                    Some(ToolCall {
                        id: c.get("id")?.as_str()?.to_owned(),
                        name: c.pointer("/function/name")?.as_str()?.to_owned(),
                        arguments: c.pointer("/function/arguments").and_then(Value::as_str).unwrap_or("{}").to_owned(),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let usage = v.get("usage").map_or_else(Usage::default, |u| Usage {
        input_tokens: u.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0),
        output_tokens: u.get("completion_tokens").and_then(Value::as_u64).unwrap_or(0),
        provider_cost_usd: u.get("cost").and_then(Value::as_f64).filter(|c| c.is_finite() && *c >= 0.0),
        ..Usage::default()
    });
    Ok(ChatReply {
        content: message.get("content").and_then(Value::as_str).map(str::to_owned),
        tool_calls,
        usage,
        upstream_id: v.get("id").and_then(Value::as_str).map(str::to_owned),
    })
}

#[async_trait]
impl ChatModel for OpenAiCompatible {
    fn provider(&self) -> &str {
        &self.provider
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatReply, ProviderError> {
        parse_reply(&self.http.post(&self.endpoint, &self.key, &Self::request_body(request)).await?)
    }
}
