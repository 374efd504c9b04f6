//! Users' JWTs verified in code, as API Gateway's JWT authorizer does, where no authorizer runs:
//! the streaming Function URLs (`AuthType: NONE`), and `cargo xtask serve`.
//!
//! The issuer (`JWT_ISSUER`) publishes its keys by OIDC discovery
//! (`{issuer}/.well-known/openid-configuration` -> `jwks_uri`). A token is accepted when its
//! signature verifies with the issuer's key named by its `kid` (RS256/384/512, PS256/384/512,
//! ES256/384; never `none` or a shared secret), `iss` is the issuer, `aud` (or, as Cognito's
//! access tokens carry it, `client_id`) is one of `JWT_AUDIENCE`, `exp` is in the future and
//! `nbf` past (60 s of clock skew). Keys are cached; an unknown `kid` refetches them at most
//! once a minute, so a flood of forged `kid`s costs the issuer one request a minute. The issuer
//! and its `jwks_uri` must be `https`, except on a loopback host (a test issuer).

use std::collections::HashMap;
use std::time::Duration;

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::core::error::{Error, Result};
use crate::core::validate::loopback;

/// Time box of one fetch of the issuer's discovery document or keys.
const FETCH_TIMEOUT: Duration = Duration::from_secs(2);
/// Least time between two fetches of the keys for an unknown `kid`.
const REFETCH_EVERY: Duration = Duration::from_secs(60);
/// Least time between two tries after a failed fetch.
const RETRY_EVERY: Duration = Duration::from_secs(5);
/// Keys older than this are fetched again (an issuer's removed key stops being trusted).
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

/// The issuer's keys as last fetched, and when that was last tried.
#[derive(Default)]
struct Keys {
    set: JwkSet,
    fetched: Option<Instant>,
    tried: Option<Instant>,
}

/// Verifies users' tokens against one issuer. Built once per process.
pub struct Verifier {
    issuer: Issuer,
    http: reqwest::Client,
    keys: Mutex<Keys>,
}

impl Verifier {
    pub fn new(issuer: Issuer) -> Result<Self> {
        let http = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| Error::Config(format!("cannot build the JWKS client: {e}")))?;
        Ok(Self { issuer, http, keys: Mutex::default() })
    }

    /// The claims of `token` (as API Gateway passes them: every value a string) once it is
    /// verified; 401 for a token that is not (forged, expired, another issuer or audience), 503
    /// when the issuer's keys cannot be fetched.
    pub async fn verify(&self, token: &str) -> Result<HashMap<String, String>> {
        let unauthenticated = |why: &str| Error::Unauthenticated(format!("the token is not valid: {why}"));
        let header = jsonwebtoken::decode_header(token).map_err(|_| unauthenticated("not a JWT"))?;
        if !ASYMMETRIC.contains(&header.alg) {
            return Err(unauthenticated("its algorithm is not one an OIDC issuer signs with"));
        }
        let kid = header.kid.ok_or_else(|| unauthenticated("it names no key (kid)"))?;
        let key = self.key(&kid).await?.ok_or_else(|| unauthenticated("the issuer has no such key"))?;
        let mut validation = Validation::new(header.alg);
        validation.leeway = LEEWAY_SECS;
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.issuer.url]);
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
        if !audiences.iter().any(|a| self.issuer.audiences.iter().any(|ok| ok == a)) {
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

    /// The key `kid`, fetching the issuer's keys when they were never fetched or are an hour old,
    /// or when `kid` is unknown and the last fetch is a minute old; after a failed fetch, not
    /// again for [`RETRY_EVERY`] (the keys held so far still serve). One fetch at a time.
    async fn key(&self, kid: &str) -> Result<Option<DecodingKey>> {
        let mut keys = self.keys.lock().await;
        let age = |at: Option<Instant>| at.map_or(Duration::MAX, |at| at.elapsed());
        let wanted =
            age(keys.fetched) >= KEYS_LIVE || (keys.set.find(kid).is_none() && age(keys.fetched) >= REFETCH_EVERY);
        if wanted && age(keys.tried) >= RETRY_EVERY {
            keys.tried = Some(Instant::now());
            match self.fetch().await {
                Ok(set) => (keys.set, keys.fetched) = (set, Some(Instant::now())),
                Err(why) => {
                    tracing::error!(issuer = %self.issuer.url, %why, "the issuer's keys could not be fetched");
                    if keys.fetched.is_none() {
                        return Err(Error::Upstream("users' tokens cannot be verified right now; please retry".into()));
                    }
                }
            }
        }
        let jwk = keys
            .set
            .find(kid)
            .filter(|jwk| jwk.common.public_key_use != Some(jsonwebtoken::jwk::PublicKeyUse::Encryption));
        Ok(jwk.and_then(|jwk| DecodingKey::from_jwk(jwk).ok()))
    }

    /// The issuer's key set, by OIDC discovery.
    async fn fetch(&self) -> std::result::Result<JwkSet, String> {
        let base = self.issuer.url.trim_end_matches('/');
        let discovery = format!("{base}/.well-known/openid-configuration");
        let document: Value = self.get_json(&discovery).await?;
        if document.get("issuer").and_then(Value::as_str).map(|i| i.trim_end_matches('/')) != Some(base) {
            return Err(format!("{discovery} names another issuer"));
        }
        let jwks_uri = document.get("jwks_uri").and_then(Value::as_str).ok_or("no jwks_uri")?;
        allowed(jwks_uri, url::Url::parse(base).is_ok_and(|u| loopback(&u)))?;
        let set: Value = self.get_json(jwks_uri).await?;
        serde_json::from_value(set).map_err(|e| format!("{jwks_uri} is not a JWK set: {e}"))
    }

    async fn get_json(&self, url: &str) -> std::result::Result<Value, String> {
        let response = self.http.get(url).send().await.map_err(|e| format!("{url}: {e}"))?;
        if !response.status().is_success() {
            return Err(format!("{url}: HTTP {}", response.status()));
        }
        response.json().await.map_err(|e| format!("{url}: {e}"))
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
