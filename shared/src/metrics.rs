//! Operational metrics as CloudWatch Embedded Metric Format (EMF) log lines: one JSON line on
//! standard output per request, which CloudWatch turns into metrics with no network call on
//! the hot path. Namespace `ResearchBundle`. Emitted only in a Lambda environment
//! (`AWS_LAMBDA_FUNCTION_NAME` set), so library use, tests and benches stay quiet.

use serde_json::{Map, Value, json};

use crate::search::SearchResponse;

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

/// Writes one EMF line to standard output (where Lambda's log agent picks it up).
pub fn emit(line: &str) {
    if enabled() {
        println!("{line}");
    }
}

/// What one search request tells the monitoring: which provider answered or failed, cache
/// hit, citations, tokens and cost.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchMetrics {
    pub provider: String,
    pub failed_providers: Vec<&'static str>,
    pub cached: bool,
    pub mock: bool,
    pub citations: usize,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
}

impl SearchMetrics {
    pub fn of(response: &SearchResponse, failed: &[&'static str]) -> Self {
        Self {
            provider: response.provider.clone(),
            failed_providers: failed.to_vec(),
            cached: response.cached,
            mock: response.mock,
            citations: response.sources.len(),
            input_tokens: response.usage.input_tokens,
            output_tokens: response.usage.output_tokens,
            cost_usd: response.usage.cost_usd,
        }
    }

    /// The EMF lines: one for the answer (by provider), one per failed provider.
    pub fn lines(&self, timestamp_ms: i64) -> Vec<String> {
        let live = !self.cached && !self.mock;
        let mut lines = vec![render(
            &[("Provider", &self.provider)],
            &[
                ("ProviderSuccess", "Count", f64::from(u8::from(live))),
                ("CacheHit", "Count", f64::from(u8::from(self.cached))),
                ("MockAnswer", "Count", f64::from(u8::from(self.mock))),
                ("Citations", "Count", self.citations as f64),
                ("InputTokens", "Count", self.input_tokens as f64),
                ("OutputTokens", "Count", self.output_tokens as f64),
                ("CostUsd", "None", self.cost_usd),
            ],
            timestamp_ms,
        )];
        lines.extend(
            self.failed_providers
                .iter()
                .map(|p| render(&[("Provider", p)], &[("ProviderFailure", "Count", 1.0)], timestamp_ms)),
        );
        lines
    }

    pub fn emit(&self) {
        for line in self.lines(chrono::Utc::now().timestamp_millis()) {
            emit(&line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_embedded_metric_format() {
        let m = SearchMetrics {
            provider: "tavily".into(),
            failed_providers: vec!["perplexity"],
            cached: false,
            mock: false,
            citations: 3,
            input_tokens: 0,
            output_tokens: 0,
            cost_usd: 0.008,
        };
        let lines = m.lines(1_700_000_000_000);
        assert_eq!(lines.len(), 2);
        let doc: Value = serde_json::from_str(&lines[0]).unwrap();
        let cw = &doc["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(cw["Namespace"], NAMESPACE);
        assert_eq!(cw["Dimensions"], json!([["Provider"]]));
        assert_eq!(doc["_aws"]["Timestamp"], 1_700_000_000_000i64);
        assert_eq!(doc["Provider"], "tavily");
        assert_eq!(
            (doc["ProviderSuccess"].as_f64(), doc["Citations"].as_f64(), doc["CostUsd"].as_f64()),
            (Some(1.0), Some(3.0), Some(0.008))
        );
        // Every declared metric has its value at the top level.
        for metric in cw["Metrics"].as_array().unwrap() {
            assert!(doc.get(metric["Name"].as_str().unwrap()).is_some_and(Value::is_number));
        }
        let failure: Value = serde_json::from_str(&lines[1]).unwrap();
        assert_eq!(
            (failure["Provider"].as_str(), failure["ProviderFailure"].as_f64()),
            (Some("perplexity"), Some(1.0))
        );
    }
}
