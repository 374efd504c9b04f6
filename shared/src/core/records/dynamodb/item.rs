//! A record as a DynamoDB item: `pk`, `sk`, `expires_at` and the body as native attributes
//! (a counter's total a top-level number), and back.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::{Map, Number, Value};

use super::super::Record;
use crate::core::error::{Error, Result};

pub(super) fn to_item(record: &Record) -> HashMap<String, AttributeValue> {
    let mut item = HashMap::from([
        ("pk".to_owned(), AttributeValue::S(record.pk.clone())),
        ("sk".to_owned(), AttributeValue::S(record.sk.clone())),
        ("body".to_owned(), to_attribute(&record.body)),
    ]);
    if let Some(t) = record.expires_at {
        item.insert("expires_at".to_owned(), AttributeValue::N(t.to_string()));
    }
    item
}

pub(super) fn from_item(item: &HashMap<String, AttributeValue>) -> Result<Record> {
    let text = |name: &str| match item.get(name) {
        Some(AttributeValue::S(s)) => Ok(s.clone()),
        _ => Err(Error::Store(format!("dynamodb item lacks string attribute {name}"))),
    };
    let expires_at = match item.get("expires_at") {
        Some(AttributeValue::N(n)) => {
            Some(n.parse::<i64>().map_err(|_| Error::Store(format!("expires_at is not an integer: {n}")))?)
        }
        _ => None,
    };
    // A counter ([`RecordStore::add`]) is a top-level number (an update cannot create a
    // nested one): its body reads as the local store's does.
    let body = match (item.get("body"), item.get(super::super::TOTAL)) {
        (Some(body), _) => from_attribute(body),
        (None, Some(total)) => serde_json::json!({ super::super::TOTAL: from_attribute(total) }),
        (None, None) => Value::Null,
    };
    Ok(Record { pk: text("pk")?, sk: text("sk")?, expires_at, body })
}

/// JSON to a native DynamoDB attribute (maps, lists, numbers, strings, booleans, null).
fn to_attribute(value: &Value) -> AttributeValue {
    match value {
        Value::Null => AttributeValue::Null(true),
        Value::Bool(b) => AttributeValue::Bool(*b),
        Value::Number(n) => AttributeValue::N(n.to_string()),
        Value::String(s) => AttributeValue::S(s.clone()),
        Value::Array(items) => AttributeValue::L(items.iter().map(to_attribute).collect()),
        Value::Object(map) => AttributeValue::M(map.iter().map(|(k, v)| (k.clone(), to_attribute(v))).collect()),
    }
}

fn from_attribute(value: &AttributeValue) -> Value {
    match value {
        AttributeValue::Bool(b) => Value::Bool(*b),
        AttributeValue::N(n) => n
            .parse::<i64>()
            .map(Value::from)
            .or_else(|_| n.parse::<u64>().map(Value::from))
            .ok()
            .or_else(|| n.parse::<f64>().ok().and_then(Number::from_f64).map(Value::Number))
            .unwrap_or(Value::Null),
        AttributeValue::S(s) => Value::String(s.clone()),
        AttributeValue::L(items) => Value::Array(items.iter().map(from_attribute).collect()),
        AttributeValue::M(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), from_attribute(v))).collect::<Map<_, _>>())
        }
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_bodies_round_trip_through_native_attributes() {
        let body = serde_json::json!({
            "s": "台灣", "n": 42, "neg": -3, "f": 0.0012, "b": true, "null": null,
            "list": [1, "two", {"three": 3}], "empty": ""
        });
        assert_eq!(from_attribute(&to_attribute(&body)), body);
    }
}
