//! `/chat` as the Vercel AI SDK's chat client speaks it (`useChat` in `@ai-sdk/react`, the `ai`
//! package's `DefaultChatTransport`, ai 6 and 7; ai 5 has no approvals): its request body in,
//! its UI message stream out, and a conversation's history as the messages `useChat` starts from.
//!
//! The shapes follow the `ai` package's own schema (`uiMessageChunkSchema`, `dist/index.js` of
//! ai 7.0.173 and 6.0.325): server-sent events, each `data:` one JSON chunk, then `data: [DONE]`,
//! with the header `x-vercel-ai-ui-message-stream: v1`. A reply is `start`, the mode as a
//! `data-mode` part, text as `text-start` / `text-delta`... / `text-end`, each tool call as
//! `tool-input-available` then `tool-output-available` (or, for a call that waits for the user,
//! `tool-approval-request` and a `data-approval` part with the same id carrying its `expiresAt`,
//! since the approval chunk has no field for it; declined, `tool-output-denied`), each web source as `source-url`, and
//! `finish` (its `messageMetadata`: the conversation, mode, whether the reply is the labelled
//! mock, what was remembered), or an `error` part.

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Body, ChatInput, Event, Location};
use crate::assistant::approvals;
use crate::assistant::intent::Mode;
use crate::core::error::{Error, Result};

/// The header that marks a UI message stream, and its value.
pub const HEADER: (&str, &str) = ("x-vercel-ai-ui-message-stream", "v1");

/// The body `DefaultChatTransport` sends: `{id, messages, trigger, messageId?}` and what the
/// app adds with the transport's `body` option (`location`, `keepLocation`, `mode`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Request {
    id: String,
    messages: Vec<UiMessage>,
    trigger: Option<String>,
    #[serde(default)]
    message_id: Option<String>,
    /// Absent: not given; `null`: not to be used, nor a kept one.
    #[serde(default, deserialize_with = "super::given")]
    location: Option<Option<Location>>,
    keep_location: Option<bool>,
    mode: Option<Mode>,
}

/// A message of the client's list: only its role and text parts are read (the server's stored
/// history is the conversation; the list's earlier messages are ignored).
#[derive(Deserialize)]
struct UiMessage {
    #[serde(default)]
    id: Option<String>,
    role: String,
    #[serde(default)]
    parts: Vec<Value>,
}

/// Whether `body` is the AI SDK's (it has `messages`; this API's own has `message`).
pub fn is_ui_request(body: &[u8]) -> bool {
    serde_json::from_slice::<Value>(body).is_ok_and(|v| v.get("messages").is_some())
}

/// The chat input of an AI SDK request: its last message, the user's, as the message, or, when
/// the last is the assistant's, its one tool part answered with `addToolApprovalResponse`
/// (state `approval-responded`) as the approval's answer; its `id` as the conversation (the
/// user's own: an unknown id starts one).
pub fn input(body: &[u8]) -> Result<ChatInput> {
    let request: Request = crate::core::json::typed_body(body, "invalid_chat")?;
    match request.trigger.as_deref() {
        None | Some("submit-message" | "regenerate-message") => {}
        Some(other) => {
            return Err(Error::invalid("invalid_chat", format!("trigger {other:?} is not one /chat serves")));
        }
    }
    let last = request.messages.last().filter(|m| m.role == "user" || m.role == "assistant").ok_or_else(|| {
        Error::invalid("invalid_chat", "messages: the last message must be the user's (role \"user\")")
    })?;
    // An approval answered on an earlier card: the request names that message (`messageId`).
    let named = request
        .message_id
        .as_ref()
        .and_then(|id| request.messages.iter().find(|m| m.role == "assistant" && m.id.as_ref() == Some(id)));
    if let Some(answered) = named.or((last.role == "assistant").then_some(last)) {
        let body = Body {
            message: None,
            approval: Some(approval_response(answered)?),
            conversation_id: Some(request.id),
            location: request.location,
            keep_location: request.keep_location,
            mode: None,
        };
        let mut input = ChatInput::checked(body)?;
        input.client_named = true;
        return Ok(input);
    }
    let text: Vec<&str> = last
        .parts
        .iter()
        .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect();
    let body = Body {
        message: Some(text.join("\n")),
        approval: None,
        conversation_id: Some(request.id),
        location: request.location,
        keep_location: request.keep_location,
        mode: request.mode,
    };
    let mut input = ChatInput::checked(body)?;
    input.client_named = true;
    Ok(input)
}

