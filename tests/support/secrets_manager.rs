//! A fake AWS Secrets Manager on 127.0.0.1: `GetSecretValue` as botocore 1.44.8's service model
//! (`secretsmanager/2017-10-17/service-2.json`) defines it, JSON 1.1 over `POST /` with
//! `X-Amz-Target: secretsmanager.GetSecretValue`, as strict as the real service: an unsigned
//! request, or one whose SigV4 signature is not the one [`ACCESS_KEY_ID`]'s secret key makes for
//! `secretsmanager` in `us-east-1` over what was received, is refused
//! (`MissingAuthenticationTokenException`, `InvalidSignatureException`), an unknown field or a missing `SecretId` is a
//! `ValidationException`, an unknown secret `ResourceNotFoundException`; each 4xx in the
//! service's `{"__type", "Message"}` envelope.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use wiremock::{Mock, Request, Respond, ResponseTemplate, matchers::any};

use crate::FakeServer;

/// The fake and its secrets (name → current value), which a test may change (a rotation).
pub struct SecretsManager {
    pub server: FakeServer,
    secrets: Arc<Mutex<HashMap<String, String>>>,
    hung: Arc<Mutex<bool>>,
}

struct Service {
    secrets: Arc<Mutex<HashMap<String, String>>>,
    hung: Arc<Mutex<bool>>,
}

fn refuse(status: u16, kind: &str, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(status)
        .insert_header("content-type", "application/x-amz-json-1.1")
        .set_body_json(json!({"__type": kind, "Message": message}))
}

impl Respond for Service {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        if *self.hung.lock().unwrap() {
            return ResponseTemplate::new(200).set_delay(Duration::from_secs(60));
        }
        let header = |name: &str| request.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("");
        if !header("authorization").starts_with("AWS4-HMAC-SHA256 Credential=") {
            return refuse(400, "MissingAuthenticationTokenException", "Missing Authentication Token");
        }
        if signed(request).as_deref() != Some(header("authorization")) {
            return refuse(
                400,
                "InvalidSignatureException",
                "The request signature we calculated does not match the signature you provided.",
            );
        }
        if request.method.as_str() != "POST" || request.url.path() != "/" {
            return refuse(404, "UnknownOperationException", "");
        }
        if header("x-amz-target") != "secretsmanager.GetSecretValue" {
            return refuse(400, "UnknownOperationException", "");
        }
        if header("content-type") != "application/x-amz-json-1.1" {
            return refuse(400, "SerializationException", "");
        }
        let Ok(Value::Object(body)) = serde_json::from_slice::<Value>(&request.body) else {
            return refuse(400, "SerializationException", "");
        };
        if let Some(unknown) = body.keys().find(|k| !["SecretId", "VersionId", "VersionStage"].contains(&k.as_str())) {
            return refuse(400, "ValidationException", &format!("Unknown parameter in input: \"{unknown}\""));
        }
        let Some(id) = body.get("SecretId").and_then(Value::as_str).filter(|id| (1..=2048).contains(&id.len())) else {
            return refuse(400, "ValidationException", "1 validation error detected: Value null at 'secretId'");
        };
        match self.secrets.lock().unwrap().get(id) {
            Some(value) => ResponseTemplate::new(200)
                .insert_header("content-type", "application/x-amz-json-1.1")
                .set_body_json(json!({
                    "ARN": format!("arn:aws:secretsmanager:us-east-1:123456789012:secret:{id}-AbCdEf"),
                    "Name": id,
                    "VersionId": uuid::Uuid::new_v4().to_string(),
                    "SecretString": value,
                    "VersionStages": ["AWSCURRENT"],
                    "CreatedDate": 1_764_201_600.0,
                })),
            None => refuse(400, "ResourceNotFoundException", "Secrets Manager can't find the specified secret."),
        }
    }
}

/// The credentials a function under test signs with (its environment's, as Lambda gives them).
pub const ACCESS_KEY_ID: &str = "AKIDEXAMPLE";
const SECRET_ACCESS_KEY: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
const SESSION_TOKEN: &str = "session-token";

/// The `Authorization` header the test credentials give `request` as received (its host, the
/// headers it says it signed, its body, its `X-Amz-Date`), for `secretsmanager` in `us-east-1`.
fn signed(request: &Request) -> Option<String> {
    use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
    let header = |name: &str| request.headers.get(name).and_then(|v| v.to_str().ok());
    let names = header("authorization")?.split("SignedHeaders=").nth(1)?.split(',').next()?.to_owned();
    let headers: Vec<(&str, &str)> = names
        .split(';')
        .filter(|n| !["host", "x-amz-date", "x-amz-security-token"].contains(n))
        .map(|n| Some((n, header(n)?)))
        .collect::<Option<_>>()?;
    let at = chrono::NaiveDateTime::parse_from_str(header("x-amz-date")?, "%Y%m%dT%H%M%SZ").ok()?.and_utc();
    let credentials = aws_credential_types::Credentials::new(
        ACCESS_KEY_ID,
        SECRET_ACCESS_KEY,
        Some(SESSION_TOKEN.to_owned()),
        None,
        "test",
    );
    let identity = aws_smithy_runtime_api::client::identity::Identity::from(credentials);
    let params = aws_sigv4::sign::v4::SigningParams::builder()
        .identity(&identity)
        .region("us-east-1")
        .name("secretsmanager")
        .time(at.into())
        .settings(SigningSettings::default())
        .build()
        .ok()?
        .into();
    let url = format!("http://{}{}", header("host")?, request.url.path());
    let signable = SignableRequest::new("POST", &url, headers.into_iter(), SignableBody::Bytes(&request.body)).ok()?;
    let (instructions, _) = sign(signable, &params).ok()?.into_parts();
    instructions.headers().find(|(k, _)| *k == "authorization").map(|(_, v)| v.to_owned())
}

impl SecretsManager {
    pub async fn start() -> Self {
        let server = FakeServer::start().await;
        let (secrets, hung) = (Arc::new(Mutex::new(HashMap::new())), Arc::new(Mutex::new(false)));
        Mock::given(any())
            .respond_with(Service { secrets: Arc::clone(&secrets), hung: Arc::clone(&hung) })
            .mount(&server)
            .await;
        Self { server, secrets, hung }
    }

    /// Puts `value` as secret `name`'s current version (`put-secret-value`).
    pub fn put(&self, name: &str, value: &str) {
        self.secrets.lock().unwrap().insert(name.to_owned(), value.to_owned());
    }

    /// Accepts requests and never answers them (or answers again).
    pub fn hang(&self, hung: bool) {
        *self.hung.lock().unwrap() = hung;
    }

    /// `GetSecretValue` requests received, of any outcome.
    pub async fn reads(&self) -> usize {
        self.server.received_requests().await.unwrap_or_default().len()
    }

    /// The variables of a function in `us-east-1` that reads `name`'s secret as `variable`
    /// through this fake, with the environment's credentials a Lambda function has.
    pub fn env(&self, variable: &str, name: &str) -> Vec<(String, String)> {
        [
            (format!("{variable}_SECRET"), name.to_owned()),
            (variable.to_owned(), String::new()),
            ("AWS_ENDPOINT_URL_SECRETS_MANAGER".into(), self.server.uri()),
            ("AWS_REGION".into(), "us-east-1".into()),
            ("AWS_ACCESS_KEY_ID".into(), ACCESS_KEY_ID.into()),
            ("AWS_SECRET_ACCESS_KEY".into(), SECRET_ACCESS_KEY.into()),
            ("AWS_SESSION_TOKEN".into(), SESSION_TOKEN.into()),
        ]
        .into()
    }
}
