//! OpenAI-compatible chat completions (`POST {LLM_BASE_URL}/chat/completions`): OpenRouter,
//! DeepSeek and the like. Tools as `tools[{type: function, function}]`, structured output as
//! `response_format: json_schema`. OpenRouter's reported cost (`usage.cost`) wins over the
//! price table; another provider's is ignored. With the deployer's own provider key (BYOK,
//! `usage.is_byok: true`), `usage.cost` is only OpenRouter's fee: the call costs that plus the
//! provider's charge, `usage.cost_details.upstream_inference_cost` (OpenRouter's usage
//! accounting, docs/use-cases/usage-accounting; its SDKs' `ChatUsage` and `CostDetails`), or,
//! without that figure, the table's price.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{ChatModel, ChatReply, ChatRequest, Message, TextSink, ToolCall};
use crate::core::secrets::Secret;
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

    /// `stream: true` with `stream_options.include_usage`: server-sent `data:` chunks, then
    /// `data: [DONE]`. Comment lines (OpenRouter's `: OPENROUTER PROCESSING`) are skipped.
    async fn stream(&self, request: &ChatRequest, text: TextSink<'_>) -> Result<ChatReply, ProviderError> {
        let mut body = Self::request_body(request);
        body["stream"] = json!(true);
        body["stream_options"] = json!({"include_usage": true});
        let mut response = self.http.post_streaming(&self.endpoint, &self.key, &body).await?;
        let (mut assembly, mut buffer) = (Assembly::default(), Vec::<u8>::new());
        loop {
            let Some(bytes) = response.chunk().await.map_err(|e| self.http.transport(&e))? else {
                return match assembly.finished {
                    true => Ok(assembly.finish(request, false)),
                    false => Err(ProviderError::Malformed("the stream ended before the reply finished".into())),
                };
            };
            buffer.extend_from_slice(&bytes);
            while let Some(end) = buffer.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = buffer.drain(..=end).collect();
                let line = String::from_utf8_lossy(&line);
                let Some(data) = line.trim_end().strip_prefix("data:").map(str::trim) else { continue };
                if data == "[DONE]" {
                    return Ok(assembly.finish(request, false));
                }
                if let Some(delta) = assembly.take(data)?
                    && !text(&delta)
                {
                    // Dropping the response closes the connection: the model stops.
                    return Ok(assembly.finish(request, true));
                }
            }
        }
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
    let usage = usage_of(&v).unwrap_or_default();
    Ok(ChatReply {
        content: message.get("content").and_then(Value::as_str).map(str::to_owned),
        tool_calls,
        usage,
        upstream_id: v.get("id").and_then(Value::as_str).map(str::to_owned),
        stopped: false,
    })
}

/// The providers whose `usage.cost` is what they bill, in US dollars (OpenRouter's credits are
/// dollars). Another gateway's figure (credits, yuan, a discount it does not pass on) does not
/// replace the price table's: `reply` keeps its tokens and loses that cost.
const REPORTS_USD_COST: &[&str] = &["openrouter"];

fn priced_by(provider: &str, mut reply: ChatReply) -> ChatReply {
    if !REPORTS_USD_COST.contains(&provider) {
        reply.usage.provider_cost_usd = None;
    }
    reply
}

/// The usage object of a reply or of a stream's last chunk.
fn usage_of(v: &Value) -> Option<Usage> {
    let u = v.get("usage").filter(|u| u.is_object())?;
    let dollars = |v: Option<&Value>| v.and_then(Value::as_f64).filter(|c| c.is_finite() && *c >= 0.0);
    let fee = dollars(u.get("cost"));
    // OpenRouter fills `upstream_inference_cost` on other calls too (equal to `cost`): only a
    // call that says it is BYOK adds it, and one that says so without it is priced by the table.
    let cost = if u.get("is_byok").and_then(Value::as_bool) == Some(true) {
        dollars(u.pointer("/cost_details/upstream_inference_cost")).map(|upstream| upstream + fee.unwrap_or(0.0))
    } else {
        fee
    };
    Some(Usage {
        input_tokens: u.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0),
        output_tokens: u.get("completion_tokens").and_then(Value::as_u64).unwrap_or(0),
        provider_cost_usd: cost,
        ..Usage::default()
    })
}

/// A streamed reply as its chunks (`chat.completion.chunk`) arrive: content deltas, tool-call
/// deltas by `index` (id and name once, arguments in pieces), and the usage of the last chunk
/// (`stream_options.include_usage`).
#[derive(Default)]
pub struct Assembly {
    reply: ChatReply,
    calls: Vec<ToolCall>,
    pieces: u64,
    usage_seen: bool,
    /// A choice said why it finished (`finish_reason`).
    pub finished: bool,
}

