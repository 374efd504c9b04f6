//! Issue 53 item 7: an issuer's blip does not sign users out. Tokens signed by a test OpenID
//! issuer on 127.0.0.1 (discovery and JWKS served by a fake HTTP server, keys in
//! `tests/reference/issuer/`), verified by the bundle's own verifier as the streaming Function
//! URLs and `cargo xtask serve` use it.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use integration::FakeServer;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use shared::core::error::Error;
use shared::http::jwt::{Issuer, REFETCH_EVERY, Verifier};
use wiremock::matchers::{method, path};
use wiremock::{Mock, ResponseTemplate};

fn reference(name: &str) -> String {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("reference/issuer").join(name);
    std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// A test OpenID issuer whose JWKS answer can be changed (keys, a failure, a delay).
struct TestIssuer {
    server: FakeServer,
}

impl TestIssuer {
    async fn start() -> Self {
        let server = FakeServer::start().await;
        let issuer = Self { server };
        issuer.publish(ResponseTemplate::new(200).set_body_raw(reference("jwks-a.json"), "application/json")).await;
        issuer
    }

    fn url(&self) -> String {
        self.server.uri()
    }

    /// Discovery as it is, and the JWKS answered by `jwks` from now on.
    async fn publish(&self, jwks: ResponseTemplate) {
        self.server.reset().await;
        let discovery = json!({"issuer": self.url(), "jwks_uri": format!("{}/jwks.json", self.url())});
        Mock::given(method("GET"))
            .and(path("/.well-known/openid-configuration"))
            .respond_with(ResponseTemplate::new(200).set_body_json(discovery))
            .mount(&self.server)
            .await;
        Mock::given(method("GET")).and(path("/jwks.json")).respond_with(jwks).mount(&self.server).await;
    }

    async fn keys(&self, file: &str) {
        self.publish(ResponseTemplate::new(200).set_body_raw(reference(file), "application/json")).await;
    }

    async fn jwks_fetches(&self) -> usize {
        let requests = self.server.received_requests().await.unwrap_or_default();
        requests.iter().filter(|r| r.url.path() == "/jwks.json").count()
    }

    /// A token for user `u-1` and audience `web-app`, signed with `key-a` or `key-b` under `kid`.
    fn token(&self, key: &str, kid: &str) -> String {
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(kid.to_owned());
        let now = chrono::Utc::now().timestamp();
        let claims = json!({"iss": self.url(), "aud": "web-app", "sub": "u-1", "iat": now, "exp": now + 600});
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("reference/issuer/{key}.der"));
        let der = std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        jsonwebtoken::encode(&header, &claims, &EncodingKey::from_rsa_der(&der)).unwrap()
    }

    fn verifier(&self, live: Duration) -> Verifier {
        let issuer = Issuer::parse(Some(&self.url()), Some("web-app")).unwrap().unwrap();
        Verifier::refreshing_after(issuer, live).unwrap()
    }
}

const HOUR: Duration = Duration::from_secs(3600);

fn user(claims: &HashMap<String, String>) -> &str {
    claims.get("sub").map(String::as_str).unwrap_or_default()
}

/// The status, code and `Retry-After` of `e` as the door answers it.
fn answered(e: &Error) -> (u16, String, Option<String>) {
    let response = shared::http::error(e, "r-1");
    let retry = response.headers().get("retry-after").map(|v| v.to_str().unwrap().to_owned());
    let status = response.status().as_u16();
    let bytes = futures::executor::block_on(axum::body::to_bytes(response.into_body(), usize::MAX)).unwrap();
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    (status, body["error"]["code"].as_str().unwrap_or_default().to_owned(), retry)
}

