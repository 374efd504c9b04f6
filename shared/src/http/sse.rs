//! Server-sent events (`text/event-stream`), the one writer of the timeline's and the
//! assistant's streams: the response head, each frame (`id:`, `event:`, `data:`), the reconnect
//! delay (`retry:`) and the keep-alive comment proxies need to keep a quiet stream open.

use bytes::Bytes;
use futures::Stream;

use super::Response;
use super::stream::streamed;

/// The first chunk of a stream that a client should resume after a second
/// (`EventSource` reconnects with `Last-Event-ID`).
pub const RETRY: Bytes = Bytes::from_static(b"retry: 1000\n\n");

/// A comment line: nothing happened, the stream is alive.
pub const KEEPALIVE: Bytes = Bytes::from_static(b": keepalive\n\n");

/// One event: its `id` (when it has one), its `event` name (none: a `message`) and its `data`,
/// one line of text (JSON).
pub fn frame(id: Option<u32>, event: Option<&str>, data: &str) -> String {
    debug_assert!(!data.contains('\n'), "an event's data is one line");
    let mut frame = String::with_capacity(data.len() + 32);
    if let Some(id) = id {
        frame.push_str(&format!("id: {id}\n"));
    }
    if let Some(event) = event {
        frame.push_str(&format!("event: {event}\n"));
    }
    frame.push_str(&format!("data: {data}\n\n"));
    frame
}

/// A 200 event stream of `chunks` (frames as they happen), with `headers` besides the stream's own.
pub fn response<S>(chunks: S, headers: &[(&'static str, &'static str)]) -> Response
where
    S: Stream<Item = Bytes> + Send + 'static,
{
    let mut response = Response::new(streamed(chunks));
    let head = response.headers_mut();
    head.insert("content-type", "text/event-stream; charset=utf-8".parse().expect("valid"));
    head.insert("cache-control", "no-cache".parse().expect("valid"));
    // Proxies (nginx) pass each frame on at once.
    head.insert("x-accel-buffering", "no".parse().expect("valid"));
    for (name, value) in headers {
        head.insert(*name, value.parse().expect("a valid header value"));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_carry_what_they_have() {
        assert_eq!(frame(Some(3), Some("complete"), "{}"), "id: 3\nevent: complete\ndata: {}\n\n");
        assert_eq!(frame(None, Some("delta"), r#"{"text":"a"}"#), "event: delta\ndata: {\"text\":\"a\"}\n\n");
        assert_eq!(frame(None, None, "[DONE]"), "data: [DONE]\n\n");
    }
}
