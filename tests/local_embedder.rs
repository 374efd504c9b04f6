//! The bundled embedder (multilingual-e5-small in process) behind index-activity and
//! rag-search: semantic retrieval with no key and no network, one vector space per model, and
//! a missing model degrading to lexical retrieval with the way to fetch it. Needs the model
//! (`infra/fetch-model.sh`; `infra/test.sh` runs it).

use integration::embedding::EmbeddingServer;
use integration::rag::{DIMS, RagHarness};
use serde_json::{Value, json};
use std::time::Duration;

const LOCAL: (&str, &str) = ("EMBEDDING_PROVIDER", "local");

/// The activities of a JSON Lines file under the repository root.
fn activities_in(file: &str) -> Vec<Value> {
    let path = format!("{}/../{file}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .collect()
}

/// The intent dev set's activities (they start in the two weeks after the harness's now).
fn dev_activities(keep: impl Fn(&Value) -> bool) -> Vec<Value> {
    activities_in("benches/intent/activities.jsonl").into_iter().filter(|a| keep(a)).collect()
}

/// One of each kind of the dev set (the `a` copies): 70 activities.
fn one_of_each() -> Vec<Value> {
    dev_activities(|a| a["id"].as_str().unwrap().ends_with('a'))
}

/// Fails loudly without the model the harness will use (its default path, from the cache).
fn model_present() {
    let config = integration::config(&integration::model_location());
    let path = config.activities.embedding_model_path;
    assert!(path.exists(), "MISSING: the bundled model at {}; run `bash infra/fetch-model.sh`", path.display());
}

async fn index_all(h: &RagHarness, activities: &[Value]) -> Vec<Value> {
    let mut reports = Vec::new();
    for batch in activities.chunks(100) {
        let (status, r) = h.index("POST", "/activities", &Value::Array(batch.to_vec()).to_string()).await;
        assert!(status == 200 || status == 202, "{status} {r}");
        reports.push(r);
    }
    reports
}

// Given no key (the bundled model), when activities are indexed and a fuzzy intent is asked,
// then every activity is embedded, the search is hybrid and not degraded, and the intent finds
// activities that share no word with it; the embedder's calls are accounted at zero cost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_key_retrieval_is_semantic_on_the_bundled_model() {
    model_present();
    let h = RagHarness::with(None, &[LOCAL, ("INDEX_EMBED_TIMEOUT_MS", "600000")]).await;
    for r in index_all(&h, &one_of_each()).await {
        assert!(r.get("pendingReason").is_none(), "every activity embedded: {r}");
        assert!(r["indexed"].as_array().unwrap().iter().all(|i| i["embedding"] == "embedded"), "{r}");
    }
    let (ids, r) = h.search_ids(json!({"semanticQuery": "玩水", "limit": 5})).await;
    assert_eq!((r["strategy"].as_str(), r["degraded"].as_bool()), (Some("hybrid"), Some(false)), "{r}");
    let water = ["冲浪", "桨板", "游泳", "漂流", "浮潜", "温泉"];
    let titles: Vec<&str> =
        r["results"].as_array().unwrap().iter().map(|x| x["activity"]["title"].as_str().unwrap()).collect();
    assert!(water.iter().any(|w| titles[0].contains(w)), "玩水 → {titles:?} ({ids:?})");
    assert!(titles.iter().filter(|t| water.iter().any(|w| t.contains(w))).count() >= 3, "{titles:?}");
    let similarity = r["results"][0]["similarity"].as_f64().unwrap();
    assert!(similarity > 0.8 && similarity <= 1.0, "e5 cosine {similarity}");

    let costs = h.costs().await;
    let local: Vec<_> = costs.iter().filter(|c| c.provider == "local").collect();
    assert!(!local.is_empty() && local.iter().all(|c| c.model == "multilingual-e5-small"), "{costs:?}");
    assert!(local.iter().all(|c| c.cost_usd == 0.0 && c.input_tokens > 0), "{local:?}");
}

