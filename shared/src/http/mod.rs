//! The HTTP edge of the functions, and the only module that knows `lambda_http`: JSON
//! responses, the one error body (`{"error": {"code", "message"}}`), methods, body limits,
//! request ids, who the caller is ([`auth`]), and the functions' log subscriber ([`logging`]).

pub mod auth;
pub mod jwt;
pub mod logging;
pub mod settings;
pub mod stream;
pub mod stream_links;

use lambda_http::http::header::CONTENT_TYPE;
use lambda_http::{Body, Request, RequestExt, Response};
use serde::Serialize;

use crate::core::error::Error;

/// Largest request body accepted.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// A JSON response.
pub fn json(status: u16, body: &impl Serialize) -> Response<Body> {
    raw_json(status, serde_json::to_string(body).expect("response bodies serialise"))
}

/// A response whose body is already JSON text.
pub fn raw_json(status: u16, text: String) -> Response<Body> {
    Response::builder()
        .status(status)
        .header(CONTENT_TYPE, "application/json; charset=utf-8")
        .body(Body::Text(text))
        .expect("status and header are valid")
}

/// The header that says what the signed-in user may still spend today, in USD.
pub const BUDGET_LEFT: &str = "x-user-budget-left-usd";

/// `response` saying `left`, the signed-in user's remaining daily budget ([`BUDGET_LEFT`]), when
/// it is known.
pub fn with_budget_left(mut response: Response<Body>, left: Option<f64>) -> Response<Body> {
    if let Some(value) = left.and_then(|usd| format!("{usd:.6}").parse().ok()) {
        response.headers_mut().insert(BUDGET_LEFT, value);
    }
    response
}

/// A route's result as the response to `req`: an error becomes the JSON error response.
pub fn respond(req: &Request, routed: Result<Response<Body>, Error>) -> Response<Body> {
    routed.unwrap_or_else(|e| error(&e, &request_id(req)))
}

/// The path of `req` as segments: `/sources/abc/` is `["sources", "abc"]`.
pub fn segments(req: &Request) -> Vec<&str> {
    req.uri().path().trim_matches('/').split('/').collect()
}

/// A path segment percent-decoded (`auth0%7Cabc` -> `auth0|abc`): 400 `invalid_path` when it is
/// not UTF-8 once decoded or holds a control character.
pub fn decoded(segment: &str) -> Result<String, Error> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    let text = String::from_utf8(out).map_err(|_| Error::invalid("invalid_path", "a path segment is not UTF-8"))?;
    if text.chars().any(char::is_control) {
        return Err(Error::invalid("invalid_path", "a path segment holds a control character"));
    }
    Ok(text)
}

/// The 404 of a request no route takes.
pub fn no_route(req: &Request) -> Error {
    Error::NotFound(format!("no route for {} {}", req.method(), req.uri().path().trim_end_matches('/')))
}

/// The JSON error response for `e` to request `request_id`. 5xx are logged as errors, 4xx as
/// information, with the request id. The detail of our own faults (table ARNs, file paths,
/// setting names) stays in the log: the caller gets a generic message naming the request id.
pub fn error(e: &Error, request_id: &str) -> Response<Body> {
    let status = e.status();
    if status >= 500 {
        tracing::error!(request_id, code = e.code(), error = %e, "request failed");
        answered_5xx();
    } else {
        tracing::info!(request_id, code = e.code(), error = %e, "request refused");
    }
    let mut response = failure(status, e.code(), &public_message(e, request_id));
    if let Some(secs) = e.retry_after_secs() {
        response.headers_mut().insert(lambda_http::http::header::RETRY_AFTER, secs.into());
    }
    response
}

/// Counts one JSON 5xx answer in the EMF metric `Answered5xx`, by function and version: an
/// answer is not a Lambda error, so the canary alarms watch this too, on the version being
/// deployed alone.
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

