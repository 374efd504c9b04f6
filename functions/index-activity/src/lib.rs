//! The `index-activity` function's handler: keeps the activity index current (seed 004).
//!
//! Routes: `POST /activities` (one activity, or an array of up to 100), `PUT
//! /activities/{id}` (create or replace; the body's `id`, if any, must match), `DELETE
//! /activities/{id}`, each for the backend only (a SigV4-signed request: `shared::http::auth`; 401
//! anonymous, 403 a user's token). EventBridge events (`detail-type` `ActivityCreated`, `ActivityUpdated`
//! with the activity in `detail`, `ActivityDeleted` with at least its `id`) take the same
//! paths. A write answers 200 when every activity has its dense vector and 202 when some are
//! pending (embedder absent, failing or slow): the write itself never waits on the embedder.
//! Bad input is a 400 naming the field, and nothing is written. Writes are ordered by the
//! activity's `updatedAt` (on a deletion event, `detail.updatedAt`), else the event's `time`,
//! else the request's: a retried or reordered event older than what is indexed changes
//! nothing (`stale`), and a deletion leaves a tombstone no older write gets past (nor an update
//! of its own version). An event that fails on our side, or that is refused, is an error
//! naming why, so Lambda retries it and then sends it with the reason to the on-failure
//! destination (an SQS queue in template.yaml; `infra/replay-dlq.sh` sends it back).

use std::sync::Arc;

use axum::routing::{post, put};
use serde_json::{Value, json};
use shared::activities::activity::Activity;
use shared::activities::indexing::{Indexer, Report};
use shared::compose::Config;
use shared::core::clock::SystemClock;
use shared::http::extract::{Backend, Body, Event, Id, Invocation};
use shared::http::{self, Response, Router};
use shared::{Error, Result, compose};

/// Largest body accepted (a batch of 100 activities with long descriptions).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// The function's services as the environment configures them.
pub async fn from_env() -> Result<Indexer> {
    let config = Config::from_env()?;
    let records = compose::records(&config).await?;
    compose::indexer(&config, compose::vector_index(&config)?, records, Arc::new(SystemClock))
}

type State = axum::extract::State<Arc<Indexer>>;

/// The function's routes, and EventBridge's events (`POST /events`).
pub fn routes(app: Arc<Indexer>) -> Router {
    http::finish(
        Router::new()
            .route("/activities", post(create))
            .route("/activities/{id}", put(replace).delete(delete))
            .route("/events", post(event))
            .with_state(app),
    )
}

/// The largest body of `POST /activities` (100 activities) and `PUT /activities/{id}`.
type Activities = Body<MAX_BODY_BYTES>;

async fn create(app: State, _: Backend, invocation: Invocation, body: Activities) -> Result<Response> {
    let activities = Indexer::parse(json(&body)?)?;
    Ok(written(&app.upsert(&activities, &invocation.request_id).await?))
}

async fn replace(app: State, _: Backend, Id(id): Id, invocation: Invocation, body: Activities) -> Result<Response> {
    let Value::Object(mut object) = json(&body)? else {
        return Err(Error::invalid("invalid_activity", "send one activity object"));
    };
    match object.get("id") {
        None => {
            object.insert("id".into(), json!(id));
        }
        Some(Value::String(body_id)) if *body_id == id => {}
        Some(other) => {
            return Err(Error::invalid("id_mismatch", format!("id: the body says {other}, the path says {id:?}")));
        }
    }
    let activity = Activity::from_json(Value::Object(object))?;
    Ok(written(&app.upsert(&[activity], &invocation.request_id).await?))
}

async fn delete(app: State, _: Backend, Id(id): Id) -> Result<Response> {
    if app.delete(&id, app.now()).await? {
        Ok(http::json(200, &json!({"id": id, "deleted": true})))
    } else {
        Err(Error::NotFound(format!("activity {id:?} is not indexed")))
    }
}

fn json(body: &[u8]) -> Result<Value> {
    serde_json::from_slice(body)
        .map_err(|e| Error::invalid("malformed_json", format!("request body is not valid JSON: {e}")))
}

fn written(report: &Report) -> Response {
    http::json(if report.complete() { 200 } else { 202 }, report)
}

/// An EventBridge activity event: the same writes as the routes, ordered by the event's time.
async fn event(app: State, invocation: Invocation, Event(event): Event) -> Result<Response> {
    let request_id = &invocation.request_id;
    let event: Value = serde_json::from_slice(&event)
        .map_err(|e| Error::invalid("malformed_event", format!("event is not JSON: {e}")))?;
    let detail_type = event.get("detail-type").and_then(Value::as_str).unwrap_or_default();
    let detail = event.get("detail").cloned().unwrap_or(Value::Null);
    // The version of a write without `updatedAt`: when the event happened, not when it arrived.
    let at = match event.get("time").and_then(Value::as_str) {
        Some(t) => {
            t.parse().map_err(|e| Error::invalid("malformed_event", format!("time: {t:?} is not RFC 3339: {e}")))?
        }
        None => app.now(),
    };
    match detail_type {
        "ActivityCreated" | "ActivityUpdated" => {
            let activity = Activity::from_json(detail)?;
            let report = app.write(&[activity], at, false, request_id).await?;
            tracing::info!(detail_type, report = %json!(report), "activity event applied");
            Ok(written(&report))
        }
        "ActivityDeleted" => {
            let id = detail.get("id").and_then(Value::as_str).ok_or_else(|| {
                Error::invalid("invalid_activity", "id: ActivityDeleted needs the activity id in detail.id")
            })?;
            let at = match detail.get("updatedAt") {
                None | Some(Value::Null) => at,
                Some(v) => v.as_str().and_then(|t| t.parse().ok()).ok_or_else(|| {
                    Error::invalid("invalid_activity", format!("updatedAt: {v} is not an RFC 3339 time"))
                })?,
            };
            let deleted = app.delete(id, at).await?;
            tracing::info!(detail_type, id, deleted, "activity event applied");
            Ok(http::json(200, &json!({"id": id, "deleted": deleted})))
        }
        other => Err(Error::invalid(
            "unsupported_event",
            format!("detail-type {other:?} is not ActivityCreated, ActivityUpdated or ActivityDeleted"),
        )),
    }
}
