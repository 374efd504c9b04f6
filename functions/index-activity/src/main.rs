//! Lambda entrypoint of `index-activity`: build the adapters once, then serve requests and events.

use lambda_http::{Error, Request, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    shared::http::logging::init();
    let app = match index_activity::from_env().await {
        Ok(app) => app,
        Err(e) => return shared::http::serve_misconfigured(e).await,
    };
    // Keys in Secrets Manager are read at once, in parallel, not inside the first request.
    shared::core::secrets::prefetch();
    run(service_fn(|req: Request| {
        let span = shared::http::span(&req);
        tracing::Instrument::instrument(index_activity::serve(&app, req), span)
    }))
    .await
}
