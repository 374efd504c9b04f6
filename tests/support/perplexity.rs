//! The fake Perplexity's contract: its Agent API (`POST /v1/agent`), as strict as the real one.
//!
//! Every fake Perplexity in the suite gets [`guard`]: before any scenario's mock answers, a
//! request to another path is a 404 and a body the real API would refuse is a 400 in the real
//! error envelope (`{"error": {"message", "type", "code", "param"}}`). What it refuses:
//! - anything outside the request schema of the official SDK (`tests/perplexity/
//!   agent-request.schema.json`, generated from the pinned `perplexityai` by
//!   `infra/perplexity-schema.py`, checked against it by `infra/test.sh`): unknown fields at
//!   any depth (`invalid request body: json: unknown field "X"`), wrong types and enum values,
//!   missing required fields;
//! - the documented limits the schema cannot say (migration guide, request mapping): a model
//!   slug that does not exist (there is no `perplexity/sonar-pro`), no model/models/preset,
//!   `max_output_tokens` < 1, more than 20 `search_domain_filter` entries or one with a scheme,
//!   over 253 characters, or allow and deny mixed; dates not `MM/DD/YYYY`; recency together
//!   with a date filter; a `json_schema.name` outside `[A-Za-z0-9_-]{1,64}`; a
//!   `user_location.country` that is not ISO 3166-1 alpha-2.

use std::sync::LazyLock;

use serde_json::{Value, json};
use wiremock::{Match, Mock, MockServer, Request, Respond, ResponseTemplate};

/// The Agent API route.
pub const AGENT_PATH: &str = "/v1/agent";

/// Model slugs the fake knows (the migration guide's examples; `GET /v1/models` is the
/// authority in production).
pub const MODELS: &[&str] = &[
    "perplexity/sonar",
    "openai/gpt-5.1",
    "openai/gpt-5.2",
    "anthropic/claude-sonnet-4-5",
    "google/gemini-3-flash-preview",
    "xai/grok-4-1",
];

static SCHEMA: LazyLock<Value> = LazyLock::new(|| {
    serde_json::from_str(include_str!("../perplexity/agent-request.schema.json")).expect("the schema is JSON")
});

/// Why the fake refuses a request: the real envelope's fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub status: u16,
    pub kind: &'static str,
    pub message: String,
    pub param: Option<String>,
}

impl Refusal {
    /// The API's 429.
    pub fn rate_limited() -> Self {
        Self { status: 429, kind: "request_rate_limit_exceeded", message: "Rate limit exceeded".into(), param: None }
    }

    fn bad(kind: &'static str, message: impl Into<String>, param: &str) -> Self {
        Self { status: 400, kind, message: message.into(), param: Some(param.to_owned()) }
    }

    /// The HTTP response the real API sends for it.
    pub fn response(&self) -> ResponseTemplate {
        let mut error = json!({"message": self.message, "type": self.kind, "code": self.status});
        if let Some(p) = &self.param {
            error["param"] = json!(p);
        }
        ResponseTemplate::new(self.status).set_body_json(json!({ "error": error }))
    }
}

/// Checks one request as the real API would; `Err` is its refusal.
pub fn check(path: &str, body: &[u8]) -> Result<(), Refusal> {
    if path != AGENT_PATH {
        return Err(Refusal { status: 404, kind: "not_found", message: format!("no route {path}"), param: None });
    }
    let body: Value = serde_json::from_slice(body).map_err(|e| Refusal {
        status: 400,
        kind: "invalid_request",
        message: format!("invalid request body: {e}"),
        param: None,
    })?;
    conform(&SCHEMA, &body, "")?;
    limits(&body)
}

