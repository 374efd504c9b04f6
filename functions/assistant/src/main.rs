//! Lambda entrypoint of `assistant`: build the assistant once, then serve requests.

use std::convert::Infallible;

use lambda_http::{Error, Request, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    shared::http::logging::init();
    let app = assistant::App::from_env().await?;
    run(service_fn(|req: Request| {
        let app = &app;
        async move { Ok::<_, Infallible>(assistant::handle(app, req).await) }
    }))
    .await
}
