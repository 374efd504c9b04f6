//! Between the port's types and Qdrant Edge's: the shard's config, points, filters, queries
//! and hits.

use qdrant_edge::external::ordered_float::OrderedFloat;
use qdrant_edge::{
    DecayKind, Distance, EdgeConfig, EdgeConfigBuilder, EdgeSparseVectorParamsBuilder, EdgeVectorParamsBuilder,
    Expression, Filter, Formula, GeoPoint, JsonPath, Modifier, NamedQuery, OperationError, PointId, PointStruct,
    Prefetch, QueryEnum, QueryRequest, ScoringQuery, Vector, VectorInternal, VectorStructInternal, Vectors,
    WithPayloadInterface, WithVector,
};
use serde_json::Value;
use uuid::Uuid;

use crate::activities::index::{DenseSpace, HardFilter, Hit, LIFT_MIDPOINT, Lift, Point, SPARSE, Stored};
use crate::core::error::Result;

use super::store_error;

pub(super) fn config(space: &DenseSpace) -> EdgeConfig {
    EdgeConfigBuilder::new()
        .on_disk_payload(false)
        .vector(&space.name, EdgeVectorParamsBuilder::new(space.dimensions, Distance::Cosine).build())
        .sparse_vector(SPARSE, EdgeSparseVectorParamsBuilder::new().modifier(Modifier::Idf).build())
        .build()
}

pub(super) fn json_path(field: &str) -> Result<JsonPath> {
    field.parse().map_err(|_| store_error("field name", field))
}

pub(super) fn filter(f: &HardFilter) -> Result<Filter> {
    json_filter(f.to_qdrant_json())
}

pub(super) fn json_filter(v: Value) -> Result<Filter> {
    serde_json::from_value(v).map_err(|e| store_error("filter", e))
}

pub(super) fn uuid_of(id: PointId) -> Result<Uuid> {
    match id {
        PointId::Uuid(u) => Ok(u),
        PointId::NumId(n) => Err(store_error("point id", format!("unexpected numeric id {n}"))),
    }
}

fn dense_of(vector: Option<VectorStructInternal>, dense: &str) -> Option<Vec<f32>> {
    match vector? {
        VectorStructInternal::Named(mut named) => match named.remove(dense)? {
            VectorInternal::Dense(v) => Some(v),
            _ => None,
        },
        _ => None,
    }
}

pub(super) fn point(p: Point, dense_name: &str) -> Result<PointStruct> {
    let mut named = std::collections::HashMap::new();
    if let Some(dense) = p.dense {
        named.insert(dense_name.to_owned(), Vector::new_dense(dense));
    }
    let sparse = Vector::new_sparse(p.sparse.indices, p.sparse.values).map_err(|e| store_error("sparse vector", e))?;
    named.insert(SPARSE.to_owned(), sparse);
    Ok(PointStruct::new(PointId::Uuid(p.id), Vectors::from(named), Value::Object(p.payload)))
}

pub(super) fn stored(
    id: PointId,
    payload: Option<qdrant_edge::Payload>,
    vector: Option<VectorStructInternal>,
    dense: &str,
) -> Result<Stored> {
    Ok(Stored { id: uuid_of(id)?, payload: payload.map(|p| p.0).unwrap_or_default(), dense: dense_of(vector, dense) })
}

pub(super) fn query(
    query: VectorInternal,
    using: &str,
    f: &HardFilter,
    limit: usize,
    threshold: Option<f32>,
) -> Result<QueryRequest> {
    Ok(QueryRequest {
        prefetches: vec![],
        query: Some(ScoringQuery::Vector(QueryEnum::Nearest(NamedQuery::new(query, using)))),
        filter: Some(filter(f)?),
        score_threshold: threshold.map(OrderedFloat),
        limit,
        offset: 0,
        params: None,
        with_vector: WithVector::Bool(false),
        with_payload: WithPayloadInterface::Bool(false),
    })
}

