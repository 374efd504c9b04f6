//! Timeline research (seed 003): a milestone agent builds the skeleton, then a detail agent
//! enriches each node (at most `DETAIL_CONCURRENCY` at once), and every step is an event of
//! the stream: `progress` -> `skeleton` -> `progress` -> `node_detail` × N (in completion
//! order) -> `complete`, or `error`.
//!
//! A node whose detail run fails is logged and stays a skeleton (no event); the others go on.
//! The whole research ends by one deadline (`TIMELINE_BUDGET_SECS`, inside what Lambda has
//! left): nodes not detailed by then stay skeletons and the stream ends with `complete`
//! (`detailed_nodes` of `total_nodes`); a skeleton not built by then ends it with `error`.
//! The caller stops the run by dropping it (a client that left): in-flight model and search
//! calls are dropped with it, so nothing bills after the client is gone.

pub mod events;
pub mod proposal;
pub mod readers;
pub mod runs;
pub mod sessions;
pub mod settings;

pub use events::{Event, Milestone, Milestones, NodeDetail, SkeletonNode};
pub use proposal::{LANGUAGES, Proposal, detect_language, progress_message};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::core::retry::RetryPolicy;
use crate::costs::ledger::Ledger;
use crate::llm::agent::{self, AgentSpec, Tools};
use crate::llm::{ChatModel, ToolSpec};
use crate::web::citations::{self, Source};
use crate::web::query::{Kind, Query};
use crate::web::search::SearchService;

const MILESTONE_INSTRUCTIONS: &str = "\
你是 Chrono 时间线调研系统的里程碑专家。你的任务是为一个主题构建时间线骨架。

按时间顺序列出这个主题最重要的 5-20 个里程碑节点，每个节点包含：
- date: YYYY-MM-DD（只知道年或月时，用该年或该月的第一天）
- title: 简短标题
- description: 一两句话的概述
- significance: high、medium 或 low

可以用 search 工具搜索 1-2 次，核实关键日期和事实。使用输入指定的语言输出所有文本字段。";

/// Seed 003's detail agent instructions, verbatim.
const DETAIL_INSTRUCTIONS: &str = "\
你是 Chrono 时间线调研系统的深度研究专家。你的任务是为时间线上的一个里程碑节点补充详细信息。

## 你会收到的信息

一个里程碑节点的基本信息：日期、标题、概述、重要程度。

## 工作流程（严格按顺序执行）

### Step 1: 基于自身知识生成初稿
先不要搜索。根据你的知识储备，填充以下字段：
- key_features: 3-5 条关键特性或要点（每条一句话）
- impact: 这个事件的影响和意义（2-3 句话）
- key_people: 关键人物列表（人名 + 一句话说明角色）
- context: 背景和因果关系——这个事件为什么会发生？之前发生了什么导致了它？（2-3 句话）

### Step 2: 搜索补充
用 search 工具搜索 1-2 次，补充你不确定的事实数据（具体数字、精确日期、人物全名等）。
搜索词应该具体到这个事件本身，不要搜索整个 topic 的宽泛信息。

### Step 3: 定稿
合并搜索到的新信息到各字段中。如果搜索结果与你的知识有冲突，以搜索结果为准。
sources 填入搜索到的相关 URL。

## 约束
- 搜索次数严格控制在 1-2 次，不要过度搜索
- key_features 必须是具体的事实，不要写空泛的评价
- key_people 如果确实没有特定关键人物（比如某个技术标准发布），可以为空列表
- 使用输入指定的语言输出所有文本字段";

fn milestones_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"nodes": {"type": "array", "items": {
            "type": "object",
            "properties": {"date": {"type": "string"}, "title": {"type": "string"}, "description": {"type": "string"}, "significance": {"type": "string"}},
            "required": ["date", "title", "description", "significance"],
            "additionalProperties": false,
        }}},
        "required": ["nodes"],
        "additionalProperties": false,
    })
}

fn detail_schema() -> Value {
    let strings = json!({"type": "array", "items": {"type": "string"}});
    json!({
        "type": "object",
        "properties": {"key_features": strings, "impact": {"type": "string"}, "key_people": strings, "context": {"type": "string"}, "sources": strings},
        "required": ["key_features", "impact", "key_people", "context", "sources"],
        "additionalProperties": false,
    })
}

/// The `search` tool of both agents, backed by the search provider chain. It remembers the
/// sources it returned, so a node only cites what its searches found.
struct SearchTool {
    search: Arc<SearchService>,
    agent: &'static str,
    /// The agent run (session and node); each search is request `<run>_<n>`.
    run: String,
    calls: AtomicUsize,
    found: Mutex<Vec<Source>>,
}

