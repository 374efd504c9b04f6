//! Approvals of the app's tools with side effects (`"approval": true` in `ASSISTANT_TOOLS`):
//! when the model calls one, nothing runs. The reply carries a pending approval, and the call
//! runs only when that user approves that exact call.
//!
//! A pending approval is a record under the user's conversation (`CHAT#<user>#<conversation>` /
//! `APPROVAL#<id>`): the tool, its arguments as they will be sent, the tool call's id, the
//! mode, when it expires ([`TTL`]); its records live as long as the conversation's turns, so a
//! replay is answered with a 409 as long as the conversation can be read. The id is random (122 bits) and the key holds the user and
//! the conversation, so an answer from another user or conversation finds nothing (404). An
//! answer is taken once: `APPROVAL#<id>#RUN` is claimed for as long as the tool may run, and
//! `APPROVAL#<id>#DONE` is written when it ran or was declined; a replay is a 409. The app
//! receives `Idempotency-Key: approval-<id>` ([`PendingApproval::idempotency_key`]): a retry
//! after a call that failed, or after an invocation that died mid-call (its claim lapses), sends
//! the same key, so the app applies the call once.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::assistant::intent::Mode;
use crate::core::error::{Error, Result};
use crate::core::records::{Record, RecordStore};

/// Tries, and the time box of each, of marking an approval's run ended.
const SETTLE_TRIES: usize = 3;
const SETTLE_TIME: Duration = Duration::from_secs(1);
/// How long the user has to answer.
pub const TTL: Duration = Duration::from_secs(15 * 60);

/// A call waiting for its user's answer: what the client shows and answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingApproval {
    /// The approval's id, the one the answer names.
    pub id: String,
    /// The tool call it holds back (the AI SDK's `toolCallId`).
    pub tool_call_id: String,
    pub tool: String,
    /// The arguments the tool will receive, exactly.
    pub arguments: Value,
    pub expires_at: DateTime<Utc>,
}

impl PendingApproval {
    /// The `Idempotency-Key` of the approved call: the same for every retry of it.
    pub fn idempotency_key(&self) -> String {
        format!("approval-{}", self.id)
    }
}

/// A user's answer to a pending approval.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    pub id: String,
    pub approved: bool,
    /// The tool call the client shows with it (the AI SDK's part), checked against the stored
    /// one.
    #[serde(skip)]
    pub tool_call_id: Option<String>,
}

impl Answer {
    /// Refuses an id that is not one this module could have made.
    pub fn check(&self) -> Result<()> {
        if !crate::core::validate::is_id(&self.id, 64) {
            return Err(Error::invalid("invalid_chat", "approval.id must be 1-64 letters, digits, '-' or '_'"));
        }
        Ok(())
    }
}

/// What is stored of a pending approval.
#[derive(Serialize, Deserialize)]
struct Stored {
    #[serde(flatten)]
    pending: PendingApproval,
    mode: Mode,
}

/// An approval taken for its one run: settle it with [`Approvals::settle`].
#[derive(Debug, Clone)]
pub struct Taken {
    pub pending: PendingApproval,
    /// The mode of the reply that asked.
    pub mode: Mode,
    pub approved: bool,
}

/// Pending approvals in the record store.
#[derive(Clone)]
pub struct Approvals {
    records: Arc<dyn RecordStore>,
    /// How long its records are kept: the conversation's turns' life.
    kept: i64,
}

fn pk(user: &str, conversation: &str) -> String {
    format!("CHAT#{user}#{conversation}")
}

fn sk(id: &str, suffix: &str) -> String {
    format!("APPROVAL#{id}{suffix}")
}

impl Approvals {
    /// Approvals whose records are kept `kept` (the conversation's turns' life).
    pub fn new(records: Arc<dyn RecordStore>, kept: Duration) -> Self {
        Self { records, kept: i64::try_from(kept.as_secs()).unwrap_or(i64::MAX / 4) }
    }

