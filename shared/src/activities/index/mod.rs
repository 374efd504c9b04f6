//! The vector index port (seed 004): activities as points with a dense vector named for the
//! model that made it ([`DenseSpace`], cosine), a BM25 sparse vector (`sparse`, IDF modifier)
//! and a filterable payload.
//!
//! Two adapters pass one behavioural suite: `edge::EdgeIndex` (Qdrant Edge, in process, on
//! disk under `DATA_DIR`; the `edge` feature, which deploy builds leave out) and [`qdrant::QdrantIndex`] (a Qdrant server over gRPC). Both take
//! the same [`HardFilter`] and the same client-side BM25 vectors ([`bm25::Bm25`]), so the
//! lexical channel tokenises identically everywhere.
//!
//! A point id is the UUID v5 of the activity id ([`point_id`]): every write is idempotent.
//! Every write is also order-safe: a point carries its `version` (the activity's `updatedAt`,
//! in microseconds) and [`VectorIndex::upsert`] leaves a stored point with a later version
//! alone (an equal one is rewritten: a replayed event writes what it wrote before; but an
//! update never replaces a deletion of its own version), in one conditional write (no
//! read-then-write gap); a deletion is such a
//! write too, of a [`tombstone`], so a late or replayed update never brings a deleted
//! activity back. The backfill writes only dense vectors ([`VectorIndex::set_dense`]), and
//! only into points whose content is still what it embedded.
//! A point may lack its dense vector (embedding pending); it is still found lexically and by
//! filters. Opening an index creates the collection and its payload indexes if missing, and
//! refuses an existing collection built for another model or dimension (an error naming both
//! and the way out): vector spaces are never mixed.
//! Ranking beyond one channel (fusion, distance order) is the caller's: see `retrieval`.

pub mod bm25;
#[cfg(feature = "edge")]
pub mod edge;
pub mod qdrant;

use std::cell::Cell;
use std::future::Future;

use async_trait::async_trait;
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::core::error::Result;

tokio::task_local! {
    /// Set within [`one_turn`]: whether the turn's first operation has run.
    static TURN: Cell<bool>;
}

/// Runs `work` as one turn on the index: a shared Qdrant Edge shard hands itself over between
/// the turn's operations only after its `MAX_TURN`, not its `MAX_HOLD` (the first may, like
/// any other). Any index's callers may use it; it changes nothing but for a shared Edge shard.
pub async fn one_turn<F: Future>(work: F) -> F::Output {
    TURN.scope(Cell::new(false), work).await
}

/// Whether the calling task is inside a turn whose first operation has run; marks it as run.
#[cfg_attr(not(feature = "edge"), allow(dead_code))]
fn continues_turn() -> bool {
    TURN.try_with(|started| started.replace(true)).unwrap_or(false)
}

/// The dense vector of one embedding model: its name in the collection and its length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DenseSpace {
    pub name: String,
    pub dimensions: usize,
}

impl DenseSpace {
    /// The error for a collection (`what`) whose dense vectors are `found` (name, size) while
    /// the configured model writes `self`.
    pub fn mismatch(&self, what: &str, found: &[(String, usize)]) -> crate::core::error::Error {
        let found = if found.is_empty() {
            "no dense vectors".to_owned()
        } else {
            found.iter().map(|(n, d)| format!("{n} ({d}-d)")).collect::<Vec<_>>().join(", ")
        };
        crate::core::error::Error::Config(format!(
            "{what} holds vectors of {found}, but the configured embedder writes {} ({}-d): \
             build a collection for it (set QDRANT_COLLECTION to a new name and run the backfill \
             with --from the activities), or set EMBEDDING_PROVIDER back to the model it was built with",
            self.name, self.dimensions
        ))
    }
}
/// Name of the BM25 sparse vector.
pub const SPARSE: &str = "sparse";

/// Payload fields with an index, and their kind: what the hard filter and ordering read.
pub const PAYLOAD_INDEXES: &[(&str, PayloadIndex)] = &[
    ("status", PayloadIndex::Keyword),
    ("type", PayloadIndex::Keyword),
    ("startAt", PayloadIndex::Datetime),
    ("location", PayloadIndex::Geo),
    ("spotsLeft", PayloadIndex::Integer),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadIndex {
    Keyword,
    Datetime,
    Geo,
    Integer,
}

/// Namespace of activity point ids (UUID v5).
const POINT_NAMESPACE: Uuid = Uuid::from_u128(0x6a1c_54a2_9f0e_4d3b_8c55_1f3e_2b7a_9d01);

/// The point id of an activity: the same id always maps to the same point.
pub fn point_id(activity_id: &str) -> Uuid {
    Uuid::new_v5(&POINT_NAMESPACE, activity_id.as_bytes())
}

/// A sparse vector: term ids and weights.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SparseVector {
    pub indices: Vec<u32>,
    pub values: Vec<f32>,
}

