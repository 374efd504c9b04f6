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

/// Each agent's spend against its budget over the period, one line each (empty when none spent).
pub fn budgets(report: &Report) -> String {
    report
        .budgets
        .iter()
        .map(|b| {
            let used = b.used.map_or_else(|| "no budget".to_owned(), |u| format!("{:.1}%", u * 100.0));
            format!("- {}: {} of {} ({used})\n", super::agent_title(&b.agent), usd(b.spent_usd), usd(b.budget_usd))
        })
        .collect()
}
