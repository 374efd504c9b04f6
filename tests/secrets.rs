//! Issue 54 item 2: keys live in Secrets Manager and are read at run time, so a rotated key
//! reaches a running function without a deploy, and no key is a deploy parameter. The real
//! search handler reads its Perplexity key through a fake Secrets Manager on 127.0.0.1 that
//! speaks `GetSecretValue` as strictly as the real service (`support/secrets_manager.rs`),
//! against the strict fake Perplexity, which accepts only the key of the moment.

use std::time::{Duration, Instant};

use integration::secrets_manager::SecretsManager;
use integration::{Harness, Setup, StoreKind, perplexity::plain_answer};
use serde_json::Value;
use wiremock::matchers::{header, method};
use wiremock::{Mock, ResponseTemplate};

const OLD: &str = "pplx-old-key-0123456789";
const NEW: &str = "pplx-new-key-9876543210";
const SECRET: &str = "research/perplexity";

/// A search harness whose Perplexity key is `SECRET`'s value in `sm`, with `extra` variables.
async fn harness(sm: &SecretsManager, extra: &[(&str, &str)]) -> Harness {
    let mut env = sm.env("PERPLEXITY_API_KEY", SECRET);
    env.extend(extra.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    Harness::with(StoreKind::Local, Setup { perplexity: true, env: &env, ..Setup::default() }).await
}

/// The fake Perplexity answers `valid` keys and refuses every other with 401.
async fn accept_only(h: &Harness, valid: &[&str]) {
    h.reset_upstream().await;
    for key in valid {
        Mock::given(method("POST"))
            .and(header("authorization", format!("Bearer {key}").as_str()))
            .respond_with(ResponseTemplate::new(200).set_body_json(plain_answer()))
            .with_priority(2)
            .mount(h.upstream())
            .await;
    }
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(401).set_body_json(
            serde_json::json!({"error": {"message": "invalid api key", "type": "authentication_error", "code": 401}}),
        ))
        .with_priority(3)
        .mount(h.upstream())
        .await;
}

async fn search(h: &Harness, query: &str) -> Value {
    let (status, r) = h.post("/search", serde_json::json!({"query": query})).await;
    assert_eq!(status, 200, "{r}");
    let text = r.to_string();
    assert!(!text.contains(OLD) && !text.contains(NEW), "a key leaked into a response: {text}");
    r
}

/// The bearer keys the fake Perplexity received, in order.
async fn keys_sent(h: &Harness) -> Vec<String> {
    h.upstream_calls()
        .await
        .iter()
        .filter_map(|r| r.headers.get("authorization")?.to_str().ok()?.strip_prefix("Bearer ").map(str::to_owned))
        .collect()
}

// The runbook's order: the new key is put while the old still works; once the held value is
// older than SECRETS_CACHE_S, the next call is answered with the old one while the new is read
// in the background, and the call after it sends the new key. Same function, no deploy.
#[tokio::test]
async fn a_rotated_key_reaches_a_running_function_without_a_deploy() {
    let sm = SecretsManager::start().await;
    sm.put(SECRET, OLD);
    let h = harness(&sm, &[("SECRETS_CACHE_S", "1")]).await;
    accept_only(&h, &[OLD, NEW]).await;
    assert_eq!(search(&h, "coffee demand 1").await["mock"], false);
    assert_eq!((sm.reads().await, keys_sent(&h).await), (1, vec![OLD.to_owned()]), "read once, when first needed");
    assert_eq!(search(&h, "coffee demand 2").await["mock"], false);
    assert_eq!(sm.reads().await, 1, "held: not read again within SECRETS_CACHE_S");

    sm.put(SECRET, NEW);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let started = Instant::now();
    assert_eq!(search(&h, "coffee demand 3").await["mock"], false, "the held key serves while the new one is read");
    assert!(started.elapsed() < Duration::from_secs(1), "the read is not on the request's path");
    let deadline = Instant::now() + Duration::from_secs(3);
    while sm.reads().await < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The fake counts a read when it answers it; the function's background task then parses
    // and stores the value: let it (else, under a busy machine, the next call can start first).
    tokio::time::sleep(Duration::from_millis(200)).await;
    accept_only(&h, &[NEW]).await; // the old key is revoked
    assert_eq!(search(&h, "coffee demand 4").await["mock"], false);
    assert_eq!(keys_sent(&h).await, [NEW], "the new key, read at run time");
}

