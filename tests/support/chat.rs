//! Harness for the assistant (`POST /chat`): the real handler over a real record store, Qdrant
//! Edge with indexed activities, the fake embedder, a scripted OpenAI-compatible model on
//! 127.0.0.1 and optionally a fake Tavily.
//!
//! The model ([`ScriptedModel`]) is as strict as OpenAI's chat completions (the `openai` SDK
//! 3.57.0's `CompletionCreateParams` and message params): an unknown top-level key, a message
//! of the wrong shape, or a tool result that answers no call is a 400 in OpenAI's
//! error envelope. `stream: true` is answered as OpenAI streams (`chat.completion.chunk`s). Its script: when the tool it is told to call is offered and the newest user
//! message has no tool result yet, it calls the tool; otherwise it answers from the newest tool
//! result (or greets).

use std::sync::Arc;

use serde_json::{Value, json};
use shared::core::clock::{Clock, ManualClock};
use wiremock::matchers::{method, path};
use wiremock::{Mock, Request, Respond, ResponseTemplate};

use crate::rag::RagHarness;
use crate::{FakeServer, StoreGuard, StoreKind, TAVILY_KEY, request, store};

/// The key the fake model expects.
pub const LLM_KEY: &str = "sk-llm-test-secret-0123456789";

/// Top-level keys of `POST /chat/completions` (openai 3.57.0 `CompletionCreateParamsBase`,
/// plus `stream`).
const REQUEST_KEYS: &[&str] = &[
    "messages",
    "model",
    "audio",
    "frequency_penalty",
    "function_call",
    "functions",
    "logit_bias",
    "logprobs",
    "max_completion_tokens",
    "max_tokens",
    "metadata",
    "modalities",
    "moderation",
    "n",
    "parallel_tool_calls",
    "prediction",
    "presence_penalty",
    "prompt_cache_key",
    "prompt_cache_options",
    "prompt_cache_retention",
    "reasoning_effort",
    "response_format",
    "safety_identifier",
    "seed",
    "service_tier",
    "stop",
    "store",
    "stream_options",
    "temperature",
    "tool_choice",
    "tools",
    "top_logprobs",
    "top_p",
    "user",
    "verbosity",
    "web_search_options",
    "stream",
];

/// The scripted model.
pub struct ScriptedModel {
    /// The tools it calls after the last user message, in turn, with their arguments (one per
    /// request while a next one is offered), then it answers from the last result.
    pub tools: Vec<(String, Value)>,
}

fn refuse(message: &str, param: Option<&str>) -> ResponseTemplate {
    ResponseTemplate::new(400).set_body_json(json!({
        "error": {"message": message, "type": "invalid_request_error", "param": param, "code": null}
    }))
}

fn only_keys(v: &Value, allowed: &[&str]) -> Result<(), String> {
    let map = v.as_object().ok_or("not an object")?;
    match map.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(format!("Unrecognized request argument supplied: {k}")),
        None => Ok(()),
    }
}

/// What the real service refuses in `body`, if anything.
fn check(body: &Value) -> Result<(), String> {
    only_keys(body, REQUEST_KEYS)?;
    if body["model"].as_str().is_none_or(|m| m.is_empty()) {
        return Err("model is required".into());
    }
    match (body.get("stream"), body.get("stream_options")) {
        (None | Some(Value::Bool(_)), None) => {}
        (Some(Value::Bool(true)), Some(options)) => only_keys(options, &["include_usage", "include_obfuscation"])?,
        _ => return Err("stream is a boolean; stream_options only with stream: true".into()),
    }
    let messages = body["messages"].as_array().filter(|m| !m.is_empty()).ok_or("messages is required")?;
    let mut calls: Vec<String> = Vec::new();
    for m in messages {
        let text = |v: &Value| v.is_string();
        match m["role"].as_str() {
            Some("system" | "user" | "developer") => {
                only_keys(m, &["role", "content", "name"])?;
                if !text(&m["content"]) {
                    return Err("content must be a string".into());
                }
            }
            Some("assistant") => {
                only_keys(m, &["role", "content", "refusal", "tool_calls", "name", "audio", "function_call"])?;
                let tool_calls = m.get("tool_calls").and_then(Value::as_array);
                if !(text(&m["content"]) || (m["content"].is_null() && tool_calls.is_some())) {
                    return Err("assistant content is required unless tool_calls is given".into());
                }
                for c in tool_calls.into_iter().flatten() {
                    only_keys(c, &["id", "type", "function"])?;
                    only_keys(&c["function"], &["name", "arguments"])?;
                    if c["type"] != "function"
                        || !text(&c["id"])
                        || !text(&c["function"]["name"])
                        || !text(&c["function"]["arguments"])
                    {
                        return Err("a tool call is {id, type: function, function: {name, arguments}}".into());
                    }
                    calls.push(c["id"].as_str().unwrap_or_default().to_owned());
                }
            }
            Some("tool") => {
                only_keys(m, &["role", "content", "tool_call_id"])?;
                if !text(&m["content"]) || !m["tool_call_id"].as_str().is_some_and(|id| calls.iter().any(|c| c == id)) {
                    return Err(
                        "messages with role 'tool' must be a response to a preceding message with 'tool_calls'".into(),
                    );
                }
            }
            _ => return Err("unknown message role".into()),
        }
    }
    for t in body.get("tools").and_then(Value::as_array).into_iter().flatten() {
        only_keys(t, &["type", "function"])?;
        only_keys(&t["function"], &["name", "description", "parameters", "strict"])?;
        if t["type"] != "function" || !t["function"]["name"].is_string() {
            return Err("a tool is {type: function, function: {name, ...}}".into());
        }
    }
    Ok(())
}

