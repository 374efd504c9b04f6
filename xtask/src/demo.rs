//! `cargo xtask demo`: the search function, run as Lambda runs it, with no keys and no cloud.

use serde_json::{Value, json};

use crate::runtime_api::RuntimeApi;
use crate::{Result, api_event, build_function, fixture, sample_upstream};

pub async fn run() -> Result {
    let binary = build_function("search", false)?;
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
    let binary = build_function("cost-report", false)?;
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
    let binary = build_function("research", false)?;
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
