//! The sample activities (`infra/sample/activities.jsonl`, 240 in Shanghai, Beijing, Shenzhen and
//! Hangzhou), as the demo and `cargo xtask serve` index them: through the `index-activity`
//! function, as the backend calls it.

use serde_json::Value;

use crate::runtime_api::RuntimeApi;
use crate::{Result, api_event, as_backend};

/// The sample activities, moved forward by whole weeks so every one is in the future and keeps
/// its weekday and hour.
pub fn activities() -> Result<Vec<Value>> {
    let text = std::fs::read_to_string(crate::root().join("infra/sample/activities.jsonl"))?;
    let mut activities: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<std::result::Result<_, _>>()?;
    let start = |a: &Value| -> Result<chrono::DateTime<chrono::Utc>> {
        Ok(a["startAt"].as_str().ok_or("activity without startAt")?.parse()?)
    };
    let earliest =
        activities.iter().map(start).collect::<Result<Vec<_>>>()?.into_iter().min().ok_or("no activities")?;
    let behind = (chrono::Utc::now() - earliest).num_days();
    let weeks = if behind < 0 { 0 } else { behind / 7 + 1 };
    for a in &mut activities {
        let moved = start(a)? + chrono::Duration::weeks(weeks);
        a["startAt"] = moved.to_rfc3339_opts(chrono::SecondsFormat::Secs, true).into();
    }
    Ok(activities)
}

/// Indexes the sample activities through the `index-activity` function under `api`, 100 a
/// request (`POST /activities`, as the backend); those whose embedding is pending (the
/// embedder ran out of the request's time: a busy machine) are sent again, 20 a request, up to
/// three times (an unchanged activity is re-embedded only where it has no vector). `show`
/// prints each request's status. Returns how many were indexed and how many still wait for an
/// embedder (the backfill's).
pub async fn index(api: &RuntimeApi, show: bool) -> Result<(usize, usize)> {
    let activities = activities()?;
    let mut pending: Vec<Value> = post(api, &activities, 100, show).await?;
    for _ in 0..3 {
        if pending.is_empty() {
            break;
        }
        pending = post(api, &pending, 20, show).await?;
    }
    Ok((activities.len(), pending.len()))
}

/// POSTs `activities`, `per` a request; returns those indexed with their embedding pending.
async fn post(api: &RuntimeApi, activities: &[Value], per: usize, show: bool) -> Result<Vec<Value>> {
    let mut pending = Vec::new();
    for batch in activities.chunks(per) {
        let event = as_backend(api_event("POST", "/activities", Some(Value::Array(batch.to_vec())))?)?;
        let response = api.invoke(event).await.map_err(|e| format!("index-activity: {e}"))?;
        let body: Value = serde_json::from_str(response["body"].as_str().unwrap_or("null"))?;
        let indexed = body["indexed"].as_array().ok_or_else(|| format!("index-activity: {body}"))?;
        let waiting: Vec<&Value> = indexed.iter().filter(|i| i["embedding"] == "pending").map(|i| &i["id"]).collect();
        pending.extend(batch.iter().filter(|a| waiting.contains(&&a["id"])).cloned());
        if show {
            println!("POST /activities ({} activities) -> {}", batch.len(), response["statusCode"]);
            if let Some(reason) = body["pendingReason"].as_str() {
                println!("  embedding pending: {reason}");
            }
        }
    }
    Ok(pending)
}
