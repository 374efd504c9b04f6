//! Our filters and ids in Qdrant's gRPC types, and its answers back in ours.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use qdrant_client::qdrant::point_id::PointIdOptions;
use qdrant_client::qdrant::{Condition, DatetimeRange, Filter, GeoPoint, GeoRadius, PointId, Range};
use serde_json::{Map, Value};
use uuid::Uuid;

use super::store_error;
use crate::activities::index::{HardFilter, Hit};
use crate::core::error::Result;

pub(super) fn timestamp(t: &DateTime<Utc>) -> qdrant_client::qdrant::Timestamp {
    qdrant_client::qdrant::Timestamp { seconds: t.timestamp(), nanos: t.timestamp_subsec_nanos() as i32 }
}

/// The same conditions as [`HardFilter::to_qdrant_json`], as gRPC types.
pub(super) fn filter(f: &HardFilter) -> Filter {
    let mut must = vec![
        Condition::matches("status", "active".to_owned()),
        Condition::datetime_range("startAt", DatetimeRange { gt: Some(timestamp(&f.after)), ..Default::default() }),
        Condition::range("spotsLeft", Range { gt: Some(0.0), ..Default::default() }),
    ];
    if let Some(kind) = &f.kind {
        must.push(Condition::matches("type", kind.clone()));
    }
    if let Some(near) = f.near {
        must.push(Condition::geo_radius(
            "location",
            GeoRadius {
                center: Some(GeoPoint { lat: near.lat, lon: near.lng }),
                radius: (near.radius_km * 1000.0) as f32,
            },
        ));
    }
    if let Some((start, end)) = &f.window {
        must.push(Condition::datetime_range(
            "startAt",
            DatetimeRange { gte: Some(timestamp(start)), lte: Some(timestamp(end)), ..Default::default() },
        ));
    }
    Filter::must(must)
}

pub(super) fn uuid_of(id: Option<PointId>) -> Result<Uuid> {
    match id.and_then(|id| id.point_id_options) {
        Some(PointIdOptions::Uuid(s)) => s.parse().map_err(|e| store_error("point id", e)),
        other => Err(store_error("point id", format!("unexpected id {other:?}"))),
    }
}

pub(super) fn payload_of(payload: HashMap<String, qdrant_client::qdrant::Value>) -> Map<String, Value> {
    payload.into_iter().map(|(k, v)| (k, v.into_json())).collect()
}

pub(super) fn hits(points: Vec<qdrant_client::qdrant::ScoredPoint>) -> Result<Vec<Hit>> {
    points.into_iter().map(|p| Ok(Hit { id: uuid_of(p.id)?, score: p.score })).collect()
}
