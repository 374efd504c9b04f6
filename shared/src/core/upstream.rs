//! What every paid upstream shares: its [`Usage`], the classification of a failed attempt
//! ([`ProviderError`]), and the one HTTP call and error mapping of the JSON upstreams
//! ([`JsonClient`]): `POST` a JSON body with a bearer key, classify the outcome. 2xx gives the body; 401/403 a bad key; 429 a rate limit with its
//! wait (`Retry-After`, else the `X-RateLimit-Reset` family); 432/433 (Tavily) a plan or spend
//! limit; 408 and 5xx a retryable outage; any other status a refusal, whose message names the
//! refused `param` when the upstream's error envelope does. Transport timeouts and network
//! errors are retryable.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::core::retry::{Retryable, parse_retry_after};
use crate::core::secrets::Secret;

/// Token counts and, when the upstream reports it, its own price for the call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// The upstream's own figure (Perplexity `usage.cost.total_cost`); wins over the price table.
    pub provider_cost_usd: Option<f64>,
    /// Billing units of per-request upstreams (Tavily credits).
    pub credits: u32,
    /// Web searches the upstream ran for the call (Perplexity's `search_web` invocations).
    #[serde(default)]
    pub searches: u32,
}

/// Why one attempt failed. Messages never contain credentials.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum ProviderError {
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    /// The request's time budget ran out before the upstream answered (not retried).
    #[error("the request's time budget ran out before the upstream answered")]
    OutOfTime,
    #[error("network error: {0}")]
    Network(String),
    #[error("rate limited (HTTP 429)")]
    RateLimited { retry_after: Option<Duration> },
    #[error("upstream failed with HTTP {status}")]
    Unavailable { status: u16, retry_after: Option<Duration> },
    #[error("upstream rejected the API key (HTTP {status})")]
    Unauthorized { status: u16 },
    #[error("upstream plan or spend limit reached (HTTP {status}): {message}")]
    LimitReached { status: u16, message: String },
    #[error("upstream refused the request with HTTP {status}: {message}")]
    Refused { status: u16, message: String },
    #[error("malformed response: {0}")]
    Malformed(String),
    /// The upstream answered HTTP 200 but its run ended `failed` or `cancelled`.
    #[error("upstream run {status}: {message}")]
    RunFailed { status: String, message: String },
    /// An in-process model could not run (its file missing or broken); not retried.
    #[error("{0}")]
    Local(String),
    /// The upstream's key could not be read (Secrets Manager): the call was not made.
    #[error("{0}")]
    KeyUnavailable(String),
    /// Our own daily budget for the agent is spent: the call was not made.
    #[error("{0}")]
    OverBudget(String),
    /// A streamed reply broke after part of it had reached the client: not retried (the client
    /// would see the text twice), and maybe billed.
    #[error("the reply stream broke after part of it was sent: {0}")]
    Interrupted(String),
}

impl Retryable for ProviderError {
    fn retry_after(&self) -> Option<Option<Duration>> {
        match self {
            Self::Timeout(_) | Self::Network(_) | Self::RunFailed { .. } => Some(None),
            Self::RateLimited { retry_after } | Self::Unavailable { retry_after, .. } => Some(*retry_after),
            Self::Unauthorized { .. }
            | Self::LimitReached { .. }
            | Self::Refused { .. }
            | Self::Malformed(_)
            | Self::OutOfTime
            | Self::Local(_)
            | Self::KeyUnavailable(_)
            | Self::OverBudget(_)
            | Self::Interrupted(_) => None,
        }
    }
}

impl From<crate::core::retry::OutOfTime> for ProviderError {
    fn from(_: crate::core::retry::OutOfTime) -> Self {
        Self::OutOfTime
    }
}

impl ProviderError {
    /// Whether the upstream may have billed a call that ended this way: it was cut off while
    /// the upstream was still working on it.
    pub fn maybe_billed(&self) -> bool {
        matches!(self, Self::Timeout(_) | Self::OutOfTime | Self::Interrupted(_))
    }

