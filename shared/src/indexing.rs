//! Keeping the activity index current (seed 004 Requirement 2): one write path for the
//! `index-activity` routes and EventBridge events.
//!
//! Each activity becomes one point: its payload (the activity, with `location` as Qdrant's
//! `{lat, lon}`, plus `spotsLeft`, `contentHash`, `embedding`), a BM25 vector of its enriched
//! text, and a dense vector of the same text when the embedder gives one. An update whose
//! content hash (title, description, type, tags) is unchanged keeps the stored dense vector
//! and rewrites the rest. When the embedder is absent, fails or misses its time box, the point
//! is written without a dense vector and marked `embedding: "pending"`: activity writes are
//! never blocked by the embedder (a backfill fills them in).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use chrono_tz::Tz;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::activity::Activity;
use crate::embedder::{self, Input};
use crate::error::{Error, Result};
use crate::index::bm25::Bm25;
use crate::index::{Point, VectorIndex, point_id};
use crate::ledger::Ledger;
use crate::retry::RetryPolicy;

/// Largest batch one request may index.
pub const MAX_BATCH: usize = 100;

/// Agent name on the embedder's cost records.
pub const AGENT: &str = "rag";

/// Payload fields that are not the activity's own.
const DERIVED: &[&str] = &["spotsLeft", "contentHash", "embedding"];

/// What happened to an activity's dense vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Embedding {
    /// Embedded now.
    Embedded,
    /// Content unchanged: the stored vector was kept.
    Kept,
    /// No vector yet (embedder absent or failing); found lexically and by filters meanwhile.
    Pending,
}

#[derive(Debug, Clone, Serialize)]
pub struct Indexed {
    pub id: String,
    pub embedding: Embedding,
}

/// The result of one write.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub indexed: Vec<Indexed>,
    /// Why embedding is pending, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_reason: Option<String>,
}

impl Report {
    /// Whether every activity has its dense vector.
    pub fn complete(&self) -> bool {
        self.indexed.iter().all(|i| i.embedding != Embedding::Pending)
    }
}

/// The payload stored for `activity`.
pub fn payload(activity: &Activity, embedded: bool) -> Map<String, Value> {
    let Value::Object(mut map) = serde_json::to_value(activity).expect("activities serialise") else {
        unreachable!("an activity serialises to an object")
    };
    map.insert("location".into(), json!({"lat": activity.location.lat, "lon": activity.location.lng}));
    map.insert("spotsLeft".into(), json!(activity.spots_left()));
    map.insert("contentHash".into(), json!(activity.content_hash()));
    map.insert("embedding".into(), json!(if embedded { "ready" } else { "pending" }));
    map
}

/// The activity a payload holds.
pub fn activity_of(payload: &Map<String, Value>) -> Result<Activity> {
    let mut map = payload.clone();
    for key in DERIVED {
        map.remove(*key);
    }
    if let Some(Value::Object(location)) = map.get_mut("location")
        && let Some(lon) = location.remove("lon")
    {
        location.insert("lng".into(), lon);
    }
    serde_json::from_value(Value::Object(map)).map_err(|e| Error::Store(format!("stored activity is unreadable: {e}")))
}

pub struct Indexer {
    pub index: Arc<dyn VectorIndex>,
    pub embedder: embedder::Configured,
    pub ledger: Ledger,
    pub bm25: Arc<Bm25>,
    pub zone: Tz,
    pub retry: RetryPolicy,
    /// Longest the embedder may take (retries included) before points are written pending.
    pub embed_timeout: Duration,
}

impl Indexer {
    /// Validated activities from a request body: one object, or an array of at most
    /// [`MAX_BATCH`] with distinct ids. The error names the item and the field.
    pub fn parse(body: Value) -> Result<Vec<Activity>> {
        let items = match body {
            Value::Array(items) => items,
            one @ Value::Object(_) => return Ok(vec![Activity::from_json(one)?]),
            _ => return Err(Error::invalid("invalid_activity", "send an activity object or an array of them")),
        };
        if items.is_empty() || items.len() > MAX_BATCH {
            return Err(Error::invalid("invalid_activity", format!("a batch holds 1 to {MAX_BATCH} activities")));
        }
        let mut seen = HashSet::new();
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.into_iter().enumerate() {
            let activity = Activity::from_json(item)
                .map_err(|e| Error::invalid("invalid_activity", format!("activities[{i}].{e}")))?;
            if !seen.insert(activity.id.clone()) {
                return Err(Error::invalid(
                    "invalid_activity",
                    format!("activities[{i}].id: {:?} repeats", activity.id),
                ));
            }
            out.push(activity);
        }
        Ok(out)
    }

    /// Writes `activities` (created or replaced), embedding what changed.
    pub async fn upsert(&self, activities: &[Activity], request_id: &str) -> Result<Report> {
        self.write(activities, false, request_id).await
    }

