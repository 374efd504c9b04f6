//! Routes declared once: template.yaml's HTTP API, each function's router and the local door
//! (`cargo xtask serve` routes by the same template, through the same parser) cannot disagree,
//! and every route checks in one order: the method (405), the caller (401), then the body (400).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use integration::chat::{Chat, ChatHarness};
use integration::{Harness, StoreKind, as_backend, as_user, request};
use serde_json::Value;
use shared::http::Router;

#[path = "../xtask/src/template_routes.rs"]
mod template_routes;

use template_routes::{Authorizer, Route};

/// Routes a router serves beyond the HTTP API: a Function URL's own, and non-HTTP events.
const BEYOND_THE_API: &[(&str, &str, &str)] = &[
    ("research", "GET", "/api/research/{id}/stream"),
    ("assistant", "GET", "/chat/{conversationId}/stream"),
    ("cost-report", "POST", "/events"),
    ("index-activity", "POST", "/events"),
];

fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn template() -> Vec<Route> {
    let routes = template_routes::parse(&std::fs::read_to_string(root().join("template.yaml")).unwrap());
    assert!(routes.len() >= 25, "only {} routes read from template.yaml", routes.len());
    for r in &routes {
        assert!(!r.function.is_empty() && !r.method.is_empty() && r.path.starts_with('/'), "{r:?}");
    }
    routes
}

/// Each function's router, over the test harnesses (kept alive with them).
struct Routers {
    by_function: BTreeMap<&'static str, Router>,
    _search: Harness,
    _chat: ChatHarness,
}

async fn routers() -> Routers {
    let search = Harness::new(StoreKind::Local).await;
    let chat = ChatHarness::new(StoreKind::Local, Chat::default()).await;
    let records = Arc::clone(&search.records);
    let clock = search.clock.clone() as Arc<dyn shared::core::clock::Clock>;
    let research = research::App::new(&integration::config::<&str, String>(&[]), records, clock).unwrap();
    let by_function = BTreeMap::from([
        ("search", search::routes(Arc::clone(&search.app))),
        ("cost-report", cost_report::routes(Arc::new(search.cost_report()))),
        ("research", research::routes(Arc::new(research))),
        ("index-activity", index_activity::routes(Arc::clone(&chat.rag.indexer))),
        ("rag-search", rag_search::routes(Arc::clone(&chat.rag.rag))),
        ("assistant", assistant::routes(Arc::clone(&chat.app))),
    ]);
    Routers { by_function, _search: search, _chat: chat }
}

/// `pattern` with a sample value for each parameter.
fn sample(pattern: &str) -> String {
    pattern
        .split('/')
        .map(|segment| match segment {
            "{method}" => "trends",
            "{name}" => "search_web",
            "{userId}" => "u-1",
            "{id}" => "3f1d2c4e-0000-4000-8000-000000000000",
            s if s.starts_with('{') => "x-1",
            s => s,
        })
        .collect::<Vec<_>>()
        .join("/")
}

async fn send(router: &Router, req: lambda_http::Request) -> (u16, Value, Option<String>) {
    let response = shared::http::invoke(router.clone(), req).await;
    let allow = response.headers().get("allow").map(|v| v.to_str().unwrap().to_owned());
    let body = String::from_utf8_lossy(response.body().as_ref()).into_owned();
    (response.status().as_u16(), serde_json::from_str(&body).unwrap_or(Value::Null), allow)
}

/// Whether an answer is the router's own: no route for the path, or not for the method.
fn unrouted(status: u16, body: &Value) -> bool {
    let message = body["error"]["message"].as_str().unwrap_or_default();
    status == 405 || (status == 404 && message.starts_with("no route for"))
}

fn signed(route: &Route, req: lambda_http::Request) -> lambda_http::Request {
    match route.authorizer {
        Authorizer::Iam => as_backend(req),
        Authorizer::UserJwt | Authorizer::None => as_user(req, "u-1"),
    }
}

