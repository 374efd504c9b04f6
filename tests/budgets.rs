//! Daily budgets (`BUDGETS`) that hold across containers: holds in separate processes sharing
//! one store, paid searches refused at the line (429 with `Retry-After`, no upstream call) or
//! answered with labelled mock data when asked, cached answers still free, the expensive model
//! only for premium agents, and a store outage spent from a small allowance, then refused.

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use integration::{Harness, Setup, StoreKind, on_both_stores, perplexity};
use serde_json::json;
use shared::core::clock::SystemClock;
use shared::core::records::{DynamoRecords, LocalRecords, RecordStore};
use shared::costs::budget::Budgets;
use shared::costs::settings::BudgetCaps;
use shared::web::providers::perplexity::AGENT_PATH;
use wiremock::matchers::{method, path};
use wiremock::{Mock, ResponseTemplate};

/// Four processes race 8 holds of $0.30 each against a $2 cap in one store.
fn race(place: &str, table: &str) -> usize {
    let workers: Vec<_> = (0..4)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_budget_worker"))
                .args([place, table, "2", "0.30", "8"])
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("start budget_worker")
        })
        .collect();
    workers
        .into_iter()
        .map(|w| {
            let out = w.wait_with_output().unwrap();
            assert!(out.status.success());
            let text = String::from_utf8(out.stdout).unwrap();
            text.trim().strip_prefix("admitted ").expect("admitted line").parse::<usize>().unwrap()
        })
        .sum()
}

// Given a $2 daily budget and four processes each trying 8 calls of $0.30 at once on one
// store, then exactly 7 are admitted (a hold is admitted while the day's total is under the
// cap): one call crossed the line, by at most its own worst case, and the day reads $2.10.
async fn at_most_one_call_crosses_the_line_across_processes(kind: StoreKind) {
    let dir = tempfile::tempdir().unwrap();
    let (records, place, table): (Arc<dyn RecordStore>, String, String) = match kind {
        StoreKind::Local => {
            (Arc::new(LocalRecords::open(dir.path()).unwrap()), dir.path().display().to_string(), "-".into())
        }
        StoreKind::DynamoDb => {
            let endpoint = integration::dynamodb_local_endpoint();
            let table = format!("test-{}", uuid::Uuid::new_v4());
            let store = DynamoRecords::local(&endpoint, table.clone()).await;
            store.create_table().await.unwrap();
            (Arc::new(store), endpoint, table)
        }
    };
    let admitted = tokio::task::spawn_blocking(move || race(&place, &table)).await.unwrap();
    assert_eq!(admitted, 7, "ceil(2.00 / 0.30) holds fit under the line");
    let caps = BudgetCaps::parse("budgeted=2").unwrap();
    let budgets = Budgets::new(caps, records, Arc::new(SystemClock), Duration::from_secs(5), 0.0);
    let spent = budgets.spent("budgeted", chrono::Utc::now().date_naive()).await.unwrap();
    assert!((spent - 2.10).abs() < 1e-9, "spent {spent}");
}

/// Makes the fake Perplexity answer every search (1,000 + 500 tokens, one web search: $0.0065).
async fn answering(h: &Harness) {
    let body = perplexity::answer(
        "Coffee demand grew [1].",
        json!([{"id": 1, "title": "Coffee report", "url": "https://example.com/coffee", "snippet": "Demand grew."}]),
        json!([]),
        perplexity::usage(1000, 500, 1, None),
    );
    Mock::given(method("POST"))
        .and(path(AGENT_PATH))
        .respond_with(ResponseTemplate::new(200).set_body_json(body))
        .mount(h.upstream())
        .await;
}

/// A harness with the fake Perplexity answering every search, and `env`.
async fn paid(kind: StoreKind, env: &'static [(&'static str, &'static str)]) -> Harness {
    let h = Harness::with(kind, Setup { perplexity: true, env, ..Setup::default() }).await;
    answering(&h).await;
    h
}

