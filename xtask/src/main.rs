//! Repository chores, `cargo xtask <command>`:
//!
//! - `demo`: runs the `search` function binary as Lambda runs it (a local Runtime API), on the
//!   embedded default: no keys, no cloud, SQLite under `DATA_DIR`, labelled mock data; then
//!   against a labelled sample upstream on 127.0.0.1 to show caching and stored citations.
//! - `quality [--tune | --activities FILE --queries FILE]`: the quality sets (`benches/intent/`,
//!   `benches/asks/`, `benches/fresh/`, or a team's own) through retrieval, offline with the
//!   bundled embedder: nDCG@10, Recall@20, MRR per method, set, query kind and split, the
//!   pooled held-out table and the decision rule (non-zero exit on a loss to a baseline);
//!   `quality lab [--wishes] [--tune]`: the ranking experiments in memory (`--wishes`: a wish's
//!   ranking and its variations). `--tune` hides the held-out splits (what a change may be
//!   tuned on). `quality --intent [--tune | --train]`: the assistant's mode router on the
//!   sealed set `benches/modes/` against main's, with its decision rule; `--train` fits the
//!   router's heads on the training file and the tune split.
//!   `quality --nearby [--tune]`: issue 77's set (`benches/nearby/`: nearer, sooner, varied,
//!   not what the user turned down).
//!   `quality --fit-wishes`: fits what a wish wants (the retrieval's facet model) on
//!   `benches/facets/`. `quality --rotated`: the same sets through the API embedder path,
//!   against the bundled e5 served under a random rotation (the facets' independence).
//! - `bench [search|report|rag|nearby|backfill|embed]`: prints citation extraction on 1 MB, a cache-hit request through
//!   the handler and the cold start of the release binary, each beside a baseline measured in
//!   the same run; the cost report over 100k records on SQLite and DynamoDB Local; and activity
//!   retrieval over 100k activities on Qdrant Edge; and the backfill sweep against a slow embedder.
//! - `replay FILE...` (or `-` for standard input): writes back the records that log lines hold
//!   for replay (cost records and sources a store outage kept out) into the store the
//!   environment configures (`RECORD_STORE`, `TABLE_NAME`, `DATA_DIR`), idempotently.
//! - `check-config [--template FILE] [Name=Value ...]`: each function's configuration as the
//!   template gives it under those parameter overrides, read as the function reads it at start
//!   (non-zero exit when one is misconfigured), before a deploy.
//!
//! `cargo xtask` builds it without the `tools` feature (no vector index: `demo` and `serve`
//! start after a light build); `quality`, `bench`, `replay` and `check-config` then run
//! themselves again, built with it.

#[cfg(feature = "tools")]
mod bench;
#[cfg(feature = "tools")]
mod check_config;
mod demo;
#[cfg(feature = "tools")]
mod embed_bench;
mod playground;
#[cfg(feature = "tools")]
mod quality;
#[cfg(feature = "tools")]
mod rag_bench;
mod runtime_api;
mod sample_upstream;
mod samples;
mod serve;
mod template_routes;
#[cfg(test)]
mod unification;

use std::path::PathBuf;
use std::process::Command;

type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

#[tokio::main]
async fn main() -> Result {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("demo") => demo::run().await,
        Some("serve") => serve::run().await,
        #[cfg(not(feature = "tools"))]
        Some("quality" | "bench" | "replay" | "check-config") => {
            // Built light (the alias): the same command again, built with the tools (the bench
            // optimised: figures from unoptimised code mean nothing).
            run_again(if args[0] == "bench" { "bench-tools" } else { "dev" }, &args)
        }
        #[cfg(feature = "tools")]
        Some("quality") => match args.get(1).map(String::as_str) {
            Some("lab") if args.iter().any(|a| a == "--wishes") => {
                quality::wishlab::run(args.iter().any(|a| a == "--tune"), args.iter().any(|a| a == "--second"))
            }
            Some("lab") => quality::methods::run(args.iter().any(|a| a == "--tune")),
            _ if args.iter().any(|a| a == "--fit-wishes") => {
                crate::ensure_model()?;
                let tmp = tempfile::tempdir()?;
                let embedding = quality::modes::embedding(tmp.path(), &|k: &str| std::env::var(k).ok())?;
                quality::wishes::fit(&embedding).await
            }
            _ if args.iter().any(|a| a == "--rotated") => {
                crate::ensure_model()?;
                let env = |k: &str| std::env::var(k).ok();
                let model = shared::compose::Config::from_lookup(env)?.activities.embedding_model_path;
                let overlay = quality::rotated::env(&quality::rotated::serve(&model).await?);
                let sets = quality::Sets::Bundled { tune: false };
                quality::run(sets, false, move |k| {
                    overlay.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone()).or_else(|| env(k))
                })
                .await
            }
            _ if args.iter().any(|a| a == "--nearby") => {
                quality::nearby::run(args.iter().any(|a| a == "--tune"), |k| std::env::var(k).ok()).await
            }
            _ if args.iter().any(|a| a == "--intent") => {
                let flag = |f: &str| args.iter().any(|a| a == f);
                quality::modes::run(flag("--tune"), flag("--train"), |k| std::env::var(k).ok()).await
            }
            _ => {
                let value =
                    |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).map(Into::into);
                let sets = match (value("--activities"), value("--queries")) {
                    (Some(activities), Some(queries)) => quality::Sets::Own { activities, queries },
                    (None, None) => quality::Sets::Bundled { tune: args.iter().any(|a| a == "--tune") },
                    _ => return Err("quality: give both --activities FILE and --queries FILE".into()),
                };
                quality::run(sets, args.iter().any(|a| a == "--readme"), |k| std::env::var(k).ok()).await
            }
        },
        #[cfg(feature = "tools")]
        Some("bench") if cfg!(debug_assertions) => {
            // Figures from unoptimised code mean nothing: run again, optimised.
            run_again("bench-tools", &args[..args.len().min(2)])
        }
        #[cfg(feature = "tools")]
        Some("bench") => bench::run(std::env::args().nth(2).as_deref()).await,
        #[cfg(feature = "tools")]
        Some("replay") if args.len() > 1 => replay(&args[1..]).await,
        #[cfg(feature = "tools")]
        Some("check-config") => check_config::run(&args[1..]),
        _ => {
            eprintln!("usage: cargo xtask <demo|serve|bench|quality|replay FILE...|check-config [Name=Value...]>");
            std::process::exit(2);
        }
    }
}

