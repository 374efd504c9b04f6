//! The shape of `shared`, checked from its source: one folder per capability, dependencies one
//! way (the allowed edges below, no module cycle), `lambda_http` and axum only at the HTTP edge,
//! no file past 500 lines, and every function's `main` its `serve` call.
//! A module's dependencies are the `crate::` paths in its code (comments and `#[cfg(test)]`
//! parts left out), resolved to the longest module they name.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Which capability may use which (besides itself). `compose` is the composition root.
const ALLOWED: &[(&str, &[&str])] = &[
    ("core", &[]),
    ("http", &["core"]),
    ("costs", &["core"]),
    ("llm", &["core", "costs"]),
    ("web", &["core", "costs"]),
    ("activities", &["core", "costs", "llm"]),
    ("pipeline", &["core", "web"]),
    ("timeline", &["core", "costs", "llm", "web"]),
    ("assistant", &["core", "costs", "llm", "web", "activities"]),
    ("compose", &["core", "http", "costs", "llm", "web", "activities", "pipeline", "timeline", "assistant"]),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/src")
}

/// Every module of `shared` (`web::search`, `core::records`...) with its code.
fn modules() -> BTreeMap<String, String> {
    let root = src();
    integration::rust_files(&root)
        .into_iter()
        .filter_map(|path| {
            let rel = path.strip_prefix(&root).unwrap().with_extension("");
            let mut name = rel.to_string_lossy().replace('/', "::");
            if name == "lib" {
                return None;
            }
            if let Some(parent) = name.strip_suffix("::mod") {
                name = parent.to_owned();
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let code: String = text
                .split("#[cfg(test)]")
                .next()
                .unwrap()
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            Some((name, code))
        })
        .collect()
}

/// The modules each module uses.
fn edges(modules: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let resolve = |path: &str| -> Option<String> {
        let parts: Vec<&str> = path.split("::").collect();
        (1..=parts.len()).rev().map(|i| parts[..i].join("::")).find(|m| modules.contains_key(m))
    };
    let mut out = BTreeMap::new();
    for (name, code) in modules {
        let mut uses = BTreeSet::new();
        for (i, _) in code.match_indices("crate::") {
            let path: String = code[i + 7..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_' || *c == ':')
                .collect();
            if let Some(target) = resolve(path.trim_end_matches(':')) {
                let nested = target.starts_with(&format!("{name}::")) || name.starts_with(&format!("{target}::"));
                if &target != name && !nested {
                    uses.insert(target);
                }
            }
        }
        out.insert(name.clone(), uses);
    }
    out
}

fn capability(module: &str) -> &str {
    module.split("::").next().unwrap()
}

#[test]
fn capabilities_depend_one_way() {
    let modules = modules();
    assert!(modules.len() > 40, "found only {} modules under {}", modules.len(), src().display());
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut wrong = Vec::new();
    for (from, uses) in edges(&modules) {
        let cap = capability(&from);
        let may = allowed.get(cap).unwrap_or_else(|| panic!("{from}: capability {cap} is not in ALLOWED"));
        for to in uses.iter().filter(|t| capability(t) != cap && !may.contains(&capability(t))) {
            wrong.push(format!("{from} -> {to}"));
        }
    }
    assert!(wrong.is_empty(), "dependencies against the capability map:\n{}", wrong.join("\n"));
}

#[test]
fn no_module_depends_on_itself_through_others() {
    let graph = edges(&modules());
    // Depth-first search; a back edge closes a cycle.
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
        cycles: &mut Vec<String>,
    ) {
        state.insert(node.to_owned(), 1);
        stack.push(node.to_owned());
        for next in &graph[node] {
            match state.get(next.as_str()) {
                Some(1) => {
                    let start = stack.iter().position(|m| m == next).unwrap();
                    cycles.push(format!("{} -> {next}", stack[start..].join(" -> ")));
                }
                Some(_) => {}
                None => visit(next, graph, state, stack, cycles),
            }
        }
        stack.pop();
        state.insert(node.to_owned(), 2);
    }
    let (mut state, mut cycles) = (BTreeMap::new(), Vec::new());
    for node in graph.keys() {
        if !state.contains_key(node.as_str()) {
            visit(node, &graph, &mut state, &mut Vec::new(), &mut cycles);
        }
    }
    assert!(cycles.is_empty(), "module cycles:\n{}", cycles.join("\n"));
}

#[test]
fn only_the_http_edge_knows_lambda_http() {
    let outside: Vec<String> = modules()
        .into_iter()
        .filter(|(name, code)| capability(name) != "http" && (code.contains("lambda_http") || code.contains("axum")))
        .map(|(name, _)| name)
        .collect();
    assert!(outside.is_empty(), "lambda_http or axum used outside shared::http: {outside:?}");
}

// Given every function's entrypoint, then each logs through `shared::http::logging` (capped
// below TRACE, where the runtime prints raw events with their Authorization headers), never the
// runtime's default subscriber: an HTTP function's `main` is `shared::http::serve`, which sets
// it up with the rest, and nothing else.
#[test]
fn every_function_logs_without_trace() {
    let functions = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../functions");
    let mut checked = 0;
    for entry in std::fs::read_dir(functions).unwrap() {
        let main = entry.unwrap().path().join("src/main.rs");
        let Ok(code) = std::fs::read_to_string(&main) else { continue };
        assert!(!code.contains("init_default_subscriber"), "{} uses the runtime's default subscriber", main.display());
        let serves = code.contains("shared::http::serve(");
        assert!(
            serves || code.contains("shared::http::logging::init()"),
            "{} does not install the capped subscriber",
            main.display()
        );
        if serves {
            let body: Vec<&str> =
                code.lines().filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with("//")).collect();
            assert!(
                body.len() <= 6,
                "{}: a function's main is its serve call, not {} lines",
                main.display(),
                body.len()
            );
        }
        checked += 1;
    }
    assert!(checked >= 6, "only {checked} entrypoints found");
}

