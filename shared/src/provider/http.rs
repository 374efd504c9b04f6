//! The one HTTP call and error mapping of the JSON upstreams: `POST` a JSON body with a bearer
//! key, classify the outcome. 2xx gives the body; 401/403 a bad key; 429 a rate limit with its
//! `Retry-After`; 432/433 (Tavily) a plan or spend limit; 408 and 5xx a retryable outage; any
//! other status a refusal. Transport timeouts and network errors are retryable.

use std::time::Duration;

use serde_json::Value;

use super::ProviderError;
use crate::config::Secret;
use crate::retry::parse_retry_after;

/// An HTTP client for one upstream, built once per process.
pub struct JsonClient {
    http: reqwest::Client,
    timeout: Duration,
}

impl JsonClient {
    pub fn new(timeout: Duration) -> Result<Self, ProviderError> {
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(5)))
            .build()
            .map_err(|e| ProviderError::Network(format!("cannot build HTTP client: {e}")))?;
        Ok(Self { http, timeout })
    }

    /// POSTs `body` to `url` with `Authorization: Bearer <key>`; the response body on 2xx.
    pub async fn post(&self, url: &str, key: &Secret, body: &Value) -> Result<Vec<u8>, ProviderError> {
        let response =
            self.http.post(url).bearer_auth(key.expose()).json(body).send().await.map_err(|e| self.transport(&e))?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, std::time::SystemTime::now()));
        let bytes = response.bytes().await.map_err(|e| self.transport(&e))?;
        match status {
            200..=299 => Ok(bytes.to_vec()),
            401 | 403 => Err(ProviderError::Unauthorized { status }),
            429 => Err(ProviderError::RateLimited { retry_after }),
            432 | 433 => Err(ProviderError::LimitReached { status, message: error_message(&bytes) }),
            408 | 500..=599 => Err(ProviderError::Unavailable { status, retry_after }),
            _ => Err(ProviderError::Refused { status, message: error_message(&bytes) }),
        }
    }

    fn transport(&self, e: &reqwest::Error) -> ProviderError {
        if e.is_timeout() {
            ProviderError::Timeout(self.timeout)
        } else {
            // reqwest's message names the URL, never the key (it travels in a header).
            ProviderError::Network(e.to_string())
        }
    }
}

/// The upstream's error message, shortened; never the request.
fn error_message(body: &[u8]) -> String {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let message = parsed
        .as_ref()
        .and_then(|v| {
            [v.pointer("/error/message"), v.pointer("/detail/error"), v.get("detail"), v.get("error")]
                .into_iter()
                .flatten()
                .find_map(Value::as_str)
        })
        .map(str::to_owned)
        .unwrap_or_else(|| String::from_utf8_lossy(body).into_owned());
    message.chars().take(200).collect()
}
