//! What the research node makes of a provider's output (seed 001's `ResearchData`): JSON first,
//! then the text format, then labelled placeholders.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::core::json::parse_json_object;
use crate::web::analysis::Finding;

/// Seed 001's `ResearchData`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResearchData {
    pub query: String,
    pub results: Vec<Finding>,
    pub summary: String,
}

/// How CLI output was understood.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ParsedAs {
    Json,
    Text,
    Placeholder,
}

fn summary_of(results: &[Finding]) -> String {
    if results.is_empty() {
        return "No research results found.".into();
    }
    let titles: Vec<&str> = results.iter().map(|r| r.title.as_str()).collect();
    format!("Found {} research results: {}", results.len(), titles.join(", "))
}

fn placeholder_results() -> Vec<Finding> {
    vec![
        Finding {
            title: "プレースホルダー情報1".into(),
            content: "リサーチ結果が取得できなかったため、プレースホルダーデータを使用しています。".into(),
            source: None,
        },
        Finding {
            title: "プレースホルダー情報2".into(),
            content: "実際の運用では、Codex CLIから有効なデータが返されます。".into(),
            source: None,
        },
    ]
}

/// Normalises `{query, results[{title, content|summary, source|url}], summary}`.
fn from_json(v: &Value, query: &str) -> ResearchData {
    let text =
        |v: &Value, keys: &[&str]| keys.iter().find_map(|k| v.get(*k).and_then(Value::as_str)).map(str::to_owned);
    let results: Vec<Finding> = v
        .get("results")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter(|r| r.is_object())
                .map(|r| Finding {
                    title: text(r, &["title"]).filter(|t| !t.trim().is_empty()).unwrap_or_else(|| "Untitled".into()),
                    content: text(r, &["content", "summary"]).unwrap_or_default(),
                    source: text(r, &["source", "url"]),
                })
                .collect()
        })
        .unwrap_or_default();
    ResearchData {
        query: text(v, &["query"]).filter(|q| !q.trim().is_empty()).unwrap_or_else(|| query.to_owned()),
        summary: text(v, &["summary"]).filter(|s| !s.is_empty()).unwrap_or_else(|| summary_of(&results)),
        results,
    }
}

/// Parses `Title:` / `##` headings, `Source:` lines and the content between.
fn from_text(text: &str, query: &str) -> ResearchData {
    let mut results: Vec<Finding> = Vec::new();
    for line in text.lines().map(str::trim_end).filter(|l| !l.trim().is_empty()) {
        if let Some(title) =
            line.strip_prefix("Title:").or_else(|| line.starts_with("##").then(|| line.trim_start_matches('#')))
        {
            results.push(Finding { title: title.trim().to_owned(), content: String::new(), source: None });
        } else if let Some(current) = results.last_mut() {
            match line.strip_prefix("Source:") {
                Some(source) => current.source = Some(source.trim().to_owned()),
                None => {
                    current.content.push_str(line);
                    current.content.push('\n');
                }
            }
        }
    }
    for r in &mut results {
        r.content = r.content.trim_end().to_owned();
    }
    ResearchData { query: query.to_owned(), summary: summary_of(&results), results }
}

/// Parses CLI output: JSON first, then the text format, then placeholders (with a warning).
pub fn parse_output(output: &str, query: &str) -> (ResearchData, ParsedAs) {
    let (mut data, mut how) = match parse_json_object(output) {
        Some(v) if v.get("results").is_some_and(Value::is_array) => (from_json(&v, query), ParsedAs::Json),
        _ => (from_text(output, query), ParsedAs::Text),
    };
    if data.results.is_empty() {
        tracing::warn!("No research results found, using placeholder data");
        data.results = placeholder_results();
        data.summary = summary_of(&data.results);
        how = ParsedAs::Placeholder;
    }
    (data, how)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_parses_as_json_then_text_then_placeholders() {
        let (d, how) = parse_output(
            r#"{"query": "q", "results": [{"title": "T", "summary": "S", "url": "https://e.example"}], "summary": ""}"#,
            "x",
        );
        assert_eq!(how, ParsedAs::Json);
        assert_eq!(
            d.results,
            [Finding { title: "T".into(), content: "S".into(), source: Some("https://e.example".into()) }]
        );
        assert_eq!(d.summary, "Found 1 research results: T");
        let text = "Intro line\nTitle: 結果1\n内容1\nmore\nSource: https://a.example\n\n## 結果2\n内容2\n";
        let (d, how) = parse_output(text, "theme");
        assert_eq!(how, ParsedAs::Text);
        assert_eq!(d.query, "theme");
        assert_eq!(
            d.results[0],
            Finding {
                title: "結果1".into(), content: "内容1\nmore".into(), source: Some("https://a.example".into())
            }
        );
        assert_eq!(d.results[1].title, "結果2");
        let (d, how) = parse_output("\u{1b}[31mgarbage\u{0}", "theme");
        assert_eq!(how, ParsedAs::Placeholder);
        assert_eq!(d.results.len(), 2);
    }
}
