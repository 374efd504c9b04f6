//! Lambda entrypoint of `search`.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    shared::http::serve(search::SearchFunction::from_env, search::routes).await
}
