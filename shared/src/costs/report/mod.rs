//! The cost report: what each agent spent on AI models, searches and embeddings over a period,
//! what the cache saved, and how available each search provider was, computed from the cost
//! period's daily sums ([`crate::costs::rollup`]: a closed day is one stored item, never a
//! table scan).
//!
//! Rendered as JSON (the [`Report`] itself), as seed 000's text blocks ([`text`]), or as a
//! self-contained HTML page with an inline SVG chart ([`html`]).

pub mod html;
pub mod text;

use std::collections::BTreeMap;

use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveTime, SecondsFormat, TimeZone, Utc};
use serde::Serialize;

use crate::core::error::{Error, Result};
use crate::costs::record::CallKind;
use crate::costs::rollup::{Day, Key};

/// Longest period a report may cover.
pub const MAX_DAYS: i64 = 366;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GroupBy {
    Agent,
    Day,
    Model,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Text,
    Html,
}

/// Validated report parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub group_by: GroupBy,
    pub format: Format,
}

fn bad(message: impl Into<String>) -> Error {
    Error::invalid("invalid_parameter", message)
}

/// Years a report period may touch: no cost record is older, and date arithmetic stays far
/// from the calendar's edge (`+262143-12-31` would otherwise overflow).
const YEARS: std::ops::RangeInclusive<i32> = 2000..=2200;

/// Parses `value` as RFC 3339 or as a date (`YYYY-MM-DD`: its start, or its end if `end`),
/// within [`YEARS`].
fn instant(name: &str, value: &str, end: bool) -> Result<DateTime<Utc>> {
    let t = match DateTime::parse_from_rfc3339(value) {
        Ok(t) => t.with_timezone(&Utc),
        Err(_) => {
            let day = NaiveDate::parse_from_str(value, "%Y-%m-%d")
                .map_err(|_| bad(format!("{name} {value:?} is not a date (YYYY-MM-DD) or an RFC 3339 time")))?;
            let time =
                if end { NaiveTime::from_hms_milli_opt(23, 59, 59, 999) } else { NaiveTime::from_hms_opt(0, 0, 0) };
            Utc.from_utc_datetime(&day.and_time(time.expect("valid time")))
        }
    };
    if !YEARS.contains(&t.year()) {
        return Err(bad(format!("{name} {value:?} is outside the years {}-{}", YEARS.start(), YEARS.end())));
    }
    Ok(t)
}

impl Params {
    /// Parses `from`, `to` (default: the last 7 days), `groupBy` (agent | day | model, default
    /// agent) and `format` (json | text | html, default json). Unknown parameters, from after
    /// to, and periods over a year are refused.
    pub fn parse<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>, now: DateTime<Utc>) -> Result<Self> {
        let (mut from, mut to, mut group_by, mut format) = (None, None, GroupBy::Agent, Format::Json);
        for (key, value) in pairs {
            match key {
                "from" => from = Some(instant("from", value, false)?),
                "to" => to = Some(instant("to", value, true)?),
                "groupBy" => {
                    group_by = match value {
                        "agent" => GroupBy::Agent,
                        "day" => GroupBy::Day,
                        "model" => GroupBy::Model,
                        other => return Err(bad(format!("groupBy {other:?} is not agent, day or model"))),
                    }
                }
                "format" => {
                    format = match value {
                        "json" => Format::Json,
                        "text" => Format::Text,
                        "html" => Format::Html,
                        other => return Err(bad(format!("format {other:?} is not json, text or html"))),
                    }
                }
                other => return Err(bad(format!("unknown parameter {other:?}; known: from, to, groupBy, format"))),
            }
        }
        let to = to.unwrap_or(now);
        let from = from.unwrap_or(to - Duration::days(7));
        if from > to {
            return Err(bad(format!("from ({}) is after to ({})", stamp(&from), stamp(&to))));
        }
        if to - from > Duration::days(MAX_DAYS) {
            return Err(bad(format!("the period is longer than {MAX_DAYS} days")));
        }
        Ok(Self { from, to, group_by, format })
    }
}