    /// Whether the upstream may have charged for the failed call, so its budget hold is kept:
    /// cut short while working, or answered (HTTP 200) with a failed run or an unusable body.
    pub fn may_have_cost(&self) -> bool {
        self.maybe_billed() || matches!(self, Self::RunFailed { .. } | Self::Malformed(_))
    }

    /// Whether the failure says something about the upstream's health. A refusal of this
    /// request's body (HTTP 400 or 422: a field, a filter, this caller's input) does not, so it
    /// must not open the circuit for every other request; a 404 (a wrong base URL) does.
    pub fn counts_against_upstream(&self) -> bool {
        // Nor does a key this container could not read (other containers may hold it).
        !matches!(self, Self::Refused { status: 400 | 422, .. } | Self::KeyUnavailable(_))
    }
}

/// A `reqwest` client built at its first request, not when the function starts: building one
/// reads the system's root certificates, several milliseconds of a cold start that a request
/// refused at the door (or a keyless default) never needs.
pub struct LazyClient {
    client: std::sync::OnceLock<reqwest::Client>,
    builder: Box<dyn Fn() -> reqwest::ClientBuilder + Send + Sync>,
}

impl LazyClient {
    pub fn new(builder: impl Fn() -> reqwest::ClientBuilder + Send + Sync + 'static) -> Self {
        Self { client: std::sync::OnceLock::new(), builder: Box::new(builder) }
    }

    /// The client, built now if it is not yet.
    pub fn get(&self) -> Result<&reqwest::Client, String> {
        if let Some(client) = self.client.get() {
            return Ok(client);
        }
        let built = (self.builder)().build().map_err(|e| format!("cannot build an HTTP client: {e}"))?;
        Ok(self.client.get_or_init(|| built))
    }
}

/// An HTTP client for one upstream, built once per process, at its first call.
pub struct JsonClient {
    http: LazyClient,
    timeout: Duration,
}

impl JsonClient {
    pub fn new(timeout: Duration) -> Result<Self, ProviderError> {
        let http = LazyClient::new(move || {
            reqwest::Client::builder().timeout(timeout).connect_timeout(timeout.min(Duration::from_secs(5)))
        });
        Ok(Self { http, timeout })
    }

    /// POSTs `body` to `url` with `Authorization: Bearer <key>`; the response body on 2xx.
    pub async fn post(&self, url: &str, key: &Secret, body: &Value) -> Result<Vec<u8>, ProviderError> {
        let response = self.post_streaming(url, key, body).await?;
        Ok(response.bytes().await.map_err(|e| self.transport(&e))?.to_vec())
    }

    /// POSTs as [`Self::post`] does, and gives the 2xx response unread (a stream to read on).
    pub async fn post_streaming(
        &self,
        url: &str,
        key: &Secret,
        body: &Value,
    ) -> Result<reqwest::Response, ProviderError> {
        let bearer = key.value().await.map_err(|e| ProviderError::KeyUnavailable(e.to_string()))?;
        let http = self.http.get().map_err(ProviderError::Network)?;
        let response = http.post(url).bearer_auth(bearer).json(body).send().await.map_err(|e| self.transport(&e))?;
        let status = response.status().as_u16();
        if (200..=299).contains(&status) {
            return Ok(response);
        }
        let retry_after = wait_demanded(response.headers(), std::time::SystemTime::now());
        let bytes = response.bytes().await.map_err(|e| self.transport(&e))?;
        match status {
            401 | 403 => {
                if status == 401 {
                    key.refused(); // a rotated key; a 403 may be about the request, not the key
                }
                Err(ProviderError::Unauthorized { status })
            }
            429 => Err(ProviderError::RateLimited { retry_after }),
            432 | 433 => Err(ProviderError::LimitReached { status, message: error_message(&bytes) }),
            408 | 500..=599 => Err(ProviderError::Unavailable { status, retry_after }),
            _ => Err(ProviderError::Refused { status, message: error_message(&bytes) }),
        }
    }