/// The one approval answered in `message` (the assistant's): its tool part in state
/// `approval-responded`, `approval: {id, approved}`.
fn approval_response(message: &UiMessage) -> Result<approvals::Answer> {
    let answered: Vec<&Value> =
        message.parts.iter().filter(|p| p.get("state").and_then(Value::as_str) == Some("approval-responded")).collect();
    let [part] = answered.as_slice() else {
        return Err(Error::invalid(
            "invalid_chat",
            "messages: the last message must be the user's (role \"user\"), or the assistant's with one approval \
             answered (a tool part in state approval-responded)",
        ));
    };
    let tool_call_id = part.get("toolCallId").and_then(Value::as_str).map(str::to_owned);
    serde_json::from_value::<ApprovalPart>(part["approval"].clone())
        .map(|a| approvals::Answer { id: a.id, approved: a.approved, tool_call_id })
        .map_err(|e| Error::invalid("invalid_chat", format!("messages: the answered approval: {e}")))
}

/// A tool part's `approval` once answered (the AI SDK's `approvalRespondedSchema`).
#[derive(Deserialize)]
struct ApprovalPart {
    id: String,
    approved: bool,
}

/// `conversation`'s `turns` (oldest first) as the AI SDK's `UIMessage`s, what `useChat` takes as
/// its `messages` after a page reload: each turn the user's text (an answered approval's is
/// `[approved <tool>]` or `[declined <tool>]`), then the assistant's with its mode (a `data-mode`
/// part and `metadata`; not how the mode was chosen, nor tool calls, which turns do not keep).
pub fn history(conversation: &str, turns: &[super::history::Turn]) -> Value {
    let messages: Vec<Value> = turns
        .iter()
        .flat_map(|turn| {
            let at = turn.at.timestamp_micros();
            [
                json!({"id": format!("u-{at}"), "role": "user", "parts": [{"type": "text", "text": turn.user}]}),
                json!({
                    "id": format!("a-{at}"),
                    "role": "assistant",
                    "metadata": {"conversationId": conversation, "mode": turn.mode},
                    "parts": [
                        {"type": "data-mode", "data": {"conversationId": conversation, "mode": turn.mode}},
                        {"type": "text", "text": turn.assistant, "state": "done"},
                    ],
                }),
            ]
        })
        .collect();
    json!({"conversationId": conversation, "messages": messages})
}

/// Turns a reply's events into UI message stream frames, keeping which text part is open.
#[derive(Default)]
pub struct Encoder {
    started: bool,
    text_parts: usize,
    text_open: bool,
}

