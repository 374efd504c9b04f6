//! Keeping the activity index current (seed 004 Requirement 2): one write path for the
//! `index-activity` routes and EventBridge events.
//!
//! Each activity becomes one point: its payload (the activity, with `location` as Qdrant's
//! `{lat, lon}`, plus `spotsLeft`, `contentHash`, `embedding`, `version`, and `facets`: what it
//! has of each wish facet, read by the bundled e5 whatever embedder ranks,
//! [`crate::activities::facets`]), a BM25 vector of its
//! lexical text ([`Activity::lexical_text`]), and a dense vector when the embedder gives one:
//! with the bundled e5, the normalised sum of its views ([`Activity::dense_views`]: its own
//! words and the questions it answers), each embedded as a query; with an API model, the own
//! words unless `EMBEDDING_VIEWS=2`. An update whose content hash (views and lexical text)
//! is unchanged keeps the stored dense vector and rewrites the rest. When the embedder is
//! absent, fails or misses its time box, the point is
//! written without a dense vector and marked `embedding: "pending"`: activity writes are never
//! blocked by the embedder (a backfill fills them in).
//!
//! Writes are ordered by the activity's `updatedAt` (else the time of the request or event): a
//! write older than what the index holds, a deletion's tombstone included, changes nothing and
//! is reported `stale` (see `index`: the check is part of the write itself).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::activities::activity::{Activity, text_hash};
use crate::activities::embedder::{EmbeddingService, Input};
use crate::activities::facets::{self, Facets};
use crate::activities::index::bm25::Bm25;
use crate::activities::index::{DenseUpdate, Point, Stored, VectorIndex, point_id, tombstone, version_of};
use crate::activities::ranking::normalised_sum;
use crate::core::clock::Clock;
use crate::core::error::{Error, Result};

/// Largest batch one request may index.
pub const MAX_BATCH: usize = 100;

/// Who pays for indexing's embeddings (index-activity and the backfill): a budget of its own,
/// so user searches (`rag`) can never stop activities being indexed.
pub const AGENT: &str = "indexing";

/// Why an activity is pending when the bundled e5 beside an API embedder could not read its
/// wish facets.
const FACETS_UNREAD: &str = "the wish facets could not be read (the bundled e5)";

/// Payload fields that are not the activity's own.
const DERIVED: &[&str] = &[
    "spotsLeft",
    "contentHash",
    "embedding",
    crate::activities::index::FACETS_FIELD,
    crate::activities::index::VERSION,
];

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
    /// Not written: the index holds a later version, or a later deletion.
    Stale,
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

/// The payload stored for `activity` (which has its `updatedAt`), its text made in `zone`.
pub fn payload(activity: &Activity, zone: Tz, embedded: bool) -> Map<String, Value> {
    payload_with(activity, &activity.content_hash(zone), embedded, None)
}

