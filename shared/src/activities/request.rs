//! What callers send activity retrieval and what it answers: the search request (seed 004
//! Requirement 15; `POST /rag/search` and the `explore_nearby` tool's arguments), validated once,
//! each mistake a 400 naming its field; and the response with its ranked results.

use chrono::{DateTime, FixedOffset, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::activities::activity::Activity;
use crate::activities::index::Near;
use crate::activities::interests::Source;
use crate::core::error::{Error, Result};
use crate::core::json;

pub const DEFAULT_LIMIT: usize = 20;
pub const MAX_LIMIT: usize = 50;
pub const MAX_QUERY_CHARS: usize = 500;
pub const MAX_RADIUS_KM: f64 = 500.0;

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

/// The body of `POST /rag/search`, as sent.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Body {
    semantic_query: Option<String>,
    filters: Option<Filters>,
    limit: Option<u8>,
    user_id: Option<String>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Filters {
    location: Option<Location>,
    time_range: Option<TimeRange>,
    #[serde(rename = "type")]
    kind: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Location {
    lat: f64,
    lng: f64,
    radius_in_km: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TimeRange {
    start: DateTime<FixedOffset>,
    end: DateTime<FixedOffset>,
}

/// The `explore_nearby` tool's arguments, as the model sends them.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ToolArguments {
    semantic_query: Option<String>,
    lat: f64,
    lng: f64,
    radius_in_km: f64,
    #[serde(rename = "type")]
    kind: Option<String>,
    limit: Option<u8>,
}

impl SearchRequest {
    /// Parses and validates a request body; the error names the field's path.
    pub fn from_json(body: &Value) -> Result<Self> {
        json::typed::<Body>(body, "invalid_search")?.validate()
    }

    /// The `explore_nearby` tool's arguments (`semanticQuery?`, `lat`, `lng`, `radiusInKm`,
    /// `type?`, `limit?` default 10) as the same request `/rag/search` takes.
    pub fn from_tool_arguments(args: &Value) -> Result<Self> {
        let a: ToolArguments = json::typed(args, "invalid_search")?;
        let body = Body {
            semantic_query: a.semantic_query,
            filters: Some(Filters {
                location: Some(Location { lat: a.lat, lng: a.lng, radius_in_km: a.radius_in_km }),
                time_range: None,
                kind: a.kind,
            }),
            limit: Some(a.limit.unwrap_or(TOOL_LIMIT)),
            user_id: None,
        };
        body.validate().map_err(|e| invalid(e.to_string().replace("filters.location.", "").replace("filters.", "")))
    }
}

impl Body {
    fn validate(self) -> Result<SearchRequest> {
        let body = self;
        let user_id = body.user_id.map(|u| crate::core::validate::user_id(&u).map(|()| u)).transpose()?;
        let semantic_query = match body.semantic_query {
            Some(q) if q.chars().count() > MAX_QUERY_CHARS => {
                return Err(invalid(format!("semanticQuery is longer than {MAX_QUERY_CHARS} characters")));
            }
            q => q.map(|q| q.trim().to_owned()).filter(|q| !q.is_empty()),
        };
        let limit = match body.limit {
            None => DEFAULT_LIMIT,
            Some(n @ 1..=50) => usize::from(n),
            Some(_) => return Err(invalid(format!("limit must be a whole number from 1 to {MAX_LIMIT}"))),
        };
        let Filters { location, time_range, kind } = body.filters.unwrap_or_default();
        let near = location
            .map(|Location { lat, lng, radius_in_km }| {
                if !(-90.0..=90.0).contains(&lat) {
                    return Err(invalid(format!("filters.location.lat {lat} is not between -90 and 90")));
                }
                if !(-180.0..=180.0).contains(&lng) {
                    return Err(invalid(format!("filters.location.lng {lng} is not between -180 and 180")));
                }
                if radius_in_km <= 0.0 || radius_in_km > MAX_RADIUS_KM {
                    return Err(invalid(format!(
                        "filters.location.radiusInKm must be above 0 and at most {MAX_RADIUS_KM}"
                    )));
                }
                Ok(Near { lat, lng, radius_km: radius_in_km })
            })
            .transpose()?;
        let window = time_range
            .map(|TimeRange { start, end }| {
                let (start, end) = (start.with_timezone(&Utc), end.with_timezone(&Utc));
                if start > end {
                    return Err(invalid("filters.timeRange.start is after filters.timeRange.end"));
                }
                Ok((start, end))
            })
            .transpose()?;
        let kind = match kind {
            Some(t) if t.trim().is_empty() || t.chars().count() > 50 => {
                return Err(invalid("filters.type must be a non-empty string of at most 50 characters"));
            }
            t => t.map(|t| t.trim().to_owned()),
        };
        Ok(SearchRequest { semantic_query, near, window, kind, limit, user_id })
    }
}

/// Results the tool returns unless asked for another number.
pub const TOOL_LIMIT: u8 = 10;

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
    /// The multiplier nearness and soonness gave the score (`index::Lift`), when they did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lift: Option<f32>,
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
    /// Activities through the hard filter: exact up to [`crate::activities::retrieval::EXACT_COUNT_MAX`],
    /// the index's estimate above (`candidatesEstimated`), so the count never reads every match.
    pub candidates: usize,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub candidates_estimated: bool,
    /// Where the personalisation vectors came from, when a `userId` was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub personalization: Option<Source>,
    pub took_ms: u64,
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
                    "similarity": r.similarity.map(|s| (f64::from(s) * 100.0).round() / 100.0),
                    "matchReason": r.match_reason,
                })
            })
            .collect();
        serde_json::json!({"activities": activities, "strategy": self.strategy, "degraded": self.degraded}).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<SearchRequest> {
        SearchRequest::from_json(&v)
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
}
