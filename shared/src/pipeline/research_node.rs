//! The research node of a content pipeline (seed 001): a research prompt in, `ResearchData`
//! out, with topics the pipeline covered recently excluded.
//!
//! The prompt is the caller's `prompts.researchPrompt`, or is built from `strategy`
//! (`contentTheme`, `keywords`) or the config defaults with the seed's template (a fixed
//! prefix and suffix that cannot be overridden, custom requirements and instructions, a topic
//! count). Results come from the search provider chain or the Codex CLI (`RESEARCH_PROVIDER`);
//! CLI output is parsed as JSON, then as text, then replaced by placeholders. Titles the same
//! as or similar to a recent topic are dropped, and the rest join the topic history.

use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::core::clock::Clock;
use crate::core::config::ResearchProvider;
use crate::core::error::{Error, Result};
use crate::core::json::parse_json_object;
use crate::core::records::RecordStore;
use crate::pipeline::codex::{CliError, CodexCli};
use crate::pipeline::topics;
use crate::web::analysis::Finding;
use crate::web::citations::Source;
use crate::web::query::{Kind, Query};
use crate::web::search::SearchService;
use crate::web::sources;

/// The seed's fixed prefix; not configurable.
pub const FIXED_PREFIX: &str = "以下のテーマについて最新の情報をリサーチしてください：";
/// The seed's fixed suffix; not configurable.
pub const FIXED_SUFFIX: &str =
    "出力形式：\n- 各情報源のタイトルと要約\n- 重要なポイントのリスト\n- 参考URL（可能な場合）";
const DEFAULT_REQUIREMENTS: [&str; 3] = ["最新のトレンドや動向", "実用的な情報や事例", "信頼できる情報源からのデータ"];
const MAX_TOPIC_COUNT: u32 = 10;

/// The node's settings (seed 001's `research` config), validated.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeConfig {
    pub default_theme: String,
    pub default_keywords: Vec<String>,
    pub topic_count: u32,
    pub enable_duplicate_check: bool,
    pub duplicate_check_days: u32,
    pub max_history_days: u32,
    pub custom_requirements: Vec<String>,
    pub custom_instructions: String,
}

impl Default for NodeConfig {
    fn default() -> Self {
        Self {
            default_theme: "technology trends".into(),
            default_keywords: vec!["tutorial".into(), "guide".into()],
            topic_count: 3,
            enable_duplicate_check: true,
            duplicate_check_days: 7,
            max_history_days: 30,
            custom_requirements: DEFAULT_REQUIREMENTS.map(String::from).to_vec(),
            custom_instructions: String::new(),
        }
    }
}

/// A validated `POST /research` request.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeRequest {
    pub pipeline_id: String,
    /// `prompts.researchPrompt`, when the prompt-refinement node supplied one.
    pub research_prompt: Option<String>,
    pub theme: String,
    pub keywords: Vec<String>,
    pub config: NodeConfig,
    /// What was overridden or ignored (e.g. a custom fixed prefix).
    pub warnings: Vec<String>,
}

fn invalid(message: impl Into<String>) -> Error {
    Error::invalid("invalid_research_request", message)
}

fn text_field(obj: &Map<String, Value>, name: &str, owner: &str) -> Result<Option<String>> {
    match obj.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(invalid(format!("{owner}.{name} must be a string"))),
    }
}

/// Most entries of a prompt list (keywords, requirements), and characters of each.
const MAX_LIST: usize = 20;
const MAX_ENTRY_CHARS: usize = 500;
/// Most characters of a theme, and of the custom instructions.
const MAX_THEME_CHARS: usize = 500;
const MAX_INSTRUCTIONS_CHARS: usize = crate::web::query::MAX_QUERY_CHARS;

/// `text` if it has at most `max` characters; else a 400 naming `what`.
fn bounded(text: String, max: usize, what: &str) -> Result<String> {
    let n = text.chars().count();
    if n > max {
        return Err(invalid(format!("{what} has {n} characters; at most {max} are accepted")));
    }
    Ok(text)
}

