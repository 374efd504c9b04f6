//! What a route takes from its request, each refused with the one error body: who calls
//! ([`Backend`], [`User`], [`Owner`]), the path's id ([`Id`]), the JSON body ([`Body`]), the
//! query ([`Query`]), the invocation ([`Invocation`]) and a non-HTTP event ([`Event`]).
//!
//! A handler lists them in the order every route checks them (the method is the router's):
//! the caller, the id, then the body. A signed-in user is counted against their quota as they
//! are extracted ([`User`], [`Owner`]), so every user route takes it, in this one place, before
//! anything else is read: a flood of any route, malformed bodies included, spends the
//! flooder's own minute. The backend's SigV4 routes are not counted.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{FromRequest, FromRequestParts, RawPathParams, Request};
use bytes::Bytes;
use lambda_http::RequestExt;
use lambda_http::aws_lambda_events::query_map::QueryMap;
use lambda_http::http::request::Parts;
use lambda_http::request::RequestContext;

use super::auth::{self, Caller, Users};
use super::stream::Ticket;
use crate::core::error::{Error, Result};
use crate::core::limit::PerUser;

/// The IAM principal that signed the request (SigV4), as [`auth::backend`] names it: 401
/// anonymous, 403 a user's token.
pub struct Backend(pub String);

impl<S: Send + Sync> FromRequestParts<S> for Backend {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self> {
        auth::backend(parts).map(Self)
    }
}

/// An app whose routes have users, each counted against their quota.
pub trait HasUsers: Send + Sync + 'static {
    fn users(&self) -> &Users;
    fn quota(&self) -> &dyn PerUser;
}

/// The signed-in user, whichever door the request came through ([`Users::verified`]): 401
/// without a token, 403 for a token that names no user; then one request of the user's quota
/// ([`PerUser::take`]: 429 `quota_exceeded` when spent).
pub struct User(pub String);

impl User {
    /// Refuses (403) unless this user is `user`, the one a path or a body names.
    pub fn acting_as(&self, user: &str) -> Result<()> {
        if self.0 == user {
            Ok(())
        } else {
            Err(Error::Forbidden(format!("a user may act only as themselves, not as {user:?}")))
        }
    }
}

impl<A: HasUsers> FromRequestParts<Arc<A>> for User {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, app: &Arc<A>) -> Result<Self> {
        let user = app.users().verified(parts).await?;
        app.quota().take(&user).await?;
        Ok(Self(user))
    }
}

/// Whose a thing is: the backend that signed (SigV4) or a signed-in user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    Backend(String),
    User(String),
}

impl Owner {
    /// The owner as records store it: `iam:<principal>` or `user:<id>`.
    pub fn key(&self) -> String {
        match self {
            Self::Backend(principal) => format!("iam:{principal}"),
            Self::User(user) => format!("user:{user}"),
        }
    }

    /// The owner a stored key names.
    pub fn parse(key: &str) -> Option<Self> {
        match key.split_once(':')? {
            ("iam", principal) => Some(Self::Backend(principal.to_owned())),
            ("user", user) => Some(Self::User(user.to_owned())),
            _ => None,
        }
    }

    /// The user, when a user owns it.
    pub fn user(&self) -> Option<&str> {
        match self {
            Self::User(user) => Some(user),
            Self::Backend(_) => None,
        }
    }
}

impl<A: HasUsers> FromRequestParts<Arc<A>> for Owner {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, app: &Arc<A>) -> Result<Self> {
        match Caller::of(parts) {
            Caller::Backend { .. } => Backend::from_request_parts(parts, app).await.map(|b| Self::Backend(b.0)),
            _ => User::from_request_parts(parts, app).await.map(|u| Self::User(u.0)),
        }
    }
}

/// The route's one path parameter (`/sources/{id}`), percent-decoded: 400 `invalid_path` when it
/// is not UTF-8 once decoded or holds a control character.
pub struct Id(pub String);

