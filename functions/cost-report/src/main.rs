//! Lambda entrypoint of `cost-report`: requests and scheduled events.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    shared::http::serve(cost_report::App::from_env, cost_report::routes).await
}
