//! The `rag-search` function's handler: semantic activity search within hard filters
//! (seed 004 Requirements 3, 4, 15).
//!
//! Routes: `POST /users/{userId}/feedback` (`{activityId, satisfied}`), `PUT
//! /users/{userId}/preferences` (`{tags?, vibes?, text?}`), then a search with `userId` is
//! boosted by MaxSim over the user's kept vectors (`shared::activities::interests`);
//! `GET /users/{userId}/preferences` (what they set and stated, and the activities they turned
//! down, which are never recommended again and push similar ones down) and `DELETE
//! /users/{userId}/preferences/dislikes` (those no longer count);
//! `GET`, `PUT` (`{lat, lng, label?}`) and `DELETE /users/{userId}/location`, the places the
//! assistant searches from (`shared::activities::whereabouts`). Those act as a
//! user: only the user the JWT authorizer verified (`shared::http::auth::Users`; 401 without a token,
//! 403 as anyone else); `POST /backend/users/{userId}/feedback` is the same feedback from the
//! app's backend, which knows who attended (SigV4, for any user);
//! `POST /tools/explore_nearby` (the assistant's tool, listed by the search function's
//! `GET /tools`: `{semanticQuery?, lat, lng, radiusInKm, type?, limit?}`, answered with the
//! model-facing JSON text), and `POST /rag/search` with `{semanticQuery?, filters?: {location?: {lat, lng,
//! radiusInKm}, timeRange?: {start, end}, type?}, limit?}` (limit 1-50, default 20). The
//! answer lists `results` (`activity`, `similarity`, `score`, `distanceKm`), the `strategy`
//! that ranked them, whether it was `degraded` (embedder down or unconfigured: lexical
//! ranking, never an error) and how many activities passed the hard filter (`candidates`).
//!
//! Who may call: `POST /rag/search` and the user routes need a user's JWT (the authorizer's
//! verified claims; 401 without), and a search counts against that user's quota (per minute
//! and per day; 429 `quota_exceeded` with `Retry-After` when spent; setting preferences, which
//! embeds them, counts too). `explore_nearby` is the
//! backend's and the assistant's tool: SigV4 only (401 anonymous, 403 a user).

use std::sync::Arc;

use axum::routing::{delete, get, post};
use shared::activities::request::SearchRequest;
use shared::activities::retrieval::Retrieval;
use shared::compose::Config;
use shared::core::clock::{Clock, SystemClock};
use shared::core::json::json_object;
use shared::core::records::RecordStore;
use shared::costs::budget::spending_as;
use shared::costs::quota::Quota;
use shared::http::auth::Users;
use shared::http::extract::{Backend, Body, HasUsers, Id, Invocation, User};
use shared::http::{Response, Router};
use shared::web::tools;
use shared::{Result, compose, http};

/// The function's services, who its users are, and their quota.
pub struct App {
    pub retrieval: Retrieval,
    pub users: Users,
    pub quota: Quota,
}

impl App {
    /// Built from `config`'s user claim and quotas over `retrieval`, counting in `records`.
    pub fn new(config: &Config, retrieval: Retrieval, records: Arc<dyn RecordStore>, clock: Arc<dyn Clock>) -> Self {
        let quota = Quota::from_settings(&config.costs, records, clock);
        Self { retrieval, users: Users::new(config.http.user_claim.clone()), quota }
    }

    /// The function's services as the environment configures them.
    pub async fn from_env() -> Result<Self> {
        let config = Config::from_env()?;
        let records = compose::records(&config).await?;
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let retrieval =
            compose::retrieval(&config, compose::vector_index(&config)?, Arc::clone(&records), Arc::clone(&clock))?;
        Ok(Self::new(&config, retrieval, records, clock))
    }
}

impl HasUsers for App {
    fn users(&self) -> &Users {
        &self.users
    }

    fn quota(&self) -> &dyn shared::core::limit::PerUser {
        &self.quota
    }
}

type State = axum::extract::State<Arc<App>>;

/// The function's routes.
pub fn routes(app: Arc<App>) -> Router {
    http::finish(
        Router::new()
            .route("/users/{userId}/feedback", post(feedback))
            .route("/backend/users/{userId}/feedback", post(backend_feedback))
            .route("/users/{userId}/preferences", get(show_preferences).put(preferences))
            .route("/users/{userId}/preferences/dislikes", delete(clear_dislikes))
            .route("/users/{userId}/location", get(location).put(save_location).delete(forget_location))
            .route("/rag/search", post(search))
            // `exploreNearby` is the name seed 004's clients registered.
            .route("/tools/explore_nearby", post(explore_nearby))
            .route("/tools/exploreNearby", post(explore_nearby))
            .with_state(app),
    )
}

