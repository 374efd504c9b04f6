//! The research node's request (seed 001): its body validated once (each mistake a 400 naming
//! its field), the prompt built from it with the seed's template, and the block that excludes
//! recently covered topics.

use serde_json::{Map, Value};

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
}
