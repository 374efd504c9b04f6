//! The shape of `shared`, checked from its source: one folder per capability, dependencies one
//! way (the allowed edges below, no module cycle), and `lambda_http` only at the HTTP edge.
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
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("shared/src is readable") {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let root = src();
    let mut files = Vec::new();
    walk(&root, &mut files);
    files
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
        .filter(|(name, code)| capability(name) != "http" && code.contains("lambda_http"))
        .map(|(name, _)| name)
        .collect();
    assert!(outside.is_empty(), "lambda_http used outside shared::http: {outside:?}");
}

// Given every function's entrypoint, then each logs through `shared::http::logging` (capped
// below TRACE, where the runtime prints raw events with their Authorization headers), never the
// runtime's default subscriber.
#[test]
fn every_function_logs_without_trace() {
    let functions = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../functions");
    let mut checked = 0;
    for entry in std::fs::read_dir(functions).unwrap() {
        let main = entry.unwrap().path().join("src/main.rs");
        let Ok(code) = std::fs::read_to_string(&main) else { continue };
        assert!(!code.contains("init_default_subscriber"), "{} uses the runtime's default subscriber", main.display());
        assert!(
            code.contains("shared::http::logging::init()"),
            "{} does not install the capped subscriber",
            main.display()
        );
        checked += 1;
    }
    assert!(checked >= 6, "only {checked} entrypoints found");
}

// Given every function crate, then it holds no test of its own: cargo builds no test binaries
// of them (their `[lib]` and `[[bin]]` say `test = false`), so a test there would never run;
// behaviour is tested here.
#[test]
fn function_crates_hold_no_tests() {
    fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let functions = Path::new(env!("CARGO_MANIFEST_DIR")).join("../functions");
    let mut checked = 0;
    for entry in std::fs::read_dir(functions).unwrap() {
        let dir = entry.unwrap().path();
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        // Each target section ends at the next one; each must turn its tests off.
        for (target, off) in
            [("\n[lib]\n", &["test = false", "doctest = false"][..]), ("\n[[bin]]\n", &["test = false"])]
        {
            let section = manifest.split_once(target).map(|(_, rest)| rest.split("\n[").next().unwrap_or(rest));
            for line in off {
                assert!(
                    section.is_some_and(|s| s.lines().any(|l| l.trim() == *line)),
                    "{}: its {} does not say `{line}`",
                    dir.display(),
                    target.trim()
                );
            }
        }
        let mut files = Vec::new();
        sources(&dir.join("src"), &mut files);
        for path in files {
            let code = std::fs::read_to_string(&path).unwrap();
            assert!(
                !code.contains("#[test]") && !code.contains("#[tokio::test"),
                "{}: a test no build runs",
                path.display()
            );
        }
        checked += 1;
    }
    assert!(checked >= 6, "only {checked} function crates found");
}