/// One point to write: it replaces whatever the id held.
#[derive(Debug, Clone)]
pub struct Point {
    pub id: Uuid,
    pub payload: Map<String, Value>,
    /// `None` while the embedding is pending.
    pub dense: Option<Vec<f32>>,
    pub sparse: SparseVector,
}

impl Point {
    /// Whether this is a deletion ([`tombstone`]).
    pub fn is_tombstone(&self) -> bool {
        self.payload.get(TOMBSTONE).and_then(Value::as_bool) == Some(true)
    }
}

/// A point read back.
#[derive(Debug, Clone)]
pub struct Stored {
    pub id: Uuid,
    pub payload: Map<String, Value>,
    /// Present when asked for and the point has one.
    pub dense: Option<Vec<f32>>,
}

impl Stored {
    /// Whether this is what a deletion left ([`tombstone`]), not an activity.
    pub fn is_tombstone(&self) -> bool {
        self.payload.get(TOMBSTONE).and_then(Value::as_bool) == Some(true)
    }

    /// The stored version (microseconds since the epoch), if the point has one.
    pub fn version(&self) -> Option<i64> {
        self.payload.get(VERSION).and_then(Value::as_i64)
    }
}

/// Payload field: what the activity has of each wish facet (`crate::activities::facets`).
pub const FACETS_FIELD: &str = "facets";
/// Payload field: the version of a point (its activity's `updatedAt`, µs since the epoch).
pub const VERSION: &str = "version";
/// Payload field marking a deletion's tombstone.
pub const TOMBSTONE: &str = "deleted";

/// A version from an `updatedAt`.
pub fn version_of(t: DateTime<Utc>) -> i64 {
    t.timestamp_micros()
}

/// What a deletion of `activity_id` at `version` leaves: no vectors, no activity, only the
/// version a later write must beat. Filters never match it (its status is not `active`).
pub fn tombstone(activity_id: &str, version: i64) -> Point {
    let payload = json!({"id": activity_id, "status": "deleted", TOMBSTONE: true, VERSION: version});
    let Value::Object(payload) = payload else { unreachable!("an object") };
    Point { id: point_id(activity_id), payload, dense: None, sparse: SparseVector::default() }
}

/// The condition under which `point` may replace a stored point, in Qdrant's JSON form: the
/// stored point has no version, or an earlier one, or the same one and `point` is a deletion
/// or the stored point is not (an equal-version tie is decided by kind, never by arrival: a
/// deletion wins over an update of its version, whichever comes first).
pub fn replaceable_json(point: &Point) -> Value {
    let version = point.payload.get(VERSION).and_then(Value::as_i64).unwrap_or(i64::MAX);
    if point.is_tombstone() {
        return json!({"should": [{"is_empty": {"key": VERSION}}, {"key": VERSION, "range": {"lte": version}}]});
    }
    json!({"should": [
        {"is_empty": {"key": VERSION}},
        {"key": VERSION, "range": {"lt": version}},
        {"must": [{"key": VERSION, "range": {"gte": version, "lte": version}}],
         "must_not": [{"key": TOMBSTONE, "match": {"value": true}}]}
    ]})
}

/// A dense vector for the backfill: set on point `id` only while its `contentHash` is still
/// `content_hash` (the text it was made from).
#[derive(Debug, Clone)]
pub struct DenseUpdate {
    pub id: Uuid,
    pub content_hash: String,
    pub dense: Vec<f32>,
    /// The activity's stored wish facets (`crate::activities::facets`), when read.
    pub facets: Option<Value>,
}

impl DenseUpdate {
    /// The payload set with the vector: `embedding: ready`, and the facets when read.
    pub fn payload_json(&self) -> Value {
        let mut payload = json!({"embedding": "ready"});
        if let Some(facets) = &self.facets {
            payload[FACETS_FIELD] = facets.clone();
        }
        payload
    }

    /// The point, while its content is the one embedded, in Qdrant's JSON form.
    pub fn unchanged_json(&self) -> Value {
        json!({"must": [{"has_id": [self.id.to_string()]},
                        {"key": "contentHash", "match": {"value": self.content_hash}}]})
    }
}

/// One scored hit of a channel; higher is better.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub id: Uuid,
    pub score: f32,
}

/// A circle on the map.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Near {
    pub lat: f64,
    pub lng: f64,
    pub radius_km: f64,
}