impl<S: Send + Sync> FromRequestParts<S> for Id {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self> {
        let params = RawPathParams::from_request_parts(parts, state)
            .await
            .map_err(|e| Error::invalid("invalid_path", format!("the path's parameter cannot be read: {e}")))?;
        let text = params.iter().next().map(|(_, value)| value.to_owned()).unwrap_or_default();
        if text.chars().any(char::is_control) {
            return Err(Error::invalid("invalid_path", "a path segment holds a control character"));
        }
        Ok(Self(text))
    }
}

/// The request body, at most `LIMIT` bytes (413 beyond), never empty (400 `malformed_json`):
/// the route parses it into its typed request, which names the failing field's path.
pub struct Body<const LIMIT: usize = { super::MAX_BODY_BYTES }>(pub Bytes);

impl<S: Send + Sync, const LIMIT: usize> FromRequest<S> for Body<LIMIT> {
    type Rejection = Error;

    async fn from_request(req: Request, _: &S) -> Result<Self> {
        let bytes = axum::body::to_bytes(req.into_body(), LIMIT).await.map_err(|_| Error::TooLarge { limit: LIMIT })?;
        if bytes.is_empty() {
            return Err(Error::invalid("malformed_json", "request body is empty; send a JSON object"));
        }
        Ok(Self(bytes))
    }
}

impl<const LIMIT: usize> std::ops::Deref for Body<LIMIT> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}

/// The query string's parameters, as the door passed them.
pub struct Query(pub QueryMap);

impl<S: Send + Sync> FromRequestParts<S> for Query {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self> {
        Ok(Self(parts.query_string_parameters()))
    }
}

/// The invocation a request arrived in: its id, the time Lambda leaves it, and its
/// [`Ticket`] (held by work that outlives the response) when the runtime gave one.
pub struct Invocation {
    pub request_id: String,
    pub left: Option<Duration>,
    pub ticket: Option<Ticket>,
}

impl<S: Send + Sync> FromRequestParts<S> for Invocation {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self> {
        Ok(Self {
            request_id: super::request_id(&parts.extensions),
            left: super::time_left(&parts.extensions),
            ticket: parts.extensions.get::<Ticket>().cloned(),
        })
    }
}

/// A non-HTTP event (EventBridge's, a schedule's) as the runtime passed it through, at
/// `POST /events`: an HTTP request there is no route (404).
pub struct Event(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for Event {
    type Rejection = Error;

    async fn from_request(req: Request, _: &S) -> Result<Self> {
        if !is_event(req.extensions()) {
            return Err(Error::NotFound(format!("no route for {} {}", req.method(), req.uri().path())));
        }
        let bytes = axum::body::to_bytes(req.into_body(), usize::MAX)
            .await
            .map_err(|e| Error::invalid("malformed_event", format!("event not read: {e}")))?;
        Ok(Self(bytes))
    }
}

/// Whether a request is an event the runtime passed through (not HTTP).
pub fn is_event(extensions: &lambda_http::http::Extensions) -> bool {
    matches!(extensions.request_context_ref(), Some(RequestContext::PassThrough))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owner_is_stored_as_its_key_and_read_back() {
        for owner in [Owner::Backend("123456789012:role/backend".into()), Owner::User("auth0|u:1".into())] {
            assert_eq!(Owner::parse(&owner.key()), Some(owner.clone()));
        }
        assert_eq!(Owner::User("u-1".into()).key(), "user:u-1");
        assert_eq!(Owner::Backend("p".into()).user(), None);
        assert_eq!(Owner::parse("admin:x"), None, "no other kind of owner");
        assert_eq!(Owner::parse("user"), None);
    }

    #[test]
    fn a_user_acts_only_as_themselves() {
        let user = User("u-1".into());
        assert!(user.acting_as("u-1").is_ok());
        assert_eq!(user.acting_as("u-2").unwrap_err().status(), 403);
    }
}
