//! One function behind two doors: API Gateway's HTTP API, which invokes it and buffers the
//! answer, and a Function URL in `RESPONSE_STREAM` mode, which sends each chunk to the client
//! as it is written. Lambda lets the function choose per invocation; [`run`] streams what came
//! through a Function URL (its request context names a `lambda-url` domain) and buffers the rest.
//!
//! Work may outlive a response: a client that leaves ends its stream while the reply's task
//! still records what it cost. Lambda freezes the environment once the runtime *and* its
//! extensions ask for the next event, so [`run`] registers an internal extension that asks only
//! when every [`Ticket`] of the invocation is dropped (or its deadline passed): the response
//! body holds one, and a handler gives a clone to any task it spawns.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyDataStream, BodyExt};
use lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpResponse;
use lambda_http::http::header::SET_COOKIE;
use lambda_http::http::request::Parts;
use lambda_http::lambda_runtime::{self, FunctionResponse, MetadataPrelude, StreamResponse};
use lambda_http::request::{LambdaRequest, RequestContext};
use lambda_http::{Body, Error, LambdaEvent, Request, RequestExt, service_fn};
use tokio::sync::watch;

use super::{Response, Router};

/// One invocation's work in progress: done when its last clone is dropped.
#[derive(Clone)]
pub struct Ticket(#[allow(dead_code)] Arc<Done>);

struct Done(Arc<watch::Sender<u64>>);

impl Drop for Done {
    fn drop(&mut self) {
        self.0.send_modify(|done| *done += 1);
    }
}

/// A body that holds its invocation's ticket until it is read or dropped.
struct Holding<S> {
    inner: S,
    _ticket: Ticket,
}

impl<S: futures::Stream + Unpin> futures::Stream for Holding<S> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        Pin::new(&mut self.inner).poll_next(cx)
    }
}

/// Registers the internal extension that holds the environment until each invocation's tickets
/// are dropped, or its deadline passed; `None` (logged) where no Extensions API answers.
async fn keeper(done: watch::Receiver<u64>) -> Option<impl Future<Output = Result<(), Error>>> {
    let seen = Arc::new(AtomicU64::new(0));
    let extension = lambda_extension::Extension::new()
        .with_extension_name("reply-keeper")
        // Internal extensions get INVOKE only.
        .with_events(&["INVOKE"])
        .with_events_processor(lambda_extension::service_fn(move |event: lambda_extension::LambdaEvent| {
            let (mut done, invocation) = (done.clone(), seen.fetch_add(1, Ordering::SeqCst) + 1);
            async move {
                let deadline = match event.next {
                    lambda_extension::NextEvent::Invoke(invoke) => invoke.deadline_ms,
                    lambda_extension::NextEvent::Shutdown(_) => return Ok(()),
                };
                // An emulator's deadline already past: as long as Lambda's longest invocation.
                let left = crate::core::deadline::left(deadline).unwrap_or(Duration::from_secs(900));
                if tokio::time::timeout(left, done.wait_for(|d| *d >= invocation)).await.is_err() {
                    tracing::warn!("an invocation's work was still running at its deadline");
                }
                Ok::<(), Error>(())
            }
        }))
        .register()
        .await;
    match extension {
        Ok(extension) => Some(extension.run()),
        Err(e) => {
            tracing::warn!(error = %e, "no Extensions API: work after a response may be frozen");
            None
        }
    }
}

/// A streamed body of `chunks`.
pub fn streamed<S>(chunks: S) -> axum::body::Body
where
    S: futures::Stream<Item = Bytes> + Send + 'static,
{
    use futures::StreamExt;
    axum::body::Body::from_stream(chunks.map(Ok::<_, std::convert::Infallible>))
}

/// An answer with no body (204: nothing to stream).
pub fn no_content() -> Response {
    let mut response = Response::default();
    *response.status_mut() = axum::http::StatusCode::NO_CONTENT;
    response
}

