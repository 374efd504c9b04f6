//! The cost report end to end: real searches through the search handler (fake Perplexity and
//! Tavily on 127.0.0.1), LLM and embedding calls through the one ledger path, then
//! `GET /cost-report` in every grouping and format, and the scheduled digest, on both record
//! stores. The HTML page is rendered in headless Chromium.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use integration::{Harness, Setup, StoreKind, on_both_stores, perplexity};
use lambda_http::Body;
use serde_json::{Value, json};
use shared::core::clock::Clock;
use shared::core::upstream::Usage;
use shared::costs::ledger::{CallKind, Charge, Outcome};
use wiremock::matchers::{body_string_contains, method, path};
use wiremock::{Mock, ResponseTemplate};

/// Two days of activity: day 0 research (Perplexity, a cache hit, an LLM call); day 1 strategy
/// (Perplexity fails, Tavily answers) and rag (an embedding call). Returns the harness, the
/// report app over the same store and clock, and day 0.
async fn activity(kind: StoreKind) -> (Harness, shared::http::Router, DateTime<Utc>) {
    let h = Harness::with(kind, Setup { perplexity: true, tavily: true, ..Setup::default() }).await;
    Mock::given(method("POST"))
        .and(body_string_contains("coffee"))
        .respond_with(ResponseTemplate::new(200).set_body_json(perplexity::answer(
            // One refused citation (credentials in the URL) and one marker nothing backs.
            "Coffee [1] [7]",
            json!([{"id": 1, "title": "Coffee", "url": "https://example.com/coffee", "snippet": "c"},
                   {"id": 2, "title": "Bad", "url": "https://user:pw@example.com/bad", "snippet": "b"}]),
            json!([]),
            perplexity::usage(800, 400, 0, None),
        )))
        .mount(h.upstream())
        .await;
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(500)).mount(h.upstream()).await;
    Mock::given(method("POST"))
        .and(path("/search"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "answer": "a", "results": [{"title": "T", "url": "https://t.example.com/", "content": "c"}], "usage": {"credits": 1}
        })))
        .mount(h.tavily())
        .await;
    let day0 = h.clock.now();
    let ledger = h.app.search.ledger().clone();
    assert_eq!(h.post("/search", json!({"query": "coffee"})).await.1["cached"], false);
    assert_eq!(h.post("/search", json!({"query": "coffee"})).await.1["cached"], true);
    let llm = Usage { input_tokens: 2000, output_tokens: 1500, provider_cost_usd: Some(0.0044), ..Usage::default() };
    ledger
        .charge(&Charge {
            request_id: "llm-1",
            agent: "research",
            kind: CallKind::Llm,
            provider: "deepseek",
            model: "deepseek-reasoner",
            usage: &llm,
            outcome: Outcome::Live,
            saved_usd: 0.0,
            upstream_id: None,
        })
        .await;
    h.clock.advance(Duration::days(1));
    let (_, r) = h.post("/search", json!({"query": "broken upstream", "agent": "strategy"})).await;
    assert_eq!(r["provider"], "tavily");
    let embedding = Usage { input_tokens: 1000, ..Usage::default() };
    ledger
        .charge(&Charge {
            request_id: "emb-1",
            agent: "rag",
            kind: CallKind::Embedding,
            provider: "zhipu",
            model: "embedding-3",
            usage: &embedding,
            outcome: Outcome::Live,
            saved_usd: 0.0,
            upstream_id: None,
        })
        .await;
    let app = cost_report::routes(Arc::new(h.cost_report()));
    (h, app, day0)
}

async fn get(app: &shared::http::Router, uri: &str) -> (u16, String, String) {
    let req = lambda_http::http::Request::builder().method("GET").uri(uri).body(Body::Empty).unwrap();
    let req = lambda_http::RequestExt::with_query_string_parameters(
        req,
        uri.split_once('?')
            .map(|(_, q)| {
                q.split('&')
                    .filter_map(|p| p.split_once('='))
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect::<std::collections::HashMap<_, _>>()
            })
            .unwrap_or_default(),
    );
    let response = shared::http::invoke(app.clone(), integration::as_backend(req)).await;
    let content_type =
        response.headers().get("content-type").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    let body = match response.body() {
        Body::Text(t) => t.clone(),
        other => String::from_utf8_lossy(other.as_ref()).into_owned(),
    };
    (response.status().as_u16(), content_type, body)
}

