//! Secrets: a key given in the environment (`NAME`), or one kept in AWS Secrets Manager and
//! named by `NAME_SECRET` (the secret's name or ARN; its value plain text), read at run time so
//! a rotated key reaches running functions without a deploy.
//!
//! A managed secret is read at a function's start ([`prefetch`]) or when first used
//! (`GetSecretValue`, signed with the function's role, within [`READ_TIMEOUT`]) and held for
//! `SECRETS_CACHE_S` (300 s); past that it is read again in the background while the held value
//! serves, and an upstream that refuses the key (401) has it read again before its next use (at
//! most every 10 s). A failed read is not tried again for 5 s, by any caller. With Secrets
//! Manager down the held value serves on; with none held the call fails with a 503 that names
//! nothing of the account or the secret (the log names the variable and Secrets Manager's
//! answer, never the value). Wire format: botocore 1.44.8's
//! `secretsmanager/2017-10-17/service-2.json` (JSON 1.1, target prefix `secretsmanager`).

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::core::aws::Signer;
use crate::core::config::Env;
use crate::core::error::{Error, Fault, OwnFaults, Result};

/// How long one read of a secret may take.
pub const READ_TIMEOUT: Duration = Duration::from_secs(2);
/// After a failed read, how long before the next (a request then fails at once).
const FAILED_PAUSE: Duration = Duration::from_secs(5);
/// The least time between two reads forced by refusals (a revoked key refused on every call).
const REFUSED_PAUSE: Duration = Duration::from_secs(10);

/// A secret. Its `Debug` never shows the value.
#[derive(Clone)]
pub struct Secret(Arc<Inner>);

#[allow(clippy::large_enum_variant)] // one per secret, behind an Arc
enum Inner {
    Given(Arc<str>),
    Managed(Managed),
}

struct Managed {
    /// The variable naming the secret (`PERPLEXITY_API_KEY_SECRET`), for errors and logs.
    variable: String,
    /// The secret's name or ARN.
    id: String,
    region: Option<String>,
    endpoint: Option<String>,
    signer: Arc<Signer>,
    cache: Duration,
    held: Mutex<Held>,
    /// One read at a time.
    reading: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct Held {
    value: Option<Arc<str>>,
    read_at: Option<Instant>,
    failed_at: Option<Instant>,
    /// Failed reads in a row that were the function's own fault (its role, the secret's name),
    /// not Secrets Manager's: from the second on (5 s later: not IAM still taking a role update
    /// in), a configuration error, not a 503.
    own_faults: OwnFaults,
    /// An upstream refused the value: it is read again before the next use.
    refused: bool,
    /// The value held before the last read changed it, and until when it is still accepted:
    /// `SECRETS_CACHE_S` after this container read the new one (a busy container holding the old
    /// one reads again within that; an idle one signs with it until its next request's read).
    previous: Option<(Arc<str>, Instant)>,
    /// When a refusal last had the value read again.
    refused_at: Option<Instant>,
    refreshing: bool,
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.0 {
            Inner::Given(_) => f.write_str("Secret(***)"),
            Inner::Managed(m) => write!(f, "Secret({} = {:?})", m.variable, m.id),
        }
    }
}

impl Eq for Secret {}

impl PartialEq for Secret {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || matches!((&*self.0, &*other.0), (Inner::Given(a), Inner::Given(b)) if a == b)
    }
}

impl Env<'_> {
    /// `name`'s value as a secret, or the Secrets Manager secret `name_SECRET` names (see
    /// [`Secret`]); `None` when neither is set.
    pub fn secret(&self, name: &str) -> Result<Option<Secret>> {
        if let Some(value) = self.get(name) {
            return Ok(Some(Secret(Arc::new(Inner::Given(value.into())))));
        }
        let variable = format!("{name}_SECRET");
        let Some(id) = self.get(&variable) else { return Ok(None) };
        if id.len() > 2048 {
            return Err(Error::Config(format!("{variable} is not a secret's name or ARN (at most 2048 characters)")));
        }
        let endpoint = match self.get("AWS_ENDPOINT_URL_SECRETS_MANAGER") {
            Some(e) => Some(crate::core::validate::endpoint("AWS_ENDPOINT_URL_SECRETS_MANAGER", &e)?),
            None => None,
        };
        let secret = Secret(Arc::new(Inner::Managed(Managed {
            variable,
            id,
            region: self.get("AWS_REGION"),
            endpoint,
            signer: match (self.get("AWS_ACCESS_KEY_ID"), self.get("AWS_SECRET_ACCESS_KEY")) {
                // Lambda gives the role's credentials in the environment.
                (Some(id), Some(key)) => {
                    Arc::new(Signer::with(aws_credential_types::provider::SharedCredentialsProvider::new(
                        aws_credential_types::Credentials::new(
                            id,
                            key,
                            self.get("AWS_SESSION_TOKEN"),
                            None,
                            "environment",
                        ),
                    )))
                }
                _ => default_signer(),
            },
            cache: self.secs("SECRETS_CACHE_S", 300)?.max(Duration::from_secs(1)),
            held: Mutex::default(),
            reading: tokio::sync::Mutex::new(()),
        })));
        let mut list = lock_list();
        list.retain(|w| w.strong_count() > 0);
        list.push(Arc::downgrade(&secret.0));
        Ok(Some(secret))
    }
}