fn stamp(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// One line of a group: a kind of call (or, grouped by model, an agent).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Line {
    pub label: String,
    pub kind: CallKind,
    pub provider: String,
    pub model: String,
    pub cost_usd: f64,
    pub calls: u64,
    pub cached_calls: u64,
    pub mock_calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub saved_usd: f64,
}

/// A group of the report (an agent, a day or a model) with its lines and totals.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Group {
    pub key: String,
    pub title: String,
    pub lines: Vec<Line>,
    pub total_usd: f64,
    pub calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub saved_usd: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Totals {
    pub cost_usd: f64,
    pub calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// Cache effect on searches: hits against live searches.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheStats {
    pub hits: u64,
    pub live_searches: u64,
    /// `hits / (hits + live_searches)`; `None` with no search at all.
    pub hit_rate: Option<f64>,
    pub saved_usd: f64,
}

/// A search provider's answered vs failed requests in the period.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Availability {
    pub provider: String,
    pub successes: u64,
    pub failures: u64,
    pub availability: Option<f64>,
}

/// An agent's spend over the period against its daily budget (`BUDGETS`) times the days.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetUse {
    pub agent: String,
    pub daily_budget_usd: f64,
    pub budget_usd: f64,
    pub spent_usd: f64,
    /// `spent / budget`; `None` for an agent with no budget.
    pub used: Option<f64>,
    /// What users together spent of the agent on the period's last day, against their share
    /// (`USERS_BUDGET_SHARE`); the rest of the day's spend is the backend's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub users: Option<UsersUse>,
}

/// Users' spend of one agent on one UTC day, from the budget's counters (holds included).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UsersUse {
    pub day: String,
    pub budget_usd: f64,
    pub spent_usd: f64,
}

/// Cost per agent on one day (the chart's data), and how the day's live search answers' citations
/// held up.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Daily {
    pub day: String,
    pub agents: BTreeMap<String, f64>,
    pub citations: CitationQuality,
}

/// The citations of a day's live search answers: valid sources kept, citations refused by
/// validation (not a public http(s) URL, credentials, ...), inline `[n]` markers no source backs.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CitationQuality {
    pub answers: u64,
    pub sources: u64,
    pub rejected_citations: u64,
    pub unbacked_markers: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub from: String,
    pub to: String,
    pub group_by: GroupBy,
    pub groups: Vec<Group>,
    pub totals: Totals,
    pub cache: CacheStats,
    pub providers: Vec<Availability>,
    pub daily: Vec<Daily>,
    /// Each agent that spent in the period against its budget ([`Report::with_budgets`]).
    pub budgets: Vec<BudgetUse>,
    /// The signed-in users who spent most on the period's last day ([`TopSpenders`]).
    pub top_spenders: Option<TopSpenders>,
}

/// The users who spent most on one UTC day (their own dollar caps, `USER_BUDGET_USD_PER_DAY`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopSpenders {
    pub day: String,
    pub users: Vec<crate::costs::budget::Spender>,
}

/// `research` -> `Research Agent`, `seo-writer` -> `Seo Writer Agent`.
pub fn agent_title(agent: &str) -> String {
    let words: Vec<String> = agent
        .split(['-', '_', ' '])
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            c.next().map_or_else(String::new, |f| f.to_uppercase().chain(c).collect())
        })
        .collect();
    format!("{} Agent", words.join(" "))
}

fn call_label(key: &Key) -> String {
    match key.kind {
        CallKind::Llm => format!("AI Model ({})", key.model),
        CallKind::Embedding => format!("Embeddings ({})", key.model),
        CallKind::Search => {
            let mut c = key.provider.chars();
            let name: String = c.next().map_or_else(String::new, |f| f.to_uppercase().chain(c).collect());
            format!("{name} Search")
        }
    }
}

