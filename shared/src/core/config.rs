//! The one configuration loader: every environment variable the bundle reads is read here.
//! Defaults make a fresh checkout run with no keys and no cloud (see README, `.env.example`).

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use crate::core::error::{Error, Result};

/// A secret from the environment. Its `Debug` never shows the value.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// The value, for building an `Authorization` header and nothing else.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// Which record store adapter to build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordStoreKind {
    /// Embedded SQLite file under `DATA_DIR`.
    Local,
    /// DynamoDB table `TABLE_NAME` (endpoint overridable by `AWS_ENDPOINT_URL_DYNAMODB`).
    DynamoDb { table: String },
}

#[derive(Debug, Clone)]
pub struct Config {
    pub perplexity_api_key: Option<Secret>,
    pub perplexity_base_url: String,
    pub record_store: RecordStoreKind,
    pub data_dir: PathBuf,
    pub cache_ttl: Duration,
    pub retry_base: Duration,
    pub upstream_timeout: Duration,
    /// Time box of a search's upstream work (`SEARCH_BUDGET_MS`, 25 s): waiting for an identical
    /// request, attempts, retry waits and failover all end inside it, under API Gateway's 30 s.
    pub search_budget: Duration,
    /// Time box of one request to the Qdrant server (`QDRANT_TIMEOUT_MS`).
    pub qdrant_timeout: Duration,
    pub tavily_api_key: Option<Secret>,
    pub tavily_base_url: String,
    /// Failover order of the search providers (names), e.g. `perplexity,tavily`.
    pub search_providers: Vec<String>,
    /// Consecutive failed requests after which a provider is skipped for `breaker_cooldown`.
    pub breaker_failures: u32,
    pub breaker_cooldown: Duration,
    /// The CLI provider: program, its arguments before the prompt, per-run timeout, and
    /// the first retry delay (then doubled: 5 s, 10 s, 20 s by default).
    pub codex_command: String,
    pub codex_args: Vec<String>,
    /// What goes between `codex_args` and the prompt (`--`, so a prompt is never a flag).
    pub codex_prompt_separator: Option<String>,
    pub codex_timeout: Duration,
    /// Of a whole CLI research run, attempts and waits (`RESEARCH_NODE_TIMEOUT_SECS`; seed 001:
    /// 10 minutes).
    pub research_node_timeout: Duration,
    pub codex_retry_base: Duration,
    /// Which provider the research node uses.
    pub research_provider: ResearchProvider,
    /// Who a caller may bill (`AGENTS`): every cost record is grouped under one of them.
    pub agents: Vec<String>,
    /// The JWT claim that is the user id on user routes (`USER_CLAIM`, default `sub`).
    pub user_claim: String,
    /// Whose users' tokens are verified in code where no authorizer runs, as given
    /// (`JWT_ISSUER`, `JWT_AUDIENCE`): the HTTP edge checks them (`http::jwt::Issuer`).
    pub jwt_issuer: Option<String>,
    pub jwt_audience: Option<String>,
    /// The key signing the timeline's stream links (`STREAM_TOKEN_KEY`, 32+ characters); unset,
    /// each process draws its own (links then work only in the process that issued them).
    pub stream_token_key: Option<Secret>,
    /// Daily spend cap of each agent (`BUDGETS`, `agent=USD,...,*=USD`).
    pub budgets: BudgetCaps,
    /// How long any one record-store operation may take, retries included
    /// (`STORE_TIMEOUT_MS`, 1000); past it the caller's fallback runs.
    pub store_timeout: Duration,
    /// How long a budget hold waits for the record store (`BUDGET_STORE_TIMEOUT_MS`).
    pub budget_store_timeout: Duration,
    /// What a container may spend while the budget store is unreachable
    /// (`BUDGET_OUTAGE_ALLOWANCE_USD`), then it refuses.
    pub budget_outage_allowance_usd: f64,
    /// What one signed-in user's requests may spend a UTC day, across agents and containers
    /// (`USER_BUDGET_USD_PER_DAY`; 0: no per-user cap).
    pub user_budget_usd_per_day: f64,
    /// The IAM principals (`<account>:role/<name>`, or an ARN) that may set a user's budget
    /// (`OPERATORS`, comma-separated; unset: nobody).
    pub operators: Vec<String>,
    /// Agents that may ask for the expensive search (`model: sonar-pro`) (`PREMIUM_AGENTS`).
    pub premium_agents: Vec<String>,
    /// Requests a user may make per minute and per day on the user routes that search
    /// (`USER_QUOTA_PER_MINUTE`, `USER_QUOTA_PER_DAY`).
    pub user_quota_per_minute: u32,
    pub user_quota_per_day: u32,
    /// A JSON price table laid over the defaults (`PRICE_TABLE_PATH`).
    pub price_table_path: Option<PathBuf>,
    /// The chat model (OpenAI-compatible); no key -> the labelled mock model.
    pub llm_api_key: Option<Secret>,
    pub llm_base_url: String,
    /// Provider name for cost records and prices (`LLM_PROVIDER`).
    pub llm_provider: String,
    pub llm_milestone_model: String,
    pub llm_detail_model: String,
    pub llm_timeout: Duration,
    /// Timeline detail agents at once.
    pub detail_concurrency: usize,
    /// Of one whole timeline research (`TIMELINE_BUDGET_SECS`), inside Lambda's 900 s.
    pub timeline_budget: Duration,
    /// Zone in which an activity's 周几 / 早上…深夜 are said (`ACTIVITY_TIMEZONE`).
    pub activity_timezone: chrono_tz::Tz,
    /// Which embedder (`EMBEDDING_PROVIDER`): `local` (the bundled e5, default without a key) or
    /// `openai` (default with `EMBEDDING_API_KEY`).
    pub embedder: EmbedderKind,
    /// The bundled model's file (`EMBEDDING_MODEL_PATH`; default: where
    /// `infra/fetch-model.sh` puts it).
    pub embedding_model_path: PathBuf,
    /// The OpenAI-compatible embedding API; no key -> no embedder (lexical retrieval).
    pub embedding_api_key: Option<Secret>,
    pub embedding_base_url: String,
    pub embedding_provider: String,
    pub embedding_model: String,
    pub embedding_dimensions: usize,
    /// Where activity points live (`VECTOR_STORE`).
    pub vector_store: VectorStoreKind,
    pub edge_sharing: EdgeSharing,
    /// The collection (`QDRANT_COLLECTION`), also the Edge shard's directory name.
    pub qdrant_collection: String,
    /// Dense hits below this cosine are dropped (`RAG_MIN_SIMILARITY`; default: the
    /// embedder's own floor).
    pub rag_min_similarity: Option<f32>,
    /// `routed` (per query), `rrf` (dense + lexical) or `dense` (`RAG_FUSION`).
    pub rag_fusion: Fusion,
    /// Weight of the lexical list against the dense list's 1 where fused (`RAG_LEXICAL_WEIGHT`).
    pub rag_lexical_weight: f32,
    /// Time box of a search's query embedding (`RAG_EMBED_TIMEOUT_MS`).
    pub rag_embed_timeout: Duration,
    pub rag_match_reason: MatchReason,
    /// Time box of the model's match reasons (`RAG_REASON_TIMEOUT_MS`), within the 3 s budget.
    pub rag_reason_timeout: Duration,
    /// Chat model for match reasons (`LLM_RAG_MODEL`, else `LLM_MODEL`).
    pub llm_rag_model: String,
    /// Embedder calls per minute of the backfill job (`BACKFILL_RATE`).
    pub backfill_rate: u32,
    /// Time box of an index write's embedding (`INDEX_EMBED_TIMEOUT_MS`); past it, points are
    /// written pending.
    pub index_embed_timeout: Duration,
    /// The assistant's chat model (`LLM_ASSISTANT_MODEL`, else `LLM_MODEL`).
    pub llm_assistant_model: String,
    /// Earlier turns of a conversation sent to the model (`ASSISTANT_HISTORY_TURNS`, 1-50).
    pub assistant_history_turns: usize,
    /// How long a conversation is kept after its last turn (`ASSISTANT_HISTORY_TTL_DAYS`).
    pub assistant_history_ttl: Duration,
    /// Time box of one reply: model requests and tools (`ASSISTANT_BUDGET_MS`), inside what
    /// Lambda has left.
    pub assistant_budget: Duration,
    /// Time box of one tool call (`ASSISTANT_TOOL_TIMEOUT_MS`): `search_web`, the app's tools.
    pub assistant_tool_timeout: Duration,
    /// The app's tools the assistant may call over HTTP (`ASSISTANT_TOOLS`, a JSON list).
    pub assistant_tools: Vec<AppTool>,
    /// Who the assistant is, the first line of its instructions (`ASSISTANT_PERSONA`); the
    /// modes' own styles follow it.
    pub assistant_persona: String,
}

