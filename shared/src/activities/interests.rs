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
//!
//! What a user turned down (`satisfied: false`, the newest [`NEGATIVES_KEPT`] not satisfied
//! since) is never recommended again, and its vector, with the stated dislikes' vector, pushes
//! similar activities down ([`crate::activities::ranking::pushed_down`]). `GET
//! /users/{userId}/preferences` shows them; `DELETE /users/{userId}/preferences/dislikes`
//! clears both (a watermark on the feedback ring: what was posted before it no longer counts).

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

/// Turned-down activities kept per user as negatives: the newest.
pub const NEGATIVES_KEPT: usize = 5;
/// Writes of the kept vectors one feedback makes while other writes come between.
const WRITE_TRIES: usize = 3;

/// Participations kept per user: the newest (older ones are overwritten).
pub const FEEDBACK_KEPT: i64 = 50;
/// How long a participation counts.
const FEEDBACK_TTL_SECS: i64 = 400 * 86_400;
/// Sort-key prefix of the participation slots, and the counter that numbers them.
const FEEDBACK: &str = "FB#";
const FEEDBACK_SEQ: &str = "FBSEQ";

const INTERESTS: &str = "INTERESTS";
/// Field of the kept vectors: when the user last cleared their dislikes (RFC 3339).
const CLEARED: &str = "clearedAt";
const PREFERENCES: &str = "PREFERENCES";

/// What a user's records tell the ranking.
#[derive(Debug, Clone)]
pub struct Personal {
    /// Kept history, else the embedded preferences: MaxSim lifts what is like them.
    pub likes: Vec<Vec<f32>>,
    /// Where `likes` come from.
    pub source: Source,
    /// Turned-down activities' vectors and the stated dislikes': what is like them is pushed down.
    pub dislikes: Vec<Vec<f32>>,
    /// Activity ids the user turned down: never recommended.
    pub turned_down: Vec<String>,
}