// Given every route of template.yaml's HTTP API, then its function's router takes it (none
// answers the router's own 404 or 405), and one an authorizer guards is refused 401 unsigned by
// the function too (a Function URL, a test invoke or a template that lost its authorizer opens
// nothing).
#[tokio::test]
async fn every_route_of_the_template_reaches_its_function() {
    let routers = routers().await;
    let routes = template();
    for route in &routes {
        let router = routers.by_function.get(route.function.as_str()).unwrap_or_else(|| panic!("{route:?}"));
        let (status, body, _) = send(router, request(&route.method, &sample(&route.path), "")).await;
        assert!(
            !unrouted(status, &body),
            "{} {} is not routed by {}: {status} {body}",
            route.method,
            route.path,
            route.function
        );
        if route.authorizer != Authorizer::None {
            assert_eq!(status, 401, "{} {} unsigned: {body}", route.method, route.path);
        }
    }
    // A trailing `/` is the same route, as it was before routes were declared.
    let (status, body, _) = send(&routers.by_function["search"], request("GET", "/tools/", "")).await;
    assert_eq!(status, 200, "{body}");
    // The door's own parser and matcher, as `cargo xtask serve` routes by them.
    assert!(template_routes::matches("/users/{userId}/feedback", "/users/u%7C1/feedback"));
    assert!(!template_routes::matches("/users/{userId}/feedback", "/users//feedback"));
    assert!(!template_routes::matches("/rag/search", "/rag/search/more"));
}

// Given each function's source, then every route its router declares is one of the template's
// for that function, or one it serves beyond the HTTP API (its Function URL's, its events).
#[test]
fn every_route_a_router_declares_is_deployed() {
    let template: BTreeSet<(String, String, String)> =
        template().into_iter().map(|r| (r.function, r.method, r.path)).collect();
    let beyond: BTreeSet<(String, String, String)> =
        BEYOND_THE_API.iter().map(|(f, m, p)| (f.to_string(), m.to_string(), p.to_string())).collect();
    let mut declared = 0;
    for function in ["search", "cost-report", "research", "index-activity", "rag-search", "assistant"] {
        let code = std::fs::read_to_string(root().join(format!("functions/{function}/src/lib.rs"))).unwrap();
        for line in code.lines().filter_map(|l| l.trim().strip_prefix(".route(\"")) {
            let (path, handlers) = line.split_once('"').unwrap();
            for method in ["get", "post", "put", "delete"] {
                if !handlers.contains(&format!("{method}(")) {
                    continue;
                }
                let key = (function.to_owned(), method.to_uppercase(), path.to_owned());
                assert!(template.contains(&key) || beyond.contains(&key), "{key:?} is declared but not deployed");
                declared += 1;
            }
        }
    }
    assert_eq!(declared, template.len() + beyond.len(), "every deployed route is declared once");
}

