//! The research node (`POST /research`) with the Codex CLI provider against fake `codex`
//! executables, and with the search provider chain; topic history on both record stores.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use integration::{Harness, Setup, StoreKind, on_both_stores, perplexity};
use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, ResponseTemplate};

/// A fake `codex` in `dir`: a shell script with `body`, which also records its argv
/// (one argument per line, NUL-separated) in `dir/argv`.
fn fake_codex(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("codex");
    let argv = dir.join("argv");
    let script = format!("#!/bin/sh\nprintf '%s\\0' \"$@\" > '{}'\n{body}\n", argv.display());
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn argv(dir: &Path) -> Vec<String> {
    let raw = std::fs::read(dir.join("argv")).unwrap();
    raw.split(|b| *b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect()
}

const NEWS: &str = r#"{"query": "今日のAIニュース", "results": [
  {"title": "OpenAI、GPT-4 Turboを発表", "content": "128K context", "source": "https://openai.example.com/blog"},
  {"title": "Google、Gemini Proを一般公開", "summary": "multimodal", "url": "https://blog.example.com/gemini"},
  {"title": "Anthropic、Claude 2.1をリリース", "content": "200K context"}
], "summary": "三社が新モデルを発表"}"#;

async fn codex_harness(kind: StoreKind, codex: &Path, extra: &[(&'static str, &'static str)]) -> Harness {
    let command: &'static str = Box::leak(codex.display().to_string().into_boxed_str());
    let mut env = vec![("RESEARCH_PROVIDER", "codex"), ("CODEX_COMMAND", command), ("CODEX_RETRY_BASE_MS", "10")];
    env.extend_from_slice(extra);
    let env: &'static [(&'static str, &'static str)] = Box::leak(env.into_boxed_slice());
    Harness::with(kind, Setup { env, ..Setup::default() }).await
}

fn ai_news(pipeline: &str) -> Value {
    json!({"pipelineId": pipeline, "config": {"defaultTheme": "今日のAIニュース", "defaultKeywords": ["AI", "LLM"], "topicCount": 3}})
}

// Given a CLI printing seed 001's JSON, then the node returns ResearchData with metadata, the
// prompt reached the CLI as one argv element, and the topics join the history; the next run
// excludes them in the prompt and drops them from the results.
async fn codex_json_output_becomes_research_data_and_history(kind: StoreKind) {
    let dir = tempfile::tempdir().unwrap();
    let codex = fake_codex(dir.path(), &format!("cat <<'JSON'\n{NEWS}\nJSON"));
    let h = codex_harness(kind, &codex, &[]).await;
    let (status, r) = h.post("/research", ai_news("news")).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!((r["provider"].as_str(), r["parsedAs"].as_str()), (Some("codex"), Some("json")));
    assert_eq!(r["query"], "今日のAIニュース");
    assert_eq!(r["results"].as_array().unwrap().len(), 3);
    assert_eq!(
        r["results"][1],
        json!({"title": "Google、Gemini Proを一般公開", "content": "multimodal", "source": "https://blog.example.com/gemini"})
    );
    assert_eq!(r["summary"], "三社が新モデルを発表");
    // The results' sources are stored under the request id.
    assert_eq!(r["sourcesStored"], true);
    let (_, stored) = h.send("GET", &format!("/sources/{}", r["requestId"].as_str().unwrap()), "").await;
    let stored: Vec<_> = stored["sources"].as_array().unwrap().iter().map(|s| s["url"].clone()).collect();
    let cited: Vec<_> = r["results"].as_array().unwrap().iter().filter_map(|x| x.get("source").cloned()).collect();
    assert!(!cited.is_empty());
    assert_eq!(stored, cited);
    assert_eq!(
        (r["metadata"]["uniqueTopicCount"].as_u64(), r["metadata"]["duplicatesFiltered"].as_u64()),
        (Some(3), Some(0))
    );
    assert!(r["metadata"]["timestamp"].as_str().unwrap().ends_with('Z'));
    let args = argv(dir.path());
    assert_eq!(args.len(), 3, "--search, the separator and the prompt: {args:?}");
    assert_eq!((args[0].as_str(), args[1].as_str()), ("--search", "--"));
    assert!(args[2].starts_with("以下のテーマについて最新の情報をリサーチしてください：\n\nテーマ: 今日のAIニュース"));
    assert!(!args[2].contains("除外すべきトピック"));

    // The same CLI answer the next day: every topic is a duplicate of yesterday's.
    h.clock.advance(chrono::Duration::days(1));
    let (_, r) = h.post("/research", ai_news("news")).await;
    assert_eq!(r["results"], json!([]));
    assert_eq!(r["metadata"]["duplicatesFiltered"], 3);
    let prompt = &argv(dir.path())[2];
    assert!(prompt.contains("【除外すべきトピック】\n以下のトピックは過去7日間で既に扱っているため、避けてください：\n- OpenAI、GPT-4 Turboを発表"), "{prompt}");
    // Another pipeline has its own history.
    let (_, r) = h.post("/research", ai_news("other")).await;
    assert_eq!(r["metadata"]["duplicatesFiltered"], 0);
}

