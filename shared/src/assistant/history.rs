//! Conversations in the record store: one record per turn (`CHAT#<user>#<conversation>` /
//! `T#<micros>`), each living `ASSISTANT_HISTORY_TTL_DAYS` after it was written. The user is
//! part of the key, so another user's conversation id finds nothing (404) and no read can reach
//! it; a read fetches only the newest turns sent to the model.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::assistant::intent::Mode;
use crate::core::error::{Error, Result};
use crate::core::records::{Record, RecordStore};

/// One exchange: what the user said and what the assistant answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    pub user: String,
    pub assistant: String,
    pub mode: Mode,
    pub at: DateTime<Utc>,
}

/// Conversations kept in a record store.
#[derive(Clone)]
pub struct History {
    records: Arc<dyn RecordStore>,
    ttl: Duration,
    /// Turns read back (the newest), and so sent to the model.
    turns: usize,
}

fn pk(user: &str, conversation: &str) -> String {
    format!("CHAT#{user}#{conversation}")
}

/// Refuses a conversation id that is not 1-64 letters, digits, '-' or '_'.
pub fn check_id(conversation: &str) -> Result<()> {
    if !crate::core::validate::is_id(conversation, 64) {
        return Err(Error::invalid(
            "invalid_conversation_id",
            "conversationId must be 1-64 letters, digits, '-' or '_'",
        ));
    }
    Ok(())
}

impl History {
    /// Turns kept for `ttl` after they are written; the newest `turns` are read back.
    pub fn new(records: Arc<dyn RecordStore>, ttl: Duration, turns: usize) -> Self {
        Self { records, ttl, turns }
    }

    /// The newest turns of `user`'s `conversation`, oldest first; `NotFound` when it has none
    /// live (unknown, expired, or another user's).
    pub async fn recent(&self, user: &str, conversation: &str, now: DateTime<Utc>) -> Result<Vec<Turn>> {
        check_id(conversation)?;
        let rows = self.records.latest(&pk(user, conversation), "T#", "T#~", self.turns, now.timestamp()).await?;
        if rows.is_empty() {
            return Err(Error::NotFound(format!("no conversation {conversation} (unknown or expired)")));
        }
        let mut turns: Vec<Turn> = rows.into_iter().filter_map(|r| serde_json::from_value(r.body).ok()).collect();
        turns.sort_by_key(|t| t.at);
        Ok(turns)
    }

    /// The newest `count` turns of `user`'s `conversation` (at most 50), oldest first; as
    /// [`Self::recent`].
    pub async fn last(&self, user: &str, conversation: &str, count: usize, now: DateTime<Utc>) -> Result<Vec<Turn>> {
        Self { turns: count.clamp(1, 50), ..self.clone() }.recent(user, conversation, now).await
    }

    /// Stores `turn` of `user`'s `conversation`.
    pub async fn append(&self, user: &str, conversation: &str, turn: &Turn) -> Result<()> {
        let expires = turn.at.timestamp() + i64::try_from(self.ttl.as_secs()).unwrap_or(i64::MAX / 2);
        let record = Record {
            pk: pk(user, conversation),
            sk: format!("T#{:020}", turn.at.timestamp_micros()),
            expires_at: Some(expires),
            body: serde_json::to_value(turn).expect("a turn serialises"),
        };
        self.records.put(&record).await
    }
}
