//! Lambda entrypoint of `research`: build the agents once, then serve with response streaming
//! (a run that outlives its first stream keeps the environment from freezing: `stream::run`).

use lambda_http::{Error, Request};

#[tokio::main]
async fn main() -> Result<(), Error> {
    shared::http::logging::init();
    let app = std::sync::Arc::new(research::App::from_env().await?);
    shared::http::stream::run(|req: Request| {
        let app = std::sync::Arc::clone(&app);
        async move { research::handle(&app, req).await }
    })
    .await
}
