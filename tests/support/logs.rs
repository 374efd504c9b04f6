//! This test binary's logs, captured as Lambda's JSON log format writes them: one subscriber
//! per binary, installed by the first call.

use std::sync::{Arc, Mutex, OnceLock};

static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();

struct Sink(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Captures this process's logs from now on (at INFO).
pub fn capture() {
    LOGS.get_or_init(|| {
        use lambda_http::tracing::subscriber::util::SubscriberInitExt;
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&buffer);
        let subscriber = shared::http::logging::subscriber("INFO", true, move || Sink(Arc::clone(&sink)));
        subscriber.try_init().expect("the only subscriber of this test binary");
        buffer
    });
}

/// The log lines so far that mention `needle`.
pub fn lines(needle: &str) -> Vec<String> {
    let buffer = LOGS.get().expect("logs captured").lock().unwrap();
    String::from_utf8_lossy(&buffer).lines().filter(|l| l.contains(needle)).map(str::to_owned).collect()
}