impl Assembly {
    /// Takes one `data:` payload; the text delta it carries, if any.
    pub fn take(&mut self, data: &str) -> Result<Option<String>, ProviderError> {
        let chunk: Value = serde_json::from_str(data)
            .map_err(|e| ProviderError::Malformed(format!("stream chunk is not JSON: {e}")))?;
        if let Some(message) = chunk.pointer("/error/message").and_then(Value::as_str) {
            return Err(ProviderError::RunFailed {
                status: "error".into(),
                message: message.chars().take(200).collect(),
            });
        }
        if self.reply.upstream_id.is_none() {
            self.reply.upstream_id = chunk.get("id").and_then(Value::as_str).map(str::to_owned);
        }
        if let Some(usage) = usage_of(&chunk) {
            self.reply.usage = usage;
            self.usage_seen = true;
        }
        self.finished |= chunk.pointer("/choices/0/finish_reason").is_some_and(|r| !r.is_null());
        let Some(delta) = chunk.pointer("/choices/0/delta") else { return Ok(None) };
        for call in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            let index = call.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
            if index >= 16 {
                return Err(ProviderError::Malformed(format!("tool call index {index} in stream")));
            }
            while self.calls.len() <= index {
                self.calls.push(ToolCall { id: String::new(), name: String::new(), arguments: String::new() });
            }
            let slot = &mut self.calls[index];
            if let Some(id) = call.get("id").and_then(Value::as_str).filter(|id| !id.is_empty()) {
                slot.id = id.to_owned();
            }
            if let Some(name) = call.pointer("/function/name").and_then(Value::as_str).filter(|n| !n.is_empty()) {
                slot.name = name.to_owned();
            }
            if let Some(arguments) = call.pointer("/function/arguments").and_then(Value::as_str) {
                slot.arguments.push_str(arguments);
            }
        }
        let text = delta.get("content").and_then(Value::as_str).filter(|t| !t.is_empty());
        if let Some(text) = text {
            self.pieces += 1;
            self.reply.content.get_or_insert_with(String::new).push_str(text);
        }
        Ok(text.map(str::to_owned))
    }

    /// The reply once the stream ended. Its usage is `request`'s ceiling (its input bound and
    /// [`super::MAX_TOKENS`]) when the model never reported it: `stopped` (cut short by the
    /// listener: a provider may bill the whole completion whether or not it stops), or a stream
    /// without the usage chunk.
    pub fn finish(mut self, request: &ChatRequest, stopped: bool) -> ChatReply {
        self.reply.tool_calls = self.calls.into_iter().filter(|c| !c.name.is_empty() && !c.id.is_empty()).collect();
        for call in &mut self.reply.tool_calls {
            if call.arguments.is_empty() {
                call.arguments = "{}".into();
            }
        }
        if stopped {
            self.reply.stopped = true;
            self.reply.tool_calls.clear();
        }
        if !self.usage_seen {
            tracing::warn!(stopped, pieces = self.pieces, "no usage in the stream: charged at the request's ceiling");
            self.reply.usage = request.ceiling();
        }
        self.reply
    }
}