// Given every route of the template, when a request is wrong twice, then the answer is the same
// on every route: a wrong method is 405 (with `Allow`) before the caller is looked at, an
// unsigned request 401 before its body is read, and a signed one's malformed body a 4xx that
// names it (never a 5xx). The table is printed for the record.
#[tokio::test]
async fn every_route_checks_in_one_order() {
    let routers = routers().await;
    let routes = template();
    let mut methods: BTreeMap<(&str, &str), BTreeSet<&str>> = BTreeMap::new();
    for r in &routes {
        methods.entry((r.function.as_str(), r.path.as_str())).or_default().insert(r.method.as_str());
    }
    println!("{:<6} {:<34} {:>8} {:>12} {:>14}", "method", "path", "unsigned", "wrong method", "malformed body");
    for route in &routes {
        let router = &routers.by_function[route.function.as_str()];
        let path = sample(&route.path);
        let declared = &methods[&(route.function.as_str(), route.path.as_str())];
        // No route takes PATCH.
        let wrong = "PATCH";
        let (unsigned, _, _) = send(router, request(&route.method, &path, "")).await;
        let (status, body, allow) = send(router, request(wrong, &path, "{")).await;
        assert_eq!(status, 405, "{wrong} {path}: {body}");
        assert_eq!(body["error"]["code"], "method_not_allowed", "{body}");
        let allow = allow.expect("a 405 says what is allowed");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        for m in declared {
            assert!(allow.contains(m) && message.contains(m), "{wrong} {path}: Allow {allow:?}, {message:?} lack {m}");
        }
        // HEAD would run a GET route's work (a stream's run, a quota) and drop the answer.
        let (status, body, allow) = send(router, request("HEAD", &path, "")).await;
        assert_eq!(status, 405, "HEAD {path}: {body}");
        assert!(allow.is_some_and(|a| !a.contains("HEAD")), "HEAD {path}");
        let malformed = if matches!(route.method.as_str(), "POST" | "PUT") {
            if route.authorizer != Authorizer::None {
                let (status, body, _) = send(router, request(&route.method, &path, "{")).await;
                assert_eq!(status, 401, "{} {path} unsigned and malformed: {body}", route.method);
            }
            let (status, body, _) = send(router, signed(route, request(&route.method, &path, "{"))).await;
            assert!(
                (400..500).contains(&status) && status != 401 && status != 405,
                "{} {path}: {status} {body}",
                route.method
            );
            assert!(body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
            status.to_string()
        } else {
            "-".to_owned()
        };
        println!("{:<6} {:<34} {unsigned:>8} {status:>12} {malformed:>14}", route.method, route.path);
    }
}

// Issue 73: given every user route (the HTTP API's JWT routes, and the timeline's on its
// Function URL, the stream opened with its owner's token), when one user sends more than their minute's quota of requests (here
// 2), malformed bodies and another user's path included, then the next is 429
// `quota_exceeded`: the quota is taken where the user is extracted, before anything else is
// read, so no route is free to flood. Another user's first request still passes the quota.
#[tokio::test]
async fn every_user_route_takes_the_users_quota() {
    let quota = [("USER_QUOTA_PER_MINUTE", "2"), ("USER_QUOTA_PER_DAY", "0")];
    let search =
        Harness::with(StoreKind::Local, integration::Setup { perplexity: true, env: &quota, ..Default::default() })
            .await;
    let chat = ChatHarness::new(StoreKind::Local, Chat { env: &quota, ..Chat::default() }).await;
    let clock = search.clock.clone() as Arc<dyn shared::core::clock::Clock>;
    let research = research::App::new(&integration::config(&quota), Arc::clone(&search.records), clock).unwrap();
    let routers = BTreeMap::from([
        ("search", search::routes(Arc::clone(&search.app))),
        ("research", research::routes(Arc::new(research))),
        ("rag-search", rag_search::routes(Arc::clone(&chat.rag.rag))),
        ("assistant", assistant::routes(Arc::clone(&chat.app))),
    ]);
    let mut routes: Vec<(String, String, String)> = template()
        .into_iter()
        // The timeline's routes are the backend's on the HTTP API, and users' on its Function URL.
        .filter(|r| r.authorizer == Authorizer::UserJwt || r.function == "research")
        .map(|r| (r.function, r.method, r.path))
        .collect();
    routes.push(("research".into(), "GET".into(), "/api/research/{id}/stream".into()));
    assert!(routes.len() >= 13, "only {} user routes", routes.len());
    for (i, (function, method, path)) in routes.iter().enumerate() {
        let router = routers.get(function.as_str()).unwrap_or_else(|| panic!("no router for {function}"));
        let (user, path) = (format!("quota-user-{i}"), sample(path));
        let body = if matches!(method.as_str(), "POST" | "PUT") { "{" } else { "" };
        for _ in 0..2 {
            let (status, answer, _) = send(router, as_user(request(method, &path, body), &user)).await;
            assert_ne!(answer["error"]["code"], "quota_exceeded", "{method} {path}: {status} {answer}");
        }
        let (status, answer, _) = send(router, as_user(request(method, &path, body), &user)).await;
        assert_eq!(
            (status, answer["error"]["code"].as_str()),
            (429, Some("quota_exceeded")),
            "{method} {path}: {answer}"
        );
        let (_, answer, _) = send(router, as_user(request(method, &path, body), &format!("other-{i}"))).await;
        assert_ne!(
            answer["error"]["code"], "quota_exceeded",
            "{method} {path}: one user's flood spent another's quota"
        );
    }
}
