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
    /// the user's kept vectors (what they liked, what they turned down).
    pub async fn feedback(&self, user: &str, body: &Value) -> Result<Value> {
        self.interests.feedback(&*self.index, user, body).await
    }

    /// `GET /users/{userId}/preferences`: what the user set and stated, and turned down.
    pub async fn preferences(&self, user: &str) -> Result<Value> {
        self.interests.shown(user).await
    }

    /// `DELETE /users/{userId}/preferences/dislikes`: what they turned down and stated disliking
    /// no longer counts against an activity.
    pub async fn clear_dislikes(&self, user: &str) -> Result<Value> {
        self.interests.clear_dislikes(user).await
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
        // What was embedded on the last try: its texts (likes, dislikes) and vectors.
        type Made = ((Option<String>, Option<String>), (Option<Vec<f32>>, Option<Vec<f32>>));
        let mut embedded: Option<Made> = None;
        for _ in 0..REMEMBER_TRIES {
            let stored = self.interests.preferences_rev(user).await?;
            let rev = stored.as_ref().map(|(_, _, _, rev)| *rev);
            let old_dislikes =
                stored.as_ref().and_then(|(p, _, d, _)| Some((interests::dislikes_text(p)?, d.clone()?)));
            let (old, old_vector) = stored.map(|(p, v, _, _)| (p, v)).unzip();
            let (preferences, text) = interests::with_stated(old, new);
            let texts = (text, interests::dislikes_text(&preferences));
            let (vector, dislikes) = match &embedded {
                // The same texts as the last try: their vectors are already made.
                Some((made, vectors)) if *made == texts => vectors.clone(),
                _ => {
                    let inputs: Vec<String> = [&texts.0, &texts.1].into_iter().flatten().cloned().collect();
                    let mut vectors = match inputs.is_empty() {
                        true => Vec::new(),
                        false => self.embed(&inputs, request_id).await.unwrap_or_else(|reason| {
                            tracing::warn!(%reason, "stated preferences kept with their previous vector, dislikes without one");
                            Vec::new()
                        }),
                    }
                    .into_iter();
                    let made =
                        (texts.0.as_ref().and_then(|_| vectors.next()), texts.1.as_ref().and_then(|_| vectors.next()));
                    embedded = Some((texts.clone(), made.clone()));
                    made
                }
            };
            let vector = vector.or(old_vector.flatten());
            // Dislikes not embedded now keep their vector while their text is the same.
            let dislikes =
                dislikes.or_else(|| old_dislikes.filter(|(t, _)| Some(t) == texts.1.as_ref()).map(|(_, d)| d));
            if self
                .interests
                .set_preferences_if(user, &preferences, (vector.as_deref(), dislikes.as_deref()), rev)
                .await?
            {
                return Ok(());
            }
        }
        Err(Error::Store(format!("{user}'s preferences kept changing; stated preferences not kept")))
    }
}