/// `POST /research` with `body`, signed by another team's role (another IAM principal).
async fn as_other_team(h: &Harness, body: &Value) -> (u16, Value) {
    let iam = json!({"iam": {"accountId": "123456789012", "callerId": "AROAOTHER:x",
                             "userArn": "arn:aws:sts::123456789012:assumed-role/other-team/x"}});
    let req = integration::with_authorizer(integration::request("POST", "/research", &body.to_string()), iam);
    let (status, _, r) = h.exchange_as(req, None).await;
    (status, r)
}

// Given caller A's pipeline "news" with history, then caller B's run of a pipeline with the same
// id neither sees A's topics (no exclusion block, nothing filtered) nor adds to A's history;
// A's next session (another session name of the same role) still sees its own.
async fn a_pipeline_belongs_to_its_caller(kind: StoreKind) {
    let dir = tempfile::tempdir().unwrap();
    let codex = fake_codex(dir.path(), &format!("cat <<'JSON'\n{NEWS}\nJSON"));
    let h = codex_harness(kind, &codex, &[]).await;
    let (status, r) = h.post("/research", ai_news("news")).await;
    assert_eq!((status, r["metadata"]["uniqueTopicCount"].as_u64()), (200, Some(3)), "{r}");

    let (status, r) = as_other_team(&h, &ai_news("news")).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["metadata"]["duplicatesFiltered"], 0, "B does not see A's topics: {r}");
    assert!(!argv(dir.path())[2].contains("除外すべきトピック"), "nothing of A's reaches B's prompt");

    let (_, r) = h.post("/research", ai_news("news")).await;
    assert_eq!(r["metadata"]["duplicatesFiltered"], 3, "A still sees its own history: {r}");
}

// Given a pipeline with far more history than a prompt should carry (60 runs of 20 long
// titles), then a run reads a bounded number of rows, the exclusion block stops at its cap with
// the newest titles kept, and every title recorded is cut to its cap.
async fn the_exclusion_block_stops_at_its_cap(kind: StoreKind) {
    use shared::pipeline::prompt::MAX_EXCLUSION_CHARS;
    use shared::pipeline::topics::{self, MAX_TITLE_CHARS};
    let dir = tempfile::tempdir().unwrap();
    let codex = fake_codex(dir.path(), &format!("cat <<'JSON'\n{NEWS}\nJSON"));
    let h = codex_harness(kind, &codex, &[]).await;
    let owner = "123456789012:role/activity-backend";
    for run in 0..60 {
        let titles: Vec<String> = (0..25).map(|i| format!("run {run:02} title {i:02} {}", "長".repeat(300))).collect();
        let at = shared::core::clock::Clock::now(&*h.clock) - chrono::Duration::minutes(60 - run);
        topics::save(&*h.records, owner, "big", &format!("r{run:02}"), &titles, 30, at).await.unwrap();
    }
    let (status, r) = h.post("/research", ai_news("big")).await;
    assert_eq!(status, 200, "{r}");
    let prompt = &argv(dir.path())[2];
    let block = &prompt[prompt.find("【除外すべきトピック】").expect("an exclusion block")..];
    assert!(block.chars().count() <= MAX_EXCLUSION_CHARS + 200, "{} characters", block.chars().count());
    assert!(block.contains("run 59 title 00"), "the newest run is kept");
    assert!(!block.contains("run 00 title"), "the oldest are dropped first");
    assert!(!block.contains("title 20"), "at most 20 titles a run are recorded");
    let longest = block.lines().map(|l| l.chars().count()).max().unwrap();
    assert!(longest <= MAX_TITLE_CHARS + 2, "a title is cut to its cap: {longest}");
}

