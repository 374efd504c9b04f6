//! Reading an Agent API response: text from `message` items' `output_text` parts, sources from
//! the `search_results` item and the parts' `url_citation` annotations, the run's status.

use serde_json::Value;

use crate::core::upstream::{ProviderError, Usage};
use crate::web::citations::SearchHit;
use crate::web::providers::Answer;
use crate::web::providers::perplexity::AGENT_MODEL;

/// Reads an Agent API response leniently: every part that parses is kept, every one that does
/// not is named in `schema_errors`. Fails when the run failed or was cancelled, or when
/// nothing usable is left.
pub fn parse_response(bytes: &[u8]) -> Result<Answer, ProviderError> {
    let v: Value =
        serde_json::from_slice(bytes).map_err(|e| ProviderError::Malformed(format!("response is not JSON: {e}")))?;
    let mut errors = Vec::new();
    let text_of =
        |pointer: &str| v.pointer(pointer).and_then(Value::as_str).map(|s| s.chars().take(300).collect::<String>());
    let incomplete = match v.get("status").and_then(Value::as_str) {
        Some("completed") => None,
        Some("incomplete") => Some(text_of("/incomplete_details/reason").unwrap_or_else(|| "unknown".to_owned())),
        Some(status) => {
            let message = text_of("/error/message").unwrap_or_else(|| "the run did not finish".to_owned());
            return Err(ProviderError::RunFailed { status: status.chars().take(40).collect(), message });
        }
        None => {
            errors.push("status is missing".to_owned());
            None
        }
    };
    let mut content = String::new();
    let mut search_results = Vec::new();
    let mut annotations = Vec::new();
    let items = match v.get("output") {
        Some(Value::Array(items)) => items.as_slice(),
        _ => {
            errors.push("output is not an array".to_owned());
            &[]
        }
    };
    for (i, item) in items.iter().enumerate() {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                for (j, part) in item.get("content").and_then(Value::as_array).into_iter().flatten().enumerate() {
                    if part.get("type").and_then(Value::as_str) != Some("output_text") {
                        continue;
                    }
                    match part.get("text").and_then(Value::as_str) {
                        Some(text) => content.push_str(text),
                        None => errors.push(format!("output[{i}].content[{j}].text is not a string")),
                    }
                    for note in part.get("annotations").and_then(Value::as_array).into_iter().flatten() {
                        if note.get("type").and_then(Value::as_str) == Some("url_citation")
                            && let Some(url) = note.get("url").and_then(Value::as_str)
                        {
                            annotations.push(SearchHit {
                                url: url.to_owned(),
                                title: string(note, "title"),
                                ..SearchHit::default()
                            });
                        }
                    }
                }
            }
            Some("search_results") => match item.get("results") {
                Some(Value::Array(results)) => {
                    for (j, r) in results.iter().enumerate() {
                        match r.get("url").and_then(Value::as_str) {
                            Some(url) => search_results.push(SearchHit {
                                url: url.to_owned(),
                                title: string(r, "title"),
                                date: string(r, "date").or_else(|| string(r, "last_updated")),
                                id: r.get("id").and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok()),
                                snippet: string(r, "snippet"),
                            }),
                            None => errors.push(format!("output[{i}].results[{j}] has no url")),
                        }
                    }
                }
                _ => errors.push(format!("output[{i}].results is not an array")),
            },
            // Other items (fetch_url_results, function_call, unknown, ...) carry no web source.
            Some(_) => {}
            None => errors.push(format!("output[{i}] has no type")),
        }
    }
    let usage = match v.get("usage") {
        Some(u) => {
            let count = |pointer: &str, name: &str, errors: &mut Vec<String>| {
                u.pointer(pointer).and_then(Value::as_u64).unwrap_or_else(|| {
                    errors.push(format!("usage.{name} is missing"));
                    0
                })
            };
            Usage {
                input_tokens: count("/input_tokens", "input_tokens", &mut errors),
                output_tokens: count("/output_tokens", "output_tokens", &mut errors),
                provider_cost_usd: u
                    .pointer("/cost/total_cost")
                    .and_then(Value::as_f64)
                    .filter(|c| c.is_finite() && *c >= 0.0),
                credits: 0,
                searches: u
                    .pointer("/tool_calls_details/search_web/invocation")
                    .and_then(Value::as_u64)
                    .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX)),
            }
        }
        None => {
            errors.push("usage is missing".to_owned());
            Usage::default()
        }
    };
    if content.trim().is_empty() && search_results.is_empty() && annotations.is_empty() {
        return Err(ProviderError::Malformed(format!("no text and no sources ({})", errors.join("; "))));
    }
    // Billed under the served model; Perplexity's own models without their `perplexity/` prefix
    // (the price table's key under the provider), a third-party model a preset picked in full.
    let served = v.get("model").and_then(Value::as_str).unwrap_or(AGENT_MODEL);
    Ok(Answer {
        model: served.strip_prefix("perplexity/").unwrap_or(served).to_owned(),
        content,
        citations: Vec::new(),
        search_results,
        annotations,
        // The Agent API returns no images.
        images: Vec::new(),
        usage,
        upstream_id: string(&v, "id"),
        schema_errors: errors,
        incomplete,
    })
}