// Given a research budget smaller than one search, then the first search goes through (the day
// was under the line) and is settled to what it cost; the next new search is 429
// budget_exceeded with Retry-After and reaches no upstream; the cached one is still answered
// (free); and a caller asking for a fallback gets labelled mock data instead.
async fn a_spent_budget_refuses_paid_calls_but_not_cached_ones(kind: StoreKind) {
    let h = paid(kind, &[("BUDGETS", "research=0.0001,*=1")]).await;
    let (status, r) = h.post("/search", json!({"query": "coffee"})).await;
    assert_eq!((status, r["mock"].as_bool()), (200, Some(false)), "{r}");
    assert_eq!(h.upstream_calls().await.len(), 1);

    let (status, headers, r) = h.exchange("POST", "/search", &json!({"query": "tea"}).to_string(), None).await;
    assert_eq!((status, r["error"]["code"].as_str()), (429, Some("budget_exceeded")), "{r}");
    let retry_after: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=86_400).contains(&retry_after), "until midnight UTC: {retry_after}");
    assert_eq!(h.upstream_calls().await.len(), 1, "no upstream call over budget");

    let (status, r) = h.post("/search", json!({"query": "coffee"})).await;
    assert_eq!((status, r["cached"].as_bool()), (200, Some(true)), "a cached answer costs nothing: {r}");

    let (status, r) = h.post("/search", json!({"query": "tea", "overBudget": "mock"})).await;
    assert_eq!((status, r["mock"].as_bool()), (200, Some(true)), "{r}");
    assert!(r["fallbackReason"].as_str().unwrap().starts_with("budget_exceeded"), "{r}");
    assert_eq!(h.upstream_calls().await.len(), 1);

    let (status, r) = h.post("/search", json!({"query": "tea", "agent": "writing"})).await;
    assert_eq!((status, r["mock"].as_bool()), (200, Some(false)), "another agent has its own budget: {r}");

    let (status, r) = h.post("/research", json!({"pipelineId": "p"})).await;
    assert_eq!((status, r["error"]["code"].as_str()), (429, Some("budget_exceeded")), "the node bills research: {r}");
}

// Given the default PREMIUM_AGENTS, then sonar-pro is refused (403) for the writing agent before
// any upstream call, and served for the research agent.
async fn the_expensive_search_is_for_premium_agents(kind: StoreKind) {
    let h = paid(kind, &[]).await;
    let (status, r) = h.post("/search", json!({"query": "coffee", "model": "sonar-pro", "agent": "writing"})).await;
    assert_eq!((status, r["error"]["code"].as_str()), (403, Some("forbidden")), "{r}");
    assert!(h.upstream_calls().await.is_empty());
    let (status, r) = h.post("/search", json!({"query": "coffee", "model": "sonar-pro"})).await;
    assert_eq!((status, r["mock"].as_bool()), (200, Some(false)), "{r}");
}

// Given a record store that fails (a table that does not exist), then a container spends its
// outage allowance (one search of about $0.05 fits in $0.06) and then refuses: budgets fail
// closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_outage_spends_the_allowance_then_refuses() {
    let env: &'static [(&'static str, &'static str)] = &[("BUDGET_OUTAGE_ALLOWANCE_USD", "0.06")];
    let h =
        Harness::with(StoreKind::DynamoDb, Setup { perplexity: true, store_down: true, env, ..Setup::default() }).await;
    answering(&h).await;
    let (status, r) = h.post("/search", json!({"query": "coffee"})).await;
    assert_eq!((status, r["mock"].as_bool()), (200, Some(false)), "{r}");
    let (status, r) = h.post("/search", json!({"query": "tea"})).await;
    assert_eq!((status, r["error"]["code"].as_str()), (429, Some("budget_exceeded")), "{r}");
    assert_eq!(h.upstream_calls().await.len(), 1);
}

// Given an upstream that never answers in time, then each search that was cut short keeps its
// whole hold (the upstream may have billed it): two of them spend a $0.06 budget, and the third
// is refused without reaching the upstream.
async fn a_call_cut_short_keeps_its_hold(kind: StoreKind) {
    let env: &'static [(&'static str, &'static str)] = &[("BUDGETS", "research=0.06"), ("SEARCH_BUDGET_MS", "1500")];
    let h = Harness::with(kind, Setup { perplexity: true, env, ..Setup::default() }).await;
    let body = perplexity::answer("late", json!([]), json!([]), perplexity::usage(1, 1, 0, None));
    Mock::given(method("POST"))
        .and(path(AGENT_PATH))
        .respond_with(ResponseTemplate::new(200).set_body_json(body).set_delay(Duration::from_secs(3)))
        .mount(h.upstream())
        .await;
    for query in ["one", "two"] {
        let (status, r) = h.post("/search", json!({"query": query})).await;
        assert_eq!((status, r["mock"].as_bool()), (200, Some(true)), "cut short, labelled mock: {r}");
    }
    let calls = h.upstream_calls().await.len();
    let (status, r) = h.post("/search", json!({"query": "three"})).await;
    assert_eq!((status, r["error"]["code"].as_str()), (429, Some("budget_exceeded")), "{r}");
    assert_eq!(h.upstream_calls().await.len(), calls, "no upstream call over budget");
}