// Given history older than duplicateCheckDays, it is not excluded; older than maxHistoryDays,
// it is gone (TTL), even before the store deletes it.
async fn topic_history_honours_the_check_window_and_retention(kind: StoreKind) {
    let dir = tempfile::tempdir().unwrap();
    let codex = fake_codex(dir.path(), &format!("cat <<'JSON'\n{NEWS}\nJSON"));
    let h = codex_harness(kind, &codex, &[]).await;
    let body = json!({"pipelineId": "p", "config": {"duplicateCheckDays": 2, "maxHistoryDays": 5}});
    h.post("/research", body.clone()).await;
    h.clock.advance(chrono::Duration::days(3));
    let (_, r) = h.post("/research", body.clone()).await;
    assert_eq!(r["metadata"]["duplicatesFiltered"], 0, "outside the 2-day window");
    let longer = json!({"pipelineId": "p", "config": {"duplicateCheckDays": 30, "maxHistoryDays": 5}});
    h.clock.advance(chrono::Duration::days(4));
    let (_, r) = h.post("/research", longer.clone()).await;
    assert_eq!(r["metadata"]["duplicatesFiltered"], 3, "day 3's entry is 4 days old: kept");
    h.clock.advance(chrono::Duration::days(6));
    let (_, r) = h.post("/research", longer).await;
    assert_eq!(r["metadata"]["duplicatesFiltered"], 0, "entries past maxHistoryDays have expired");
}

// Given the text format, garbage, or a failing-then-succeeding CLI, then text is parsed,
// garbage becomes labelled placeholders, and a non-zero exit is retried.
async fn codex_text_garbage_and_retried_failures(kind: StoreKind) {
    let dir = tempfile::tempdir().unwrap();
    let codex = fake_codex(
        dir.path(),
        "printf 'Title: 結果1\\n結果1の内容\\nSource: https://example.com/1\\n\\n## 結果2\\n結果2の内容\\n'",
    );
    let h = codex_harness(kind, &codex, &[]).await;
    let (_, r) = h.post("/research", json!({"config": {"enableDuplicateCheck": false}})).await;
    assert_eq!(r["parsedAs"], "text");
    assert_eq!(r["results"][0], json!({"title": "結果1", "content": "結果1の内容", "source": "https://example.com/1"}));
    assert_eq!(r["results"][1]["title"], "結果2");

    let codex = fake_codex(dir.path(), "printf '\\001\\002 not json, no titles \\377'");
    let h = codex_harness(kind, &codex, &[]).await;
    let (status, r) = h.post("/research", json!({})).await;
    assert_eq!(status, 200);
    assert_eq!(r["parsedAs"], "placeholder");
    assert_eq!(r["results"][0]["title"], "プレースホルダー情報1");

    let counter = dir.path().join("count");
    let body = format!(
        "n=$(cat '{c}' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '{c}'\nif [ $n -lt 3 ]; then echo 'transient failure' >&2; exit 7; fi\ncat <<'JSON'\n{NEWS}\nJSON",
        c = counter.display()
    );
    let codex = fake_codex(dir.path(), &body);
    let h = codex_harness(kind, &codex, &[]).await;
    let (status, r) = h.post("/research", json!({})).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["parsedAs"], "json");
    assert_eq!(std::fs::read_to_string(&counter).unwrap().trim(), "3", "two failures, then success");
}