async fn feedback(app: State, caller: User, Id(user): Id, body: Body) -> Result<Response> {
    let user = path_user(user)?;
    caller.acting_as(&user)?;
    Ok(http::json(200, &app.retrieval.feedback(&user, &json_object(&body)?).await?))
}

/// The app's backend knows who attended (seed 004): the same feedback, for any user.
async fn backend_feedback(app: State, _: Backend, Id(user): Id, body: Body) -> Result<Response> {
    let user = path_user(user)?;
    Ok(http::json(200, &app.retrieval.feedback(&user, &json_object(&body)?).await?))
}

async fn preferences(app: State, caller: User, Id(user): Id, invocation: Invocation, body: Body) -> Result<Response> {
    let user = path_user(user)?;
    caller.acting_as(&user)?;
    let body = json_object(&body)?;
    // The preferences are embedded: counted, and spent, like a search.
    let set = spending_as(&user, app.retrieval.set_preferences(&user, &body, &invocation.request_id)).await?;
    Ok(http::with_budget_left(http::json(200, &set), app.quota.budget_left(&user).await))
}

/// What the user set and stated, and what they turned down: theirs to see.
async fn show_preferences(app: State, caller: User, Id(user): Id) -> Result<Response> {
    let user = path_user(user)?;
    caller.acting_as(&user)?;
    Ok(http::json(200, &app.retrieval.preferences(&user).await?))
}

/// Forgets what the user turned down and stated disliking: the ranking no longer holds it
/// against an activity.
async fn clear_dislikes(app: State, caller: User, Id(user): Id) -> Result<Response> {
    let user = path_user(user)?;
    caller.acting_as(&user)?;
    Ok(http::json(200, &app.retrieval.clear_dislikes(&user).await?))
}

/// The places the assistant searches from when a message gives none (the user's last and
/// saved ones): the user's own to see, set and delete.
async fn location(app: State, caller: User, Id(user): Id) -> Result<Response> {
    let user = path_user(user)?;
    caller.acting_as(&user)?;
    Ok(http::json(200, &app.retrieval.whereabouts().view(&user).await?))
}

async fn save_location(app: State, caller: User, Id(user): Id, body: Body) -> Result<Response> {
    let user = path_user(user)?;
    caller.acting_as(&user)?;
    Ok(http::json(200, &app.retrieval.whereabouts().save(&user, &json_object(&body)?).await?))
}

async fn forget_location(app: State, caller: User, Id(user): Id) -> Result<Response> {
    let user = path_user(user)?;
    caller.acting_as(&user)?;
    app.retrieval.whereabouts().forget(&user).await?;
    Ok(http::json(200, &app.retrieval.whereabouts().view(&user).await?))
}

async fn search(app: State, user: User, invocation: Invocation, body: Body) -> Result<Response> {
    let request = SearchRequest::from_json(&json_object(&body)?)?;
    if let Some(named) = &request.user_id {
        user.acting_as(named)?;
    }
    let caller = user.0;
    let found = spending_as(&caller, app.retrieval.search(&request, &invocation.request_id)).await?;
    Ok(http::with_budget_left(http::json(200, &found), app.quota.budget_left(&caller).await))
}

/// The user a path names (`/users/{userId}/...`), checked before anything is counted: one that
/// cannot key a user's records is a 400.
fn path_user(user: String) -> Result<String> {
    shared::core::validate::user_id(&user)?;
    Ok(user)
}

/// The `explore_nearby` tool: the same retrieval as `/rag/search`; the body is the
/// model-facing JSON text, also for bad arguments and failures (so the model can react).
async fn explore_nearby(app: State, _: Backend, invocation: Invocation, body: Body) -> Result<Response> {
    let args = json_object(&body)?;
    let app = &app.retrieval;
    let text = match SearchRequest::from_tool_arguments(&args) {
        Err(e) => tools::error_string("invalid_arguments", &e.to_string()),
        Ok(request) => match app.search(&request, &invocation.request_id).await {
            Ok(response) => response.tool_text(app.ranking().zone),
            Err(e) => {
                tracing::error!(error = %e, "explore_nearby failed");
                tools::error_string("explore_failed", "activity search is temporarily unavailable")
            }
        },
    };
    Ok(http::raw_json(200, text))
}
