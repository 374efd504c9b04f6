//! Lambda entrypoint of `research`: build the agents once, then serve with response streaming.

use lambda_http::{Error, Request, run_with_streaming_response, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    shared::http::logging::init();
    let app = research::App::from_env().await?;
    run_with_streaming_response(service_fn(|req: Request| {
        let app = &app;
        async move { Ok::<_, Error>(research::handle(app, req).await) }
    }))
    .await
}