#[async_trait]
impl Tools for SearchTool {
    fn specs(&self) -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "search".into(),
            description: "搜索互联网获取最新信息。返回搜索结果的摘要和链接。".into(),
            parameters: json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}),
        }]
    }

    async fn call(&self, name: &str, arguments: Value) -> String {
        let text = arguments.get("query").and_then(Value::as_str).map(str::trim).unwrap_or_default();
        if name != "search" || text.is_empty() {
            return "No results found.".into();
        }
        let text = text.chars().take(crate::web::query::MAX_QUERY_CHARS).collect();
        let query = Query::plain(Kind::Search, text, self.agent);
        let request_id = format!("{}_{}", self.run, self.calls.fetch_add(1, Ordering::Relaxed) + 1);
        let answer = match self.search.run(&query, &request_id, None).await {
            Ok(answer) => answer,
            // The model answers from what it knows; why stays in our log.
            Err(e) => {
                tracing::warn!(error = %e, "timeline search refused");
                return "Search unavailable: answer from what you know.".into();
            }
        };
        let results: Vec<Source> = answer.sources.into_iter().take(RESULTS).collect();
        let text = results_text(&answer.content, &results);
        self.found.lock().unwrap_or_else(|e| e.into_inner()).extend(results);
        text
    }
}

/// The results the `search` tool shows per search, as seed 003's Tavily call (`max_results=5`).
const RESULTS: usize = 5;

/// What the `search` tool hands the model, in seed 003's format: the answer's summary, then each
/// result's title, URL and what it says (up to 300 characters).
fn results_text(summary: &str, results: &[Source]) -> String {
    let mut parts = Vec::new();
    if !summary.is_empty() {
        parts.push(format!("Summary: {}\n", summary.chars().take(citations::SNIPPET_CHARS).collect::<String>()));
    }
    for s in results {
        parts.push(format!(
            "- [{}]({})\n  {}",
            s.title.as_deref().unwrap_or(&s.url),
            s.url,
            s.snippet.as_deref().unwrap_or_default()
        ));
    }
    if parts.is_empty() { "No results found.".into() } else { parts.join("\n") }
}

/// Everything a timeline run needs, built once per process.
pub struct Timeline {
    llm: Arc<dyn ChatModel>,
    search: Arc<SearchService>,
    ledger: Ledger,
    milestone_model: String,
    detail_model: String,
    concurrency: usize,
    retry: RetryPolicy,
    /// Of one whole research (`TIMELINE_BUDGET_SECS`).
    budget: std::time::Duration,
}

/// Kept back from what Lambda has left, for the last events.
const END_RESERVE: std::time::Duration = std::time::Duration::from_secs(5);

impl Timeline {
    /// Runs on `llm` (`milestone_model` for the timeline, `detail_model` for up to
    /// `concurrency` node details at once), searching with `search`, accounting in its ledger;
    /// each research ends by `budget`.
    pub fn new(
        llm: Arc<dyn ChatModel>,
        search: Arc<SearchService>,
        models: (String, String),
        concurrency: usize,
        retry: RetryPolicy,
        budget: std::time::Duration,
    ) -> Self {
        let ledger = search.ledger().clone();
        let (milestone_model, detail_model) = models;
        Self { llm, search, ledger, milestone_model, detail_model, concurrency, retry, budget }
    }

    /// The ledger every call of a run is accounted in.
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// Runs the research of `proposal`, sending each event to `events` as it happens, by the
    /// budget or what `left` (Lambda's time) allows less a reserve. Returns early if the
    /// receiver is gone.
    pub async fn run(
        &self,
        proposal: &Proposal,
        session_id: &str,
        events: &mpsc::Sender<Event>,
        left: Option<std::time::Duration>,
    ) {
        let deadline = Instant::now() + crate::core::deadline::budget(self.budget, left, END_RESERVE, "the research");
        let send = |e: Event| async move { events.send(e).await.is_ok() };
        let lang = proposal.language.as_str();
        if !send(Event::Progress { phase: "skeleton", message: progress_message("skeleton", lang), percent: 0 }).await {
            return;
        }
        let nodes = match self.skeleton(proposal, session_id, deadline).await {
            Ok(nodes) => nodes,
            Err(e) => {
                tracing::error!(error = %e, "Research execution failed");
                send(Event::Error { message: "Research execution failed. Please try again.".into() }).await;
                return;
            }
        };
        let total = nodes.len();
        if !send(Event::Skeleton { nodes: nodes.clone(), mock: self.llm.is_mock() }).await
            || !send(Event::Progress { phase: "detail", message: progress_message("detail", lang), percent: 0 }).await
        {
            return;
        }
        let mut details = futures::stream::iter(nodes)
            .map(|node| async move {
                let result = self.detail(&node, proposal, session_id, deadline).await;
                (node.id, result)
            })
            .buffer_unordered(self.concurrency.max(1));
        let mut detailed = 0;
        loop {
            let Ok(next) = tokio::time::timeout_at(deadline, details.next()).await else {
                tracing::warn!(session_id, detailed, total, "the research's deadline passed; the rest stay skeletons");
                break;
            };
            let Some((node_id, result)) = next else { break };
            match result {
                Ok((details, sources)) => {
                    if !send(Event::NodeDetail { node_id, details, sources }).await {
                        return;
                    }
                    detailed += 1;
                }
                Err(e) => {
                    tracing::warn!(node = %node_id, error = %e, "Detail agent failed for node; it stays a skeleton")
                }
            }
        }
        // Runs still in flight are dropped here, and their calls with them.
        drop(details);
        send(Event::Complete { total_nodes: total, detailed_nodes: detailed }).await;
    }

