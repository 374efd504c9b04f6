//! The functions' log subscriber: Lambda's advanced logging controls (`AWS_LAMBDA_LOG_LEVEL`,
//! else `RUST_LOG`, else INFO; JSON lines with `AWS_LAMBDA_LOG_FORMAT=JSON`), as the runtime's
//! default subscriber reads them, but never at TRACE: the runtime traces every raw event it
//! receives, headers (`Authorization`, `X-Amz-Security-Token`) and JWT claims included, and
//! no log level a deployment sets may print those.

use std::str::FromStr;

use lambda_http::tracing::subscriber::filter::{EnvFilter, LevelFilter};
use lambda_http::tracing::subscriber::fmt::MakeWriter;
use lambda_http::tracing::subscriber::layer::SubscriberExt;
use lambda_http::tracing::subscriber::util::SubscriberInitExt;

/// The most a deployment may log.
pub const MAX_LEVEL: LevelFilter = LevelFilter::DEBUG;

/// Installs the subscriber for this process, writing to standard output.
pub fn init() {
    let level = std::env::var("AWS_LAMBDA_LOG_LEVEL").or_else(|_| std::env::var("RUST_LOG"));
    let json = std::env::var("AWS_LAMBDA_LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json"));
    let _ = subscriber(level.as_deref().unwrap_or("INFO"), json, std::io::stdout).try_init();
}

/// The subscriber at `level` (a level or `RUST_LOG` directives), capped at [`MAX_LEVEL`],
/// writing to `writer`.
pub fn subscriber<W>(level: &str, json: bool, writer: W) -> Box<dyn lambda_http::tracing::Subscriber + Send + Sync>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let default = LevelFilter::from_str(level).unwrap_or(LevelFilter::INFO);
    let filter = EnvFilter::builder().with_default_directive(default.into()).parse_lossy(level);
    let fmt = lambda_http::tracing::subscriber::fmt()
        .with_target(false)
        .without_time()
        .with_env_filter(filter)
        .with_writer(writer);
    if json { Box::new(fmt.json().finish().with(MAX_LEVEL)) } else { Box::new(fmt.finish().with(MAX_LEVEL)) }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use super::*;

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'w> MakeWriter<'w> for Buffer {
        type Writer = Buffer;
        fn make_writer(&'w self) -> Self::Writer {
            self.clone()
        }
    }

    // Given a deployment logging at TRACE (or RUST_LOG asking the runtime for it), then the
    // runtime's raw-event line, with its Authorization header, is never written; DEBUG is.
    #[test]
    fn no_log_level_prints_the_raw_event_and_its_headers() {
        for level in ["TRACE", "trace", "lambda_runtime=trace,info"] {
            let buffer = Buffer::default();
            let dispatch = lambda_http::tracing::Dispatch::new(subscriber(level, true, buffer.clone()));
            let _guard = lambda_http::tracing::dispatcher::set_default(&dispatch);
            lambda_http::tracing::trace!(
                target: "lambda_runtime::layers::api_response",
                body = r#"{"headers":{"authorization":"Bearer eyJsecret"}}"#,
                "raw JSON event received from Lambda"
            );
            lambda_http::tracing::debug!(target: "lambda_runtime", "ours at debug");
            let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
            assert!(!text.contains("eyJsecret"), "{level}: {text}");
            assert!(text.contains("ours at debug"), "{level}: {text}");
        }
    }
}
