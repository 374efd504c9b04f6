//! Lambda entrypoint of `index-activity`: requests and EventBridge events.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    shared::http::serve(index_activity::from_env, index_activity::routes).await
}
