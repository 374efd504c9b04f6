//! Lambda entrypoint of `rag-search`: build the adapters once, then serve requests.

use std::convert::Infallible;

use lambda_http::{Error, Request, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    shared::http::logging::init();
    let app = match rag_search::App::from_env().await {
        Ok(app) => app,
        Err(e) => return shared::http::serve_misconfigured(e).await,
    };
    // Keys in Secrets Manager are read at once, in parallel, not inside the first request.
    shared::core::secrets::prefetch();
    run(service_fn(|req: Request| {
        let app = &app;
        let span = shared::http::span(&req);
        tracing::Instrument::instrument(async move { Ok::<_, Infallible>(rag_search::handle(app, req).await) }, span)
    }))
    .await
}