impl Encoder {
    /// The data of the frames of `event`, each a JSON chunk, `[DONE]` after the last.
    pub fn chunks(&mut self, event: &Event) -> Vec<String> {
        let mut chunks: Vec<Value> = Vec::new();
        if !self.started {
            self.started = true;
            chunks.push(json!({"type": "start"}));
        }
        match event {
            Event::Mode { conversation_id, mode, by } => chunks.push(json!({
                "type": "data-mode",
                "data": {"conversationId": conversation_id, "mode": mode, "by": by},
            })),
            Event::Text(delta) => {
                if !self.text_open {
                    self.text_open = true;
                    self.text_parts += 1;
                    chunks.push(json!({"type": "text-start", "id": self.text_id()}));
                }
                chunks.push(json!({"type": "text-delta", "id": self.text_id(), "delta": delta}));
            }
            Event::ToolStarted { id, name, input } => {
                self.close_text(&mut chunks);
                chunks
                    .push(json!({"type": "tool-input-available", "toolCallId": id, "toolName": name, "input": input}));
            }
            Event::Tool { id, output, .. } => {
                chunks.push(json!({"type": "tool-output-available", "toolCallId": id, "output": output}));
            }
            Event::Approval(pending) => chunks.extend([
                json!({"type": "tool-approval-request", "approvalId": pending.id, "toolCallId": pending.tool_call_id}),
                json!({"type": "data-approval", "id": pending.id, "data": {
                    "approvalId": pending.id, "toolCallId": pending.tool_call_id, "expiresAt": pending.expires_at,
                }}),
            ]),
            Event::Denied { id, .. } => chunks.push(json!({"type": "tool-output-denied", "toolCallId": id})),
            Event::Source(cited) => chunks.push(json!({
                "type": "source-url", "sourceId": cited.url, "url": cited.url, "title": cited.title,
            })),
            Event::Done(answer) => {
                self.close_text(&mut chunks);
                chunks.push(json!({
                    "type": "finish",
                    "finishReason": "stop",
                    "messageMetadata": {
                        "conversationId": answer.conversation_id,
                        "mode": answer.mode,
                        "mock": answer.mock,
                        "remembered": answer.remembered,
                    },
                }));
            }
            Event::Error { code, message } => {
                self.close_text(&mut chunks);
                chunks.push(json!({"type": "error", "errorText": format!("{code}: {message}")}));
            }
        }
        let mut data: Vec<String> = chunks.iter().map(Value::to_string).collect();
        if matches!(event, Event::Done(_) | Event::Error { .. }) {
            data.push("[DONE]".to_owned());
        }
        data
    }

    fn text_id(&self) -> String {
        format!("text-{}", self.text_parts)
    }