impl Personal {
    /// Nothing known (or the store did not answer: `source`).
    pub fn none(source: Source) -> Self {
        Self { likes: Vec::new(), source, dislikes: Vec::new(), turned_down: Vec::new() }
    }
}

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

        let (satisfied_ids, kept, turned_down) = self.refresh(index, user).await?;
        Ok(json!({"userId": user, "activityId": activity_id, "satisfied": satisfied,
                  "satisfiedActivities": satisfied_ids, "interestVectors": kept, "turnedDown": turned_down}))
    }

    /// Rewrites the kept vectors from the feedback ring (never over a write that came between):
    /// how many satisfied activities, likes vectors and turned-down activities it keeps.
    async fn refresh(&self, index: &dyn VectorIndex, user: &str) -> Result<(usize, usize, usize)> {
        let now = self.clock.now();
        let end = format!("{FEEDBACK}~");
        for _ in 0..WRITE_TRIES {
            // The kept record first, then the ring: a feedback written between the two is in
            // the ring read, and one written after the write below is refused by its rev.
            let stored = self.records.get(&pk(user), INTERESTS, now.timestamp()).await?;
            let mut history = self.records.query(&pk(user), FEEDBACK, &end, now.timestamp()).await?;
            history.sort_by_key(|r| r.body["seq"].as_i64().unwrap_or(0));
            let rev = stored.as_ref().map(|r| r.body[REV].as_i64().unwrap_or(0));
            // What was posted at or before the last clear no longer counts against an activity.
            let cleared = stored.as_ref().and_then(|r| r.body[CLEARED].as_str()).and_then(|t| t.parse().ok());
            let after_clear = |r: &Record| {
                let at: Option<chrono::DateTime<chrono::Utc>> = r.body["at"].as_str().and_then(|t| t.parse().ok());
                cleared.is_none_or(|c| at.is_some_and(|at| at > c))
            };
            // Newest first, each activity once, by its newest participation.
            let (mut recent, mut turned_down): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
            let mut seen: Vec<&str> = Vec::new();
            for r in history.iter().rev() {
                let Some(id) = r.body["activityId"].as_str() else { continue };
                if seen.contains(&id) {
                    continue;
                }
                seen.push(id);
                if r.body["satisfied"] == true {
                    recent.push(id.to_owned());
                } else if after_clear(r) && turned_down.len() < NEGATIVES_KEPT {
                    turned_down.push(id.to_owned());
                }
            }
            // Too few satisfied in the ring: the likes kept before stay (as before turn-downs
            // were kept here too).
            let (activity_ids, vectors) = match recent.len() >= MIN_SATISFIED {
                true => dense_of(index, &recent.iter().take(KEEP).cloned().collect::<Vec<_>>()).await?,
                false => stored.as_ref().map_or((Vec::new(), Vec::new()), |r| {
                    let ids = serde_json::from_value(r.body["activityIds"].clone()).unwrap_or_default();
                    (ids, serde_json::from_value(r.body["vectors"].clone()).unwrap_or_default())
                }),
            };
            let (_, negatives) = dense_of(index, &turned_down).await?;
            if stored.is_none() && activity_ids.is_empty() && turned_down.is_empty() {
                return Ok((recent.len(), 0, 0));
            }
            let body = json!({"activityIds": activity_ids, "vectors": vectors, "turnedDown": turned_down,
                              "negatives": negatives, CLEARED: cleared.map(|c: chrono::DateTime<chrono::Utc>| c.to_rfc3339()),
                              "updatedAt": now.to_rfc3339(), REV: rev.unwrap_or(0) + 1});
            let record = Record { pk: pk(user), sk: INTERESTS.into(), expires_at: None, body };
            if self.records.put_if(&record, rev, now.timestamp()).await? {
                return Ok((recent.len(), vectors.len(), turned_down.len()));
            }
        }
        Err(Error::Store(format!("{user}'s kept vectors kept changing; feedback recorded, vectors not refreshed")))
    }

    /// Clears what `user` turned down and the dislikes they stated: nothing posted or stated
    /// before counts against an activity any more (the feedback stays, for the history).
    pub async fn clear_dislikes(&self, user: &str) -> Result<Value> {
        crate::core::validate::user_id(user)?;
        let now = self.clock.now();
        let kept_changing = || Error::Store(format!("{user}'s kept vectors kept changing; dislikes not cleared"));
        let mut cleared = false;
        for _ in 0..WRITE_TRIES {
            let stored = self.records.get(&pk(user), INTERESTS, now.timestamp()).await?;
            let rev = stored.as_ref().map(|r| r.body[REV].as_i64().unwrap_or(0));
            let mut body = stored.map(|r| r.body).filter(Value::is_object).unwrap_or_else(|| json!({}));
            // The watermark: every participation posted until now (feedback stores its time).
            body[CLEARED] = json!(now.to_rfc3339());
            body["turnedDown"] = json!([]);
            body["negatives"] = json!([]);
            body[REV] = json!(rev.unwrap_or(0) + 1);
            let record = Record { pk: pk(user), sk: INTERESTS.into(), expires_at: None, body };
            if self.records.put_if(&record, rev, now.timestamp()).await? {
                cleared = true;
                break;
            }
        }
        if !cleared {
            return Err(kept_changing());
        }
        // The stated dislikes, and their vector, go from the preferences.
        for _ in 0..WRITE_TRIES {
            let Some((mut preferences, vector, _, rev)) = self.preferences_rev(user).await? else {
                return Ok(json!({"userId": user, "turnedDown": [], "dislikes": []}));
            };
            let kept: Vec<Stated> = stated(&preferences).into_iter().filter(|s| s.likes).collect();
            preferences["stated"] = json!(kept);
            let record = self.preferences_record(user, &preferences, vector.as_deref(), None, rev + 1);
            if self.records.put_if(&record, Some(rev), now.timestamp()).await? {
                return Ok(json!({"userId": user, "turnedDown": [], "dislikes": []}));
            }
        }
        Err(Error::Store(format!("{user}'s preferences kept changing; stated dislikes not cleared")))
    }

    /// The user's kept places (`USER#<id>` / `LOCATION#...`), in the same store.
    pub fn whereabouts(&self) -> crate::activities::whereabouts::Whereabouts {
        crate::activities::whereabouts::Whereabouts::new(Arc::clone(&self.records), Arc::clone(&self.clock))
    }

    /// Stores preferences and, when given, their vector.
    pub async fn set_preferences(&self, user: &str, preferences: &Value, vector: Option<&[f32]>) -> Result<()> {
        // A revision no merge read before: a `remember` running meanwhile reads again.
        let rev = self.clock.now().timestamp_micros();
        self.records.put(&self.preferences_record(user, preferences, vector, None, rev)).await
    }

    /// Writes the preferences only if they are still at `rev` (`None`: none stored), as the
    /// next revision; false when another write came between.
    pub async fn set_preferences_if(
        &self,
        user: &str,
        preferences: &Value,
        (vector, dislikes): (Option<&[f32]>, Option<&[f32]>),
        rev: Option<i64>,
    ) -> Result<bool> {
        let record = self.preferences_record(user, preferences, vector, dislikes, rev.unwrap_or(0) + 1);
        self.records.put_if(&record, rev, self.clock.now().timestamp()).await
    }

    /// The preferences record: what they like embedded (`vector`), what they stated they
    /// dislike embedded (`dislikeVector`).
    fn preferences_record(
        &self,
        user: &str,
        preferences: &Value,
        vector: Option<&[f32]>,
        dislikes: Option<&[f32]>,
        rev: i64,
    ) -> Record {
        let body = json!({"preferences": preferences, "vector": vector, "dislikeVector": dislikes,
                          "updatedAt": self.clock.now().to_rfc3339(), REV: rev});
        Record { pk: pk(user), sk: PREFERENCES.into(), expires_at: None, body }
    }

    /// What the user's records tell the ranking: kept history first, else embedded
    /// preferences, else no likes; their turned-down activities and stated dislikes. Two reads,
    /// side by side.
    pub async fn vectors(&self, user: &str) -> Result<Personal> {
        let now = self.clock.now().timestamp();
        let parse = |v: &Value| -> Vec<Vec<f32>> {
            serde_json::from_value::<Vec<Vec<f32>>>(v.clone())
                .unwrap_or_default()
                .into_iter()
                .filter(|v| !v.is_empty())
                .collect()
        };
        let key = pk(user);
        let (interests, preferences) =
            tokio::try_join!(self.records.get(&key, INTERESTS, now), self.records.get(&key, PREFERENCES, now))?;
        let mut personal = Personal::none(Source::None);
        if let Some(r) = &interests {
            personal.likes = parse(&r.body["vectors"]);
            if !personal.likes.is_empty() {
                personal.source = Source::History;
            }
            personal.dislikes = parse(&r.body["negatives"]);
            personal.turned_down = serde_json::from_value(r.body["turnedDown"].clone()).unwrap_or_default();
        }
        if let Some(r) = &preferences {
            if personal.likes.is_empty() && r.body["vector"].is_array() {
                personal.likes = parse(&json!([r.body["vector"]]));
                personal.source = Source::Preferences;
            }
            if r.body["dislikeVector"].is_array() {
                personal.dislikes.extend(parse(&json!([r.body["dislikeVector"]])));
            }
        }
        Ok(personal)
    }

    /// `GET /users/{userId}/preferences`: what they set, what they stated liking and
    /// disliking, and what they turned down.
    pub async fn shown(&self, user: &str) -> Result<Value> {
        crate::core::validate::user_id(user)?;
        let now = self.clock.now().timestamp();
        let key = pk(user);
        let (interests, preferences) =
            tokio::try_join!(self.records.get(&key, INTERESTS, now), self.preferences(user))?;
        let preferences = preferences.map(|(p, _)| p).filter(Value::is_object).unwrap_or_else(|| json!({}));
        let said = stated(&preferences);
        let texts =
            |likes: bool| -> Vec<&str> { said.iter().filter(|s| s.likes == likes).map(|s| s.text.as_str()).collect() };
        let list = |key: &str| preferences[key].clone();
        Ok(json!({
            "userId": user,
            "tags": if list("tags").is_array() { list("tags") } else { json!([]) },
            "vibes": if list("vibes").is_array() { list("vibes") } else { json!([]) },
            "text": preferences["text"].as_str().unwrap_or_default(),
            "likes": texts(true),
            "dislikes": texts(false),
            "turnedDown": interests.map(|r| r.body["turnedDown"].clone()).filter(Value::is_array).unwrap_or_else(|| json!([])),
        }))
    }
}