/// `cargo xtask replay`: the replay lines of `files` (`-`: standard input) into the configured
/// record store.
#[cfg(feature = "tools")]
async fn replay(files: &[String]) -> Result {
    use std::io::BufRead;
    let config = shared::compose::Config::from_env()?;
    let store = shared::compose::records(&config).await?;
    let (mut found, mut written) = (0, 0);
    for file in files {
        let reader: Box<dyn BufRead> = match file.as_str() {
            "-" => Box::new(std::io::stdin().lock()),
            path => Box::new(std::io::BufReader::new(std::fs::File::open(path)?)),
        };
        let lines = reader.lines().collect::<std::io::Result<Vec<_>>>()?;
        let done = shared::compose::replay(&*store, lines).await?;
        println!("{file}: {} replay lines, {} records written, {} refused", done.lines, done.written, done.refused);
        (found, written) = (found + done.lines, written + done.written);
    }
    println!("replayed {found} lines, {written} records");
    Ok(())
}

/// Runs `cargo xtask <args>` again, built in `profile` with the tools, and exits with its status.
fn run_again(profile: &str, args: &[String]) -> Result {
    let status =
        cargo().current_dir(root()).args(["run", "--profile", profile, "-p", "xtask", "--"]).args(args).status()?;
    std::process::exit(status.code().unwrap_or(1));
}

/// The workspace root.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Builds the function binaries `names` and returns their paths, in the target directory this
/// xtask itself was built into. The selection includes xtask, built as it runs (with or
/// without `tools`): its dependencies give every shared crate the test suite's features
/// (xtask/Cargo.toml), so no dependency is built twice.
fn build_functions<const N: usize>(names: [&str; N], release: bool) -> Result<[PathBuf; N]> {
    let mut cmd = cargo();
    // Not quiet: a first build takes minutes, and cargo's own progress shows it is working.
    cmd.current_dir(root()).args(["build", "-p", "xtask"]);
    if !cfg!(feature = "tools") {
        cmd.arg("--no-default-features").args(edge_features(&names));
    }
    built(cmd, names, release, if release { "release" } else { "dev" })
}

/// Builds the function binaries `names` in release as a deploy build does (`cargo lambda build`
/// takes their Cargo.toml's `no_default_features`: no Qdrant Edge), on their own: built beside
/// xtask, whose features give the shared crate Edge, they would carry it. Returns their paths.
/// Only the benches use it.
#[cfg(feature = "tools")]
fn build_deployed<const N: usize>(names: [&str; N]) -> Result<[PathBuf; N]> {
    let mut cmd = cargo();
    cmd.current_dir(root()).args(["build", "--no-default-features"]);
    built(cmd, names, true, "release, as deployed")
}

/// Runs the build `cmd` of the function binaries `names` (`how` said while it builds) and
/// returns their paths, in the target directory this xtask itself was built into.
fn built<const N: usize>(mut cmd: Command, names: [&str; N], release: bool, how: &str) -> Result<[PathBuf; N]> {
    for name in names {
        cmd.args(["-p", name]);
    }
    if release {
        cmd.arg("--release");
    }
    eprintln!("building {} ({how})...", names.join(", "));
    if !cmd.status()?.success() {
        return Err(format!("cargo build of {} failed", names.join(", ")).into());
    }
    let exe = std::env::current_exe()?;
    let target = exe.parent().and_then(|p| p.parent()).ok_or("xtask binary has no target dir")?;
    let dir = target.join(if release { "release" } else { "debug" });
    Ok(names.map(|name| dir.join(name)))
}

