//! Users' JWTs verified in code, as API Gateway's JWT authorizer does, where no authorizer runs:
//! the streaming Function URLs (`AuthType: NONE`), and `cargo xtask serve`.
//!
//! The issuer (`JWT_ISSUER`) publishes its keys by OIDC discovery
//! (`{issuer}/.well-known/openid-configuration` -> `jwks_uri`). A token is accepted when its
//! signature verifies with the issuer's key named by its `kid` (RS256/384/512, PS256/384/512,
//! ES256/384; never `none` or a shared secret), `iss` is the issuer, `aud` (or, as Cognito's
//! access tokens carry it, `client_id`) is one of `JWT_AUDIENCE`, `exp` is in the future and
//! `nbf` past (60 s of clock skew).
//!
//! Keys are cached and never fetched on a request whose key is held: past an hour they are
//! refreshed in the background while the held ones serve. A `kid` not held fetches them on the
//! request (one fetch at a time, the others waiting for it), at most once per
//! [`REFETCH_EVERY`], so a signing key the issuer added before the last fetch, or
//! [`REFETCH_EVERY`] after it, is trusted at once, and a flood of forged `kid`s costs the issuer
//! one request per [`REFETCH_EVERY`]. When the keys cannot be had and none are held (the issuer
//! down since the function started) the answer is 503 `issuer_unavailable` with `Retry-After`,
//! never a 401 for a token that may be valid, or 500 `misconfigured` when the failure is the
//! deployment's (`JWT_ISSUER` answers a 4xx, names another issuer, publishes no key set); once
//! keys are held, a `kid` they lack is a 401 whatever the issuer does (a forged token is not an
//! outage, and must not look like one to the canary alarms). The `IssuerUnavailable` metric
//! counts the failed fetches. The issuer and its `jwks_uri` must be `https`, except on a
//! loopback host (a test issuer).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::core::error::{Error, Fault, OwnFaults, Result};
use crate::core::validate::loopback;

/// Time box of one fetch of the issuer's discovery document or keys.
const FETCH_TIMEOUT: Duration = Duration::from_secs(2);
/// Least time between two fetches of the keys on a request (for a `kid` not held), and the
/// `Retry-After` of a 503 when they cannot be had.
pub const REFETCH_EVERY: Duration = Duration::from_secs(5);
/// Keys older than this are refreshed in the background (an issuer's removed key stops being
/// trusted), the held ones serving meanwhile.
const KEYS_LIVE: Duration = Duration::from_secs(3600);
/// Clock skew allowed on `exp` and `nbf`, in seconds.
const LEEWAY_SECS: u64 = 60;

/// Who issues users' tokens and for whom (`JWT_ISSUER`, `JWT_AUDIENCE`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issuer {
    pub url: String,
    pub audiences: Vec<String>,
}

impl Issuer {
    /// `JWT_ISSUER` and `JWT_AUDIENCE` (comma-separated): `None` without an issuer; a config
    /// error for an issuer that is not `https` (or loopback `http`), or without audiences.
    pub fn parse(issuer: Option<&str>, audience: Option<&str>) -> Result<Option<Self>> {
        let Some(url) = issuer.map(str::trim).filter(|u| !u.is_empty()) else {
            return Ok(None);
        };
        allowed_url(url).map_err(|why| Error::Config(format!("JWT_ISSUER: {why}")))?;
        let audiences: Vec<String> = audience
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(str::to_owned)
            .collect();
        if audiences.is_empty() {
            return Err(Error::Config(
                "JWT_AUDIENCE: give the audiences (comma-separated) JWT_ISSUER's tokens must name".into(),
            ));
        }
        Ok(Some(Self { url: url.to_owned(), audiences }))
    }
}

/// `url` may be fetched for keys: `https` and not loopback, or `http` on a loopback host;
/// loopback at all only for a loopback issuer (`local`), so a discovery document cannot point
/// a deployed function at its own Runtime API.
fn allowed(url: &str, local: bool) -> std::result::Result<(), String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    match (parsed.scheme(), loopback(&parsed)) {
        ("https", false) => Ok(()),
        ("https" | "http", true) if local => Ok(()),
        _ => Err(format!("{url:?} must be https (http only on a loopback host, for a loopback issuer)")),
    }
}

fn allowed_url(url: &str) -> std::result::Result<(), String> {
    let local = url::Url::parse(url).is_ok_and(|u| loopback(&u));
    allowed(url, local)
}