impl Report {
    /// The report with each agent's spend set against `cap`, its daily budget in USD.
    pub fn with_budgets(mut self, cap: impl Fn(&str) -> f64) -> Self {
        let days = self.daily.len().max(1) as f64;
        let mut spent: BTreeMap<&str, f64> = BTreeMap::new();
        for day in &self.daily {
            for (agent, usd) in &day.agents {
                *spent.entry(agent).or_default() += usd;
            }
        }
        self.budgets = spent
            .into_iter()
            .map(|(agent, spent_usd)| {
                let daily_budget_usd = cap(agent);
                let budget_usd = daily_budget_usd * days;
                let used = (budget_usd > 0.0).then(|| spent_usd / budget_usd);
                BudgetUse { agent: agent.to_owned(), daily_budget_usd, budget_usd, spent_usd, used, users: None }
            })
            .collect();
        self
    }

    /// Builds the report of `days` (the sums of `params`' period, [`Ledger::days`]) grouped as
    /// `params` says.
    ///
    /// [`Ledger::days`]: crate::costs::ledger::Ledger::days
    pub fn build(params: &Params, days: &[Day]) -> Self {
        // Group key -> (title, (line rank, line label) -> line).
        type Lines = BTreeMap<(u8, String), Line>;
        let mut groups: BTreeMap<String, (String, Lines)> = BTreeMap::new();
        let mut totals = Totals::default();
        let mut cache = CacheStats::default();
        let mut providers: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        let mut daily: BTreeMap<String, (BTreeMap<String, f64>, CitationQuality)> = BTreeMap::new();
        let mut day = params.from.date_naive();
        while day <= params.to.date_naive() {
            daily.insert(day.format("%Y-%m-%d").to_string(), Default::default());
            day = day.succ_opt().expect("date in range");
        }
        for (date, key, t) in days.iter().flat_map(|d| d.tallies.iter().map(move |(k, t)| (d.day, k, t))) {
            if key.kind == CallKind::Search && t.live_searches > 0 {
                let q = &mut daily.entry(date.format("%Y-%m-%d").to_string()).or_default().1;
                q.answers += t.live_searches;
                q.sources += t.sources;
                q.rejected_citations += t.rejected_citations;
                q.unbacked_markers += t.unbacked_markers;
            }
            if key.kind == CallKind::Search && t.live_searches + t.cache_hits + t.failed_searches > 0 {
                let p = providers.entry(key.provider.clone()).or_default();
                p.0 += t.live_searches;
                p.1 += t.failed_searches;
                cache.hits += t.cache_hits;
                cache.live_searches += t.live_searches;
                cache.saved_usd += t.cache_saved_usd;
            }
            if t.calls == 0 {
                continue;
            }
            let day = date.format("%Y-%m-%d").to_string();
            *daily.entry(day.clone()).or_default().0.entry(key.agent.clone()).or_default() += t.cost_usd;
            let (group, title) = match params.group_by {
                GroupBy::Agent => (key.agent.clone(), agent_title(&key.agent)),
                GroupBy::Day => (day.clone(), day),
                GroupBy::Model => {
                    let name = if key.model.is_empty() {
                        key.provider.clone()
                    } else {
                        format!("{}/{}", key.provider, key.model)
                    };
                    (name.clone(), name)
                }
            };
            // AI models first, then searches, then embeddings (seed 000's order).
            let rank = match key.kind {
                CallKind::Llm => 0,
                CallKind::Search => 1,
                CallKind::Embedding => 2,
            };
            let line_label = match params.group_by {
                GroupBy::Model => agent_title(&key.agent),
                _ => call_label(key),
            };
            let group = groups.entry(group).or_insert_with(|| (title, BTreeMap::new()));
            let line = group.1.entry((rank, line_label.clone())).or_insert_with(|| Line {
                label: line_label,
                kind: key.kind,
                provider: key.provider.clone(),
                model: key.model.clone(),
                cost_usd: 0.0,
                calls: 0,
                cached_calls: 0,
                mock_calls: 0,
                input_tokens: 0,
                output_tokens: 0,
                saved_usd: 0.0,
            });
            line.cost_usd += t.cost_usd;
            line.calls += t.calls;
            line.cached_calls += t.cached_calls;
            line.mock_calls += t.mock_calls;
            line.input_tokens += t.input_tokens;
            line.output_tokens += t.output_tokens;
            line.saved_usd += t.saved_usd;
            totals.cost_usd += t.cost_usd;
            totals.calls += t.calls;
            totals.input_tokens += t.input_tokens;
            totals.output_tokens += t.output_tokens;
        }
        let searches = cache.hits + cache.live_searches;
        cache.hit_rate = (searches > 0).then(|| cache.hits as f64 / searches as f64);
        let groups = groups
            .into_iter()
            .map(|(key, (title, lines))| {
                let lines: Vec<Line> = lines.into_values().collect();
                Group {
                    key,
                    title,
                    total_usd: lines.iter().map(|l| l.cost_usd).sum(),
                    calls: lines.iter().map(|l| l.calls).sum(),
                    input_tokens: lines.iter().map(|l| l.input_tokens).sum(),
                    output_tokens: lines.iter().map(|l| l.output_tokens).sum(),
                    saved_usd: lines.iter().map(|l| l.saved_usd).sum(),
                    lines,
                }
            })
            .collect();
        Self {
            from: stamp(&params.from),
            to: stamp(&params.to),
            group_by: params.group_by,
            groups,
            totals,
            cache,
            providers: providers
                .into_iter()
                .map(|(provider, (successes, failures))| Availability {
                    provider,
                    successes,
                    failures,
                    availability: (successes + failures > 0).then(|| successes as f64 / (successes + failures) as f64),
                })
                .collect(),
            daily: daily.into_iter().map(|(day, (agents, citations))| Daily { day, agents, citations }).collect(),
            budgets: Vec::new(),
            top_spenders: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 22, 12, 0, 0).unwrap()
    }

