//! Lambda entrypoint of `assistant`: build the assistant once, then serve requests (streamed
//! through the Function URL, buffered through API Gateway).

use std::sync::Arc;

use lambda_http::{Error, Request};

#[tokio::main]
async fn main() -> Result<(), Error> {
    shared::http::logging::init();
    let app = match assistant::App::from_env().await {
        Ok(app) => Arc::new(app),
        Err(e) => return shared::http::serve_misconfigured(e).await,
    };
    // Keys in Secrets Manager are read at once, in parallel, not inside the first request.
    shared::core::secrets::prefetch();
    shared::http::stream::run(|req: Request| assistant::handle(Arc::clone(&app), req)).await
}