/// The ids among `activity_ids` still indexed with a dense vector, and those vectors.
async fn dense_of(index: &dyn VectorIndex, activity_ids: &[String]) -> Result<(Vec<String>, Vec<Vec<f32>>)> {
    if activity_ids.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let ids: Vec<_> = activity_ids.iter().map(|id| point_id(id)).collect();
    let stored = index.get(&ids, true).await?.into_iter().filter(|s| !s.is_tombstone());
    Ok(stored
        .filter_map(|s| {
            let id = s.payload.get("id").and_then(Value::as_str)?.to_owned();
            Some((id, s.dense?))
        })
        .unzip())
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
        Ok(self.preferences_rev(user).await?.map(|(p, v, _, _)| (p, v)))
    }

    /// [`Interests::preferences`], the stated dislikes' vector and their revision, to write
    /// back with [`Interests::set_preferences_if`].
    #[allow(clippy::type_complexity)]
    pub async fn preferences_rev(
        &self,
        user: &str,
    ) -> Result<Option<(Value, Option<Vec<f32>>, Option<Vec<f32>>, i64)>> {
        let now = self.clock.now().timestamp();
        let record = self.records.get(&pk(user), PREFERENCES, now).await?;
        Ok(record.map(|r| {
            let vector = serde_json::from_value(r.body["vector"].clone()).ok();
            let dislikes = serde_json::from_value(r.body["dislikeVector"].clone()).ok();
            (r.body["preferences"].clone(), vector, dislikes, r.body[REV].as_i64().unwrap_or(0))
        }))
    }
}

/// The stated preferences in stored `preferences`.
pub fn stated(preferences: &Value) -> Vec<Stated> {
    serde_json::from_value(preferences["stated"].clone()).unwrap_or_default()
}

/// The text to embed of the dislikes stated in `preferences` (`None`: none).
pub fn dislikes_text(preferences: &Value) -> Option<String> {
    let dislikes: Vec<String> = stated(preferences).into_iter().filter(|s| !s.likes).map(|s| s.text).collect();
    (!dislikes.is_empty()).then(|| dislikes.join("；"))
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
