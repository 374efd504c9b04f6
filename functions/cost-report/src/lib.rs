//! The `cost-report` function's handler (seed 000's cost report, an operator endpoint).
//!
//! - `GET /cost-report?from=&to=&groupBy=agent|day|model&format=json|text|html` (defaults: the
//!   last 7 days, agent, json). Bad parameters are a 400 JSON error. For operators only: a
//!   SigV4-signed request (`shared::http::auth`; 401 anonymous, 403 a user's token). The JSON
//!   has each agent's spend against its daily budget (`budgets`), and the users who spent most
//!   on the period's last day (`topSpenders`, with per-user budgets on).
//! - `POST /costs/usage`: a model call the app made itself (`shared::costs::usage`), recorded
//!   once per client id and priced from the same table; 201 new, 200 a repeat. Backend only
//!   (SigV4), like the report.
//! - `GET` / `PUT /backend/users/{userId}/budget`: one signed-in user's daily budget, as an
//!   operator sees and sets it without a deploy (`{"usdPerDay": n}`, or `null` for the
//!   default `USER_BUDGET_USD_PER_DAY`); the answer says the cap and what is left today. SigV4,
//!   and only the principals `OPERATORS` names (403 for any other signer, the backend's too).
//! - A scheduled EventBridge event (arriving as a pass-through event): yesterday's digest by
//!   agent, logged as structured JSON and published as EMF metrics; the digest is returned.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::routing::{get, post};
use chrono::{Duration, NaiveTime, TimeZone, Utc};
use shared::compose::Config;
use shared::core::clock::{Clock, SystemClock};
use shared::core::metrics;
use shared::core::records::RecordStore;
use shared::costs::budget;
use shared::costs::ledger::Ledger;
use shared::costs::report::{Format, GroupBy, Params, Report, TopSpenders, UsersUse, html, text};
use shared::costs::usage::{self, Reported};
use shared::http::extract::{Backend, Body, Event, Id, Query};
use shared::http::{self, Response, Router};
use shared::{Error, Result, compose};

/// How many of a day's top spenders the report lists.
const TOP_SPENDERS: usize = 10;

/// What the report needs: the ledger, the clock, and for reported usage the record store and
/// the agents a report may bill (`AGENTS`).
pub struct App {
    pub ledger: Ledger,
    pub clock: Arc<dyn Clock>,
    pub records: Arc<dyn RecordStore>,
    pub agents: Vec<String>,
    /// Each user's daily budget unless an operator set theirs (`USER_BUDGET_USD_PER_DAY`).
    pub user_budget_usd: f64,
    /// Who may set a user's budget (`OPERATORS`).
    pub operators: Vec<String>,
}

impl App {
    /// The report of `params`' period, each agent's spend set against its daily budget, and
    /// the [`TOP_SPENDERS`] users who spent most on its last day.
    async fn report(&self, params: &Params) -> Result<Report> {
        let mut report = Report::build(params, &self.ledger.days(params.from, params.to).await?);
        if self.user_budget_usd > 0.0 {
            let day = params.to.date_naive();
            let users = budget::top_spenders(&*self.records, day, TOP_SPENDERS, self.clock.now().timestamp()).await?;
            report.top_spenders = Some(TopSpenders { day: day.format("%Y-%m-%d").to_string(), users });
        }
        let Some(budgets) = self.ledger.budgets() else { return Ok(report) };
        let mut report = report.with_budgets(|agent| budgets.cap(agent));
        // Users' pool of each agent on the period's last day: one read per agent that spent.
        let day = params.to.date_naive();
        for line in &mut report.budgets {
            // A counter that cannot be read leaves its line without users' part, not the report.
            match budgets.users_spent(&line.agent, day).await {
                Ok(spent_usd) => {
                    let budget_usd = budgets.users_cap(&line.agent);
                    line.users = Some(UsersUse { day: day.format("%Y-%m-%d").to_string(), budget_usd, spent_usd });
                }
                Err(e) => tracing::warn!(agent = line.agent, error = %e, "users' spend of an agent not read"),
            }
        }
        Ok(report)
    }

    /// Built from the environment (record store, price table).
    pub async fn from_env() -> Result<Self> {
        let config = Config::from_env()?;
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let records = compose::records(&config).await?;
        let ledger = compose::ledger(&config, Arc::clone(&records), Arc::clone(&clock))?;
        Ok(Self {
            ledger,
            clock,
            records,
            agents: config.costs.agents,
            user_budget_usd: config.costs.user_budget_usd_per_day,
            operators: config.costs.operators,
        })
    }
}

type State = axum::extract::State<Arc<App>>;

/// The function's routes, and the scheduled event (`POST /events`).
pub fn routes(app: Arc<App>) -> Router {
    http::finish(
        Router::new()
            .route("/cost-report", get(report))
            .route("/costs/usage", post(usage))
            .route("/backend/users/{userId}/budget", get(user_budget).put(set_user_budget))
            .route("/events", post(digest))
            .with_state(app),
    )
}

/// `GET /cost-report`: the report, as JSON, text or HTML.
async fn report(app: State, _: Backend, Query(query): Query) -> Result<Response> {
    let params = Params::parse(query.iter(), app.clock.now())?;
    let report = app.report(&params).await?;
    Ok(match params.format {
        Format::Json => http::json(200, &report),
        Format::Text => http::typed(200, "text/plain; charset=utf-8", text::render(&report)),
        Format::Html => http::typed(200, "text/html; charset=utf-8", html::render(&report)),
    })
}