fn day(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d").to_string()
}

// Then the text report is seed 000's shape, character for character, in every grouping.
async fn the_text_report_is_the_seeds_shape_in_every_grouping(kind: StoreKind) {
    let (_h, app, day0) = activity(kind).await;
    let (status, content_type, text) = get(&app, "/cost-report?format=text").await;
    assert_eq!((status, content_type.as_str()), (200, "text/plain; charset=utf-8"));
    assert_eq!(
        text,
        "Rag Agent:\n- Embeddings (embedding-3): $0.0001\nTotal: $0.0001\n\n\
         Research Agent:\n- AI Model (deepseek-reasoner): $0.0044\n- Perplexity Search: $0.0012\nTotal: $0.0056\n\n\
         Strategy Agent:\n- Tavily Search: $0.0080\nTotal: $0.0080\n"
    );
    let (_, _, text) = get(&app, "/cost-report?format=text&groupBy=day").await;
    assert_eq!(
        text,
        format!(
            "{}:\n- AI Model (deepseek-reasoner): $0.0044\n- Perplexity Search: $0.0012\nTotal: $0.0056\n\n\
             {}:\n- Tavily Search: $0.0080\n- Embeddings (embedding-3): $0.0001\nTotal: $0.0081\n",
            day(day0),
            day(day0 + Duration::days(1))
        )
    );
    let (_, _, text) = get(&app, "/cost-report?format=text&groupBy=model").await;
    assert_eq!(
        text,
        "deepseek/deepseek-reasoner:\n- Research Agent: $0.0044\nTotal: $0.0044\n\n\
         perplexity/sonar:\n- Research Agent: $0.0012\nTotal: $0.0012\n\n\
         tavily/basic:\n- Strategy Agent: $0.0080\nTotal: $0.0080\n\n\
         zhipu/embedding-3:\n- Rag Agent: $0.0001\nTotal: $0.0001\n"
    );
    // A period with nothing in it says so.
    let (_, _, text) = get(&app, "/cost-report?format=text&from=2020-01-01&to=2020-01-31").await;
    assert_eq!(text, "No costs recorded from 2020-01-01T00:00:00Z to 2020-01-31T23:59:59Z.\n");
}

// Then the JSON report has the lines, totals, cache savings and provider availability.
async fn the_json_report_counts_costs_cache_and_availability(kind: StoreKind) {
    let (_h, app, _) = activity(kind).await;
    for group_by in ["agent", "day", "model"] {
        let (status, content_type, body) = get(&app, &format!("/cost-report?groupBy={group_by}")).await;
        assert_eq!((status, content_type.as_str()), (200, "application/json; charset=utf-8"));
        let r: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(r["groupBy"], group_by);
        assert!((r["totals"]["costUsd"].as_f64().unwrap() - 0.01367).abs() < 1e-9, "{}", r["totals"]);
        assert_eq!(r["totals"]["calls"], 5);
        let group_sum: f64 = r["groups"].as_array().unwrap().iter().map(|g| g["totalUsd"].as_f64().unwrap()).sum();
        assert!((group_sum - 0.01367).abs() < 1e-9);
    }
    let (_, _, body) = get(&app, "/cost-report").await;
    let r: Value = serde_json::from_str(&body).unwrap();
    let research = r["groups"].as_array().unwrap().iter().find(|g| g["key"] == "research").unwrap();
    let search = research["lines"].as_array().unwrap().iter().find(|l| l["label"] == "Perplexity Search").unwrap();
    assert_eq!((search["calls"].as_u64(), search["cachedCalls"].as_u64()), (Some(2), Some(1)));
    assert_eq!((search["inputTokens"].as_u64(), search["outputTokens"].as_u64()), (Some(800), Some(400)));
    assert!((search["savedUsd"].as_f64().unwrap() - 0.0012).abs() < 1e-12);
    assert_eq!((r["cache"]["hits"].as_u64(), r["cache"]["liveSearches"].as_u64()), (Some(1), Some(2)));
    assert!((r["cache"]["hitRate"].as_f64().unwrap() - 1.0 / 3.0).abs() < 1e-12);
    assert!((r["cache"]["savedUsd"].as_f64().unwrap() - 0.0012).abs() < 1e-12);
    assert_eq!(
        r["providers"],
        json!([
            {"provider": "perplexity", "successes": 1, "failures": 1, "availability": 0.5},
            {"provider": "tavily", "successes": 1, "failures": 0, "availability": 1.0}
        ])
    );
    // Issue 42 (seed 000): the citation quality of each day's live answers, summed per day.
    let daily = r["daily"].as_array().unwrap();
    let day0 = daily.iter().find(|d| d["agents"].get("research").is_some()).unwrap();
    assert_eq!(
        day0["citations"],
        json!({"answers": 1, "sources": 1, "rejectedCitations": 1, "unbackedMarkers": 1}),
        "the cache hit is not counted again"
    );
    let day1 = daily.iter().find(|d| d["agents"].get("strategy").is_some()).unwrap();
    assert_eq!(day1["citations"], json!({"answers": 1, "sources": 1, "rejectedCitations": 0, "unbackedMarkers": 0}));
}

