//! The embedded vector index: one Qdrant Edge shard on disk under `DATA_DIR/qdrant/<collection>`.
//!
//! Qdrant Edge is a library, not a server: an open shard holds an exclusive lock on its WAL,
//! so two processes cannot have it open at once. Lambda-style processes (several functions
//! under `cargo lambda watch`, sharing `DATA_DIR`) therefore use it in one of two modes:
//!
//! - [`Sharing::Shared`] (the default): a process takes an exclusive advisory lock on
//!   `<dir>/lock`, loads the shard and keeps both for a short lease: operations within
//!   [`LEASE`] of the last one reuse the open shard (as fast as exclusive mode), then the shard
//!   is closed and the lock released, and a process holding it for [`MAX_HOLD`] hands it over
//!   between two operations. Any number of processes take turns; one that hands the lock over
//!   queues behind the one already waiting for it (a turnstile lock, [`Inner::lock`]), so with
//!   up to three processes a search waits at most one hold per other process; each sees every write
//!   acknowledged before it, since it reopens the shard whenever it takes the lock. (Reopening
//!   only when another process wrote is not possible: an open shard keeps a `flock` on its
//!   WAL, so no other process can load it until this one closes it.)
//! - [`Sharing::Exclusive`] (`EDGE_SHARING=exclusive`): the process opens the shard once and
//!   keeps it, for a process that owns its `DATA_DIR` alone (one Lambda container's `/tmp`,
//!   a benchmark). Another process opening it gets an error, never a corrupt shard.
//!
//! A caller's operations that make one answer (a search's count, estimate and queries) run as
//! one turn ([`one_turn`](super::one_turn)): once the first has the shard, the rest keep it past [`MAX_HOLD`]
//! (up to [`MAX_TURN`]), so a search waits for the others once, not once per operation.
//!
//! In both modes a write is flushed (WAL and segments, synced) before it returns, so an
//! acknowledged write survives the process being frozen or killed right after it answers.
//! Operations are synchronous and run on the blocking thread pool.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use qdrant_edge::{
    ConditionalInsertOperation, CountRequest, CreateIndex, EdgeShard, FieldIndexOperations, Filter, OrderByInterface,
    PayloadFieldSchema, PayloadOps, PayloadSchemaType, PointId, PointInsertOperations, PointOperations,
    PointVectorsPersisted, ScrollRequest, SetPayloadOp, UpdateOperation, UpdateVectorsOp, Vector, VectorInternal,
    VectorOperations, VectorStructInternal, VectorStructPersisted, Vectors, WithPayloadInterface, WithVector,
};
use uuid::Uuid;

use super::{
    DenseSpace, DenseUpdate, HardFilter, Hit, Lift, Order, PAYLOAD_INDEXES, PayloadIndex, Point, SPARSE, SparseVector,
    Stored, continues_turn,
};
use crate::activities::settings::EdgeSharing as Sharing;
use crate::core::error::{Error, Result};

mod convert;
use convert::{config, filter, hits, json_filter, json_path, lifted, nearest, point, query, stored, uuid_of};

/// Points read per scroll page.
const PAGE: usize = 1000;

/// Shared mode: how long after its last operation a process keeps the shard open (and the
/// others waiting).
pub const LEASE: Duration = Duration::from_millis(200);

/// Shared mode: how long a busy process keeps the shard before it lets a waiting one in.
pub const MAX_HOLD: Duration = Duration::from_millis(300);

/// Shared mode: how long a turn's operations keep the shard past [`MAX_HOLD`]; overlapping
/// turns in one process never keep it from the others longer.
pub const MAX_TURN: Duration = Duration::from_millis(1500);

pub struct EdgeIndex {
    inner: Arc<Inner>,
}

struct Inner {
    dir: PathBuf,
    space: DenseSpace,
    sharing: Sharing,
    /// The open shard: for good ([`Sharing::Exclusive`]) or for a lease ([`Sharing::Shared`]).
    held: Mutex<Option<Held>>,
    /// Whether the thread that ends idle leases runs.
    reaper: AtomicBool,
}

/// An open shard; fields drop in order: the shard (flushed, WAL released), then the lock.
struct Held {
    shard: EdgeShard,
    _lock: Option<File>,
    since: Instant,
    last: Instant,
}

fn store_error(what: &str, e: impl std::fmt::Display) -> Error {
    // infra/artifacts-check.py looks for this text: a deploy build must not carry it.
    Error::Store(format!("vector index (edge): {what}: {e}"))
}

impl EdgeIndex {
    /// The collection `collection` under `data_dir`, with dense vectors of `space`.
    /// Nothing is opened until the first operation.
    pub fn new(data_dir: &Path, collection: &str, space: DenseSpace, sharing: Sharing) -> Self {
        let dir = data_dir.join("qdrant").join(collection);
        Self { inner: Arc::new(Inner { dir, space, sharing, held: Mutex::new(None), reaper: AtomicBool::new(false) }) }
    }

