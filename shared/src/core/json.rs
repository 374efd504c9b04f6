//! JSON as it arrives: request bodies (an object, no unknown fields) and model output (the
//! object a model meant, wherever it put it).

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::core::error::Error;

/// A request body parsed as JSON, refused (400 `malformed_json`) unless it is an object.
pub fn json_object(body: &[u8]) -> Result<Value, Error> {
    match serde_json::from_slice(body) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(_) => Err(Error::invalid("malformed_json", "request body must be a JSON object")),
        Err(e) => Err(Error::invalid("malformed_json", format!("request body is not valid JSON: {e}"))),
    }
}

/// A request body as the typed `T`: [`json_object`], then [`typed`].
pub fn typed_body<T: DeserializeOwned>(body: &[u8], code: &'static str) -> Result<T, Error> {
    typed(&json_object(body)?, code)
}

/// A request body as the typed `T`: [`json_object`], then [`typed_by`].
pub fn typed_body_by<T: DeserializeOwned>(body: &[u8], code: impl Fn(&str) -> &'static str) -> Result<T, Error> {
    typed_by(&json_object(body)?, code)
}

/// `value` as the typed body `T` (a `#[serde(deny_unknown_fields)]` struct): an unknown field
/// is a 400 `unknown_field`, any other mismatch a 400 `code`; both name the field's path.
pub fn typed<T: DeserializeOwned>(value: &Value, code: &'static str) -> Result<T, Error> {
    typed_by(value, |_| code)
}

/// [`typed`], the 400's code chosen by the failing field's path (`model`, `tags[1]`).
pub fn typed_by<T: DeserializeOwned>(value: &Value, code: impl Fn(&str) -> &'static str) -> Result<T, Error> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let message = e.into_inner().to_string();
        // A missing field is named by its own path: "filters.location.radiusInKm: is required".
        let (path, message) = match message.strip_prefix("missing field `").and_then(|m| m.strip_suffix('`')) {
            Some(field) if path == "." => (field.to_owned(), "is required".to_owned()),
            Some(field) => (format!("{path}.{field}"), "is required".to_owned()),
            None => (path, message),
        };
        let code = if message.starts_with("unknown field") { "unknown_field" } else { code(&path) };
        Error::invalid(code, if path == "." { message } else { format!("{path}: {message}") })
    })
}

/// Finds the JSON object in `content`: the whole text, a fenced block, or the span from the
/// first `{` to the last `}`.
pub fn parse_json_object(content: &str) -> Option<Value> {
    let trimmed = content.trim();
    let unfenced = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|s| s.trim_end().strip_suffix("```"))
        .unwrap_or(trimmed);
    serde_json::from_str(unfenced).ok().or_else(|| {
        let (start, end) = (trimmed.find('{')?, trimmed.rfind('}')?);
        serde_json::from_str(trimmed.get(start..=end)?).ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct Body {
        activity_id: String,
        #[serde(default)]
        tags: Vec<String>,
    }

    #[test]
    fn a_typed_body_names_the_path_of_what_is_wrong() {
        let ok: Body = typed(&json!({"activityId": "a", "tags": ["x"]}), "invalid_body").unwrap();
        assert_eq!((ok.activity_id.as_str(), ok.tags.len()), ("a", 1));
        let e = typed::<Body>(&json!({"activityId": "a", "tag": []}), "invalid_body").unwrap_err();
        assert_eq!(e.code(), "unknown_field");
        assert!(e.to_string().contains("`tag`"), "{e}");
        let e = typed::<Body>(&json!({"activityId": "a", "tags": ["x", 3]}), "invalid_body").unwrap_err();
        assert_eq!(e.code(), "invalid_body");
        assert!(e.to_string().starts_with("tags[1]: invalid type"), "{e}");
        let e = typed::<Body>(&json!({}), "invalid_body").unwrap_err();
        assert_eq!(e.to_string(), "activityId: is required");
    }
}