fn conform(schema: &Value, v: &Value, at: &str) -> Result<(), Refusal> {
    if let Some(options) = schema.get("anyOf").and_then(Value::as_array) {
        // A tagged union: the branch whose `type` enum names the value's `type`.
        let tag = v.get("type");
        if let Some(branch) = options.iter().find(|o| {
            tag.is_some()
                && o.pointer("/properties/type/enum")
                    .and_then(Value::as_array)
                    .is_some_and(|e| e.contains(tag.unwrap()))
        }) {
            return conform(branch, v, at);
        }
        let mut first = None;
        for o in options {
            match conform(o, v, at) {
                Ok(()) => return Ok(()),
                Err(e) => first = first.or(Some(e)),
            }
        }
        return Err(first.unwrap_or_else(|| Refusal::bad("invalid_request", "no option matches", at)));
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return if values.contains(v) {
            Ok(())
        } else {
            Err(Refusal::bad("invalid_request", format!("invalid value {v} for {at}"), at))
        };
    }
    let wrong =
        |expected: &str| Refusal::bad("invalid_request", format!("invalid request body: {at} must be {expected}"), at);
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => {
            let object = v.as_object().ok_or_else(|| wrong("an object"))?;
            let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return Ok(()) };
            for (key, value) in object {
                let child = if at.is_empty() { key.clone() } else { format!("{at}.{key}") };
                match properties.get(key) {
                    Some(s) => conform(s, value, &child)?,
                    None if schema["additionalProperties"] == json!(false) => {
                        return Err(Refusal::bad(
                            "invalid_request",
                            format!("invalid request body: json: unknown field \"{key}\""),
                            key,
                        ));
                    }
                    None => {}
                }
            }
            for key in schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str)
            {
                if !object.contains_key(key) {
                    return Err(Refusal::bad("invalid_request", format!("missing required field \"{key}\""), key));
                }
            }
            Ok(())
        }
        Some("array") => {
            let items = v.as_array().ok_or_else(|| wrong("an array"))?;
            for (i, item) in items.iter().enumerate() {
                conform(&schema["items"], item, &format!("{at}[{i}]"))?;
            }
            Ok(())
        }
        Some("string") => v.is_string().then_some(()).ok_or_else(|| wrong("a string")),
        Some("integer") => (v.is_i64() || v.is_u64()).then_some(()).ok_or_else(|| wrong("an integer")),
        Some("number") => v.is_number().then_some(()).ok_or_else(|| wrong("a number")),
        Some("boolean") => v.is_boolean().then_some(()).ok_or_else(|| wrong("a boolean")),
        _ => Ok(()),
    }
}

/// The presets the docs name (docs.perplexity.ai, Agent API presets): the short names and the
/// previous names of the first four.
const PRESETS: [&str; 9] =
    ["fast", "low", "medium", "high", "xhigh", "fast-search", "pro-search", "deep-research", "advanced-deep-research"];