fn string(v: &Value, field: &str) -> Option<String> {
    v.get(field).and_then(Value::as_str).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_sources_and_cost_come_from_the_output_items() {
        let body = json!({
            "id": "resp_1", "object": "response", "created_at": 1, "model": "perplexity/sonar", "status": "completed",
            "output": [
                {"type": "search_results", "queries": ["q"], "results": [
                    {"id": 3, "url": "https://a.example.com/x", "title": "A", "snippet": "s", "date": "2026-01-02"},
                    {"id": 4, "title": "no url", "snippet": "s"}
                ]},
                {"type": "fetch_url_results", "contents": []},
                {"type": "message", "id": "m", "role": "assistant", "status": "completed", "content": [
                    {"type": "output_text", "text": "One [3]. ", "annotations": [
                        {"type": "url_citation", "url": "https://b.example.com", "title": "B", "start_index": 0, "end_index": 3}
                    ]},
                    {"type": "output_text", "text": "Two."}
                ]}
            ],
            "usage": {"input_tokens": 10, "output_tokens": 20, "total_tokens": 30,
                      "cost": {"currency": "USD", "input_cost": 0.00001, "output_cost": 0.00002, "tool_calls_cost": 0.005, "total_cost": 0.00503},
                      "tool_calls_details": {"search_web": {"invocation": 1}}}
        });
        let a = parse_response(body.to_string().as_bytes()).unwrap();
        assert_eq!(a.content, "One [3]. Two.");
        assert_eq!(a.model, "sonar");
        assert_eq!(a.search_results.len(), 1);
        assert_eq!((a.search_results[0].id, a.search_results[0].title.as_deref()), (Some(3), Some("A")));
        assert_eq!(a.annotations[0].url, "https://b.example.com");
        assert_eq!(a.schema_errors, ["output[0].results[1] has no url"]);
        assert_eq!(
            a.usage,
            Usage { input_tokens: 10, output_tokens: 20, provider_cost_usd: Some(0.00503), credits: 0, searches: 1 }
        );
        assert_eq!(a.upstream_id.as_deref(), Some("resp_1"));
        assert!(a.incomplete.is_none() && a.images.is_empty());
    }

    #[test]
    fn http_200_is_not_success() {
        let run = |status: &str| {
            let body = json!({"id": "r", "status": status, "model": "perplexity/sonar", "created_at": 1, "object": "response",
                "output": [], "error": {"message": "model error", "type": "internal"}});
            parse_response(body.to_string().as_bytes())
        };
        assert_eq!(
            run("failed"),
            Err(ProviderError::RunFailed { status: "failed".into(), message: "model error".into() })
        );
        assert!(matches!(run("cancelled"), Err(ProviderError::RunFailed { .. })));
        assert!(matches!(run("requires_action"), Err(ProviderError::RunFailed { .. })));
        let cut = json!({"id": "r", "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
            "model": "perplexity/sonar", "output": [{"type": "message", "content": [{"type": "output_text", "text": "Half"}]}],
            "usage": {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}});
        let a = parse_response(cut.to_string().as_bytes()).unwrap();
        assert_eq!((a.content.as_str(), a.incomplete.as_deref()), ("Half", Some("max_output_tokens")));
    }

    #[test]
    fn partial_responses_keep_what_parses() {
        let a = parse_response(
            br#"{"status": "completed", "output": [{"type": "message", "content": [{"type": "output_text", "text": 7}, {"type": "output_text", "text": "ok"}]}], "usage": {"input_tokens": 3}}"#,
        )
        .unwrap();
        assert_eq!(a.content, "ok");
        assert_eq!(a.usage.input_tokens, 3);
        assert!(a.schema_errors.iter().any(|e| e.contains("output[0].content[0].text")));
        assert!(a.schema_errors.iter().any(|e| e.contains("output_tokens is missing")));
        assert!(matches!(parse_response(br#"{"status": "completed"}"#), Err(ProviderError::Malformed(_))));
        assert!(matches!(parse_response(b"<html>"), Err(ProviderError::Malformed(_))));
    }
}
