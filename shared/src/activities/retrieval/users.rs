//! What a user tells retrieval: attended activities ([`Retrieval::feedback`]), the preferences
//! they set or stated in conversation, each embedded once when the embedder answers.

use serde_json::Value;

use super::Retrieval;
use crate::activities::interests::{self, Stated};
use crate::core::error::{Error, Result};

/// Reads of a user's preferences one `remember` makes while other writes come between.
const REMEMBER_TRIES: usize = 3;

impl Retrieval {
    /// Records that `user` took part in an activity (`{activityId, satisfied}`) and refreshes
    /// the user's kept vectors.
    pub async fn feedback(&self, user: &str, body: &Value) -> Result<Value> {
        self.interests.feedback(&*self.index, user, body).await
    }

    /// Stores a user's preferences, embedded once when the embedder answers.
    pub async fn set_preferences(&self, user: &str, body: &Value, request_id: &str) -> Result<Value> {
        crate::core::validate::user_id(user)?;
        let (preferences, text) = interests::preferences(body)?;
        let (vector, reason) = match self.embed(&[text], request_id).await {
            Ok(mut v) => (v.pop(), None),
            Err(reason) => (None, Some(reason)),
        };
        self.interests.set_preferences(user, &preferences, vector.as_deref()).await?;
        let mut out = serde_json::json!({"userId": user, "preferences": preferences, "embedded": vector.is_some()});
        if let Some(reason) = reason {
            out["reason"] = reason.into();
        }
        Ok(out)
    }

    /// Where `user` was and what place they saved ([`crate::activities::whereabouts`]).
    pub fn whereabouts(&self) -> crate::activities::whereabouts::Whereabouts {
        self.interests.whereabouts()
    }

    /// The preferences `user` stated in conversation.
    pub async fn stated_preferences(&self, user: &str) -> Result<Vec<Stated>> {
        let profile = self.interests.preferences(user).await?;
        Ok(profile.map(|(p, _)| interests::stated(&p)).unwrap_or_default())
    }

    /// Keeps what `user` stated (`new`) merged into their preferences as they are when written
    /// (never over a write that came between: up to [`REMEMBER_TRIES`] reads) and embeds them
    /// again; when the
    /// embedder does not answer (or nothing is liked) the stored vector stays as it was.
    pub async fn remember(&self, user: &str, new: &[Stated], request_id: &str) -> Result<()> {
        crate::core::validate::user_id(user)?;
        // Read, merge, write only if nothing was written meanwhile (another message's
        // `remember`, a PUT), else read again: two messages stating at once both keep theirs.
        let mut embedded: Option<(String, Option<Vec<f32>>)> = None;
        for _ in 0..REMEMBER_TRIES {
            let stored = self.interests.preferences_rev(user).await?;
            let rev = stored.as_ref().map(|(_, _, rev)| *rev);
            let (old, old_vector) = stored.map(|(p, v, _)| (p, v)).unzip();
            let (preferences, text) = interests::with_stated(old, new);
            let vector = match text {
                // The same text as the last try: its vector is already made.
                Some(text) if embedded.as_ref().is_some_and(|(t, _)| *t == text) => {
                    embedded.as_ref().and_then(|(_, v)| v.clone())
                }
                Some(text) => {
                    let v =
                        self.embed(std::slice::from_ref(&text), request_id).await.map(|mut v| v.pop()).unwrap_or_else(
                            |reason| {
                                tracing::warn!(%reason, "stated preferences kept with their previous vector");
                                None
                            },
                        );
                    embedded = Some((text, v.clone()));
                    v
                }
                None => None,
            };
            let vector = vector.or(old_vector.flatten());
            if self.interests.set_preferences_if(user, &preferences, vector.as_deref(), rev).await? {
                return Ok(());
            }
        }
        Err(Error::Store(format!("{user}'s preferences kept changing; stated preferences not kept")))
    }
}
