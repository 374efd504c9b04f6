//! The assistant (seeds 002 and 004 Requirement 13): one conversation that uses everything the
//! bundle serves, in five steps per message, with one model and no fan-out of agents:
//!
//! 1. **context**: the conversation's newest turns ([`history`]), the user's stated
//!    preferences, their location (the message's, kept as their last; without one, in EXPLORE,
//!    their last or saved one: [`crate::activities::whereabouts`]) and the time;
//! 2. **intent**: the mode, decided locally ([`intent`]);
//! 3. **mode**: its prompt and its tools ([`tools`]: `explore_nearby`, `search_web`, the app's);
//! 4. **model**: the OpenAI-compatible model with those tools, a bounded tool loop, every call
//!    budgeted and costed under the agent `assistant` (the labelled mock without a key);
//! 5. **hooks**: the turn is stored, and preferences the user stated are kept in the interest
//!    profile rag-search personalises with ([`preferences`]).

pub mod app_tools;
pub mod approvals;
pub mod history;
pub mod intent;
pub mod preferences;
pub mod prompt;
pub mod settings;
pub mod tools;
pub mod ui_stream;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc::UnboundedSender;
use tokio::time::Instant;

use crate::activities::interests::Stated;
use crate::activities::retrieval::Retrieval;
use crate::assistant::app_tools::AppTools;
use crate::assistant::approvals::{Approvals, PendingApproval};
use crate::assistant::history::{History, Turn};
use crate::assistant::intent::{By, Classifier, Mode};
use crate::assistant::prompt::{Place, instructions};
use crate::assistant::tools::{AGENT, Cited, ToolUse, Toolbox};
use crate::core::clock::Clock;
use crate::core::error::{Error, Result};
use crate::core::records::{HOT_PATH, bounded};
use crate::core::retry::RetryPolicy;
use crate::costs::ledger::Ledger;
use crate::llm::agent::{self, AgentSpec};
use crate::llm::{self, ChatModel, Message};

/// The longest message accepted, in characters.
pub const MAX_MESSAGE_CHARS: usize = 4000;
/// Model requests of one reply, and tool calls.
const REQUEST_LIMIT: u32 = 4;
const TOOL_LIMIT: u32 = 4;
/// Kept back from Lambda's deadline for the hooks and the answer.
const RESERVE: Duration = Duration::from_secs(7);
/// Time box of storing the turn.
const HOOK_TIME: Duration = Duration::from_secs(1);
/// How much longer than a tool call an approval's run is held against a second run.
const APPROVAL_MARGIN: Duration = Duration::from_secs(5);
/// Time box of keeping stated preferences: a read, an embedding, a write.
const REMEMBER_TIME: Duration = Duration::from_millis(2500);

