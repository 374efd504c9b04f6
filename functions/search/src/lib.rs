//! The `search` function's handler: web search with stored citations (seed 000), tools for
//! AI assistants (seed 002) and the research node (seed 001).
//!
//! Routes: `POST /search` (`{query, region?, model?, recency?, domains?, agent?, articleId?}`),
//! `POST /search/competitors` (`{keyword, domain?, ...}`), `POST /search/trends`
//! (`{topic, timeframe?}`), `POST /search/topic` (`{topic, aspects?, ...}`),
//! `GET /sources/{requestId}`, `GET /articles/{id}/sources` (the signing backend's article:
//! the sources of its searches with that `articleId`), `GET /tools`, `POST /tools/{name}` (`{query, agent?}`),
//! `POST /me/tools/{name}` (`{query}`) and `POST /research` (`{pipelineId?, prompts?, strategy?,
//! config?}`). Every error is
//! `{"error": {"code", "message"}}` with a 4xx for the caller's mistakes; search upstream
//! faults never surface as 5xx (labelled mock data instead).
//!
//! Every route that may spend money (searches, `POST /tools/{name}`, the research node) serves
//! only a caller the IAM authorizer verified (SigV4): without that identity in the request
//! context it is 401 before anything else is read, so a Function URL, a test invoke or a
//! template that lost its authorizer never opens the wallet. A spent daily budget is 429
//! `budget_exceeded` with `Retry-After`; `model: "sonar-pro"` only for `PREMIUM_AGENTS`.
//! `POST /me/tools/{name}` is the same tool for a signed-in user (a mini-program cannot sign
//! SigV4, seed 002): the user's JWT (401 without), counted against the user's quota (429
//! `quota_exceeded`), billed to the agent `assistant`. `GET /tools` and `GET /sources/{requestId}`
//! spend nothing and are public.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::routing::{get, post};
use shared::compose::Config;
use shared::core::clock::{Clock, SystemClock};
use shared::core::records::{RecordStore, replay};
use shared::core::retry::RetryPolicy;
use shared::costs::budget::spending_as;
use shared::costs::quota::Quota;
use shared::http::extract::{Backend, Body, HasUsers, Id, Invocation, User};
use shared::http::{Response, Router, auth};
use shared::pipeline::codex::CodexCli;
use shared::pipeline::prompt::NodeRequest;
use shared::pipeline::research_node::ResearchNode;
use shared::web::query::{Model, Query};
use shared::web::search::SearchService;
use shared::web::tools::{SearchWebArguments, Tools};
use shared::{Error, Result, compose, http};

/// Everything this function serves: searches, tools and the research node.
pub struct SearchFunction {
    pub search: Arc<SearchService>,
    pub tools: Tools,
    pub research: ResearchNode,
    /// Who a caller may bill (`AGENTS`).
    pub agents: Vec<String>,
    /// Who may ask for the expensive search (`PREMIUM_AGENTS`).
    pub premium_agents: Vec<String>,
    /// Who the users of `POST /me/tools/{name}` are, and their quota.
    pub users: auth::Users,
    pub quota: Quota,
}

impl SearchFunction {
    /// The services over `records` and `clock`, configured by `config`.
    pub fn new(config: &Config, records: Arc<dyn RecordStore>, clock: Arc<dyn Clock>) -> Result<Self> {
        let tavily = compose::tavily(config)?;
        let search =
            Arc::new(compose::search_service(config, Arc::clone(&records), Arc::clone(&clock), tavily.clone())?);
        let tools = search.tools(tavily);
        let codex = CodexCli {
            command: config.pipeline.codex_command.clone(),
            args: config.pipeline.codex_args.clone(),
            separator: config.pipeline.codex_prompt_separator.clone(),
            timeout: config.pipeline.codex_timeout,
            retry: RetryPolicy {
                retries: 3,
                base: config.pipeline.codex_retry_base,
                max_wait: config.pipeline.codex_retry_base,
            },
            bound: config.pipeline.research_node_timeout,
        };
        let quota = Quota::from_settings(&config.costs, Arc::clone(&records), Arc::clone(&clock));
        let research = ResearchNode::new(Arc::clone(&search), codex, config.pipeline.research_provider, records, clock);
        Ok(Self {
            search,
            tools,
            research,
            agents: config.costs.agents.clone(),
            premium_agents: config.web.premium_agents.clone(),
            users: auth::Users::new(config.http.user_claim.clone()),
            quota,
        })
    }