fn text_list(obj: &Map<String, Value>, name: &str, owner: &str) -> Result<Option<Vec<String>>> {
    match obj.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) if items.len() > MAX_LIST => {
            Err(invalid(format!("{owner}.{name} has {} entries; at most {MAX_LIST} are accepted", items.len())))
        }
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .ok_or_else(|| invalid(format!("{owner}.{name} must be an array of strings")))
                    .and_then(|e| bounded(e.to_owned(), MAX_ENTRY_CHARS, &format!("an entry of {owner}.{name}")))
            })
            .collect::<Result<Vec<_>>>()
            .map(Some),
        Some(_) => Err(invalid(format!("{owner}.{name} must be an array"))),
    }
}

fn number(obj: &Map<String, Value>, name: &str, range: std::ops::RangeInclusive<u32>) -> Result<Option<u32>> {
    match obj.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => {
            v.as_u64().and_then(|n| u32::try_from(n).ok()).filter(|n| range.contains(n)).map(Some).ok_or_else(|| {
                invalid(format!("config.{name} must be a whole number from {} to {}", range.start(), range.end()))
            })
        }
    }
}

fn object<'a>(root: &'a Map<String, Value>, name: &str) -> Result<Option<&'a Map<String, Value>>> {
    match root.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(o)) => Ok(Some(o)),
        Some(_) => Err(invalid(format!("{name} must be an object"))),
    }
}

impl NodeRequest {
    /// Parses `{pipelineId?, prompts?: {researchPrompt}, strategy?: {contentTheme, keywords},
    /// config?: {defaultTheme, defaultKeywords, topicCount, enableDuplicateCheck,
    /// duplicateCheckDays, maxHistoryDays, promptTemplate: {fixedPrefix, fixedSuffix,
    /// customRequirements, customInstructions}}}`.
    pub fn from_json(body: &[u8]) -> Result<Self> {
        let root = &crate::core::json::json_object(body)?;
        crate::core::json::only_known(root, &["pipelineId", "prompts", "strategy", "config"])?;
        let pipeline_id = text_field(root, "pipelineId", "request")?.unwrap_or_else(|| "default".into());
        if !crate::core::validate::is_id(&pipeline_id, 64) {
            return Err(invalid("pipelineId must be 1-64 characters of letters, digits, '-' or '_'"));
        }
        let mut warnings = Vec::new();
        let mut config = NodeConfig::default();
        if let Some(c) = object(root, "config")? {
            if let Some(t) = text_field(c, "defaultTheme", "config")? {
                config.default_theme = bounded(t, MAX_THEME_CHARS, "config.defaultTheme")?;
            }
            if let Some(k) = text_list(c, "defaultKeywords", "config")? {
                config.default_keywords = k;
            }
            config.topic_count = number(c, "topicCount", 1..=MAX_TOPIC_COUNT)?.unwrap_or(config.topic_count);
            config.duplicate_check_days =
                number(c, "duplicateCheckDays", 0..=365)?.unwrap_or(config.duplicate_check_days);
            config.max_history_days = number(c, "maxHistoryDays", 1..=365)?.unwrap_or(config.max_history_days);
            match c.get("enableDuplicateCheck") {
                None | Some(Value::Null) => {}
                Some(Value::Bool(b)) => config.enable_duplicate_check = *b,
                Some(_) => return Err(invalid("config.enableDuplicateCheck must be true or false")),
            }
            if let Some(t) = object(c, "promptTemplate")? {
                for (name, fixed) in [("fixedPrefix", FIXED_PREFIX), ("fixedSuffix", FIXED_SUFFIX)] {
                    if text_field(t, name, "promptTemplate")?.is_some_and(|v| v.trim() != fixed) {
                        tracing::warn!("{name} cannot be customized, using default");
                        warnings.push(format!("{name} cannot be customized; the default was used"));
                    }
                }
                if let Some(r) = text_list(t, "customRequirements", "promptTemplate")? {
                    config.custom_requirements = r;
                }
                if let Some(i) = text_field(t, "customInstructions", "promptTemplate")? {
                    config.custom_instructions =
                        bounded(i, MAX_INSTRUCTIONS_CHARS, "promptTemplate.customInstructions")?;
                }
            }
        }
        let research_prompt = match object(root, "prompts")? {
            Some(p) => Some(
                text_field(p, "researchPrompt", "prompts")?
                    .filter(|p| !p.trim().is_empty())
                    .ok_or_else(|| invalid("prompts.researchPrompt must be a non-empty string"))?,
            ),
            None => None,
        };
        let (mut theme, mut keywords) = (config.default_theme.clone(), config.default_keywords.clone());
        if let Some(s) = object(root, "strategy")? {
            if let Some(t) = text_field(s, "contentTheme", "strategy")?.filter(|t| !t.trim().is_empty()) {
                theme = t;
            }
            if let Some(k) = text_list(s, "keywords", "strategy")? {
                keywords = k;
            }
        }
        let prompt_chars = research_prompt.as_deref().map_or(0, |p| p.chars().count());
        if prompt_chars > 20_000 || theme.chars().count() > 500 {
            return Err(invalid("the research prompt or theme is too long"));
        }
        Ok(Self { pipeline_id, research_prompt, theme, keywords, config, warnings })
    }