// Given the issuer's keys cannot be fetched and none are held, a valid token is a 503
// `issuer_unavailable` with `Retry-After` (not counted against the version), never a 401
// (before: 503 once, then 401 for 5 s); after the Retry-After, with the issuer back, it is
// verified.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issuer_outage_is_a_503_with_retry_after_never_a_401() {
    let issuer = TestIssuer::start().await;
    issuer.publish(ResponseTemplate::new(500)).await;
    let verifier = issuer.verifier(HOUR);
    let token = issuer.token("key-a", "key-a");
    for attempt in ["the failed fetch", "within its Retry-After"] {
        let e = verifier.verify(&token).await.unwrap_err();
        let (status, code, retry) = answered(&e);
        assert_eq!((status, code.as_str()), (503, "issuer_unavailable"), "{attempt}: {e}");
        assert!(!e.is_own_failure(), "a dependency's answer, alarmed as IssuerUnavailable, not Answered5xx");
        let retry: u64 = retry.expect("Retry-After").parse().unwrap();
        assert!((1..=REFETCH_EVERY.as_secs()).contains(&retry), "{attempt}: Retry-After {retry}");
    }
    assert_eq!(issuer.jwks_fetches().await, 1, "no fetch within the Retry-After");
    issuer.keys("jwks-a.json").await;
    tokio::time::sleep(REFETCH_EVERY).await;
    assert_eq!(user(&verifier.verify(&token).await.unwrap()), "u-1");

    // Once keys are held, an outage does not touch tokens signed with them.
    issuer.publish(ResponseTemplate::new(500)).await;
    assert_eq!(user(&verifier.verify(&token).await.unwrap()), "u-1");
    assert_eq!(issuer.jwks_fetches().await, 0, "held keys: no fetch");
}

// Issue 62 item 1: given a deployment whose issuer answers its key set 404 (a wrong
// `JwtIssuer`), then a token is a 500 `misconfigured` naming JWT_ISSUER, counted against the
// version (its canary rolls it back), not a 503 an outage would be; the first such answer is a
// 503 (one odd answer, a maintenance page, is no proof), the second fetch's the 500. Once the
// issuer publishes its keys, the same token is verified.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_issuer_is_the_deployments_failure_not_an_outage() {
    let issuer = TestIssuer::start().await;
    issuer.publish(ResponseTemplate::new(404)).await;
    let verifier = issuer.verifier(HOUR);
    let token = issuer.token("key-a", "key-a");
    let e = verifier.verify(&token).await.unwrap_err();
    let (status, code, _) = answered(&e);
    assert_eq!((status, code.as_str(), e.is_own_failure()), (503, "issuer_unavailable", false), "one odd answer: {e}");
    tokio::time::sleep(REFETCH_EVERY).await;
    for attempt in ["the second failed fetch", "within REFETCH_EVERY"] {
        let e = verifier.verify(&token).await.unwrap_err();
        let (status, code, _) = answered(&e);
        assert_eq!((status, code.as_str(), e.is_own_failure()), (500, "misconfigured", true), "{attempt}: {e}");
        assert!(e.to_string().contains("JWT_ISSUER"), "{e}");
    }
    issuer.keys("jwks-a.json").await;
    tokio::time::sleep(REFETCH_EVERY).await;
    assert_eq!(user(&verifier.verify(&token).await.unwrap()), "u-1");
}

// Given the issuer adds a signing key moments after the keys were fetched, a token signed with it
// is verified at once (before: 401 for a minute). A forged `kid` costs the issuer one fetch per
// REFETCH_EVERY, and is a 401 every time, within it too (before: 503 `issuer_unavailable` there,
// so one forged token a second made every deployment's canary alarm roll it back): keys are held,
// the issuer is up, the token is not ours.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_signing_key_is_trusted_at_once_and_forged_kids_are_401_at_one_fetch() {
    let issuer = TestIssuer::start().await;
    let verifier = issuer.verifier(HOUR);
    assert_eq!(user(&verifier.verify(&issuer.token("key-a", "key-a")).await.unwrap()), "u-1");
    issuer.keys("jwks-ab.json").await;
    assert_eq!(user(&verifier.verify(&issuer.token("key-b", "key-b")).await.unwrap()), "u-1", "the new key");
    assert_eq!(issuer.jwks_fetches().await, 1);

    // The rotation's fetch was for an unknown kid: a forged one waits its turn, refused.
    let forged = issuer.token("key-a", "nobody");
    for attempt in 0..21 {
        let e = verifier.verify(&forged).await.unwrap_err();
        let (status, code, retry) = answered(&e);
        assert_eq!((status, code.as_str(), retry), (401, "unauthenticated", None), "forged token {attempt}: {e}");
    }
    assert_eq!(issuer.jwks_fetches().await, 1, "within REFETCH_EVERY of the last fetch: none");
    tokio::time::sleep(REFETCH_EVERY).await;
    for _ in 0..20 {
        assert_eq!(answered(&verifier.verify(&forged).await.unwrap_err()).0, 401);
    }
    assert_eq!(issuer.jwks_fetches().await, 2, "twenty forged tokens past REFETCH_EVERY, one fetch");
    // A token signed with a held key but claiming another's kid does not verify.
    assert_eq!(answered(&verifier.verify(&issuer.token("key-a", "key-b")).await.unwrap_err()).0, 401);
}

