//! The price table: data, not code. Defaults (`prices.json`) reproduce seed 000's token price,
//! Perplexity `sonar` $0.001 per 1K tokens input and output alike (the Agent API's list price
//! for `perplexity/sonar`, $1 / $1 per million), plus $0.005 per web search it runs, and
//! seed 000's `sonar-pro` $0.003 per 1K tokens (the Agent API's pro preset, billed as
//! `sonar-pro`). An upstream's own reported cost always wins over this table.

use std::collections::HashMap;

use serde::Deserialize;

use crate::core::upstream::Usage;

/// Prices of one `provider/model`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct Price {
    pub input_per_1k_usd: f64,
    pub output_per_1k_usd: f64,
    #[serde(default)]
    pub per_request_usd: f64,
    /// Per billing credit (Tavily).
    #[serde(default)]
    pub per_credit_usd: f64,
    /// Per web search the upstream ran (Perplexity's `search_web` invocations).
    #[serde(default)]
    pub per_search_usd: f64,
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
    /// Parses a table: `{"provider/model": {"input_per_1k_usd", "output_per_1k_usd", "per_request_usd", "per_credit_usd"}}`.
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text).map(Self)
    }

    /// The defaults with the entries of the JSON file at `path` laid over them (`PRICE_TABLE_PATH`).
    pub fn with_overrides(path: &std::path::Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let overrides = Self::from_json(&text).map_err(|e| format!("{} is not a price table: {e}", path.display()))?;
        let mut table = Self::default();
        table.0.extend(overrides.0);
        Ok(table)
    }

    /// Whether `provider/model` has a price.
    pub fn prices(&self, provider: &str, model: &str) -> bool {
        self.0.contains_key(&format!("{provider}/{model}"))
    }

    /// The cost of one call in USD, rounded to 1e-10 (no float noise in reports), or `None`
    /// if the model is not in the table.
    pub fn cost(&self, provider: &str, model: &str, usage: &Usage) -> Option<f64> {
        let p = self.0.get(&format!("{provider}/{model}"))?;
        let usd = usage.input_tokens as f64 * p.input_per_1k_usd / 1000.0
            + usage.output_tokens as f64 * p.output_per_1k_usd / 1000.0
            + p.per_request_usd
            + f64::from(usage.credits) * p.per_credit_usd
            + f64::from(usage.searches) * p.per_search_usd;
        Some((usd * 1e10).round() / 1e10)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_reproduce_seed_000() {
        let t = PriceTable::default();
        let tokens = |i, o| Usage { input_tokens: i, output_tokens: o, ..Usage::default() };
        // cost_usd = (input_tokens + output_tokens) × 0.001 / 1000 + searches × 0.005
        assert!((t.cost("perplexity", "sonar", &tokens(800, 400)).unwrap() - 0.0012).abs() < 1e-12);
        assert_eq!(t.cost("perplexity", "sonar", &tokens(420, 380)), Some(0.0008));
        let searched = Usage { searches: 2, ..tokens(420, 380) };
        assert_eq!(t.cost("perplexity", "sonar", &searched), Some(0.0108));
        // If sonar-pro is used, $0.003 per 1K tokens.
        assert_eq!(t.cost("perplexity", "sonar-pro", &tokens(800, 400)), Some(0.0036));
        assert_eq!(t.cost("perplexity", "unknown", &tokens(1, 1)), None);
        let credits = Usage { credits: 2, ..Usage::default() };
        assert_eq!(t.cost("tavily", "basic", &credits), Some(0.016));
    }

    #[test]
    fn a_deployment_overrides_entries_and_adds_models() {
        let dir = std::env::temp_dir().join(format!("prices-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("prices.json");
        std::fs::write(&path, r#"{"perplexity/sonar": {"input_per_1k_usd": 0.002, "output_per_1k_usd": 0.004, "per_request_usd": 0.005},
                                  "openrouter/deepseek-reasoner": {"input_per_1k_usd": 0.00055, "output_per_1k_usd": 0.00219}}"#).unwrap();
        let t = PriceTable::with_overrides(&path).unwrap();
        let u = Usage { input_tokens: 1000, output_tokens: 1000, ..Usage::default() };
        assert_eq!(t.cost("perplexity", "sonar", &u), Some(0.011));
        assert_eq!(
            t.cost("tavily", "basic", &Usage { credits: 1, ..u.clone() }),
            Some(0.008),
            "untouched defaults stay"
        );
        assert_eq!(t.cost("openrouter", "deepseek-reasoner", &u), Some(0.00274));
        std::fs::write(&path, "{not json").unwrap();
        assert!(PriceTable::with_overrides(&path).unwrap_err().contains("not a price table"));
    }
}
