//! User interest vectors (seed 004 Requirement 6): MaxSim, never an average.
//!
//! `POST /users/{userId}/feedback` records a participation (`{activityId, satisfied}`). Once a
//! user has [`MIN_SATISFIED`] or more satisfied participations, the dense vectors of the
//! [`KEEP`] most recent satisfied activities are kept for them (record `USER#<id>` /
//! `INTERESTS`), each as it is: an average of a loud and a quiet activity would be a lukewarm
//! point that matches neither. A user without that history may state preferences (`PUT
//! /users/{userId}/preferences`: tags, vibes, free text), embedded once and used the same way.
//!
//! A candidate's MaxSim is its highest cosine to any kept vector; its score is boosted by at
//! most 20 %: `score × (1 + 0.2 × max(0, MaxSim))`. The sum is computed here, on both index
//! adapters alike (Qdrant's formula query could do it server-side, but Qdrant Edge 0.7 and the
//! server would then rank by different code).

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::activities::index::{VectorIndex, point_id};
use crate::activities::user_pk as pk;
use crate::core::clock::Clock;
use crate::core::error::{Error, Result};
use crate::core::records::{REV, Record, RecordStore};

/// Satisfied participations before history replaces preferences.
pub const MIN_SATISFIED: usize = 3;
/// Vectors kept per user.
pub const KEEP: usize = 3;

/// Participations kept per user: the newest (older ones are overwritten).
pub const FEEDBACK_KEPT: i64 = 50;
/// How long a participation counts.
const FEEDBACK_TTL_SECS: i64 = 400 * 86_400;
/// Sort-key prefix of the participation slots, and the counter that numbers them.
const FEEDBACK: &str = "FB#";
const FEEDBACK_SEQ: &str = "FBSEQ";

const INTERESTS: &str = "INTERESTS";
const PREFERENCES: &str = "PREFERENCES";

/// Where a user's vectors come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    History,
    Preferences,
    None,
    /// The store did not answer in time: ranked without personalisation.
    Unavailable,
}

#[derive(Clone)]
pub struct Interests {
    records: Arc<dyn RecordStore>,
    clock: Arc<dyn Clock>,
}

impl Interests {
    /// A user's interests kept in `records`.
    pub fn new(records: Arc<dyn RecordStore>, clock: Arc<dyn Clock>) -> Self {
        Self { records, clock }
    }

    /// Records a participation and refreshes the kept vectors. The activity must be indexed.
    pub async fn feedback(&self, index: &dyn VectorIndex, user: &str, body: &Value) -> Result<Value> {
        crate::core::validate::user_id(user)?;
        let Feedback { activity_id, satisfied } = crate::core::json::typed(body, "invalid_feedback")?;
        if activity_id.is_empty() || activity_id.len() > 128 {
            return Err(Error::invalid("invalid_feedback", "activityId must be 1-128 characters"));
        }
        let activity_id = activity_id.as_str();
        if index.get(&[point_id(activity_id)], false).await?.iter().all(|s| s.is_tombstone()) {
            return Err(Error::NotFound(format!("activity {activity_id:?} is not indexed")));
        }
        let now = self.clock.now();
        // A ring of FEEDBACK_KEPT slots, numbered by a counter: storage and every read stay
        // bounded however often a user posts.
        let expires = now.timestamp() + FEEDBACK_TTL_SECS;
        let seq = self.records.add(&pk(user), FEEDBACK_SEQ, 1, None, expires).await?.unwrap_or(0);
        let sk = format!("{FEEDBACK}{:02}", seq.rem_euclid(FEEDBACK_KEPT));
        let record = json!({"seq": seq, "activityId": activity_id, "satisfied": satisfied, "at": now.to_rfc3339()});
        self.records.put(&Record { pk: pk(user), sk, expires_at: Some(expires), body: record }).await?;

        let end = format!("{FEEDBACK}~");
        let mut history = self.records.query(&pk(user), FEEDBACK, &end, now.timestamp()).await?;
        history.sort_by_key(|r| r.body["seq"].as_i64().unwrap_or(0));
        let mut recent: Vec<String> = Vec::new();
        for r in history.iter().rev().filter(|r| r.body["satisfied"] == true) {
            if let Some(id) = r.body["activityId"].as_str()
                && !recent.iter().any(|x| x == id)
            {
                recent.push(id.to_owned());
            }
        }
        let mut kept = 0;
        if recent.len() >= MIN_SATISFIED {
            let ids: Vec<_> = recent.iter().take(KEEP).map(|id| point_id(id)).collect();
            let stored = index.get(&ids, true).await?.into_iter().filter(|s| !s.is_tombstone());
            let (activity_ids, vectors): (Vec<String>, Vec<Vec<f32>>) = stored
                .into_iter()
                .filter_map(|s| {
                    let id = s.payload.get("id").and_then(Value::as_str)?.to_owned();
                    Some((id, s.dense?))
                })
                .unzip();
            kept = vectors.len();
            let body = json!({"activityIds": activity_ids, "vectors": vectors, "updatedAt": now.to_rfc3339()});
            self.records.put(&Record { pk: pk(user), sk: INTERESTS.into(), expires_at: None, body }).await?;
        }
        Ok(json!({"userId": user, "activityId": activity_id, "satisfied": satisfied,
                  "satisfiedActivities": recent.len(), "interestVectors": kept}))
    }

