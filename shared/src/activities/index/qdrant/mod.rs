//! The vector index on a Qdrant server (`QDRANT_URL`, `QDRANT_API_KEY`) over gRPC.
//!
//! The collection and its payload indexes are created on first use when missing (idempotent),
//! and an existing collection's dense dimension is checked against the embedder's. Writes wait
//! for the server to apply them (`wait: true`), so an acknowledged write is durable.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use qdrant_client::Qdrant;
use qdrant_client::qdrant::{
    Condition, CountPointsBuilder, CreateCollectionBuilder, CreateFieldIndexCollectionBuilder, DeletePointsBuilder,
    Distance, Expression, FieldType, Filter, FormulaBuilder, GeoPoint, GetPointsBuilder, Modifier, NamedVectors,
    OrderByBuilder, PointId, PointStruct, PointVectors, PointsIdsList, PointsUpdateOperation, PrefetchQueryBuilder,
    Query, QueryBatchPoints, QueryPointsBuilder, Range, ScrollPointsBuilder, SparseVectorParamsBuilder,
    SparseVectorsConfigBuilder, UpdateBatchPointsBuilder, VectorInput, VectorParamsBuilder, VectorsConfigBuilder,
    points_update_operation::{Operation, PointStructList, SetPayload, UpdateVectors},
    vectors_config,
};
use qdrant_client::{Payload, QdrantError};
use serde_json::Value;
use tokio::sync::OnceCell;
use uuid::Uuid;

use super::{
    DenseSpace, DenseUpdate, HardFilter, Hit, Lift, Order, PAYLOAD_INDEXES, PayloadIndex, Point, SPARSE, SparseVector,
    Stored, TOMBSTONE, VERSION, VectorIndex,
};
use crate::core::error::{Error, Result};
use crate::core::secrets::Secret;

mod convert;

use convert::{dense_of, dense_selector, filter, hits, lifted, payload_of, uuid_of};

/// Points read per scroll page.
const PAGE: u32 = 1000;

pub struct QdrantIndex {
    url: String,
    timeout: Duration,
    api_key: Option<Secret>,
    /// The client of the key as last read (a rotated key gets a client of its own).
    client: std::sync::Mutex<Option<(Arc<str>, Arc<Qdrant>)>>,
    collection: String,
    space: DenseSpace,
    ready: OnceCell<()>,
    /// Reads only (a read-only API key): the collection is checked, never created or indexed.
    read_only: bool,
}

fn store_error(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Store(format!("vector index (qdrant): {what}: {e}"))
}

impl QdrantIndex {
    /// A client for `url`; nothing is sent until the first operation.
    pub fn new(
        url: &str,
        api_key: Option<&Secret>,
        collection: &str,
        space: DenseSpace,
        timeout: Duration,
    ) -> Result<Self> {
        let index = Self {
            url: url.to_owned(),
            timeout,
            api_key: api_key.cloned(),
            client: std::sync::Mutex::new(None),
            collection: collection.to_owned(),
            space,
            ready: OnceCell::new(),
            read_only: false,
        };
        if index.api_key.is_none() {
            // No key to read: the URL is checked now.
            index.build("")?;
        }
        Ok(index)
    }

    fn build(&self, key: &str) -> Result<Arc<Qdrant>> {
        let mut builder =
            Qdrant::from_url(&self.url).timeout(self.timeout).connect_timeout(self.timeout).skip_compatibility_check();
        if !key.is_empty() {
            builder = builder.api_key(key.to_owned());
        }
        let client = Arc::new(builder.build().map_err(|e| Error::Config(format!("QDRANT_URL: {e}")))?);
        *self.client.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some((key.into(), Arc::clone(&client)));
        Ok(client)
    }