    /// The research prompt: the supplied one, or the seed's default template.
    pub fn prompt(&self) -> String {
        if let Some(p) = &self.research_prompt {
            return p.clone();
        }
        let c = &self.config;
        let requirements: Vec<String> = c.custom_requirements.iter().map(|r| format!("- {r}")).collect();
        let topic_instruction = format!(
            "\n【重要】\n{}つの異なるトピック/ニュースを収集してください。各トピックは独立した内容であること。",
            c.topic_count
        );
        let instructions = if c.custom_instructions.is_empty() {
            String::new()
        } else {
            format!("追加指示：\n{}\n", c.custom_instructions)
        };
        format!(
            "\n{FIXED_PREFIX}\n\nテーマ: {}\nキーワード: {}\n\nリサーチ要件：\n{}\n{topic_instruction}\n\n{instructions}\n{FIXED_SUFFIX}\n",
            self.theme,
            self.keywords.join(", "),
            requirements.join("\n"),
        )
        .trim()
        .to_owned()
    }
}

/// The seed's exclusion block for topics covered in the last `days` days.
pub fn exclusion_block(previous: &[String], days: u32) -> String {
    let list: Vec<String> = previous.iter().map(|t| format!("- {t}")).collect();
    format!(
        "\n\n【除外すべきトピック】\n以下のトピックは過去{days}日間で既に扱っているため、避けてください：\n{}",
        list.join("\n")
    )
}

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

/// Execution facts of one run (seed 001's `metadata`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    pub execution_time: u64,
    pub timestamp: String,
    pub unique_topic_count: usize,
    pub duplicates_filtered: usize,
}

/// The node's answer: `ResearchData` plus where it came from and what was filtered.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeOutput {
    pub request_id: String,
    #[serde(flatten)]
    pub data: ResearchData,
    pub metadata: Metadata,
    /// `search` provider name, `mock`, or `codex`.
    pub provider: String,
    pub mock: bool,
    pub parsed_as: ParsedAs,
    pub warnings: Vec<String>,
    /// Whether the results' sources are stored under the request id (`GET /sources/{id}`);
    /// false only when the store failed after retries (they are logged for replay).
    pub sources_stored: bool,
}

/// The research node with its provider.
pub struct ResearchNode {
    pub search: Arc<SearchService>,
    pub codex: CodexCli,
    pub provider: ResearchProvider,
    pub records: Arc<dyn RecordStore>,
    pub clock: Arc<dyn Clock>,
}