    /// Builds the HNSW index of large segments (Edge has no background optimizer). Returns
    /// whether anything changed.
    pub async fn optimize(&self) -> Result<bool> {
        self.run(|shard| {
            let changed = shard.optimize().map_err(|e| store_error("optimize", e))?;
            shard.flush();
            Ok(changed)
        })
        .await
    }

    /// Applies `ops` in order and flushes: durable when this returns.
    async fn apply(&self, ops: Vec<UpdateOperation>, what: &'static str) -> Result<()> {
        self.run(move |shard| {
            for op in ops {
                shard.update(op).map_err(|e| store_error(what, e))?;
            }
            shard.flush();
            Ok(())
        })
        .await
    }

    async fn run<T: Send + 'static>(&self, op: impl FnOnce(&EdgeShard) -> Result<T> + Send + 'static) -> Result<T> {
        let inner = Arc::clone(&self.inner);
        let continuing = continues_turn();
        tokio::task::spawn_blocking(move || inner.with(continuing, op)).await.map_err(|e| store_error("task", e))?
    }
}

/// Closes the shard here and now, so that the lease thread (which may hold the last reference
/// for a moment) never flushes it while the process is exiting.
impl Drop for EdgeIndex {
    fn drop(&mut self) {
        self.inner.held.lock().unwrap_or_else(PoisonError::into_inner).take();
    }
}

impl Inner {
    /// Runs `op` on the shard; a write is durable when this returns (every update is followed
    /// by a flush inside `op`'s callers, and closing flushes too). `continuing`: `op` continues
    /// a turn, so a shard held past [`MAX_HOLD`] is kept up to [`MAX_TURN`].
    fn with<T>(self: &Arc<Self>, continuing: bool, op: impl FnOnce(&EdgeShard) -> Result<T>) -> Result<T> {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let shared = self.sharing == Sharing::Shared;
        let limit = if continuing { MAX_TURN } else { MAX_HOLD };
        if shared && held.as_ref().is_some_and(|h| h.since.elapsed() >= limit) {
            // Held long enough: close, and give a process waiting on the lock its turn.
            *held = None;
            std::thread::sleep(Duration::from_millis(5));
        }
        if held.is_none() {
            let lock = if shared { Some(self.lock()?) } else { None };
            let now = Instant::now();
            *held = Some(Held { shard: self.open_shard()?, _lock: lock, since: now, last: now });
            if shared && !self.reaper.swap(true, Ordering::SeqCst) {
                let weak = Arc::downgrade(self);
                std::thread::Builder::new()
                    .name("edge-lease".into())
                    .spawn(move || end_idle_leases(&weak))
                    .map_err(|e| store_error("start lease thread", e))?;
            }
        }
        let h = held.as_mut().expect("opened above");
        let out = op(&h.shard);
        h.last = Instant::now();
        out
    }

    /// The directory's lock, taken in turn: a process waits for it holding `turnstile`, so one
    /// that hands the lock over (after [`MAX_HOLD`], then a pause) queues behind the process
    /// already waiting instead of racing it (`flock` alone wakes waiters in no order, and a
    /// search waited out several writers' holds). Among four or more processes the turnstile
    /// itself is raced, so the order is no longer strict.
    fn lock(&self) -> Result<File> {
        std::fs::create_dir_all(&self.dir).map_err(|e| store_error("create directory", e))?;
        let open = |name: &str| {
            File::options()
                .create(true)
                .truncate(false)
                .write(true)
                .open(self.dir.join(name))
                .map_err(|e| store_error("open lock", e))
        };
        let turnstile = open("turnstile")?;
        turnstile.lock().map_err(|e| store_error("lock", e))?;
        let file = open("lock")?;
        file.lock().map_err(|e| store_error("lock", e))?;
        Ok(file)
    }

