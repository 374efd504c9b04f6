//! The chat model used when no `LLM_API_KEY` is set: deterministic, offline, and labelled
//! (`【模擬資料】` in every text it writes). It follows the agents' protocol for real: a
//! structured request with tools first asks for one search, then answers from its result, so
//! the whole tool loop, the search port and the citation pipeline run end to end.

use async_trait::async_trait;
use serde_json::json;

use super::{ChatModel, ChatReply, ChatRequest, Message, ToolCall};
use crate::core::upstream::{ProviderError, Usage};

/// Marks every mock text.
pub const LABEL: &str = "【模擬資料】";

pub struct MockLlm;

/// The value of the `key：value` (or `key: value`) line of `text`.
fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|l| l.strip_prefix(key)).map(|v| v.trim_start_matches(['：', ':']).trim())
}

/// URLs in markdown links `](url)` of a tool result.
fn links(text: &str) -> Vec<String> {
    text.split("](").skip(1).filter_map(|rest| rest.split(')').next()).map(str::to_owned).collect()
}

#[async_trait]
impl ChatModel for MockLlm {
    fn provider(&self) -> &str {
        "mock"
    }

    fn is_mock(&self) -> bool {
        true
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatReply, ProviderError> {
        let user = request
            .messages
            .iter()
            .find_map(|m| if let Message::User(t) = m { Some(t.as_str()) } else { None })
            .unwrap_or("");
        let tool_results: Vec<&str> = request
            .messages
            .iter()
            .filter_map(|m| if let Message::Tool { content, .. } = m { Some(content.as_str()) } else { None })
            .collect();
        let schema = request.output_schema.as_ref().map_or("", |(name, _)| *name);
        let reply =
            |content: String| Ok(ChatReply { content: Some(content), usage: Usage::default(), ..ChatReply::default() });
        match schema {
            "milestones" => {
                let topic = field(user, "主题").or_else(|| field(user, "Topic")).unwrap_or("topic");
                let nodes: Vec<_> = (1..=5)
                    .map(|i| {
                        json!({
                            "date": format!("{}-01-01", 2000 + 5 * i),
                            "title": format!("{LABEL}{topic} milestone {i}"),
                            "description": format!("{LABEL}A sample milestone of {topic}; set LLM_API_KEY for real research."),
                            "significance": if i == 1 { "high" } else { "medium" },
                        })
                    })
                    .collect();
                reply(json!({"nodes": nodes}).to_string())
            }
            "match_reasons" => {
                let titles = user.lines().filter_map(|l| l.strip_prefix("title: "));
                let ids = user.lines().filter_map(|l| l.strip_prefix("id: "));
                let reasons: Vec<_> = ids
                    .zip(titles)
                    .map(|(id, title)| json!({"id": id, "reason": format!("{LABEL}「{title}」符合你的需求")}))
                    .collect();
                reply(json!({"reasons": reasons}).to_string())
            }
            "node_detail" if tool_results.is_empty() && request.tools.iter().any(|t| t.name == "search") => {
                let title = field(user, "标题").unwrap_or("milestone");
                Ok(ChatReply {
                    tool_calls: vec![ToolCall {
                        id: "mock-call-1".into(),
                        name: "search".into(),
                        arguments: json!({"query": title}).to_string(),
                    }],
                    ..ChatReply::default()
                })
            }
            "node_detail" => {
                // A mock skeleton's title is labelled already; the label is said once.
                let title = field(user, "标题").map_or("milestone", |t| t.trim_start_matches(LABEL));
                let sources: Vec<String> = tool_results.iter().flat_map(|r| links(r)).collect();
                reply(
                    json!({
                        "key_features": [format!("{LABEL}{title}: feature 1"), format!("{LABEL}{title}: feature 2"), format!("{LABEL}{title}: feature 3")],
                        "impact": format!("{LABEL}The impact of {title}."),
                        "key_people": [],
                        "context": format!("{LABEL}The background of {title}."),
                        "sources": sources,
                    })
                    .to_string(),
                )
            }
            "" => Ok(converse(request)),
            _ => reply(format!("{LABEL}{user}")),
        }
    }
}

/// A free-text conversation (the assistant): the newest message first gets one call of the
/// first tool offered, if any, then an answer that names what the tool found, or says what it
/// needs (the user's location: `location_unknown`) or that it could not run.
fn converse(request: &ChatRequest) -> ChatReply {
    let last_user = request.messages.iter().rposition(|m| matches!(m, Message::User(_))).unwrap_or(0);
    let asked = match &request.messages[last_user] {
        Message::User(t) => t.as_str(),
        _ => "",
    };
    let results: Vec<&str> = request.messages[last_user..]
        .iter()
        .filter_map(|m| if let Message::Tool { content, .. } = m { Some(content.as_str()) } else { None })
        .collect();
    if let Some(tool) = request.tools.first().filter(|_| results.is_empty()) {
        let arguments = match tool.name.as_str() {
            "explore_nearby" => json!({"semanticQuery": asked}),
            "search_web" => json!({"query": asked}),
            _ => json!({}),
        };
        let call = ToolCall { id: "mock-call-1".into(), name: tool.name.clone(), arguments: arguments.to_string() };
        return ChatReply { tool_calls: vec![call], ..ChatReply::default() };
    }
    // A tool's result arrives as `{tool, data, ...}` (data, not instructions).
    let data: Vec<serde_json::Value> = results
        .iter()
        .filter_map(|r| serde_json::from_str::<serde_json::Value>(r).ok())
        .map(|v| v.get("data").cloned().unwrap_or(v))
        .collect();
    let failed = data.iter().find_map(|v| v.get("error")?.as_str());
    let found: Vec<String> = data
        .iter()
        .flat_map(|v| {
            let items = v.get("activities").unwrap_or(v);
            items.as_array().cloned().unwrap_or_default()
        })
        .filter_map(|item| item.get("title")?.as_str().map(str::to_owned))
        .take(3)
        .collect();
    let content = if results.is_empty() {
        format!("{LABEL}收到：「{asked}」。设置 LLM_API_KEY 可获得真实回答。")
    } else if found.is_empty() && failed == Some("location_unknown") {
        // Not "nothing found": nothing was searched.
        format!(
            "{LABEL}要找你附近的活动，需要知道你在哪里：告诉我你在哪个城市或区域，或在 App 里开启定位。\
             设置 LLM_API_KEY 可获得真实回答。"
        )
    } else if let Some(code) = failed.filter(|_| found.is_empty()) {
        format!("{LABEL}关于「{asked}」，工具这次没能运行（{code}）。设置 LLM_API_KEY 可获得真实回答。")
    } else if found.is_empty() {
        format!("{LABEL}关于「{asked}」，工具没有找到结果。设置 LLM_API_KEY 可获得真实回答。")
    } else {
        format!("{LABEL}关于「{asked}」，找到：{}。设置 LLM_API_KEY 可获得真实回答。", found.join("、"))
    };
    ChatReply { content: Some(content), ..ChatReply::default() }
}
