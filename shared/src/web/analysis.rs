//! Structured answers of seed 000's three analytical methods: their JSON schemas (sent as
//! `response_format`) and their validation with partial extraction.
//!
//! Validation is per field and per list item: what matches the schema is kept, what does not
//! is named in `errors`. Only when no field at all survives is the answer unusable.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::core::json::parse_json_object;
use crate::web::query::Kind;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Competitor {
    pub domain: String,
    pub title: String,
    pub description: String,
    pub strengths: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trend {
    pub topic: String,
    pub description: String,
    /// 0 to 1.
    pub relevance: f64,
}

/// One finding of the research node (seed 001's `ResearchData.results[]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub title: String,
    /// Seed 001 accepts `summary` for it.
    #[serde(alias = "summary")]
    pub content: String,
    /// Seed 001 accepts `url` for it.
    #[serde(default, alias = "url", skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Statistic {
    pub stat: String,
    pub source: String,
}

/// The outcome of validating a structured answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Structured {
    /// The fields that validated, in the seed's names; `None` when nothing did.
    pub fields: Option<Map<String, Value>>,
    pub errors: Vec<String>,
}

/// The JSON schema `kind`'s answer must follow; `None` for plain search.
pub fn json_schema(kind: &Kind) -> Option<Value> {
    let strings = json!({"type": "array", "items": {"type": "string"}});
    let object = |props: Value, required: &[&str]| json!({"type": "object", "properties": props, "required": required, "additionalProperties": false});
    match kind {
        Kind::Search => None,
        Kind::Competitors { .. } => Some(object(
            json!({
                "topCompetitors": {"type": "array", "items": object(json!({
                    "domain": {"type": "string"}, "title": {"type": "string"},
                    "description": {"type": "string"}, "strengths": strings,
                }), &["domain", "title", "description", "strengths"])},
                "contentGaps": strings, "recommendations": strings,
            }),
            &["topCompetitors", "contentGaps", "recommendations"],
        )),
        Kind::Trends { .. } => Some(object(
            json!({
                "trends": {"type": "array", "items": object(json!({
                    "topic": {"type": "string"}, "description": {"type": "string"},
                    "relevance": {"type": "number", "minimum": 0, "maximum": 1},
                }), &["topic", "description", "relevance"])},
                "insights": strings,
            }),
            &["trends", "insights"],
        )),
        Kind::Topic { .. } => Some(object(
            json!({
                "summary": {"type": "string"}, "keyPoints": strings,
                "statistics": {"type": "array", "items": object(json!({
                    "stat": {"type": "string"}, "source": {"type": "string"},
                }), &["stat", "source"])},
                "expertOpinions": strings, "relatedTopics": strings,
            }),
            &["summary", "keyPoints", "statistics", "expertOpinions", "relatedTopics"],
        )),
        Kind::Research { .. } => Some(object(
            json!({
                "query": {"type": "string"},
                "results": {"type": "array", "items": object(json!({
                    "title": {"type": "string"}, "content": {"type": "string"}, "source": {"type": "string"},
                }), &["title", "content", "source"])},
                "summary": {"type": "string"},
            }),
            &["query", "results", "summary"],
        )),
    }
}

/// What each field of `kind` holds.
enum Shape {
    Text,
    Texts,
    Items(fn(&Value) -> Result<Value, String>),
}

fn item<T: Serialize + for<'de> Deserialize<'de>>(v: &Value) -> Result<Value, String> {
    let parsed: T = serde_json::from_value(v.clone()).map_err(|e| e.to_string())?;
    serde_json::to_value(parsed).map_err(|e| e.to_string())
}

fn trend(v: &Value) -> Result<Value, String> {
    let t: Trend = serde_json::from_value(v.clone()).map_err(|e| e.to_string())?;
    if !(0.0..=1.0).contains(&t.relevance) {
        return Err(format!("relevance {} is outside 0..1", t.relevance));
    }
    serde_json::to_value(t).map_err(|e| e.to_string())
}