    /// Loads the shard, or creates it with its payload indexes.
    fn open_shard(&self) -> Result<EdgeShard> {
        let path = self.dir.join("shard");
        if path.join("edge_config.json").exists() {
            let shard = EdgeShard::load(&path, None).map_err(|e| {
                if e.to_string().contains("WouldBlock") {
                    Error::Store(format!(
                        "the index at {} is held open by another process (EDGE_SHARING=exclusive there); \
                         processes sharing DATA_DIR need EDGE_SHARING=shared",
                        self.dir.display()
                    ))
                } else {
                    store_error("load", e)
                }
            })?;
            let found: Vec<(String, usize)> = shard.config().vectors.iter().map(|(n, v)| (n.clone(), v.size)).collect();
            if !found.contains(&(self.space.name.clone(), self.space.dimensions)) {
                return Err(self.space.mismatch(&format!("the index at {}", self.dir.display()), &found));
            }
            return Ok(shard);
        }
        std::fs::create_dir_all(&path).map_err(|e| store_error("create directory", e))?;
        let shard = EdgeShard::new(&path, config(&self.space)).map_err(|e| store_error("create", e))?;
        for (field, kind) in PAYLOAD_INDEXES {
            let schema = match kind {
                PayloadIndex::Keyword => PayloadSchemaType::Keyword,
                PayloadIndex::Datetime => PayloadSchemaType::Datetime,
                PayloadIndex::Geo => PayloadSchemaType::Geo,
                PayloadIndex::Integer => PayloadSchemaType::Integer,
            };
            let op = UpdateOperation::FieldIndexOperation(FieldIndexOperations::CreateIndex(CreateIndex {
                field_name: json_path(field)?,
                field_schema: Some(PayloadFieldSchema::FieldType(schema)),
            }));
            shard.update(op).map_err(|e| store_error("create payload index", e))?;
        }
        shard.flush();
        Ok(shard)
    }
}

/// Closes the shard (and releases the lock) once it has been idle for [`LEASE`]; ends with the
/// index.
fn end_idle_leases(inner: &Weak<Inner>) {
    loop {
        std::thread::sleep(LEASE / 4);
        let Some(inner) = inner.upgrade() else { return };
        let mut held = inner.held.lock().unwrap_or_else(PoisonError::into_inner);
        if held.as_ref().is_some_and(|h| h.last.elapsed() >= LEASE) {
            *held = None;
        }
    }
}