    /// The user's kept places (`USER#<id>` / `LOCATION#...`), in the same store.
    pub fn whereabouts(&self) -> crate::activities::whereabouts::Whereabouts {
        crate::activities::whereabouts::Whereabouts::new(Arc::clone(&self.records), Arc::clone(&self.clock))
    }

    /// Stores preferences and, when given, their vector.
    pub async fn set_preferences(&self, user: &str, preferences: &Value, vector: Option<&[f32]>) -> Result<()> {
        // A revision no merge read before: a `remember` running meanwhile reads again.
        let rev = self.clock.now().timestamp_micros();
        self.records.put(&self.preferences_record(user, preferences, vector, rev)).await
    }

    /// Writes the preferences only if they are still at `rev` (`None`: none stored), as the
    /// next revision; false when another write came between.
    pub async fn set_preferences_if(
        &self,
        user: &str,
        preferences: &Value,
        vector: Option<&[f32]>,
        rev: Option<i64>,
    ) -> Result<bool> {
        let record = self.preferences_record(user, preferences, vector, rev.unwrap_or(0) + 1);
        self.records.put_if(&record, rev, self.clock.now().timestamp()).await
    }

    fn preferences_record(&self, user: &str, preferences: &Value, vector: Option<&[f32]>, rev: i64) -> Record {
        let body = json!({"preferences": preferences, "vector": vector, "updatedAt": self.clock.now().to_rfc3339(),
                          REV: rev});
        Record { pk: pk(user), sk: PREFERENCES.into(), expires_at: None, body }
    }

    /// The user's vectors: kept history first, else embedded preferences, else none.
    pub async fn vectors(&self, user: &str) -> Result<(Vec<Vec<f32>>, Source)> {
        let now = self.clock.now().timestamp();
        let parse = |v: &Value| -> Vec<Vec<f32>> {
            serde_json::from_value::<Vec<Vec<f32>>>(v.clone())
                .unwrap_or_default()
                .into_iter()
                .filter(|v| !v.is_empty())
                .collect()
        };
        if let Some(r) = self.records.get(&pk(user), INTERESTS, now).await? {
            let vectors = parse(&r.body["vectors"]);
            if !vectors.is_empty() {
                return Ok((vectors, Source::History));
            }
        }
        if let Some(r) = self.records.get(&pk(user), PREFERENCES, now).await?
            && r.body["vector"].is_array()
        {
            return Ok((parse(&json!([r.body["vector"]])), Source::Preferences));
        }
        Ok((Vec::new(), Source::None))
    }
}

/// A preference a user stated in conversation ("喜欢安静的", "不要太贵"), kept with their
/// preferences (the newest [`STATED_KEPT`]): what they like is embedded with the rest, what
/// they do not is told to the assistant.
#[derive(Debug, Clone, PartialEq, serde::Serialize, Deserialize)]
pub struct Stated {
    pub text: String,
    pub likes: bool,
}

/// Stated preferences kept per user.
pub const STATED_KEPT: usize = 10;

