//! The HTTP edge's settings: who the user is on user routes, and the keys that prove it.

use crate::core::config::{Env, Secret};
use crate::core::error::{Error, Result};
use crate::http::jwt::Issuer;

#[derive(Debug, Clone)]
pub struct Settings {
    /// The JWT claim that is the user id on user routes (`USER_CLAIM`, default `sub`).
    pub user_claim: String,
    /// Whose users' tokens are verified in code where no authorizer runs (`JWT_ISSUER`,
    /// `JWT_AUDIENCE`).
    pub issuer: Option<Issuer>,
    /// The key signing the timeline's stream links (`STREAM_TOKEN_KEY`, 32+ characters); unset,
    /// each process draws its own (links then work only in the process that issued them).
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
            stream_token_key: match env.secret("STREAM_TOKEN_KEY") {
                Some(k) if k.expose().len() < 32 => {
                    return Err(Error::Config("STREAM_TOKEN_KEY: give at least 32 characters of random key".into()));
                }
                k => k,
            },
        })
    }
}
