//! Lambda entrypoint of `research`: streamed through its Function URL (a run that outlives its
//! first stream keeps the environment from freezing: `shared::http::stream`).

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    shared::http::serve(research::App::from_env, research::routes).await
}
