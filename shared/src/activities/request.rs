//! What callers send activity retrieval and what it answers: the search request (seed 004
//! Requirement 15; `POST /rag/search` and the `explore_nearby` tool's arguments), validated once,
//! each mistake a 400 naming its field; and the response with its ranked results.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde::Serialize;
use serde_json::{Map, Value};

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
}
