//! The `rag-search` function's handler: semantic activity search within hard filters
//! (seed 004 Requirements 3, 4, 15).
//!
//! Routes: `POST /users/{userId}/feedback` (`{activityId, satisfied}`), `PUT
//! /users/{userId}/preferences` (`{tags?, vibes?, text?}`), then a search with `userId` is
//! boosted by MaxSim over the user's kept vectors (`shared::interests`). Those three act as a
//! user: only the user the JWT authorizer verified (`shared::auth::Users`; 401 without a token,
//! 403 as anyone else);
//! `POST /tools/explore_nearby` (the assistant's tool, listed by the search function's
//! `GET /tools`: `{semanticQuery?, lat, lng, radiusInKm, type?, limit?}`, answered with the
//! model-facing JSON text), and `POST /rag/search` with `{semanticQuery?, filters?: {location?: {lat, lng,
//! radiusInKm}, timeRange?: {start, end}, type?}, limit?}` (limit 1-50, default 20). The
//! answer lists `results` (`activity`, `similarity`, `score`, `distanceKm`), the `strategy`
//! that ranked them, whether it was `degraded` (embedder down or unconfigured: lexical
//! ranking, never an error) and how many activities passed the hard filter (`candidates`).

use std::sync::Arc;

use lambda_http::{Body, Request, Response};
use shared::auth::Users;
use shared::clock::SystemClock;
use shared::config::Config;
use shared::retrieval::{Retrieval, SearchRequest};
use shared::{Error, Result, api, compose, tools};

/// The function's services, and who its users are.
pub struct App {
    pub retrieval: Retrieval,
    pub users: Users,
}

impl App {
    /// Built from `config`'s user claim over `retrieval`.
    pub fn new(config: &Config, retrieval: Retrieval) -> Self {
        Self { retrieval, users: Users::new(config.user_claim.clone()) }
    }

    /// The function's services as the environment configures them.
    pub async fn from_env() -> Result<Self> {
        let config = Config::from_env()?;
        let records = compose::records(&config).await?;
        let retrieval = compose::retrieval(&config, compose::vector_index(&config)?, records, Arc::new(SystemClock))?;
        Ok(Self::new(&config, retrieval))
    }
}

/// Handles one HTTP request. Never fails: errors become JSON error responses.
pub async fn handle(app: &App, req: Request) -> Response<Body> {
    route(app, &req).await.unwrap_or_else(|e| api::error(&e, &api::request_id(&req)))
}

async fn route(this: &App, req: &Request) -> Result<Response<Body>> {
    let App { retrieval: app, users } = this;
    let path = req.uri().path().trim_end_matches('/');
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match segments.as_slice() {
        ["users", user, "feedback"] => {
            api::allow(req, "POST")?;
            users.require(req, user)?;
            let body = api::json_object(api::body(req)?)?;
            return Ok(api::json(200, &app.interests.feedback(&*app.index, user, &body).await?));
        }
        ["users", user, "preferences"] => {
            api::allow(req, "PUT")?;
            users.require(req, user)?;
            let body = api::json_object(api::body(req)?)?;
            return Ok(api::json(200, &app.set_preferences(user, &body, &api::request_id(req)).await?));
        }
        _ => {}
    }
    match path {
        "/rag/search" => {
            api::allow(req, "POST")?;
            let request = SearchRequest::from_json(&api::json_object(api::body(req)?)?)?;
            if let Some(user) = &request.user_id {
                users.require(req, user)?;
            }
            Ok(api::json(200, &app.search(&request, &api::request_id(req)).await?))
        }
        "/tools/explore_nearby" => explore_nearby(app, req).await,
        _ => Err(Error::NotFound(format!("no route for {} {path}", req.method()))),
    }
}

/// The `explore_nearby` tool: the same retrieval as `/rag/search`; the body is the
/// model-facing JSON text, also for bad arguments and failures (so the model can react).
async fn explore_nearby(app: &Retrieval, req: &Request) -> Result<Response<Body>> {
    api::allow(req, "POST")?;
    let args = api::json_object(api::body(req)?)?;
    let text = match SearchRequest::from_tool_arguments(&args) {
        Err(e) => tools::error_string("invalid_arguments", &e.to_string()),
        Ok(request) => match app.search(&request, &api::request_id(req)).await {
            Ok(response) => response.tool_text(app.zone),
            Err(e) => {
                tracing::error!(error = %e, "explore_nearby failed");
                tools::error_string("explore_failed", "activity search is temporarily unavailable")
            }
        },
    };
    Ok(api::raw_json(200, text))
}