// Given a model the price table does not know (start-up refuses one for a configured model:
// this is the defence behind it), then each call holds UNPRICED_WORST_USD (its cost is
// unknown, so the hold is kept), a free hold whose call reported a cost adds it, and a cost past
// its hold is counted, logged and alarmed.
async fn unpriced_and_reported_costs_are_budgeted(kind: StoreKind) {
    use shared::core::upstream::Usage;
    use shared::costs::ledger::{CallKind, Charge, Ledger, Outcome, UNPRICED_WORST_USD};
    let (records, _guard) = integration::store(kind).await;
    let clock = Arc::new(SystemClock);
    let caps = BudgetCaps::parse("a=0.04,b=1").unwrap();
    let budgets = Arc::new(Budgets::new(caps, records.clone(), clock.clone(), Duration::from_secs(5), 0.0));
    let prices = Arc::new(shared::costs::pricing::PriceTable::default());
    let ledger = Ledger::new(records, prices, clock, shared::core::retry::STORE_RETRY).with_budgets(budgets.clone());
    let usage = Usage { input_tokens: 10, output_tokens: 10, ..Usage::default() };
    let hold = ledger.hold("a", "openrouter", "brand-new-model", &usage).await.expect("under the line");
    let charge = Charge {
        request_id: "r",
        agent: "a",
        kind: CallKind::Llm,
        provider: "openrouter",
        model: "brand-new-model",
        usage: &usage,
        outcome: Outcome::Live,
        saved_usd: 0.0,
        upstream_id: None,
    };
    let cost = ledger.charge(&charge).await;
    ledger.settle(hold, &cost, false).await;
    let today = chrono::Utc::now().date_naive();
    assert!((budgets.spent("a", today).await.unwrap() - UNPRICED_WORST_USD).abs() < 1e-9, "unpriced: the hold is kept");
    assert!(ledger.hold("a", "openrouter", "brand-new-model", &usage).await.is_err(), "a's day is spent");

    let free = ledger.hold("b", "local", "multilingual-e5-small", &usage).await.unwrap();
    let reported = Usage { provider_cost_usd: Some(0.01), ..usage.clone() };
    let cost = ledger
        .charge(&Charge {
            agent: "b",
            provider: "openrouter",
            model: "deepseek/deepseek-chat",
            usage: &reported,
            ..charge
        })
        .await;
    ledger.settle(free, &cost, false).await;
    assert!((budgets.spent("b", today).await.unwrap() - 0.01).abs() < 1e-9, "a reported cost is added");

    // Issue 53 item 4: a priced call whose reported cost passes its hold is counted at its cost
    // and logged (in Lambda also the SettledAboveHold metric SettledAboveHoldAlarm watches).
    integration::logs::capture();
    let held = ledger.hold("b", "openrouter", "deepseek/deepseek-chat", &usage).await.unwrap();
    let over = Usage { provider_cost_usd: Some(0.02), ..usage.clone() };
    let cost = ledger
        .charge(&Charge {
            request_id: "r-over",
            agent: "b",
            kind: CallKind::Llm,
            provider: "openrouter",
            model: "deepseek/deepseek-chat",
            usage: &over,
            outcome: Outcome::Live,
            saved_usd: 0.0,
            upstream_id: None,
        })
        .await;
    ledger.settle(held, &cost, false).await;
    assert!((budgets.spent("b", today).await.unwrap() - 0.03).abs() < 1e-9, "counted at its cost");
    let logged = integration::logs::lines("a call cost more than its hold");
    assert!(logged.iter().any(|l| l.contains("\"agent\":\"b\"") && l.contains("0.02")), "{logged:?}");
}

