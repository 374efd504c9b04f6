//! The research node's request (seed 001): its body validated once (each mistake a 400 naming
//! its field), the prompt built from it with the seed's template, and the block that excludes
//! recently covered topics.

use serde::Deserialize;
use serde::de::IgnoredAny;

use crate::core::error::{Error, Result};

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

/// `list` if it has at most [`MAX_LIST`] entries of at most [`MAX_ENTRY_CHARS`] each.
fn bounded_list(list: Vec<String>, what: &str) -> Result<Vec<String>> {
    if list.len() > MAX_LIST {
        return Err(invalid(format!("{what} has {} entries; at most {MAX_LIST} are accepted", list.len())));
    }
    list.into_iter().map(|e| bounded(e, MAX_ENTRY_CHARS, &format!("an entry of {what}"))).collect()
}

/// `n` if it is in `range`; else a 400 naming `config.{name}`.
fn in_range(n: Option<u32>, name: &str, range: std::ops::RangeInclusive<u32>) -> Result<Option<u32>> {
    match n {
        Some(n) if !range.contains(&n) => {
            Err(invalid(format!("config.{name} must be a whole number from {} to {}", range.start(), range.end())))
        }
        n => Ok(n),
    }
}

/// The body of `POST /research`, as sent.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Body {
    pipeline_id: Option<String>,
    prompts: Option<Prompts>,
    strategy: Option<Strategy>,
    config: Option<Config>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Prompts {
    research_prompt: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Strategy {
    content_theme: Option<String>,
    keywords: Option<Vec<String>>,
}

/// Seed 001's `research` config. Its deployment settings (`enabled`, `timeout`, the retry
/// policy, `codexCommand`, `codexArgs`, `topicHistoryPath`, `note`) are accepted so a seed
/// config can be sent as it is, and ignored: the deployment sets them, never a request.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Config {
    default_theme: Option<String>,
    default_keywords: Option<Vec<String>>,
    topic_count: Option<u32>,
    enable_duplicate_check: Option<bool>,
    duplicate_check_days: Option<u32>,
    max_history_days: Option<u32>,
    prompt_template: Option<PromptTemplate>,
    // Deployment settings: accepted, ignored.
    #[serde(default, rename = "enabled")]
    _enabled: IgnoredAny,
    #[serde(default, rename = "timeout")]
    _timeout: IgnoredAny,
    #[serde(default, rename = "retryCount")]
    _retry_count: IgnoredAny,
    #[serde(default, rename = "retryDelay")]
    _retry_delay: IgnoredAny,
    #[serde(default, rename = "codexCommand")]
    _codex_command: IgnoredAny,
    #[serde(default, rename = "codexArgs")]
    _codex_args: IgnoredAny,
    #[serde(default, rename = "topicHistoryPath")]
    _topic_history_path: IgnoredAny,
    #[serde(default, rename = "note")]
    _note: IgnoredAny,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PromptTemplate {
    fixed_prefix: Option<String>,
    fixed_suffix: Option<String>,
    custom_requirements: Option<Vec<String>>,
    custom_instructions: Option<String>,
}

impl NodeRequest {
    /// Parses `{pipelineId?, prompts?: {researchPrompt}, strategy?: {contentTheme, keywords},
    /// config?: {defaultTheme, defaultKeywords, topicCount, enableDuplicateCheck,
    /// duplicateCheckDays, maxHistoryDays, promptTemplate: {fixedPrefix, fixedSuffix,
    /// customRequirements, customInstructions}}}`, a typed body: an unknown field is a 400
    /// `unknown_field`, any other mistake a 400 `invalid_research_request` naming its path.
    pub fn from_json(body: &[u8]) -> Result<Self> {
        let body: Body = crate::core::json::typed_body(body, "invalid_research_request")?;
        let pipeline_id = body.pipeline_id.unwrap_or_else(|| "default".into());
        if !crate::core::validate::is_id(&pipeline_id, 64) {
            return Err(invalid("pipelineId must be 1-64 characters of letters, digits, '-' or '_'"));
        }
        let mut warnings = Vec::new();
        let mut config = NodeConfig::default();
        if let Some(c) = body.config {
            if let Some(t) = c.default_theme {
                config.default_theme = bounded(t, MAX_THEME_CHARS, "config.defaultTheme")?;
            }
            if let Some(k) = c.default_keywords {
                config.default_keywords = bounded_list(k, "config.defaultKeywords")?;
            }
            config.topic_count =
                in_range(c.topic_count, "topicCount", 1..=MAX_TOPIC_COUNT)?.unwrap_or(config.topic_count);
            config.duplicate_check_days =
                in_range(c.duplicate_check_days, "duplicateCheckDays", 0..=365)?.unwrap_or(config.duplicate_check_days);
            config.max_history_days =
                in_range(c.max_history_days, "maxHistoryDays", 1..=365)?.unwrap_or(config.max_history_days);
            config.enable_duplicate_check = c.enable_duplicate_check.unwrap_or(config.enable_duplicate_check);
            if let Some(t) = c.prompt_template {
                for (name, given, fixed) in
                    [("fixedPrefix", &t.fixed_prefix, FIXED_PREFIX), ("fixedSuffix", &t.fixed_suffix, FIXED_SUFFIX)]
                {
                    if given.as_deref().is_some_and(|v| v.trim() != fixed) {
                        tracing::warn!("{name} cannot be customized, using default");
                        warnings.push(format!("{name} cannot be customized; the default was used"));
                    }
                }
                if let Some(r) = t.custom_requirements {
                    config.custom_requirements = bounded_list(r, "promptTemplate.customRequirements")?;
                }
                if let Some(i) = t.custom_instructions {
                    config.custom_instructions =
                        bounded(i, MAX_INSTRUCTIONS_CHARS, "promptTemplate.customInstructions")?;
                }
            }
        }
        let research_prompt = match body.prompts {
            Some(p) => Some(
                p.research_prompt
                    .filter(|p| !p.trim().is_empty())
                    .ok_or_else(|| invalid("prompts.researchPrompt must be a non-empty string"))?,
            ),
            None => None,
        };
        let (mut theme, mut keywords) = (config.default_theme.clone(), config.default_keywords.clone());
        if let Some(s) = body.strategy {
            if let Some(t) = s.content_theme.filter(|t| !t.trim().is_empty()) {
                theme = t;
            }
            if let Some(k) = s.keywords {
                keywords = bounded_list(k, "strategy.keywords")?;
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

/// Longest list of topics the exclusion block carries, in characters.
pub const MAX_EXCLUSION_CHARS: usize = 4000;

/// The seed's exclusion block for topics covered in the last `days` days, `previous` newest
/// first: the list stops at [`MAX_EXCLUSION_CHARS`] (the oldest are dropped, and the log says
/// how many), so a long history never grows the prompt past a bound.
pub fn exclusion_block(previous: &[String], days: u32) -> String {
    let mut list: Vec<String> = Vec::new();
    let mut chars = 0;
    for t in previous {
        let line = format!("- {t}");
        chars += line.chars().count() + 1;
        if chars > MAX_EXCLUSION_CHARS {
            tracing::info!(
                dropped = previous.len() - list.len(),
                kept = list.len(),
                "exclusion block at its cap: the oldest topics left out"
            );
            break;
        }
        list.push(line);
    }
    format!(
        "\n\n【除外すべきトピック】\n以下のトピックは過去{days}日間で既に扱っているため、避けてください：\n{}",
        list.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_prompt_matches_the_seeds_ai_news_example() {
        let body = serde_json::json!({
            // Seed 001's AI-news `research` config as it is, deployment settings included.
            "config": {
                "enabled": true, "timeout": 600000, "retryCount": 3, "retryDelay": 5000,
                "codexCommand": "codex", "codexArgs": ["--search"],
                "defaultTheme": "今日のAIニュース",
                "defaultKeywords": ["AI", "機械学習", "LLM", "OpenAI", "Google AI"],
                "topicCount": 3,
                "note": "topicCount can be set to 3-4 for AI news videos",
                "enableDuplicateCheck": true, "duplicateCheckDays": 7, "maxHistoryDays": 30,
                "topicHistoryPath": "./cache/topic-history.json",
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
                "config.promptTemplate.customRequirements: invalid type: string",
            ),
            (
                r#"{"config": {"promptTemplate": {"customInstructions": ["a"]}}}"#,
                "config.promptTemplate.customInstructions: invalid type: sequence",
            ),
            (r#"{"config": {"promptTemplate": {"prefix": "x"}}}"#, "unknown field `prefix`"),
            (r#"{"config": {"colour": "red"}}"#, "unknown field `colour`"),
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
}
