//! A sample Perplexity on 127.0.0.1 for the demo and the benches: the Agent API's wire format
//! (`POST /v1/agent`, a `search_results` item and a `message` item, usage with its cost), with
//! content labelled as sample data so nobody mistakes it for the web.

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// Marks every sample answer.
pub const LABEL: &str = "[sample upstream on 127.0.0.1, not live web data]";

struct SampleAnswer;

impl Respond for SampleAnswer {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let question = body["input"].as_str().unwrap_or_default();
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
            "id": "resp_sample_1",
            "object": "response",
            "created_at": 1_795_000_000,
            "model": body["model"],
            "status": "completed",
            "output": [
                {"type": "search_results", "queries": [question], "results": [
                    {"id": 1, "title": "Sample report", "url": "https://example.com/sample/report", "snippet": LABEL, "date": "2026-11-01", "source": "web"},
                    {"id": 2, "title": "Sample news", "url": "https://news.example.net/sample", "snippet": LABEL, "source": "web"}
                ]},
                {"type": "message", "id": "msg_sample_1", "role": "assistant", "status": "completed", "content": [
                    {"type": "output_text", "text": content, "annotations": [
                        {"type": "url_citation", "url": "https://example.com/sample/report#section", "title": "Sample report", "start_index": 0, "end_index": 10}
                    ]}
                ]}
            ],
            "usage": {
                "input_tokens": 420, "output_tokens": 380, "total_tokens": 800,
                "cost": {"currency": "USD", "input_cost": 0.00042, "output_cost": 0.00038, "tool_calls_cost": 0.005, "total_cost": 0.0058},
                "tool_calls_details": {"search_web": {"invocation": 1}}
            },
        }))
    }
}

/// Starts the sample upstream; it answers until dropped.
pub async fn start() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST")).and(path("/v1/agent")).respond_with(SampleAnswer).mount(&server).await;
    server
}
