//! The rules every caller-given or operator-given name obeys, kept once.

use crate::core::error::{Error, Result};

/// `value` of the endpoint override `variable` (`AWS_ENDPOINT_URL_S3`, ...): `https`, or plain
/// `http` on a loopback host only (a local stack); anything else is a configuration error, as
/// requests signed with the function's credentials, and what they read, would cross the
/// network in clear.
pub fn endpoint(variable: &str, value: &str) -> Result<String> {
    let url = url::Url::parse(value).map_err(|e| Error::Config(format!("{variable} is not a URL ({e})")))?;
    match url.scheme() {
        "https" => Ok(value.trim_end_matches('/').to_owned()),
        "http" if loopback(&url) => Ok(value.trim_end_matches('/').to_owned()),
        _ => Err(Error::Config(format!("{variable} must be https (plain http only on a loopback host)"))),
    }
}

/// Whether `url` names a loopback host (`localhost`, 127.0.0.0/8, `::1`).
pub fn loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// Whether `value` is 1 to `max` bytes of `[A-Za-z0-9_-]`: the rule of every id and name in the
/// bundle (agents, users, activities, pipelines, request ids, collections).
pub fn is_id(value: &str, max: usize) -> bool {
    !value.is_empty()
        && value.len() <= max
        && value.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The longest user id kept: a subject of any issuer (Auth0's `auth0|…` or `samlp|conn|email`,
/// Cognito's UUID, Firebase's 28-character uid) fits; DynamoDB keys take up to 2048 bytes.
pub const USER_ID_MAX: usize = 256;

/// Refuses a user id that is empty, longer than [`USER_ID_MAX`] bytes or holds a control
/// character: the one rule of every door (a token's claim, a path, a backend's body), so a user
/// an issuer names is never charged and then refused.
pub fn user_id(user: &str) -> Result<()> {
    if user.is_empty() || user.len() > USER_ID_MAX || user.chars().any(char::is_control) {
        return Err(Error::invalid(
            "invalid_user_id",
            format!("userId must be 1-{USER_ID_MAX} bytes without control characters"),
        ));
    }
    Ok(())
}

/// Validates the `agent` a caller names for cost attribution (`default` when none); lower case.
pub fn agent_name(agent: Option<&str>, default: &str) -> Result<String> {
    let agent = agent.unwrap_or(default);
    if !is_id(agent, 64) {
        return Err(Error::invalid("invalid_agent", "agent must be 1-64 characters of a-z, 0-9, '-' or '_'"));
    }
    Ok(agent.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_bounded_and_plain() {
        assert!(is_id("u-1_A", 5));
        assert!(!is_id("", 5));
        assert!(!is_id("abcdef", 5));
        for bad in ["a b", "a/b", "a.b", "日本", "a\u{0}"] {
            assert!(!is_id(bad, 64), "{bad:?}");
        }
        for subject in [
            "auth0|abc123",
            "samlp|corp|ann.lee+x@example.com",
            "google-oauth2|1043",
            "3f1c2a9e-5b7d-4e21-9c8a-0d6b2f4e7a11",
            "kX9aQ2bR7tY1uI3oP5sD8fG0hJ4l",
            "用户-1",
        ] {
            assert!(user_id(subject).is_ok(), "{subject:?}");
        }
        for bad in ["", "a\nb", "a\u{0}", &"x".repeat(USER_ID_MAX + 1)] {
            assert_eq!(user_id(bad).unwrap_err().status(), 400, "{bad:?}");
        }
        assert_eq!(agent_name(Some("SEO-Writer"), "x").unwrap(), "seo-writer");
        assert_eq!(agent_name(None, "research").unwrap(), "research");
    }
}
