//! The HTTP edge's settings: who the user is on user routes, and the keys that prove it.

use crate::core::config::Env;
use crate::core::error::{Error, Result};
use crate::core::secrets::Secret;
use crate::http::jwt::Issuer;

/// The least length of the stream links' key.
pub const STREAM_KEY_LEN: usize = 32;

#[derive(Debug, Clone)]
pub struct Settings {
    /// The JWT claim that is the user id on user routes (`USER_CLAIM`, default `sub`).
    pub user_claim: String,
    /// Whose users' tokens are verified in code where no authorizer runs (`JWT_ISSUER`,
    /// `JWT_AUDIENCE`).
    pub issuer: Option<Issuer>,
    /// The key signing the timeline's stream links (`STREAM_TOKEN_KEY`, or the secret
    /// `STREAM_TOKEN_KEY_SECRET` names; 32+ characters); unset, each process draws its own
    /// (links then work only in the process that issued them).
    pub stream_token_key: Option<Secret>,
}

impl Settings {
    pub fn read(env: &Env) -> Result<Self> {
        Ok(Self {
            user_claim: match env.get("USER_CLAIM") {
                None => "sub".into(),
                Some(c) if c.len() <= 128 && c.chars().all(|ch| ch.is_ascii_graphic()) => c,
                Some(c) => return Err(Error::Config(format!("USER_CLAIM: {c:?} is not a claim name"))),
            },
            issuer: Issuer::parse(env.get("JWT_ISSUER").as_deref(), env.get("JWT_AUDIENCE").as_deref())?,
            stream_token_key: match env.secret("STREAM_TOKEN_KEY")? {
                Some(k) if k.given().is_some_and(|v| v.len() < STREAM_KEY_LEN) => {
                    return Err(Error::Config(format!(
                        "STREAM_TOKEN_KEY: give at least {STREAM_KEY_LEN} characters of random key"
                    )));
                }
                k => k,
            },
        })
    }
}
