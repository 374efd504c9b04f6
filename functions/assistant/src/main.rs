//! Lambda entrypoint of `assistant`: streamed through its Function URL, buffered through API
//! Gateway.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    shared::http::serve(assistant::App::from_env, assistant::routes).await
}