/// One of the app's tools (drafts, partner intents, my activities) the assistant calls over
/// HTTP: offered to the model in `modes`, `POST`ed to `url` with SigV4 or a bearer secret.
#[derive(Debug, Clone, PartialEq)]
pub struct AppTool {
    pub name: String,
    pub description: String,
    /// The JSON schema of its arguments (an object schema).
    pub parameters: serde_json::Value,
    pub url: url::Url,
    /// The modes it is offered in (`CREATE`, `PARTNER`, `MANAGE`, `EXPLORE`, `CHAT`).
    pub modes: Vec<String>,
    pub auth: ToolAuth,
    /// A side effect (publish, cancel): run only once the user approves the exact call
    /// (`shared::assistant::approvals`), never on the model's word alone.
    pub approval: bool,
}

/// How an app tool's request is authenticated.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolAuth {
    /// `Authorization: Bearer` with the secret in the environment variable the tool names.
    Bearer(Secret),
    /// Signed with the function's own role (SigV4) for `service` (`execute-api`, `lambda`) in
    /// `region` (default `AWS_REGION`).
    SigV4 { service: String, region: String },
}

/// `ASSISTANT_TOOLS` as written: a JSON list of these.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct AppToolEntry {
    name: String,
    description: String,
    parameters: serde_json::Value,
    url: String,
    modes: Vec<String>,
    auth: String,
    /// `bearer`: the environment variable holding the secret.
    secret_env: Option<String>,
    /// `sigv4`: the service signed for (default `execute-api`) and its region.
    service: Option<String>,
    region: Option<String>,
    /// The call has side effects: it waits for the user's approval (default false).
    #[serde(default)]
    approval: bool,
}