    /// The store error of a failed `what`; a refused API key (`Unauthenticated`) has the key
    /// read again before the next request (a rotated one).
    fn grpc(&self, what: &'static str) -> impl Fn(QdrantError) -> Error + '_ {
        move |e| {
            if let (QdrantError::ResponseError { status }, Some(key)) = (&e, &self.api_key)
                && status.code() == tonic::Code::Unauthenticated
            {
                key.refused();
            }
            store_error(what, e)
        }
    }

    /// The client of the API key as it is now.
    async fn client(&self) -> Result<Arc<Qdrant>> {
        let key = match &self.api_key {
            Some(secret) => secret.value().await?,
            None => Arc::from(""),
        };
        let held = self.client.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        match held {
            Some((k, client)) if k == key => Ok(client),
            _ => self.build(&key),
        }
    }

    /// The same client for a function that only reads, with a read-only API key: it checks the
    /// collection and never creates it or its payload indexes (which such a key may not).
    pub fn read_only(mut self) -> Self {
        self.read_only = true;
        self
    }

    async fn ready(&self) -> Result<()> {
        self.ready.get_or_try_init(|| self.create_if_missing()).await.map(|_| ())
    }

    async fn create_if_missing(&self) -> Result<()> {
        let name = &self.collection;
        let exists = self.client().await?.collection_exists(name).await.map_err(self.grpc("collection_exists"))?;
        if exists {
            let info = self.client().await?.collection_info(name).await.map_err(self.grpc("collection_info"))?;
            let found: Vec<(String, usize)> = info
                .result
                .and_then(|i| i.config)
                .and_then(|c| c.params)
                .and_then(|p| p.vectors_config)
                .and_then(|v| v.config)
                .map(|c| match c {
                    vectors_config::Config::ParamsMap(map) => {
                        map.map.into_iter().map(|(n, p)| (n, p.size as usize)).collect()
                    }
                    vectors_config::Config::Params(p) => vec![(String::new(), p.size as usize)],
                })
                .unwrap_or_default();
            if !found.contains(&(self.space.name.clone(), self.space.dimensions)) {
                return Err(self.space.mismatch(&format!("Qdrant collection {name:?}"), &found));
            }
        } else if self.read_only {
            return Err(Error::Store(format!(
                "vector index (qdrant): collection {name:?} does not exist, and this function only reads \
                 (QDRANT_READ_ONLY): create it with the deploy's collection step"
            )));
        } else {
            let mut vectors = VectorsConfigBuilder::default();
            vectors.add_named_vector_params(
                &self.space.name,
                VectorParamsBuilder::new(self.space.dimensions as u64, Distance::Cosine),
            );
            let mut sparse = SparseVectorsConfigBuilder::default();
            sparse.add_named_vector_params(SPARSE, SparseVectorParamsBuilder::default().modifier(Modifier::Idf));
            let create = CreateCollectionBuilder::new(name).vectors_config(vectors).sparse_vectors_config(sparse);
            match self.client().await?.create_collection(create).await {
                Ok(_) => {}
                // Another process created it first: fine, it is the same collection.
                Err(e) if e.to_string().contains("already exists") => {}
                Err(e) => return Err(self.grpc("create_collection")(e)),
            }
        }
        if self.read_only {
            return Ok(());
        }
        for (field, kind) in PAYLOAD_INDEXES {
            let kind = match kind {
                PayloadIndex::Keyword => FieldType::Keyword,
                PayloadIndex::Datetime => FieldType::Datetime,
                PayloadIndex::Geo => FieldType::Geo,
                PayloadIndex::Integer => FieldType::Integer,
            };
            let create = CreateFieldIndexCollectionBuilder::new(name, *field, kind).wait(true);
            self.client().await?.create_field_index(create).await.map_err(self.grpc("create_field_index"))?;
        }
        Ok(())
    }
}

#[async_trait]
impl VectorIndex for QdrantIndex {
    fn backend(&self) -> &'static str {
        "qdrant"
    }

    async fn exists(&self) -> Result<bool> {
        self.client().await?.collection_exists(&self.collection).await.map_err(self.grpc("collection_exists"))
    }

    async fn ensure(&self) -> Result<()> {
        self.ready().await
    }

