//! The `rag-search` function's handler: semantic activity search within hard filters
//! (seed 004 Requirements 3, 4, 15).
//!
//! Route: `POST /rag/search` with `{semanticQuery?, filters?: {location?: {lat, lng,
//! radiusInKm}, timeRange?: {start, end}, type?}, limit?}` (limit 1-50, default 20). The
//! answer lists `results` (`activity`, `similarity`, `score`, `distanceKm`), the `strategy`
//! that ranked them, whether it was `degraded` (embedder down or unconfigured: lexical
//! ranking, never an error) and how many activities passed the hard filter (`candidates`).

use std::sync::Arc;

use lambda_http::{Body, Request, Response};
use shared::clock::SystemClock;
use shared::config::Config;
use shared::retrieval::{Retrieval, SearchRequest};
use shared::{Error, Result, api, compose};

/// The function's services as the environment configures them.
pub async fn from_env() -> Result<Retrieval> {
    let config = Config::from_env()?;
    let records = compose::records(&config).await?;
    compose::retrieval(&config, compose::vector_index(&config)?, records, Arc::new(SystemClock))
}

/// Handles one HTTP request. Never fails: errors become JSON error responses.
pub async fn handle(app: &Retrieval, req: Request) -> Response<Body> {
    route(app, &req).await.unwrap_or_else(|e| api::error(&e))
}

async fn route(app: &Retrieval, req: &Request) -> Result<Response<Body>> {
    let path = req.uri().path().trim_end_matches('/');
    if path != "/rag/search" {
        return Err(Error::NotFound(format!("no route for {} {path}", req.method())));
    }
    api::allow(req, "POST")?;
    let request = SearchRequest::from_json(&api::json_object(api::body(req)?)?)?;
    Ok(api::json(200, &app.search(&request, &api::request_id(req)).await?))
}
