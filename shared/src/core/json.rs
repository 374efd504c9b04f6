//! JSON as it arrives: request bodies (an object, no unknown fields) and model output (the
//! object a model meant, wherever it put it).

use serde_json::{Map, Value};

use crate::core::error::Error;

/// A request body parsed as a JSON object.
pub fn json_object(body: &[u8]) -> Result<Map<String, Value>, Error> {
    match serde_json::from_slice(body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(Error::invalid("malformed_json", "request body must be a JSON object")),
        Err(e) => Err(Error::invalid("malformed_json", format!("request body is not valid JSON: {e}"))),
    }
}

/// Refuses a field of `object` that is not in `known` (so a typo is an error, not ignored).
pub fn only_known(object: &Map<String, Value>, known: &[&str]) -> Result<(), Error> {
    match object.keys().find(|k| !known.contains(&k.as_str())) {
        Some(unknown) => Err(Error::invalid(
            "unknown_field",
            format!("field {unknown:?} is not accepted; known fields: {}", known.join(", ")),
        )),
        None => Ok(()),
    }
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
