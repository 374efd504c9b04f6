//! The `search` function's handler: web search with stored citations (seed 000).
//!
//! Routes: `POST /search` (`{query, region?, model?, recency?, domains?, agent?}`),
//! `POST /search/competitors` (`{keyword, domain?, ...}`), `POST /search/trends`
//! (`{topic, timeframe?}`), `POST /search/topic` (`{topic, aspects?, ...}`), and
//! `GET /sources/{requestId}`. Every error is `{"error": {"code", "message"}}` with a 4xx for
//! the caller's mistakes; upstream faults never surface as 5xx (labelled mock data instead).

use lambda_http::{Body, Request, Response};
use shared::api;
use shared::query::Query;
use shared::search::SearchService;
use shared::{Error, Result};

/// Handles one HTTP request. Never fails: errors become JSON error responses.
pub async fn handle(service: &SearchService, req: Request) -> Response<Body> {
    route(service, &req).await.unwrap_or_else(|e| api::error(&e))
}

async fn route(service: &SearchService, req: &Request) -> Result<Response<Body>> {
    let path = req.uri().path().trim_end_matches('/');
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match segments.as_slice() {
        ["search"] => search(service, req, "search").await,
        ["search", kind @ ("competitors" | "trends" | "topic")] => search(service, req, kind).await,
        ["sources", id] => sources(service, req, id).await,
        _ => Err(Error::NotFound(format!("no route for {} {path}", req.method()))),
    }
}

fn allow(req: &Request, method: &'static str) -> Result<()> {
    if req.method().as_str() == method {
        Ok(())
    } else {
        Err(Error::MethodNotAllowed { method: req.method().to_string(), allowed: method })
    }
}

async fn search(service: &SearchService, req: &Request, kind: &str) -> Result<Response<Body>> {
    allow(req, "POST")?;
    let query = Query::from_json(kind, api::body(req)?)?;
    let request_id = api::request_id(req);
    Ok(api::json(200, &service.run(&query, &request_id).await))
}

async fn sources(service: &SearchService, req: &Request, id: &str) -> Result<Response<Body>> {
    allow(req, "GET")?;
    if id.is_empty() || id.len() > 128 || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        return Err(Error::invalid(
            "invalid_request_id",
            "requestId must be 1-128 characters of letters, digits, '-' or '_'",
        ));
    }
    match service.sources(id).await? {
        Some(sources) => Ok(api::json(
            200,
            &serde_json::json!({
                "requestId": id,
                "sources": sources,
                "references": shared::citations::references_markdown(&sources),
            }),
        )),
        None => Err(Error::NotFound(format!("no sources stored for request {id}"))),
    }
}