    fn params(pairs: &[(&str, &str)]) -> Result<Params> {
        Params::parse(pairs.iter().copied(), now())
    }

    #[test]
    fn defaults_are_the_last_seven_days_by_agent_as_json() {
        let p = params(&[]).unwrap();
        assert_eq!(
            (p.from, p.to, p.group_by, p.format),
            (now() - Duration::days(7), now(), GroupBy::Agent, Format::Json)
        );
        let p =
            params(&[("from", "2026-11-01"), ("to", "2026-11-02"), ("groupBy", "day"), ("format", "html")]).unwrap();
        assert_eq!(stamp(&p.from), "2026-11-01T00:00:00Z");
        assert_eq!(p.to, Utc.with_ymd_and_hms(2026, 11, 2, 23, 59, 59).unwrap() + Duration::milliseconds(999));
    }

    #[test]
    fn bad_parameters_are_named() {
        for (pairs, needle) in [
            (vec![("from", "2026-11-10"), ("to", "2026-11-01")], "is after"),
            (vec![("groupBy", "week")], "groupBy"),
            (vec![("format", "pdf")], "format"),
            (vec![("from", "last tuesday")], "not a date"),
            (vec![("from", "2024-01-01"), ("to", "2026-01-01")], "longer than 366 days"),
            (vec![("agent", "x")], "unknown parameter"),
            (vec![("from", "1999-12-31")], "outside the years"),
            (vec![("to", "2201-01-01")], "outside the years"),
            (vec![("to", "9999-12-31T23:59:59Z")], "outside the years"),
        ] {
            let e = params(&pairs).unwrap_err();
            assert_eq!(e.status(), 400);
            assert!(e.to_string().contains(needle), "{pairs:?}: {e}");
        }
        // The calendar's edges: refused (not a date, or outside the years), never a panic.
        for edge in ["+262143-12-31", "262143-12-31", " 262143-12-31", "-262144-01-01", "-262144-01-01T00:00:00Z"] {
            for name in ["from", "to"] {
                let e = params(&[(name, edge)]).unwrap_err();
                assert!(e.status() == 400 && e.to_string().contains(&format!("{name} {edge:?}")), "{name}={edge}: {e}");
            }
        }
    }

    #[test]
    fn agent_titles_read_like_the_seed() {
        assert_eq!(agent_title("research"), "Research Agent");
        assert_eq!(agent_title("seo-writer"), "Seo Writer Agent");
    }
}