/// `domain` (a payload 2.0 request context's, set by Lambda, never by the client) if it is a
/// Function URL's: `<id>.lambda-url.<region>.on.aws`.
fn function_url(domain: Option<&str>) -> Option<&str> {
    domain.filter(|d| d.contains(".lambda-url.") && d.ends_with(".on.aws"))
}

/// Whether `event` came through a Function URL.
fn via_function_url(event: &LambdaRequest) -> bool {
    match event {
        LambdaRequest::ApiGatewayV2(e) => function_url(e.request_context.domain_name.as_deref()).is_some(),
        _ => false,
    }
}

/// The base URL (`https://<id>.lambda-url.<region>.on.aws`) of the Function URL `req` came
/// through, as the client called it (`X-Forwarded-Proto` and `Host`, set by the door); `None`
/// for a request through API Gateway.
pub fn door_url(req: &Parts) -> Option<String> {
    let Some(RequestContext::ApiGatewayV2(context)) = req.request_context_ref() else { return None };
    let domain = function_url(context.domain_name.as_deref())?;
    let header = |name: &str| req.headers.get(name).and_then(|v| v.to_str().ok()).filter(|v| !v.is_empty());
    let proto = if header("x-forwarded-proto") == Some("http") { "http" } else { "https" };
    Some(format!("{proto}://{}", header("host").unwrap_or(domain)))
}

/// Runs the Lambda runtime with `router`: streamed to Function URL callers, buffered for API
/// Gateway's and for events (an event refused or failed is the invocation's error:
/// [`super::serve::event_outcome`]). Each request carries its invocation's [`Ticket`] in its
/// extensions, and work it leaves behind holds the environment, whichever door it came by.
pub async fn run(router: Router) -> Result<(), Error> {
    let (done, finished) = watch::channel(0u64);
    let done = Arc::new(done);
    let keeper = keeper(finished).await;
    let runtime = lambda_runtime::run(service_fn(move |event: LambdaEvent<LambdaRequest>| {
        let ticket = Ticket(Arc::new(Done(Arc::clone(&done))));
        let streamed = via_function_url(&event.payload);
        let mut request: Request = event.payload.into();
        let passed_through = super::extract::is_event(request.extensions());
        request.extensions_mut().insert(ticket.clone());
        // Work the handler leaves behind ([`crate::core::background::spawn`]) holds the ticket.
        let response = crate::core::background::scope(
            Arc::new(ticket.clone()),
            super::invoke_streamed(router.clone(), request.with_lambda_context(event.context)),
        );
        async move {
            let mut response = response.await;
            if passed_through {
                response = super::serve::event_outcome(response).await?;
            }
            let (parts, body) = response.into_parts();
            Ok::<_, Error>(if streamed {
                let mut headers = parts.headers;
                let cookies = headers
                    .get_all(SET_COOKIE)
                    .iter()
                    .map(|c| String::from_utf8_lossy(c.as_bytes()).into_owned())
                    .collect();
                headers.remove(SET_COOKIE);
                FunctionResponse::StreamingResponse(StreamResponse {
                    metadata_prelude: MetadataPrelude { status_code: parts.status, headers, cookies },
                    stream: Holding { inner: BodyDataStream::new(body), _ticket: ticket },
                })
            } else {
                let bytes = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                drop(ticket);
                if passed_through {
                    // An event's answer is its JSON, as lambda_http answers one (`PassThrough`).
                    FunctionResponse::BufferedResponse(serde_json::from_slice(&bytes).unwrap_or_default())
                } else {
                    let mut buffered = ApiGatewayV2httpResponse::default();
                    buffered.status_code = i64::from(parts.status.as_u16());
                    buffered.headers = parts.headers;
                    buffered.body = Some(Body::Text(String::from_utf8_lossy(&bytes).into_owned()));
                    FunctionResponse::BufferedResponse(serde_json::to_value(buffered)?)
                }
            })
        }
    }));
    match keeper {
        Some(keeper) => tokio::try_join!(runtime, keeper).map(|_| ()),
        None => runtime.await,
    }
}