// A key revoked before the functions read the new one: the call it fails is answered (labelled
// mock data, nothing stored as an answer), and the refusal has the key read again before the
// next call, long before SECRETS_CACHE_S.
#[tokio::test]
async fn a_refused_key_is_read_again_at_once() {
    let sm = SecretsManager::start().await;
    sm.put(SECRET, OLD);
    let h = harness(&sm, &[]).await;
    accept_only(&h, &[OLD]).await;
    assert_eq!(search(&h, "tea demand 1").await["mock"], false);
    sm.put(SECRET, NEW);
    accept_only(&h, &[NEW]).await;
    let refused = search(&h, "tea demand 2").await;
    assert_eq!(refused["mock"], true, "refused: labelled mock data, {refused}");
    assert_eq!(keys_sent(&h).await, [OLD]);
    assert_eq!(search(&h, "tea demand 3").await["mock"], false);
    assert_eq!(sm.reads().await, 2, "read again once, after the refusal");
    assert_eq!(keys_sent(&h).await, [OLD, NEW]);
}

// Secrets Manager hangs. Before any key is held, a search is still answered within the read's
// 2 s bound (labelled mock data: no call without a key), and a failed read is not tried again on
// every request; with a key held, searches go on with it at their usual speed.
#[tokio::test]
async fn secrets_manager_hangs_and_every_search_is_answered_in_time() {
    let sm = SecretsManager::start().await;
    sm.put(SECRET, OLD);
    sm.hang(true);
    let cold = harness(&sm, &[]).await;
    accept_only(&cold, &[OLD]).await;
    let started = Instant::now();
    assert_eq!(search(&cold, "rice demand 1").await["mock"], true);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(4), "answered after {took:?} (the read's bound is 2 s)");
    let started = Instant::now();
    assert_eq!(search(&cold, "rice demand 2").await["mock"], true);
    assert!(started.elapsed() < Duration::from_millis(500), "the failed read paused, not tried on every request");
    assert!(keys_sent(&cold).await.is_empty(), "no upstream call without a key");

    sm.hang(false);
    let warm = harness(&sm, &[("SECRETS_CACHE_S", "1")]).await;
    accept_only(&warm, &[OLD]).await;
    assert_eq!(search(&warm, "rice demand 3").await["mock"], false);
    sm.hang(true);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    for query in ["rice demand 4", "rice demand 5"] {
        let started = Instant::now();
        assert_eq!(search(&warm, query).await["mock"], false, "the held key serves on");
        assert!(started.elapsed() < Duration::from_secs(1), "not held up by the hung read");
    }
}

// A secret that does not exist (renamed, deleted) is a clear failure, not a panic or a hang,
// and is refused by the fake exactly as Secrets Manager refuses it.
#[tokio::test]
async fn a_missing_secret_answers_mock_data_and_names_the_variable() {
    integration::logs::capture();
    let sm = SecretsManager::start().await;
    let h = harness(&sm, &[]).await;
    accept_only(&h, &[OLD]).await;
    assert_eq!(search(&h, "bean demand").await["mock"], true);
    let logged = integration::logs::lines("the secret could not be read");
    assert!(
        logged.iter().any(|l| l.contains("PERPLEXITY_API_KEY_SECRET") && l.contains("ResourceNotFoundException")),
        "{logged:?}"
    );
}

