//! The HTTP edge of the functions, and the only module that knows `lambda_http` and axum: each
//! function declares its routes as an axum [`Router`] ([`finish`] adds the JSON 404 and 405, the
//! request's span and the one error mapping), and [`serve`] runs it under the Lambda runtime.
//! The extractors say who calls ([`extract`], [`auth`]); every error a route returns is the one
//! body `{"error": {"code", "message"}}` ([`error`]); [`logging`] is the functions' log subscriber.
//!
//! Every route checks in one order: the method (405), the caller (401/403), the path's id
//! (400), then the body (413/400), so a request wrong twice gets the same answer on every route.

pub mod auth;
pub mod extract;
pub mod jwt;
pub mod logging;
mod serve;
pub mod settings;
pub mod sse;
pub mod stream;
pub mod stream_links;

use std::sync::Arc;

pub use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::http::HeaderValue;
use axum::http::header::{ALLOW, CONTENT_TYPE, RETRY_AFTER};
use axum::middleware::Next;
use axum::response::IntoResponse;
use lambda_http::RequestExt;
use lambda_http::http::Extensions;
use lambda_http::http::request::Parts;
use serde::Serialize;
pub use serve::{answer, invoke, invoke_streamed, serve};

use crate::core::error::Error;

/// A response of a route.
pub type Response = axum::response::Response;

/// Largest request body accepted.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// A JSON response.
pub fn json(status: u16, body: &impl Serialize) -> Response {
    raw_json(status, serde_json::to_string(body).expect("response bodies serialise"))
}

/// A response whose body is already JSON text.
pub fn raw_json(status: u16, text: String) -> Response {
    typed(status, "application/json; charset=utf-8", text)
}

/// A response of `content_type` with `body`.
pub fn typed(status: u16, content_type: &'static str, body: String) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = axum::http::StatusCode::from_u16(status).expect("a valid status");
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// The header that says what the signed-in user may still spend today, in USD.
pub const BUDGET_LEFT: &str = "x-user-budget-left-usd";

/// `response` saying `left`, the signed-in user's remaining daily budget ([`BUDGET_LEFT`]), when
/// it is known.
pub fn with_budget_left(mut response: Response, left: Option<f64>) -> Response {
    if let Some(value) = left.and_then(|usd| format!("{usd:.6}").parse().ok()) {
        response.headers_mut().insert(BUDGET_LEFT, value);
    }
    response
}

/// An error a route returned, carried on its response until [`finish`]'s layer renders it with
/// the request id.
#[derive(Clone)]
struct Failed(Arc<Error>);

/// Every error a route or an extractor returns is answered through [`error`].
impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let mut response = axum::http::StatusCode::from_u16(self.status()).expect("a valid status").into_response();
        response.extensions_mut().insert(Failed(Arc::new(self)));
        response
    }
}

/// `routes` as a function serves them: a JSON 404 for a path no route takes and a JSON 405 (with
/// `Allow`) for a method a route does not take, HEAD included (it would run a GET route's work,
/// a stream's run or a quota, and drop the answer), each request in its span ([`span`]), and
/// every error answered through [`error`] with the request's id.
pub fn finish(routes: Router) -> Router {
    let routes = routes
        .method_not_allowed_fallback(|method: axum::http::Method| async move {
            Error::MethodNotAllowed { method: method.to_string(), allowed: String::new() }
        })
        .fallback(|method: axum::http::Method, uri: axum::http::Uri| async move {
            Error::NotFound(format!("no route for {method} {}", uri.path()))
        });
    // Around the routes, not inside each: the method router's `Allow` is set by then.
    Router::new().fallback_service(routes).layer(axum::middleware::from_fn(edge))
}

/// The layer of [`finish`]: the request's span around its route, and its error rendered.
async fn edge(request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    let request_id = request_id(&parts.extensions);
    parts.extensions.insert(RequestId(request_id.clone()));
    let span = span(&parts);
    // No route takes TRACE: HEAD is answered as a method a route does not take.
    let (head, path) = (parts.method == axum::http::Method::HEAD, parts.uri.path().to_owned());
    if head {
        parts.method = axum::http::Method::TRACE;
    }
    let mut response = tracing::Instrument::instrument(next.run(Request::from_parts(parts, body)), span.clone()).await;
    if response.status() == axum::http::StatusCode::NO_CONTENT {
        // A 204 has no body and says no length (RFC 9110); axum's routes give every answer one.
        response.headers_mut().remove(axum::http::header::CONTENT_LENGTH);
    }
    let Some(Failed(e)) = response.extensions_mut().remove::<Failed>() else { return response };
    let allow = response.headers().get(ALLOW).and_then(|v| v.to_str().ok()).map(|allow| {
        allow.split(',').map(str::trim).filter(|m| *m != "HEAD" && !m.is_empty()).collect::<Vec<_>>().join(", ")
    });
    let _entered = span.enter();
    match (&*e, allow) {
        (Error::NotFound(_), _) if head => error(&Error::NotFound(format!("no route for HEAD {path}")), &request_id),
        (Error::MethodNotAllowed { method, .. }, Some(allowed)) => {
            let method = if head { "HEAD".to_owned() } else { method.clone() };
            let mut response = error(&Error::MethodNotAllowed { method, allowed: allowed.clone() }, &request_id);
            if let Ok(value) = HeaderValue::from_str(&allowed) {
                response.headers_mut().insert(ALLOW, value);
            }
            response
        }
        _ => error(&e, &request_id),
    }
}