// Given a CLI that always fails, or sleeps past the timeout, then after 1 + 3 attempts the
// pipeline stops with a JSON error that keeps the CLI's stderr and path to the log, and a
// sleeping CLI is killed.
async fn codex_exhausted_retries_and_timeouts_stop_the_pipeline(kind: StoreKind) {
    let dir = tempfile::tempdir().unwrap();
    let counter = dir.path().join("count");
    let codex =
        fake_codex(dir.path(), &format!("echo x >> '{}'; echo 'model overloaded' >&2; exit 2", counter.display()));
    let h = codex_harness(kind, &codex, &[]).await;
    let (status, r) = h.post("/research", json!({})).await;
    assert_eq!((status, r["error"]["code"].as_str()), (502, Some("cli_failed")));
    let message = r["error"]["message"].as_str().unwrap();
    assert!(
        !message.contains("model overloaded") && message.contains("request"),
        "the CLI's stderr stays in the log: {message}"
    );
    assert_eq!(std::fs::read_to_string(&counter).unwrap().lines().count(), 4);

    let pids = dir.path().join("pids");
    let codex = fake_codex(dir.path(), &format!("echo $$ >> '{}'\nexec sleep 30", pids.display()));
    let h = codex_harness(kind, &codex, &[("CODEX_TIMEOUT_SECS", "1")]).await;
    let started = Instant::now();
    let (status, r) = h.post("/research", json!({})).await;
    assert_eq!((status, r["error"]["code"].as_str()), (502, Some("cli_failed")));
    assert!(!r["error"]["message"].as_str().unwrap().contains(&codex.display().to_string()), "{r}");
    assert!(started.elapsed() < Duration::from_secs(20));
    tokio::time::sleep(Duration::from_millis(200)).await;
    for pid in std::fs::read_to_string(&pids).unwrap().lines() {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(stat.is_empty() || stat.contains(") Z "), "CLI {pid} still running: {stat}");
    }
}

// Seed 001's 10 minutes bound the whole node, attempts and waits (RESEARCH_NODE_TIMEOUT_SECS,
// 2 s here): a CLI that keeps failing is not retried when the wait would pass the bound (its
// failure, 502, at once), and one still running at the bound is killed with its process group
// (504 research_timeout).
async fn the_whole_node_ends_by_its_bound(kind: StoreKind) {
    let dir = tempfile::tempdir().unwrap();
    let counter = dir.path().join("count");
    let codex = fake_codex(dir.path(), &format!("echo x >> '{}'; exit 2", counter.display()));
    // Attempts at 0, 1, 3 and 7 s without the bound.
    let bound = [("CODEX_RETRY_BASE_MS", "1000"), ("RESEARCH_NODE_TIMEOUT_SECS", "2")];
    let h = codex_harness(kind, &codex, &bound).await;
    let started = Instant::now();
    let (status, r) = h.post("/research", json!({})).await;
    assert_eq!((status, r["error"]["code"].as_str()), (502, Some("cli_failed")), "{r}");
    assert!(started.elapsed() < Duration::from_secs(2), "ended in {:?}", started.elapsed());
    assert_eq!(std::fs::read_to_string(&counter).unwrap().lines().count(), 2, "the attempts at 0 and 1 s only");

    let pids = dir.path().join("pids");
    let codex = fake_codex(dir.path(), &format!("sleep 30 &\necho $! >> '{}'\nsleep 30", pids.display()));
    let h = codex_harness(kind, &codex, &[("CODEX_TIMEOUT_SECS", "30"), ("RESEARCH_NODE_TIMEOUT_SECS", "2")]).await;
    let started = Instant::now();
    let (status, r) = h.post("/research", json!({})).await;
    assert_eq!((status, r["error"]["code"].as_str()), (504, Some("research_timeout")), "{r}");
    assert!(started.elapsed() < Duration::from_millis(3500), "ended in {:?}", started.elapsed());
    tokio::time::sleep(Duration::from_millis(300)).await;
    for pid in std::fs::read_to_string(&pids).unwrap().lines() {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(stat.is_empty() || stat.contains(") Z "), "the CLI's helper {pid} still running: {stat}");
    }
}

// Given no CLI at the configured path, then the node stops at once with a clear error that
// names no path (the operator's log does).
async fn a_missing_codex_binary_stops_at_once(kind: StoreKind) {
    let h = codex_harness(kind, Path::new("/nonexistent/bin/codex"), &[("CODEX_RETRY_BASE_MS", "3000")]).await;
    let started = Instant::now();
    let (status, r) = h.post("/research", json!({})).await;
    assert_eq!((status, r["error"]["code"].as_str()), (500, Some("cli_not_found")));
    let message = r["error"]["message"].as_str().unwrap();
    assert!(
        !message.contains("/nonexistent/bin/codex") && message.contains("log"),
        "the path stays in the log: {message}"
    );
    assert!(started.elapsed() < Duration::from_secs(2), "no retry");
}