fn limits(body: &Value) -> Result<(), Refusal> {
    let slug = |s: &Value| s.as_str().is_some_and(|m| MODELS.contains(&m));
    match (body.get("model"), body.get("models"), body.get("preset")) {
        (None, None, None) => {
            return Err(Refusal::bad("invalid_request", "one of model, models or preset is required", "model"));
        }
        (Some(m), _, _) if !slug(m) => {
            return Err(Refusal::bad("invalid_model", format!("unknown model {m}"), "model"));
        }
        (_, _, Some(p)) if !p.as_str().is_some_and(|p| PRESETS.contains(&p)) => {
            return Err(Refusal::bad("invalid_preset", format!("unknown preset {p}"), "preset"));
        }
        (_, Some(Value::Array(ms)), _) if ms.is_empty() || ms.len() > 5 || !ms.iter().all(slug) => {
            return Err(Refusal::bad("invalid_model", "models must list 1-5 known models", "models"));
        }
        _ => {}
    }
    // The SDK's docstring: "Must be >= 1 if specified. Maximum allowed is 10."
    if body.get("max_steps").and_then(Value::as_i64).is_some_and(|n| !(1..=10).contains(&n)) {
        return Err(Refusal::bad("invalid_parameter", "max_steps must be from 1 to 10", "max_steps"));
    }
    if body.get("max_output_tokens").and_then(Value::as_i64).is_some_and(|n| n < 1) {
        return Err(Refusal::bad("invalid_parameter", "max_output_tokens must be >= 1", "max_output_tokens"));
    }
    if let Some(name) = body.pointer("/response_format/json_schema/name").and_then(Value::as_str)
        && (name.is_empty()
            || name.len() > 64
            || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'))
    {
        return Err(Refusal::bad("invalid_parameter", "json_schema.name must be 1-64 of [A-Za-z0-9_-]", "name"));
    }
    for tool in body.get("tools").and_then(Value::as_array).into_iter().flatten() {
        if tool["type"] != "web_search" {
            continue;
        }
        if let Some(country) = tool.pointer("/user_location/country").and_then(Value::as_str)
            && !(country.len() == 2 && country.bytes().all(|b| b.is_ascii_uppercase()))
        {
            return Err(Refusal::bad(
                "invalid_parameter",
                format!("country {country:?} is not ISO 3166-1 alpha-2"),
                "country",
            ));
        }
        let Some(filters) = tool.get("filters") else { continue };
        if let Some(domains) = filters.get("search_domain_filter").and_then(Value::as_array) {
            let entries: Vec<&str> = domains.iter().filter_map(Value::as_str).collect();
            let denied = entries.iter().filter(|d| d.starts_with('-')).count();
            let refuse =
                |why: &str| Refusal::bad("invalid_search_domain_filter", why.to_owned(), "search_domain_filter");
            if entries.len() > 20 {
                return Err(refuse("at most 20 entries"));
            }
            if entries.iter().any(|d| d.contains("://") || d.is_empty() || d.len() > 253) {
                return Err(refuse("entries are scheme-less domains of at most 253 characters"));
            }
            if denied != 0 && denied != entries.len() {
                return Err(refuse("entries must all allow or all deny"));
            }
        }
        let dates = [
            "search_after_date_filter",
            "search_before_date_filter",
            "last_updated_after_filter",
            "last_updated_before_filter",
        ];
        for name in dates {
            if let Some(d) = filters.get(name).and_then(Value::as_str)
                && !is_us_date(d)
            {
                return Err(Refusal::bad("invalid_date_format", format!("{name} must be MM/DD/YYYY, not {d:?}"), name));
            }
        }
        if filters.get("search_recency_filter").is_some() && dates[..2].iter().any(|d| filters.get(*d).is_some()) {
            return Err(Refusal::bad(
                "invalid_parameter",
                "search_recency_filter cannot be combined with date filters",
                "search_recency_filter",
            ));
        }
    }
    Ok(())
}

fn is_us_date(d: &str) -> bool {
    let parts: Vec<&str> = d.split('/').collect();
    let number = |s: &str, len: usize, range: std::ops::RangeInclusive<u32>| {
        s.len() == len && s.bytes().all(|b| b.is_ascii_digit()) && s.parse().is_ok_and(|n| range.contains(&n))
    };
    parts.len() == 3 && number(parts[0], 2, 1..=12) && number(parts[1], 2, 1..=31) && number(parts[2], 4, 1900..=2100)
}

/// Matches (and answers) exactly the requests the real API refuses.
struct Strict;

impl Match for Strict {
    fn matches(&self, request: &Request) -> bool {
        check(request.url.path(), &request.body).is_err()
    }
}

impl Respond for Strict {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        match check(request.url.path(), &request.body) {
            Err(refusal) => refusal.response(),
            Ok(()) => ResponseTemplate::new(500),
        }
    }
}

/// Makes `server` refuse what the real Agent API refuses, before any other mock answers.
pub async fn guard(server: &MockServer) {
    Mock::given(Strict).respond_with(Strict).with_priority(1).named("strict Agent API").mount(server).await;
}

/// An Agent API response (status `completed`): a `search_results` item with `results`
/// (`[{id, url, title, snippet, date?}]`), then one message whose text is `text` with
/// `annotations` (`[{type: url_citation, url, title, ...}]`), and `usage`.
pub fn answer(text: &str, results: Value, annotations: Value, usage: Value) -> Value {
    json!({
        "id": "resp_test_1",
        "object": "response",
        "created_at": 1_735_689_600,
        "model": "perplexity/sonar",
        "status": "completed",
        "output": [
            {"type": "search_results", "queries": ["test query"], "results": results},
            {"type": "message", "id": "msg_test_1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": text, "annotations": annotations}]}
        ],
        "usage": usage,
    })
}

/// A plain answer citing one source (`https://example.com/coffee`), 100 + 200 tokens, one search.
pub fn plain_answer() -> Value {
    answer(
        "Coffee demand grew [1].",
        json!([{"id": 1, "title": "Coffee report", "url": "https://example.com/coffee", "snippet": "Demand grew.", "date": "2025-01-01"}]),
        json!([]),
        usage(100, 200, 1, None),
    )
}