async fn post_usage(app: &shared::http::Router, body: &str, backend: bool) -> (u16, Value) {
    let req = lambda_http::http::Request::builder()
        .method("POST")
        .uri("/costs/usage")
        .body(Body::Text(body.to_owned()))
        .unwrap();
    let req = if backend { integration::as_backend(req) } else { req };
    let response = shared::http::invoke(app.clone(), req).await;
    (response.status().as_u16(), serde_json::from_slice(response.body().as_ref()).unwrap())
}

// Issue 42 (seed 000): the app reports the model calls it made itself; each is recorded once
// per client id, priced from the same table, and shown as the agent's model line beside its
// search line.
async fn reported_model_calls_enter_the_report_once_each(kind: StoreKind) {
    let (_h, app, _) = activity(kind).await;
    let call = json!({"id": "writing-outline-1", "agent": "writing", "provider": "deepseek",
                      "model": "deepseek-reasoner", "inputTokens": 2000, "outputTokens": 1500});
    let (status, first) = post_usage(&app, &call.to_string(), true).await;
    assert_eq!(status, 201, "{first}");
    assert_eq!((first["costSource"].as_str(), first["repeated"].as_bool()), (Some("price_table"), Some(false)));
    // 2,000 x 0.00028 / 1K + 1,500 x 0.00042 / 1K (prices.json: DeepSeek's list price)
    assert!((first["costUsd"].as_f64().unwrap() - 0.00119).abs() < 1e-12, "{first}");
    let (status, again) = post_usage(&app, &call.to_string(), true).await;
    assert_eq!((status, again["repeated"].as_bool()), (200, Some(true)), "{again}");
    assert_eq!(
        (again["costUsd"].clone(), again["recordedAt"].clone()),
        (first["costUsd"].clone(), first["recordedAt"].clone())
    );
    let mut changed = call.clone();
    changed["outputTokens"] = json!(1600);
    let (status, r) = post_usage(&app, &changed.to_string(), true).await;
    assert_eq!((status, r["error"]["code"].as_str()), (400, Some("id_reused")), "{r}");
    let unpriced = json!({"id": "w-2", "agent": "writing", "provider": "acme", "model": "m1", "inputTokens": 10});
    let (status, r) = post_usage(&app, &unpriced.to_string(), true).await;
    assert_eq!((status, r["error"]["code"].as_str()), (400, Some("unpriced_model")), "{r}");
    for (body, code) in [("{", "malformed_json"), (r#"{"id": "x"}"#, "invalid_usage")] {
        let (status, r) = post_usage(&app, body, true).await;
        assert_eq!((status, r["error"]["code"].as_str()), (400, Some(code)), "{body}: {r}");
    }
    let (status, _) = post_usage(&app, &call.to_string(), false).await;
    assert_eq!(status, 401, "anonymous callers may not write costs");
    // The same report twice at once: one is recorded, the other is its repeat.
    let twice = json!({"id": "writing-draft-1", "agent": "writing", "provider": "deepseek",
                       "model": "deepseek-reasoner", "inputTokens": 0, "outputTokens": 1000, "costUsd": 0.0021});
    let twice = twice.to_string();
    let (a, b) = tokio::join!(post_usage(&app, &twice, true), post_usage(&app, &twice, true));
    let mut statuses = [a.0, b.0];
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 201], "{} / {}", a.1, b.1);
    // The report: the writing agent's model line once, the refused reports nowhere.
    let (_, _, text) = get(&app, "/cost-report?format=text").await;
    // 0.00119 priced above + 0.0021 reported
    assert!(text.contains("Writing Agent:\n- AI Model (deepseek-reasoner): $0.0033\nTotal: $0.0033\n"), "{text}");
    assert!(!text.contains("acme") && !text.contains("m1"), "{text}");
}