#[async_trait]
impl ChatModel for OpenAiCompatible {
    fn provider(&self) -> &str {
        &self.provider
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatReply, ProviderError> {
        let reply = parse_reply(&self.http.post(&self.endpoint, &self.key, &Self::request_body(request)).await?)?;
        Ok(priced_by(&self.provider, reply))
    }

    async fn chat_streaming(&self, request: &ChatRequest, text: TextSink<'_>) -> Result<ChatReply, ProviderError> {
        Ok(priced_by(&self.provider, self.stream(request, text).await?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> ChatRequest {
        ChatRequest {
            model: "m".into(),
            messages: vec![Message::User("hi".into())],
            tools: Vec::new(),
            output_schema: None,
        }
    }

    // OpenAI's chunks: the role first, content in pieces, a tool call's id and name once and its
    // arguments in pieces by index, the finish reason, then usage alone (`choices: []`).
    #[test]
    fn a_streamed_reply_is_assembled_from_its_chunks() {
        let mut a = Assembly::default();
        let chunks = [
            r#"{"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
            r#"{"id":"c1","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}"#,
            r#"{"id":"c1","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}]}"#,
            r#"{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"search_web","arguments":""}}]},"finish_reason":null}]}"#,
            r#"{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"query\":"}}]},"finish_reason":null}]}"#,
            r#"{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"\"x\"}"}}]},"finish_reason":null}]}"#,
            r#"{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
            r#"{"id":"c1","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":7,"cost":0.001}}"#,
        ];
        let texts: Vec<String> = chunks.iter().filter_map(|c| a.take(c).unwrap()).collect();
        assert_eq!(texts, ["Hel", "lo"]);
        assert!(a.finished);
        let reply = a.finish(&request(), false);
        assert_eq!(reply.content.as_deref(), Some("Hello"));
        assert_eq!(
            reply.tool_calls,
            [ToolCall { id: "call_b".into(), name: "search_web".into(), arguments: r#"{"query":"x"}"#.into() }],
            "the empty slot at index 0 is dropped"
        );
        assert_eq!((reply.usage.input_tokens, reply.usage.output_tokens), (12, 7));
        assert_eq!(reply.usage.provider_cost_usd, Some(0.001));
        assert_eq!(reply.upstream_id.as_deref(), Some("c1"));
        assert!(!reply.stopped);
        // Only OpenRouter's reported cost is taken as dollars billed; another gateway's is not.
        assert_eq!(priced_by("openrouter", reply.clone()).usage.provider_cost_usd, Some(0.001));
        let elsewhere = priced_by("acme", reply);
        assert_eq!((elsewhere.usage.provider_cost_usd, elsewhere.usage.input_tokens), (None, 12));
    }

    // Issue 73: given OpenRouter's usage (the SDK's ChatUsage: cost, cost_details, is_byok), then
    // a call with the deployer's own provider key costs the fee plus the provider's charge, one
    // without that figure is left to the price table (never the fee alone), and a call that is
    // not BYOK costs `cost` though `upstream_inference_cost` is filled too.
    #[test]
    fn a_byok_call_costs_the_providers_charge_not_the_fee_alone() {
        let cost = |usage: &str| {
            usage_of(&serde_json::from_str(&format!(r#"{{"usage":{usage}}}"#)).unwrap()).unwrap().provider_cost_usd
        };
        let byok = r#"{"prompt_tokens":194,"completion_tokens":2,"total_tokens":196,"cost":0.0001,"is_byok":true,
            "cost_details":{"upstream_inference_cost":0.002,"upstream_inference_prompt_cost":0.0015,"upstream_inference_completions_cost":0.0005},
            "prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}"#;
        assert!((cost(byok).unwrap() - 0.0021).abs() < 1e-12, "{:?}", cost(byok));
        let free_allowance = r#"{"prompt_tokens":194,"completion_tokens":2,"total_tokens":196,"cost":0,"is_byok":true,
            "cost_details":{"upstream_inference_cost":0.002,"upstream_inference_prompt_cost":0.0015,"upstream_inference_completions_cost":0.0005}}"#;
        assert_eq!(cost(free_allowance), Some(0.002));
        let unreported = r#"{"prompt_tokens":194,"completion_tokens":2,"total_tokens":196,"cost":0.0001,"is_byok":true,
            "cost_details":{"upstream_inference_cost":null,"upstream_inference_prompt_cost":0,"upstream_inference_completions_cost":0}}"#;
        assert_eq!(cost(unreported), None, "the table's price, not the fee");
        let credits = r#"{"prompt_tokens":194,"completion_tokens":2,"total_tokens":196,"cost":0.002,"is_byok":false,
            "cost_details":{"upstream_inference_cost":0.002,"upstream_inference_prompt_cost":0.0015,"upstream_inference_completions_cost":0.0005}}"#;
        assert_eq!(cost(credits), Some(0.002));
    }

    // Stopped by the listener, or without a usage chunk: no tool calls run, and the usage is the
    // request's ceiling (what the provider may bill), never a silent zero.
    #[test]
    fn a_reply_without_its_usage_is_charged_at_the_ceiling() {
        let mut a = Assembly::default();
        for piece in ["a", "b", "c"] {
            a.take(&format!(r#"{{"choices":[{{"index":0,"delta":{{"content":"{piece}"}}}}]}}"#)).unwrap();
        }
        let reply = a.finish(&request(), true);
        assert!(reply.stopped);
        assert_eq!(reply.content.as_deref(), Some("abc"));
        assert_eq!(reply.usage, request().ceiling());
        let mut unreported = Assembly::default();
        unreported.take(r#"{"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}"#).unwrap();
        assert_eq!(unreported.finish(&request(), false).usage, request().ceiling());
        let e = Assembly::default().take(r#"{"error":{"message":"overloaded"}}"#).unwrap_err();
        assert!(matches!(e, ProviderError::RunFailed { .. }), "{e:?}");
        assert!(Assembly::default().take("not json").is_err());
    }
}
