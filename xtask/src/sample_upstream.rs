//! A sample Perplexity on 127.0.0.1 for the demo and the benches: the real chat-completions
//! wire format, with content labelled as sample data so nobody mistakes it for the web.

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// Marks every sample answer.
pub const LABEL: &str = "[sample upstream on 127.0.0.1, not live web data]";

struct SampleAnswer;

impl Respond for SampleAnswer {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let question = body["messages"][1]["content"].as_str().unwrap_or_default();
        let structured = body.get("response_format").is_some();
        let content = if structured {
            // Enough to satisfy any of the three schemas' first field.
            json!({
                "topCompetitors": [{"domain": "example.com", "title": LABEL, "description": "sample", "strengths": ["sample"]}],
                "contentGaps": [LABEL], "recommendations": [LABEL],
                "trends": [{"topic": LABEL, "description": "sample", "relevance": 0.5}], "insights": [LABEL],
                "summary": LABEL, "keyPoints": [LABEL], "statistics": [], "expertOpinions": [], "relatedTopics": [],
            })
            .to_string()
        } else {
            format!(
                "{LABEL} An answer to: {question} [1][2]. More context [3].\n\n[3]: https://example.org/sample/context."
            )
        };
        ResponseTemplate::new(200).set_body_json(json!({
            "id": "sample-1",
            "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "citations": ["https://example.com/sample/report", "https://example.com/sample/report#section", "https://news.example.net/sample"],
            "search_results": [
                {"title": "Sample report", "url": "https://example.com/sample/report", "date": "2026-11-01"},
                {"title": "Sample news", "url": "https://news.example.net/sample"}
            ],
            "usage": {"prompt_tokens": 420, "completion_tokens": 380, "total_tokens": 800},
        }))
    }
}

/// Starts the sample upstream; it answers until dropped.
pub async fn start() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST")).and(path("/chat/completions")).respond_with(SampleAnswer).mount(&server).await;
    server
}