/// The modes an app tool may name.
pub const ASSISTANT_MODES: [&str; 5] = ["CHAT", "EXPLORE", "CREATE", "PARTNER", "MANAGE"];
/// Tool names the assistant has built in.
const BUILT_IN_TOOLS: [&str; 2] = ["search_web", "explore_nearby"];

/// Parses `ASSISTANT_TOOLS`; secrets are read through `get`. Each mistake names its tool.
fn app_tools(json: &str, get: impl Fn(&str) -> Option<String>) -> Result<Vec<AppTool>> {
    let bad = |name: &str, why: String| Error::Config(format!("ASSISTANT_TOOLS: tool {name:?}: {why}"));
    let entries: Vec<AppToolEntry> = serde_json::from_str(json)
        .map_err(|e| Error::Config(format!("ASSISTANT_TOOLS is not a JSON list of tools: {e}")))?;
    let mut tools: Vec<AppTool> = Vec::new();
    for e in entries {
        let name = e.name;
        if !crate::core::validate::is_id(&name, 64) || BUILT_IN_TOOLS.contains(&name.as_str()) {
            return Err(bad(&name, "a name is 1-64 letters, digits, '-' or '_', and not a built-in tool's".into()));
        }
        if tools.iter().any(|t| t.name == name) {
            return Err(bad(&name, "named twice".into()));
        }
        if e.description.trim().is_empty() || e.description.len() > 1024 {
            return Err(bad(&name, "description must be 1-1024 bytes".into()));
        }
        if e.parameters.get("type").and_then(serde_json::Value::as_str) != Some("object") {
            return Err(bad(&name, "parameters must be a JSON schema of type object".into()));
        }
        let url = url::Url::parse(&e.url).map_err(|err| bad(&name, format!("url: {err}")))?;
        let loopback = matches!(url.host_str(), Some("127.0.0.1" | "localhost" | "[::1]"));
        if !(url.scheme() == "https" || (url.scheme() == "http" && loopback)) || !url.username().is_empty() {
            return Err(bad(&name, "url must be https (http only on loopback), without credentials".into()));
        }
        if e.modes.is_empty() || e.modes.iter().any(|m| !ASSISTANT_MODES.contains(&m.as_str())) {
            return Err(bad(&name, format!("modes must be some of {}", ASSISTANT_MODES.join(", "))));
        }
        let auth = match e.auth.as_str() {
            "bearer" => {
                let var = e.secret_env.ok_or_else(|| bad(&name, "bearer needs secretEnv".into()))?;
                // Only a variable meant for it: never another upstream's key.
                if !var.starts_with("APP_TOOL_") {
                    return Err(bad(&name, format!("secretEnv must name an APP_TOOL_* variable, not {var}")));
                }
                ToolAuth::Bearer(Secret(get(&var).ok_or_else(|| bad(&name, format!("secretEnv {var} is not set")))?))
            }
            "sigv4" => ToolAuth::SigV4 {
                service: e.service.unwrap_or_else(|| "execute-api".into()),
                region: e
                    .region
                    .or_else(|| get("AWS_REGION"))
                    .ok_or_else(|| bad(&name, "sigv4 needs a region (or AWS_REGION)".into()))?,
            },
            other => return Err(bad(&name, format!("auth must be bearer or sigv4, not {other:?}"))),
        };
        tools.push(AppTool {
            name,
            description: e.description,
            parameters: e.parameters,
            url,
            modes: e.modes,
            auth,
            approval: e.approval,
        });
    }
    Ok(tools)
}

/// Weight of the lexical list when it is fused, against 1 for the dense list: routed fusion
/// fuses only queries specific to it, so both channels count alike (`cargo xtask quality`).
pub const DEFAULT_LEXICAL_WEIGHT: f32 = 1.0;

/// The daily cap of each agent: `agent=USD,...,*=USD` (`*` for every agent not named; without
/// `*`, an agent not named may spend nothing).
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetCaps {
    named: BTreeMap<String, f64>,
    others: Option<f64>,
}

/// `BUDGETS` when unset: every agent may spend $20 a day.
pub const DEFAULT_BUDGETS: &str = "*=20";