// Given a collection built with the bundled model, when the bundle is reopened with the API
// embedder, then searches and writes fail with an error naming both models and the way out,
// and nothing is written; reopened with the bundled model again, everything is still there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collection_answers_only_with_the_model_that_built_it() {
    model_present();
    let few: Vec<Value> = one_of_each().into_iter().take(6).collect();
    let h = RagHarness::with(None, &[LOCAL]).await;
    index_all(&h, &few).await;
    let RagHarness { dir, .. } = h;

    let api = EmbeddingServer::start(DIMS, Duration::ZERO).await;
    let h = RagHarness::in_dir(dir, Some(api), &[]).await;
    let (status, r) = h.search(json!({"semanticQuery": "玩水"})).await;
    assert_eq!((status, r["error"]["code"].as_str()), (500, Some("misconfigured")), "{r}");
    assert!(!r.to_string().contains("QDRANT_COLLECTION"), "the caller is not told the settings: {r}");
    // What the operator's log says (the same error, logged with the request id).
    let message = h.rag.retrieval.index().ensure().await.unwrap_err().to_string();
    for needle in ["local-multilingual-e5-small-384", "zhipu-embedding-3-9", "QDRANT_COLLECTION", "backfill"] {
        assert!(message.contains(needle), "{needle} in {message}");
    }
    let (status, _) = h.index("POST", "/activities", &json!([few[0]]).to_string()).await;
    assert_eq!(status, 500);
    assert_eq!(h.embedding.as_ref().unwrap().calls(), 0, "the API embedder is never asked");
    let RagHarness { dir, .. } = h;

    let h = RagHarness::in_dir(dir, None, &[LOCAL]).await;
    let (_, r) = h.search_ids(json!({"semanticQuery": "玩水"})).await;
    assert_eq!((r["candidates"].as_u64(), r["strategy"].as_str()), (Some(6), Some("hybrid")), "{r}");
}

// Given the bundled model's file is missing, then writes are pending (202) and searches are
// lexical, both saying where the model comes from; never an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_model_degrades_to_lexical_and_says_how_to_fetch_it() {
    let h = RagHarness::with(None, &[LOCAL, ("EMBEDDING_MODEL_PATH", "/nonexistent/e5-small-q4.bin")]).await;
    let few: Vec<Value> = one_of_each().into_iter().take(6).collect();
    let r = index_all(&h, &few).await.remove(0);
    assert!(r["pendingReason"].as_str().unwrap().contains("infra/fetch-model.sh"), "{r}");
    let (_, r) = h.search_ids(json!({"semanticQuery": "冲浪"})).await;
    assert_eq!((r["strategy"].as_str(), r["degraded"].as_bool()), (Some("lexical"), Some(true)), "{r}");
    assert!(r["degradedReason"].as_str().unwrap().contains("/nonexistent/e5-small-q4.bin"), "{r}");
}

// Given an API embedder with the wish facets read beside it and the bundled model's file
// missing, when activities are indexed, then each is written with its API vector but stays
// pending, saying the facets could not be read (the backfill reads them again); a search still
// ranks by meaning, not degraded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn activities_whose_facets_cannot_be_read_stay_pending_and_are_still_found() {
    let api = EmbeddingServer::start(DIMS, Duration::ZERO).await;
    let env = [("WISH_FACETS", "bundled"), ("EMBEDDING_MODEL_PATH", "/nonexistent/e5-small-q4.bin")];
    let h = RagHarness::with(Some(api), &env).await;
    let few: Vec<Value> = one_of_each().into_iter().take(6).collect();
    let r = index_all(&h, &few).await.remove(0);
    assert!(r["pendingReason"].as_str().unwrap().contains("wish facets"), "{r}");
    assert!(r["indexed"].as_array().unwrap().iter().all(|i| i["embedding"] == "pending"), "{r}");
    assert_eq!(h.embedding.as_ref().unwrap().inputs(), 6, "the API embedded each activity once");
    let (ids, r) = h.search_ids(json!({"semanticQuery": "安静 发呆", "limit": 3})).await;
    assert_eq!((r["strategy"].as_str(), r["degraded"].as_bool()), (Some("hybrid"), Some(false)), "{r}");
    assert!(!ids.is_empty(), "{r}");
}

// Given a long batch on the bundled model, when its caller gives up (the cancel flag is set a
// tenth of the way in), then the embedding stops between encoder layers: it returns nothing,
// long before the batch would have finished, instead of burning the CPU for nobody.
#[test]
fn a_cancelled_embedding_stops_between_layers() {
    use std::sync::atomic::{AtomicBool, Ordering};
    model_present();
    let config = integration::config(&integration::model_location());
    let model = e5::E5Model::load(&config.activities.embedding_model_path).unwrap();
    let text = "周末在城市公园里举办的户外音乐节，适合和朋友一起参加，有乐队演出和市集。".repeat(8);
    let texts: Vec<&str> = (0..12).map(|_| text.as_str()).collect();
    let started = std::time::Instant::now();
    let (vectors, _) = e5::embed_parallel(&model, &texts, false, 1);
    let whole = started.elapsed();
    assert_eq!(vectors.len(), texts.len());
    let cancel = AtomicBool::new(false);
    let started = std::time::Instant::now();
    let cut = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(whole / 10);
            cancel.store(true, Ordering::Relaxed);
        });
        e5::embed_parallel_until(&model, &texts, false, 1, &cancel)
    });
    let stopped = started.elapsed();
    assert!(cut.is_none(), "a cancelled embedding returns nothing");
    assert!(stopped < whole / 2, "stopped after {stopped:?}; the whole batch takes {whole:?}");
}