// Issue 53 item 5: users together spend at most their share of an agent's day. With a $1 cap
// and half of it for users, ten users at their own $0.20 cap stop at $0.50 of the agent (five
// $0.10 calls; before, they spent the whole dollar and stopped the agent until midnight), and
// the backend's calls of the same agent still go through; the cost report shows what users
// spent of the agent apart from its whole spend.
async fn users_spending_all_they_may_never_stop_the_backend(kind: StoreKind) {
    use shared::costs::budget::spending_as;
    let (records, _guard) = integration::store(kind).await;
    let clock = Arc::new(SystemClock);
    let caps = BudgetCaps::parse("assistant=1,*=1").unwrap();
    let budgets = Budgets::new(caps, records.clone(), clock.clone(), Duration::from_secs(5), 0.0)
        .with_user_cap(0.2)
        .with_users_share(0.5);
    let ledger = ledger_of(&records, budgets);
    // Calls of $0.10.
    let paid = |request_id: &'static str| paid_call(&ledger, 0.1, request_id);
    let mut admitted = 0;
    for user in 0..10 {
        for _ in 0..2 {
            match spending_as(&format!("u-{user}"), paid("user-call")).await {
                Ok(()) => admitted += 1,
                Err(e) => assert_eq!(e.code(), "budget_exceeded", "{e}"),
            }
        }
    }
    assert_eq!(admitted, 5, "users' $0.50 share of the agent: five $0.10 calls");
    for _ in 0..3 {
        paid("backend-call").await.expect("the backend's call of the same agent");
    }
    let budgets = ledger.budgets().unwrap();
    let today = chrono::Utc::now().date_naive();
    assert!((budgets.spent("assistant", today).await.unwrap() - 0.8).abs() < 1e-9);
    assert!((budgets.users_spent("assistant", today).await.unwrap() - 0.5).abs() < 1e-9);

    let app = cost_report::routes(Arc::new(cost_report::App {
        ledger: ledger.clone(),
        clock,
        records,
        agents: shared::costs::settings::DEFAULT_AGENTS.map(String::from).to_vec(),
        user_budget_usd: 0.2,
        operators: Vec::new(),
    }));
    let day = today.format("%Y-%m-%d").to_string();
    let query = format!("from={day}&to={day}");
    let uri = format!("https://api.example.com/cost-report?{query}");
    let req = lambda_http::http::Request::builder().method("GET").uri(uri).body(lambda_http::Body::Empty).unwrap();
    let params: std::collections::HashMap<String, String> =
        query.split('&').filter_map(|p| p.split_once('=')).map(|(k, v)| (k.into(), v.into())).collect();
    let req = lambda_http::RequestExt::with_query_string_parameters(req, params);
    let (status, r) = integration::respond(shared::http::invoke(app.clone(), integration::as_backend(req)).await);
    assert_eq!(status, 200, "{r}");
    let line = r["budgets"].as_array().unwrap().iter().find(|b| b["agent"] == "assistant").cloned().unwrap();
    assert!((line["spentUsd"].as_f64().unwrap() - 0.8).abs() < 1e-9, "{line}");
    assert_eq!(line["users"], json!({"day": day, "budgetUsd": 0.5, "spentUsd": 0.5}), "{line}");
}

