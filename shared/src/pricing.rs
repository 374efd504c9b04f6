//! The price table: data, not code. Defaults (`prices.json`) reproduce seed 000: Perplexity
//! sonar $0.001 and sonar-pro $0.003 per 1K tokens, input and output alike. An upstream's own
//! reported cost always wins over this table.

use std::collections::HashMap;

use serde::Deserialize;

/// Prices of one `provider/model`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct Price {
    pub input_per_1k_usd: f64,
    pub output_per_1k_usd: f64,
    #[serde(default)]
    pub per_request_usd: f64,
}

/// Prices keyed by `provider/model`.
#[derive(Debug, Clone, PartialEq)]
pub struct PriceTable(HashMap<String, Price>);

impl Default for PriceTable {
    fn default() -> Self {
        Self::from_json(include_str!("prices.json")).expect("bundled price table is valid")
    }
}

impl PriceTable {
    /// Parses a table: `{"provider/model": {"input_per_1k_usd", "output_per_1k_usd", "per_request_usd"}}`.
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text).map(Self)
    }

    /// The cost of one call in USD, rounded to 1e-10 (no float noise in reports), or `None`
    /// if the model is not in the table.
    pub fn cost(&self, provider: &str, model: &str, input_tokens: u64, output_tokens: u64) -> Option<f64> {
        let p = self.0.get(&format!("{provider}/{model}"))?;
        let usd = input_tokens as f64 * p.input_per_1k_usd / 1000.0
            + output_tokens as f64 * p.output_per_1k_usd / 1000.0
            + p.per_request_usd;
        Some((usd * 1e10).round() / 1e10)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_reproduce_seed_000() {
        let t = PriceTable::default();
        // cost_usd = (input_tokens + output_tokens) × 0.001 / 1000
        assert!((t.cost("perplexity", "sonar", 800, 400).unwrap() - 0.0012).abs() < 1e-12);
        assert!((t.cost("perplexity", "sonar-pro", 800, 400).unwrap() - 0.0036).abs() < 1e-12);
        assert_eq!(t.cost("perplexity", "sonar", 420, 380), Some(0.0008));
        assert_eq!(t.cost("perplexity", "unknown", 1, 1), None);
    }
}
