//! A deadline on every single-item call to a record store (and on `latest`, bounded by its
//! limit): a store that hangs (a throttled table, a connection that never answers) fails the
//! call with a store error after `timeout`, so each caller's fallback (a cache miss, a replay
//! line, a budget allowance) runs in time. Bulk calls (`query` of a whole partition, `put_all`)
//! pass through: each of their pages or batches is one SDK operation, bounded by the SDK.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::{Record, RecordStore};
use crate::core::error::Result;

/// `inner`, each call bounded by `timeout`.
pub struct Timed {
    inner: Arc<dyn RecordStore>,
    timeout: Duration,
}

impl Timed {
    pub fn new(inner: Arc<dyn RecordStore>, timeout: Duration) -> Self {
        Self { inner, timeout }
    }

    async fn bounded<T>(&self, what: &str, call: impl std::future::Future<Output = Result<T>>) -> Result<T> {
        super::bounded(self.timeout, &format!("record store: {what}"), call).await
    }
}

#[async_trait]
impl RecordStore for Timed {
    async fn put(&self, record: &Record) -> Result<()> {
        self.bounded("put", self.inner.put(record)).await
    }

    async fn put_new(&self, record: &Record, now: i64) -> Result<bool> {
        self.bounded("put_new", self.inner.put_new(record, now)).await
    }

    async fn put_if(&self, record: &Record, expected: Option<i64>, now: i64) -> Result<bool> {
        self.bounded("put_if", self.inner.put_if(record, expected, now)).await
    }

    async fn put_all(&self, records: &[Record]) -> Result<()> {
        self.inner.put_all(records).await
    }

    async fn get(&self, pk: &str, sk: &str, now: i64) -> Result<Option<Record>> {
        self.bounded("get", self.inner.get(pk, sk, now)).await
    }

    async fn query(&self, pk: &str, from: &str, to: &str, now: i64) -> Result<Vec<Record>> {
        self.inner.query(pk, from, to, now).await
    }

    async fn latest(&self, pk: &str, from: &str, to: &str, limit: usize, now: i64) -> Result<Vec<Record>> {
        self.bounded("latest", self.inner.latest(pk, from, to, limit, now)).await
    }

    async fn add(&self, pk: &str, sk: &str, delta: i64, ceiling: Option<i64>, expires_at: i64) -> Result<Option<i64>> {
        self.bounded("add", self.inner.add(pk, sk, delta, ceiling, expires_at)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::error::Error;

    /// A store whose every call hangs.
    struct Hung;

    #[async_trait]
    impl RecordStore for Hung {
        async fn put(&self, _: &Record) -> Result<()> {
            std::future::pending().await
        }
        async fn put_new(&self, _: &Record, _: i64) -> Result<bool> {
            std::future::pending().await
        }
        async fn put_if(&self, _: &Record, _: Option<i64>, _: i64) -> Result<bool> {
            std::future::pending().await
        }
        async fn put_all(&self, _: &[Record]) -> Result<()> {
            std::future::pending().await
        }
        async fn get(&self, _: &str, _: &str, _: i64) -> Result<Option<Record>> {
            std::future::pending().await
        }
        async fn query(&self, _: &str, _: &str, _: &str, _: i64) -> Result<Vec<Record>> {
            std::future::pending().await
        }
        async fn latest(&self, _: &str, _: &str, _: &str, _: usize, _: i64) -> Result<Vec<Record>> {
            std::future::pending().await
        }
        async fn add(&self, _: &str, _: &str, _: i64, _: Option<i64>, _: i64) -> Result<Option<i64>> {
            std::future::pending().await
        }
    }

    #[tokio::test]
    async fn a_hung_call_fails_as_a_store_error_at_its_deadline() {
        let store = Timed::new(Arc::new(Hung), Duration::from_millis(50));
        let started = std::time::Instant::now();
        let e = store.get("pk", "sk", 0).await.unwrap_err();
        assert!(started.elapsed() < Duration::from_millis(500), "took {:?}", started.elapsed());
        assert!(matches!(e, Error::Store(_)), "{e}");
        assert!(e.to_string().contains("get did not answer within 50 ms"), "{e}");
        assert!(store.add("pk", "sk", 1, None, 0).await.is_err());
    }
}