    /// The services as the environment configures them.
    pub async fn from_env() -> Result<Self> {
        let config = Config::from_env()?;
        let records = compose::records(&config).await?;
        Self::new(&config, records, Arc::new(SystemClock))
    }
}

impl HasUsers for SearchFunction {
    fn users(&self) -> &auth::Users {
        &self.users
    }

    fn quota(&self) -> &dyn shared::core::limit::PerUser {
        &self.quota
    }
}

type App = Arc<SearchFunction>;
type State = axum::extract::State<App>;

/// The function's routes.
pub fn routes(app: App) -> Router {
    http::finish(
        Router::new()
            .route("/search", post(search))
            .route("/search/{method}", post(search_by))
            .route("/sources/{requestId}", get(sources))
            .route("/articles/{articleId}/sources", get(article_sources))
            .route("/tools", get(tools))
            .route("/tools/{name}", post(tool))
            .route("/me/tools/{name}", post(user_tool))
            .route("/research", post(research))
            .with_state(app),
    )
}

async fn tools(app: State) -> Response {
    http::json(200, &serde_json::json!({"tools": app.tools.definitions()}))
}

/// `POST /search`.
async fn search(app: State, owner: Backend, invocation: Invocation, body: Body) -> Result<Response> {
    run_search(&app, owner, "search", invocation, &body).await
}

/// `POST /search/{competitors,trends,topic}`.
async fn search_by(
    app: State,
    owner: Backend,
    SearchMethod(method): SearchMethod,
    invocation: Invocation,
    body: Body,
) -> Result<Response> {
    run_search(&app, owner, method, invocation, &body).await
}