/// The reply `message`: one `chat.completion`, or with `stream` its `chat.completion.chunk`s as
/// OpenAI streams them (the role, the content in pieces, each tool call with its index, the
/// finish reason, the usage chunk of `stream_options.include_usage`, `[DONE]`).
fn completion(message: Value, finish: &str, stream: bool) -> ResponseTemplate {
    if stream {
        let chunk = |choices: Value, usage: Value| {
            let c = json!({"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1_795_000_000,
                           "model": "test-model", "choices": choices, "usage": usage});
            format!("data: {c}\n\n")
        };
        let delta =
            |d: Value, finish: Value| json!([{"index": 0, "delta": d, "logprobs": null, "finish_reason": finish}]);
        let mut sse = chunk(delta(json!({"role": "assistant", "content": ""}), Value::Null), Value::Null);
        let content: Vec<char> = message["content"].as_str().unwrap_or_default().chars().collect();
        for piece in content.chunks(8) {
            sse += &chunk(delta(json!({"content": piece.iter().collect::<String>()}), Value::Null), Value::Null);
        }
        for (i, call) in message["tool_calls"].as_array().into_iter().flatten().enumerate() {
            let mut first = call.clone();
            first["index"] = json!(i);
            sse += &chunk(delta(json!({"tool_calls": [first]}), Value::Null), Value::Null);
        }
        sse += &chunk(delta(json!({}), json!(finish)), Value::Null);
        sse += &chunk(json!([]), json!({"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100}));
        sse += "data: [DONE]\n\n";
        return ResponseTemplate::new(200).insert_header("content-type", "text/event-stream").set_body_string(sse);
    }
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "chatcmpl-test", "object": "chat.completion", "created": 1_795_000_000, "model": "test-model",
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish}],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100},
    }))
}

impl Respond for ScriptedModel {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        if request.headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(&format!("Bearer {LLM_KEY}")) {
            return ResponseTemplate::new(401).set_body_json(json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}}));
        }
        let Ok(body) = serde_json::from_slice::<Value>(&request.body) else {
            return refuse("We could not parse the JSON body of your request.", None);
        };
        if let Err(e) = check(&body) {
            return refuse(&e, None);
        }
        let messages = body["messages"].as_array().expect("checked");
        let last_user = messages.iter().rposition(|m| m["role"] == "user").unwrap_or(0);
        let results: Vec<&Value> = messages[last_user..].iter().filter(|m| m["role"] == "tool").collect();
        let offered =
            |name: &str| body["tools"].as_array().into_iter().flatten().any(|t| t["function"]["name"] == name);
        let next = self.tools.get(results.len()).filter(|(name, _)| offered(name));
        let (message, finish) = match (next, results.last()) {
            (Some((name, arguments)), _) => (
                json!({"role": "assistant", "content": null, "refusal": null, "tool_calls": [{
                    "id": format!("call_{}", results.len() + 1), "type": "function",
                    "function": {"name": name, "arguments": arguments.to_string()}
                }]}),
                "tool_calls",
            ),
            (_, Some(result)) => {
                let seen: String = result["content"].as_str().unwrap_or_default().chars().take(300).collect();
                (json!({"role": "assistant", "content": format!("根据工具结果：{seen}"), "refusal": null}), "stop")
            }
            _ => (json!({"role": "assistant", "content": "你好，我是测试模型。", "refusal": null}), "stop"),
        };
        completion(message, finish, body.get("stream") == Some(&Value::Bool(true)))
    }
}