fn fields(kind: &Kind) -> &'static [(&'static str, Shape)] {
    match kind {
        Kind::Search => &[],
        Kind::Competitors { .. } => &[
            ("topCompetitors", Shape::Items(item::<Competitor>)),
            ("contentGaps", Shape::Texts),
            ("recommendations", Shape::Texts),
        ],
        Kind::Trends { .. } => &[("trends", Shape::Items(trend)), ("insights", Shape::Texts)],
        Kind::Topic { .. } => &[
            ("summary", Shape::Text),
            ("keyPoints", Shape::Texts),
            ("statistics", Shape::Items(item::<Statistic>)),
            ("expertOpinions", Shape::Texts),
            ("relatedTopics", Shape::Texts),
        ],
        Kind::Research { .. } => {
            &[("query", Shape::Text), ("results", Shape::Items(item::<Finding>)), ("summary", Shape::Text)]
        }
    }
}

/// Validates the content of a structured answer for `kind`.
pub fn extract(kind: &Kind, content: &str) -> Structured {
    let spec = fields(kind);
    if spec.is_empty() {
        return Structured::default();
    }
    let Some(Value::Object(root)) = parse_json_object(content) else {
        return Structured { fields: None, errors: vec!["content is not a JSON object".to_owned()] };
    };
    let mut errors = Vec::new();
    let mut out = Map::new();
    let mut usable = false;
    for (name, shape) in spec {
        let value = root.get(*name);
        let kept = match (shape, value) {
            (_, None | Some(Value::Null)) => {
                errors.push(format!("{name} is missing"));
                None
            }
            (Shape::Text, Some(Value::String(s))) => Some(Value::String(s.clone())),
            (Shape::Texts | Shape::Items(_), Some(Value::Array(items))) => {
                let mut kept = Vec::new();
                for (i, v) in items.iter().enumerate() {
                    let checked = match shape {
                        Shape::Items(check) => check(v),
                        _ => v.as_str().map(|s| Value::String(s.to_owned())).ok_or_else(|| "not a string".to_owned()),
                    };
                    match checked {
                        Ok(v) => kept.push(v),
                        Err(e) => errors.push(format!("{name}[{i}]: {e}")),
                    }
                }
                Some(Value::Array(kept))
            }
            (_, Some(_)) => {
                errors.push(format!("{name} has the wrong type"));
                None
            }
        };
        usable |= kept.as_ref().is_some_and(|v| match v {
            Value::Array(a) => !a.is_empty(),
            Value::String(s) => !s.is_empty(),
            _ => false,
        });
        let empty = match shape {
            Shape::Text => Value::String(String::new()),
            _ => Value::Array(Vec::new()),
        };
        out.insert((*name).to_owned(), kept.unwrap_or(empty));
    }
    Structured { fields: usable.then_some(out), errors }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web::query::Recency;

    #[test]
    fn keeps_valid_items_and_names_the_rest() {
        let content = r#"```json
        {"topCompetitors": [
            {"domain": "a.com", "title": "A", "description": "d", "strengths": ["fast"]},
            {"domain": "b.com", "title": "B"}
         ],
         "contentGaps": ["pricing", 3],
         "recommendations": "write more"}
        ```"#;
        let s = extract(&Kind::Competitors { domain: None }, content);
        let f = s.fields.unwrap();
        assert_eq!(f["topCompetitors"].as_array().unwrap().len(), 1);
        assert_eq!(f["contentGaps"], json!(["pricing"]));
        assert_eq!(f["recommendations"], json!([]));
        assert_eq!(s.errors.len(), 3, "{:?}", s.errors);
        assert!(s.errors[0].starts_with("topCompetitors[1]"));
    }

    #[test]
    fn relevance_must_lie_between_zero_and_one() {
        let content = r#"{"trends": [{"topic": "t", "description": "d", "relevance": 7}, {"topic": "u", "description": "d", "relevance": 0.5}], "insights": []}"#;
        let s = extract(&Kind::Trends { timeframe: Recency::Week }, content);
        assert_eq!(s.fields.unwrap()["trends"].as_array().unwrap().len(), 1);
        assert!(s.errors[0].contains("outside 0..1"));
    }

    #[test]
    fn nothing_usable_is_none() {
        let s = extract(&Kind::Topic { aspects: vec![] }, "Sorry, I cannot help.");
        assert!(s.fields.is_none());
        let s = extract(&Kind::Topic { aspects: vec![] }, r#"{"summary": ""}"#);
        assert!(s.fields.is_none());
    }
}