impl ResearchNode {
    /// Runs the node. A CLI that is missing or keeps failing stops the pipeline with an error.
    pub async fn run(&self, req: &NodeRequest, request_id: &str) -> std::result::Result<NodeOutput, NodeError> {
        let started = Instant::now();
        let now = self.clock.now();
        let c = &req.config;
        let previous = if c.enable_duplicate_check {
            topics::recent(&*self.records, &req.pipeline_id, c.duplicate_check_days, now).await.unwrap_or_else(|e| {
                tracing::warn!(error = %e, "Failed to load topic history");
                Vec::new()
            })
        } else {
            Vec::new()
        };
        let mut prompt = req.prompt();
        if !previous.is_empty() {
            prompt.push_str(&exclusion_block(&previous, c.duplicate_check_days));
        }
        let query_label = if req.research_prompt.is_some() {
            prompt.lines().next().unwrap_or_default().to_owned()
        } else {
            req.theme.clone()
        };
        // `None`: the sources are stored with the answer below; `Some`: the search stored them.
        let (mut data, parsed_as, provider, mock, searched) = match self.provider {
            ResearchProvider::Codex => {
                let output = self.codex.run(&prompt).await.map_err(NodeError::Cli)?;
                let (data, how) = parse_output(&output, &query_label);
                (data, how, "codex".to_owned(), false, None)
            }
            ResearchProvider::Search => {
                let query = Query::plain(Kind::Research { topic_count: c.topic_count }, prompt, "research");
                let answer = self.search.run(&query, request_id).await;
                let (data, how) = parse_output(&Value::Object(answer.data).to_string(), &query_label);
                (data, how, answer.provider, answer.mock, Some(answer.sources_stored))
            }
        };
        // Sources are upstream URLs: only valid public http(s) ones are passed on.
        for r in &mut data.results {
            r.source = r.source.take().and_then(|s| crate::web::citations::normalise(&s).ok());
        }
        let total = data.results.len();
        data.results.retain(|r| !topics::is_duplicate(&r.title, &previous));
        let duplicates = total - data.results.len();
        if duplicates > 0 {
            tracing::info!("Filtered out {duplicates} duplicate topics");
        }
        if data.results.len() < c.topic_count as usize {
            tracing::warn!("Only {} unique topics found (expected {})", data.results.len(), c.topic_count);
        }
        let unique: Vec<String> = data.results.iter().map(|r| r.title.clone()).collect();
        // Placeholders and mock data are not topics the pipeline covered.
        let record = parsed_as != ParsedAs::Placeholder && !mock && !unique.is_empty();
        if record
            && let Err(e) =
                topics::save(&*self.records, &req.pipeline_id, request_id, &unique, c.max_history_days, now).await
        {
            tracing::error!(error = %e, "Failed to save topic history");
        }
        let sources_stored = match searched {
            Some(stored) => stored,
            None => {
                let found: Vec<Source> = data
                    .results
                    .iter()
                    .filter_map(|r| {
                        let url = r.source.clone()?;
                        Some(Source { url, title: Some(r.title.clone()), accessed_at: now })
                    })
                    .collect();
                sources::keep(&*self.records, request_id, &found, now).await
            }
        };
        Ok(NodeOutput {
            request_id: request_id.to_owned(),
            sources_stored,
            data,
            metadata: Metadata {
                execution_time: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                timestamp: crate::core::time::format(&now),
                unique_topic_count: unique.len(),
                duplicates_filtered: duplicates,
            },
            provider,
            mock,
            parsed_as,
            warnings: req.warnings.clone(),
        })
    }
}

/// Why the node stopped the pipeline.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error(transparent)]
    Cli(CliError),
}