// Given a report whose claim was stored but whose cost record was not (a crash between the two),
// two days ago, then reporting it again stores the record into that closed day and revises its
// stored sums (the report before had stored them without it): nothing owed is lost, and
// nothing doubles.
async fn a_repeated_report_completes_a_half_stored_one(kind: StoreKind) {
    let (h, app, _) = activity(kind).await;
    let cost = json!({"request_id": "strategy-plan-9", "agent": "strategy", "kind": "llm", "provider": "deepseek",
        "model": "deepseek-reasoner", "input_tokens": 1000, "output_tokens": 1000, "credits": 0, "searches": 0,
        "cost_usd": 0.01, "cost_source": "provider", "cached": false, "mock": false, "failed": false, "saved_usd": 0.0,
        "upstream_id": null, "timestamp": shared::core::time::format(&(h.clock.now() - Duration::days(2)))});
    // The backend integration::as_backend signs as.
    let (pk, sk) = shared::costs::usage::claim_key("123456789012:role/activity-backend", "strategy-plan-9");
    let claim = shared::core::records::Record {
        pk,
        sk: sk.into(),
        expires_at: None,
        body: json!({"reportedBy": "123456789012:role/activity-backend", "cost": cost}),
    };
    h.records.put(&claim).await.unwrap();
    let (_, _, before) = get(&app, "/cost-report?format=text").await;
    assert!(!before.contains("Strategy Agent:\n- AI Model"), "{before}");
    let call = json!({"id": "strategy-plan-9", "agent": "strategy", "provider": "deepseek", "model": "deepseek-reasoner",
                      "inputTokens": 1000, "outputTokens": 1000, "costUsd": 0.01});
    for _ in 0..2 {
        let (status, r) = post_usage(&app, &call.to_string(), true).await;
        assert_eq!((status, r["repeated"].as_bool(), r["costSource"].as_str()), (200, Some(true), Some("provider")));
    }
    let (_, _, after) = get(&app, "/cost-report?format=text").await;
    assert!(
        after.contains(
            "Strategy Agent:\n- AI Model (deepseek-reasoner): $0.0100\n- Tavily Search: $0.0080\nTotal: $0.0180\n"
        ),
        "{after}"
    );
}

// Given two backends that use the same id, then each report is its own: both are recorded.
async fn each_backend_reports_under_its_own_ids(kind: StoreKind) {
    let (_h, app, _) = activity(kind).await;
    let call = json!({"id": "outline-1", "agent": "writing", "provider": "deepseek", "model": "deepseek-reasoner",
                      "inputTokens": 1000, "outputTokens": 0});
    assert_eq!(post_usage(&app, &call.to_string(), true).await.0, 201);
    let other = integration::with_authorizer(
        lambda_http::http::Request::builder()
            .method("POST")
            .uri("/costs/usage")
            .body(Body::Text(call.to_string()))
            .unwrap(),
        json!({"iam": {"accountId": "210987654321", "userArn": "arn:aws:sts::210987654321:assumed-role/other/s"}}),
    );
    assert_eq!(shared::http::invoke(app.clone(), other).await.status(), 201, "another backend's outline-1 is its own");
    let (_, _, text) = get(&app, "/cost-report?format=text").await;
    // Two reports of 1,000 input tokens at $0.00028 per 1K.
    assert!(text.contains("Writing Agent:\n- AI Model (deepseek-reasoner): $0.0006\nTotal: $0.0006\n"), "{text}");
}

// Then every grouping also renders as the HTML page, with the same totals.
async fn every_grouping_renders_as_html(kind: StoreKind) {
    let (_h, app, day0) = activity(kind).await;
    for (group_by, group_title) in
        [("agent", "Research Agent".to_owned()), ("day", day(day0)), ("model", "tavily/basic".to_owned())]
    {
        let (status, content_type, page) = get(&app, &format!("/cost-report?format=html&groupBy={group_by}")).await;
        assert_eq!((status, content_type.as_str()), (200, "text/html; charset=utf-8"));
        assert!(page.starts_with("<!doctype html>") && page.trim_end().ends_with("</html>"));
        assert!(page.contains("id=\"total-cost\">$0.0137<"), "{group_by}");
        assert!(page.contains(&format!("grouped by {group_by}")));
        assert!(page.contains(&format!("<td>{group_title}</td>")), "{group_by}: {group_title}");
        assert_eq!(page.matches("class=\"bar\"").count(), 3);
    }
}

