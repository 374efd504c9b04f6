//! Signed stream links, for a client that cannot send headers (a browser's `EventSource`, a
//! plain `curl`): a short-lived token in the URL, bound to one session and its owner.
//!
//! The token is a JWT signed with HS256 under `STREAM_TOKEN_KEY`: `aud` `research-stream`,
//! `sub` the owner, `sid` the session, `exp` [`LIFETIME`] after it was issued. It opens that
//! session's stream and nothing else: reading its status or cancelling it takes the owner's own
//! credentials. Only this process family signs with the key, so no other algorithm is accepted.

use std::time::Duration;

use chrono::{DateTime, Utc};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use crate::core::error::{Error, Result};
use crate::core::secrets::Secret;
use crate::http::extract::Owner;
use crate::http::settings::{STREAM_KEY_LEN, Settings};

/// How long a link opens its stream: past a research's longest run (15 minutes), so a client
/// reconnecting with the same URL is let in to the end; a fresh one comes with the session's status.
pub const LIFETIME: Duration = Duration::from_secs(30 * 60);
const AUDIENCE: &str = "research-stream";

#[derive(Serialize, Deserialize)]
struct Claims {
    sub: String,
    sid: String,
    aud: String,
    exp: i64,
}

/// Issues and checks stream links with one key. Built once per process.
pub struct StreamLinks {
    key: Key,
}

enum Key {
    /// The deployment's (a managed one as it is now: a rotated key signs from its next read on,
    /// and links signed with the key held before it are still accepted, see [`StreamLinks::verify`]).
    Secret(Secret),
    /// This process's own.
    Drawn(Vec<u8>),
}

impl StreamLinks {
    /// Links signed with `key`.
    pub fn new(key: &[u8]) -> Self {
        Self { key: Key::Drawn(key.to_vec()) }
    }

    /// Links signed with `STREAM_TOKEN_KEY`, or with a key of this process's own when it is unset
    /// (a laptop's single process; a deployment always sets it, from a generated secret).
    pub fn from_settings(settings: &Settings) -> Self {
        match &settings.stream_token_key {
            Some(key) => Self { key: Key::Secret(key.clone()) },
            None => {
                tracing::warn!("STREAM_TOKEN_KEY is not set: stream links open only in this process");
                Self::new(&[uuid::Uuid::new_v4(), uuid::Uuid::new_v4()].map(|u| *u.as_bytes()).concat())
            }
        }
    }

    /// The key as it is now (a managed key too short is a misconfiguration): a 503 when it
    /// cannot be read, before anything is stored for a link it would sign.
    pub async fn key(&self) -> Result<Vec<u8>> {
        match &self.key {
            Key::Drawn(key) => Ok(key.clone()),
            Key::Secret(secret) => {
                let key = secret.value().await?;
                if key.len() < STREAM_KEY_LEN {
                    return Err(Error::Config(format!(
                        "STREAM_TOKEN_KEY_SECRET: its secret has fewer than {STREAM_KEY_LEN} characters"
                    )));
                }
                Ok(key.as_bytes().to_vec())
            }
        }
    }

    /// A token opening session `session`'s stream for `owner` until [`LIFETIME`] after `now`.
    pub async fn issue(&self, owner: &Owner, session: &str, now: DateTime<Utc>) -> Result<String> {
        let lifetime = i64::try_from(LIFETIME.as_secs()).unwrap_or(i64::MAX);
        let claims =
            Claims { sub: owner.key(), sid: session.into(), aud: AUDIENCE.into(), exp: now.timestamp() + lifetime };
        let key = EncodingKey::from_secret(&self.key().await?);
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &key)
            .map_err(|e| Error::Config(format!("cannot sign a stream link: {e}")))
    }

    /// The owner `token` speaks for, if it is this key's, for session `session`, and not expired
    /// at `now`; 401 otherwise. No link costs a Secrets Manager read: one that fails its own
    /// checks (its form, algorithm, audience, expiry, session, owner) is refused before any key
    /// is read, and one with a signature neither held key makes is refused without reading the
    /// key again, so a well-formed forgery cannot have the secret read on every try.
    pub async fn verify(&self, token: &str, session: &str, now: DateTime<Utc>) -> Result<Owner> {
        let refused = |why: &str| Error::Unauthenticated(format!("the stream link is not valid: {why}"));
        let forged = || refused("not signed by this deployment");
        let unverified = jsonwebtoken::dangerous::insecure_decode::<Claims>(token).map_err(|_| forged())?;
        if unverified.header.alg != Algorithm::HS256 || unverified.claims.aud != AUDIENCE {
            return Err(forged());
        }
        let claims = unverified.claims;
        if claims.exp <= now.timestamp() {
            return Err(refused("it has expired; GET /api/research/{id} gives a fresh one"));
        }
        if claims.sid != session {
            return Err(refused("it is for another session"));
        }
        let owner = Owner::parse(&claims.sub).ok_or_else(|| refused("it names no owner"))?;
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_audience(&[AUDIENCE]);
        validation.set_required_spec_claims(&["exp", "aud", "sub"]);
        // Checked above against the caller's clock, with no leeway: only this code issues them.
        validation.validate_exp = false;
        let signed =
            |key: &[u8]| jsonwebtoken::decode::<Claims>(token, &DecodingKey::from_secret(key), &validation).is_ok();
        // During a rotation containers sign with the old key or the new one for up to
        // SECRETS_CACHE_S: the key held before is accepted too (for that long). A link signed with
        // a key newer than this container's is refused until its next read of the key (within
        // SECRETS_CACHE_S); its client gets a fresh link from the session's status.
        if signed(&self.key().await?) {
            return Ok(owner);
        }
        let Key::Secret(secret) = &self.key else { return Err(forged()) };
        if secret.previous().is_some_and(|previous| signed(previous.as_bytes())) {
            return Ok(owner);
        }
        Err(forged())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_link_opens_its_own_session_until_it_expires() {
        let links = StreamLinks::new(b"0123456789abcdef0123456789abcdef");
        let now = Utc::now();
        let token = links.issue(&Owner::User("u-1".into()), "s-1", now).await.unwrap();
        assert_eq!(links.verify(&token, "s-1", now).await.unwrap(), Owner::User("u-1".into()));
        assert_eq!(
            links.verify(&token, "s-1", now + chrono::Duration::minutes(29)).await.unwrap(),
            Owner::User("u-1".into())
        );
        let refused = |r: Result<Owner>| r.unwrap_err().status();
        assert_eq!(refused(links.verify(&token, "s-2", now).await), 401, "another session");
        assert_eq!(refused(links.verify(&token, "s-1", now + chrono::Duration::minutes(30)).await), 401, "expired");
        let other = StreamLinks::new(b"another key of thirty-two bytes!");
        assert_eq!(refused(other.verify(&token, "s-1", now).await), 401, "another deployment's key");
        let tampered = token.replacen('.', ".x", 1);
        assert_eq!(refused(links.verify(&tampered, "s-1", now).await), 401, "a changed token");
        assert_eq!(refused(links.verify("", "s-1", now).await), 401);
        // The same claims signed any other way (here: as an unsigned token) are refused.
        let payload = token.split('.').nth(1).unwrap();
        // {"alg":"none","typ":"JWT"}, base64url
        let unsigned = format!("eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.{payload}.");
        assert_eq!(refused(links.verify(&unsigned, "s-1", now).await), 401, "alg none");
    }
}