    async fn scan(
        &self,
        pending_only: bool,
        offset: Option<Uuid>,
        limit: usize,
    ) -> Result<(Vec<Stored>, Option<Uuid>)> {
        self.ready().await?;
        let mut request = ScrollPointsBuilder::new(&self.collection).limit(limit.max(1) as u32).with_payload(true);
        if pending_only {
            request = request.filter(Filter::must([Condition::matches("embedding", "pending".to_owned())]));
        }
        if let Some(offset) = offset {
            request = request.offset(PointId::from(offset.to_string()));
        }
        let response = self.client().await?.scroll(request).await.map_err(self.grpc("scan"))?;
        let points = response
            .result
            .into_iter()
            .map(|p| Ok(Stored { id: uuid_of(p.id)?, payload: payload_of(p.payload), dense: None }))
            .collect::<Result<Vec<_>>>()?;
        Ok((points, response.next_page_offset.map(|id| uuid_of(Some(id))).transpose()?))
    }

    async fn upsert(&self, points: Vec<Point>) -> Result<()> {
        self.ready().await?;
        if points.is_empty() {
            return Ok(());
        }
        // One request; an operation per point, each conditional on its own version.
        let mut operations = Vec::with_capacity(points.len());
        for p in points {
            // As `replaceable_json`: a deletion replaces an equal version, an update only an
            // update of it.
            let version = p.payload.get(VERSION).and_then(Value::as_i64).unwrap_or(i64::MAX) as f64;
            let older = if p.is_tombstone() {
                Filter::should([
                    Condition::is_empty(VERSION),
                    Condition::range(VERSION, Range { lte: Some(version), ..Default::default() }),
                ])
            } else {
                let same =
                    Condition::range(VERSION, Range { gte: Some(version), lte: Some(version), ..Default::default() });
                Filter::should([
                    Condition::is_empty(VERSION),
                    Condition::range(VERSION, Range { lt: Some(version), ..Default::default() }),
                    Filter {
                        must: vec![same],
                        must_not: vec![Condition::matches(TOMBSTONE, true)],
                        ..Default::default()
                    }
                    .into(),
                ])
            };
            let mut vectors = NamedVectors::default()
                .add_vector(SPARSE, qdrant_client::qdrant::Vector::new_sparse(p.sparse.indices, p.sparse.values));
            if let Some(dense) = p.dense {
                vectors = vectors.add_vector(&self.space.name, qdrant_client::qdrant::Vector::new_dense(dense));
            }
            let payload = Payload::try_from(Value::Object(p.payload)).map_err(|e| store_error("payload", e))?;
            let point = PointStruct::new(p.id.to_string(), vectors, payload);
            operations.push(PointsUpdateOperation {
                operation: Some(Operation::Upsert(PointStructList {
                    points: vec![point],
                    update_filter: Some(older),
                    ..Default::default()
                })),
            });
        }
        let request = UpdateBatchPointsBuilder::new(&self.collection, operations).wait(true);
        self.client().await?.update_points_batch(request).await.map_err(self.grpc("upsert"))?;
        Ok(())
    }

    async fn set_dense(&self, updates: Vec<DenseUpdate>) -> Result<()> {
        self.ready().await?;
        if updates.is_empty() {
            return Ok(());
        }
        let mut operations = Vec::with_capacity(updates.len() * 2);
        for u in updates {
            let payload = Payload::try_from(u.payload_json()).map_err(|e| store_error("payload", e))?;
            let id: PointId = u.id.to_string().into();
            let unchanged = Filter::must([
                Condition::has_id([id.clone()]),
                Condition::matches("contentHash", u.content_hash.clone()),
            ]);
            let vectors =
                NamedVectors::default().add_vector(&self.space.name, qdrant_client::qdrant::Vector::new_dense(u.dense));
            operations.push(PointsUpdateOperation {
                operation: Some(Operation::UpdateVectors(UpdateVectors {
                    points: vec![PointVectors { id: Some(id), vectors: Some(vectors.into()) }],
                    update_filter: Some(unchanged.clone()),
                    ..Default::default()
                })),
            });
            operations.push(PointsUpdateOperation {
                operation: Some(Operation::SetPayload(SetPayload {
                    payload: payload.into(),
                    points_selector: Some(unchanged.into()),
                    ..Default::default()
                })),
            });
        }
        let request = UpdateBatchPointsBuilder::new(&self.collection, operations).wait(true);
        self.client().await?.update_points_batch(request).await.map_err(self.grpc("set dense vector"))?;
        Ok(())
    }