/// The issuer's keys as last fetched, and when fetches were tried.
#[derive(Default)]
struct Keys {
    set: JwkSet,
    fetched: Option<Instant>,
    /// The last fetch that failed.
    failed: Option<Instant>,
    /// Why it failed, when that is the deployment's own doing (`JWT_ISSUER` answers 4xx, names
    /// another issuer, publishes no key set) two fetches running, not the issuer being down or
    /// answering one fetch oddly (a maintenance page, a cut body).
    misconfigured: Option<String>,
    /// Fetches running that failed the deployment's way.
    own_failures: OwnFaults,
    /// The last fetch for a `kid` not held while keys were.
    unknown: Option<Instant>,
}

/// What a request that needs a key not held gets from [`Inner::refetch`].
enum Fetch {
    /// The keys were fetched (the fetch began) after the request looked: look again (absent: not
    /// the issuer's).
    Fresh,
    /// No fetch may run for this long: a failed one, or one for an unknown `kid`, is that recent.
    Wait(Duration),
}

/// Verifies users' tokens against one issuer. Built once per process.
pub struct Verifier {
    inner: Arc<Inner>,
}

struct Inner {
    issuer: Issuer,
    http: crate::core::upstream::LazyClient,
    /// Read on every request; written only after a fetch.
    keys: RwLock<Keys>,
    /// Held by the one fetch running.
    fetching: Mutex<()>,
    /// A background refresh is running.
    refreshing: AtomicBool,
    /// Held keys older than this are refreshed ([`KEYS_LIVE`]).
    live: Duration,
}

impl Verifier {
    pub fn new(issuer: Issuer) -> Result<Self> {
        Self::refreshing_after(issuer, KEYS_LIVE)
    }

    /// A verifier that refreshes its held keys once they are `live` old ([`Self::new`]: an hour).
    pub fn refreshing_after(issuer: Issuer, live: Duration) -> Result<Self> {
        let http = crate::core::upstream::LazyClient::new(|| {
            reqwest::Client::builder().timeout(FETCH_TIMEOUT).redirect(reqwest::redirect::Policy::none())
        });
        let inner = Inner {
            issuer,
            http,
            keys: RwLock::default(),
            fetching: Mutex::const_new(()),
            refreshing: AtomicBool::new(false),
            live,
        };
        Ok(Self { inner: Arc::new(inner) })
    }

    /// The claims of `token` (as API Gateway passes them: every value a string) once it is
    /// verified; 401 for a token that is not (forged, expired, another issuer or audience), 503
    /// `issuer_unavailable` with `Retry-After` when the issuer's keys cannot be had.
    pub async fn verify(&self, token: &str) -> Result<HashMap<String, String>> {
        let unauthenticated = |why: &str| Error::Unauthenticated(format!("the token is not valid: {why}"));
        let header = jsonwebtoken::decode_header(token).map_err(|_| unauthenticated("not a JWT"))?;
        if !ASYMMETRIC.contains(&header.alg) {
            return Err(unauthenticated("its algorithm is not one an OIDC issuer signs with"));
        }
        let kid = header.kid.ok_or_else(|| unauthenticated("it names no key (kid)"))?;
        let key = self.inner.key(&kid).await?.ok_or_else(|| unauthenticated("the issuer has no such key"))?;
        let mut validation = Validation::new(header.alg);
        validation.leeway = LEEWAY_SECS;
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.inner.issuer.url]);
        validation.set_required_spec_claims(&["exp", "iss"]);
        // `aud` is checked below: Cognito's access tokens carry `client_id` instead.
        validation.validate_aud = false;
        let data = jsonwebtoken::decode::<HashMap<String, Value>>(token, &key, &validation).map_err(|e| {
            use jsonwebtoken::errors::ErrorKind;
            unauthenticated(match e.kind() {
                ErrorKind::ExpiredSignature => "it has expired",
                ErrorKind::ImmatureSignature => "it is not valid yet (nbf)",
                ErrorKind::InvalidIssuer => "another issuer signed it",
                ErrorKind::InvalidSignature => "its signature does not verify",
                ErrorKind::MissingRequiredClaim(_) => "it lacks exp or iss",
                _ => "it could not be verified",
            })
        })?;
        let audiences = match data.claims.get("aud").or_else(|| data.claims.get("client_id")) {
            Some(Value::String(a)) => vec![a.as_str()],
            Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !audiences.iter().any(|a| self.inner.issuer.audiences.iter().any(|ok| ok == a)) {
            return Err(unauthenticated("it is for another audience"));
        }
        Ok(data
            .claims
            .into_iter()
            .map(|(k, v)| {
                let text = match v {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                (k, text)
            })
            .collect())
    }
}

