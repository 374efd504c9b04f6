//! The search function's metrics (built by [`crate::web::search`]): one EMF line per answer (by
//! provider), one per failed provider (see [`crate::core::metrics`]). Each provider asked
//! reports how long it took (`ProviderLatency`, milliseconds, its attempts and waits together):
//! seed 000's target is under 5 s for Perplexity.

use std::time::Duration;

use crate::core::metrics::{emit, render};

/// One provider asked for a request: how long it took, and whether its answer was served.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProviderCall {
    pub provider: &'static str,
    pub took: Duration,
    pub answered: bool,
}

/// What one search request tells the monitoring: which provider answered or failed, how long
/// each took, cache hit, citations, tokens and cost.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchMetrics {
    pub provider: String,
    /// The providers asked, in order (none for a cache hit or a mock answer without a key).
    pub calls: Vec<ProviderCall>,
    pub cached: bool,
    pub mock: bool,
    pub citations: usize,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
}

impl SearchMetrics {
    /// The EMF lines: one for the answer (by provider), one per failed provider.
    pub fn lines(&self, timestamp_ms: i64) -> Vec<String> {
        let live = !self.cached && !self.mock;
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let mut values = vec![
            ("ProviderSuccess", "Count", f64::from(u8::from(live))),
            ("CacheHit", "Count", f64::from(u8::from(self.cached))),
            ("MockAnswer", "Count", f64::from(u8::from(self.mock))),
            ("Citations", "Count", self.citations as f64),
            ("InputTokens", "Count", self.input_tokens as f64),
            ("OutputTokens", "Count", self.output_tokens as f64),
            ("CostUsd", "None", self.cost_usd),
        ];
        if let Some(call) = self.calls.iter().find(|c| c.answered) {
            values.push(("ProviderLatency", "Milliseconds", ms(call.took)));
        }
        let mut lines = vec![render(&[("Provider", &self.provider)], &values, timestamp_ms)];
        lines.extend(self.calls.iter().filter(|c| !c.answered).map(|c| {
            render(
                &[("Provider", c.provider)],
                &[("ProviderFailure", "Count", 1.0), ("ProviderLatency", "Milliseconds", ms(c.took))],
                timestamp_ms,
            )
        }));
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
    use crate::core::metrics::NAMESPACE;
    use serde_json::{Value, json};

    #[test]
    fn lines_are_embedded_metric_format() {
        let m = SearchMetrics {
            provider: "tavily".into(),
            calls: vec![
                ProviderCall { provider: "perplexity", took: Duration::from_millis(1500), answered: false },
                ProviderCall { provider: "tavily", took: Duration::from_millis(420), answered: true },
            ],
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
        assert_eq!(doc["ProviderLatency"].as_f64(), Some(420.0), "the answering provider's time");
        // Every declared metric has its value at the top level.
        for metric in cw["Metrics"].as_array().unwrap() {
            assert!(doc.get(metric["Name"].as_str().unwrap()).is_some_and(Value::is_number));
        }
        let failure: Value = serde_json::from_str(&lines[1]).unwrap();
        assert_eq!(
            (failure["Provider"].as_str(), failure["ProviderFailure"].as_f64(), failure["ProviderLatency"].as_f64()),
            (Some("perplexity"), Some(1.0), Some(1500.0))
        );
        let units: Vec<&str> = failure["_aws"]["CloudWatchMetrics"][0]["Metrics"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["Unit"].as_str())
            .collect();
        assert_eq!(units, ["Count", "Milliseconds"]);
    }
}
