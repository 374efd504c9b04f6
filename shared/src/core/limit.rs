//! What a user may ask per minute and per day, as the HTTP edge takes it on every user route
//! (`http::extract::User`): [`PerUser`] is the port, `costs::quota::Quota` its one adapter.

use async_trait::async_trait;

use crate::core::error::Result;

/// One request of a user, counted: `Err` (429 `quota_exceeded`, with `Retry-After`) when the
/// user's minute or day is spent.
#[async_trait]
pub trait PerUser: Send + Sync {
    async fn take(&self, user: &str) -> Result<()>;
}