impl Secret {
    /// The value, for building an `Authorization` header or a signing key and nothing else:
    /// the given one, or the managed secret's as held (read first when none is held or the
    /// held one was refused; read again in the background when older than `SECRETS_CACHE_S`).
    pub async fn value(&self) -> Result<Arc<str>> {
        let managed = match &*self.0 {
            Inner::Given(value) => return Ok(Arc::clone(value)),
            Inner::Managed(m) => m,
        };
        let (held, refused, may_read) = {
            let mut h = lock(&managed.held);
            let expired = h.read_at.is_none_or(|at| at.elapsed() >= managed.cache);
            let may_read = !h.refreshing && h.failed_at.is_none_or(|at| at.elapsed() >= FAILED_PAUSE);
            if h.value.is_some() && !h.refused && expired && may_read {
                h.refreshing = true;
                drop(self.fetch());
            }
            (h.value.clone(), h.refused, may_read)
        };
        match held {
            Some(value) if !refused || !may_read => Ok(value),
            // Refused: the new value, else the held one (the upstream may have refused for a while).
            Some(value) => Ok(self.fetch().await.unwrap_or(value)),
            None if may_read => self.fetch().await,
            None => Err(managed.failed(lock(&managed.held).own_faults)),
        }
    }

    /// Reads the managed secret in a task of its own, so a caller that stops waiting (its
    /// deadline) neither cuts the read short nor loses its outcome.
    fn fetch(&self) -> impl Future<Output = Result<Arc<str>>> + use<> {
        let this = self.clone();
        let task = tokio::spawn(async move {
            match &*this.0 {
                Inner::Given(value) => Ok(Arc::clone(value)),
                Inner::Managed(m) => {
                    // Cleared however the read ends (a panic included), so reads never stop.
                    struct Done<'a>(&'a Mutex<Held>);
                    impl Drop for Done<'_> {
                        fn drop(&mut self) {
                            lock(self.0).refreshing = false;
                        }
                    }
                    let _done = Done(&m.held);
                    m.refresh().await
                }
            }
        });
        async move {
            task.await.unwrap_or_else(|e| {
                tracing::error!(error = %e, "reading a secret failed");
                Err(unavailable())
            })
        }
    }

    /// The value held before the last read changed it, for `SECRETS_CACHE_S` after the change:
    /// what a verifier still accepts while other containers sign with it (they hold a key up to
    /// that long), and no longer (a leaked key rotated away stops working everywhere).
    pub fn previous(&self) -> Option<Arc<str>> {
        match &*self.0 {
            Inner::Given(_) => None,
            Inner::Managed(m) => {
                let h = lock(&m.held);
                h.previous.as_ref().filter(|(_, until)| Instant::now() < *until).map(|(value, _)| Arc::clone(value))
            }
        }
    }

    /// An upstream refused the value (HTTP 401: the key is not valid): it is read again before
    /// its next use (a rotated key), at most once every 10 s.
    pub fn refused(&self) {
        if let Inner::Managed(m) = &*self.0 {
            let mut h = lock(&m.held);
            if h.refused_at.is_none_or(|at| at.elapsed() >= REFUSED_PAUSE) {
                (h.refused, h.refused_at) = (true, Some(Instant::now()));
            }
        }
    }

    /// The value when given in the environment (checked when the settings are read); `None`
    /// for a managed one (checked when used).
    pub fn given(&self) -> Option<&str> {
        match &*self.0 {
            Inner::Given(value) => Some(value),
            Inner::Managed(_) => None,
        }
    }
}

