//! Who is calling, as the HTTP API's authorizers established it.
//!
//! API Gateway checks a SigV4 signature (the IAM authorizer) or a JWT (the JWT authorizer)
//! before a function runs, and puts what it verified in the request context; the handlers
//! read it here and never trust a header, a path or a body for it. Every other way of calling
//! a function (`cargo lambda invoke --data-file`, the demo, the tests) passes the same request
//! context: `infra/events/*.json` show both kinds.

use std::collections::HashMap;
use std::sync::Arc;

use lambda_http::RequestExt;
use lambda_http::http::header::AUTHORIZATION;
use lambda_http::http::request::Parts;
use lambda_http::request::RequestContext;

use crate::core::error::{Error, Result};
use crate::http::jwt::Verifier;
use crate::http::settings::Settings;

fn no_token() -> Error {
    Error::Unauthenticated("this route needs a user's token (Authorization: Bearer <JWT>)".into())
}

/// What an authorizer verified about the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// Nothing: no authorizer ran for this request.
    Anonymous,
    /// An IAM principal that signed the request (SigV4): the backend or an operator.
    Backend { arn: String },
    /// A user's JWT, with its claims as API Gateway passes them (strings).
    User { claims: HashMap<String, String> },
}

impl Caller {
    /// The caller of `req`, from an HTTP API (payload 2.0) request context.
    pub fn of(req: &Parts) -> Self {
        let Some(RequestContext::ApiGatewayV2(context)) = req.request_context_ref() else {
            return Self::Anonymous;
        };
        let Some(authorizer) = &context.authorizer else { return Self::Anonymous };
        if let Some(iam) = &authorizer.iam {
            let arn = iam.user_arn.clone().or_else(|| iam.caller_id.clone()).unwrap_or_default();
            if !arn.is_empty() {
                return Self::Backend { arn };
            }
        }
        match &authorizer.jwt {
            Some(jwt) if !jwt.claims.is_empty() => Self::User { claims: jwt.claims.clone() },
            _ => Self::Anonymous,
        }
    }
}

/// The IAM principal that signed `req`, the same across its sessions: `<account>:role/<name>`
/// for an assumed role (`arn:aws:sts::<account>:assumed-role/<name>/<session>`), else its ARN.
/// Refuses a request not signed by one: 401 with no identity, 403 for a user.
pub fn backend(req: &Parts) -> Result<String> {
    match Caller::of(req) {
        Caller::Backend { arn } => Ok(principal(&arn)),
        Caller::User { .. } => {
            Err(Error::Forbidden("this route is for the backend (SigV4-signed requests), not users".into()))
        }
        Caller::Anonymous => {
            Err(Error::Unauthenticated("this route needs a SigV4-signed request from an IAM principal".into()))
        }
    }
}

pub(crate) fn principal(arn: &str) -> String {
    let mut parts = arn.splitn(6, ':');
    let (account, resource) = (parts.nth(4).unwrap_or_default(), parts.next().unwrap_or_default());
    match resource.strip_prefix("assumed-role/").and_then(|r| r.split('/').next()) {
        Some(role) if !account.is_empty() => format!("{account}:role/{role}"),
        _ => arn.to_owned(),
    }
}

/// The deploy's smoke user (template.yaml's `AssistantSmokeHook`), whose chat CodeDeploy's hook
/// invokes on a new version directly, as the HTTP API would, from the domain [`SMOKE_DOMAIN`],
/// which no HTTP API or Function URL request can carry (`.invalid` is never a real name). A
/// token naming this user (a `username` claim anyone may register) is refused 403 from every
/// door, so nobody can spend its budget or fail its chat on purpose.
pub const SMOKE_USER: &str = "codedeploy-smoke";
pub const SMOKE_DOMAIN: &str = "smoke.execute-api.invalid";

/// Refuses `user` when it is [`SMOKE_USER`] and `req` is not the hook's own invocation.
fn refuse_reserved(user: &str, req: &Parts) -> Result<()> {
    let domain = match req.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(context)) => context.domain_name.as_deref(),
        _ => None,
    };
    if user == SMOKE_USER && domain != Some(SMOKE_DOMAIN) {
        return Err(Error::Forbidden(format!("the user id {SMOKE_USER:?} is reserved for the deploy's smoke chat")));
    }
    Ok(())
}

/// Users as the JWT authorizer verified them, or as this code verifies them where no authorizer
/// runs ([`Users::verified`]): `claim` (`USER_CLAIM`, default `sub`) is the user id.
#[derive(Clone)]
pub struct Users {
    claim: String,
    verifier: Option<Arc<Verifier>>,
}

impl Users {
    pub fn new(claim: impl Into<String>) -> Self {
        Self { claim: claim.into(), verifier: None }
    }

    /// Users by `USER_CLAIM`, verifying tokens of `JWT_ISSUER` where no authorizer ran.
    pub fn from_settings(settings: &Settings) -> Result<Self> {
        let verifier = settings.issuer.clone().map(Verifier::new).transpose()?.map(Arc::new);
        Ok(Self { claim: settings.user_claim.clone(), verifier })
    }

    /// The user the authorizer verified for `req`: 401 without a token, 403 for a token
    /// without the claim.
    fn caller(&self, req: &Parts) -> Result<String> {
        match Caller::of(req) {
            Caller::User { claims } => {
                let user = self.user_of(&claims)?;
                refuse_reserved(&user, req)?;
                Ok(user)
            }
            Caller::Backend { .. } | Caller::Anonymous => Err(no_token()),
        }
    }

