//! The `search` function's handler: web search with stored citations (seed 000), tools for
//! AI assistants (seed 002) and the research node (seed 001).
//!
//! Routes: `POST /search` (`{query, region?, model?, recency?, domains?, agent?}`),
//! `POST /search/competitors` (`{keyword, domain?, ...}`), `POST /search/trends`
//! (`{topic, timeframe?}`), `POST /search/topic` (`{topic, aspects?, ...}`),
//! `GET /sources/{requestId}`, `GET /tools`, `POST /tools/{name}` (`{query, agent?}`), and
//! `POST /research` (`{pipelineId?, prompts?, strategy?, config?}`). Every error is
//! `{"error": {"code", "message"}}` with a 4xx for the caller's mistakes; search upstream
//! faults never surface as 5xx (labelled mock data instead).

use lambda_http::{Body, Request, Response};
use shared::api;
use shared::compose::SearchFunction;
use shared::query::Query;
use shared::research_node::NodeRequest;
use shared::{Error, Result};

/// Handles one HTTP request. Never fails: errors become JSON error responses.
pub async fn handle(app: &SearchFunction, req: Request) -> Response<Body> {
    route(app, &req).await.unwrap_or_else(|e| api::error(&e, &api::request_id(&req)))
}

async fn route(app: &SearchFunction, req: &Request) -> Result<Response<Body>> {
    let path = req.uri().path().trim_end_matches('/');
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match segments.as_slice() {
        ["search"] => search(app, req, "search").await,
        ["search", kind @ ("competitors" | "trends" | "topic")] => search(app, req, kind).await,
        ["sources", id] => sources(app, req, id).await,
        ["tools"] => {
            api::allow(req, "GET")?;
            Ok(api::json(200, &serde_json::json!({"tools": app.tools.definitions()})))
        }
        ["tools", name] => tool(app, req, name).await,
        ["research"] => research(app, req).await,
        _ => Err(Error::NotFound(format!("no route for {} {path}", req.method()))),
    }
}

async fn search(app: &SearchFunction, req: &Request, kind: &str) -> Result<Response<Body>> {
    api::allow(req, "POST")?;
    let query = Query::from_json(kind, api::body(req)?)?;
    billable(app, &query.agent)?;
    let request_id = api::request_id(req);
    Ok(api::json(200, &app.search.run(&query, &request_id).await))
}

async fn sources(app: &SearchFunction, req: &Request, id: &str) -> Result<Response<Body>> {
    api::allow(req, "GET")?;
    if id.is_empty() || id.len() > 128 || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        return Err(Error::invalid(
            "invalid_request_id",
            "requestId must be 1-128 characters of letters, digits, '-' or '_'",
        ));
    }
    match app.search.sources(id).await? {
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

/// Refuses an `agent` outside `AGENTS`: a caller cannot invent cost groups (and metric
/// dimensions) without bound.
fn billable(app: &SearchFunction, agent: &str) -> Result<()> {
    if app.agents.iter().any(|a| a == agent) {
        return Ok(());
    }
    Err(Error::invalid("invalid_agent", format!("agent {agent:?} is not one of AGENTS: {}", app.agents.join(", "))))
}

/// Runs a tool; the body is the model-facing JSON string itself (also for tool failures).
async fn tool(app: &SearchFunction, req: &Request, name: &str) -> Result<Response<Body>> {
    api::allow(req, "POST")?;
    if !app.tools.has(name) {
        return Err(Error::NotFound(format!("tool {name:?} is not available; GET /tools lists the available ones")));
    }
    let body = api::json_object(api::body(req)?)?;
    let query = body
        .get("query")
        .and_then(|q| q.as_str())
        .map(str::trim)
        .filter(|q| !q.is_empty() && q.chars().count() <= 400)
        .ok_or_else(|| {
            Error::invalid("missing_query", "query is required: a non-empty string of at most 400 characters")
        })?;
    let agent = match body.get("agent") {
        None | Some(serde_json::Value::Null) => shared::query::agent_name(None, "assistant")?,
        Some(serde_json::Value::String(a)) => shared::query::agent_name(Some(a), "assistant")?,
        Some(_) => return Err(Error::invalid("invalid_agent", "agent must be a string")),
    };
    billable(app, &agent)?;
    let answer = app.tools.search_web(query, &agent, &api::request_id(req)).await;
    let mut response = api::raw_json(200, answer.result);
    let stored = if answer.sources_stored { "true" } else { "false" };
    response.headers_mut().insert("x-sources-stored", lambda_http::http::HeaderValue::from_static(stored));
    Ok(response)
}

async fn research(app: &SearchFunction, req: &Request) -> Result<Response<Body>> {
    api::allow(req, "POST")?;
    let node_request = NodeRequest::from_json(api::body(req)?)?;
    match app.research.run(&node_request, &api::request_id(req)).await {
        Ok(output) => Ok(api::json(200, &output)),
        Err(e) => {
            let (status, code) = e.status_and_code();
            tracing::error!(error = %e, "research node stopped the pipeline");
            Ok(api::json(status, &serde_json::json!({"error": {"code": code, "message": e.to_string()}})))
        }
    }
}
