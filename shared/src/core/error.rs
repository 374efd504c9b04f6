//! The domain error, and how each kind maps to an HTTP status and a stable code.

use thiserror::Error;

/// Everything that can go wrong in a request, from the caller's point of view.
/// Vendor errors are translated at the adapter border and never reach this type raw.
#[derive(Debug, Error)]
pub enum Error {
    /// The caller sent something we cannot act on (400). `code` is stable, `message` says what.
    #[error("{message}")]
    Invalid { code: &'static str, message: String },
    /// The route needs a verified caller and the request has none (401).
    #[error("{0}")]
    Unauthenticated(String),
    /// The caller is verified but may not do this (403).
    #[error("{0}")]
    Forbidden(String),
    /// The route or the record does not exist (404).
    #[error("{0}")]
    NotFound(String),
    /// The request contradicts what is stored (409): an approval already used, still running
    /// or expired. `code` is stable, `message` says what.
    #[error("{message}")]
    Conflict { code: &'static str, message: String },
    /// The route exists but not for this method (405).
    #[error("method {method} is not allowed here; allowed: {allowed}")]
    MethodNotAllowed { method: String, allowed: String },
    /// The body is larger than we accept (413).
    #[error("request body is larger than {limit} bytes")]
    TooLarge { limit: usize },
    /// A daily budget is spent (429): the caller's agent's (`BUDGETS`, code `budget_exceeded`)
    /// or the signed-in user's (`USER_BUDGET_USD_PER_DAY`, code `user_budget_exceeded`).
    #[error("{message}")]
    BudgetExceeded { code: &'static str, message: String, retry_after_secs: u64 },
    /// Too many at once of what the caller may hold (429): a timeline's open streams. `code` is
    /// stable, `message` says what, `Retry-After` when a place frees.
    #[error("{message}")]
    TooMany { code: &'static str, message: String, retry_after_secs: u64 },
    /// The caller has used its request quota (per minute or per day) (429).
    #[error("{message}")]
    QuotaExceeded { message: String, retry_after_secs: u64 },
    /// One of our stores (records, the vector index) failed or did not answer in time (503:
    /// ours, and usually transient).
    #[error("store unavailable: {0}")]
    Store(String),
    /// A paid upstream we cannot answer without (the assistant's model) failed or ran out of
    /// time (503); what it cost is recorded.
    #[error("{0}")]
    Upstream(String),
    /// Something the request needs cannot be had right now (503), and may be after
    /// `retry_after_secs` (`Retry-After`): the issuer's keys.
    #[error("{message}")]
    Unavailable { code: &'static str, message: String, retry_after_secs: u64 },
    /// A tool the request runs (the research CLI) is missing (500), kept failing (502) or ran
    /// out of time (504). `code` is stable, `message` says why without the tool's internals.
    #[error("{message}")]
    Tool { status: u16, code: &'static str, message: String },
    /// The deployment is misconfigured (500).
    #[error("configuration error: {0}")]
    Config(String),
}

impl Error {
    pub fn invalid(code: &'static str, message: impl Into<String>) -> Self {
        Self::Invalid { code, message: message.into() }
    }

    /// HTTP status for this error.
    pub fn status(&self) -> u16 {
        match self {
            Self::Invalid { .. } => 400,
            Self::Unauthenticated(_) => 401,
            Self::Forbidden(_) => 403,
            Self::NotFound(_) => 404,
            Self::Conflict { .. } => 409,
            Self::MethodNotAllowed { .. } => 405,
            Self::TooLarge { .. } => 413,
            Self::BudgetExceeded { .. } | Self::QuotaExceeded { .. } | Self::TooMany { .. } => 429,
            Self::Store(_) | Self::Upstream(_) | Self::Unavailable { .. } => 503,
            Self::Config(_) => 500,
            Self::Tool { status, .. } => *status,
        }
    }

    /// Seconds after which the same request may succeed (`Retry-After`), for a 429 or a 503.
    pub fn retry_after_secs(&self) -> Option<u64> {
        match self {
            Self::BudgetExceeded { retry_after_secs, .. }
            | Self::QuotaExceeded { retry_after_secs, .. }
            | Self::TooMany { retry_after_secs, .. }
            | Self::Unavailable { retry_after_secs, .. } => Some(*retry_after_secs),
            _ => None,
        }
    }

    /// Whether a 5xx answer is the function's own failure, which `Answered5xx` counts and the
    /// canary alarms roll a new version back on: every 5xx but a dependency's that is not this
    /// version's doing and has an alarm of its own (`Unavailable`: the issuer's keys,
    /// `IssuerUnavailable`; a transient Secrets Manager fault, `SecretUnavailable`; the table
    /// throttling, [`Error::is_throttled`], `DynamoDbThrottlesAlarm`: one caller flooding a key
    /// would otherwise roll back every deployment). A secret the role may not read is a
    /// [`Error::Config`], the version's own.
    pub fn is_own_failure(&self) -> bool {
        self.status() >= 500 && !matches!(self, Self::Unavailable { .. }) && !self.is_throttled()
    }

    /// Whether this is the record store throttling the key asked (DynamoDB's
    /// `ThrottlingException` or `ProvisionedThroughputExceededException`, as the adapter words
    /// them): the store answers, and says the key is too hot, which is not an outage.
    pub fn is_throttled(&self) -> bool {
        matches!(self, Self::Store(why)
            if why.contains("ThrottlingException") || why.contains("ProvisionedThroughputExceededException"))
    }

    /// Stable machine-readable code for the JSON error body.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Invalid { code, .. } => code,
            Self::Unauthenticated(_) => "unauthenticated",
            Self::Forbidden(_) => "forbidden",
            Self::NotFound(_) => "not_found",
            Self::Conflict { code, .. } | Self::Unavailable { code, .. } | Self::TooMany { code, .. } => code,
            Self::MethodNotAllowed { .. } => "method_not_allowed",
            Self::TooLarge { .. } => "payload_too_large",
            Self::BudgetExceeded { code, .. } => code,
            Self::QuotaExceeded { .. } => "quota_exceeded",
            Self::Store(_) => "store_unavailable",
            Self::Upstream(_) => "upstream_unavailable",
            Self::Config(_) => "misconfigured",
            Self::Tool { code, .. } => code,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a read of a dependency failed (the issuer's keys, a secret), and whether that is this
/// deployment's own doing (its configuration, its role) rather than the dependency's.
pub struct Fault {
    pub why: String,
    pub own: bool,
}

impl Fault {
    pub fn ours(why: impl Into<String>) -> Self {
        Self { why: why.into(), own: true }
    }

    pub fn theirs(why: impl Into<String>) -> Self {
        Self { why: why.into(), own: false }
    }
}

/// Failed reads in a row that were the deployment's own: one odd answer (a maintenance page,
/// IAM still taking a role update in) is no proof; from the second on, the deployment is at
/// fault (a configuration error, counted against its version).
#[derive(Debug, Default, Clone, Copy)]
pub struct OwnFaults(u32);

impl OwnFaults {
    /// Counts a failed read, the deployment's own if `own`; whether the deployment is now at fault.
    pub fn after(&mut self, own: bool) -> bool {
        self.0 = if own { self.0 + 1 } else { 0 };
        self.proven()
    }

    /// Whether the deployment is at fault.
    pub fn proven(self) -> bool {
        self.0 >= 2
    }
}

/// A store call still running at its deadline.
impl From<crate::core::retry::OutOfTime> for Error {
    fn from(_: crate::core::retry::OutOfTime) -> Self {
        Self::Store("the record store did not answer in time".into())
    }
}

/// Our own store's faults are worth a retry; the caller's mistakes are not.
impl crate::core::retry::Retryable for Error {
    fn retry_after(&self) -> Option<Option<std::time::Duration>> {
        matches!(self, Self::Store(_)).then_some(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Given the table throttling a write (one caller flooding one item), then the answer is a
    // 503 that the canary does not count as the version's own (DynamoDbThrottlesAlarm watches
    // throttles); a store that fails otherwise still counts.
    #[test]
    fn a_throttled_store_is_not_the_versions_own_failure() {
        let throttled = Error::Store("ThrottlingException: Rate of requests exceeds the allowed throughput".into());
        assert_eq!(
            (throttled.status(), throttled.code(), throttled.is_own_failure()),
            (503, "store_unavailable", false)
        );
        let hot = Error::Store("ProvisionedThroughputExceededException: the item's partition".into());
        assert!(!hot.is_own_failure());
        assert!(Error::Store("connection refused".into()).is_own_failure());
    }
}