/// The function crates with Qdrant Edge (their default feature `edge`, the local vector index).
const WITH_EDGE: [&str; 4] = ["rag-search", "assistant", "index-activity", "backfill"];

/// `--no-default-features` applies to every package selected, so a light build of `names`
/// asks for their Edge by name: locally they run on the embedded default.
fn edge_features(names: &[&str]) -> Vec<String> {
    names
        .iter()
        .filter(|n| WITH_EDGE.contains(n))
        .flat_map(|n| ["--features".to_owned(), format!("{n}/edge")])
        .collect()
}

/// A cargo command as from the user's shell: without the variables `cargo run` set for this
/// process (`CARGO_MANIFEST_DIR`, `CARGO_PKG_*`, ...). Build scripts that track one of them
/// (ring's tracks `CARGO_MANIFEST_DIR`) would otherwise rerun and rebuild everything above
/// them: rustls, the AWS SDK, Qdrant.
fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        let set_by_run = ["CARGO_MANIFEST_", "CARGO_PKG_", "CARGO_CRATE_", "CARGO_BIN_", "CARGO_PRIMARY_PACKAGE"]
            .iter()
            .any(|prefix| name.starts_with(prefix));
        if set_by_run || name == "OUT_DIR" {
            cmd.env_remove(name.as_ref());
        }
    }
    cmd
}

/// The second encoder, USE multilingual v3 (`infra/fetch-use.sh` fetches it, checksummed).
#[cfg(feature = "tools")]
fn use_model() -> std::result::Result<usem::UseModel, String> {
    let out = Command::new("bash")
        .arg(root().join("infra/fetch-use.sh"))
        .output()
        .map_err(|e| format!("infra/fetch-use.sh: {e}"))?;
    if !out.status.success() {
        return Err(format!("infra/fetch-use.sh failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let path = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let started = std::time::Instant::now();
    let model = usem::UseModel::load(std::path::Path::new(&path))?;
    eprintln!("USE multilingual v3 loaded in {:.2} s", started.elapsed().as_secs_f64());
    Ok(model)
}

/// Fetches the bundled embedder's weights into the cache if they are not there yet
/// (`infra/fetch-model.sh`, checksummed), unless `EMBEDDING_MODEL_PATH` points elsewhere.
/// (A `String` error: a thread may return it.)
fn ensure_model() -> std::result::Result<(), String> {
    if std::env::var_os("EMBEDDING_MODEL_PATH").is_some() {
        return Ok(());
    }
    let status = Command::new("bash")
        .arg(root().join("infra/fetch-model.sh"))
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("infra/fetch-model.sh: {e}"))?;
    if !status.success() {
        return Err("infra/fetch-model.sh failed: the bundled embedder's weights are missing".into());
    }
    Ok(())
}

/// An API Gateway HTTP API event for `method path` with `body`, from the repository's fixture
/// (signed as the backend, as `infra/events/search.json` is).
fn api_event(method: &str, path: &str, body: Option<serde_json::Value>) -> Result<serde_json::Value> {
    let text = std::fs::read_to_string(root().join("infra/events/search.json"))?;
    let mut event: serde_json::Value = serde_json::from_str(&text)?;
    event["rawPath"] = path.into();
    event["routeKey"] = format!("{method} {path}").into();
    event["requestContext"]["http"]["method"] = method.into();
    event["requestContext"]["http"]["path"] = path.into();
    event["requestContext"]["routeKey"] = format!("{method} {path}").into();
    match body {
        Some(b) => event["body"] = b.to_string().into(),
        None => {
            event.as_object_mut().expect("event is an object").remove("body");
        }
    }
    Ok(event)
}

/// `event` as API Gateway passes it once its IAM authorizer verified the backend's SigV4
/// signature (the authorizer block of `infra/events/activities-create.json`).
fn as_backend(mut event: serde_json::Value) -> Result<serde_json::Value> {
    event["requestContext"]["authorizer"] = fixture("activities-create.json")?["requestContext"]["authorizer"].take();
    Ok(event)
}

/// `event` as API Gateway passes it once its JWT authorizer verified a user's token (the
/// authorizer block of `infra/events/rag-search.json`, user `u-fixture`).
fn as_user(mut event: serde_json::Value) -> Result<serde_json::Value> {
    event["requestContext"]["authorizer"] = fixture("rag-search.json")?["requestContext"]["authorizer"].take();
    Ok(event)
}

/// A fixture event from `infra/events/`.
fn fixture(name: &str) -> Result<serde_json::Value> {
    Ok(serde_json::from_str(&std::fs::read_to_string(root().join("infra/events").join(name))?)?)
}