/// The assistant over a real store, with its fakes.
pub struct ChatHarness {
    pub app: Arc<assistant::App>,
    pub rag: RagHarness,
    pub model: Option<FakeServer>,
    pub tavily: Option<FakeServer>,
    _guard: StoreGuard,
}

/// What a harness has.
#[derive(Default)]
pub struct Chat<'a> {
    /// The scripted model (else no `LLM_API_KEY`: the mock).
    pub model: Option<ScriptedModel>,
    /// A fake Tavily (and `TAVILY_API_KEY`).
    pub tavily: bool,
    pub env: &'a [(&'a str, &'a str)],
}

impl ChatHarness {
    pub async fn new(kind: StoreKind, chat: Chat<'_>) -> Self {
        let (records, guard) = store(kind).await;
        let model = match chat.model {
            Some(script) => {
                let server = FakeServer::start().await;
                Mock::given(method("POST")).and(path("/chat/completions")).respond_with(script).mount(&server).await;
                Some(server)
            }
            None => None,
        };
        let tavily = if chat.tavily { Some(FakeServer::start().await) } else { None };
        // The scripted model answers the assistant's requests only: results get the template's
        // reasons (a model's are tested in personalisation.rs).
        let mut env: Vec<(String, String)> =
            vec![("UPSTREAM_TIMEOUT_MS".into(), "2000".into()), ("RAG_MATCH_REASON".into(), "template".into())];
        if let Some(m) = &model {
            env.extend([("LLM_API_KEY".into(), LLM_KEY.into()), ("LLM_BASE_URL".into(), m.uri())]);
        }
        if let Some(t) = &tavily {
            env.extend([("TAVILY_API_KEY".into(), TAVILY_KEY.into()), ("TAVILY_BASE_URL".into(), t.uri())]);
        }
        env.extend(chat.env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let borrowed: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let rag = RagHarness::on_store(Arc::clone(&records), &borrowed).await;
        let clock: Arc<dyn Clock> = rag.clock.clone() as Arc<ManualClock>;
        let app = Arc::new(assistant::App::new(&rag.config, records, clock).expect("assistant"));
        Self { app, rag, model, tavily, _guard: guard }
    }

    /// The fake Tavily.
    pub fn tavily(&self) -> &FakeServer {
        self.tavily.as_ref().expect("this harness has a fake Tavily")
    }

    /// `POST /chat` with `body` as `user`, JSON (or SSE with `sse`): status, content type, text.
    pub async fn send(&self, user: Option<&str>, body: &Value, sse: bool) -> (u16, String, String) {
        let mut req = request("POST", "/chat", &body.to_string());
        if sse {
            req.headers_mut().insert("accept", "text/event-stream".parse().unwrap());
        }
        if let Some(user) = user {
            req = crate::as_user(req, user);
        }
        let (status, headers, text) = self.respond(req).await;
        let kind = headers.get("content-type").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
        assert!(!text.contains(LLM_KEY) && !text.contains(TAVILY_KEY), "a key leaked into a response");
        (status, kind, text)
    }

    /// `req` through the handler, its body read to the end: status, headers, text.
    pub async fn respond(&self, req: lambda_http::Request) -> (u16, lambda_http::http::HeaderMap, String) {
        use http_body_util::BodyExt;
        let (parts, body) =
            shared::http::invoke_streamed(assistant::routes(Arc::clone(&self.app)), req).await.into_parts();
        let bytes = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
        (parts.status.as_u16(), parts.headers, String::from_utf8_lossy(&bytes).into_owned())
    }

    /// `POST /chat` as `user`: status and JSON.
    pub async fn chat(&self, user: &str, body: Value) -> (u16, Value) {
        let (status, _, text) = self.send(Some(user), &body, false).await;
        (status, serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}")))
    }

    /// The request bodies the fake model received.
    pub async fn model_requests(&self) -> Vec<Value> {
        let server = self.model.as_ref().expect("this harness has the scripted model");
        let received = server.received_requests().await.unwrap_or_default();
        received.iter().map(|r| serde_json::from_slice(&r.body).unwrap()).collect()
    }

    /// The requests the fake Tavily received.
    pub async fn tavily_requests(&self) -> Vec<Request> {
        self.tavily().received_requests().await.unwrap_or_default()
    }
}

/// The names of the tools offered in a model request.
pub fn offered(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}