    /// Writes `activities`, embedding what changed or lacks a vector, or all with `force`.
    pub async fn write(&self, activities: &[Activity], force: bool, request_id: &str) -> Result<Report> {
        let ids: Vec<_> = activities.iter().map(|a| point_id(&a.id)).collect();
        let mut stored: HashMap<_, _> = self.index.get(&ids, true).await?.into_iter().map(|s| (s.id, s)).collect();
        let mut dense: Vec<Option<Vec<f32>>> = Vec::with_capacity(activities.len());
        let mut kept = Vec::with_capacity(activities.len());
        for (a, id) in activities.iter().zip(&ids) {
            let previous = stored.remove(id);
            let same = previous.as_ref().is_some_and(|p| {
                p.payload.get("contentHash").and_then(Value::as_str) == Some(a.content_hash().as_str())
            });
            let vector = previous.and_then(|p| p.dense).filter(|_| same && !force);
            kept.push(vector.is_some());
            dense.push(vector);
        }
        let texts: Vec<String> = activities.iter().map(|a| a.indexed_text(self.zone)).collect();
        let wanted: Vec<usize> = (0..activities.len()).filter(|&i| !kept[i]).collect();
        let mut pending_reason = None;
        if !wanted.is_empty() {
            let inputs: Vec<String> = wanted.iter().map(|&i| texts[i].clone()).collect();
            let embedded = embedder::embed_within(
                &self.embedder,
                &self.ledger,
                self.retry,
                self.embed_timeout,
                AGENT,
                request_id,
                &inputs,
                Input::Passage,
            );
            match embedded.await {
                Ok(vectors) => {
                    for (&i, v) in wanted.iter().zip(vectors) {
                        dense[i] = Some(v);
                    }
                }
                Err(reason) => {
                    tracing::warn!(%reason, activities = wanted.len(), "embedding pending; indexed for lexical search");
                    pending_reason = Some(reason);
                }
            }
        }
        let mut points = Vec::with_capacity(activities.len());
        let mut indexed = Vec::with_capacity(activities.len());
        for (((a, id), text), (vector, kept)) in activities.iter().zip(ids).zip(&texts).zip(dense.into_iter().zip(kept))
        {
            let embedding = match (&vector, kept) {
                (None, _) => Embedding::Pending,
                (Some(_), true) => Embedding::Kept,
                (Some(_), false) => Embedding::Embedded,
            };
            indexed.push(Indexed { id: a.id.clone(), embedding });
            points.push(Point {
                id,
                payload: payload(a, vector.is_some()),
                sparse: self.bm25.document(text),
                dense: vector,
            });
        }
        self.index.upsert(points).await?;
        Ok(Report { indexed, pending_reason })
    }

    /// Removes an activity; says whether it was indexed.
    pub async fn delete(&self, activity_id: &str) -> Result<bool> {
        let id = point_id(activity_id);
        let existed = !self.index.get(&[id], false).await?.is_empty();
        if existed {
            self.index.delete(&[id]).await?;
        }
        Ok(existed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_reads_back_as_the_same_activity() {
        let a = Activity::from_json(json!({
            "id": "a1", "title": "读书局", "description": "安静看书", "type": "读书会", "tags": ["读书"],
            "startAt": "2026-11-27T12:30:00Z", "locationName": "上海", "location": {"lat": 31.2, "lng": 121.4},
            "status": "active", "currentParticipants": 1, "maxParticipants": 6
        }))
        .unwrap();
        let p = payload(&a, false);
        assert_eq!(p["location"], json!({"lat": 31.2, "lon": 121.4}));
        assert_eq!((p["spotsLeft"].clone(), p["embedding"].clone()), (json!(5), json!("pending")));
        assert_eq!(activity_of(&p).unwrap(), a);
    }

    #[test]
    fn a_batch_error_names_the_item_and_the_field() {
        let good = json!({
            "id": "a1", "title": "读书局", "type": "读书会", "startAt": "2026-11-27T12:30:00Z",
            "location": {"lat": 31.2, "lng": 121.4}, "status": "active",
            "currentParticipants": 1, "maxParticipants": 6
        });
        let mut bad = good.clone();
        bad["id"] = json!("a2");
        bad["location"]["lat"] = json!(100.0);
        let e = Indexer::parse(json!([good.clone(), bad])).unwrap_err();
        assert!(e.to_string().starts_with("activities[1].location.lat"), "{e}");
        let e = Indexer::parse(json!([good.clone(), good.clone()])).unwrap_err();
        assert!(e.to_string().contains("repeats"), "{e}");
        assert!(Indexer::parse(json!([])).is_err());
        assert_eq!(Indexer::parse(good).unwrap().len(), 1);
    }
}