/// `POST /chat`'s body, validated: a message, or the answer to a pending approval.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatInput {
    /// Empty when the input answers an approval.
    pub message: String,
    /// The user's answer to the approval the conversation's last reply asked for.
    pub approval: Option<approvals::Answer>,
    pub conversation_id: Option<String>,
    pub location: Option<(f64, f64)>,
    /// Whether the user's kept place may stand in for a missing `location` (not when the
    /// client sent `location: null`).
    pub kept_place: bool,
    /// Whether this message's `location` is kept as the user's last (not when the client sent
    /// `keepLocation: false`: it is used for this reply only).
    pub keep_location: bool,
    /// The mode the client chose for this message (a button in the app), over the router's.
    pub mode: Option<Mode>,
    /// The client names its conversations (the AI SDK's chat id): an unknown one is started.
    pub client_named: bool,
    /// The client reads the reply as it is written: the model streams.
    pub streamed: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct Body {
    pub(crate) message: Option<String>,
    pub(crate) approval: Option<approvals::Answer>,
    pub(crate) conversation_id: Option<String>,
    /// Absent: not given; `null`: not to be used, nor a kept one.
    #[serde(default, deserialize_with = "given")]
    pub(crate) location: Option<Option<Location>>,
    /// `false`: the location serves this reply and is not kept (default `true`).
    pub(crate) keep_location: Option<bool>,
    pub(crate) mode: Option<Mode>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Location {
    lat: f64,
    lng: f64,
}

/// A field that was given, `null` included (`Some(None)`); an absent one is its default `None`.
pub(crate) fn given<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> std::result::Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

impl ChatInput {
    /// Parses `{message, conversationId?, location?: {lat, lng}, keepLocation?, mode?}`, or `{conversationId,
    /// approval: {id, approved}}`; each mistake names its field.
    pub fn from_json(body: &[u8]) -> Result<Self> {
        Self::checked(crate::core::json::typed_body(body, "invalid_chat")?)
    }

    /// `body` checked part by part; each mistake names its field.
    pub(crate) fn checked(body: Body) -> Result<Self> {
        let message = body.message.as_deref().unwrap_or_default().trim().to_owned();
        match &body.approval {
            None if message.is_empty() || message.chars().count() > MAX_MESSAGE_CHARS => {
                return Err(Error::invalid(
                    "invalid_chat",
                    format!("message must be 1-{MAX_MESSAGE_CHARS} characters"),
                ));
            }
            None => {}
            Some(_) if body.message.is_some() => {
                return Err(Error::invalid("invalid_chat", "send a message or an approval, not both"));
            }
            Some(_) if body.conversation_id.is_none() => {
                return Err(Error::invalid("invalid_chat", "an approval needs the conversationId it was asked in"));
            }
            Some(answer) => answer.check()?,
        }
        if let Some(id) = &body.conversation_id {
            history::check_id(id)?;
        }
        let kept_place = !matches!(body.location, Some(None));
        let location = match body.location.flatten() {
            None => None,
            Some(Location { lat, .. }) if !(-90.0..=90.0).contains(&lat) => {
                return Err(Error::invalid("invalid_chat", "location.lat: -90..90"));
            }
            Some(Location { lng, .. }) if !(-180.0..=180.0).contains(&lng) => {
                return Err(Error::invalid("invalid_chat", "location.lng: -180..180"));
            }
            Some(Location { lat, lng }) => Some((lat, lng)),
        };
        Ok(Self {
            message,
            approval: body.approval,
            conversation_id: body.conversation_id,
            kept_place,
            keep_location: body.keep_location.unwrap_or(true),
            location,
            mode: body.mode,
            client_named: false,
            streamed: false,
        })
    }
}

/// A reply: `{conversationId, mode, by, reply, toolCalls, sources, mock, remembered}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    pub conversation_id: String,
    pub mode: Mode,
    /// What decided the mode.
    pub by: By,
    pub reply: String,
    pub tool_calls: Vec<ToolUse>,
    pub sources: Vec<Cited>,
    /// The reply is the labelled mock model's (no `LLM_API_KEY`).
    pub mock: bool,
    /// Preferences this message stated, now kept in the user's profile.
    pub remembered: Vec<Stated>,
    /// A call of the app's that waits for the user's approval (nothing ran): answer it with
    /// `{conversationId, approval: {id, approved}}`.
    pub pending_approval: Option<PendingApproval>,
}

/// What a reply tells the client as it goes, in this order: `Mode`; then, as the model works,
/// `Text` pieces, and per tool call `ToolStarted` then `Tool`, and a `Source` per web source;
/// last `Done` or `Error`. [`Event::to_sse`] is this API's own event stream; [`ui_stream`] the AI
/// SDK's UI message stream.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Mode {
        conversation_id: String,
        mode: Mode,
        by: By,
    },
    /// A tool call starts: its id within the reply, its tool and arguments.
    ToolStarted {
        id: String,
        name: String,
        input: serde_json::Value,
    },
    /// A tool call ended: what the model was given back.
    Tool {
        id: String,
        used: ToolUse,
        output: serde_json::Value,
    },
    /// A tool call waits for the user's approval (it did not run).
    Approval(PendingApproval),
    /// The user declined a call: it did not run.
    Denied {
        id: String,
        used: ToolUse,
    },
    Text(String),
    Source(Cited),
    Done(Answer),
    Error {
        code: String,
        message: String,
    },
}