// Given a prompt full of shell metacharacters, then it reaches the CLI byte for byte.
async fn a_prompt_with_shell_metacharacters_arrives_intact(kind: StoreKind) {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("pwned");
    let codex = fake_codex(dir.path(), &format!("cat <<'JSON'\n{NEWS}\nJSON"));
    let h = codex_harness(kind, &codex, &[]).await;
    let prompt = format!(
        "調べて; touch {m} && echo $(touch {m}) `touch {m}` | rm -rf ~ > /dev/null 'q' \"dq\" \\ * ?",
        m = marker.display()
    );
    let (status, _) = h.post("/research", json!({"prompts": {"researchPrompt": prompt}})).await;
    assert_eq!(status, 200);
    assert_eq!(argv(dir.path()), vec!["--search".to_string(), "--".into(), prompt]);
    assert!(!marker.exists(), "the prompt was interpreted by a shell");
}

// Given a prompt that looks like a flag, then it arrives after `--` (CODEX_PROMPT_SEPARATOR),
// and right after the arguments with CODEX_PROMPT_SEPARATOR=none.
async fn a_prompt_is_never_read_as_a_flag(kind: StoreKind) {
    let dir = tempfile::tempdir().unwrap();
    let codex = fake_codex(dir.path(), &format!("cat <<'JSON'\n{NEWS}\nJSON"));
    let body = json!({"prompts": {"researchPrompt": "--help"}});
    let (status, _) = codex_harness(kind, &codex, &[]).await.post("/research", body.clone()).await;
    assert_eq!(status, 200);
    assert_eq!(argv(dir.path()), ["--search", "--", "--help"]);
    let (status, _) =
        codex_harness(kind, &codex, &[("CODEX_PROMPT_SEPARATOR", "none")]).await.post("/research", body).await;
    assert_eq!(status, 200);
    assert_eq!(argv(dir.path()), ["--search", "--help"]);
}

// Given a CLI that starts a helper and sleeps past the timeout, then its whole process group
// is killed: no helper lives on.
async fn a_timeout_kills_the_clis_helpers_too(kind: StoreKind) {
    let dir = tempfile::tempdir().unwrap();
    let helpers = dir.path().join("helpers");
    let codex = fake_codex(dir.path(), &format!("sleep 30 &\necho $! >> '{}'\nsleep 30", helpers.display()));
    let h = codex_harness(kind, &codex, &[("CODEX_TIMEOUT_SECS", "1")]).await;
    let (status, r) = h.post("/research", json!({})).await;
    assert_eq!((status, r["error"]["code"].as_str()), (502, Some("cli_failed")));
    assert!(r["error"]["message"].as_str().unwrap().contains("timed out"), "{r}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let pids = std::fs::read_to_string(&helpers).unwrap();
    assert_eq!(pids.lines().count(), 4, "1 + 3 attempts");
    for pid in pids.lines() {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(stat.is_empty() || stat.contains(") Z "), "helper {pid} still running: {stat}");
    }
}

// Given a CLI that writes more than MAX_OUTPUT, then it is stopped at once and not retried.
async fn oversized_output_is_cut_off(kind: StoreKind) {
    let dir = tempfile::tempdir().unwrap();
    let counter = dir.path().join("count");
    let codex = fake_codex(
        dir.path(),
        &format!("echo x >> '{}'\nhead -c 9000000 /dev/zero | tr '\\0' x\nsleep 30", counter.display()),
    );
    let h = codex_harness(kind, &codex, &[("CODEX_TIMEOUT_SECS", "20")]).await;
    let started = Instant::now();
    let (status, r) = h.post("/research", json!({})).await;
    assert_eq!((status, r["error"]["code"].as_str()), (502, Some("cli_failed")));
    assert!(r["error"]["message"].as_str().unwrap().contains("more than 8388608 bytes"), "{r}");
    assert_eq!(std::fs::read_to_string(&counter).unwrap().lines().count(), 1, "not retried");
    assert!(started.elapsed() < Duration::from_secs(10), "killed, not waited for");
}

// Given RESEARCH_PROVIDER=search and no keys (the embedded default), then the node answers
// with labelled mock data and does not record mock topics; with Perplexity, its JSON answer.
async fn the_search_provider_runs_the_node_through_the_chain(kind: StoreKind) {
    let h = Harness::without_key(kind).await;
    let (status, r) = h.post("/research", ai_news("demo")).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!((r["provider"].as_str(), r["mock"].as_bool()), (Some("mock"), Some(true)));
    assert_eq!(r["results"].as_array().unwrap().len(), 3);
    let (_, again) = h.post("/research", ai_news("demo")).await;
    assert_eq!(again["metadata"]["duplicatesFiltered"], 0, "mock topics are not history");

    let h = Harness::new(kind).await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(perplexity::answer(
            NEWS,
            json!([{"id": 1, "title": "Blog", "url": "https://openai.example.com/blog", "snippet": "b"}]),
            json!([]),
            perplexity::usage(900, 600, 1, None),
        )))
        .mount(h.upstream())
        .await;
    let (_, r) = h.post("/research", ai_news("live")).await;
    assert_eq!((r["provider"].as_str(), r["mock"].as_bool()), (Some("perplexity"), Some(false)));
    assert_eq!(r["results"].as_array().unwrap().len(), 3);
    let sent: Value = serde_json::from_slice(&h.upstream_calls().await[0].body).unwrap();
    assert_eq!(sent["response_format"]["type"], "json_schema");
    assert_eq!(sent["response_format"]["json_schema"]["name"], "research");
    assert!(sent["input"].as_str().unwrap().contains("テーマ: 今日のAIニュース"));
}