impl Inner {
    /// The key `kid`: as held (refreshed in the background past [`KEYS_LIVE`]), else as fetched
    /// now. `None` (401) when the keys lack it: fetched after the request looked, or held while no
    /// fetch may run (the issuer answered before; a forged `kid` is not an outage). 503 with
    /// `Retry-After` only when no keys are held and none could be fetched.
    async fn key(self: &Arc<Self>, kid: &str) -> Result<Option<DecodingKey>> {
        let asked = Instant::now();
        if let Some(key) = self.held(kid) {
            self.refresh_if_stale();
            return Ok(Some(key));
        }
        match (self.refetch(asked).await, self.held(kid)) {
            (Fetch::Fresh, key) => Ok(key),
            // A fetch that ran while this request waited may hold its key after all.
            (Fetch::Wait(_), Some(key)) => Ok(Some(key)),
            (Fetch::Wait(_), None) if self.keys().fetched.is_some() => Ok(None),
            // A new version with a wrong issuer fails as its own (its canary rolls it back).
            (Fetch::Wait(_), None) if self.keys().misconfigured.is_some() => {
                let why = self.keys().misconfigured.clone().unwrap_or_default();
                Err(Error::Config(format!("JWT_ISSUER: its keys cannot be had: {why}")))
            }
            (Fetch::Wait(wait), None) => Err(Error::Unavailable {
                code: "issuer_unavailable",
                message: "users' tokens cannot be verified right now (the issuer's keys could not be had); \
                          retry after the Retry-After seconds"
                    .into(),
                retry_after_secs: wait.as_secs().max(1),
            }),
        }
    }

    fn keys(&self) -> std::sync::RwLockReadGuard<'_, Keys> {
        self.keys.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn keys_mut(&self) -> std::sync::RwLockWriteGuard<'_, Keys> {
        self.keys.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// The usable key `kid`, if held.
    fn held(&self, kid: &str) -> Option<DecodingKey> {
        let keys = self.keys();
        let jwk = keys.set.find(kid)?;
        if jwk.common.public_key_use == Some(jsonwebtoken::jwk::PublicKeyUse::Encryption) {
            return None;
        }
        DecodingKey::from_jwk(jwk).ok()
    }

    /// Starts one background fetch when the held keys are past [`KEYS_LIVE`] (and no fetch
    /// failed within [`REFETCH_EVERY`]); the held keys serve meanwhile, and on failure.
    fn refresh_if_stale(self: &Arc<Self>) {
        let stale = {
            let keys = self.keys();
            keys.fetched.is_some_and(|at| at.elapsed() >= self.live)
                && keys.failed.is_none_or(|at| at.elapsed() >= REFETCH_EVERY)
        };
        if stale && !self.refreshing.swap(true, Ordering::AcqRel) {
            let inner = Arc::clone(self);
            tokio::spawn(async move {
                let _one = inner.fetching.lock().await;
                inner.fetch_now().await;
                inner.refreshing.store(false, Ordering::Release);
            });
        }
    }

    /// Fetches the keys for a request that looked at `asked` and lacked its key, one fetch at a
    /// time: not again when one began after it looked, nor within [`REFETCH_EVERY`] of a failed
    /// one or of one for an unknown `kid` (a flood of forged `kid`s costs the issuer one fetch per
    /// [`REFETCH_EVERY`]).
    async fn refetch(&self, asked: Instant) -> Fetch {
        let _one = self.fetching.lock().await;
        let wait = {
            let keys = self.keys();
            if keys.fetched.is_some_and(|at| at > asked) {
                return Fetch::Fresh;
            }
            let since = |at: Option<Instant>| at.map(|at| REFETCH_EVERY.saturating_sub(at.elapsed()));
            let unknown = keys.fetched.and(since(keys.unknown));
            let failed = keys.failed.filter(|f| keys.fetched.is_none_or(|ok| *f > ok));
            since(failed).max(unknown).filter(|w| !w.is_zero())
        };
        if let Some(wait) = wait {
            return Fetch::Wait(wait);
        }
        let held = self.keys().fetched.is_some();
        if held {
            self.keys_mut().unknown = Some(Instant::now());
        }
        if self.fetch_now().await { Fetch::Fresh } else { Fetch::Wait(REFETCH_EVERY) }
    }