/// Every managed secret of the process, for [`prefetch`].
fn lock_list() -> std::sync::MutexGuard<'static, Vec<std::sync::Weak<Inner>>> {
    static MANAGED: Mutex<Vec<std::sync::Weak<Inner>>> = Mutex::new(Vec::new());
    MANAGED.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Starts reading every managed secret of the process at once, without waiting: called at a
/// function's init, so its first request does not read them one after another inside its
/// stages' time boxes.
pub fn prefetch() {
    let secrets: Vec<Secret> = lock_list().iter().filter_map(std::sync::Weak::upgrade).map(Secret).collect();
    for secret in secrets {
        tokio::spawn(async move { drop(secret.value().await) });
    }
}

fn lock(held: &Mutex<Held>) -> std::sync::MutexGuard<'_, Held> {
    held.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The caller's error when a key cannot be read and Secrets Manager is at fault (unreachable,
/// slow, throttling, failing): no detail of the account, the role or the secret (those are
/// logged).
fn unavailable() -> Error {
    Error::Unavailable {
        code: "secret_unavailable",
        message: "a key this service needs could not be read; retry shortly".into(),
        retry_after_secs: FAILED_PAUSE.as_secs(),
    }
}

impl Managed {
    /// The caller's error after failed reads in a row that were the function's own (`own_faults`):
    /// from the second, a configuration error naming the variable (a version whose role lost the
    /// secret fails as its own, and is rolled back), else [`unavailable`].
    fn failed(&self, own_faults: OwnFaults) -> Error {
        if own_faults.proven() {
            Error::Config(format!("{}: this function cannot read its secret; the log says why", self.variable))
        } else {
            unavailable()
        }
    }

    /// Reads the secret (one read at a time; a reader that waited takes the read it waited on).
    async fn refresh(&self) -> Result<Arc<str>> {
        let started = Instant::now();
        let _one = self.reading.lock().await;
        {
            // A read that ended while this one waited is its answer, a failure too: one read at
            // a time, and none within the pause after a failure.
            let h = lock(&self.held);
            if let (Some(value), Some(at)) = (&h.value, h.read_at)
                && at >= started
            {
                return Ok(Arc::clone(value));
            }
            if h.failed_at.is_some_and(|at| at >= started || at.elapsed() < FAILED_PAUSE) {
                return Err(self.failed(h.own_faults));
            }
        }
        match tokio::time::timeout(READ_TIMEOUT, self.get_secret_value()).await {
            Ok(Ok(value)) => {
                let mut h = lock(&self.held);
                let value: Arc<str> = value.into();
                if let Some(held) = h.value.take().filter(|held| *held != value) {
                    h.previous = Some((held, Instant::now() + self.cache));
                }
                (h.value, h.read_at, h.failed_at, h.refused, h.own_faults) =
                    (Some(Arc::clone(&value)), Some(Instant::now()), None, false, OwnFaults::default());
                Ok(value)
            }
            failed => {
                let failure = match failed {
                    Ok(Err(failure)) => failure,
                    _ => Fault::theirs(format!("Secrets Manager did not answer within {READ_TIMEOUT:?}")),
                };
                let mut h = lock(&self.held);
                h.failed_at = Some(Instant::now());
                h.own_faults.after(failure.own);
                let own_faults = h.own_faults;
                let serving = if h.value.is_some() { "the value held serves on" } else { "no value is held" };
                let fault = if failure.own { "this function's (its role, the secret)" } else { "Secrets Manager's" };
                tracing::error!(variable = %self.variable, secret = %self.id, error = %failure.why, fault, "{serving}: the secret could not be read");
                crate::core::metrics::count("SecretUnavailable", &[], 1.0);
                Err(self.failed(own_faults))
            }
        }
    }

