//! Activity retrieval (seed 004 Requirements 3, 4, 15): a hard filter inside the index, then a
//! soft rank. One code path serves `POST /rag/search` (and the assistant's tool).
//!
//! 1. Hard filter: `status = active`, `startAt > now`, `spotsLeft > 0`, and the request's
//!    radius, type and time window ([`HardFilter`]), counted exactly in the index.
//! 2. At most [`DIRECT_MAX`] pass: they are returned as they are, no embedding (`filter_only`).
//! 3. No `semanticQuery`: nearest first when a location is given (`distance`), else soonest
//!    first (`start_time`).
//! 4. A `semanticQuery`: the query is embedded within a time box; dense hits with cosine
//!    ≥ the model's floor (`RAG_MIN_SIMILARITY` overrides it) and BM25 hits are fused by
//!    weighted reciprocal rank (`hybrid`, k = 60, the lexical list weighted
//!    `RAG_LEXICAL_WEIGHT` against the dense list's 1), or ranked by similarity alone with
//!    `RAG_FUSION=dense` (`dense`). When the embedder is absent, failing or slow, the lexical
//!    hits are ranked alone (`lexical`, `degraded`). A time the query names ("周五晚上",
//!    [`Wanted`]) lifts candidates starting then by up to [`TIME_BOOST`]; a `userId` lifts them
//!    by MaxSim to the user's interests.
//!
//! Results of a search with a `semanticQuery` carry `matchReason` ([`crate::activities::reasons`]), the
//! model's within what is left of the 3 s budget, else the template's.
//!
//! `score` is what the results are ordered by (higher first): the RRF sum, the cosine, the
//! BM25 score, `1 / (1 + distanceKm)`, or `1 / rank` for start-time order.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde::Serialize;
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::activities::activity::Activity;
use crate::activities::embedder::{EmbeddingService, Input};
use crate::activities::index::bm25::Bm25;
use crate::activities::index::{HardFilter, Hit, Near, Order, Stored, VectorIndex};
use crate::activities::indexing::{AGENT, activity_of};
use crate::activities::interests::{Interests, Source};
use crate::activities::ranking::{MAX_BOOST, boost, cosine, distance_km, max_sim, rrf};
use crate::activities::reasons::{self, Facts};
use crate::activities::when::Wanted;
use crate::core::clock::Clock;
use crate::core::config::Fusion;
use crate::core::error::{Error, Result};
use crate::core::json;
use crate::core::retry::RetryPolicy;
use crate::costs::ledger::Ledger;
use crate::llm::ChatModel;

/// With this many or fewer activities through the hard filter, they are returned directly.
pub const DIRECT_MAX: usize = 3;
pub const DEFAULT_LIMIT: usize = 20;
pub const MAX_LIMIT: usize = 50;
pub const MAX_QUERY_CHARS: usize = 500;
pub const MAX_RADIUS_KM: f64 = 500.0;
/// Seed 004's response-time budget for a search (Requirement 8).
pub const BUDGET: Duration = Duration::from_secs(3);
/// Time kept back from the budget for reading the results and answering.
const BUDGET_MARGIN: Duration = Duration::from_millis(300);
/// How many times `limit` a personalised search ranks before the cut.
const PERSONAL_DEPTH: usize = 3;
/// Candidates each channel contributes to fusion.
const CHANNEL_DEPTH: usize = 100;
/// Score multiplier `1 + TIME_BOOST × fit` for a candidate starting when the query asks
/// ("周五晚上": fit 1 on a Friday evening, 0.5 on a Friday morning): tuned on the dev set.
pub const TIME_BOOST: f32 = 0.5;

/// A search request (seed 004 Requirement 15).
#[derive(Debug, Clone, PartialEq)]
pub struct SearchRequest {
    pub semantic_query: Option<String>,
    pub near: Option<Near>,
    pub window: Option<(DateTime<Utc>, DateTime<Utc>)>,
    pub kind: Option<String>,
    pub limit: usize,
    /// Personalise with this user's interest vectors (MaxSim boost).
    pub user_id: Option<String>,
}

fn invalid(message: impl Into<String>) -> Error {
    Error::invalid("invalid_search", message)
}

fn number(v: &Value, field: &str) -> Result<f64> {
    v.as_f64().filter(|n| n.is_finite()).ok_or_else(|| invalid(format!("{field} must be a number")))
}

