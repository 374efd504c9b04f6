//! Every build that includes xtask resolves each shared crate with the test suite's features,
//! so a first build's crates are reused by the next (xtask/Cargo.toml's pins): checked with
//! `cargo tree`, offline, for each selection the demo, `serve` and the tools build.

use std::collections::{BTreeMap, BTreeSet};

/// Package (`name vX`) → its features in the build of `args`.
fn features(args: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
    let out = crate::cargo()
        .current_dir(crate::root())
        .args(["tree", "--locked", "--offline", "--target", "x86_64-unknown-linux-gnu", "--prefix", "none"])
        .args(["-f", "{p}|{f}"])
        .args(args)
        .output()
        .expect("cargo tree runs");
    assert!(out.status.success(), "cargo tree {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let mut found: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((package, features)) = line.trim_end_matches(" (*)").split_once('|') else { continue };
        // Workspace members are built per selection (shared without the vector index first).
        if package.contains("(/") {
            continue;
        }
        let package = package.trim_end_matches(" (proc-macro)").to_owned();
        found.entry(package).or_default().extend(features.split(',').filter(|f| !f.is_empty()).map(str::to_owned));
    }
    found
}

// Given the test suite's build, then the light xtask alone (the alias), with the demo's first
// functions, with its rest, with the door's, and xtask with its tools each give every crate they
// share with it the same features: nothing the demo built is built again by the next step or by
// the tests.
#[test]
fn first_builds_build_what_the_tests_reuse() {
    let tests = features(&["--workspace", "-e", "normal,build,dev"]);
    let light = ["-p", "xtask", "--no-default-features", "-e", "normal,build"];
    // As `build_functions` builds them.
    let with = |names: &[&str]| -> Vec<String> {
        let packages = names.iter().flat_map(|f| ["-p".to_owned(), (*f).to_owned()]);
        light.iter().map(|a| (*a).to_owned()).chain(crate::edge_features(names)).chain(packages).collect()
    };
    let selections: [Vec<String>; 5] = [
        with(&[]),
        with(&crate::demo::FIRST),
        with(&crate::demo::REST),
        with(&crate::serve::SERVED),
        ["-p", "xtask", "-e", "normal,build"].map(String::from).to_vec(),
    ];
    let mut drift = Vec::new();
    for args in &selections {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        for (package, have) in features(&args) {
            match tests.get(&package) {
                Some(want) if want != &have => drift.push(format!(
                    "{package}: lacks {:?}, adds {:?} (cargo {})",
                    want.difference(&have).collect::<Vec<_>>(),
                    have.difference(want).collect::<Vec<_>>(),
                    args.join(" ")
                )),
                Some(_) => {}
                None => drift.push(format!("{package}: not in the test suite's build (cargo {})", args.join(" "))),
            }
        }
    }
    assert!(drift.is_empty(), "pin these in xtask/Cargo.toml:\n{}", drift.join("\n"));
}