    /// The verified user of `req`, whichever door it came through: the authorizer's claims, or
    /// (with no authorizer, and `JWT_ISSUER` set) its `Authorization: Bearer` token verified
    /// here. 401 for a missing, forged, expired or wrong-audience token, before anything is spent.
    pub async fn verified(&self, req: &Parts) -> Result<String> {
        match (Caller::of(req), &self.verifier) {
            (Caller::Anonymous, Some(verifier)) => {
                let token = req
                    .headers
                    .get(AUTHORIZATION)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
                    .map(str::trim)
                    .ok_or_else(no_token)?;
                let user = self.user_of(&verifier.verify(token).await?)?;
                refuse_reserved(&user, req)?;
                // The request's span said `anonymous` until now: its next lines name the user.
                let caller = format!("user:{}", crate::core::records::key_part(&user, 12));
                tracing::Span::current().record("caller", caller.as_str());
                Ok(user)
            }
            _ => self.caller(req),
        }
    }

    /// The claim's user id, held to [`crate::core::validate::user_id`] here at the door: a token
    /// whose user no route could key is refused (403) before anything is counted or spent.
    fn user_of(&self, claims: &HashMap<String, String>) -> Result<String> {
        let user = claims
            .get(&self.claim)
            .filter(|id| !id.is_empty())
            .ok_or_else(|| Error::Forbidden(format!("the token has no {:?} claim to name its user", self.claim)))?;
        crate::core::validate::user_id(user).map_err(|_| {
            Error::Forbidden(format!(
                "the token's {:?} claim is not a user id (1-{} bytes without control characters)",
                self.claim,
                crate::core::validate::USER_ID_MAX
            ))
        })?;
        Ok(user.clone())
    }
}

#[cfg(test)]
mod tests {
    use lambda_http::{Body, Request};
    use serde_json::json;

    use super::*;

    fn with_authorizer(authorizer: serde_json::Value) -> Parts {
        let context = json!({"http": {"method": "POST", "path": "/x", "protocol": "HTTP/1.1",
                                       "sourceIp": "192.0.2.1", "userAgent": "t"},
                             "authorizer": authorizer, "timeEpoch": 0});
        let req = Request::new(Body::Empty)
            .with_request_context(RequestContext::ApiGatewayV2(serde_json::from_value(context).unwrap()));
        req.into_parts().0
    }

    fn anonymous() -> Parts {
        Request::new(Body::Empty).into_parts().0
    }

    #[test]
    fn the_caller_is_what_the_authorizer_verified() {
        assert_eq!(Caller::of(&anonymous()), Caller::Anonymous);
        let signed = with_authorizer(json!({"iam": {"userArn": "arn:aws:iam::1:role/backend", "callerId": "AROA"}}));
        assert_eq!(Caller::of(&signed), Caller::Backend { arn: "arn:aws:iam::1:role/backend".into() });
        assert_eq!(backend(&signed).unwrap(), "arn:aws:iam::1:role/backend");
        let session = |s: &str| {
            with_authorizer(json!({"iam": {"userArn": format!("arn:aws:sts::123456789012:assumed-role/backend/{s}")}}))
        };
        assert_eq!(backend(&session("i-1")).unwrap(), "123456789012:role/backend", "one principal per role");
        assert_eq!(backend(&session("i-1")).unwrap(), backend(&session("lambda-2")).unwrap());
        let user = with_authorizer(json!({"jwt": {"claims": {"sub": "u-1", "username": "ann"}, "scopes": null}}));
        assert_eq!(backend(&user).unwrap_err().status(), 403);
        assert_eq!(backend(&anonymous()).unwrap_err().status(), 401);

        let users = Users::new("sub");
        assert_eq!(users.caller(&user).unwrap(), "u-1");
        assert_eq!(users.caller(&signed).unwrap_err().status(), 401, "a signer is not a user");
        assert_eq!(users.caller(&anonymous()).unwrap_err().status(), 401);
        assert_eq!(Users::new("custom:id").caller(&user).unwrap_err().status(), 403, "a token without the claim");
        assert_eq!(Users::new("username").caller(&user).unwrap(), "ann");
    }

    // Issue 73: given a token whose user claim is the smoke user's id (a username anyone may
    // register), then every request is refused 403; the hook's own invocation, from its
    // `.invalid` domain no door can carry, is the smoke user.
    #[test]
    fn the_smoke_user_is_only_the_deploys_hook() {
        let from = |domain: Option<&str>| {
            let mut context = json!({"http": {"method": "POST", "path": "/chat", "protocol": "HTTP/1.1",
                                              "sourceIp": "192.0.2.1", "userAgent": "t"},
                                     "authorizer": {"jwt": {"claims": {"username": SMOKE_USER}, "scopes": null}},
                                     "timeEpoch": 0});
            if let Some(domain) = domain {
                context["domainName"] = json!(domain);
            }
            Request::new(Body::Empty)
                .with_request_context(RequestContext::ApiGatewayV2(serde_json::from_value(context).unwrap()))
                .into_parts()
                .0
        };
        let users = Users::new("username");
        for door in [Some("abc123.execute-api.eu-west-1.amazonaws.com"), Some("api.example.com"), None] {
            let e = users.caller(&from(door)).unwrap_err();
            assert_eq!((e.status(), e.code()), (403, "forbidden"), "{door:?}");
        }
        assert_eq!(users.caller(&from(Some(SMOKE_DOMAIN))).unwrap(), SMOKE_USER);
    }
}
