//! Harness for the activity functions: `index-activity` and `rag-search` handlers over one
//! Qdrant Edge directory (opened separately by each, as two processes would), a SQLite record
//! store for cost records, a movable clock, and optionally the fake embedding server.

use crate::{request, respond};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use shared::activities::indexing::Indexer;
use shared::compose::Config;
use shared::core::clock::{Clock, ManualClock};
use shared::core::records::{LocalRecords, RecordStore};

use crate::embedding::EmbeddingServer;

/// Dimensions of the fake embedder's concept vectors.
pub const DIMS: usize = 9;

/// The reference "now" of activity tests: Sunday 2026-11-22, 12:00 in Shanghai.
pub fn now() -> DateTime<Utc> {
    "2026-11-22T04:00:00Z".parse().unwrap()
}

/// The user whose token a search without `userId` carries.
pub const SEARCHER: &str = "u-searcher";

pub struct RagHarness {
    pub indexer: Arc<Indexer>,
    pub rag: Arc<rag_search::App>,
    pub clock: Arc<ManualClock>,
    pub records: Arc<dyn RecordStore>,
    pub embedding: Option<EmbeddingServer>,
    pub dir: tempfile::TempDir,
    /// What both functions were built from.
    pub config: Config,
}

impl RagHarness {
    /// With a healthy fake embedder (no latency) and `env` laid over the defaults.
    pub async fn new(env: &[(&str, &str)]) -> Self {
        Self::with(Some(EmbeddingServer::start(DIMS, Duration::ZERO).await), env).await
    }

    /// With `embedding` as the OpenAI-compatible embedder (`None`: that provider without
    /// `EMBEDDING_API_KEY`, so no embedder); `EMBEDDING_PROVIDER=local` in `env` for the
    /// bundled model instead.
    pub async fn with(embedding: Option<EmbeddingServer>, env: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        Self::in_dir(dir, embedding, env).await
    }

    /// As [`RagHarness::with`], over the data in `dir` (a reopened bundle).
    pub async fn in_dir(dir: tempfile::TempDir, embedding: Option<EmbeddingServer>, env: &[(&str, &str)]) -> Self {
        let records: Arc<dyn RecordStore> = Arc::new(LocalRecords::open(dir.path()).unwrap());
        Self::build(dir, records, embedding, env)
    }

    /// As [`RagHarness::new`], its records (interests, quotas, costs) in `records`.
    pub async fn on_store(records: Arc<dyn RecordStore>, env: &[(&str, &str)]) -> Self {
        let embedding = Some(EmbeddingServer::start(DIMS, Duration::ZERO).await);
        Self::build(tempfile::tempdir().expect("temp dir"), records, embedding, env)
    }

    fn build(
        dir: tempfile::TempDir,
        records: Arc<dyn RecordStore>,
        embedding: Option<EmbeddingServer>,
        env: &[(&str, &str)],
    ) -> Self {
        let mut vars: Vec<(String, String)> = vec![
            ("EMBEDDING_PROVIDER".into(), "openai".into()),
            ("DATA_DIR".into(), dir.path().display().to_string()),
            ("EMBEDDING_DIMENSIONS".into(), DIMS.to_string()),
            ("RETRY_BASE_MS".into(), "5".into()),
            // Scenarios search as often as they need; the quota has its own test (adversarial).
            ("USER_QUOTA_PER_MINUTE".into(), "0".into()),
            ("USER_QUOTA_PER_DAY".into(), "0".into()),
            // The concept embedder's scenarios rank by its vectors alone; the bundled e5 reading
            // the wish facets beside an API embedder has its own tests (local_embedder).
            ("WISH_FACETS".into(), "off".into()),
        ];
        if let Some(server) = &embedding {
            vars.push(("EMBEDDING_API_KEY".into(), "embedding-test-key".into()));
            vars.push(("EMBEDDING_BASE_URL".into(), server.uri()));
        }
        vars.extend(crate::model_location().into_iter().map(|(k, v)| (k.to_owned(), v)));
        vars.extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let config = crate::config(&vars);
        let clock = Arc::new(ManualClock::new(now()));
        let dyn_clock: Arc<dyn Clock> = clock.clone();
        let indexer = shared::compose::indexer(
            &config,
            shared::compose::vector_index(&config).unwrap(),
            Arc::clone(&records),
            Arc::clone(&dyn_clock),
        )
        .unwrap();
        let retrieval = shared::compose::retrieval(
            &config,
            shared::compose::vector_index(&config).unwrap(),
            Arc::clone(&records),
            Arc::clone(&dyn_clock),
        )
        .unwrap();
        let rag = rag_search::App::new(&config, retrieval, Arc::clone(&records), dyn_clock);
        Self { indexer: Arc::new(indexer), rag: Arc::new(rag), clock, records, embedding, dir, config }
    }

