//! The report as one self-contained HTML page: inline CSS, an inline SVG stacked bar chart of
//! cost per day per agent, and the tables. No script, no external resource, so it opens the
//! same from a file, an email attachment or the endpoint.

use std::collections::BTreeSet;
use std::fmt::Write;

use super::text::usd;
use super::{GroupBy, Report, agent_title};

/// Agent colours, in agent name order (repeating past eight agents).
pub const PALETTE: [&str; 8] = ["#2563eb", "#db2777", "#16a34a", "#ea580c", "#7c3aed", "#0891b2", "#ca8a04", "#475569"];

const WIDTH: f64 = 960.0;
const HEIGHT: f64 = 320.0;
const LEFT: f64 = 72.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 16.0;
const BOTTOM: f64 = 44.0;

fn esc(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&#39;")
}

fn percent(rate: Option<f64>) -> String {
    rate.map_or_else(|| "n/a".to_owned(), |r| format!("{:.1}%", r * 100.0))
}

/// The SVG chart: one stacked bar per day, one segment (`rect.bar`) per agent with a cost.
fn chart(report: &Report, agents: &[&String]) -> String {
    let days = &report.daily;
    let max = days.iter().map(|d| d.agents.values().sum::<f64>()).fold(0.0, f64::max);
    let (plot_w, plot_h) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let mut svg = format!(
        r#"<svg id="chart" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="Cost per day per agent">"#
    );
    let _ = write!(
        svg,
        r##"<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{y}" stroke="#94a3b8"/><line x1="{LEFT}" y1="{y}" x2="{x}" y2="{y}" stroke="#94a3b8"/>"##,
        y = TOP + plot_h,
        x = LEFT + plot_w
    );
    if max <= 0.0 {
        let _ = write!(
            svg,
            r##"<text x="{}" y="{}" text-anchor="middle" fill="#64748b">No costs in this period</text></svg>"##,
            LEFT + plot_w / 2.0,
            TOP + plot_h / 2.0
        );
        return svg;
    }
    for i in 0..=4 {
        let value = max * f64::from(i) / 4.0;
        let y = TOP + plot_h - plot_h * f64::from(i) / 4.0;
        let _ = write!(
            svg,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#e2e8f0"/><text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + plot_w,
            LEFT - 6.0,
            y + 4.0,
            usd(value)
        );
    }
    let band = plot_w / days.len() as f64;
    let bar_w = (band * 0.7).max(1.0);
    let label_every = days.len().div_ceil(12).max(1);
    for (i, day) in days.iter().enumerate() {
        let x = LEFT + band * i as f64 + (band - bar_w) / 2.0;
        let mut y = TOP + plot_h;
        for (a, agent) in agents.iter().enumerate() {
            let Some(cost) = day.agents.get(*agent).copied().filter(|c| *c > 0.0) else { continue };
            let h = (cost / max * plot_h).max(1.0);
            y -= h;
            let _ = write!(
                svg,
                r#"<rect class="bar" data-day="{}" data-agent="{}" data-cost="{cost}" x="{x:.2}" y="{y:.2}" width="{bar_w:.2}" height="{h:.2}" fill="{}"><title>{} {}: {}</title></rect>"#,
                day.day,
                esc(agent),
                PALETTE[a % PALETTE.len()],
                day.day,
                esc(&agent_title(agent)),
                usd(cost)
            );
        }
        if i % label_every == 0 {
            let _ = write!(
                svg,
                r#"<text class="tick" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                x + bar_w / 2.0,
                TOP + plot_h + 18.0,
                &day.day[5..]
            );
        }
    }
    svg.push_str("</svg>");
    svg
}