/// [`payload`] with the content hash already made.
fn payload_with(activity: &Activity, content_hash: &str, embedded: bool, facets: Option<&Value>) -> Map<String, Value> {
    let Value::Object(mut map) = serde_json::to_value(activity).expect("activities serialise") else {
        unreachable!("an activity serialises to an object")
    };
    map.insert("location".into(), json!({"lat": activity.location.lat, "lon": activity.location.lng}));
    map.insert("spotsLeft".into(), json!(activity.spots_left()));
    map.insert("contentHash".into(), json!(content_hash));
    map.insert("embedding".into(), json!(if embedded { "ready" } else { "pending" }));
    if let Some(facets) = facets {
        map.insert(crate::activities::index::FACETS_FIELD.into(), facets.clone());
    }
    if let Some(at) = activity.updated_at {
        map.insert(crate::activities::index::VERSION.into(), json!(version_of(at)));
    }
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

/// The activity write path: validation, enrichment, embedding, versioned writes, deletions.
pub struct Indexer {
    index: Arc<dyn VectorIndex>,
    embedding: EmbeddingService,
    facets: Facets,
    bm25: Bm25,
    zone: Tz,
    /// The time of a request: the version of writes that carry no `updatedAt`.
    clock: Arc<dyn Clock>,
}

impl Indexer {
    /// Writes into `index`, embedding with `embedding`; times of day in `zone`.
    pub fn new(index: Arc<dyn VectorIndex>, embedding: EmbeddingService, zone: Tz, clock: Arc<dyn Clock>) -> Self {
        let facets = Facets::new(&embedding, None);
        Self { index, embedding, facets, bm25: Bm25::new(), zone, clock }
    }

    /// The same write path with `facets` reading what each activity has.
    pub fn with_facets(mut self, facets: Facets) -> Self {
        self.facets = facets;
        self
    }

    /// The same write path with an embedding time box of at least `timeout` (the facets' too).
    pub fn embedding_at_least(mut self, timeout: Duration) -> Self {
        self.embedding = self.embedding.lasting_at_least(timeout);
        self.facets = self.facets.lasting_at_least(timeout);
        self
    }

    /// The vector index written to.
    pub fn index(&self) -> &Arc<dyn VectorIndex> {
        &self.index
    }

    /// Now, by the write path's clock.
    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

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
            let activity =
                Activity::from_json(item).map_err(|e| Error::invalid(e.code(), format!("activities[{i}].{e}")))?;
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

    /// Writes `activities` (created or replaced) as of now, embedding what changed.
    pub async fn upsert(&self, activities: &[Activity], request_id: &str) -> Result<Report> {
        self.write(activities, self.clock.now(), false, request_id).await
    }

    /// Writes `activities`, those without `updatedAt` as of `at`, embedding what changed or
    /// lacks a vector (all with `force`); what the index holds a later version of is `stale`.
    pub async fn write(
        &self,
        activities: &[Activity],
        at: DateTime<Utc>,
        force: bool,
        request_id: &str,
    ) -> Result<Report> {
        let activities: Vec<Activity> =
            activities.iter().map(|a| Activity { updated_at: Some(a.updated_at.unwrap_or(at)), ..a.clone() }).collect();
        let ids: Vec<_> = activities.iter().map(|a| point_id(&a.id)).collect();
        let mut stored: HashMap<_, _> = self.index.get(&ids, true).await?.into_iter().map(|s| (s.id, s)).collect();
        let texts: Vec<([String; 2], String)> =
            activities.iter().map(|a| (a.dense_views(self.zone), a.lexical_text(self.zone))).collect();
        let hashes: Vec<String> = texts.iter().map(|(views, lexical)| text_hash(views, lexical)).collect();
        let (mut stale, mut kept, mut dense, mut read) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for ((a, id), hash) in activities.iter().zip(&ids).zip(&hashes) {
            let previous = stored.remove(id);
            let version = version_of(a.updated_at.unwrap_or(at));
            // Later, or a deletion of the same version (it wins the tie: `replaceable_json`).
            let is_stale = previous
                .as_ref()
                .is_some_and(|p| p.version().is_some_and(|v| v > version || (v == version && p.is_tombstone())));
            let same = previous.as_ref().is_some_and(|p| {
                !p.is_tombstone() && p.payload.get("contentHash").and_then(Value::as_str) == Some(hash.as_str())
            });
            let previous = previous.filter(|_| same && !force);
            let kept_facets = previous.as_ref().filter(|p| facets::stored(&p.payload).is_some());
            read.push(kept_facets.and_then(|p| p.payload.get(crate::activities::index::FACETS_FIELD).cloned()));
            let vector = previous.and_then(|p| p.dense);
            // A stale write embeds nothing: it is not written.
            kept.push(vector.is_some() || is_stale);
            stale.push(is_stale);
            dense.push(vector);
        }
        let wanted: Vec<usize> = (0..activities.len()).filter(|&i| !kept[i]).collect();
        let mut pending_reason = None;
        if !wanted.is_empty() {
            let views: Vec<[String; 2]> = wanted.iter().map(|&i| texts[i].0.clone()).collect();
            match self.embed(&views, request_id).await {
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
        // Facets to store (beside an API embedder) of what changed or was stored without them;
        // an activity whose facets could not be read stays pending, for the backfill.
        let mut unfaceted = vec![false; activities.len()];
        let unread: Vec<usize> =
            (0..activities.len()).filter(|&i| !stale[i] && read[i].is_none() && dense[i].is_some()).collect();
        if self.facets.stores() && !unread.is_empty() {
            let views: Vec<[String; 2]> = unread.iter().map(|&i| texts[i].0.clone()).collect();
            for (&i, f) in unread.iter().zip(self.facets.to_store(&views, request_id).await) {
                match f {
                    Some(value) => read[i] = value,
                    None => unfaceted[i] = true,
                }
            }
            if unfaceted.iter().any(|&u| u) && pending_reason.is_none() {
                pending_reason = Some(FACETS_UNREAD.to_owned());
            }
        }
        let mut points = Vec::with_capacity(activities.len());
        let mut indexed = Vec::with_capacity(activities.len());
        for (((((((a, id), text), hash), (vector, kept)), stale), facets), unfaceted) in activities
            .iter()
            .zip(ids)
            .zip(&texts)
            .zip(&hashes)
            .zip(dense.into_iter().zip(kept))
            .zip(stale)
            .zip(read)
            .zip(unfaceted)
        {
            let embedding = match (&vector, kept) {
                _ if stale => Embedding::Stale,
                (None, _) => Embedding::Pending,
                _ if unfaceted => Embedding::Pending,
                (Some(_), true) => Embedding::Kept,
                (Some(_), false) => Embedding::Embedded,
            };
            indexed.push(Indexed { id: a.id.clone(), embedding });
            if stale {
                tracing::info!(id = %a.id, "a later version is indexed; this write is ignored");
                continue;
            }
            points.push(Point {
                id,
                payload: payload_with(a, hash, vector.is_some() && !unfaceted, facets.as_ref()),
                sparse: self.bm25.document(&text.1),
                dense: vector,
            });
        }
        self.index.upsert(points).await?;
        Ok(Report { indexed, pending_reason })
    }

    /// The backfill's write: embeds `points` as they were read and sets only their dense
    /// vectors ([`VectorIndex::set_dense`]), so a point changed or deleted since it was read
    /// keeps what was written meanwhile (and stays pending, for the next run, if it still is).
    pub async fn embed_stored(&self, points: &[Stored], request_id: &str) -> Result<Report> {
        let mut read = Vec::with_capacity(points.len());
        for p in points.iter().filter(|p| !p.is_tombstone()) {
            match activity_of(&p.payload) {
                Ok(a) => {
                    let hash = p.payload.get("contentHash").and_then(Value::as_str).unwrap_or_default().to_owned();
                    read.push((p.id, a, hash));
                }
                Err(e) => tracing::warn!(error = %e, "unreadable point skipped"),
            }
        }
        let views: Vec<[String; 2]> = read.iter().map(|(_, a, _)| a.dense_views(self.zone)).collect();
        // Beside an API embedder the facets are read first (in process, free): when they cannot
        // be, no paid embedding is bought and the points stay as they are, for the next run.
        let facets = self.facets.to_store(&views, request_id).await;
        let (embedding, pending_reason) = if facets.iter().any(Option::is_none) {
            (Embedding::Pending, Some(FACETS_UNREAD.to_owned()))
        } else {
            match self.embed(&views, request_id).await {
                Ok(vectors) => {
                    let updates = read
                        .iter()
                        .zip(vectors)
                        .zip(facets)
                        .map(|(((id, _, hash), dense), facets)| DenseUpdate {
                            id: *id,
                            content_hash: hash.clone(),
                            dense,
                            facets: facets.flatten(),
                        })
                        .collect();
                    self.index.set_dense(updates).await?;
                    (Embedding::Embedded, None)
                }
                Err(reason) => (Embedding::Pending, Some(reason)),
            }
        };
        let indexed = read.into_iter().map(|(_, a, _)| Indexed { id: a.id, embedding }).collect();
        Ok(Report { indexed, pending_reason })
    }

    /// One dense vector per activity of `views` within the write's time box (one accounted
    /// call for all), or why not: with the bundled e5 the normalised sum of both views embedded
    /// as queries; with a model measured on one view ([`EmbeddingService::views`]), the own
    /// words as a passage.
    async fn embed(&self, views: &[[String; 2]], request_id: &str) -> std::result::Result<Vec<Vec<f32>>, String> {
        match self.embedding.views() {
            1 => {
                let texts: Vec<String> = views.iter().map(|[own, _]| own.clone()).collect();
                self.embedding.vectors(AGENT, request_id, &texts, Input::Passage).await
            }
            _ => {
                let texts: Vec<String> = views.iter().flatten().cloned().collect();
                let vectors = self.embedding.vectors(AGENT, request_id, &texts, Input::Query).await?;
                Ok(vectors.chunks(2).map(normalised_sum).collect())
            }
        }
    }

    /// Deletes an activity as of `at` (its `updatedAt` when deleted, else the request's or
    /// event's time): the point becomes a tombstone of that version, so a create or update
    /// older than the deletion, delivered late, changes nothing. The tombstone is written even
    /// for an id not (yet) indexed, for that reason. Says whether a live activity not later
    /// than `at` was there (and is now gone).
    pub async fn delete(&self, activity_id: &str, at: DateTime<Utc>) -> Result<bool> {
        crate::activities::activity::check_id(activity_id)?;
        let version = version_of(at);
        let live = self.index.get(&[point_id(activity_id)], false).await?.into_iter().find(|s| !s.is_tombstone());
        self.index.upsert(vec![tombstone(activity_id, version)]).await?;
        Ok(live.is_some_and(|s| s.version().is_none_or(|v| v <= version)))
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
        let p = payload(&a, chrono_tz::Asia::Shanghai, false);
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
