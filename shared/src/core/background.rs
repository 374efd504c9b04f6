//! Work that outlives the request that started it: a cost record still being written when its
//! caller left, a counter's mark removed after its update. Lambda may freeze the environment
//! once the response is sent, so the HTTP edge runs each request inside [`scope`] with its
//! invocation's hold (`http::stream`'s ticket), and [`spawn`] keeps that hold until the work
//! ends.

use std::any::Any;
use std::future::Future;
use std::sync::Arc;

/// What keeps an invocation's environment running while any clone of it is held.
pub type Hold = Arc<dyn Any + Send + Sync>;

tokio::task_local! {
    static HOLD: Hold;
}

/// Runs `work` with `hold`: what it [`spawn`]s keeps it.
pub async fn scope<F: Future>(hold: Hold, work: F) -> F::Output {
    HOLD.scope(hold, work).await
}

/// `work`, keeping the calling task's hold (if any) until it ends, in the same scope: what it
/// spawns keeps it too. For work handed to `tokio::spawn`.
pub fn kept<F: Future>(work: F) -> impl Future<Output = F::Output> {
    let hold = HOLD.try_with(Arc::clone).ok();
    async move {
        match hold {
            Some(hold) => HOLD.scope(hold, work).await,
            None => work.await,
        }
    }
}

/// Runs `work` on a task of its own, [`kept`] and in the caller's span. `None` outside a Tokio
/// runtime.
pub fn spawn<F>(work: F) -> Option<tokio::task::JoinHandle<F::Output>>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    use tracing::Instrument;
    let runtime = tokio::runtime::Handle::try_current().ok()?;
    Some(runtime.spawn(kept(work.in_current_span())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn spawned_work_keeps_the_hold_until_it_ends_though_its_caller_left() {
        let hold: Hold = Arc::new(());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let caller = tokio::spawn(scope(Arc::clone(&hold), async move {
            spawn(async move {
                let _ = rx.await;
            });
            std::future::pending::<()>().await
        }));
        tokio::task::yield_now().await;
        caller.abort();
        let _ = caller.await;
        assert_eq!(Arc::strong_count(&hold), 2, "the caller is gone; its spawned work still holds");
        tx.send(()).unwrap();
        for _ in 0..100 {
            if Arc::strong_count(&hold) == 1 {
                return;
            }
            tokio::task::yield_now().await;
        }
        panic!("the work ended but kept the hold");
    }
}
