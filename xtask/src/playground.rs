//! What `cargo xtask serve` adds for a newcomer and a front-end developer: the playground page
//! (`playground/`, React built with esbuild from its committed lockfile), a local OpenID issuer
//! that signs in any name, and a sample app tool that waits for the user's approval.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

/// How long a token of the local issuer lasts.
const TOKEN_LIFE: Duration = Duration::from_secs(3600);

/// The playground's directory.
pub fn dir() -> PathBuf {
    crate::root().join("playground")
}

/// Builds the playground into `playground/dist/app.js` when a source, the lockfile or the page
/// changed since: `npm ci` when its packages are missing or older than the lockfile, then
/// `npm run build` (esbuild, under a second). Its output says what it runs.
pub fn build() -> crate::Result<PathBuf> {
    let dir = dir();
    let bundle = dir.join("dist/app.js");
    let modules = dir.join("node_modules/.package-lock.json");
    let lock = dir.join("package-lock.json");
    if newest(&lock).max(newest(&dir.join("package.json"))) > modified(&modules) {
        eprintln!("playground: npm ci (React, the AI SDK, esbuild; once)...");
        npm(&dir, &["ci", "--no-audit", "--no-fund", "--loglevel=error"])?;
    }
    let sources = [dir.join("src"), lock, dir.join("package.json")];
    if sources.iter().map(|p| newest(p)).max().unwrap_or(SystemTime::UNIX_EPOCH) > modified(&bundle) {
        npm(&dir, &["run", "build", "--silent"])?;
        eprintln!("playground: built {}", bundle.display());
    }
    Ok(bundle)
}

fn npm(dir: &Path, args: &[&str]) -> crate::Result {
    let status = Command::new("npm")
        .args(args)
        .current_dir(dir)
        .status()
        .map_err(|e| format!("npm {}: {e} (install Node.js 20 and npm)", args.join(" ")))?;
    if !status.success() {
        return Err(format!("npm {} failed in {}", args.join(" "), dir.display()).into());
    }
    Ok(())
}

fn modified(path: &Path) -> SystemTime {
    path.metadata().and_then(|m| m.modified()).unwrap_or(SystemTime::UNIX_EPOCH)
}

/// The newest modification under `path` (a file, or a directory's files).
fn newest(path: &Path) -> SystemTime {
    match std::fs::read_dir(path) {
        Ok(entries) => entries.flatten().map(|e| newest(&e.path())).max().unwrap_or(SystemTime::UNIX_EPOCH),
        Err(_) => modified(path),
    }
}

/// A local OpenID issuer at `url`: discovery, its key (ES256, drawn at start) and a token for
/// any name (`POST {url}/token {"sub"}`), for `audience`. Local only: it signs in anyone.
pub struct Issuer {
    pub url: String,
    pub audience: String,
    kid: String,
    key: EncodingKey,
    jwk: Value,
}

impl Issuer {
    pub fn new(url: String, audience: String) -> crate::Result<Self> {
        use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &aws_lc_rs::rand::SystemRandom::new())
                .map_err(|e| format!("cannot draw the local issuer's key: {e}"))?;
        let key = EncodingKey::from_ec_der(pkcs8.as_ref());
        let kid = format!("local-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
        let mut jwk = serde_json::to_value(jsonwebtoken::jwk::Jwk::from_encoding_key(&key, Algorithm::ES256)?)?;
        jwk["kid"] = json!(kid);
        jwk["use"] = json!("sig");
        Ok(Self { url, audience, kid, key, jwk })
    }

    /// The OpenID discovery document.
    pub fn discovery(&self) -> Value {
        json!({"issuer": self.url, "jwks_uri": format!("{}/jwks.json", self.url),
               "token_endpoint": format!("{}/token", self.url), "response_types_supported": ["id_token"],
               "subject_types_supported": ["public"], "id_token_signing_alg_values_supported": ["ES256"]})
    }

    pub fn jwks(&self) -> Value {
        json!({"keys": [self.jwk]})
    }

    /// `{token, expiresAt}` for the name `body` gives (`{"sub": "alice"}`), or why not.
    pub fn token(&self, body: &[u8]) -> Result<Value, String> {
        let sub = serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|v| v.get("sub")?.as_str().map(str::to_owned))
            .ok_or("send {\"sub\": \"<a user name>\"}")?;
        shared::core::validate::user_id(&sub).map_err(|e| e.to_string())?;
        let now = chrono::Utc::now();
        let expires = now + chrono::Duration::from_std(TOKEN_LIFE).unwrap_or_default();
        let claims = json!({"iss": self.url, "aud": self.audience, "sub": sub,
                            "iat": now.timestamp(), "exp": expires.timestamp()});
        let header = Header { kid: Some(self.kid.clone()), ..Header::new(Algorithm::ES256) };
        let token = jsonwebtoken::encode(&header, &claims, &self.key).map_err(|e| e.to_string())?;
        Ok(json!({"token": token, "expiresAt": expires.to_rfc3339()}))
    }
}

/// The sample app tool's definition (`ASSISTANT_TOOLS`): `cancelActivity` in MANAGE, which
/// waits for the user's approval and is answered by the door itself (nothing is cancelled).
pub fn sample_tools(door: &str) -> String {
    json!([{
        "name": "cancelActivity",
        "description": "Cancel one of the user's activities (the playground's sample app: nothing is cancelled).",
        "parameters": {"type": "object", "properties": {"activityId": {"type": "string"}}},
        "url": format!("{door}/sample-app/tools/cancel"),
        "modes": ["MANAGE"],
        "auth": "bearer",
        "secretEnv": "APP_TOOL_TOKEN",
        "approval": true,
    }])
    .to_string()
}

/// The sample app's answer to an approved call (labelled sample data).
pub fn sample_answer(body: &[u8]) -> Value {
    let arguments = serde_json::from_slice::<Value>(body).ok().and_then(|v| v.get("arguments").cloned());
    json!({"cancelled": true, "arguments": arguments, "sample": "模擬資料: the playground's sample app changed nothing"})
}
