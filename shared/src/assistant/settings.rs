//! The assistant's settings: its model, persona, history, time boxes, and the app's tools it
//! may call (`ASSISTANT_TOOLS`), each checked here so a mistake names its tool.

use std::time::Duration;

use crate::core::config::Env;
use crate::core::error::{Error, Result};
use crate::core::secrets::Secret;
use crate::llm::settings::model;

#[derive(Debug, Clone)]
pub struct Settings {
    /// The assistant's chat model (`LLM_ASSISTANT_MODEL`, else `LLM_MODEL`).
    pub model: String,
    /// Earlier turns of a conversation sent to the model (`ASSISTANT_HISTORY_TURNS`, 1-50).
    pub history_turns: usize,
    /// How long a conversation is kept after its last turn (`ASSISTANT_HISTORY_TTL_DAYS`).
    pub history_ttl: Duration,
    /// Time box of one reply: model requests and tools (`ASSISTANT_BUDGET_MS`), inside what
    /// Lambda has left.
    pub budget: Duration,
    /// Time box of one tool call (`ASSISTANT_TOOL_TIMEOUT_MS`): `search_web`, the app's tools.
    pub tool_timeout: Duration,
    /// The app's tools the assistant may call over HTTP (`ASSISTANT_TOOLS`, a JSON list).
    pub tools: Vec<AppTool>,
    /// Who the assistant is, the first line of its instructions (`ASSISTANT_PERSONA`); the
    /// modes' own styles follow it.
    pub persona: String,
}

impl Settings {
    pub fn read(env: &Env) -> Result<Self> {
        Ok(Self {
            model: model("LLM_ASSISTANT_MODEL", env),
            history_turns: usize::try_from(env.number("ASSISTANT_HISTORY_TURNS", 10)?).unwrap_or(10).clamp(1, 50),
            history_ttl: Duration::from_secs(env.number("ASSISTANT_HISTORY_TTL_DAYS", 30)?.max(1) * 86_400),
            budget: env.millis("ASSISTANT_BUDGET_MS", 25_000)?.max(Duration::from_millis(1)),
            tool_timeout: env.millis("ASSISTANT_TOOL_TIMEOUT_MS", 8_000)?.max(Duration::from_millis(1)),
            tools: match env.get("ASSISTANT_TOOLS") {
                None => Vec::new(),
                Some(json) => app_tools(&json, env)?,
            },
            persona: env.get("ASSISTANT_PERSONA").unwrap_or_else(|| "你是一个 AI 助手。".into()),
        })
    }
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

/// Parses `ASSISTANT_TOOLS`; secrets are read from `env`. Each mistake names its tool.
fn app_tools(json: &str, env: &Env) -> Result<Vec<AppTool>> {
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
                ToolAuth::Bearer(env.secret(&var)?.ok_or_else(|| bad(&name, format!("secretEnv {var} is not set")))?)
            }
            "sigv4" => ToolAuth::SigV4 {
                service: e.service.unwrap_or_else(|| "execute-api".into()),
                region: e
                    .region
                    .or_else(|| env.get("AWS_REGION"))
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
