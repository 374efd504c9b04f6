//! The app's own tools (seed 004's createDraft, createPartnerIntent, getMyActivities, ...), as
//! a deployment configures them (`ASSISTANT_TOOLS`): each is `POST`ed to its URL with
//! `{tool, userId, conversationId, arguments}`, signed with the function's role (SigV4) or a
//! bearer secret from the environment, inside `ASSISTANT_TOOL_TIMEOUT_MS`. The answer's JSON
//! goes to the model as it is (at most [`MAX_ANSWER_BYTES`]); any failure becomes a
//! `{"error", "message"}` string, so the model can tell the user.

use std::time::Duration;

use aws_credential_types::provider::SharedCredentialsProvider;
use serde_json::{Value, json};

use crate::assistant::settings::{AppTool, ToolAuth};
use crate::core::aws::Signer;
use crate::web::tools::error_string;

/// The most of a tool's answer handed to the model.
pub const MAX_ANSWER_BYTES: usize = 16 * 1024;

/// The configured tools and one HTTP client for them.
pub struct AppTools {
    tools: Vec<AppTool>,
    http: crate::core::upstream::LazyClient,
    /// Signs with the function's own credentials (its role).
    signer: Signer,
}

/// Who and where a call is made for.
pub struct Caller<'a> {
    pub user: &'a str,
    pub conversation: &'a str,
    /// Sent as `Idempotency-Key`: the same for a retried call, so the app can apply it once.
    pub idempotency_key: &'a str,
}

/// The model's `arguments` as a tool receives them (an object, without who the call is for:
/// that is the envelope's, never the model's to say), or the error string the model reads.
pub fn sent_arguments(arguments: Value) -> Result<Value, String> {
    let Value::Object(mut arguments) = arguments else {
        return Err(error_string("invalid_arguments", "the arguments must be a JSON object"));
    };
    for key in ["userId", "user_id", "conversationId", "conversation_id"] {
        arguments.remove(key);
    }
    Ok(Value::Object(arguments))
}

impl AppTools {
    /// `tools`, each call ending within `timeout`.
    pub fn new(tools: Vec<AppTool>, timeout: Duration) -> crate::core::error::Result<Self> {
        let http = crate::core::upstream::LazyClient::new(move || {
            reqwest::Client::builder()
                .timeout(timeout)
                .connect_timeout(timeout.min(Duration::from_secs(3)))
                // An app tool's URL is the deployment's; a redirect elsewhere is not followed.
                .redirect(reqwest::redirect::Policy::none())
        });
        Ok(Self { tools, http, signer: Signer::default() })
    }

    /// The same tools, signing with `credentials` instead of the function's own (a role
    /// assumed elsewhere; tests).
    pub fn signing_with(mut self, credentials: SharedCredentialsProvider) -> Self {
        self.signer = Signer::with(credentials);
        self
    }

    /// The tools offered in `mode` (`CREATE`, ...).
    pub fn in_mode<'a>(&'a self, mode: &'a str) -> impl Iterator<Item = &'a AppTool> + 'a {
        self.tools.iter().filter(move |t| t.modes.iter().any(|m| m == mode))
    }

    /// Calls `tool` with the model's `arguments` for `caller`; the text the model reads.
    pub async fn call(&self, tool: &AppTool, arguments: Value, caller: &Caller<'_>) -> String {
        let arguments = match sent_arguments(arguments) {
            Ok(arguments) => arguments,
            Err(e) => return e,
        };
        let body = json!({"tool": tool.name, "userId": caller.user, "conversationId": caller.conversation, "arguments": arguments})
            .to_string();
        let http = match self.http.get() {
            Ok(http) => http,
            Err(e) => {
                tracing::error!(tool = %tool.name, error = %e, "the app tools' HTTP client could not be built");
                return error_string("tool_failed", "the tool is not available right now");
            }
        };
        let mut request = http
            .post(tool.url.clone())
            .header("content-type", "application/json")
            .header("idempotency-key", caller.idempotency_key);
        match &tool.auth {
            ToolAuth::Bearer(secret) => match secret.value().await {
                Ok(token) => request = request.bearer_auth(token),
                Err(e) => {
                    tracing::error!(tool = %tool.name, error = %e, "the app tool's token could not be read");
                    return error_string("tool_failed", "the tool is not available right now");
                }
            },
            ToolAuth::SigV4 { service, region } => match self
                .signer
                .headers(
                    "POST",
                    tool.url.as_str(),
                    service,
                    region,
                    &[("content-type", "application/json")],
                    body.as_bytes(),
                )
                .await
            {
                Ok(headers) => {
                    for (name, value) in headers {
                        request = request.header(name, value);
                    }
                }
                Err(e) => {
                    tracing::error!(tool = %tool.name, error = %e, "cannot sign the app tool's request");
                    return error_string("tool_failed", "the tool is not available right now");
                }
            },
        }
        let answer = async {
            let response = request.body(body).send().await?;
            let status = response.status();
            Ok::<_, reqwest::Error>((status, response.bytes().await?))
        };
        match answer.await {
            Ok((status, bytes)) if status.is_success() => {
                if bytes.len() > MAX_ANSWER_BYTES {
                    return error_string("tool_failed", "the tool's answer was too large");
                }
                match serde_json::from_slice::<Value>(&bytes) {
                    Ok(v) => v.to_string(),
                    Err(_) => error_string("tool_failed", "the tool's answer was not JSON"),
                }
            }
            Ok((status, _)) => {
                if let (401, ToolAuth::Bearer(secret)) = (status.as_u16(), &tool.auth) {
                    secret.refused();
                }
                tracing::warn!(tool = %tool.name, %status, "app tool refused");
                error_string("tool_failed", &format!("the tool answered HTTP {}", status.as_u16()))
            }
            Err(e) => {
                let why =
                    if e.is_timeout() { "the tool did not answer in time" } else { "the tool could not be reached" };
                tracing::warn!(tool = %tool.name, error = %e.without_url(), "app tool failed");
                error_string("tool_failed", why)
            }
        }
    }
}