impl Event {
    /// The event's name and data in this API's own event stream (`mode`, `tool`, `delta`,
    /// `done`, `error`); `None` for what only the UI message stream carries.
    pub fn named(&self) -> Option<(&'static str, serde_json::Value)> {
        let (name, data) = match self {
            Event::Mode { conversation_id, mode, by } => {
                ("mode", serde_json::json!({"conversationId": conversation_id, "mode": mode, "by": by}))
            }
            Event::Tool { used, .. } | Event::Denied { used, .. } => ("tool", serde_json::json!(used)),
            Event::Approval(pending) => ("approval", serde_json::json!(pending)),
            Event::Text(text) => ("delta", serde_json::json!({"text": text})),
            Event::Done(answer) => ("done", serde_json::json!(answer)),
            Event::Error { code, message } => ("error", serde_json::json!({"code": code, "message": message})),
            Event::ToolStarted { .. } | Event::Source(_) => return None,
        };
        Some((name, data))
    }
}

/// The assistant and what it uses.
pub struct Assistant {
    pub llm: Arc<dyn ChatModel>,
    pub model: String,
    pub ledger: Ledger,
    pub retry: RetryPolicy,
    pub retrieval: Retrieval,
    /// `search_web` (with a Tavily key only).
    pub web: Option<Arc<crate::web::tools::Tools>>,
    pub app: AppTools,
    pub approvals: Approvals,
    pub history: History,
    pub classifier: Classifier,
    /// Who the assistant is (`ASSISTANT_PERSONA`): the first line of every mode's instructions.
    pub persona: String,
    /// Time box of one reply (`ASSISTANT_BUDGET_MS`), and of one tool call.
    pub budget: Duration,
    pub tool_time: Duration,
    pub clock: Arc<dyn Clock>,
}