// Given bad template settings, then a 400 names them and nothing runs.
async fn bad_node_requests_are_refused(kind: StoreKind) {
    let dir = tempfile::tempdir().unwrap();
    let codex = fake_codex(dir.path(), "echo '{}'");
    let h = codex_harness(kind, &codex, &[]).await;
    for body in [
        json!({"config": {"promptTemplate": {"customRequirements": "one"}}}),
        json!({"config": {"promptTemplate": {"customInstructions": 5}}}),
        json!({"strategy": {"keywords": "AI"}}),
        json!({"strategy": {"keywords": (0..21).map(|i| format!("k{i}")).collect::<Vec<_>>()}}),
        json!({"config": {"promptTemplate": {"customInstructions": "x".repeat(4001)}}}),
        json!({"prompt": "typo"}),
    ] {
        let (status, r) = h.post("/research", body.clone()).await;
        assert_eq!(status, 400, "{body}: {r}");
    }
    assert!(!dir.path().join("argv").exists(), "the CLI never ran");
}

on_both_stores!(
    codex_json_output_becomes_research_data_and_history,
    a_pipeline_belongs_to_its_caller,
    the_exclusion_block_stops_at_its_cap,
    topic_history_honours_the_check_window_and_retention,
    codex_text_garbage_and_retried_failures,
    codex_exhausted_retries_and_timeouts_stop_the_pipeline,
    a_missing_codex_binary_stops_at_once,
    a_prompt_with_shell_metacharacters_arrives_intact,
    a_prompt_is_never_read_as_a_flag,
    a_timeout_kills_the_clis_helpers_too,
    the_whole_node_ends_by_its_bound,
    oversized_output_is_cut_off,
    the_search_provider_runs_the_node_through_the_chain,
    bad_node_requests_are_refused,
);

// Seed 001's log lines, each with the request id: the start, the default prompt's warning, the
// topics loaded and saved, the end; and the failure line when the CLI fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_node_logs_seed_001s_lines() {
    integration::logs::capture();
    let dir = tempfile::tempdir().unwrap();
    let codex = fake_codex(dir.path(), &format!("cat <<'JSON'\n{NEWS}\nJSON"));
    let h = codex_harness(StoreKind::Local, &codex, &[]).await;
    let body = json!({"pipelineId": "logged"}).to_string();
    let (status, _, r) = h.exchange("POST", "/research", &body, Some("node-log-1")).await;
    assert_eq!(status, 200, "{r}");
    let failing = fake_codex(dir.path(), "exit 3");
    let h = codex_harness(StoreKind::Local, &failing, &[]).await;
    let (status, _, _) = h.exchange("POST", "/research", &body, Some("node-log-2")).await;
    assert_eq!(status, 502);
    let of = |id: &str| integration::logs::lines(id).join("\n");
    let (ok, failed) = (of("node-log-1"), of("node-log-2"));
    for line in [
        "Starting Research Node",
        "No research prompt given, generating default research prompt",
        "Loaded 0 topics from the last 7 days",
        "Saved 3 topics to history",
        "Research Node completed: 3 unique results found",
    ] {
        assert!(ok.contains(line), "missing {line:?} in:\n{ok}");
    }
    assert!(failed.contains("Research Node failed: CLI exited with status Some(3)"), "{failed}");
}