fn time(v: Option<&Value>, field: &str) -> Result<DateTime<Utc>> {
    let text = v.and_then(Value::as_str).ok_or_else(|| invalid(format!("{field} must be an RFC 3339 time")))?;
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| invalid(format!("{field} must be an RFC 3339 time, not {text:?}")))
}

impl SearchRequest {
    /// Parses and validates a request body; the error names the field.
    pub fn from_json(body: &Map<String, Value>) -> Result<Self> {
        json::only_known(body, &["semanticQuery", "filters", "limit", "userId"])?;
        let user_id = match body.get("userId") {
            None | Some(Value::Null) => None,
            Some(Value::String(u)) => {
                crate::activities::interests::check_user_id(u)?;
                Some(u.clone())
            }
            Some(_) => return Err(invalid("userId must be a string")),
        };
        let semantic_query = match body.get("semanticQuery") {
            None | Some(Value::Null) => None,
            Some(Value::String(q)) => {
                if q.chars().count() > MAX_QUERY_CHARS {
                    return Err(invalid(format!("semanticQuery is longer than {MAX_QUERY_CHARS} characters")));
                }
                Some(q.trim().to_owned()).filter(|q| !q.is_empty())
            }
            Some(_) => return Err(invalid("semanticQuery must be a string")),
        };
        let limit = match body.get("limit") {
            None | Some(Value::Null) => DEFAULT_LIMIT,
            Some(v) => match v.as_u64() {
                Some(n @ 1..=50) => n as usize,
                _ => return Err(invalid(format!("limit must be a whole number from 1 to {MAX_LIMIT}"))),
            },
        };
        let empty = Map::new();
        let filters = match body.get("filters") {
            None | Some(Value::Null) => &empty,
            Some(Value::Object(f)) => f,
            Some(_) => return Err(invalid("filters must be an object")),
        };
        json::only_known(filters, &["location", "timeRange", "type"]).map_err(|e| invalid(format!("filters: {e}")))?;
        let near = match filters.get("location") {
            None | Some(Value::Null) => None,
            Some(Value::Object(l)) => {
                json::only_known(l, &["lat", "lng", "radiusInKm"])
                    .map_err(|e| invalid(format!("filters.location: {e}")))?;
                let field = |k: &str| {
                    l.get(k)
                        .ok_or_else(|| invalid(format!("filters.location.{k} is required")))
                        .and_then(|v| number(v, &format!("filters.location.{k}")))
                };
                let (lat, lng, radius_km) = (field("lat")?, field("lng")?, field("radiusInKm")?);
                if !(-90.0..=90.0).contains(&lat) {
                    return Err(invalid(format!("filters.location.lat {lat} is not between -90 and 90")));
                }
                if !(-180.0..=180.0).contains(&lng) {
                    return Err(invalid(format!("filters.location.lng {lng} is not between -180 and 180")));
                }
                if radius_km <= 0.0 || radius_km > MAX_RADIUS_KM {
                    return Err(invalid(format!(
                        "filters.location.radiusInKm must be above 0 and at most {MAX_RADIUS_KM}"
                    )));
                }
                Some(Near { lat, lng, radius_km })
            }
            Some(_) => return Err(invalid("filters.location must be an object {lat, lng, radiusInKm}")),
        };
        let window = match filters.get("timeRange") {
            None | Some(Value::Null) => None,
            Some(Value::Object(t)) => {
                json::only_known(t, &["start", "end"]).map_err(|e| invalid(format!("filters.timeRange: {e}")))?;
                let (start, end) =
                    (time(t.get("start"), "filters.timeRange.start")?, time(t.get("end"), "filters.timeRange.end")?);
                if start > end {
                    return Err(invalid("filters.timeRange.start is after filters.timeRange.end"));
                }
                Some((start, end))
            }
            Some(_) => return Err(invalid("filters.timeRange must be an object {start, end}")),
        };
        let kind = match filters.get("type") {
            None | Some(Value::Null) => None,
            Some(Value::String(t)) if !t.trim().is_empty() && t.chars().count() <= 50 => Some(t.trim().to_owned()),
            Some(_) => return Err(invalid("filters.type must be a non-empty string of at most 50 characters")),
        };
        Ok(Self { semantic_query, near, window, kind, limit, user_id })
    }
}