// The assistant's intent without a model call: the words head decides what it is sure of
// (no embedding), the meaning head the rest on the bundled model; a mode the client passed wins.
// Prints the figures (`cargo xtask quality --intent` measures quality and the warm p50).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_assistants_intent_is_local_and_fast_on_the_bundled_model() {
    use shared::assistant::intent::head::Heads;
    use shared::assistant::intent::{By, Classifier, Mode, SURE};
    model_present();
    let h = RagHarness::with(None, &[LOCAL]).await;
    let classifier = Classifier::new(h.rag.retrieval.embedding().clone());
    let messages = [
        "今天好累啊",
        "帮我弄个桌游局，六个人",
        "想找个一起学画画的人",
        "我那个周六的活动几点来着",
        "晚上想出去放松放松",
        "想动一动",
        "帮我看看",
        "それってどういう意味？",
    ];
    let (mut sure, mut unsure) = (0, 0);
    let mut took = Vec::new();
    for _ in 0..4 {
        for m in messages {
            let started = std::time::Instant::now();
            let (mode, by) = classifier.classify(m, None, None, "intent-1").await;
            took.push(started.elapsed());
            let words = Heads::shipped().words(m, None);
            let top = words.iter().copied().fold(f32::MIN, f32::max);
            if top >= SURE {
                sure += 1;
                assert_eq!(by, By::Classifier, "{m}: the words head is sure ({words:?})");
                assert_eq!(words[mode.index()], top, "{m}: its best mode");
            } else {
                unsure += 1;
                assert_eq!(by, By::Embedding, "{m}: the words head is unsure ({words:?}): the meaning head decides");
            }
        }
    }
    assert!(sure > 0 && unsure > 0, "both heads decided some: {sure} sure, {unsure} unsure");
    let (mode, by) = classifier.classify("今天好累啊", None, Some(Mode::Manage), "intent-2").await;
    assert_eq!((mode, by), (Mode::Manage, By::Client), "the client's mode wins");
    took.sort();
    let p50 = took[took.len() / 2];
    println!(
        "intent on the bundled model: p50 {p50:?}, max {:?} ({sure} by the words head, {unsure} by the meaning head)",
        took[took.len() - 1]
    );
    assert!(p50 < Duration::from_millis(100), "a message's intent takes {p50:?}");
}

// Seed 004's four example wishes (issue 52), asked around People's Square over the 240 sample
// activities of `cargo xtask demo` and `serve`: each goes to EXPLORE (the assistant's router, with no 推荐/找 in it) and finds
// the activity the seed means in its first five; the socially anxious are not sent to games
// that make strangers talk (密室逃脱组队, 狼人杀周末场).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seeds_wishes_go_to_explore_and_find_their_activity_in_the_sample_data() {
    use shared::assistant::intent::{Classifier, Mode};
    model_present();
    let h = RagHarness::with(None, &[LOCAL, ("INDEX_EMBED_TIMEOUT_MS", "600000")]).await;
    for r in index_all(&h, &activities_in("infra/sample/activities.jsonl")).await {
        assert!(r.get("pendingReason").is_none(), "every activity embedded: {r}");
    }
    let router = Classifier::new(h.rag.retrieval.embedding().clone());
    let near = json!({"location": {"lat": 31.2304, "lng": 121.4737, "radiusInKm": 30}});
    let mut missed = Vec::new();
    for (wish, meant) in [
        ("压力大想发呆", "白噪音读书局"),
        ("轻松的小局", "新手桌游小局"),
        ("适合社恐的活动", "社恐友好咖啡手冲课"),
        ("周五晚上热闹的地方", "周五大排档啤酒局"),
    ] {
        let (mode, by) = router.classify(wish, None, None, "seed-wish").await;
        let (_, r) = h.search_ids(json!({"semanticQuery": wish, "filters": near, "limit": 5})).await;
        let titles: Vec<&str> =
            r["results"].as_array().unwrap().iter().map(|x| x["activity"]["title"].as_str().unwrap()).collect();
        eprintln!("{wish}: {mode:?} by {by:?}; {titles:?}");
        if mode != Mode::Explore {
            missed.push(format!("{wish} routed to {mode:?} by {by:?}"));
        }
        if !titles.iter().any(|t| t.starts_with(meant)) {
            missed.push(format!("{wish} does not find {meant} in {titles:?}"));
        }
        if wish == "适合社恐的活动" {
            let loud: Vec<&&str> =
                titles.iter().filter(|t| t.starts_with("密室逃脱组队") || t.starts_with("狼人杀周末场")).collect();
            if !loud.is_empty() {
                missed.push(format!("{wish} recommends games with strangers: {loud:?}"));
            }
        }
    }
    assert!(missed.is_empty(), "{missed:#?}");
}