impl NodeError {
    /// The HTTP error for this stop: a missing CLI is our misconfiguration (500); a CLI that
    /// kept failing is an upstream failure (502).
    pub fn status_and_code(&self) -> (u16, &'static str) {
        match self {
            Self::Cli(CliError::NotFound(_) | CliError::Spawn { .. }) => (500, "cli_not_found"),
            Self::Cli(_) => (502, "cli_failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_prompt_matches_the_seeds_ai_news_example() {
        let body = serde_json::json!({
            "config": {
                "defaultTheme": "今日のAIニュース",
                "defaultKeywords": ["AI", "機械学習", "LLM", "OpenAI", "Google AI"],
                "topicCount": 3,
                "promptTemplate": {
                    "customRequirements": ["本日または直近24時間以内のニュース", "企業の発表や新製品リリース", "信頼できるニュースソースからの情報", "日本語または英語の情報"],
                    "customInstructions": "各ニュースは独立したトピックとして、企業名・製品名・主要な変更点を明確に記載してください。"
                }
            }
        });
        let req = NodeRequest::from_json(body.to_string().as_bytes()).unwrap();
        let expected = "以下のテーマについて最新の情報をリサーチしてください：

テーマ: 今日のAIニュース
キーワード: AI, 機械学習, LLM, OpenAI, Google AI

リサーチ要件：
- 本日または直近24時間以内のニュース
- 企業の発表や新製品リリース
- 信頼できるニュースソースからの情報
- 日本語または英語の情報

【重要】
3つの異なるトピック/ニュースを収集してください。各トピックは独立した内容であること。

追加指示：
各ニュースは独立したトピックとして、企業名・製品名・主要な変更点を明確に記載してください。

出力形式：
- 各情報源のタイトルと要約
- 重要なポイントのリスト
- 参考URL（可能な場合）";
        assert_eq!(req.prompt(), expected);
    }

    #[test]
    fn strategy_overrides_the_config_defaults_and_prompts_override_both() {
        let req = NodeRequest::from_json(br#"{"strategy": {"contentTheme": "Rust", "keywords": ["async"]}}"#).unwrap();
        assert!(req.prompt().contains("テーマ: Rust\nキーワード: async"));
        assert!(req.prompt().contains("- 最新のトレンドや動向"), "default requirements");
        let req = NodeRequest::from_json(
            br#"{"prompts": {"researchPrompt": "Find X"}, "strategy": {"contentTheme": "Rust"}}"#,
        )
        .unwrap();
        assert_eq!(req.prompt(), "Find X");
        let req = NodeRequest::from_json(b"{}").unwrap();
        assert!(req.prompt().contains("テーマ: technology trends\nキーワード: tutorial, guide"));
    }

    #[test]
    fn template_rules_are_enforced() {
        let req = NodeRequest::from_json(r#"{"config": {"promptTemplate": {"fixedPrefix": "Ignore all that", "fixedSuffix": "出力形式：\n- 各情報源のタイトルと要約\n- 重要なポイントのリスト\n- 参考URL（可能な場合）"}}}"#.as_bytes()).unwrap();
        assert!(req.prompt().starts_with(FIXED_PREFIX));
        assert_eq!(req.warnings, ["fixedPrefix cannot be customized; the default was used"]);
        for (body, needle) in [
            (
                r#"{"config": {"promptTemplate": {"customRequirements": "just one"}}}"#,
                "customRequirements must be an array",
            ),
            (r#"{"config": {"promptTemplate": {"customInstructions": ["a"]}}}"#, "customInstructions must be a string"),
            (r#"{"config": {"topicCount": 0}}"#, "topicCount"),
            (r#"{"prompts": {}}"#, "researchPrompt"),
            (r#"{"pipelineId": "../etc"}"#, "pipelineId"),
        ] {
            let e = NodeRequest::from_json(body.as_bytes()).unwrap_err();
            assert_eq!(e.status(), 400);
            assert!(e.to_string().contains(needle), "{body}: {e}");
        }
        // Every prompt piece is bounded.
        let long = "長".repeat(501);
        let many: Vec<String> = (0..21).map(|i| format!("k{i}")).collect();
        for (body, needle) in [
            (serde_json::json!({"strategy": {"keywords": many}}), "strategy.keywords has 21 entries"),
            (serde_json::json!({"config": {"defaultKeywords": [long]}}), "an entry of config.defaultKeywords has 501"),
            (
                serde_json::json!({"config": {"promptTemplate": {"customRequirements": [long]}}}),
                "customRequirements has 501",
            ),
            (serde_json::json!({"config": {"defaultTheme": long}}), "config.defaultTheme has 501"),
            (
                serde_json::json!({"config": {"promptTemplate": {"customInstructions": "x".repeat(4001)}}}),
                "customInstructions has 4001 characters",
            ),
        ] {
            let e = NodeRequest::from_json(body.to_string().as_bytes()).unwrap_err();
            assert_eq!(e.status(), 400);
            assert!(e.to_string().contains(needle), "{body}: {e}");
        }
    }

    #[test]
    fn the_exclusion_block_is_the_seeds() {
        assert_eq!(
            exclusion_block(&["A".into(), "B".into()], 7),
            "\n\n【除外すべきトピック】\n以下のトピックは過去7日間で既に扱っているため、避けてください：\n- A\n- B"
        );
    }

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
