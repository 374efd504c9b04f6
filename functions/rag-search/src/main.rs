//! Lambda entrypoint of `rag-search`.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    shared::http::serve(rag_search::App::from_env, rag_search::routes).await
}