    fn close_text(&mut self, chunks: &mut Vec<Value>) {
        if self.text_open {
            self.text_open = false;
            chunks.push(json!({"type": "text-end", "id": self.text_id()}));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assistant::tools::ToolUse;

    #[test]
    fn the_ai_sdk_body_gives_its_last_user_message_and_chat_id() {
        let body = br#"{"id": "c-1", "trigger": "submit-message", "location": {"lat": 31.2, "lng": 121.5},
            "messages": [{"id": "m0", "role": "user", "parts": [{"type": "text", "text": "earlier"}]},
                         {"id": "m1", "role": "assistant", "parts": [{"type": "text", "text": "ok"}]},
                         {"id": "m2", "role": "user", "parts": [{"type": "step-start"}, {"type": "text", "text": " hi "}]}]}"#;
        assert!(is_ui_request(body));
        let input = input(body).unwrap();
        assert_eq!((input.message.as_str(), input.conversation_id.as_deref()), ("hi", Some("c-1")));
        assert!(input.client_named);
        assert_eq!(input.location, Some((31.2, 121.5)));
        for (bad, says) in [
            (r#"{"id": "c", "messages": []}"#, "last message"),
            (r#"{"id": "c", "messages": [{"role": "assistant", "parts": []}]}"#, "last message"),
            (
                r#"{"id": "../x", "messages": [{"role": "user", "parts": [{"type": "text", "text": "x"}]}]}"#,
                "conversationId",
            ),
            (r#"{"id": "c", "messages": [{"role": "user", "parts": []}]}"#, "message"),
            (r#"{"id": "c", "extra": 1, "messages": [{"role": "user", "parts": []}]}"#, "extra"),
            (
                r#"{"id": "c", "trigger": "resume", "messages": [{"role": "user", "parts": [{"type": "text", "text": "x"}]}]}"#,
                "trigger",
            ),
        ] {
            let e = super::input(bad.as_bytes()).unwrap_err();
            assert_eq!(e.status(), 400, "{bad}");
            assert!(e.to_string().contains(says), "{bad}: {e}");
        }
        assert!(!is_ui_request(br#"{"message": "hi"}"#));
    }

    #[test]
    fn an_answered_approval_is_read_from_the_assistants_last_message() {
        let answered = |parts: &str| {
            format!(
                r#"{{"id": "c-1", "trigger": "submit-message", "messageId": "m1", "messages": [
                    {{"id": "m0", "role": "user", "parts": [{{"type": "text", "text": "cancel it"}}]}},
                    {{"id": "m1", "role": "assistant", "parts": {parts}}}]}}"#
            )
        };
        let body = answered(
            r#"[{"type": "text", "text": "Shall I?"}, {"type": "tool-cancelActivity", "toolCallId": "call-r-0",
                 "state": "approval-responded", "input": {"activityId": "a-1"},
                 "approval": {"id": "ab12", "approved": true, "reason": "yes"}}]"#,
        );
        let input = input(body.as_bytes()).unwrap();
        let shown = Some("call-r-0".to_owned());
        assert_eq!(input.approval, Some(approvals::Answer { id: "ab12".into(), approved: true, tool_call_id: shown }));
        assert_eq!((input.message.as_str(), input.conversation_id.as_deref()), ("", Some("c-1")));
        for parts in [
            r#"[{"type": "tool-x", "toolCallId": "a", "state": "approval-requested", "approval": {"id": "ab12"}}]"#,
            r#"[{"type": "tool-x", "state": "approval-responded", "approval": {"id": "a", "approved": true}},
                {"type": "tool-y", "state": "approval-responded", "approval": {"id": "b", "approved": true}}]"#,
            r#"[{"type": "tool-x", "state": "approval-responded", "approval": {"id": "a"}}]"#,
        ] {
            let e = super::input(answered(parts).as_bytes()).unwrap_err();
            assert_eq!(e.status(), 400, "{parts}: {e}");
        }
    }

    #[test]
    fn a_call_waiting_for_approval_is_an_approval_request_part() {
        let pending = approvals::PendingApproval {
            id: "ab12".into(),
            tool_call_id: "call-r-0".into(),
            tool: "cancelActivity".into(),
            arguments: json!({"activityId": "a-1"}),
            expires_at: "2026-11-26T12:00:00Z".parse().unwrap(),
        };
        let mut encoder = Encoder::default();
        let mut data = encoder.chunks(&Event::Approval(pending));
        data.extend(encoder.chunks(&Event::Denied {
            id: "call-r-0".into(),
            used: ToolUse { name: "cancelActivity".into(), ok: false, needs: None },
        }));
        let chunks: Vec<Value> = data.iter().map(|d| serde_json::from_str(d).unwrap()).collect();
        assert_eq!(
            chunks[1..],
            [
                json!({"type": "tool-approval-request", "approvalId": "ab12", "toolCallId": "call-r-0"}),
                json!({"type": "data-approval", "id": "ab12", "data": {
                    "approvalId": "ab12", "toolCallId": "call-r-0", "expiresAt": "2026-11-26T12:00:00Z"}}),
                json!({"type": "tool-output-denied", "toolCallId": "call-r-0"}),
            ]
        );
    }

    #[test]
    fn a_reply_is_framed_as_the_ui_message_stream() {
        let mut encoder = Encoder::default();
        let mode =
            Event::Mode { conversation_id: "c".into(), mode: Mode::Chat, by: crate::assistant::intent::By::Client };
        let data: Vec<String> = [
            mode,
            Event::Text("Hel".into()),
            Event::Text("lo".into()),
            Event::ToolStarted { id: "call-0".into(), name: "search_web".into(), input: json!({"query": "q"}) },
            Event::Tool {
                id: "call-0".into(),
                used: ToolUse { name: "search_web".into(), ok: true, needs: None },
                output: json!([]),
            },
            Event::Text("!".into()),
            Event::Error { code: "upstream_unavailable".into(), message: "retry".into() },
        ]
        .iter()
        .flat_map(|e| encoder.chunks(e))
        .collect();
        let types: Vec<String> = data
            .iter()
            .map(|d| serde_json::from_str::<Value>(d).map_or(d.to_owned(), |v| v["type"].as_str().unwrap().to_owned()))
            .collect();
        assert_eq!(
            types,
            [
                "start",
                "data-mode",
                "text-start",
                "text-delta",
                "text-delta",
                "text-end",
                "tool-input-available",
                "tool-output-available",
                "text-start",
                "text-delta",
                "text-end",
                "error",
                "[DONE]"
            ]
        );
        assert!(data.iter().any(|d| d.contains(r#""id":"text-2""#)), "each text part has its own id");
    }
}
