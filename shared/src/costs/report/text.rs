//! The report as seed 000's text: one block per group, dollar amounts with 4 decimals.
//!
//! ```text
//! Research Agent:
//! - AI Model (deepseek-reasoner): $0.0044
//! - Perplexity Search: $0.0012
//! Total: $0.0056
//! ```

use super::Report;

/// `$` and 4 decimals.
pub fn usd(amount: f64) -> String {
    format!("${amount:.4}")
}

/// The blocks, separated by a blank line; a one-line note when the period has no costs.
pub fn render(report: &Report) -> String {
    if report.groups.is_empty() {
        return format!("No costs recorded from {} to {}.\n", report.from, report.to);
    }
    let blocks: Vec<String> = report
        .groups
        .iter()
        .map(|g| {
            let mut block = format!("{}:\n", g.title);
            for line in &g.lines {
                block.push_str(&format!("- {}: {}\n", line.label, usd(line.cost_usd)));
            }
            block.push_str(&format!("Total: {}\n", usd(g.total_usd)));
            block
        })
        .collect();
    blocks.join("\n")
}