/// The method of `POST /search/{method}`: 404 for one there is not, before the body is read.
struct SearchMethod(&'static str);

impl<S: Send + Sync> FromRequestParts<S> for SearchMethod {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self> {
        let Id(method) = Id::from_request_parts(parts, state).await?;
        ["competitors", "trends", "topic"]
            .into_iter()
            .find(|m| *m == method)
            .map(Self)
            .ok_or_else(|| Error::NotFound(format!("no route for POST /search/{method}")))
    }
}

async fn run_search(
    app: &SearchFunction,
    Backend(owner): Backend,
    kind: &str,
    invocation: Invocation,
    body: &[u8],
) -> Result<Response> {
    let query = Query::from_json(kind, body)?;
    billable(app, &query.agent)?;
    if query.model == Model::SonarPro && !app.premium_agents.contains(&query.agent) {
        return Err(Error::Forbidden(format!(
            "agent {:?} may not ask for sonar-pro; PREMIUM_AGENTS allows: {}",
            query.agent,
            app.premium_agents.join(", ")
        )));
    }
    // An article's sources are written after the answer's: the search ends that much earlier.
    let left = invocation
        .left
        .map(|left| if query.article_id.is_some() { left.saturating_sub(replay::WRITE_TIME) } else { left });
    let mut response = app.search.run(&query, &invocation.request_id, left).await?;
    if let Some(article) = &query.article_id {
        response.sources_stored &= app.search.keep_for_article(&owner, article, &response).await;
    }
    Ok(http::json(200, &response))
}

/// `GET /articles/{id}/sources`: the sources of the signing backend's article, de-duplicated,
/// in the order first cited, with the `## 參考資料` block; 404 when it has none.
async fn article_sources(app: State, Backend(owner): Backend, Id(id): Id) -> Result<Response> {
    shared::web::articles::validate(&id)?;
    let (sources, truncated) = app.search.article_sources(&owner, &id).await?;
    if sources.is_empty() {
        return Err(Error::NotFound(format!("no sources stored for article {id}")));
    }
    Ok(http::json(
        200,
        &serde_json::json!({
            "articleId": id,
            "sources": sources,
            "references": shared::web::citations::references_markdown(&sources),
            "truncated": truncated,
        }),
    ))
}

async fn sources(app: State, Id(id): Id) -> Result<Response> {
    if !shared::core::validate::is_id(&id, 128) {
        return Err(Error::invalid(
            "invalid_request_id",
            "requestId must be 1-128 characters of letters, digits, '-' or '_'",
        ));
    }
    match app.search.sources(&id).await? {
        Some(sources) => Ok(http::json(
            200,
            &serde_json::json!({
                "requestId": id,
                "sources": sources,
                "references": shared::web::citations::references_markdown(&sources),
            }),
        )),
        None => Err(Error::NotFound(format!("no sources stored for request {id}"))),
    }
}

/// Refuses an `agent` outside `AGENTS`: a caller cannot invent cost groups (and metric
/// dimensions) without bound.
fn billable(app: &SearchFunction, agent: &str) -> Result<()> {
    if app.agents.iter().any(|a| a == agent) {
        return Ok(());
    }
    Err(Error::invalid("invalid_agent", format!("agent {agent:?} is not one of AGENTS: {}", app.agents.join(", "))))
}

/// Runs a tool for the backend; the body is the model-facing JSON string itself (also for tool
/// failures).
async fn tool(app: State, _: Backend, Id(name): Id, invocation: Invocation, body: Body) -> Result<Response> {
    let SearchWebArguments { query, agent } = tool_arguments(&app, &name, &body)?;
    billable(&app, &agent)?;
    run_tool(&app, &invocation.request_id, &query, &agent).await
}

/// Runs a tool for the signed-in user, within their quota, billed to `assistant`.
async fn user_tool(app: State, User(user): User, Id(name): Id, invocation: Invocation, body: Body) -> Result<Response> {
    let SearchWebArguments { query, agent } = tool_arguments(&app, &name, &body)?;
    if agent != USER_AGENT {
        return Err(Error::invalid("invalid_agent", format!("a user's tool call is billed to {USER_AGENT:?}")));
    }
    billable(&app, USER_AGENT)?;
    let response = spending_as(&user, run_tool(&app, &invocation.request_id, &query, USER_AGENT)).await?;
    Ok(http::with_budget_left(response, app.quota.budget_left(&user).await))
}

/// Who pays for a user's tool calls.
const USER_AGENT: &str = "assistant";

/// The arguments of tool `name`: 404 for a tool this deployment does not have.
fn tool_arguments(app: &SearchFunction, name: &str, body: &[u8]) -> Result<SearchWebArguments> {
    if !app.tools.has(name) {
        return Err(Error::NotFound(format!("tool {name:?} is not available; GET /tools lists the available ones")));
    }
    SearchWebArguments::from_json(body)
}

/// The tool's answer as the response: the model-facing JSON string, and whether its sources
/// were stored (`x-sources-stored`).
async fn run_tool(app: &SearchFunction, request_id: &str, query: &str, agent: &str) -> Result<Response> {
    let answer = app.tools.search_web(query, agent, request_id).await?;
    let mut response = http::raw_json(200, answer.result);
    let stored = if answer.sources_stored { "true" } else { "false" };
    response.headers_mut().insert("x-sources-stored", axum::http::HeaderValue::from_static(stored));
    Ok(response)
}

async fn research(app: State, Backend(owner): Backend, invocation: Invocation, body: Body) -> Result<Response> {
    let node_request = NodeRequest::from_json(&body)?;
    let output = app.research.run(&node_request, &owner, &invocation.request_id).await?;
    Ok(http::json(200, &output))
}