/// The `limit` matches of `f` (at most `pool` read) nearest its location: a formula (minus the
/// geo distance to `location`) over a prefetch of the filter, as on the server.
pub(super) fn nearest(f: &HardFilter, pool: usize, limit: usize) -> Result<QueryRequest> {
    let near = f.near.ok_or_else(|| store_error("nearest", "the filter has no location"))?;
    let origin = GeoPoint::new(near.lng, near.lat).map_err(|e| store_error("origin", e))?;
    let formula = Formula {
        formula: Expression::Neg(Box::new(Expression::GeoDistance { origin, to: json_path("location")? })),
        defaults: Default::default(),
    };
    let formula = formula.try_into().map_err(|e: OperationError| store_error("formula", e))?;
    Ok(QueryRequest {
        prefetches: vec![Prefetch {
            prefetches: vec![],
            query: None,
            limit: pool.max(limit).max(1),
            params: None,
            filter: Some(filter(f)?),
            score_threshold: None,
        }],
        query: Some(ScoringQuery::Formula(formula)),
        filter: None,
        score_threshold: None,
        limit,
        offset: 0,
        params: None,
        with_vector: WithVector::Bool(false),
        with_payload: WithPayloadInterface::Bool(true),
    })
}

/// The points among `ids`, each scored by `lift`'s formula (see [`Lift`]), as on the server.
pub(super) fn lifted(ids: &[Uuid], lift: &Lift, dense: &str, with_dense: bool) -> Result<QueryRequest> {
    let mut terms = vec![Expression::Constant(1.0)];
    if let Some(n) = lift.near {
        let origin = GeoPoint::new(n.lng, n.lat).map_err(|e| store_error("origin", e))?;
        let decay = Expression::Decay {
            kind: DecayKind::Gauss,
            x: Box::new(Expression::GeoDistance { origin, to: json_path("location")? }),
            target: None,
            midpoint: Some(LIFT_MIDPOINT),
            scale: Some((n.scale_km * 1000.0) as f32),
        };
        terms.push(Expression::Mult(vec![Expression::Constant(n.weight), decay]));
    }
    if let Some(s) = lift.soon {
        let decay = Expression::Decay {
            kind: DecayKind::Exp,
            x: Box::new(Expression::DatetimeKey(json_path("startAt")?)),
            target: Some(Box::new(Expression::Datetime(s.now.to_rfc3339()))),
            midpoint: Some(LIFT_MIDPOINT),
            scale: Some((s.scale_hours * 3600.0) as f32),
        };
        terms.push(Expression::Mult(vec![Expression::Constant(s.weight), decay]));
    }
    let formula = Formula { formula: Expression::Sum(terms), defaults: Default::default() };
    let formula = formula.try_into().map_err(|e: OperationError| store_error("formula", e))?;
    let ids: Vec<String> = ids.iter().map(Uuid::to_string).collect();
    Ok(QueryRequest {
        prefetches: vec![Prefetch {
            prefetches: vec![],
            query: None,
            limit: ids.len().max(1),
            params: None,
            // A point deleted since the search is a tombstone (no place, no time): left out.
            filter: Some(json_filter(serde_json::json!({
                "must": [{"has_id": ids}], "must_not": [{"key": crate::activities::index::TOMBSTONE, "match": {"value": true}}]
            }))?),
            score_threshold: None,
        }],
        query: Some(ScoringQuery::Formula(formula)),
        filter: None,
        score_threshold: None,
        limit: ids.len().max(1),
        offset: 0,
        params: None,
        with_vector: if with_dense { WithVector::Selector(vec![dense.to_owned()]) } else { WithVector::Bool(false) },
        with_payload: WithPayloadInterface::Bool(true),
    })
}

pub(super) fn hits(points: Vec<qdrant_edge::ScoredPoint>) -> Result<Vec<Hit>> {
    points.into_iter().map(|p| Ok(Hit { id: uuid_of(p.id)?, score: p.score })).collect()
}