    pub fn transport(&self, e: &reqwest::Error) -> ProviderError {
        if e.is_timeout() {
            ProviderError::Timeout(self.timeout)
        } else {
            // reqwest's message names the URL, never the key (it travels in a header).
            ProviderError::Network(e.to_string())
        }
    }
}

/// How long a 429 or 5xx asks us to wait: `Retry-After` (seconds or an HTTP date), else the
/// rate-limit reset headers (`X-RateLimit-Reset`, `X-RateLimit-Reset-Requests`) as seconds
/// from now, a Unix time, or a duration such as `250ms` / `1.5s`.
fn wait_demanded(headers: &reqwest::header::HeaderMap, now: std::time::SystemTime) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(wait) = header("retry-after").and_then(|v| parse_retry_after(v, now)) {
        return Some(wait);
    }
    ["x-ratelimit-reset", "x-ratelimit-reset-requests"].into_iter().find_map(|h| parse_reset(header(h)?, now))
}

fn parse_reset(value: &str, now: std::time::SystemTime) -> Option<Duration> {
    let value = value.trim();
    let (number, scale) = match value.strip_suffix("ms") {
        Some(n) => (n, 0.001),
        None => (value.strip_suffix('s').unwrap_or(value), 1.0),
    };
    let secs = number.trim().parse::<f64>().ok().filter(|s| s.is_finite() && (0.0..1e12).contains(s))? * scale;
    // A figure past 2001-09-09 in seconds is a Unix time, not a delay.
    if secs > 1e9 {
        let since_epoch = now.duration_since(std::time::UNIX_EPOCH).ok()?;
        return Some(Duration::from_secs_f64(secs).saturating_sub(since_epoch));
    }
    Some(Duration::from_secs_f64(secs))
}

/// The upstream's error message with the refused `param` if it names one, shortened; never
/// the request.
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
    let mut message: String = message.chars().take(200).collect();
    if let Some(param) = parsed.as_ref().and_then(|v| v.pointer("/error/param")).and_then(Value::as_str) {
        message.push_str(&format!(" (param: {})", param.chars().take(100).collect::<String>()));
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration as D, UNIX_EPOCH};

    #[test]
    fn a_rate_limit_says_how_long_to_wait_in_any_of_its_forms() {
        let now = UNIX_EPOCH + D::from_secs(1_800_000_000);
        let headers = |pairs: &[(&'static str, &str)]| {
            let mut h = reqwest::header::HeaderMap::new();
            for (k, v) in pairs {
                h.insert(*k, v.parse().unwrap());
            }
            h
        };
        assert_eq!(
            wait_demanded(&headers(&[("retry-after", "3"), ("x-ratelimit-reset", "9")]), now),
            Some(D::from_secs(3))
        );
        assert_eq!(wait_demanded(&headers(&[("x-ratelimit-reset", "2")]), now), Some(D::from_secs(2)));
        assert_eq!(wait_demanded(&headers(&[("x-ratelimit-reset", "1800000004")]), now), Some(D::from_secs(4)));
        assert_eq!(wait_demanded(&headers(&[("x-ratelimit-reset-requests", "250ms")]), now), Some(D::from_millis(250)));
        assert_eq!(wait_demanded(&headers(&[("x-ratelimit-reset", "1.5s")]), now), Some(D::from_millis(1500)));
        assert_eq!(wait_demanded(&headers(&[("x-ratelimit-reset", "soon")]), now), None);
        assert_eq!(wait_demanded(&headers(&[("x-ratelimit-reset", "-1")]), now), None);
        assert_eq!(wait_demanded(&headers(&[("x-ratelimit-reset", "1e300")]), now), None);
    }

    #[test]
    fn a_refusal_names_the_refused_param() {
        let body = br#"{"error":{"message":"invalid request body: json: unknown field \"temperature\"","type":"invalid_request","code":400,"param":"temperature"}}"#;
        assert_eq!(
            error_message(body),
            "invalid request body: json: unknown field \"temperature\" (param: temperature)"
        );
    }
}