#[async_trait]
impl super::VectorIndex for EdgeIndex {
    fn backend(&self) -> &'static str {
        "edge"
    }

    async fn exists(&self) -> Result<bool> {
        Ok(self.inner.dir.join("shard").join("edge_config.json").exists())
    }

    async fn ensure(&self) -> Result<()> {
        self.run(|_| Ok(())).await
    }

    async fn scan(
        &self,
        pending_only: bool,
        offset: Option<Uuid>,
        limit: usize,
    ) -> Result<(Vec<Stored>, Option<Uuid>)> {
        let filter: Option<Filter> = if pending_only {
            Some(serde_json::from_value(super::pending_json()).map_err(|e| store_error("filter", e))?)
        } else {
            None
        };
        self.run(move |shard| {
            let request = ScrollRequest {
                offset: offset.map(PointId::Uuid),
                limit: Some(limit.max(1)),
                filter,
                with_payload: Some(WithPayloadInterface::Bool(true)),
                with_vector: WithVector::Bool(false),
                order_by: None,
            };
            let (records, next) = shard.scroll(request).map_err(|e| store_error("scan", e))?;
            let points = records.into_iter().map(|r| stored(r.id, r.payload, None, "")).collect::<Result<Vec<_>>>()?;
            Ok((points, next.map(uuid_of).transpose()?))
        })
        .await
    }

    async fn upsert(&self, points: Vec<Point>) -> Result<()> {
        if points.is_empty() {
            return Ok(());
        }
        // One conditional write per point: each has its own version to beat.
        let ops = points
            .into_iter()
            .map(|p| {
                let condition = json_filter(super::replaceable_json(&p))?;
                let points_op = PointInsertOperations::PointsList(vec![point(p, &self.inner.space.name)?.into()]);
                Ok(UpdateOperation::PointOperation(PointOperations::UpsertPointsConditional(
                    ConditionalInsertOperation { points_op, condition, update_mode: None },
                )))
            })
            .collect::<Result<Vec<_>>>()?;
        self.apply(ops, "upsert").await
    }

    async fn set_dense(&self, updates: Vec<DenseUpdate>) -> Result<()> {
        if updates.is_empty() {
            return Ok(());
        }
        let dense = self.inner.space.name.clone();
        let mut ops = Vec::with_capacity(updates.len() * 2);
        for u in updates {
            let ready = serde_json::from_value(u.payload_json()).map_err(|e| store_error("payload", e))?;
            let unchanged = json_filter(u.unchanged_json())?;
            let mut named = std::collections::HashMap::new();
            named.insert(dense.clone(), Vector::new_dense(u.dense));
            let vector = VectorStructPersisted::from(VectorStructInternal::from(Vectors::from(named)));
            ops.push(UpdateOperation::VectorOperation(VectorOperations::UpdateVectors(UpdateVectorsOp {
                points: vec![PointVectorsPersisted { id: PointId::Uuid(u.id), vector }],
                update_filter: Some(unchanged.clone()),
            })));
            ops.push(UpdateOperation::PayloadOperation(PayloadOps::SetPayload(SetPayloadOp {
                payload: ready,
                points: None,
                filter: Some(unchanged),
                key: None,
            })));
        }
        self.apply(ops, "set dense vector").await
    }

    async fn delete(&self, ids: &[Uuid]) -> Result<()> {
        let ids: Vec<PointId> = ids.iter().map(|&id| PointId::Uuid(id)).collect();
        self.apply(vec![UpdateOperation::PointOperation(PointOperations::DeletePoints { ids })], "delete").await
    }

    async fn get(&self, ids: &[Uuid], with_dense: bool) -> Result<Vec<Stored>> {
        let ids: Vec<PointId> = ids.iter().map(|&id| PointId::Uuid(id)).collect();
        let dense = self.inner.space.name.clone();
        self.run(move |shard| {
            let vectors = if with_dense { WithVector::Selector(vec![dense.clone()]) } else { WithVector::Bool(false) };
            let records = shard
                .retrieve(&ids, Some(WithPayloadInterface::Bool(true)), Some(vectors))
                .map_err(|e| store_error("retrieve", e))?;
            records.into_iter().map(|r| stored(r.id, r.payload, r.vector, &dense)).collect()
        })
        .await
    }

    async fn get_lifted(&self, ids: &[Uuid], with_dense: bool, lift: &Lift) -> Result<Vec<(Stored, f32)>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let dense = self.inner.space.name.clone();
        let request = lifted(ids, lift, &dense, with_dense)?;
        self.run(move |shard| {
            let points = shard.query(request).map_err(|e| store_error("lifted get", e))?;
            points.into_iter().map(|p| Ok((stored(p.id, p.payload, p.vector, &dense)?, p.score))).collect()
        })
        .await
    }

    async fn count(&self, f: &HardFilter) -> Result<usize> {
        let filter = filter(f)?;
        self.run(move |shard| {
            shard.count(CountRequest { filter: Some(filter), exact: true }).map_err(|e| store_error("count", e))
        })
        .await
    }

    async fn estimate(&self, f: &HardFilter) -> Result<usize> {
        let filter = filter(f)?;
        self.run(move |shard| {
            shard.count(CountRequest { filter: Some(filter), exact: false }).map_err(|e| store_error("estimate", e))
        })
        .await
    }

    async fn scroll(&self, f: &HardFilter, order: Order, limit: usize) -> Result<Vec<Stored>> {
        let filter = filter(f)?;
        let order_by = match order {
            Order::StartAt => Some(OrderByInterface::Key(json_path("startAt")?)),
            Order::Any => None,
        };
        self.run(move |shard| {
            let mut out = Vec::new();
            let mut offset = None;
            while out.len() < limit {
                // Ordered scrolls have no pages: one read of `limit`.
                let page = if order_by.is_some() { limit } else { (limit - out.len()).min(PAGE) };
                let request = ScrollRequest {
                    offset,
                    limit: Some(page),
                    filter: Some(filter.clone()),
                    with_payload: Some(WithPayloadInterface::Bool(true)),
                    with_vector: WithVector::Bool(false),
                    order_by: order_by.clone(),
                };
                let (records, next) = shard.scroll(request).map_err(|e| store_error("scroll", e))?;
                for r in records {
                    out.push(stored(r.id, r.payload, None, "")?);
                }
                match next {
                    Some(next) if order_by.is_none() => offset = Some(next),
                    _ => break,
                }
            }
            Ok(out)
        })
        .await
    }

    async fn nearest(&self, f: &HardFilter, pool: usize, limit: usize) -> Result<Vec<Stored>> {
        let request = nearest(f, pool, limit)?;
        self.run(move |shard| {
            let points = shard.query(request).map_err(|e| store_error("nearest", e))?;
            points.into_iter().map(|p| stored(p.id, p.payload, None, "")).collect()
        })
        .await
    }

    async fn search_dense(&self, vector: &[f32], f: &HardFilter, limit: usize, threshold: f32) -> Result<Vec<Hit>> {
        let request = query(VectorInternal::Dense(vector.to_vec()), &self.inner.space.name, f, limit, Some(threshold))?;
        self.run(move |shard| hits(shard.query(request).map_err(|e| store_error("dense query", e))?)).await
    }

    async fn search_sparse(&self, q: &SparseVector, f: &HardFilter, limit: usize) -> Result<Vec<Hit>> {
        if q.indices.is_empty() {
            return Ok(vec![]);
        }
        let sparse = qdrant_edge::SparseVector { indices: q.indices.clone(), values: q.values.clone() };
        let request = query(VectorInternal::Sparse(sparse), SPARSE, f, limit, None)?;
        self.run(move |shard| hits(shard.query(request).map_err(|e| store_error("sparse query", e))?)).await
    }
}