    /// Sends a request to `index-activity`, signed as the backend.
    pub async fn index(&self, method: &str, path: &str, body: &str) -> (u16, Value) {
        respond(
            shared::http::invoke(
                index_activity::routes(Arc::clone(&self.indexer)),
                crate::as_backend(request(method, path, body)),
            )
            .await,
        )
    }

    /// `POST /rag/search` with `body`, with the token of its `userId` (else of [`SEARCHER`]).
    pub async fn search(&self, body: Value) -> (u16, Value) {
        let user = body["userId"].as_str().unwrap_or(SEARCHER).to_owned();
        let req = crate::as_user(request("POST", "/rag/search", &body.to_string()), &user);
        respond(shared::http::invoke(rag_search::routes(Arc::clone(&self.rag)), req).await)
    }

    /// A tool call to `rag-search` (`POST /tools/<name>`), signed as the backend.
    pub async fn tool(&self, name: &str, arguments: Value) -> (u16, Value) {
        let req = crate::as_backend(request("POST", &format!("/tools/{name}"), &arguments.to_string()));
        respond(shared::http::invoke(rag_search::routes(Arc::clone(&self.rag)), req).await)
    }

    /// A request to a user route (`/users/{userId}/...`) with that user's token.
    pub async fn as_user(&self, method: &str, path: &str, body: Value) -> (u16, Value) {
        let user = path.trim_start_matches("/users/").split('/').next().unwrap_or_default();
        let req = crate::as_user(request(method, path, &body.to_string()), user);
        respond(shared::http::invoke(rag_search::routes(Arc::clone(&self.rag)), req).await)
    }

    /// Ids of a search's results, in order.
    pub async fn search_ids(&self, body: Value) -> (Vec<String>, Value) {
        let (status, r) = self.search(body).await;
        assert_eq!(status, 200, "{r}");
        let ids = r["results"].as_array().unwrap().iter().map(|x| x["activity"]["id"].as_str().unwrap().to_owned());
        (ids.collect(), r)
    }

    /// Every cost record so far.
    pub async fn costs(&self) -> Vec<shared::costs::ledger::CostRecord> {
        let ledger = shared::costs::ledger::Ledger::new(
            Arc::clone(&self.records),
            Arc::new(shared::costs::pricing::PriceTable::default()),
            self.clock.clone(),
            shared::core::retry::STORE_RETRY,
        );
        // Around the harness's day and its clock's (a test may set the clock to today).
        let (a, b) = (now().min(self.clock.now()), now().max(self.clock.now()));
        ledger.between(a - chrono::Duration::days(1), b + chrono::Duration::days(1)).await.unwrap()
    }
}

/// The settings that put a harness on the Qdrant server `QDRANT_URL` names, in a fresh
/// collection; `None` (and a loud `NOT RUN` line) without one.
pub fn server_env() -> Option<Vec<(&'static str, String)>> {
    let Ok(url) = std::env::var("QDRANT_URL") else {
        eprintln!("NOT RUN: this scenario on a Qdrant server needs QDRANT_URL; only Qdrant Edge was tested");
        return None;
    };
    let mut env = vec![
        ("VECTOR_STORE", "qdrant".to_owned()),
        ("QDRANT_URL", url),
        ("QDRANT_COLLECTION", format!("test-{}", uuid::Uuid::new_v4())),
    ];
    if let Ok(key) = std::env::var("QDRANT_API_KEY") {
        env.push(("QDRANT_API_KEY", key));
    }
    Some(env)
}

/// Runs each named `async fn name(index: Vec<(&str, String)>)` twice: on Qdrant Edge (no
/// settings) and on the Qdrant server of [`server_env`].
#[macro_export]
macro_rules! on_edge_and_server {
    ($($name:ident),* $(,)?) => {
        mod edge {
            $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
               async fn $name() { super::$name(Vec::new()).await } )*
        }
        mod qdrant_server {
            $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
               async fn $name() {
                   let Some(env) = $crate::rag::server_env() else { return };
                   super::$name(env).await
               } )*
        }
    };
}

/// `env` borrowed, as [`RagHarness::new`] takes it.
pub fn borrowed<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    env.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// An activity in Shanghai's Jing'an district starting `hours` after [`now`], 2 of 8 places taken.
pub fn activity(id: &str, title: &str, kind: &str, description: &str, hours: i64) -> Value {
    json!({
        "id": id, "title": title, "description": description, "type": kind, "tags": [],
        "startAt": (now() + chrono::Duration::hours(hours)).to_rfc3339(), "locationName": "上海静安区愚园路",
        "location": {"lat": 31.2218, "lng": 121.4378}, "status": "active",
        "currentParticipants": 2, "maxParticipants": 8
    })
}