impl SearchRequest {
    /// The `explore_nearby` tool's arguments (`semanticQuery?`, `lat`, `lng`, `radiusInKm`,
    /// `type?`, `limit?` default 10) as the same request `/rag/search` takes.
    pub fn from_tool_arguments(args: &Map<String, Value>) -> Result<Self> {
        json::only_known(args, &["semanticQuery", "lat", "lng", "radiusInKm", "type", "limit"])?;
        let mut filters = Map::new();
        let mut location = Map::new();
        for key in ["lat", "lng", "radiusInKm"] {
            location.insert(key.into(), args.get(key).cloned().unwrap_or(Value::Null));
        }
        filters.insert("location".into(), Value::Object(location));
        if let Some(kind) = args.get("type") {
            filters.insert("type".into(), kind.clone());
        }
        let mut body = Map::new();
        body.insert("filters".into(), Value::Object(filters));
        body.insert("limit".into(), args.get("limit").cloned().unwrap_or(Value::from(TOOL_LIMIT)));
        if let Some(q) = args.get("semanticQuery") {
            body.insert("semanticQuery".into(), q.clone());
        }
        Self::from_json(&body).map_err(|e| invalid(e.to_string().replace("filters.location.", "")))
    }
}

/// Results the tool returns unless asked for another number.
pub const TOOL_LIMIT: u64 = 10;

/// Which path produced the ranking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    FilterOnly,
    Distance,
    StartTime,
    Hybrid,
    Dense,
    Lexical,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Ranked {
    pub activity: Activity,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f32>,
    pub score: f32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distance_km: Option<f64>,
    /// The candidate's best cosine to the user's kept vectors, and the score multiplier it
    /// gave (at most 1.2), when the search was personalised.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_sim: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boost: Option<f32>,
    /// Why it was recommended (semantic searches, unless `RAG_MATCH_REASON=off`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub match_reason: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchResponse {
    pub results: Vec<Ranked>,
    pub strategy: Strategy,
    /// The embedder was wanted but absent, failing or too slow: lexical ranking only.
    pub degraded: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub degraded_reason: Option<String>,
    /// Activities through the hard filter.
    pub candidates: usize,
    /// Where the personalisation vectors came from, when a `userId` was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub personalization: Option<Source>,
    pub took_ms: u64,
}

/// Who writes `matchReason` (see [`crate::activities::reasons`]).
#[derive(Clone)]
pub enum Reasons {
    Off,
    Template,
    /// One call to `model` per search, at most `timeout` (and what is left of the 3 s), retried
    /// under `retry`, accounted in `ledger`.
    Llm {
        llm: Arc<dyn ChatModel>,
        model: String,
        timeout: Duration,
        ledger: Ledger,
        retry: RetryPolicy,
    },
}

/// How retrieval ranks (`RAG_*`, `ACTIVITY_TIMEZONE`).
#[derive(Debug, Clone, Copy)]
pub struct Ranking {
    /// Cosine floor of a dense match (`RAG_MIN_SIMILARITY`); `None`: the embedder's own.
    pub min_similarity: Option<f32>,
    pub fusion: Fusion,
    /// Weight of the lexical list in the fusion (`RAG_LEXICAL_WEIGHT`; the dense list's is 1).
    pub lexical_weight: f32,
    /// Zone of times in queries and template reasons.
    pub zone: Tz,
}

impl SearchResponse {
    /// The model-facing JSON text of the `explore_nearby` tool: the essentials of each result.
    pub fn tool_text(&self, zone: Tz) -> String {
        let activities: Vec<Value> = self
            .results
            .iter()
            .map(|r| {
                let a = &r.activity;
                serde_json::json!({
                    "id": a.id,
                    "title": a.title,
                    "type": a.kind,
                    "description": a.description,
                    "startAt": a.start_at.with_timezone(&zone).to_rfc3339(),
                    "locationName": a.location_name,
                    "distanceKm": r.distance_km.map(|d| (d * 10.0).round() / 10.0),
                    "spotsLeft": a.spots_left(),
                    "similarity": r.similarity.map(|s| (s * 100.0).round() / 100.0),
                    "matchReason": r.match_reason,
                })
            })
            .collect();
        serde_json::json!({"activities": activities, "strategy": self.strategy, "degraded": self.degraded}).to_string()
    }
}

/// Activity retrieval (seed 004): hard filter, hybrid ranking, personalisation, match reasons;
/// and what users tell it (feedback, preferences).
#[derive(Clone)]
pub struct Retrieval {
    index: Arc<dyn VectorIndex>,
    embedding: EmbeddingService,
    bm25: Arc<Bm25>,
    interests: Interests,
    reasons: Reasons,
    ranking: Ranking,
    clock: Arc<dyn Clock>,
}

