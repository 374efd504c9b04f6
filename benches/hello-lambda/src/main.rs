//! The smallest `lambda_http` function: every request answers "hello". `cargo xtask bench cold`
//! measures each function's cold start beside this one's.

use lambda_http::{Body, Error, Request, Response, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    run(service_fn(|_: Request| async { Ok::<_, Error>(Response::new(Body::from("hello"))) })).await
}