// Given bad parameters or methods, then 4xx JSON errors.
async fn bad_report_parameters_are_refused(kind: StoreKind) {
    let (_h, app, _) = activity(kind).await;
    for (uri, status) in [
        ("/cost-report?from=2026-11-10&to=2026-11-01", 400),
        ("/cost-report?groupBy=week", 400),
        ("/cost-report?format=pdf", 400),
        ("/cost-report?from=yesterday", 400),
        ("/cost-report?from=2020-01-01&to=2026-01-01", 400),
        ("/cost-report?limit=5", 400),
        // The calendar's edges (these once panicked in date arithmetic).
        ("/cost-report?to=+262143-12-31", 400),
        ("/cost-report?to=-262144-01-01", 400),
        ("/cost-report?from=-262144-01-01&to=2026-01-01", 400),
        ("/elsewhere", 404),
    ] {
        let (got, _, body) = get(&app, uri).await;
        let r: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(got, status, "{uri}: {body}");
        assert!(r["error"]["message"].as_str().is_some_and(|m| !m.is_empty()));
    }
}

// Given the daily schedule fires, then yesterday's digest by agent comes back (and is logged
// and published as metrics).
async fn the_scheduled_digest_reports_yesterday(kind: StoreKind) {
    let (h, app, _) = activity(kind).await;
    h.clock.advance(Duration::days(1));
    let text =
        std::fs::read_to_string(format!("{}/../infra/events/schedule.json", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let req = lambda_http::request::from_str(&text).expect("a scheduled event passes through");
    let response = shared::http::invoke(app.clone(), req).await;
    assert_eq!(response.status(), 200);
    let digest: Value = serde_json::from_slice(response.body().as_ref()).unwrap();
    assert_eq!(digest["day"], day(h.clock.now() - Duration::days(1)));
    assert_eq!(
        digest["text"],
        "Rag Agent:\n- Embeddings (embedding-3): $0.0001\nTotal: $0.0001\n\nStrategy Agent:\n- Tavily Search: $0.0080\nTotal: $0.0080\n"
    );
    assert_eq!(
        digest["report"]["providers"][0],
        json!({"provider": "perplexity", "successes": 0, "failures": 1, "availability": 0.0})
    );
}

// Given 64 calls in one day, then their records are spread over the day's shards
// (`COST#<day>#<n>`), and the report reads every shard and the day's pre-sharding partition,
// oldest first.
async fn a_days_costs_are_sharded_and_read_back_whole(kind: StoreKind) {
    let h = Harness::new(kind).await;
    let ledger = h.app.search.ledger();
    let start = h.clock.now();
    let mut costs = Vec::new();
    for i in 0..64 {
        h.clock.advance(Duration::seconds(1));
        let usage = Usage { input_tokens: i, ..Usage::default() };
        let charge = Charge {
            request_id: &format!("r{i}"),
            agent: "research",
            kind: CallKind::Search,
            provider: "perplexity",
            model: "sonar",
            usage: &usage,
            outcome: Outcome::Live,
            saved_usd: 0.0,
            upstream_id: None,
        };
        costs.push(ledger.bill(&charge));
    }
    ledger.record_all(&costs).await.unwrap();
    let day = start.date_naive().format("%Y-%m-%d").to_string();
    let mut used = 0;
    for shard in 0..shared::costs::ledger::SHARDS {
        let pk = format!("COST#{day}#{shard}");
        let n = h.records.query(&pk, "0", "~", 0).await.unwrap().len();
        assert!(n < 64, "shard {shard} holds all {n}");
        used += usize::from(n > 0);
    }
    assert!(used >= 8, "64 records over {used} of {} shards", shared::costs::ledger::SHARDS);
    // A record written before the sharding, in the day's old partition.
    let mut legacy = costs[0].clone();
    legacy.request_id = "before-sharding".into();
    legacy.timestamp = start;
    let body = serde_json::to_value(&legacy).unwrap();
    let sk = format!("{}#before-sharding#perplexity#x", start.to_rfc3339_opts(chrono::SecondsFormat::Micros, true));
    let record = shared::core::records::Record { pk: format!("COST#{day}"), sk, expires_at: None, body };
    h.records.put(&record).await.unwrap();
    let read = ledger.between(start, h.clock.now()).await.unwrap();
    assert_eq!(read.len(), 65);
    assert_eq!(read[0].request_id, "before-sharding");
    let ids: Vec<&str> = read[1..].iter().map(|c| c.request_id.as_str()).collect();
    let want: Vec<String> = (0..64).map(|i| format!("r{i}")).collect();
    assert_eq!(ids, want, "oldest first, across shards");
}

/// A cost record of `like`'s kind at `like`'s time, costing `usd`, as the ledger stores it.
fn stored_cost(like: &shared::costs::ledger::CostRecord, id: &str, usd: f64) -> shared::core::records::Record {
    let mut cost = like.clone();
    cost.request_id = id.into();
    cost.cost_usd = usd;
    let at = cost.timestamp.to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    shared::core::records::Record {
        pk: format!("COST#{}#3", day(cost.timestamp)),
        sk: format!("{at}#{id}#{}#x", cost.provider),
        expires_at: None,
        body: serde_json::to_value(&cost).unwrap(),
    }
}

fn total(report: &str) -> f64 {
    serde_json::from_str::<Value>(report).unwrap()["totals"]["costUsd"].as_f64().unwrap()
}

// Given two closed days, then a report covering them whole stores each day's sums and the next
// report reads those (one item a day), not the records; a record replayed from the logs (or
// imported) into a closed day afterwards revises it, and the next report has it. A period's
// partial day and today are summed from their records and never stored.
async fn closed_days_are_read_from_their_sums_until_revised(kind: StoreKind) {
    use shared::core::records::replay;
    let (h, app, day0) = activity(kind).await;
    let sum = |t: DateTime<Utc>| {
        let records = Arc::clone(&h.records);
        async move { records.get("COSTDAY", &format!("{}#sum", day(t)), 0).await.unwrap() }
    };
    h.clock.advance(Duration::days(2));
    let partial = (day0 + Duration::seconds(1)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    assert_eq!(get(&app, &format!("/cost-report?from={partial}&to={}", day(day0))).await.0, 200);
    assert!(sum(day0).await.is_none(), "a day the period covers in part is not stored");
    assert_eq!(get(&app, "/cost-report").await.0, 200);
    assert!(sum(h.clock.now()).await.is_none(), "today is not stored");

    let period = format!("/cost-report?from={}&to={}", day(day0), day(day0 + Duration::days(1)));
    let (status, _, first) = get(&app, &period).await;
    assert_eq!(status, 200, "{first}");
    assert!(sum(day0).await.is_some() && sum(day0 + Duration::days(1)).await.is_some(), "both days' sums stored");
    let like = h.app.search.ledger().between(day0 - Duration::seconds(1), day0 + Duration::seconds(1)).await.unwrap()
        [0]
    .clone();

    // Written behind the ledger's back: the report reads the day's sums, not its records.
    h.records.put(&stored_cost(&like, "behind", 0.5)).await.unwrap();
    assert_eq!(get(&app, &period).await.2, first, "read from the stored sums");

    // Replayed from a log line: the day is revised, and recomputed from all its records.
    let replayed = stored_cost(&like, "replayed", 1.0);
    let line = json!({"level": "ERROR", "fields": {"message": format!("cost record {}", replay::MARKER),
                      "replay": replay::encode(std::slice::from_ref(&replayed)).to_string()}});
    let done = shared::compose::replay(&*h.records, [line.to_string()]).await.unwrap();
    assert_eq!((done.lines, done.written, done.refused), (1, 1, 0));
    let (_, _, second) = get(&app, &period).await;
    assert!((total(&second) - total(&first) - 1.5).abs() < 1e-9, "{} -> {}", total(&first), total(&second));
    assert_eq!(get(&app, &period).await.2, second, "stored again at the new revision");

    // Imported through the ledger into the second day: revised too.
    let mut imported: shared::costs::ledger::CostRecord = serde_json::from_value(replayed.body).unwrap();
    imported.timestamp += Duration::days(1);
    h.app.search.ledger().record_all(&[imported]).await.unwrap();
    let (_, _, third) = get(&app, &period).await;
    assert!((total(&third) - total(&second) - 1.0).abs() < 1e-9, "{} -> {}", total(&second), total(&third));
}

on_both_stores!(
    a_days_costs_are_sharded_and_read_back_whole,
    closed_days_are_read_from_their_sums_until_revised,
    every_grouping_renders_as_html,
    the_text_report_is_the_seeds_shape_in_every_grouping,
    the_json_report_counts_costs_cache_and_availability,
    bad_report_parameters_are_refused,
    the_scheduled_digest_reports_yesterday,
    reported_model_calls_enter_the_report_once_each,
    a_repeated_report_completes_a_half_stored_one,
    each_backend_reports_under_its_own_ids,
);

/// The Chromium the test command installs.
fn chromium() -> String {
    let candidates =
        [std::env::var("CHROMIUM").unwrap_or_default(), "/usr/bin/chromium".into(), "/usr/bin/chromium-browser".into()];
    candidates.into_iter().find(|c| !c.is_empty() && Path::new(c).exists()).unwrap_or_else(|| {
        panic!("headless Chromium is not installed: run the suite with `bash infra/test.sh` (it installs Debian's chromium) or set CHROMIUM")
    })
}

fn chromium_run(args: &[&str], profile: &Path) -> std::process::Output {
    Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .output()
        .expect("run chromium")
}

// Given the HTML report, when a browser renders it, then the chart's bars and the totals are
// there and drawn in the agents' colours.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_html_report_renders_its_chart_and_totals_in_chromium() {
    let (_h, app, _) = activity(StoreKind::Local).await;
    let (status, content_type, page) = get(&app, "/cost-report?format=html").await;
    assert_eq!((status, content_type.as_str()), (200, "text/html; charset=utf-8"));
    assert!(
        !page.contains("http://")
            || page.matches("http://").all(|_| page.contains("xmlns=\"http://www.w3.org/2000/svg\"")),
        "no external resources"
    );
    assert!(!page.contains("<script") && !page.contains("<link"), "self-contained");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("report.html");
    std::fs::write(&file, &page).unwrap();
    let url = format!("file://{}", file.display());

    let out = chromium_run(&["--dump-dom", &url], &dir.path().join("profile-dom"));
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(
        dom.contains("<svg id=\"chart\""),
        "chromium did not render the page: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(dom.matches("class=\"bar\"").count(), 3, "one segment per agent-day with a cost");
    assert!(dom.contains("id=\"total-cost\">$0.0137<"));
    assert!(dom.contains("id=\"cache-hit-rate\">33.3%<"));
    assert!(dom.contains("Research Agent") && dom.contains("Strategy Agent") && dom.contains("Rag Agent"));

    let shot = dir.path().join("report.png");
    let out = chromium_run(
        &[&format!("--screenshot={}", shot.display()), "--window-size=1000,900", &url],
        &dir.path().join("profile-png"),
    );
    assert!(shot.exists(), "no screenshot: {}", String::from_utf8_lossy(&out.stderr));
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    let count = |hex: &str| {
        let rgb: Vec<u8> = (0..3).map(|i| u8::from_str_radix(&hex[1 + 2 * i..3 + 2 * i], 16).unwrap()).collect();
        buf.chunks(channels).filter(|p| p[..3] == rgb[..]).count()
    };
    // Agents in name order: rag, research, strategy.
    let (research, strategy) =
        (count(shared::costs::report::html::PALETTE[1]), count(shared::costs::report::html::PALETTE[2]));
    assert!(research > 500, "research's bar is not drawn ({research} px)");
    assert!(strategy > research, "strategy spent more, its bar is taller ({strategy} vs {research} px)");
}

// Issue 73: given a digest whose top spenders are named, then the logged copy names each by
// the hash the logs use for a caller, and the rest of the digest is unchanged.
#[test]
fn the_logged_digest_names_no_user() {
    let digest = serde_json::json!({"day": "2026-12-01", "text": "t", "report": {"topSpenders": {
        "day": "2026-12-01", "users": [{"user": "ann@example.com", "usd": 0.5}, {"user": "auth0|42", "usd": 0.1}]}}});
    let logged = cost_report::pseudonymous(&digest);
    let text = logged.to_string();
    assert!(!text.contains("ann@example.com") && !text.contains("auth0|42"), "{text}");
    let first = logged["report"]["topSpenders"]["users"][0]["user"].as_str().unwrap();
    assert_eq!(first, format!("user:{}", shared::core::records::key_part("ann@example.com", 12)));
    assert_eq!(logged["report"]["topSpenders"]["users"][1]["usd"], 0.1);
    assert_eq!((&logged["day"], &logged["text"]), (&digest["day"], &digest["text"]));
}
