//! Lambda entrypoint of `cost-report`: build the ledger once, then serve requests and
//! scheduled events.

use std::convert::Infallible;

use lambda_http::{Error, Request, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    shared::http::logging::init();
    let app = match cost_report::App::from_env().await {
        Ok(app) => app,
        Err(e) => return shared::http::serve_misconfigured(e).await,
    };
    run(service_fn(|req: Request| {
        let app = &app;
        let span = shared::http::span(&req);
        tracing::Instrument::instrument(async move { Ok::<_, Infallible>(cost_report::handle(app, req).await) }, span)
    }))
    .await
}