// Given every library file (shared's and the function crates'), then none is past 500 lines: a
// file has one job.
#[test]
fn every_library_file_has_one_job() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = integration::rust_files(&root.join("shared/src"));
    files.extend(integration::rust_files(&root.join("functions")));
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let lines = std::fs::read_to_string(f).unwrap().lines().count();
            (lines > 500).then(|| format!("{} ({lines} lines)", f.strip_prefix(&root).unwrap_or(f).display()))
        })
        .collect();
    assert!(files.len() > 100, "only {} files found", files.len());
    assert!(long.is_empty(), "library files past 500 lines: {long:?}");
}

// Given every function crate, then it holds no test of its own: cargo builds no test binaries
// of them (their `[lib]` and `[[bin]]` say `test = false`), so a test there would never run;
// behaviour is tested here.
#[test]
fn function_crates_hold_no_tests() {
    let manifests = function_manifests();
    for (dir, manifest) in &manifests {
        // Each target section must turn its tests off.
        for (target, off) in
            [("\n[lib]\n", &["test = false", "doctest = false"][..]), ("\n[[bin]]\n", &["test = false"])]
        {
            let section = section(manifest, target);
            for line in off {
                assert!(
                    section.is_some_and(|s| s.lines().any(|l| l.trim() == *line)),
                    "{}: its {} does not say `{line}`",
                    dir.display(),
                    target.trim()
                );
            }
        }
        for path in integration::rust_files(&dir.join("src")) {
            let code = std::fs::read_to_string(&path).unwrap();
            assert!(
                !code.contains("#[test]") && !code.contains("#[tokio::test"),
                "{}: a test no build runs",
                path.display()
            );
        }
    }
    assert!(manifests.len() >= 6, "only {} function crates found", manifests.len());
}

/// Each function crate's directory and its Cargo.toml.
fn function_manifests() -> Vec<(PathBuf, String)> {
    let functions = Path::new(env!("CARGO_MANIFEST_DIR")).join("../functions");
    let dirs = std::fs::read_dir(functions).unwrap().map(|entry| entry.unwrap().path()).filter(|p| p.is_dir());
    dirs.map(|dir| {
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        (dir, manifest)
    })
    .collect()
}

/// The lines of `manifest`'s section `header` (`"\n[lib]\n"`), up to the next section.
fn section<'a>(manifest: &'a str, header: &str) -> Option<&'a str> {
    manifest.split_once(header).map(|(_, rest)| rest.split("\n[").next().unwrap_or(rest))
}

// Given every function crate, then `cargo lambda build` (what `sam build` runs, at the workspace
// root, with `--bin <name>` only) builds it alone and without its default features: its
// `[package.metadata.lambda.build]` names its own package (else every default member, the
// tests crate among them, would be selected and their features unified into the binary), and
// a crate with default features (Qdrant Edge) turns them off. Checked on the artifacts with
// DEPLOY_BUILD=1 (infra/artifacts-check.py); cargo-lambda 1.9.2's reading of these keys was
// tried on a workspace of the same shape. Each is linked position-dependent by the one build
// script, functions/link.rs (half the cold start; artifacts-check.py checks the ELF type).
#[test]
fn deploy_builds_build_each_function_alone() {
    let manifests = function_manifests();
    for (_, manifest) in &manifests {
        let name = manifest.lines().find_map(|l| l.strip_prefix("name = \"")).unwrap().trim_end_matches('"');
        let package = section(manifest, "[package]\n").unwrap();
        assert!(package.lines().any(|l| l == "build = \"../link.rs\""), "{name}: not linked by ../link.rs");
        let build = section(manifest, "\n[package.metadata.lambda.build]\n")
            .unwrap_or_else(|| panic!("{name}: no [package.metadata.lambda.build]"));
        assert!(build.lines().any(|l| l.trim() == format!("packages = [\"{name}\"]")), "{name}: {build}");
        let defaults =
            section(manifest, "\n[features]\n").is_some_and(|f| f.lines().any(|l| l.starts_with("default = ")));
        if defaults {
            assert!(build.lines().any(|l| l.trim() == "no_default_features = true"), "{name}: {build}");
        }
    }
    assert!(manifests.len() >= 7, "only {} function crates found", manifests.len());
}