// Given a fetch that takes 1.5 s (a slow issuer), a token signed with a held key is verified at
// once, without waiting for it (before: the fetch held a mutex every request waited on); keys
// past their life are refreshed in the background while the held ones serve, and a retired
// key stops being trusted once the refresh lands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_keys_serve_while_the_issuer_is_slow_and_refresh_in_the_background() {
    let issuer = TestIssuer::start().await;
    let verifier = std::sync::Arc::new(issuer.verifier(Duration::from_secs(2)));
    let (a, b) = (issuer.token("key-a", "key-a"), issuer.token("key-b", "key-b"));
    assert!(verifier.verify(&a).await.is_ok());
    let slow = |file: &str| {
        ResponseTemplate::new(200)
            .set_body_raw(reference(file), "application/json")
            .set_delay(Duration::from_millis(1500))
    };
    issuer.publish(slow("jwks-ab.json")).await;
    let pending = tokio::spawn({
        let (verifier, b) = (std::sync::Arc::clone(&verifier), b.clone());
        async move { verifier.verify(&b).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    assert!(verifier.verify(&a).await.is_ok());
    assert!(started.elapsed() < Duration::from_millis(300), "a held key waited {:?}", started.elapsed());
    assert!(pending.await.unwrap().is_ok(), "the new key, once its fetch landed");

    // Past the keys' life (2 s here), the issuer retires key-a, slowly: key-a still serves at
    // once, then the background refresh lands and it is refused.
    tokio::time::sleep(Duration::from_secs(2)).await;
    issuer.publish(slow("jwks-b.json")).await;
    let started = Instant::now();
    assert!(verifier.verify(&a).await.is_ok(), "the held keys serve while they refresh");
    assert!(started.elapsed() < Duration::from_millis(300), "waited {:?}", started.elapsed());
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(issuer.jwks_fetches().await, 1, "one background refresh");
    assert_eq!(user(&verifier.verify(&b).await.unwrap()), "u-1");
    let e = verifier.verify(&a).await.unwrap_err();
    assert_eq!(answered(&e).0, 401, "the retired key: {e}");
}

// Issue 53 item 10: a Function URL's request (no authorizer) is logged as `anonymous` until the
// function verifies its token; from then on its lines name the user's hash, never the id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_verified_token_names_its_user_on_the_requests_log_lines() {
    use lambda_http::RequestExt;
    use lambda_http::tracing::Instrument;
    integration::logs::capture();
    let issuer = TestIssuer::start().await;
    let config = integration::config(&[("JWT_ISSUER", issuer.url()), ("JWT_AUDIENCE", "web-app".into())]);
    let users = shared::http::auth::Users::from_settings(&config.http).unwrap();
    let mut req = integration::request("POST", "/chat", "{}");
    req.headers_mut().insert("authorization", format!("Bearer {}", issuer.token("key-a", "key-a")).parse().unwrap());
    let mut context = lambda_http::Context::default();
    context.request_id = "span-test-function-url".into();
    let (req, _) = req.with_lambda_context(context).into_parts();
    let span = shared::http::span(&req);
    async {
        lambda_http::tracing::warn!("before the token is verified");
        assert_eq!(users.verified(&req).await.unwrap(), "u-1");
        lambda_http::tracing::warn!("after the token is verified");
    }
    .instrument(span)
    .await;
    let callers: Vec<String> = integration::logs::lines("span-test-function-url")
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["span"]["caller"].as_str().unwrap().to_owned())
        .collect();
    let user = format!("user:{}", shared::core::records::key_part("u-1", 12));
    assert_eq!(callers.first().map(String::as_str), Some("anonymous"), "{callers:?}");
    assert_eq!(callers.last(), Some(&user), "{callers:?}");
}