/// `POST /costs/usage`: records a call the app made itself, once per client id.
async fn usage(app: State, Backend(owner): Backend, body: Body) -> Result<Response> {
    let report = Reported::parse(&body, &app.agents)?;
    let (status, body) = usage::record(&app.ledger, &*app.records, &owner, &report).await?;
    Ok(http::json(status, &body))
}

/// An operator: a SigV4 signer `OPERATORS` names (401 anonymous; 403 any other signer, the
/// backend's too).
struct Operator(String);

impl FromRequestParts<Arc<App>> for Operator {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, app: &Arc<App>) -> Result<Self> {
        let Backend(operator) = Backend::from_request_parts(parts, app).await?;
        if !app.operators.contains(&operator) {
            return Err(Error::Forbidden(format!("only OPERATORS may see or set a user's budget; not {operator}")));
        }
        Ok(Self(operator))
    }
}

/// `GET /backend/users/{userId}/budget`: one user's daily budget, as an operator sees it.
async fn user_budget(app: State, _: Operator, Id(user): Id) -> Result<Response> {
    shared::core::validate::user_id(&user)?;
    budget_answer(&app, &user).await
}

/// `PUT /backend/users/{userId}/budget` `{"usdPerDay": n | null}`: sets it without a deploy.
async fn set_user_budget(app: State, Operator(operator): Operator, Id(user): Id, body: Body) -> Result<Response> {
    shared::core::validate::user_id(&user)?;
    if app.user_budget_usd <= 0.0 {
        return Err(Error::invalid("invalid_budget", "per-user budgets are off (USER_BUDGET_USD_PER_DAY=0)"));
    }
    budget::set_user_cap(&*app.records, &operator, &user, &body, app.clock.now()).await?;
    budget_answer(&app, &user).await
}

/// A user's budget: the cap, the default, and what is left today.
async fn budget_answer(app: &App, user: &str) -> Result<Response> {
    if app.user_budget_usd <= 0.0 {
        return Ok(http::json(200, &serde_json::json!({"userId": user, "usdPerDay": null, "defaultUsdPerDay": null})));
    }
    let budget = budget::user_budget(&*app.records, app.user_budget_usd, user, app.clock.now()).await?;
    Ok(http::json(
        200,
        &serde_json::json!({"userId": user, "usdPerDay": budget.cap_usd, "defaultUsdPerDay": app.user_budget_usd,
                            "leftTodayUsd": budget.left_usd}),
    ))
}

/// `digest` as the log keeps it: each top spender named as the logs name a caller
/// (`user:<hash>`, `span.caller`), so a log reader can follow one user across lines without
/// learning who they are. The invocation's answer keeps the ids (`GET /cost-report` gives them
/// to operators).
pub fn pseudonymous(digest: &serde_json::Value) -> serde_json::Value {
    let mut logged = digest.clone();
    if let Some(users) = logged.pointer_mut("/report/topSpenders/users").and_then(|u| u.as_array_mut()) {
        for spender in users {
            if let Some(user) = spender.get("user").and_then(|u| u.as_str()).map(str::to_owned) {
                spender["user"] = format!("user:{}", shared::core::records::key_part(&user, 12)).into();
            }
        }
    }
    logged
}

/// Yesterday's (UTC) digest by agent, for a scheduled event.
async fn digest(app: State, Event(event): Event) -> Result<Response> {
    let event: serde_json::Value = serde_json::from_slice(&event).unwrap_or_default();
    let detail_type = event.get("detail-type").and_then(|v| v.as_str()).unwrap_or_default();
    if detail_type != "Scheduled Event" {
        return Err(Error::invalid("unsupported_event", format!("expected a Scheduled Event, got {detail_type:?}")));
    }
    let today = app.clock.now().date_naive();
    let day = today - Duration::days(1);
    let params = Params {
        from: Utc.from_utc_datetime(&day.and_time(NaiveTime::MIN)),
        to: Utc.from_utc_datetime(&today.and_time(NaiveTime::MIN)) - Duration::milliseconds(1),
        group_by: GroupBy::Agent,
        format: Format::Json,
    };
    let report = app.report(&params).await?;
    let digest = serde_json::json!({"day": day.format("%Y-%m-%d").to_string(), "report": report,
                                    "text": text::render(&report), "budgets": text::budgets(&report)});
    tracing::info!(digest = %pseudonymous(&digest), "daily cost digest");
    let at = app.clock.now().timestamp_millis();
    for g in &report.groups {
        let mut values = vec![("DailyCostUsd", "None", g.total_usd), ("DailyCalls", "Count", g.calls as f64)];
        if let Some(used) = report.budgets.iter().find(|b| b.agent == g.key).and_then(|b| b.used) {
            values.push(("DailyBudgetUsedPercent", "Percent", used * 100.0));
        }
        metrics::emit(&metrics::render(&[("Agent", &g.key)], &values, at));
    }
    let mut totals =
        vec![("DailyCostUsd", "None", report.totals.cost_usd), ("DailyCacheSavedUsd", "None", report.cache.saved_usd)];
    if let Some(rate) = report.cache.hit_rate {
        totals.push(("DailyCacheHitRate", "Percent", rate * 100.0));
    }
    metrics::emit(&metrics::render(&[("Report", "daily")], &totals, at));
    Ok(http::json(200, &digest))
}