/// The ids a wish ranks first, and the facets ranking reads of each result.
async fn wish_ranking(h: &RagHarness, wish: &str) -> (Vec<String>, Vec<Option<Vec<f32>>>) {
    let (ids, r) = h.search_ids(json!({"semanticQuery": wish, "limit": 10})).await;
    assert_eq!(r["degraded"].as_bool(), Some(false), "{r}");
    let points: Vec<_> = ids.iter().map(|id| shared::activities::index::point_id(id)).collect();
    let stored = h.rag.retrieval.index().get(&points, true).await.unwrap();
    // Beside an API embedder they are stored; where e5 ranks, read from its dense vector.
    let facets = |s: &shared::activities::index::Stored| {
        shared::activities::facets::stored(&s.payload).or_else(|| match h.rag.retrieval.facets().describe() {
            "read from the ranking embedder's vectors (bundled e5)" => {
                shared::activities::wish::Wishes::shipped().has(s.dense.as_deref()?)
            }
            _ => None,
        })
    };
    (ids, stored.iter().map(facets).collect())
}

const WISHES: [&str; 4] = ["压力大想发呆", "适合社恐的活动", "周五晚上热闹的地方", "想出出汗但别太累"];

// Given the bundled e5 served as an OpenAI-compatible API under an orthogonal map of its
// vectors (the same cosines in another space, where heads fitted on e5's coordinates read
// nonsense), when activities are indexed and wishes asked through the API path with the facets
// read by the bundled e5 beside it, then every wish ranks as it does with e5 in process, and
// ranking reads the same facets of each activity (stored at indexing there, read from the
// dense vector here); without the facets beside it, none are read and the ranking differs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wish_facets_rank_alike_whatever_space_the_embedder_works_in() {
    model_present();
    let activities = one_of_each();
    let bundled = RagHarness::with(None, &[LOCAL, ("INDEX_EMBED_TIMEOUT_MS", "600000")]).await;
    index_all(&bundled, &activities).await;
    let model = bundled.config.activities.embedding_model_path.clone();
    let api = |facets: &'static str| {
        let (model, activities) = (model.clone(), activities.clone());
        async move {
            let server = EmbeddingServer::turned_e5(&model).await;
            let env = [
                ("EMBEDDING_DIMENSIONS", "384"),
                ("EMBEDDING_VIEWS", "2"),
                ("RAG_MIN_SIMILARITY", "0.8"),
                ("WISH_FACETS", facets),
                ("INDEX_EMBED_TIMEOUT_MS", "600000"),
            ];
            let h = RagHarness::with(Some(server), &env).await;
            index_all(&h, &activities).await;
            h
        }
    };
    let (beside, without) = (api("bundled").await, api("off").await);
    assert_eq!(beside.rag.retrieval.facets().describe(), "read by the bundled e5 beside the API embedder");
    let mut differs = 0;
    for wish in WISHES {
        let (in_process, facets) = wish_ranking(&bundled, wish).await;
        let (through_api, api_facets) = wish_ranking(&beside, wish).await;
        assert_eq!(through_api, in_process, "{wish}: the API path ranks as the bundled one");
        for (a, b) in facets.iter().zip(&api_facets) {
            let (a, b) =
                (a.as_ref().expect("facets of the e5 vector"), b.as_ref().expect("facets stored via the API path"));
            assert!(a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-3), "{wish}: {a:?} vs {b:?}");
        }
        let (alone, none) = wish_ranking(&without, wish).await;
        assert!(none.iter().all(Option::is_none), "WISH_FACETS=off reads none");
        differs += usize::from(alone != in_process);
    }
    assert!(differs > 0, "the facets change how some wish ranks");
    let costs = beside.costs().await;
    assert!(costs.iter().any(|c| c.provider == "local" && c.agent == "rag"), "the e5 beside is accounted: {costs:?}");
}