/// Seed 004's hard filter, evaluated inside the index: `status = active`, `startAt > after`,
/// `spotsLeft > 0`, and optionally a radius, a type and a start-time window.
#[derive(Debug, Clone, PartialEq)]
pub struct HardFilter {
    pub after: DateTime<Utc>,
    pub near: Option<Near>,
    pub kind: Option<String>,
    /// Inclusive window on `startAt`.
    pub window: Option<(DateTime<Utc>, DateTime<Utc>)>,
}

impl HardFilter {
    /// Every bookable future activity after `after`.
    pub fn bookable(after: DateTime<Utc>) -> Self {
        Self { after, near: None, kind: None, window: None }
    }

    /// The filter in Qdrant's canonical JSON form (`{"must": [...]}`).
    pub fn to_qdrant_json(&self) -> Value {
        let time = |t: &DateTime<Utc>| t.to_rfc3339_opts(SecondsFormat::Micros, true);
        let mut must = vec![
            json!({"key": "status", "match": {"value": "active"}}),
            json!({"key": "startAt", "range": {"gt": time(&self.after)}}),
            json!({"key": "spotsLeft", "range": {"gt": 0}}),
        ];
        if let Some(kind) = &self.kind {
            must.push(json!({"key": "type", "match": {"value": kind}}));
        }
        if let Some(near) = self.near {
            must.push(json!({"key": "location", "geo_radius": {
                "center": {"lat": near.lat, "lon": near.lng}, "radius": near.radius_km * 1000.0
            }}));
        }
        if let Some((start, end)) = &self.window {
            must.push(json!({"key": "startAt", "range": {"gte": time(start), "lte": time(end)}}));
        }
        json!({ "must": must })
    }
}

/// The filter of points still waiting for their dense vector, in Qdrant's JSON form.
pub fn pending_json() -> Value {
    json!({"must": [{"key": "embedding", "match": {"value": "pending"}}]})
}

/// How much nearness and soonness lift a candidate, computed by the index's formula engine
/// (Qdrant's on the server, the same engine in Qdrant Edge) from one expression each adapter
/// builds from this value alone:
///
/// `1 + near.weight × gauss_decay(distance, scale = near.scale_km)
///    + soon.weight × exp_decay(startAt − now, scale = soon.scale_hours)`
///
/// each decay 1 at zero and ½ at its scale ([`Lift::factor`] is the same in Rust).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lift {
    /// From the searcher's place: `None` when the search has none, or its weight is 0.
    pub near: Option<NearLift>,
    /// From the time of the search: `None` when its weight is 0.
    pub soon: Option<SoonLift>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NearLift {
    pub lat: f64,
    pub lng: f64,
    pub scale_km: f64,
    pub weight: f32,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SoonLift {
    pub now: DateTime<Utc>,
    pub scale_hours: f64,
    pub weight: f32,
}

/// The midpoint of both decays: the value at the scale's distance.
pub const LIFT_MIDPOINT: f32 = 0.5;

impl Lift {
    /// Whether nothing lifts: every factor is 1, and no formula need run.
    pub fn is_none(&self) -> bool {
        self.near.is_none() && self.soon.is_none()
    }

    /// The factor at `distance_km` from the searcher and `hours` before the start, as the
    /// index's formula computes it (to f32 rounding): for tests and reasons.
    pub fn factor(&self, distance_km: f64, hours: f64) -> f64 {
        let (near, soon) = self.terms(Some(distance_km), hours);
        let weight = |w: Option<f32>| f64::from(w.unwrap_or(0.0));
        1.0 + weight(self.near.map(|n| n.weight)) * near + weight(self.soon.map(|s| s.weight)) * soon
    }

    /// The two terms apart, `(near, soon)`, each as a share of its weight (0 to 1): what
    /// `matchReason` reads to say nearness or soonness lifted a result.
    pub fn terms(&self, distance_km: Option<f64>, hours: f64) -> (f64, f64) {
        let half = f64::from(LIFT_MIDPOINT).ln();
        let near = match (self.near, distance_km) {
            (Some(n), Some(d)) => (half * (d / n.scale_km).powi(2)).exp(),
            _ => 0.0,
        };
        let soon = self.soon.map_or(0.0, |s| (half * (hours.abs() / s.scale_hours)).exp());
        (near, soon)
    }
}

/// How [`VectorIndex::scroll`] orders what it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Earliest `startAt` first.
    StartAt,
    /// Index order (cheapest; the caller sorts).
    Any,
}