impl Retrieval {
    /// Retrieval over `index`, embedding queries with `embedding`, personalised by `interests`.
    pub fn new(
        index: Arc<dyn VectorIndex>,
        embedding: EmbeddingService,
        interests: Interests,
        reasons: Reasons,
        ranking: Ranking,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self { index, embedding, bm25: Arc::new(Bm25::new()), interests, reasons, ranking, clock }
    }

    /// How this retrieval ranks.
    pub fn ranking(&self) -> Ranking {
        self.ranking
    }

    /// The same retrieval ranking by `ranking`.
    pub fn ranked_by(mut self, ranking: Ranking) -> Self {
        self.ranking = ranking;
        self
    }

    /// The same retrieval without an embedder, for `reason`: lexical ranking only.
    pub fn without_embedder(mut self, reason: &str) -> Self {
        self.embedding = self.embedding.without(reason);
        self
    }

    /// The vector index searched.
    pub fn index(&self) -> &Arc<dyn VectorIndex> {
        &self.index
    }

    /// Records that `user` took part in an activity (`{activityId, satisfied}`) and refreshes
    /// the user's kept vectors.
    pub async fn feedback(&self, user: &str, body: &Map<String, Value>) -> Result<Value> {
        self.interests.feedback(&*self.index, user, body).await
    }

    /// Runs `req`. Index faults are errors; embedder faults degrade to lexical ranking.
    pub async fn search(&self, req: &SearchRequest, request_id: &str) -> Result<SearchResponse> {
        let started = Instant::now();
        let filter = HardFilter { after: self.clock.now(), near: req.near, kind: req.kind.clone(), window: req.window };
        let candidates = self.index.count(&filter).await?;
        let mut degraded_reason = None;
        let personal = match &req.user_id {
            Some(user) => Some(self.interests.vectors(user).await?),
            None => None,
        };
        let (strategy, mut results) = if candidates <= DIRECT_MAX {
            let stored = self.index.scroll(&filter, Order::StartAt, DIRECT_MAX).await?;
            (Strategy::FilterOnly, self.by_place_or_time(req, stored)?)
        } else if let Some(query) = &req.semantic_query {
            let kept = personal.as_ref().map_or(&[][..], |(v, _)| v.as_slice());
            self.semantic(req, query, &filter, kept, request_id, &mut degraded_reason).await?
        } else if req.near.is_some() {
            let stored = self.index.scroll(&filter, Order::Any, candidates).await?;
            (Strategy::Distance, self.by_place_or_time(req, stored)?)
        } else {
            let stored = self.index.scroll(&filter, Order::StartAt, req.limit).await?;
            (Strategy::StartTime, self.by_place_or_time(req, stored)?)
        };
        if let Some(query) = &req.semantic_query {
            self.explain(query, &mut results, started, request_id).await;
        }
        Ok(SearchResponse {
            results,
            strategy,
            degraded: degraded_reason.is_some(),
            degraded_reason,
            candidates,
            personalization: personal.map(|(_, source)| source),
            took_ms: started.elapsed().as_millis() as u64,
        })
    }