/// Agent API usage: tokens, `searches` search invocations and, when given, the reported cost.
pub fn usage(input: u64, output: u64, searches: u64, total_cost: Option<f64>) -> Value {
    let mut u = json!({
        "input_tokens": input, "output_tokens": output, "total_tokens": input + output,
        "tool_calls_details": {"search_web": {"invocation": searches}},
    });
    if let Some(total) = total_cost {
        let tools = searches as f64 * 0.005;
        u["cost"] = json!({"currency": "USD", "input_cost": 0.0, "output_cost": (total - tools).max(0.0),
                           "tool_calls_cost": tools, "total_cost": total});
    }
    u
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(body: Value) -> Refusal {
        check(AGENT_PATH, body.to_string().as_bytes()).expect_err("refused")
    }

    #[test]
    fn the_fake_refuses_what_the_real_api_refuses() {
        let ok = json!({"model": "perplexity/sonar", "input": "q", "tools": [{"type": "web_search"}]});
        assert_eq!(check(AGENT_PATH, ok.to_string().as_bytes()), Ok(()));
        assert_eq!(check("/chat/completions", ok.to_string().as_bytes()).unwrap_err().status, 404);
        let sonar = json!({"model": "sonar", "messages": [{"role": "user", "content": "q"}]});
        let r = refusal(sonar.clone());
        assert_eq!((r.status, r.param.as_deref()), (400, Some("messages")));
        assert_eq!(r.message, "invalid request body: json: unknown field \"messages\"");
        let with = |f: &dyn Fn(&mut Value)| {
            let mut b = ok.clone();
            f(&mut b);
            refusal(b)
        };
        assert_eq!(with(&|b| b["temperature"] = json!(0.2)).param.as_deref(), Some("temperature"));
        assert_eq!(with(&|b| b["tool_choice"] = json!({"type": "web_search"})).param.as_deref(), Some("tool_choice"));
        assert_eq!(
            with(&|b| b["tools"][0]["search_domain_filter"] = json!([])).param.as_deref(),
            Some("search_domain_filter")
        );
        assert_eq!(
            with(&|b| b["tools"][0]["filters"] = json!({"return_images": false})).param.as_deref(),
            Some("return_images")
        );
        assert_eq!(with(&|b| b["model"] = json!("perplexity/sonar-pro")).kind, "invalid_model");
        assert_eq!(with(&|b| b["preset"] = json!("sonar-pro")).kind, "invalid_preset");
        let pro = json!({"preset": "low", "input": "q", "tools": [{"type": "web_search"}]});
        assert_eq!(check(AGENT_PATH, pro.to_string().as_bytes()), Ok(()));
        for steps in [0, 11] {
            assert_eq!(with(&|b| b["max_steps"] = json!(steps)).param.as_deref(), Some("max_steps"), "{steps}");
        }
        let mut ten = ok.clone();
        ten["max_steps"] = json!(10);
        assert_eq!(check(AGENT_PATH, ten.to_string().as_bytes()), Ok(()));
        assert_eq!(with(&|b| b["tools"][0]["filters"] = json!({"search_recency_filter": "decade"})).status, 400);
        let many: Vec<String> = (0..21).map(|i| format!("d{i}.com")).collect();
        for filter in [json!(many), json!(["https://a.com"]), json!(["a.com", "-b.com"])] {
            let r = with(&|b| b["tools"][0]["filters"] = json!({"search_domain_filter": filter}));
            assert_eq!(r.kind, "invalid_search_domain_filter", "{filter}");
        }
        let r = with(&|b| b["tools"][0]["filters"] = json!({"search_after_date_filter": "2026-01-01"}));
        assert_eq!(r.kind, "invalid_date_format");
        let r = with(&|b| {
            b["tools"][0]["filters"] = json!({"search_after_date_filter": "01/02/2026", "search_recency_filter": "day"})
        });
        assert_eq!(r.param.as_deref(), Some("search_recency_filter"));
        let r = with(&|b| b["response_format"] = json!({"type": "json_schema", "json_schema": {"schema": {}}}));
        assert_eq!(r.param.as_deref(), Some("name"), "the SDK requires a schema name");
        let r = with(&|b| b["tools"][0]["user_location"] = json!({"country": "Taiwan"}));
        assert_eq!(r.param.as_deref(), Some("country"));
        assert_eq!(refusal(json!({"model": "perplexity/sonar"})).param.as_deref(), Some("input"));
    }
}