/// The page.
pub fn render(report: &Report) -> String {
    let agents: Vec<&String> =
        report.daily.iter().flat_map(|d| d.agents.keys()).collect::<BTreeSet<_>>().into_iter().collect();
    let mut page = String::with_capacity(16 * 1024);
    let _ = write!(
        page,
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Cost report {from} to {to}</title><style>
body{{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1000px;color:#0f172a;padding:0 16px}}
h1{{font-size:24px;margin:0}}h2{{font-size:17px;margin:28px 0 8px}}.period{{color:#475569;margin:4px 0 16px}}
.cards{{display:flex;gap:12px;flex-wrap:wrap}}.card{{border:1px solid #e2e8f0;border-radius:8px;padding:10px 14px;min-width:160px}}
.card span{{display:block;color:#64748b;font-size:13px}}.card strong{{font-size:20px}}
table{{border-collapse:collapse;width:100%}}th,td{{text-align:left;padding:6px 8px;border-bottom:1px solid #e2e8f0}}
td.num,th.num{{text-align:right;font-variant-numeric:tabular-nums}}tr.total td{{font-weight:600;border-bottom:2px solid #94a3b8}}
.legend{{list-style:none;padding:0;display:flex;gap:16px;flex-wrap:wrap}}.swatch{{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:6px;vertical-align:-1px}}
svg .tick{{font-size:11px;fill:#475569}}
</style></head><body>
<h1>Cost report</h1><p class="period">{from} to {to} · grouped by {group}</p>
<section class="cards">
<div class="card"><span>Total cost</span><strong id="total-cost">{total}</strong></div>
<div class="card"><span>Calls</span><strong id="calls">{calls}</strong></div>
<div class="card"><span>Cache hit rate</span><strong id="cache-hit-rate">{hit_rate}</strong></div>
<div class="card"><span>Saved by the cache</span><strong id="saved">{saved}</strong></div>
</section>
<h2>Cost per day per agent</h2>
"#,
        from = esc(&report.from),
        to = esc(&report.to),
        group = match report.group_by {
            GroupBy::Agent => "agent",
            GroupBy::Day => "day",
            GroupBy::Model => "model",
        },
        total = usd(report.totals.cost_usd),
        calls = report.totals.calls,
        hit_rate = percent(report.cache.hit_rate),
        saved = usd(report.cache.saved_usd),
    );
    page.push_str(&chart(report, &agents));
    page.push_str(r#"<ul class="legend">"#);
    for (a, agent) in agents.iter().enumerate() {
        let _ = write!(
            page,
            r#"<li><span class="swatch" style="background:{}"></span>{}</li>"#,
            PALETTE[a % PALETTE.len()],
            esc(&agent_title(agent))
        );
    }
    page.push_str("</ul>\n<h2>Costs</h2><table id=\"costs\"><thead><tr><th>Group</th><th>Line</th><th class=\"num\">Calls</th><th class=\"num\">Cached</th><th class=\"num\">Tokens in / out</th><th class=\"num\">Cost</th></tr></thead><tbody>");
    for g in &report.groups {
        for line in &g.lines {
            let _ = write!(
                page,
                r#"<tr><td>{}</td><td>{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{} / {}</td><td class="num">{}</td></tr>"#,
                esc(&g.title),
                esc(&line.label),
                line.calls,
                line.cached_calls,
                line.input_tokens,
                line.output_tokens,
                usd(line.cost_usd)
            );
        }
        let _ = write!(
            page,
            r#"<tr class="total"><td>{}</td><td>Total</td><td class="num">{}</td><td></td><td class="num">{} / {}</td><td class="num">{}</td></tr>"#,
            esc(&g.title),
            g.calls,
            g.input_tokens,
            g.output_tokens,
            usd(g.total_usd)
        );
    }
    page.push_str("</tbody></table>\n<h2>Search providers</h2><table id=\"providers\"><thead><tr><th>Provider</th><th class=\"num\">Answered</th><th class=\"num\">Failed</th><th class=\"num\">Availability</th></tr></thead><tbody>");
    for p in &report.providers {
        let _ = write!(
            page,
            r#"<tr><td>{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td></tr>"#,
            esc(&p.provider),
            p.successes,
            p.failures,
            percent(p.availability)
        );
    }
    page.push_str("</tbody></table>\n</body></html>\n");
    page
}