/// Serves a function whose configuration is invalid (`e`, an [`Error::Config`] from building
/// it): every request answers a JSON 500 `misconfigured` naming the setting, instead of an
/// init crash (a bare "Internal Server Error" from API Gateway, and an init retried on every
/// request). Any other error (a store unreachable at init) is returned: Lambda retries the init.
pub async fn serve_misconfigured(e: Error) -> Result<(), lambda_http::Error> {
    if !matches!(e, Error::Config(_)) {
        return Err(e.into());
    }
    tracing::error!(error = %e, "the configuration is invalid: every request answers 500 misconfigured until it is fixed");
    let e = std::sync::Arc::new(e);
    stream::run(move |req: Request| {
        let response = stream::whole(error(&e, &request_id(&req)));
        async move { response }
    })
    .await
}

/// The one error body, `{"error": {"code", "message"}}`, with `status`.
pub fn failure(status: u16, code: &str, message: &str) -> Response<Body> {
    json(status, &serde_json::json!({"error": {"code": code, "message": message}}))
}

/// Refuses a request whose method is not `method` (405).
pub fn allow(req: &Request, method: &'static str) -> Result<(), Error> {
    if req.method().as_str() == method {
        Ok(())
    } else {
        Err(Error::MethodNotAllowed { method: req.method().to_string(), allowed: method })
    }
}

/// The request body, refused when larger than [`MAX_BODY_BYTES`] or absent.
pub fn body(req: &Request) -> Result<&[u8], Error> {
    body_up_to(req, MAX_BODY_BYTES)
}

/// The request body, refused when larger than `limit` bytes or absent.
pub fn body_up_to(req: &Request, limit: usize) -> Result<&[u8], Error> {
    let bytes: &[u8] = req.body().as_ref();
    if bytes.len() > limit {
        return Err(Error::TooLarge { limit });
    }
    if bytes.is_empty() {
        return Err(Error::invalid("malformed_json", "request body is empty; send a JSON object"));
    }
    Ok(bytes)
}

/// The time the invocation has left before Lambda's deadline, when running in Lambda (none
/// for an emulator's deadline already past: [`crate::core::deadline::left`]).
pub fn time_left(req: &Request) -> Option<std::time::Duration> {
    crate::core::deadline::left(req.lambda_context_ref()?.deadline)
}

/// The Lambda request id when running in Lambda, otherwise a fresh UUID.
/// The span every log line of `req` carries: its request id and its caller as the front door
/// verified it (`backend:<principal>`, `user:<hash of sub>` (the hash the budget logs use), or
/// `anonymous`, which a Function URL's requests are until the function verifies the token:
/// [`auth::Users::verified`] then records the user's hash on it).
pub fn span(req: &Request) -> tracing::Span {
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
    tracing::info_span!("request", request_id = %request_id(req), caller = %caller)
}

pub fn request_id(req: &Request) -> String {
    req.lambda_context_ref()
        .map(|c| c.request_id.clone())
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string())
}

#[cfg(test)]
mod error_tests {
    use super::*;

    #[test]
    fn path_segments_are_percent_decoded() {
        assert_eq!(decoded("auth0%7Cabc").unwrap(), "auth0|abc");
        assert_eq!(decoded("%E5%B0%8F%E5%91%A8").unwrap(), "小周");
        assert_eq!(decoded("100%").unwrap(), "100%");
        assert_eq!(decoded("a%2").unwrap(), "a%2");
        assert_eq!(decoded("%FF").unwrap_err().code(), "invalid_path");
        assert_eq!(decoded("a%0Ab").unwrap_err().code(), "invalid_path");
    }

    #[test]
    fn a_store_fault_keeps_its_internals_in_the_log() {
        let e = Error::Store("arn:aws:dynamodb:eu-west-1:123456789012:table/x at /var/task/data".into());
        let response = error(&e, "req-42");
        assert_eq!(response.status(), 503);
        let body = String::from_utf8_lossy(response.body().as_ref()).into_owned();
        assert!(!body.contains("arn:aws") && !body.contains("/var/task"), "{body}");
        assert!(body.contains("store_unavailable") && body.contains("req-42"), "{body}");
        let bad =
            String::from_utf8_lossy(error(&Error::invalid("x", "field y is wrong"), "r").body().as_ref()).into_owned();
        assert!(bad.contains("field y is wrong"), "a caller's mistake is still explained: {bad}");
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