impl Interests {
    /// The user's stored preferences (`{tags, vibes, text, stated}`) and their vector, if any.
    pub async fn preferences(&self, user: &str) -> Result<Option<(Value, Option<Vec<f32>>)>> {
        Ok(self.preferences_rev(user).await?.map(|(p, v, _)| (p, v)))
    }

    /// [`Interests::preferences`] and their revision, to write back with
    /// [`Interests::set_preferences_if`].
    pub async fn preferences_rev(&self, user: &str) -> Result<Option<(Value, Option<Vec<f32>>, i64)>> {
        let now = self.clock.now().timestamp();
        let record = self.records.get(&pk(user), PREFERENCES, now).await?;
        Ok(record.map(|r| {
            let vector = serde_json::from_value(r.body["vector"].clone()).ok();
            (r.body["preferences"].clone(), vector, r.body[REV].as_i64().unwrap_or(0))
        }))
    }
}

/// The stated preferences in stored `preferences`.
pub fn stated(preferences: &Value) -> Vec<Stated> {
    serde_json::from_value(preferences["stated"].clone()).unwrap_or_default()
}

/// `preferences` with `new` stated ones first (a restatement moves to the front), at most
/// [`STATED_KEPT`], and the text to embed: tags, vibes, text and likes (`None`: nothing to embed).
pub fn with_stated(preferences: Option<Value>, new: &[Stated]) -> (Value, Option<String>) {
    let mut preferences = preferences.filter(Value::is_object).unwrap_or_else(|| json!({}));
    let mut kept: Vec<Stated> = new.to_vec();
    kept.extend(stated(&preferences).into_iter().filter(|old| !new.iter().any(|n| n.text == old.text)));
    kept.truncate(STATED_KEPT);
    preferences["stated"] = json!(kept);
    let list = |key: &str| -> Vec<String> {
        preferences[key].as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_owned).collect()
    };
    let (tags, vibes) = (list("tags"), list("vibes"));
    let likes: Vec<&str> = kept.iter().filter(|s| s.likes).map(|s| s.text.as_str()).collect();
    let text = preferences["text"].as_str().unwrap_or_default();
    if likes.is_empty() && tags.is_empty() && vibes.is_empty() && text.is_empty() {
        return (preferences, None);
    }
    let embedded =
        format!("标签: {}\n氛围: {}\n偏好: {} {}", tags.join(", "), vibes.join("、"), text, likes.join("；"));
    (preferences, Some(embedded))
}

/// `POST /users/{userId}/feedback`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Feedback {
    activity_id: String,
    satisfied: bool,
}

/// `PUT /users/{userId}/preferences`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Preferences {
    #[serde(default)]
    tags: Option<Vec<String>>,
    #[serde(default)]
    vibes: Option<Vec<String>>,
    #[serde(default)]
    text: Option<String>,
}

/// Validated preferences (`{tags?: [..], vibes?: [..], text?}`) and the text to embed.
pub fn preferences(body: &Value) -> Result<(Value, String)> {
    let stated: Preferences = crate::core::json::typed(body, "invalid_preferences")?;
    let list = |key: &str, items: Option<Vec<String>>| -> Result<Vec<String>> {
        let items = items.unwrap_or_default();
        if items.len() > 20 {
            return Err(Error::invalid("invalid_preferences", format!("{key}: a list of at most 20 strings")));
        }
        items
            .into_iter()
            .map(|s| {
                let s = s.trim();
                if s.is_empty() || s.chars().count() > 30 {
                    return Err(Error::invalid("invalid_preferences", format!("{key}: strings of 1 to 30 characters")));
                }
                Ok(s.to_owned())
            })
            .collect()
    };
    let (tags, vibes) = (list("tags", stated.tags)?, list("vibes", stated.vibes)?);
    let text = stated.text.unwrap_or_default().trim().to_owned();
    if text.chars().count() > 500 {
        return Err(Error::invalid("invalid_preferences", "text: a string of at most 500 characters"));
    }
    if tags.is_empty() && vibes.is_empty() && text.is_empty() {
        return Err(Error::invalid("invalid_preferences", "give at least one of tags, vibes, text"));
    }
    let embedded = format!("标签: {}\n氛围: {}\n偏好: {}", tags.join(", "), vibes.join("、"), text);
    Ok((json!({"tags": tags, "vibes": vibes, "text": text}), embedded))
}