    /// One fetch, its outcome kept: true when the keys were replaced. They count as fetched when
    /// the fetch began: a key added while it ran may be missing from them.
    async fn fetch_now(&self) -> bool {
        let began = Instant::now();
        match self.fetch().await {
            Ok(set) => {
                let mut keys = self.keys_mut();
                (keys.set, keys.fetched, keys.misconfigured, keys.own_failures) =
                    (set, Some(began), None, OwnFaults::default());
                true
            }
            Err(Fault { why, own }) => {
                let ours = {
                    let mut keys = self.keys_mut();
                    let ours = keys.own_failures.after(own);
                    (keys.failed, keys.misconfigured) = (Some(Instant::now()), ours.then(|| why.clone()));
                    ours
                };
                let fault = if ours { "the deployment's (JWT_ISSUER)" } else { "the issuer's" };
                tracing::error!(issuer = %self.issuer.url, %why, fault, "the issuer's keys could not be fetched");
                crate::core::metrics::count("IssuerUnavailable", &[], 1.0);
                false
            }
        }
    }

    /// The issuer's key set, by OIDC discovery.
    async fn fetch(&self) -> std::result::Result<JwkSet, Fault> {
        let base = self.issuer.url.trim_end_matches('/');
        let discovery = format!("{base}/.well-known/openid-configuration");
        let document: Value = self.get_json(&discovery).await?;
        if document.get("issuer").and_then(Value::as_str).map(|i| i.trim_end_matches('/')) != Some(base) {
            return Err(Fault::ours(format!("{discovery} names another issuer")));
        }
        let jwks_uri = document
            .get("jwks_uri")
            .and_then(Value::as_str)
            .ok_or_else(|| Fault::ours(format!("{discovery}: no jwks_uri")))?;
        allowed(jwks_uri, url::Url::parse(base).is_ok_and(|u| loopback(&u))).map_err(Fault::ours)?;
        let set: Value = self.get_json(jwks_uri).await?;
        serde_json::from_value(set).map_err(|e| Fault::ours(format!("{jwks_uri} is not a JWK set: {e}")))
    }

    /// `url`'s JSON: the issuer's failure when it cannot be reached, answers 5xx or 429 or its
    /// body is cut, the deployment's when it answers another 4xx or what is not JSON (a wrong
    /// URL).
    async fn get_json(&self, url: &str) -> std::result::Result<Value, Fault> {
        let client = self.http.get().map_err(|e| Fault::theirs(e.to_string()))?;
        let response = client.get(url).send().await.map_err(|e| Fault::theirs(format!("{url}: {e}")))?;
        let status = response.status();
        if !status.is_success() {
            let own = status.is_client_error() && status != reqwest::StatusCode::TOO_MANY_REQUESTS;
            return Err(Fault { why: format!("{url}: HTTP {status}"), own });
        }
        let body = response.bytes().await.map_err(|e| Fault::theirs(format!("{url}: {e}")))?;
        serde_json::from_slice(&body).map_err(|e| Fault::ours(format!("{url}: not JSON: {e}")))
    }
}

/// What OIDC issuers sign with.
const ASYMMETRIC: [Algorithm; 8] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
];

#[cfg(test)]
mod tests {
    use super::*;

    impl Issuer {
        fn parse_pair((issuer, audience): (Option<&str>, Option<&str>)) -> Result<Option<Self>> {
            Self::parse(issuer, audience)
        }
    }

    #[test]
    fn an_issuer_is_https_or_loopback_and_names_its_audiences() {
        let lookup = |issuer: &'static str, aud: &'static str| (Some(issuer), Some(aud));
        let ok = Issuer::parse_pair(lookup("https://idp.example.com/pool/", "app, web")).unwrap().unwrap();
        let audiences = vec!["app".into(), "web".into()];
        assert_eq!(ok, Issuer { url: "https://idp.example.com/pool/".into(), audiences }, "iss is compared as given");
        assert!(Issuer::parse_pair(lookup("http://127.0.0.1:9000", "a")).unwrap().is_some());
        assert!(Issuer::parse_pair(lookup("http://localhost:9000", "a")).unwrap().is_some());
        for (issuer, aud) in [("http://idp.example.com", "a"), ("ftp://127.0.0.1", "a"), ("https://x", " , ")] {
            let e = Issuer::parse_pair(lookup(issuer, aud)).unwrap_err();
            assert!(e.to_string().contains("JWT_"), "{issuer}: {e}");
        }
        assert_eq!(Issuer::parse(None, None).unwrap(), None);
    }
}