impl BudgetCaps {
    /// Parses `agent=USD,...,*=USD`.
    pub fn parse(spec: &str) -> std::result::Result<Self, String> {
        let mut caps = Self { named: BTreeMap::new(), others: None };
        for entry in spec.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (agent, usd) =
                entry.split_once('=').ok_or_else(|| format!("BUDGETS entry {entry:?} is not agent=USD"))?;
            let (agent, usd) = (agent.trim(), usd.trim());
            let usd: f64 = usd
                .parse()
                .ok()
                .filter(|u: &f64| u.is_finite() && *u >= 0.0)
                .ok_or_else(|| format!("BUDGETS: {usd:?} (for {agent}) is not an amount of USD"))?;
            if agent == "*" {
                caps.others = Some(usd);
            } else if crate::core::validate::is_id(agent, 64) {
                caps.named.insert(agent.to_ascii_lowercase(), usd);
            } else {
                return Err(format!("BUDGETS: {agent:?} is not an agent name (1-64 of a-z, 0-9, '-', '_') or *"));
            }
        }
        Ok(caps)
    }

    /// The daily cap of `agent` in USD. `indexing`, when not named, has `rag`'s cap (the budget
    /// that paid for indexing before it had its own), so a deployment's older `BUDGETS` keeps
    /// indexing running.
    pub fn of(&self, agent: &str) -> f64 {
        let named = self.named.get(agent).or_else(|| (agent == "indexing").then(|| self.named.get("rag")).flatten());
        named.copied().or(self.others).unwrap_or(0.0)
    }
}

/// Which embedder adapter to build (`EMBEDDING_PROVIDER`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbedderKind {
    /// multilingual-e5-small in process (`embedder::e5`).
    Local,
    /// An OpenAI-compatible `/embeddings` API (`EMBEDDING_API_KEY`, `EMBEDDING_BASE_URL`).
    OpenAi,
}

/// How retrieval combines dense and lexical hits (`RAG_FUSION`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Fusion {
    /// Per query ([`crate::activities::ranking::routed`]): both channels by reciprocal rank
    /// when the query is specific to the lexical one (a name, a place, a rare term), else the
    /// dense hits first and lexical-only hits after them.
    Routed,
    /// Reciprocal rank fusion of both channels for every query.
    Rrf,
    /// Dense hits by similarity alone.
    Dense,
}

/// The agents of the seeds that call the search routes (`AGENTS` when unset): seed 000's
/// research and strategy agents, the writing agent, and seed 002's assistant (the tools).
pub const DEFAULT_AGENTS: [&str; 4] = ["research", "strategy", "writing", "assistant"];

/// How processes share the Qdrant Edge directory (`EDGE_SHARING`; see `index::edge`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EdgeSharing {
    /// Open per operation under a file lock: several processes may use the directory.
    Shared,
    /// Open once and keep it: this process owns the directory.
    Exclusive,
}

/// How results of a semantic search get their `matchReason` (`RAG_MATCH_REASON`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchReason {
    /// The chat model writes them (one call per request), template as fallback.
    Llm,
    /// Written from what matched, time and distance, without a model.
    Template,
    /// No `matchReason`.
    Off,
}

/// Which vector index adapter to build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VectorStoreKind {
    /// Qdrant Edge in process, under `DATA_DIR/qdrant`.
    Edge,
    /// A Qdrant server over gRPC.
    /// `read_only` (`QDRANT_READ_ONLY=true`): the function only reads, with a read-only key; it
    /// never creates the collection or its payload indexes.
    Qdrant { url: String, api_key: Option<Secret>, read_only: bool },
}

/// The research node's source of results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResearchProvider {
    /// The search provider chain (`SEARCH_PROVIDERS`), falling back to labelled mock data.
    Search,
    /// The Codex CLI (`CODEX_COMMAND CODEX_ARGS <prompt>`).
    Codex,
}