impl Assistant {
    /// Answers `input` from `user` (the verified caller), telling `events` as it goes (the
    /// model streams its text there; when `events` is closed, the client left and the model is
    /// stopped, what it wrote kept as the turn). `left`:
    /// what Lambda's deadline leaves. Refused before any event (and any model call): an unknown
    /// conversation (404), a store that cannot say which it is (503).
    pub async fn chat(
        &self,
        user: &str,
        input: &ChatInput,
        request_id: &str,
        left: Option<Duration>,
        events: &UnboundedSender<Event>,
    ) -> Result<Answer> {
        crate::core::validate::user_id(user)?;
        let budget = crate::core::deadline::budget(self.budget, left, RESERVE, "the model and its tools");
        let deadline = Instant::now() + budget;
        let now = self.clock.now();
        // 1. Context.
        let (conversation, earlier) = match &input.conversation_id {
            Some(id) => match self.history.recent(user, id, now).await {
                // Conversations are the user's own: a name the client chose starts theirs; an
                // approval is looked up under it whether or not its turn was stored.
                Err(Error::NotFound(_)) if input.client_named || input.approval.is_some() => (id.clone(), Vec::new()),
                read => (id.clone(), read?),
            },
            None => (uuid::Uuid::new_v4().to_string(), Vec::new()),
        };
        // An answer to an approval is taken, once, before anything is spent.
        let taken = match &input.approval {
            Some(_) if Instant::now() + self.tool_time > deadline => {
                return Err(Error::Upstream(format!(
                    "no time is left to run the approved call; please retry (request {request_id})"
                )));
            }
            Some(answer) => {
                let hold = self.tool_time + APPROVAL_MARGIN;
                Some(self.approvals.take(user, &conversation, answer, self.clock.now(), hold).await?)
            }
            None => None,
        };
        // Personal context is a help, never a reason to fail: the stated preferences and the
        // user's place, at once. A location the message gives is kept as their last now, before
        // the model, so a DELETE of their places while it writes is not undone (unless the
        // message says `keepLocation: false`); without one, their last or saved place is read,
        // for EXPLORE only.
        let places = self.retrieval.whereabouts();
        let (stated, known) =
            tokio::join!(bounded(HOT_PATH, "stated preferences", self.retrieval.stated_preferences(user)), async {
                match input.location {
                    Some((lat, lng)) if input.keep_location => {
                        let kept = bounded(HOT_PATH, "keeping the user's location", places.keep_last(user, lat, lng));
                        if let Err(e) = kept.await {
                            tracing::warn!(request_id, error = %e, "the user's location was not kept");
                        }
                        Ok(None)
                    }
                    Some(_) => Ok(None),
                    None if input.kept_place => bounded(HOT_PATH, "the user's kept location", places.known(user)).await,
                    None => Ok(None),
                }
            });
        let stated = stated.unwrap_or_default();
        let known = known.unwrap_or_else(|e| {
            tracing::warn!(request_id, error = %e, "searching without the user's kept location");
            None
        });
        // 2. Intent.
        let (mode, by) = match &taken {
            // The mode of the reply that asked: its tools are the ones the call needs.
            Some(taken) => (taken.mode, By::Approval),
            None => {
                let previous = earlier.last().map(|t| t.mode);
                self.classifier.classify(&input.message, previous, input.mode, request_id).await
            }
        };
        tracing::info!(request_id, mode = mode.as_str(), ?by, "assistant mode");
        let _ = events.send(Event::Mode { conversation_id: conversation.clone(), mode, by });
        let place = match (input.location, &known) {
            (Some(given), _) => Some(Place::Given(given)),
            (None, Some((kept, kind, at))) if mode == Mode::Explore => Some(Place::Kept(kept, *kind, *at)),
            _ => None,
        };
        let location = place.as_ref().map(Place::coordinates);
        // 3. Mode: prompt and tools.
        let instructions =
            instructions(&self.persona, mode, place.as_ref(), &stated, now, self.retrieval.ranking().zone);
        let toolbox = Toolbox {
            mode,
            retrieval: &self.retrieval,
            web: self.web.as_deref(),
            app: &self.app,
            approvals: &self.approvals,
            pending: Mutex::default(),
            now,
            user,
            conversation: &conversation,
            location,
            request_id,
            events,
            deadline,
            tool_time: self.tool_time,
            used: Mutex::default(),
            sources: Mutex::default(),
            started: Default::default(),
        };
        // 4. The model.
        let spec = AgentSpec {
            name: AGENT,
            model: &self.model,
            instructions: &instructions,
            output: None,
            request_limit: REQUEST_LIMIT,
            tool_limit: TOOL_LIMIT,
            output_retries: 0,
            deadline: Some(deadline),
        };
        let mut messages: Vec<Message> = Vec::new();
        for turn in &earlier {
            messages.push(Message::User(turn.user.clone()));
            messages.push(Message::Assistant { content: Some(turn.assistant.clone()), tool_calls: Vec::new() });
        }
        let said = match &taken {
            None => {
                messages.push(Message::User(input.message.clone()));
                input.message.clone()
            }
            // The call the user answered, as the model made it, and what came of it.
            Some(taken) => {
                let (result, done) = toolbox.answer_approval(taken).await;
                self.approvals.settle(user, &conversation, taken, done, self.clock.now(), request_id).await;
                let call = &taken.pending;
                messages.push(Message::Assistant {
                    content: None,
                    tool_calls: vec![llm::ToolCall {
                        id: call.tool_call_id.clone(),
                        name: call.tool.clone(),
                        arguments: call.arguments.to_string(),
                    }],
                });
                messages.push(Message::Tool { call_id: call.tool_call_id.clone(), content: result });
                format!("[{} {}]", if taken.approved { "approved" } else { "declined" }, call.tool)
            }
        };
        let text = |piece: &str| events.send(Event::Text(piece.to_owned())).is_ok();
        let text = input.streamed.then_some(&text as llm::TextSink<'_>);
        let replied =
            agent::converse(&*self.llm, &self.ledger, self.retry, &spec, messages, &toolbox, request_id, text)
                .await
                .map_err(|e| e.answer(request_id));
        let reply = match (replied, &taken) {
            (Ok(reply), _) => reply,
            // The approved call already ran (or was declined): its outcome is answered and kept
            // even when the model cannot write about it, since the approval is used up.
            (Err(e), Some(taken)) => {
                tracing::warn!(request_id, error = %e, "no reply written for an answered approval");
                let outcome = match toolbox.used.lock().expect("not poisoned").last() {
                    Some(used) if used.ok && taken.approved => "ran",
                    _ if !taken.approved => "was declined",
                    _ => "failed",
                };
                format!("[{} {outcome}; the assistant could not write a reply ({})]", taken.pending.tool, e.code())
            }
            (Err(e), None) => return Err(e),
        };
        // 5. Hooks.
        let turn = Turn { user: said, assistant: reply.clone(), mode, at: self.clock.now() };
        if let Err(e) = bounded(HOOK_TIME, "storing the turn", self.history.append(user, &conversation, &turn)).await {
            tracing::error!(request_id, error = %e, "the turn was not stored");
        }
        let remembered = self.remember(user, &input.message, request_id).await;
        let pending_approval = toolbox.pending.into_inner().expect("not poisoned");
        let (tool_calls, sources) = (toolbox.used.into_inner(), toolbox.sources.into_inner());
        Ok(Answer {
            conversation_id: conversation,
            mode,
            by,
            reply,
            tool_calls: tool_calls.expect("not poisoned"),
            sources: sources.expect("not poisoned"),
            mock: self.llm.is_mock(),
            remembered,
            pending_approval,
        })
    }

    /// The preferences `message` states, kept in `user`'s profile; what was kept.
    async fn remember(&self, user: &str, message: &str, request_id: &str) -> Vec<Stated> {
        let new = preferences::extract(message);
        if new.is_empty() {
            return new;
        }
        match bounded(REMEMBER_TIME, "keeping stated preferences", self.retrieval.remember(user, &new, request_id))
            .await
        {
            Ok(()) => new,
            Err(e) => {
                tracing::warn!(request_id, error = %e, "stated preferences not kept");
                Vec::new()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chat_body_is_checked_field_by_field() {
        let ok = ChatInput::from_json(br#"{"message": " hi ", "location": {"lat": 31.2, "lng": 121.5}}"#).unwrap();
        assert_eq!((ok.message.as_str(), ok.location, ok.mode), ("hi", Some((31.2, 121.5)), None));
        let opted_out = ChatInput::from_json(br#"{"message": "hi", "location": null}"#).unwrap();
        assert_eq!((opted_out.location, opted_out.kept_place, ok.kept_place), (None, false, true));
        let unkept =
            ChatInput::from_json(br#"{"message": "hi", "location": {"lat": 1, "lng": 2}, "keepLocation": false}"#)
                .unwrap();
        assert_eq!((unkept.location, unkept.keep_location, ok.keep_location), (Some((1.0, 2.0)), false, true));
        let asked = ChatInput::from_json(br#"{"message": "hi", "mode": "CREATE"}"#).unwrap();
        assert_eq!(asked.mode, Some(Mode::Create));
        for (body, says) in [
            (r#"{"message": ""}"#, "message"),
            (r#"{"message": "x", "extra": 1}"#, "extra"),
            (r#"{"message": "x", "conversationId": "../x"}"#, "conversationId"),
            (r#"{"message": "x", "location": {"lat": 91, "lng": 0}}"#, "lat"),
            (r#"{"message": "x", "mode": "SHOP"}"#, "mode"),
            (r#"{}"#, "message"),
        ] {
            let e = ChatInput::from_json(body.as_bytes()).unwrap_err();
            assert_eq!(e.status(), 400, "{body}");
            assert!(e.to_string().contains(says), "{body}: {e}");
        }
    }
}
