//! Our filters and ids in Qdrant's gRPC types, and its answers back in ours.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use qdrant_client::qdrant::point_id::PointIdOptions;
use qdrant_client::qdrant::{
    Condition, DatetimeRange, Filter, FormulaBuilder, GeoPoint, GeoRadius, PointId, PrefetchQueryBuilder, Query,
    QueryPointsBuilder, Range, vector_output, with_vectors_selector,
};
use serde_json::{Map, Value};
use uuid::Uuid;

use super::store_error;
use crate::activities::index::{HardFilter, Hit, LIFT_MIDPOINT, Lift, TOMBSTONE};
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

/// Only the dense vector `name`, of a point's vectors.
pub(super) fn dense_selector(name: &str) -> with_vectors_selector::SelectorOptions {
    with_vectors_selector::SelectorOptions::Include(qdrant_client::qdrant::VectorsSelector {
        names: vec![name.to_owned()],
    })
}

/// The dense vector `name` among a point's `vectors`, if any.
pub(super) fn dense_of(name: &str, vectors: Option<qdrant_client::qdrant::VectorsOutput>) -> Option<Vec<f32>> {
    vectors.and_then(|v| v.get_vector_by_name(name)).and_then(|v| match v {
        vector_output::Vector::Dense(d) => Some(d.data),
        _ => None,
    })
}

/// The points among `ids` of `collection`, each scored by `lift`'s formula (see [`Lift`]); a
/// point deleted since the search (a tombstone: no place, no time) is left out.
pub(super) fn lifted(collection: &str, ids: &[Uuid], lift: &Lift) -> QueryPointsBuilder {
    let point_ids: Vec<PointId> = ids.iter().map(|id| id.to_string().into()).collect();
    let live = Filter {
        must: vec![Condition::has_id(point_ids)],
        must_not: vec![Condition::matches(TOMBSTONE, true)],
        ..Default::default()
    };
    QueryPointsBuilder::new(collection)
        .add_prefetch(PrefetchQueryBuilder::default().filter(live).limit(ids.len() as u64))
        .query(Query::new_formula(FormulaBuilder::new(lift_formula(lift))))
        .limit(ids.len() as u64)
        .with_payload(true)
}

/// `lift`'s formula (see [`Lift`]): the same expression the Edge adapter builds.
fn lift_formula(lift: &Lift) -> qdrant_client::qdrant::Expression {
    use qdrant_client::qdrant::{DecayParamsExpressionBuilder, Expression};
    let mut terms = vec![Expression::constant(1.0)];
    if let Some(n) = lift.near {
        let x = Expression::geo_distance_with(GeoPoint { lat: n.lat, lon: n.lng }, "location");
        let decay = DecayParamsExpressionBuilder::new(x).scale((n.scale_km * 1000.0) as f32).midpoint(LIFT_MIDPOINT);
        terms.push(Expression::mult_with([Expression::constant(n.weight), Expression::gauss_decay(decay)]));
    }
    if let Some(s) = lift.soon {
        let decay = DecayParamsExpressionBuilder::new(Expression::datetime_key("startAt"))
            .target(Expression::datetime(s.now.to_rfc3339()))
            .scale((s.scale_hours * 3600.0) as f32)
            .midpoint(LIFT_MIDPOINT);
        terms.push(Expression::mult_with([Expression::constant(s.weight), Expression::exp_decay(decay)]));
    }
    Expression::sum_with(terms)
}