    /// Keeps `pending`, asked in `mode` of `user`'s `conversation`.
    pub async fn ask(&self, user: &str, conversation: &str, pending: &PendingApproval, mode: Mode) -> Result<()> {
        let stored = Stored { pending: pending.clone(), mode };
        self.records
            .put(&Record {
                pk: pk(user, conversation),
                sk: sk(&pending.id, ""),
                expires_at: Some(pending.expires_at.timestamp() + self.kept),
                body: serde_json::to_value(&stored).expect("an approval serialises"),
            })
            .await
    }

    /// Takes `answer` of `user` in `conversation` for its one run, claimed from `now` (the
    /// moment of the claim) for `hold` (the longest the tool may take). Refused: unknown here
    /// (404), expired, not the call the client shows, already answered, or being run (409).
    ///
    /// The run is claimed before the used-up mark is read: a run that claims after another
    /// ended always sees its mark (written before that run's claim lapses).
    pub async fn take(
        &self,
        user: &str,
        conversation: &str,
        answer: &Answer,
        now: DateTime<Utc>,
        hold: Duration,
    ) -> Result<Taken> {
        answer.check()?;
        let (pk, at) = (pk(user, conversation), now.timestamp());
        let not_here = || Error::NotFound(format!("no approval {} is waiting in this conversation", answer.id));
        let record = self.records.get(&pk, &sk(&answer.id, ""), at).await?.ok_or_else(not_here)?;
        let Stored { pending, mode } = serde_json::from_value(record.body)
            .map_err(|e| Error::Store(format!("approval {} cannot be read: {e}", answer.id)))?;
        let conflict =
            |code: &'static str, why: &str| Error::Conflict { code, message: format!("approval {} {why}", answer.id) };
        if answer.tool_call_id.as_ref().is_some_and(|shown| *shown != pending.tool_call_id) {
            return Err(conflict("approval_mismatch", "is for another tool call than the one answered"));
        }
        let used = || async {
            let done = self.records.get(&pk, &sk(&answer.id, "#DONE"), at).await?;
            Ok::<_, Error>(done.is_some())
        };
        if pending.expires_at <= now {
            return Err(if used().await? {
                conflict("approval_used", "was already answered; it is used once")
            } else {
                conflict("approval_expired", &format!("expired at {}; ask again", pending.expires_at.to_rfc3339()))
            });
        }
        let hold = i64::try_from(hold.as_secs()).unwrap_or(i64::MAX / 4) + 1;
        let claim =
            Record { pk: pk.clone(), sk: sk(&answer.id, "#RUN"), expires_at: Some(at + hold), body: Value::Null };
        let claimed = self.records.put_new(&claim, at).await?;
        if used().await? {
            return Err(conflict("approval_used", "was already answered; it is used once"));
        }
        if !claimed {
            return Err(conflict("approval_in_progress", "is being run; wait for its answer"));
        }
        Ok(Taken { pending, mode, approved: answer.approved })
    }

    /// Ends `taken`'s run: `done` (it ran, or was declined) uses the approval up; otherwise (the
    /// tool failed) the claim is given back, so the user may approve again, with the same key.
    /// The mark is tried [`SETTLE_TRIES`] times, each within [`SETTLE_TIME`]; one never stored is
    /// logged as an error (`approval_not_settled`): its claim lapses, and a later answer would
    /// run the call again with the same `Idempotency-Key`.
    pub async fn settle(
        &self,
        user: &str,
        conversation: &str,
        taken: &Taken,
        done: bool,
        now: DateTime<Utc>,
        request_id: &str,
    ) {
        let (pk, id, at) = (pk(user, conversation), &taken.pending.id, now.timestamp());
        let record = if done {
            Record {
                pk,
                sk: sk(id, "#DONE"),
                expires_at: Some(at + self.kept),
                body: serde_json::json!({"approved": taken.approved, "at": now}),
            }
        } else {
            Record { pk, sk: sk(id, "#RUN"), expires_at: Some(at), body: Value::Null }
        };
        let mut last = None;
        for _ in 0..SETTLE_TRIES {
            match crate::core::records::bounded(SETTLE_TIME, "settling an approval", self.records.put(&record)).await {
                Ok(()) => return,
                Err(e) => last = Some(e),
            }
        }
        let error = last.map(|e| e.to_string()).unwrap_or_default();
        tracing::error!(request_id, approval = %id, done, %error, code = "approval_not_settled", "an approval was not settled");
    }
}