// Issue 62 item 1. Given the function's own fault (a secret its role may not read or that is
// gone: Secrets Manager's 4xx) on two reads in a row, the read is a configuration error, a 500
// counted against the version (its canary rolls it back); given Secrets Manager's (it hangs), a
// 503 `secret_unavailable` that is not (its own alarm, `SecretUnavailable`, fires).
#[tokio::test]
async fn a_secret_the_function_may_not_read_is_its_own_failure_and_a_hung_secrets_manager_is_not() {
    let sm = SecretsManager::start().await;
    let read = |env: Vec<(String, String)>| async move {
        let secret =
            shared::core::config::Env::from_lookup(|k| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
                .secret("PERPLEXITY_API_KEY")
                .unwrap()
                .unwrap();
        secret.value().await.unwrap_err()
    };
    let env = sm.env("PERPLEXITY_API_KEY", "research/renamed");
    let secret =
        shared::core::config::Env::from_lookup(move |k| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
            .secret("PERPLEXITY_API_KEY")
            .unwrap()
            .unwrap();
    // The first such read is not yet counted (IAM may still be taking a role update in); the
    // next, 5 s on, is.
    assert_eq!(secret.value().await.unwrap_err().code(), "secret_unavailable");
    tokio::time::sleep(Duration::from_secs(5)).await;
    let e = secret.value().await.unwrap_err();
    assert_eq!((e.status(), e.code(), e.is_own_failure()), (500, "misconfigured", true), "{e}");
    let response = shared::http::error(&e, "r-1");
    let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
    let text = String::from_utf8_lossy(&body);
    assert!(text.contains("PERPLEXITY_API_KEY_SECRET") && !text.contains("research/renamed"), "{text}");

    sm.put(SECRET, OLD);
    sm.hang(true);
    let e = read(sm.env("PERPLEXITY_API_KEY", SECRET)).await;
    assert_eq!((e.status(), e.code(), e.is_own_failure()), (503, "secret_unavailable", false), "{e}");
}

/// Stream links signed with the key `name` names in `sm`, read again after 1 s
/// (`SECRETS_CACHE_S=1`).
fn stream_links(sm: &SecretsManager, name: &str) -> shared::http::stream_links::StreamLinks {
    let mut env = sm.env("STREAM_TOKEN_KEY", name);
    env.push(("SECRETS_CACHE_S".into(), "1".into()));
    let env = shared::core::config::Env::from_lookup(move |k| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()));
    shared::http::stream_links::StreamLinks::from_settings(&shared::http::settings::Settings::read(&env).unwrap())
}

// Issue 62 item 5. Given the stream-link key rotated (a leaked one), then links signed with the
// old key open streams for SECRETS_CACHE_S after this container read the new one (while other
// containers still sign with it), and not after (before: for the life of the container). Given
// junk links (not a token, expired, another session's, another audience) or a well-formed one
// signed with another key, then none costs a Secrets Manager read (before: each refused link
// had the key read again, once per 10 s; issue 73 for the forged one).
#[tokio::test]
async fn a_rotated_link_key_expires_after_the_cache_and_junk_links_read_no_secret() {
    use chrono::Utc;
    use shared::http::extract::Owner;
    let sm = SecretsManager::start().await;
    sm.put("research/stream-key", &"k".repeat(32));
    let links = stream_links(&sm, "research/stream-key");
    let (user, now) = (Owner::User("u-1".into()), Utc::now());
    let signed_old = links.issue(&user, "s-1", now).await.unwrap();
    assert_eq!(sm.reads().await, 1);

    let expired = links.issue(&user, "s-1", now - chrono::Duration::hours(1)).await.unwrap();
    // Issue 73: well formed, for this session, unexpired, signed with another key.
    let forged = shared::http::stream_links::StreamLinks::new(&[7u8; 32]).issue(&user, "s-1", now).await.unwrap();
    let junk = ["", "not-a-token", "a.b.c", &expired, &links.issue(&user, "s-2", now).await.unwrap(), &forged];
    for _ in 0..3 {
        for token in junk {
            let e = links.verify(token, "s-1", now).await.unwrap_err();
            assert_eq!(e.status(), 401, "{token:?}: {e}");
        }
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    assert_eq!(sm.reads().await, 1, "junk and forged links read no secret (the held key was not yet 1 s old either)");

    sm.put("research/stream-key", &"n".repeat(32));
    // Past SECRETS_CACHE_S: the held key serves while the new one is read in the background.
    links.key().await.unwrap();
    let started = Instant::now();
    while links.key().await.unwrap() != "n".repeat(32).into_bytes() {
        assert!(started.elapsed() < Duration::from_secs(5), "the new key was never read");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(links.verify(&signed_old, "s-1", now).await.unwrap(), user, "within SECRETS_CACHE_S of the rotation");
    let signed_new = links.issue(&user, "s-1", now).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(
        links.verify(&signed_old, "s-1", now).await.unwrap_err().status(),
        401,
        "past it: the old key is dropped"
    );
    assert_eq!(links.verify(&signed_new, "s-1", now).await.unwrap(), user);
}