    async fn delete(&self, ids: &[Uuid]) -> Result<()> {
        self.ready().await?;
        let ids: Vec<PointId> = ids.iter().map(|id| id.to_string().into()).collect();
        let request = DeletePointsBuilder::new(&self.collection).points(PointsIdsList { ids }).wait(true);
        self.client().await?.delete_points(request).await.map_err(self.grpc("delete"))?;
        Ok(())
    }

    async fn get(&self, ids: &[Uuid], with_dense: bool) -> Result<Vec<Stored>> {
        self.ready().await?;
        let point_ids: Vec<PointId> = ids.iter().map(|id| id.to_string().into()).collect();
        let mut request = GetPointsBuilder::new(&self.collection, point_ids).with_payload(true);
        if with_dense {
            request = request.with_vectors(dense_selector(&self.space.name));
        }
        let response = self.client().await?.get_points(request).await.map_err(self.grpc("get"))?;
        let mut found: HashMap<Uuid, Stored> = HashMap::new();
        for p in response.result {
            let id = uuid_of(p.id)?;
            found.insert(
                id,
                Stored { id, payload: payload_of(p.payload), dense: dense_of(&self.space.name, p.vectors) },
            );
        }
        Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
    }

    async fn get_lifted(&self, ids: &[Uuid], with_dense: bool, lift: &Lift) -> Result<Vec<(Stored, f32)>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        self.ready().await?;
        let mut request = lifted(&self.collection, ids, lift);
        if with_dense {
            request = request.with_vectors(dense_selector(&self.space.name));
        }
        let response = self.client().await?.query(request).await.map_err(self.grpc("lifted get"))?;
        let stored = |p: qdrant_client::qdrant::ScoredPoint| {
            let id = uuid_of(p.id)?;
            Ok((Stored { id, payload: payload_of(p.payload), dense: dense_of(&self.space.name, p.vectors) }, p.score))
        };
        response.result.into_iter().map(stored).collect()
    }

    async fn count(&self, f: &HardFilter) -> Result<usize> {
        self.counted(f, true).await
    }

    async fn estimate(&self, f: &HardFilter) -> Result<usize> {
        self.counted(f, false).await
    }

    async fn scroll(&self, f: &HardFilter, order: Order, limit: usize) -> Result<Vec<Stored>> {
        self.ready().await?;
        let mut out = Vec::new();
        let mut offset: Option<PointId> = None;
        while out.len() < limit {
            let page = (limit - out.len()).min(PAGE as usize) as u32;
            let mut request =
                ScrollPointsBuilder::new(&self.collection).filter(filter(f)).limit(page).with_payload(true);
            if order == Order::StartAt {
                request = request.order_by(OrderByBuilder::new("startAt"));
            }
            if let Some(offset) = offset.take() {
                request = request.offset(offset);
            }
            let response = self.client().await?.scroll(request).await.map_err(self.grpc("scroll"))?;
            for p in response.result {
                out.push(Stored { id: uuid_of(p.id)?, payload: payload_of(p.payload), dense: None });
            }
            match response.next_page_offset {
                Some(next) if order == Order::Any => offset = Some(next),
                _ => break,
            }
        }
        Ok(out)
    }

    /// A formula (minus the geo distance to `location`) over a prefetch of the filter.
    async fn nearest(&self, f: &HardFilter, pool: usize, limit: usize) -> Result<Vec<Stored>> {
        self.ready().await?;
        let near = f.near.ok_or_else(|| store_error("nearest", "the filter has no location"))?;
        let origin = GeoPoint { lat: near.lat, lon: near.lng };
        let request = QueryPointsBuilder::new(&self.collection)
            .add_prefetch(PrefetchQueryBuilder::default().filter(filter(f)).limit(pool.max(limit).max(1) as u64))
            .query(Query::new_formula(FormulaBuilder::new(Expression::neg(Expression::geo_distance_with(
                origin, "location",
            )))))
            .limit(limit as u64)
            .with_payload(true);
        let response = self.client().await?.query(request).await.map_err(self.grpc("nearest"))?;
        response
            .result
            .into_iter()
            .map(|p| Ok(Stored { id: uuid_of(p.id)?, payload: payload_of(p.payload), dense: None }))
            .collect()
    }

    async fn search_dense(&self, vector: &[f32], f: &HardFilter, limit: usize, threshold: f32) -> Result<Vec<Hit>> {
        self.ready().await?;
        let request = self.dense_query(vector, f, limit, threshold);
        hits(self.client().await?.query(request).await.map_err(self.grpc("dense query"))?.result)
    }

    async fn search_sparse(&self, q: &SparseVector, f: &HardFilter, limit: usize) -> Result<Vec<Hit>> {
        self.ready().await?;
        if q.indices.is_empty() {
            return Ok(vec![]);
        }
        hits(
            self.client().await?.query(self.sparse_query(q, f, limit)).await.map_err(self.grpc("sparse query"))?.result,
        )
    }

    /// One `QueryBatch` request for both channels. Not one `Query` with prefetches and RRF:
    /// the server's weighted RRF scores a position as `1 / ((pos + 1) / w + k - 1)` and breaks
    /// no ties, which ranks differently from ours (`w / (k + pos + 1)`, ties by first seen)
    /// whenever the lexical weight is not 1 — and the time and interest boosts need our scores.
    async fn search_both(
        &self,
        dense: &[f32],
        threshold: f32,
        sparse: &SparseVector,
        f: &HardFilter,
        limit: usize,
    ) -> Result<(Vec<Hit>, Vec<Hit>)> {
        if sparse.indices.is_empty() {
            return Ok((self.search_dense(dense, f, limit, threshold).await?, Vec::new()));
        }
        self.ready().await?;
        let batch = QueryBatchPoints {
            collection_name: self.collection.clone(),
            query_points: vec![
                self.dense_query(dense, f, limit, threshold).into(),
                self.sparse_query(sparse, f, limit).into(),
            ],
            read_consistency: None,
            timeout: None,
        };
        let mut results =
            self.client().await?.query_batch(batch).await.map_err(self.grpc("hybrid query"))?.result.into_iter();
        match (results.next(), results.next()) {
            (Some(dense), Some(sparse)) => Ok((hits(dense.result)?, hits(sparse.result)?)),
            _ => Err(store_error("hybrid query", "the server answered fewer than two result lists")),
        }
    }
}

impl QdrantIndex {
    /// The count of `f`'s matches, `exact` or the server's estimate.
    async fn counted(&self, f: &HardFilter, exact: bool) -> Result<usize> {
        self.ready().await?;
        let request = CountPointsBuilder::new(&self.collection).filter(filter(f)).exact(exact);
        let response = self.client().await?.count(request).await.map_err(self.grpc("count"))?;
        Ok(response.result.map_or(0, |r| r.count as usize))
    }

    fn dense_query(&self, vector: &[f32], f: &HardFilter, limit: usize, threshold: f32) -> QueryPointsBuilder {
        QueryPointsBuilder::new(&self.collection)
            .query(VectorInput::new_dense(vector.to_vec()))
            .using(&self.space.name)
            .filter(filter(f))
            .score_threshold(threshold)
            .limit(limit as u64)
    }

    fn sparse_query(&self, q: &SparseVector, f: &HardFilter, limit: usize) -> QueryPointsBuilder {
        QueryPointsBuilder::new(&self.collection)
            .query(VectorInput::new_sparse(q.indices.clone(), q.values.clone()))
            .using(SPARSE)
            .filter(filter(f))
            .limit(limit as u64)
    }
}