/// A collection of activity points.
#[async_trait]
pub trait VectorIndex: Send + Sync {
    /// `edge` or `qdrant`, for logs and responses.
    fn backend(&self) -> &'static str;
    /// Whether the collection exists (nothing is created).
    async fn exists(&self) -> Result<bool>;
    /// Creates the collection and payload indexes when missing; checks the dense dimension.
    async fn ensure(&self) -> Result<()>;
    /// One page of every point (or only those with `embedding: pending`), payload only, from
    /// `offset`; the next page's offset, if any.
    async fn scan(&self, pending_only: bool, offset: Option<Uuid>, limit: usize)
    -> Result<(Vec<Stored>, Option<Uuid>)>;
    /// Writes each of `points` unless the index holds a later version of it
    /// ([`replaceable_json`], checked by the index in the same write); durable when this returns.
    async fn upsert(&self, points: Vec<Point>) -> Result<()>;
    /// Sets each update's dense vector and marks the point `embedding: ready`, changing
    /// nothing else, on points whose content is still the one embedded; others are left alone.
    async fn set_dense(&self, updates: Vec<DenseUpdate>) -> Result<()>;
    /// Removes the points; absent ids are fine.
    async fn delete(&self, ids: &[Uuid]) -> Result<()>;
    /// The points that exist among `ids`, in the order asked, with dense vectors if `with_dense`.
    async fn get(&self, ids: &[Uuid], with_dense: bool) -> Result<Vec<Stored>>;
    /// The points that exist among `ids` (any order), with dense vectors if `with_dense`, each
    /// with its [`Lift`] factor from the index's formula engine.
    async fn get_lifted(&self, ids: &[Uuid], with_dense: bool, lift: &Lift) -> Result<Vec<(Stored, f32)>>;
    /// How many points pass `filter` (exact: reads every match).
    async fn count(&self, filter: &HardFilter) -> Result<usize>;
    /// About how many points pass `filter`: the index's cardinality estimate from its payload
    /// indexes, which reads no point.
    async fn estimate(&self, filter: &HardFilter) -> Result<usize>;
    /// Up to `limit` points passing `filter`, payload only.
    async fn scroll(&self, filter: &HardFilter, order: Order, limit: usize) -> Result<Vec<Stored>>;
    /// The `limit` points passing `filter` nearest its location (which it must have), nearest
    /// first, payload only. The index reads at most `pool` matches (in index order) and ranks
    /// them by distance: exact when `pool` is at least the number of matches (the caller
    /// narrows the circle until it is small: see `retrieval`).
    async fn nearest(&self, filter: &HardFilter, pool: usize, limit: usize) -> Result<Vec<Stored>>;
    /// Nearest points by cosine on `dense`, at least `threshold`, best first.
    async fn search_dense(&self, vector: &[f32], filter: &HardFilter, limit: usize, threshold: f32)
    -> Result<Vec<Hit>>;
    /// Best BM25 matches on `sparse` (IDF applied by the index), best first.
    async fn search_sparse(&self, query: &SparseVector, filter: &HardFilter, limit: usize) -> Result<Vec<Hit>>;
    /// Both channels of a hybrid query, `(dense, sparse)`, as [`Self::search_dense`] and
    /// [`Self::search_sparse`] answer them. An adapter that can ask both at once does (the
    /// server: one round trip); fusion stays with the caller.
    async fn search_both(
        &self,
        dense: &[f32],
        threshold: f32,
        sparse: &SparseVector,
        filter: &HardFilter,
        limit: usize,
    ) -> Result<(Vec<Hit>, Vec<Hit>)> {
        let lexical = self.search_sparse(sparse, filter, limit).await?;
        Ok((self.search_dense(dense, filter, limit, threshold).await?, lexical))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn point_ids_are_stable_and_distinct() {
        assert_eq!(point_id("a1"), point_id("a1"));
        assert_ne!(point_id("a1"), point_id("a2"));
        assert_eq!(point_id("a1").get_version_num(), 5);
    }

    #[test]
    fn the_hard_filter_always_holds_the_seed_conditions() {
        let after: DateTime<Utc> = "2026-11-22T00:00:00Z".parse().unwrap();
        let mut f = HardFilter::bookable(after);
        f.near = Some(Near { lat: 31.2, lng: 121.4, radius_km: 5.0 });
        f.kind = Some("读书会".into());
        let j = f.to_qdrant_json().to_string();
        for needle in [
            r#""key":"status","match":{"value":"active"}"#,
            r#""key":"startAt","range":{"gt":"2026-11-22T00:00:00.000000Z"}"#,
            r#""key":"spotsLeft","range":{"gt":0}"#,
            r#""radius":5000.0"#,
            r#""lon":121.4"#,
            r#""value":"读书会""#,
        ] {
            assert!(j.contains(needle), "{needle} missing from {j}");
        }
    }
}