/// The JSON error response for `e` to request `request_id`. 5xx are logged as errors, 4xx as
/// information, with the request id. The detail of our own faults (table ARNs, file paths,
/// setting names) stays in the log: the caller gets a generic message naming the request id.
pub fn error(e: &Error, request_id: &str) -> Response {
    let status = e.status();
    if status >= 500 {
        tracing::error!(request_id, code = e.code(), error = %e, "request failed");
        if e.is_own_failure() {
            answered_5xx();
        }
    } else {
        tracing::info!(request_id, code = e.code(), error = %e, "request refused");
    }
    let mut response =
        json(status, &serde_json::json!({"error": {"code": e.code(), "message": public_message(e, request_id)}}));
    if let Some(secs) = e.retry_after_secs() {
        response.headers_mut().insert(RETRY_AFTER, secs.into());
    }
    response
}

/// Counts one JSON 5xx answer of the function's own ([`Error::is_own_failure`]) in the EMF
/// metric `Answered5xx`, by function and version: an answer is not a Lambda error, so the canary
/// alarms watch this too, on the version being deployed alone.
fn answered_5xx() {
    let function = std::env::var("AWS_LAMBDA_FUNCTION_NAME").unwrap_or_default();
    let version = std::env::var("AWS_LAMBDA_FUNCTION_VERSION").unwrap_or_default();
    crate::core::metrics::count("Answered5xx", &[("FunctionName", &function), ("Version", &version)], 1.0);
}

/// What the caller is told of `e`: our own faults' detail (table ARNs, file paths, setting
/// names) stays in the log.
pub fn public_message(e: &Error, request_id: &str) -> String {
    match e {
        Error::Store(_) => format!("a store we depend on is unavailable or slow; please retry (request {request_id})"),
        Error::Config(why) => match setting(why) {
            Some(name) => format!(
                "the service is misconfigured: {name} is invalid; its operator's log says how (request {request_id})"
            ),
            None => format!("the service is misconfigured; its operator's log says how (request {request_id})"),
        },
        Error::Tool { message, .. } => format!("{message} (request {request_id})"),
        _ => e.to_string(),
    }
}

/// The setting a configuration error opens with (`ASSISTANT_TOOLS: ...`, `RECORD_STORE must
/// be ...`): its name only, never its value.
fn setting(why: &str) -> Option<&str> {
    let name = why.split([':', ' ']).next()?;
    let valid = name.len() > 1
        && name.starts_with(|c: char| c.is_ascii_uppercase())
        && name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    valid.then_some(name)
}

/// The time the invocation has left before Lambda's deadline, when running in Lambda (none
/// for an emulator's deadline already past: [`crate::core::deadline::left`]).
pub fn time_left(extensions: &Extensions) -> Option<std::time::Duration> {
    crate::core::deadline::left(extensions.lambda_context_ref()?.deadline)
}

/// The span every log line of `req` carries: its request id and its caller as the front door
/// verified it (`backend:<principal>`, `user:<hash of sub>` (the hash the budget logs use), or
/// `anonymous`, which a Function URL's requests are until the function verifies the token:
/// [`auth::Users::verified`] then records the user's hash on it).
pub fn span(req: &Parts) -> tracing::Span {
    let caller = match auth::Caller::of(req) {
        auth::Caller::Backend { arn } => format!("backend:{}", auth::principal(&arn)),
        auth::Caller::User { claims } => {
            format!(
                "user:{}",
                claims.get("sub").map_or_else(|| "unknown".to_owned(), |s| crate::core::records::key_part(s, 12))
            )
        }
        auth::Caller::Anonymous => "anonymous".to_owned(),
    };
    tracing::info_span!("request", request_id = %request_id(&req.extensions), caller = %caller)
}

/// The id [`finish`]'s layer gave a request.
#[derive(Clone)]
struct RequestId(String);

/// The Lambda request id when running in Lambda, otherwise a fresh UUID (one per request).
pub fn request_id(extensions: &Extensions) -> String {
    if let Some(RequestId(id)) = extensions.get() {
        return id.clone();
    }
    extensions
        .lambda_context_ref()
        .map(|c| c.request_id.clone())
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string())
}

#[cfg(test)]
mod error_tests {
    use super::*;

    #[test]
    fn a_store_fault_keeps_its_internals_in_the_log() {
        let e = Error::Store("arn:aws:dynamodb:eu-west-1:123456789012:table/x at /var/task/data".into());
        let response = error(&e, "req-42");
        assert_eq!(response.status(), 503);
        let body = body_text(response);
        assert!(!body.contains("arn:aws") && !body.contains("/var/task"), "{body}");
        assert!(body.contains("store_unavailable") && body.contains("req-42"), "{body}");
        let bad = body_text(error(&Error::invalid("x", "field y is wrong"), "r"));
        assert!(bad.contains("field y is wrong"), "a caller's mistake is still explained: {bad}");
    }

    fn body_text(response: Response) -> String {
        let body = futures::executor::block_on(axum::body::to_bytes(response.into_body(), usize::MAX)).unwrap();
        String::from_utf8_lossy(&body).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misconfiguration_names_its_setting_and_never_its_value() {
        let said = |why: &str| public_message(&Error::Config(why.into()), "r-1");
        assert_eq!(
            said(r#"ASSISTANT_TOOLS: tool "x": url "http://secret.example" must be https"#),
            "the service is misconfigured: ASSISTANT_TOOLS is invalid; its operator's log says how (request r-1)"
        );
        assert!(said(r#"RECORD_STORE must be local or dynamodb, not "s3""#).contains(": RECORD_STORE is invalid"));
        assert!(!said(r#"RECORD_STORE must be local or dynamodb, not "s3""#).contains("s3"));
        assert_eq!(
            said("cannot build the JWKS client: tls"),
            "the service is misconfigured; its operator's log says how (request r-1)"
        );
    }
}
