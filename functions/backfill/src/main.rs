//! Entrypoint of `backfill`: a Lambda function inside Lambda (`AWS_LAMBDA_RUNTIME_API` set,
//! no arguments), else the local CLI (`cargo run -p backfill -- --dry-run`).

use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.is_empty() || std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_none() {
        return cli(&args).await;
    }
    shared::http::logging::init();
    let app = backfill::from_env().await?;
    // Keys in Secrets Manager are read at once, in parallel, not inside the first request.
    shared::core::secrets::prefetch();
    run(service_fn(|event: LambdaEvent<Value>| {
        let app = &app;
        let left = shared::core::deadline::left(event.context.deadline);
        async move { Ok::<_, Error>(serde_json::to_value(backfill::handle(app, &event.payload, left).await?)?) }
    }))
    .await
}

async fn cli(args: &[String]) -> Result<(), Error> {
    shared::http::logging::init();
    let job = match backfill::job_from_args(args) {
        Ok(job) => job,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let app = backfill::from_env().await?;
    let summary = backfill::cli(&app, &job).await?;
    println!("{}", serde_json::to_string_pretty(&summary)?);
    Ok(())
}