// Issue 62 item 3: no two accounts stop every other user's paid calls. With the template's
// defaults for the assistant ($5 a day, half for users, a fifth of that kept for vetted users,
// 5 % of the rest a user), each account may spend $0.10 of the assistant: two accounts spend a
// tenth of what users on the default budget may, and every other user goes on; it takes twenty
// to spend it all, and then users an operator vetted still spend their reserve. An operator's
// cap below the default restricts a user; it does not vet them.
async fn a_few_accounts_cannot_spend_every_users_share(kind: StoreKind) {
    use shared::core::upstream::Usage;
    use shared::costs::budget::{set_user_cap, spending_as};
    let (records, _guard) = integration::store(kind).await;
    let clock = Arc::new(SystemClock);
    let caps = BudgetCaps::parse("assistant=5,*=0").unwrap();
    let budgets = Budgets::new(caps, records.clone(), clock.clone(), Duration::from_secs(5), 0.0)
        .with_user_cap(0.5)
        .with_users_share(0.5)
        .with_user_pool_share(0.05)
        .with_vetted_share(0.2);
    let ledger = ledger_of(&records, budgets);
    // Calls of $0.025, each a user's.
    let ledger_ref = &ledger;
    let paid = move |user: String| async move {
        spending_as(&user, paid_call(ledger_ref, 0.025, "call")).await.map_err(|e| e.code())
    };
    // Each account calls until refused: how many calls it made, and why it stopped.
    let spend_all = |user: String| async move {
        let mut calls = 0;
        loop {
            match paid(user.clone()).await {
                Ok(()) => calls += 1,
                Err(code) => return (calls, code),
            }
        }
    };
    let budgets = ledger.budgets().unwrap();
    let today = chrono::Utc::now().date_naive();
    for attacker in ["attacker-1", "attacker-2"] {
        assert_eq!(spend_all(attacker.into()).await, (4, "user_budget_exceeded"), "$0.10 of the assistant each");
    }
    assert!((budgets.users_spent("assistant", today).await.unwrap() - 0.2).abs() < 1e-9);
    paid("someone-else".into()).await.expect("every other user's call goes on");
    let now = chrono::Utc::now();
    set_user_cap(&*records, "operator", "restricted", br#"{"usdPerDay": 0.3}"#, now).await.unwrap();
    assert_eq!(spend_all("restricted".into()).await, (4, "user_budget_exceeded"), "restricted, not vetted");

    // Users on the default budget may spend $2 of users' $2.50: spent $0.20 + $0.025 + $0.10;
    // the other $1.675 takes 17 more accounts.
    let mut accounts = 0;
    let stopped = loop {
        accounts += 1;
        let (_, code) = spend_all(format!("account-{accounts}")).await;
        if code != "user_budget_exceeded" {
            break code;
        }
    };
    assert_eq!((accounts, stopped), (17, "budget_exceeded"), "spent by the 17th further account");
    assert!((budgets.users_spent("assistant", today).await.unwrap() - 2.0).abs() < 1e-9);
    assert_eq!(paid("a-new-account".into()).await, Err("budget_exceeded"));

    // A vetted user ($0.60 a day: at least the default) spends the vetted users' reserve.
    set_user_cap(&*records, "operator", "vetted", br#"{"usdPerDay": 0.6}"#, now).await.unwrap();
    assert_eq!(spend_all("vetted".into()).await, (20, "budget_exceeded"), "users' whole $2.50, past the 5 %");
    assert!((budgets.users_spent("assistant", today).await.unwrap() - 2.5).abs() < 1e-9);
    assert!((budgets.spent("assistant", today).await.unwrap() - 2.5).abs() < 1e-9);
    // The backend's calls of the assistant go on from the other half.
    let usage = Usage { provider_cost_usd: Some(0.025), ..Usage::default() };
    let backend = ledger.hold("assistant", "openrouter", "deepseek/deepseek-chat", &usage).await;
    assert!(backend.is_ok(), "{backend:?}");
}

/// A ledger over `records` holding paid calls against `budgets`, with the default prices.
fn ledger_of(records: &Arc<dyn RecordStore>, budgets: Budgets) -> shared::costs::ledger::Ledger {
    let prices = Arc::new(shared::costs::pricing::PriceTable::default());
    shared::costs::ledger::Ledger::new(records.clone(), prices, Arc::new(SystemClock), shared::core::retry::STORE_RETRY)
        .with_budgets(Arc::new(budgets))
}

/// One paid call of the agent `assistant` whose provider reports it cost `usd` (the reported
/// cost wins over the table): held, recorded and settled.
async fn paid_call(ledger: &shared::costs::ledger::Ledger, usd: f64, request_id: &str) -> shared::Result<()> {
    use shared::core::upstream::Usage;
    use shared::costs::ledger::{CallKind, Charge, Outcome};
    let usage = Usage { provider_cost_usd: Some(usd), ..Usage::default() };
    let hold = ledger.hold("assistant", "openrouter", "deepseek/deepseek-chat", &usage).await?;
    let call = Charge {
        request_id,
        agent: "assistant",
        kind: CallKind::Llm,
        provider: "openrouter",
        model: "deepseek/deepseek-chat",
        usage: &usage,
        outcome: Outcome::Live,
        saved_usd: 0.0,
        upstream_id: None,
    };
    let cost = ledger.charge(&call).await;
    ledger.settle(hold, &cost, false).await;
    Ok(())
}

on_both_stores!(
    a_few_accounts_cannot_spend_every_users_share,
    users_spending_all_they_may_never_stop_the_backend,
    a_call_cut_short_keeps_its_hold,
    unpriced_and_reported_costs_are_budgeted,
    at_most_one_call_crosses_the_line_across_processes,
    a_spent_budget_refuses_paid_calls_but_not_cached_ones,
    the_expensive_search_is_for_premium_agents,
);
