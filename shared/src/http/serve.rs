//! A function's `main`: [`serve`] sets up logging, builds the app, reads its key secrets at
//! once, and serves its routes through [`super::stream::run`]: buffered for API Gateway and
//! events, streamed to a Function URL's callers, and with the environment held until the work
//! a response leaves behind (a cost record being written) is done, whichever door. An invalid
//! configuration is served as a JSON 500 `misconfigured` naming the setting, instead of an
//! init crash (a bare "Internal Server Error", and an init retried on every request).
//! [`invoke`] sends one request through a router as the runtime would (tests, benches).

use std::future::Future;
use std::sync::Arc;

use lambda_http::Request;
use lambda_http::tower::ServiceExt;

use super::Router;
use super::extract::is_event;
use crate::core::error::Error;

/// Serves the routes `routes` makes over the app `from_env` builds: each answer whole, but a
/// Function URL's streamed, and an event's as [`answer`] says.
pub async fn serve<A, F>(
    from_env: impl FnOnce() -> F,
    routes: impl FnOnce(Arc<A>) -> Router,
) -> Result<(), lambda_http::Error>
where
    F: Future<Output = Result<A, Error>>,
{
    super::logging::init();
    let router = match from_env().await {
        Ok(app) => {
            // Keys in Secrets Manager are read at once, in parallel, not inside the first request.
            crate::core::secrets::prefetch();
            routes(Arc::new(app))
        }
        Err(e @ Error::Config(_)) => misconfigured(e),
        // A store unreachable at init: Lambda retries the init.
        Err(e) => return Err(e.into()),
    };
    super::stream::run(router).await
}

/// `req` through `router`, as [`serve`] answers it: an event (not HTTP) the routes refuse or
/// fail is an error naming why ([`event_outcome`]).
pub async fn answer(router: Router, req: Request) -> Result<super::Response, lambda_http::Error> {
    let event = is_event(req.extensions());
    let response = invoke_streamed(router, req).await;
    if event { event_outcome(response).await } else { Ok(response) }
}

/// An event's answer: an error naming why when the routes refused or failed it, so Lambda
/// retries it and then hands it to the function's on-failure destination.
pub(super) async fn event_outcome(response: super::Response) -> Result<super::Response, lambda_http::Error> {
    if response.status().is_success() {
        return Ok(response);
    }
    let status = response.status().as_u16();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap_or_default();
    let reason = String::from_utf8_lossy(&body);
    let verdict = if status < 500 { "refused" } else { "not applied; retry" };
    tracing::warn!(status, %reason, "event {verdict}");
    Err(format!("event {verdict} (HTTP {status}): {reason}").into())
}

/// Routes that answer every request with `e` (a configuration error): 500 `misconfigured`.
fn misconfigured(e: Error) -> Router {
    tracing::error!(error = %e, "the configuration is invalid: every request answers 500 misconfigured until it is fixed");
    let why = e.to_string();
    let why = why.strip_prefix("configuration error: ").unwrap_or(&why).to_owned();
    let answer = axum::routing::any(move || {
        let why = why.clone();
        async move { Error::Config(why) }
    });
    // Every path and method, inside `finish` (whose own fallback is a 404).
    super::finish(Router::new().route("/", answer.clone()).route("/{*path}", answer))
}

/// `req` through `router`, its answer whole: how a test or a bench invokes a function.
pub async fn invoke(router: Router, req: Request) -> lambda_http::Response<lambda_http::Body> {
    let (parts, body) = invoke_streamed(router, req).await.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
    let body = match String::from_utf8(bytes.to_vec()) {
        Ok(text) if text.is_empty() => lambda_http::Body::Empty,
        Ok(text) => lambda_http::Body::Text(text),
        Err(_) => lambda_http::Body::Binary(bytes.to_vec()),
    };
    lambda_http::Response::from_parts(parts, body)
}

/// `req` through `router`, its body as the function writes it (a stream, for a stream). A
/// path's trailing `/` is dropped first (`/api/research/` is `/api/research`), as the routes
/// were matched before they were declared.
pub async fn invoke_streamed(router: Router, mut req: Request) -> super::Response {
    let path = req.uri().path();
    if path.len() > 1 && path.ends_with('/') {
        let trimmed = match req.uri().query() {
            Some(query) => format!("{}?{query}", path.trim_end_matches('/')),
            None => path.trim_end_matches('/').to_owned(),
        };
        let mut parts = req.uri().clone().into_parts();
        parts.path_and_query = trimmed.parse().ok();
        if let Ok(uri) = lambda_http::http::Uri::from_parts(parts) {
            *req.uri_mut() = uri;
        }
    }
    router.oneshot(req).await.unwrap_or_else(|never| match never {})
}

#[cfg(test)]
mod tests {
    use super::*;

    // Given an invalid setting at init, then every path and method answers 500 `misconfigured`
    // naming the setting (before: the 404 fallback of `finish` hid it).
    #[tokio::test]
    async fn a_misconfigured_function_answers_every_request_500_naming_the_setting() {
        let router = misconfigured(Error::Config("ASSISTANT_TOOLS: no such tool".into()));
        for (method, path) in [("POST", "/chat"), ("GET", "/"), ("DELETE", "/a/b/c")] {
            let req = Request::new(lambda_http::Body::Empty);
            let (mut parts, body) = req.into_parts();
            (parts.method, parts.uri) = (method.parse().unwrap(), path.parse().unwrap());
            let req = Request::from_parts(parts, body);
            let response = invoke(router.clone(), req).await;
            assert_eq!(response.status(), 500, "{method} {path}");
            let body: serde_json::Value = serde_json::from_slice(response.body()).unwrap();
            assert_eq!(body["error"]["code"], "misconfigured", "{method} {path}");
            assert!(body["error"]["message"].as_str().unwrap().contains("ASSISTANT_TOOLS is invalid"), "{body}");
        }
    }
}
