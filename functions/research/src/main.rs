//! Lambda entrypoint of `research`: build the agents once, then serve with response streaming
//! (a run that outlives its first stream keeps the environment from freezing: `stream::run`).

use lambda_http::{Error, Request};

#[tokio::main]
async fn main() -> Result<(), Error> {
    shared::http::logging::init();
    let app = match research::App::from_env().await {
        Ok(app) => std::sync::Arc::new(app),
        Err(e) => return shared::http::serve_misconfigured(e).await,
    };
    // Keys in Secrets Manager are read at once, in parallel, not inside the first request.
    shared::core::secrets::prefetch();
    shared::http::stream::run(|req: Request| {
        let app = std::sync::Arc::clone(&app);
        async move { research::handle(&app, req).await }
    })
    .await
}