    /// Nearest first with a location, else soonest first; top `limit`.
    fn by_place_or_time(&self, req: &SearchRequest, stored: Vec<Stored>) -> Result<Vec<Ranked>> {
        let mut ranked = stored
            .iter()
            .map(|s| {
                let activity = activity_of(&s.payload)?;
                let distance_km =
                    req.near.map(|n| distance_km(n.lat, n.lng, activity.location.lat, activity.location.lng));
                Ok(Ranked {
                    activity,
                    similarity: None,
                    score: 0.0,
                    distance_km,
                    max_sim: None,
                    boost: None,
                    match_reason: None,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        if req.near.is_some() {
            ranked.sort_by(|a, b| a.distance_km.partial_cmp(&b.distance_km).unwrap_or(std::cmp::Ordering::Equal));
        } else {
            ranked.sort_by_key(|r| r.activity.start_at);
        }
        ranked.truncate(req.limit);
        for (rank, r) in ranked.iter_mut().enumerate() {
            r.score = match r.distance_km {
                Some(d) => (1.0 / (1.0 + d)) as f32,
                None => 1.0 / (rank + 1) as f32,
            };
        }
        Ok(ranked)
    }

    async fn semantic(
        &self,
        req: &SearchRequest,
        query: &str,
        filter: &HardFilter,
        kept: &[Vec<f32>],
        request_id: &str,
        degraded_reason: &mut Option<String>,
    ) -> Result<(Strategy, Vec<Ranked>)> {
        let sparse = self.bm25.query(query);
        let inputs = [query.to_owned()];
        let embedded = self.embed(&inputs, request_id).await;
        let vector = match embedded {
            Ok(mut v) => v.pop(),
            Err(reason) => {
                tracing::warn!(%reason, "query embedding unavailable: lexical ranking only");
                *degraded_reason = Some(reason);
                None
            }
        };
        let (strategy, fused) = match &vector {
            None => (Strategy::Lexical, self.index.search_sparse(&sparse, filter, CHANNEL_DEPTH).await?),
            Some(v) => {
                let floor = self.ranking.min_similarity.or(self.embedding.min_similarity()).unwrap_or(0.5);
                match self.ranking.fusion {
                    Fusion::Dense => (Strategy::Dense, self.index.search_dense(v, filter, CHANNEL_DEPTH, floor).await?),
                    Fusion::Rrf => {
                        let (dense, lexical) = self.index.search_both(v, floor, &sparse, filter, CHANNEL_DEPTH).await?;
                        (Strategy::Hybrid, rrf(&[(&dense, 1.0), (&lexical, self.ranking.lexical_weight)]))
                    }
                }
            }
        };
        // Personalising or a time in the query may lift a candidate from below the cut: rank a
        // deeper list then.
        let wanted = Wanted::parse(query, self.clock.now(), self.ranking.zone);
        let rerank = !kept.is_empty() || !wanted.is_empty();
        let depth = if rerank { (req.limit * PERSONAL_DEPTH).min(CHANNEL_DEPTH) } else { req.limit };
        let top: Vec<Hit> = fused.into_iter().take(depth).collect();
        let ids: Vec<Uuid> = top.iter().map(|h| h.id).collect();
        let with_dense = vector.is_some() || !kept.is_empty();
        let mut stored: HashMap<Uuid, Stored> =
            self.index.get(&ids, with_dense).await?.into_iter().map(|s| (s.id, s)).collect();
        let mut ranked = Vec::with_capacity(top.len());
        for hit in top {
            // A point deleted between the two reads is skipped.
            let Some(s) = stored.remove(&hit.id).filter(|s| !s.is_tombstone()) else { continue };
            let activity = activity_of(&s.payload)?;
            let similarity = vector.as_deref().zip(s.dense.as_deref()).map(|(q, d)| cosine(q, d));
            let distance_km = req.near.map(|n| distance_km(n.lat, n.lng, activity.location.lat, activity.location.lng));
            let max_sim = s.dense.as_deref().and_then(|d| max_sim(d, kept));
            let (score, boost) = match max_sim {
                Some(m) => (boost(hit.score, m), Some(1.0 + MAX_BOOST * m.clamp(0.0, 1.0))),
                None => (hit.score, None),
            };
            let score = score * (1.0 + TIME_BOOST * wanted.fit(activity.start_at, self.ranking.zone));
            ranked.push(Ranked { activity, similarity, score, distance_km, max_sim, boost, match_reason: None });
        }
        if rerank {
            ranked.sort_by(|a, b| b.score.total_cmp(&a.score));
            ranked.truncate(req.limit);
        }
        Ok((strategy, ranked))
    }

    /// Stores a user's preferences, embedded once when the embedder answers.
    pub async fn set_preferences(&self, user: &str, body: &Map<String, Value>, request_id: &str) -> Result<Value> {
        crate::activities::interests::check_user_id(user)?;
        let (preferences, text) = crate::activities::interests::preferences(body)?;
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

    /// Fills in `matchReason`: the model's where it answered in time, else the template's.
    async fn explain(&self, query: &str, results: &mut [Ranked], started: Instant, request_id: &str) {
        if results.is_empty() {
            return;
        }
        let facts: Vec<Facts<'_>> = results
            .iter()
            .map(|r| Facts { activity: &r.activity, similarity: r.similarity, distance_km: r.distance_km })
            .collect();
        let mut from_model = match &self.reasons {
            Reasons::Off => return,
            Reasons::Template => Default::default(),
            Reasons::Llm { llm, model, timeout, ledger, retry } => {
                // What is left of seed 004's 3 s, less a margin for the answer to go out.
                let left = BUDGET.saturating_sub(started.elapsed() + BUDGET_MARGIN);
                reasons::from_llm(&**llm, model, ledger, *retry, (*timeout).min(left), query, &facts, request_id).await
            }
        };
        let written: Vec<String> = facts
            .iter()
            .map(|f| {
                from_model.remove(&f.activity.id).unwrap_or_else(|| reasons::template(query, f, self.ranking.zone))
            })
            .collect();
        for (r, reason) in results.iter_mut().zip(written) {
            r.match_reason = Some(reason);
        }
    }

    /// Query-side vectors of `inputs` (a query, stated preferences) within the time box, or why
    /// there are none.
    async fn embed(&self, inputs: &[String], request_id: &str) -> std::result::Result<Vec<Vec<f32>>, String> {
        self.embedding.vectors(AGENT, request_id, inputs, Input::Query).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<SearchRequest> {
        SearchRequest::from_json(v.as_object().unwrap())
    }

    #[test]
    fn the_seed_body_parses_and_mistakes_name_the_field() {
        let r = parse(json!({
            "semanticQuery": " 轻松的小局 ",
            "filters": {"location": {"lat": 31.23, "lng": 121.47, "radiusInKm": 5}, "type": "桌游",
                        "timeRange": {"start": "2026-11-27T00:00:00+08:00", "end": "2026-11-28T00:00:00+08:00"}},
            "limit": 10
        }))
        .unwrap();
        assert_eq!(r.semantic_query.as_deref(), Some("轻松的小局"));
        assert_eq!(r.near, Some(Near { lat: 31.23, lng: 121.47, radius_km: 5.0 }));
        assert_eq!((r.kind.as_deref(), r.limit), (Some("桌游"), 10));
        assert_eq!(parse(json!({})).unwrap().limit, DEFAULT_LIMIT);
        for (body, needle) in [
            (json!({"limit": 51}), "limit"),
            (json!({"limit": 0}), "limit"),
            (json!({"semanticQuery": 3}), "semanticQuery"),
            (json!({"filters": {"location": {"lat": 95, "lng": 0, "radiusInKm": 1}}}), "filters.location.lat"),
            (json!({"filters": {"location": {"lat": 30, "lng": 0}}}), "filters.location.radiusInKm"),
            (json!({"filters": {"location": {"lat": 30, "lng": 0, "radiusInKm": -1}}}), "radiusInKm"),
            (
                json!({"filters": {"timeRange": {"start": "tomorrow", "end": "2026-11-28T00:00:00Z"}}}),
                "timeRange.start",
            ),
            (
                json!({"filters": {"timeRange": {"start": "2026-11-29T00:00:00Z", "end": "2026-11-28T00:00:00Z"}}}),
                "after",
            ),
            (json!({"filters": {"colour": "red"}}), "colour"),
            (json!({"semanticQuery": "x", "userID": "u"}), "userID"),
        ] {
            let e = parse(body.clone()).unwrap_err();
            assert_eq!(e.status(), 400, "{body}");
            assert!(e.to_string().contains(needle), "{body}: {e}");
        }
    }

    #[test]
    fn rrf_rewards_agreement_between_channels() {
        let [a, b, c] = [Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(3)];
        let dense = [Hit { id: a, score: 0.9 }, Hit { id: b, score: 0.8 }];
        let lexical = [Hit { id: b, score: 7.0 }, Hit { id: c, score: 5.0 }];
        let fused: Vec<Uuid> = rrf(&[(&dense, 1.0), (&lexical, 1.0)]).into_iter().map(|h| h.id).collect();
        assert_eq!(fused, [b, a, c]);
        // A light lexical list adds to agreement but cannot outrank the dense leader alone.
        let fused: Vec<Uuid> = rrf(&[(&dense, 1.0), (&lexical, 0.3)]).into_iter().map(|h| h.id).collect();
        assert_eq!(fused, [b, a, c]);
        let lexical_first = [Hit { id: c, score: 9.0 }];
        let fused: Vec<Uuid> = rrf(&[(&dense, 1.0), (&lexical_first, 0.3)]).into_iter().map(|h| h.id).collect();
        assert_eq!(fused, [a, b, c]);
    }

    #[test]
    fn distances_and_cosines_are_right() {
        // People's Square to the Bund, Shanghai: about 1.6 km.
        let d = distance_km(31.2304, 121.4737, 31.2400, 121.4900);
        assert!((1.5..1.9).contains(&d), "{d}");
        assert!((cosine(&[1.0, 0.0], &[1.0, 1.0]) - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 1.0]), 0.0);
    }
}