/// The agent names in `list` (comma or space separated), each checked; `key` names the setting.
fn names(list: String, key: &str) -> Result<Vec<String>> {
    list.split([',', ' '])
        .filter(|a| !a.is_empty())
        .map(|a| {
            crate::core::validate::agent_name(Some(a), "")
                .map_err(|_| Error::Config(format!("{key}: {a:?} is not an agent name (1-64 of a-z, 0-9, '-', '_')")))
        })
        .collect()
}

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Result<Self> {
        Self::from_lookup(|key| std::env::var(key).ok())
    }

    /// Reads configuration through `get` (a test passes a map). Empty values count as unset.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let get = |key: &str| get(key).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        let record_store = match get("RECORD_STORE").as_deref().unwrap_or("local") {
            "local" => RecordStoreKind::Local,
            "dynamodb" => RecordStoreKind::DynamoDb {
                table: get("TABLE_NAME")
                    .ok_or_else(|| Error::Config("RECORD_STORE=dynamodb needs TABLE_NAME".into()))?,
            },
            other => {
                return Err(Error::Config(format!("RECORD_STORE must be local or dynamodb, not {other:?}")));
            }
        };
        // An upstream's base URL, without a trailing slash.
        let base_url =
            |key: &str, default: &str| get(key).unwrap_or_else(|| default.into()).trim_end_matches('/').to_owned();
        let number = |key: &str, default: u64| -> Result<u64> {
            match get(key) {
                None => Ok(default),
                Some(v) => v.parse().map_err(|_| Error::Config(format!("{key} must be a whole number, not {v:?}"))),
            }
        };
        Ok(Self {
            perplexity_api_key: get("PERPLEXITY_API_KEY").map(Secret),
            perplexity_base_url: base_url("PERPLEXITY_BASE_URL", "https://api.perplexity.ai"),
            record_store,
            data_dir: get("DATA_DIR").map_or_else(|| PathBuf::from("./.data"), PathBuf::from),
            cache_ttl: Duration::from_secs(number("CACHE_TTL_SECS", 3600)?),
            retry_base: Duration::from_millis(number("RETRY_BASE_MS", 1000)?),
            upstream_timeout: Duration::from_millis(number("UPSTREAM_TIMEOUT_MS", 30_000)?),
            search_budget: match number("SEARCH_BUDGET_MS", 25_000)? {
                0 => return Err(Error::Config("SEARCH_BUDGET_MS must be at least 1".into())),
                ms => Duration::from_millis(ms),
            },
            qdrant_timeout: Duration::from_millis(number("QDRANT_TIMEOUT_MS", 1_000)?.max(1)),
            tavily_api_key: get("TAVILY_API_KEY")
                .or_else(|| {
                    // Seed 002's front end named it so; a key belongs here, not in a browser bundle.
                    let alias = get("VITE_TAVILY_API_KEY");
                    if alias.is_some() {
                        tracing::warn!("VITE_TAVILY_API_KEY read as TAVILY_API_KEY: rename it (docs/search.md)");
                    }
                    alias
                })
                .map(Secret),
            tavily_base_url: base_url("TAVILY_BASE_URL", "https://api.tavily.com"),
            search_providers: {
                let names: Vec<String> = get("SEARCH_PROVIDERS")
                    .unwrap_or_else(|| "perplexity,tavily".into())
                    .split(',')
                    .map(|n| n.trim().to_ascii_lowercase())
                    .filter(|n| !n.is_empty())
                    .collect();
                if let Some(bad) = names.iter().find(|n| !matches!(n.as_str(), "perplexity" | "tavily")) {
                    return Err(Error::Config(format!(
                        "SEARCH_PROVIDERS names unknown provider {bad:?} (known: perplexity, tavily)"
                    )));
                }
                names
            },
            breaker_failures: u32::try_from(number("BREAKER_FAILURES", 3)?).unwrap_or(u32::MAX).max(1),
            breaker_cooldown: Duration::from_secs(number("BREAKER_COOLDOWN_SECS", 60)?),
            codex_command: get("CODEX_COMMAND").unwrap_or_else(|| "codex".into()),
            codex_args: get("CODEX_ARGS")
                .unwrap_or_else(|| "--search".into())
                .split_whitespace()
                .map(str::to_owned)
                .collect(),
            codex_prompt_separator: match get("CODEX_PROMPT_SEPARATOR").as_deref().map(str::trim) {
                None => Some("--".into()),
                Some("none") => None,
                Some(s) => Some(s.to_owned()),
            },
            codex_timeout: Duration::from_secs(number("CODEX_TIMEOUT_SECS", 600)?),
            research_node_timeout: Duration::from_secs(number("RESEARCH_NODE_TIMEOUT_SECS", 600)?.max(1)),
            codex_retry_base: Duration::from_millis(number("CODEX_RETRY_BASE_MS", 5000)?),
            agents: names(get("AGENTS").unwrap_or_else(|| DEFAULT_AGENTS.join(",")), "AGENTS")?,
            budgets: BudgetCaps::parse(&get("BUDGETS").unwrap_or_else(|| DEFAULT_BUDGETS.into()))
                .map_err(Error::Config)?,
            store_timeout: Duration::from_millis(number("STORE_TIMEOUT_MS", 1000)?.max(10)),
            budget_store_timeout: Duration::from_millis(number("BUDGET_STORE_TIMEOUT_MS", 1000)?.max(1)),
            budget_outage_allowance_usd: match get("BUDGET_OUTAGE_ALLOWANCE_USD") {
                None => 0.25,
                Some(v) => v.parse::<f64>().ok().filter(|u| u.is_finite() && *u >= 0.0).ok_or_else(|| {
                    Error::Config(format!("BUDGET_OUTAGE_ALLOWANCE_USD must be an amount of USD, not {v:?}"))
                })?,
            },
            user_budget_usd_per_day: {
                let v = get("USER_BUDGET_USD_PER_DAY").unwrap_or_else(|| "0.5".into());
                v.parse::<f64>().ok().filter(|u| u.is_finite() && *u >= 0.0).ok_or_else(|| {
                    Error::Config(format!("USER_BUDGET_USD_PER_DAY must be an amount of USD, not {v:?}"))
                })?
            },
            operators: match get("OPERATORS") {
                None => Vec::new(),
                Some(list) => list
                    .split(',')
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .map(|p| match p.len() <= 256 && p.chars().all(|c| c.is_ascii_graphic()) {
                        true => Ok(p.to_owned()),
                        false => Err(Error::Config(format!("OPERATORS: {p:?} is not an IAM principal"))),
                    })
                    .collect::<Result<_>>()?,
            },
            premium_agents: names(get("PREMIUM_AGENTS").unwrap_or_else(|| "research".into()), "PREMIUM_AGENTS")?,
            user_quota_per_minute: u32::try_from(number("USER_QUOTA_PER_MINUTE", 30)?).unwrap_or(u32::MAX),
            user_quota_per_day: u32::try_from(number("USER_QUOTA_PER_DAY", 1000)?).unwrap_or(u32::MAX),
            user_claim: match get("USER_CLAIM") {
                None => "sub".into(),
                Some(c) if c.len() <= 128 && c.chars().all(|ch| ch.is_ascii_graphic()) => c,
                Some(c) => return Err(Error::Config(format!("USER_CLAIM: {c:?} is not a claim name"))),
            },
            jwt_issuer: get("JWT_ISSUER"),
            jwt_audience: get("JWT_AUDIENCE"),
            stream_token_key: match get("STREAM_TOKEN_KEY") {
                Some(k) if k.len() < 32 => {
                    return Err(Error::Config("STREAM_TOKEN_KEY: give at least 32 characters of random key".into()));
                }
                k => k.map(Secret),
            },
            research_provider: match get("RESEARCH_PROVIDER").as_deref().unwrap_or("search") {
                "search" => ResearchProvider::Search,
                "codex" => ResearchProvider::Codex,
                other => {
                    return Err(Error::Config(format!("RESEARCH_PROVIDER must be search or codex, not {other:?}")));
                }
            },
            price_table_path: get("PRICE_TABLE_PATH").map(PathBuf::from),
            llm_api_key: get("LLM_API_KEY").map(Secret),
            llm_base_url: base_url("LLM_BASE_URL", "https://openrouter.ai/api/v1"),
            llm_provider: get("LLM_PROVIDER").unwrap_or_else(|| "openrouter".into()),
            llm_milestone_model: get("LLM_MILESTONE_MODEL")
                .or_else(|| get("LLM_MODEL"))
                .unwrap_or_else(|| "deepseek/deepseek-chat".into()),
            llm_detail_model: get("LLM_DETAIL_MODEL")
                .or_else(|| get("LLM_MODEL"))
                .unwrap_or_else(|| "deepseek/deepseek-chat".into()),
            llm_timeout: Duration::from_millis(number("LLM_TIMEOUT_MS", 120_000)?),
            detail_concurrency: usize::try_from(number("DETAIL_CONCURRENCY", 4)?).unwrap_or(4).clamp(1, 32),
            timeline_budget: Duration::from_secs(number("TIMELINE_BUDGET_SECS", 840)?.max(1)),
            activity_timezone: match get("ACTIVITY_TIMEZONE") {
                None => chrono_tz::Asia::Shanghai,
                Some(zone) => zone.parse().map_err(|_| {
                    Error::Config(format!("ACTIVITY_TIMEZONE {zone:?} is not an IANA zone such as Asia/Shanghai"))
                })?,
            },
            embedder: match get("EMBEDDING_PROVIDER").as_deref() {
                None if get("EMBEDDING_API_KEY").is_some() => EmbedderKind::OpenAi,
                None | Some("local") => EmbedderKind::Local,
                Some("openai") => EmbedderKind::OpenAi,
                Some(other) => {
                    return Err(Error::Config(format!("EMBEDDING_PROVIDER must be local or openai, not {other:?}")));
                }
            },
            embedding_model_path: get("EMBEDDING_MODEL_PATH").map_or_else(
                || {
                    get("RESEARCH_BUNDLE_CACHE")
                        .map(PathBuf::from)
                        .or_else(|| get("HOME").map(|h| PathBuf::from(h).join(".cache/research-bundle")))
                        .unwrap_or_else(|| PathBuf::from(".cache/research-bundle"))
                        .join("models/e5-small-q4.bin")
                },
                PathBuf::from,
            ),
            embedding_api_key: get("EMBEDDING_API_KEY").map(Secret),
            embedding_base_url: base_url("EMBEDDING_BASE_URL", "https://open.bigmodel.cn/api/paas/v4"),
            embedding_provider: get("EMBEDDING_PROVIDER_NAME").unwrap_or_else(|| "zhipu".into()),
            embedding_model: get("EMBEDDING_MODEL").unwrap_or_else(|| "embedding-3".into()),
            embedding_dimensions: usize::try_from(number("EMBEDDING_DIMENSIONS", 1024)?).unwrap_or(1024).max(1),
            vector_store: match get("VECTOR_STORE").as_deref().unwrap_or("edge") {
                "edge" => VectorStoreKind::Edge,
                "qdrant" => VectorStoreKind::Qdrant {
                    url: get("QDRANT_URL")
                        .ok_or_else(|| Error::Config("VECTOR_STORE=qdrant needs QDRANT_URL".into()))?,
                    api_key: get("QDRANT_API_KEY").map(Secret),
                    read_only: match get("QDRANT_READ_ONLY").as_deref().unwrap_or("false") {
                        "true" => true,
                        "false" => false,
                        other => {
                            return Err(Error::Config(format!(
                                "QDRANT_READ_ONLY must be true or false, not {other:?}"
                            )));
                        }
                    },
                },
                other => return Err(Error::Config(format!("VECTOR_STORE must be edge or qdrant, not {other:?}"))),
            },
            edge_sharing: match get("EDGE_SHARING").as_deref().unwrap_or("shared") {
                "shared" => EdgeSharing::Shared,
                "exclusive" => EdgeSharing::Exclusive,
                other => return Err(Error::Config(format!("EDGE_SHARING must be shared or exclusive, not {other:?}"))),
            },
            qdrant_collection: {
                let name = get("QDRANT_COLLECTION").unwrap_or_else(|| "activities".into());
                if !crate::core::validate::is_id(&name, 64) {
                    return Err(Error::Config(format!(
                        "QDRANT_COLLECTION must be 1-64 letters, digits, '-' or '_', not {name:?}"
                    )));
                }
                name
            },
            rag_min_similarity: match get("RAG_MIN_SIMILARITY") {
                None => None,
                Some(v) => Some(v.parse::<f32>().ok().filter(|s| (-1.0..=1.0).contains(s)).ok_or_else(|| {
                    Error::Config(format!("RAG_MIN_SIMILARITY must be a cosine from -1 to 1, not {v:?}"))
                })?),
            },
            rag_fusion: match get("RAG_FUSION").as_deref().unwrap_or("routed") {
                "routed" => Fusion::Routed,
                "rrf" => Fusion::Rrf,
                "dense" => Fusion::Dense,
                other => {
                    return Err(Error::Config(format!("RAG_FUSION must be routed, rrf or dense, not {other:?}")));
                }
            },
            rag_lexical_weight: match get("RAG_LEXICAL_WEIGHT") {
                None => DEFAULT_LEXICAL_WEIGHT,
                Some(v) => v.parse::<f32>().ok().filter(|w| (0.0..=10.0).contains(w)).ok_or_else(|| {
                    Error::Config(format!("RAG_LEXICAL_WEIGHT must be a number from 0 to 10, not {v:?}"))
                })?,
            },
            rag_embed_timeout: Duration::from_millis(number("RAG_EMBED_TIMEOUT_MS", 1500)?),
            // A model writes the reasons when one is configured (seed 004 R5.3), else the template.
            rag_match_reason: match get("RAG_MATCH_REASON").as_deref() {
                Some("llm") => MatchReason::Llm,
                Some("template") => MatchReason::Template,
                Some("off") => MatchReason::Off,
                None if get("LLM_API_KEY").is_some() => MatchReason::Llm,
                None => MatchReason::Template,
                Some(other) => {
                    return Err(Error::Config(format!("RAG_MATCH_REASON must be llm, template or off, not {other:?}")));
                }
            },
            rag_reason_timeout: Duration::from_millis(number("RAG_REASON_TIMEOUT_MS", 1000)?),
            llm_rag_model: get("LLM_RAG_MODEL")
                .or_else(|| get("LLM_MODEL"))
                .unwrap_or_else(|| "deepseek/deepseek-chat".into()),
            backfill_rate: u32::try_from(number("BACKFILL_RATE", 60)?).unwrap_or(u32::MAX).max(1),
            index_embed_timeout: Duration::from_millis(number("INDEX_EMBED_TIMEOUT_MS", 20_000)?),
            llm_assistant_model: get("LLM_ASSISTANT_MODEL")
                .or_else(|| get("LLM_MODEL"))
                .unwrap_or_else(|| "deepseek/deepseek-chat".into()),
            assistant_history_turns: usize::try_from(number("ASSISTANT_HISTORY_TURNS", 10)?).unwrap_or(10).clamp(1, 50),
            assistant_history_ttl: Duration::from_secs(number("ASSISTANT_HISTORY_TTL_DAYS", 30)?.max(1) * 86_400),
            assistant_budget: Duration::from_millis(number("ASSISTANT_BUDGET_MS", 25_000)?.max(1)),
            assistant_tool_timeout: Duration::from_millis(number("ASSISTANT_TOOL_TIMEOUT_MS", 8_000)?.max(1)),
            assistant_tools: match get("ASSISTANT_TOOLS") {
                None => Vec::new(),
                Some(json) => app_tools(&json, get)?,
            },
            assistant_persona: get("ASSISTANT_PERSONA").unwrap_or_else(|| "你是一个 AI 助手。".into()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(pairs: &[(&str, &str)]) -> Result<Config> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Config::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn seed_002s_tavily_key_name_is_an_alias() {
        let alias = config(&[("VITE_TAVILY_API_KEY", "tvly-vite")]).unwrap();
        assert_eq!(alias.tavily_api_key.as_ref().map(Secret::expose), Some("tvly-vite"));
        let both = config(&[("VITE_TAVILY_API_KEY", "tvly-vite"), ("TAVILY_API_KEY", "tvly-own")]).unwrap();
        assert_eq!(both.tavily_api_key.as_ref().map(Secret::expose), Some("tvly-own"), "the real name wins");
    }

    #[test]
    fn indexing_has_rags_budget_until_it_is_named() {
        let older = BudgetCaps::parse("rag=2,*=0").unwrap();
        assert_eq!((older.of("indexing"), older.of("other")), (2.0, 0.0));
        let named = BudgetCaps::parse("rag=2,indexing=3,*=0").unwrap();
        assert_eq!(named.of("indexing"), 3.0);
        assert_eq!(BudgetCaps::parse("*=1").unwrap().of("indexing"), 1.0);
    }

    #[test]
    fn a_model_writes_match_reasons_when_one_is_configured() {
        assert_eq!(config(&[]).unwrap().rag_match_reason, MatchReason::Template);
        assert_eq!(config(&[("LLM_API_KEY", "k")]).unwrap().rag_match_reason, MatchReason::Llm);
        let chosen = config(&[("LLM_API_KEY", "k"), ("RAG_MATCH_REASON", "template")]).unwrap();
        assert_eq!(chosen.rag_match_reason, MatchReason::Template, "an explicit choice wins");
        assert_eq!(
            config(&[("RAG_MATCH_REASON", " ")]).unwrap().rag_match_reason,
            MatchReason::Template,
            "empty is unset"
        );
        assert!(config(&[("RAG_MATCH_REASON", "gpt")]).is_err());
    }

    #[test]
    fn defaults_are_the_embedded_no_key_setup() {
        let c = config(&[]).unwrap();
        assert_eq!(c.record_store, RecordStoreKind::Local);
        assert!(c.perplexity_api_key.is_none());
        assert_eq!(c.perplexity_base_url, "https://api.perplexity.ai");
        assert_eq!(c.cache_ttl, Duration::from_secs(3600));
        assert_eq!(c.retry_base, Duration::from_secs(1));
        assert_eq!((c.search_budget, c.qdrant_timeout), (Duration::from_secs(25), Duration::from_secs(1)));
        assert_eq!(c.data_dir, PathBuf::from("./.data"));
        assert_eq!(c.search_providers, ["perplexity", "tavily"]);
        assert!(c.tavily_api_key.is_none());
        assert_eq!((c.codex_command.as_str(), c.codex_args.as_slice()), ("codex", &["--search".to_string()][..]));
        assert_eq!(c.codex_timeout, Duration::from_secs(600));
        assert_eq!(c.codex_retry_base, Duration::from_secs(5));
        assert_eq!(c.research_provider, ResearchProvider::Search);
        assert_eq!(c.activity_timezone, chrono_tz::Asia::Shanghai);
    }

    #[test]
    fn the_embedder_is_local_without_a_key_and_openai_with_one() {
        let c = config(&[("HOME", "/home/u")]).unwrap();
        assert_eq!(c.embedder, EmbedderKind::Local);
        assert_eq!(c.embedding_model_path, PathBuf::from("/home/u/.cache/research-bundle/models/e5-small-q4.bin"));
        assert_eq!(c.rag_min_similarity, None);
        assert_eq!(config(&[("EMBEDDING_API_KEY", "k")]).unwrap().embedder, EmbedderKind::OpenAi);
        let c = config(&[("EMBEDDING_API_KEY", "k"), ("EMBEDDING_PROVIDER", "local")]).unwrap();
        assert_eq!(c.embedder, EmbedderKind::Local);
        assert_eq!(config(&[("EMBEDDING_PROVIDER", "openai")]).unwrap().embedder, EmbedderKind::OpenAi);
        let e = config(&[("EMBEDDING_PROVIDER", "bert")]).unwrap_err();
        assert!(e.to_string().contains("EMBEDDING_PROVIDER"));
        let c = config(&[("EMBEDDING_MODEL_PATH", "/opt/models/e5.bin"), ("RAG_MIN_SIMILARITY", "0.7")]).unwrap();
        assert_eq!((c.embedding_model_path, c.rag_min_similarity), (PathBuf::from("/opt/models/e5.bin"), Some(0.7)));
    }

    #[test]
    fn secrets_never_show_in_debug_output() {
        let c = config(&[("PERPLEXITY_API_KEY", "pplx-very-secret")]).unwrap();
        assert!(!format!("{c:?}").contains("very-secret"));
        assert_eq!(c.perplexity_api_key.unwrap().expose(), "pplx-very-secret");
    }

    #[test]
    fn caps_name_agents_and_everyone_else() {
        let caps = BudgetCaps::parse("research=5, assistant=2.5,*=1").unwrap();
        assert_eq!((caps.of("research"), caps.of("assistant"), caps.of("writing")), (5.0, 2.5, 1.0));
        assert_eq!(BudgetCaps::parse("research=5").unwrap().of("writing"), 0.0, "no * : others spend nothing");
        assert_eq!(BudgetCaps::parse(DEFAULT_BUDGETS).unwrap().of("anyone"), 20.0);
        for bad in ["research", "research=-1", "research=lots", "a b=1", "x=NaN"] {
            assert!(BudgetCaps::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bad_values_are_named() {
        let e = config(&[("CACHE_TTL_SECS", "an hour")]).unwrap_err();
        assert!(e.to_string().contains("CACHE_TTL_SECS"));
        let e = config(&[("RECORD_STORE", "dynamodb")]).unwrap_err();
        assert!(e.to_string().contains("TABLE_NAME"));
        let e = config(&[("ACTIVITY_TIMEZONE", "Mars/Olympus")]).unwrap_err();
        assert!(e.to_string().contains("ACTIVITY_TIMEZONE"));
        let e = config(&[("SEARCH_PROVIDERS", "perplexity,bing")]).unwrap_err();
        assert!(e.to_string().contains("bing"));
    }
}
