//! Operational metrics as CloudWatch Embedded Metric Format (EMF) log lines: one JSON line on
//! standard output per request, which CloudWatch turns into metrics with no network call on
//! the hot path. Namespace `ResearchBundle`. Emitted only in a Lambda environment
//! (`AWS_LAMBDA_FUNCTION_NAME` set), so library use, tests and benches stay quiet.

use serde_json::{Map, Value, json};

pub const NAMESPACE: &str = "ResearchBundle";

/// One EMF document: `dimensions` name the values in `properties` to split by; `metrics` are
/// `(name, unit, value)`.
pub fn render(dimensions: &[(&str, &str)], metrics: &[(&str, &str, f64)], timestamp_ms: i64) -> String {
    let mut doc = Map::new();
    doc.insert(
        "_aws".into(),
        json!({
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [{
                "Namespace": NAMESPACE,
                "Dimensions": [dimensions.iter().map(|(k, _)| *k).collect::<Vec<_>>()],
                "Metrics": metrics.iter().map(|(name, unit, _)| json!({"Name": name, "Unit": unit})).collect::<Vec<_>>(),
            }],
        }),
    );
    for (k, v) in dimensions {
        doc.insert((*k).into(), Value::from(*v));
    }
    for (name, _, value) in metrics {
        doc.insert((*name).into(), json!(value));
    }
    Value::Object(doc).to_string()
}

/// Whether metrics go out: only inside a Lambda environment (the runtime, its emulators),
/// where standard output is the log stream CloudWatch reads.
pub fn enabled() -> bool {
    static ENABLED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ENABLED.get_or_init(|| std::env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some())
}

/// Counts `n` of `name` (unit `Count`) split by `dimensions`, now: one EMF line.
pub fn count(name: &str, dimensions: &[(&str, &str)], n: f64) {
    emit(&render(dimensions, &[(name, "Count", n)], chrono::Utc::now().timestamp_millis()));
}

/// Writes one EMF line to standard output (where Lambda's log agent picks it up).
pub fn emit(line: &str) {
    if enabled() {
        println!("{line}");
    }
}