    /// A fresh `search` tool for one agent run; its searches are stored under
    /// `<run>_<n>` (`<session>_ms_003_1`), so each keeps its own sources.
    fn search_tool(&self, agent: &'static str, run: String) -> SearchTool {
        SearchTool { search: Arc::clone(&self.search), agent, run, calls: AtomicUsize::new(0), found: Mutex::default() }
    }

    async fn skeleton(
        &self,
        proposal: &Proposal,
        session_id: &str,
        deadline: Instant,
    ) -> Result<Vec<SkeletonNode>, agent::AgentError> {
        let tools = self.search_tool("milestone", format!("{session_id}_skeleton"));
        let spec = AgentSpec {
            name: "milestone",
            model: &self.milestone_model,
            instructions: MILESTONE_INSTRUCTIONS,
            output: Some(("milestones", milestones_schema())),
            request_limit: 8,
            tool_limit: 4,
            output_retries: 2,
            deadline: Some(deadline),
        };
        let prompt = format!("主题：{}\n语言：{}", proposal.topic, proposal.language);
        let check = |m: &Milestones| {
            if m.nodes.is_empty() || m.nodes.len() > 30 {
                Err(format!("nodes must have 1 to 30 milestones, not {}", m.nodes.len()))
            } else if m.nodes.iter().any(|n| n.title.trim().is_empty()) {
                Err("every milestone needs a title".into())
            } else {
                Ok(())
            }
        };
        let milestones: Milestones =
            agent::run(&*self.llm, &self.ledger, self.retry, &spec, prompt, &tools, check, session_id).await?;
        Ok(milestones
            .nodes
            .into_iter()
            .enumerate()
            .map(|(i, milestone)| SkeletonNode { id: format!("ms_{:03}", i + 1), milestone, status: "skeleton" })
            .collect())
    }

    async fn detail(
        &self,
        node: &SkeletonNode,
        proposal: &Proposal,
        session_id: &str,
        deadline: Instant,
    ) -> Result<(NodeDetail, Vec<Source>), agent::AgentError> {
        let tools = self.search_tool("detail", format!("{session_id}_{}", node.id));
        let spec = AgentSpec {
            name: "detail",
            model: &self.detail_model,
            instructions: DETAIL_INSTRUCTIONS,
            output: Some(("node_detail", detail_schema())),
            request_limit: 8,
            tool_limit: 4,
            output_retries: 2,
            deadline: Some(deadline),
        };
        let m = &node.milestone;
        let prompt = format!(
            "请为以下里程碑节点补充详细信息：\n\n日期：{}\n标题：{}\n概述：{}\n重要程度：{}\n输出语言：{}",
            m.date, m.title, m.description, m.significance, proposal.language
        );
        let check = |d: &NodeDetail| {
            if (3..=5).contains(&d.key_features.len()) {
                Ok(())
            } else {
                Err(format!("key_features must have 3 to 5 items, not {}", d.key_features.len()))
            }
        };
        let mut detail: NodeDetail =
            agent::run(&*self.llm, &self.ledger, self.retry, &spec, prompt, &tools, check, session_id).await?;
        let found = tools.found.into_inner().unwrap_or_else(|e| e.into_inner());
        let sources = cited_sources(&detail.sources, found);
        detail.sources = sources.iter().map(|s| s.url.clone()).collect();
        Ok((detail, sources))
    }
}

/// The sources a node may cite: those it names that its searches returned (validated,
/// normalised, de-duplicated); all it found when it names none it found.
fn cited_sources(named: &[String], found: Vec<Source>) -> Vec<Source> {
    let mut unique: Vec<Source> = Vec::new();
    for s in found {
        if !unique.iter().any(|u| u.url == s.url) {
            unique.push(s);
        }
    }
    let named: Vec<String> = named.iter().filter_map(|u| citations::normalise(u).ok()).collect();
    let cited: Vec<Source> = unique.iter().filter(|s| named.contains(&s.url)).cloned().collect();
    if cited.is_empty() { unique } else { cited }
}
