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

use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt, Response};
use serde_json::{Value, json};
use shared::activities::activity::Activity;
use shared::activities::indexing::{Indexer, Report};
use shared::compose::Config;
use shared::core::clock::SystemClock;
use shared::http::{self, auth};
use shared::{Error, Result, compose};

/// Largest body accepted (a batch of 100 activities with long descriptions).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// The function's services as the environment configures them.
pub async fn from_env() -> Result<Indexer> {
    let config = Config::from_env()?;
    let records = compose::records(&config).await?;
    compose::indexer(&config, compose::vector_index(&config)?, records, Arc::new(SystemClock))
}

/// Handles one request or event. An event not applied is an `Err` naming why: one failed on
/// our side is retried by Lambda; one refused (4xx: malformed, unsupported) is too, harmlessly
/// (nothing is written), and then lands in the on-failure queue with the reason in its
/// `responsePayload`, never in the void.
pub async fn serve(app: &Indexer, req: Request) -> std::result::Result<Response<Body>, lambda_http::Error> {
    let event = is_event(&req);
    let response = handle(app, req).await;
    let status = response.status();
    if event && (status.is_server_error() || status.is_client_error()) {
        let reason = String::from_utf8_lossy(response.body().as_ref()).into_owned();
        let verdict = if status.is_client_error() { "refused" } else { "not applied; retry" };
        tracing::warn!(status = status.as_u16(), %reason, "activity event {verdict}");
        return Err(format!("activity event {verdict} (HTTP {}): {reason}", status.as_u16()).into());
    }
    Ok(response)
}

/// Handles one request or event. Never fails: errors become JSON error responses.
pub async fn handle(app: &Indexer, req: Request) -> Response<Body> {
    http::respond(&req, route(app, &req).await)
}

fn is_event(req: &Request) -> bool {
    matches!(req.request_context_ref(), Some(RequestContext::PassThrough))
}

async fn route(app: &Indexer, req: &Request) -> Result<Response<Body>> {
    let request_id = http::request_id(req);
    if is_event(req) {
        return event(app, req, &request_id).await;
    }
    let segments = http::segments(req);
    if let ["activities", ..] = segments.as_slice() {
        auth::backend(req)?;
    }
    match segments.as_slice() {
        ["activities"] => {
            http::allow(req, "POST")?;
            let activities = Indexer::parse(body(req)?)?;
            Ok(written(&app.upsert(&activities, &request_id).await?))
        }
        ["activities", id] => match req.method().as_str() {
            "PUT" => {
                let Value::Object(mut object) = body(req)? else {
                    return Err(Error::invalid("invalid_activity", "send one activity object"));
                };
                match object.get("id") {
                    None => {
                        object.insert("id".into(), json!(id));
                    }
                    Some(Value::String(body_id)) if body_id == id => {}
                    Some(other) => {
                        return Err(Error::invalid(
                            "id_mismatch",
                            format!("id: the body says {other}, the path says {id:?}"),
                        ));
                    }
                }
                let activity = Activity::from_json(Value::Object(object))?;
                Ok(written(&app.upsert(&[activity], &request_id).await?))
            }
            "DELETE" => {
                if app.delete(id, app.now()).await? {
                    Ok(http::json(200, &json!({"id": id, "deleted": true})))
                } else {
                    Err(Error::NotFound(format!("activity {id:?} is not indexed")))
                }
            }
            _ => Err(Error::MethodNotAllowed { method: req.method().to_string(), allowed: "PUT, DELETE" }),
        },
        _ => Err(http::no_route(req)),
    }
}

fn body(req: &Request) -> Result<Value> {
    serde_json::from_slice(http::body_up_to(req, MAX_BODY_BYTES)?)
        .map_err(|e| Error::invalid("malformed_json", format!("request body is not valid JSON: {e}")))
}

/// 200 when every activity has its dense vector, 202 when some are pending.
fn written(report: &Report) -> Response<Body> {
    http::json(if report.complete() { 200 } else { 202 }, report)
}

/// An EventBridge activity event.
async fn event(app: &Indexer, req: &Request, request_id: &str) -> Result<Response<Body>> {
    let event: Value = serde_json::from_slice(req.body().as_ref())
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