    /// One `GetSecretValue` of the current version: its `SecretString`.
    async fn get_secret_value(&self) -> std::result::Result<String, Fault> {
        let region = self.region.as_deref().ok_or_else(|| Fault::ours("AWS_REGION is not set"))?;
        let url = match &self.endpoint {
            Some(endpoint) => format!("{endpoint}/"),
            None if region.starts_with("cn-") => format!("https://secretsmanager.{region}.amazonaws.com.cn/"),
            None => format!("https://secretsmanager.{region}.amazonaws.com/"),
        };
        let body = json!({"SecretId": self.id}).to_string();
        let headers =
            [("content-type", "application/x-amz-json-1.1"), ("x-amz-target", "secretsmanager.GetSecretValue")];
        let signed = self
            .signer
            .headers("POST", &url, "secretsmanager", region, &headers, body.as_bytes())
            .await
            .map_err(Fault::theirs)?;
        let mut request = http().post(&url).body(body);
        for (name, value) in headers.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).chain(signed) {
            request = request.header(name, value);
        }
        let response =
            request.send().await.map_err(|e| Fault::theirs(format!("Secrets Manager: {}", e.without_url())))?;
        let status = response.status();
        let answer: Value = response
            .json()
            .await
            .map_err(|e| Fault::theirs(format!("Secrets Manager's answer: {}", e.without_url())))?;
        if !status.is_success() {
            // `__type` is `[namespace#]Code`; the message names the secret, never its value.
            let code = answer["__type"].as_str().unwrap_or("unknown").rsplit('#').next().unwrap_or("unknown");
            let message = answer["Message"].as_str().or(answer["message"].as_str()).unwrap_or("");
            let why = format!("Secrets Manager answered HTTP {} {code}: {message}", status.as_u16());
            let own = status.is_client_error() && !code.contains("Throttl") && code != "RequestTimeout";
            return Err(Fault { why, own });
        }
        match answer["SecretString"].as_str().map(str::trim) {
            Some(value) if !value.is_empty() => Ok(value.to_owned()),
            Some(_) => Err(Fault::ours("the secret is empty")),
            None => Err(Fault::ours("the secret has no SecretString (store the key as plain text)")),
        }
    }
}

/// The signer of the default credentials chain, one per process.
fn default_signer() -> Arc<Signer> {
    static SIGNER: std::sync::OnceLock<Arc<Signer>> = std::sync::OnceLock::new();
    Arc::clone(SIGNER.get_or_init(Arc::default))
}

/// The one HTTP client of the process's secret reads.
fn http() -> &'static reqwest::Client {
    static HTTP: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    HTTP.get_or_init(|| {
        reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(1))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_given_secret_is_its_value_and_never_shows_in_debug_output() {
        let s = Env::from_pairs(&[("K", "pplx-very-secret")]).secret("K").unwrap().unwrap();
        assert!(!format!("{s:?}").contains("very-secret"));
        assert_eq!(&*s.value().await.unwrap(), "pplx-very-secret");
        assert_eq!(s.given(), Some("pplx-very-secret"));
    }

    // Given Secrets Manager unreachable, a read is a 503 naming nothing of the account, not
    // counted against the version; given the function's own fault (no region) twice in a row,
    // a configuration error naming the variable but not the secret, counted.
    #[tokio::test]
    async fn a_secret_that_cannot_be_read_is_a_503_when_secrets_manager_fails_and_a_500_when_we_do() {
        let pairs = [
            ("K_SECRET", "prod/k"),
            ("AWS_REGION", "us-east-1"),
            ("AWS_ENDPOINT_URL_SECRETS_MANAGER", "http://127.0.0.1:1"),
            ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
            ("AWS_SECRET_ACCESS_KEY", "example"),
        ];
        let s = Env::from_pairs(&pairs).secret("K").unwrap().unwrap();
        assert_eq!(format!("{s:?}"), "Secret(K_SECRET = \"prod/k\")");
        let e = s.value().await.unwrap_err(); // nothing listens on port 1
        assert_eq!((e.status(), e.code(), e.is_own_failure()), (503, "secret_unavailable", false));
        assert!(!e.to_string().contains("prod/k") && !e.to_string().contains("K_SECRET"), "{e}");

        let s = Env::from_pairs(&pairs[..1]).secret("K").unwrap().unwrap();
        let e = s.value().await.unwrap_err(); // no AWS_REGION: no read
        assert_eq!(e.code(), "secret_unavailable", "a first fault of ours may be IAM taking a role update in");
        tokio::time::sleep(FAILED_PAUSE).await;
        let e = s.value().await.unwrap_err();
        assert_eq!((e.status(), e.code(), e.is_own_failure()), (500, "misconfigured", true));
        assert!(!e.to_string().contains("prod/k") && e.to_string().contains("K_SECRET"), "{e}");
        let again = s.value().await.unwrap_err();
        assert_eq!(again.code(), "misconfigured", "within the pause, the same fault");
        assert!(Env::from_pairs(&[]).secret("K").unwrap().is_none());
    }
}
