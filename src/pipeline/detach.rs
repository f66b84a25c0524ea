//! Finishing a claimed event's delivery even when its sender hangs up.
//!
//! Once an event is claimed, the forward and the commit or release must run
//! to the end: a sender that closes its connection makes hyper drop the
//! request's future, and a future dropped half-way would leave a 2xx
//! uncommitted or a lease held. [`Detachable`] is awaited in the request's own
//! task (no task spawned per request); if it is dropped before it finishes,
//! its `Drop` moves the unfinished delivery into a task of its own, which
//! carries on from where it stopped.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

/// The delivery panicked (a bug): the caller answers as for a failed task.
#[derive(Debug)]
pub(super) struct Panicked;

/// A delivery that outlives its request if it has to.
pub(super) struct Detachable<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    /// `None` once finished.
    delivery: Option<Pin<Box<F>>>,
}

impl<F> Detachable<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    pub(super) fn new(delivery: F) -> Self {
        Detachable {
            delivery: Some(Box::pin(delivery)),
        }
    }
}

impl<F> Future for Detachable<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    type Output = Result<F::Output, Panicked>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let Some(delivery) = this.delivery.as_mut() else {
            // Polled again after it finished: nothing left to run.
            return Poll::Ready(Err(Panicked));
        };
        // A panic is caught here as tokio would catch it in a task: the
        // request gets an answer, the connection is not torn down.
        let polled = catch_unwind(AssertUnwindSafe(|| delivery.as_mut().poll(cx)));
        match polled {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(out)) => {
                this.delivery = None;
                Poll::Ready(Ok(out))
            }
            Err(_) => {
                this.delivery = None;
                Poll::Ready(Err(Panicked))
            }
        }
    }
}

impl<F> Drop for Detachable<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn drop(&mut self) {
        if let Some(rest) = self.delivery.take() {
            // Outside a runtime (it is shutting down) nothing could run it.
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(rest);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn finishes_in_place() {
        let out = Detachable::new(async { 7 }).await;
        assert_eq!(out.ok(), Some(7));
    }

    #[tokio::test(start_paused = true)]
    async fn dropped_half_way_it_still_finishes() {
        let done = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&done);
        let delivery = Detachable::new(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            flag.store(true, Ordering::SeqCst);
        });
        // The sender hangs up while the delivery waits.
        let cancelled = tokio::time::timeout(Duration::from_millis(10), delivery).await;
        assert!(cancelled.is_err());
        assert!(!done.load(Ordering::SeqCst));
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(
            done.load(Ordering::SeqCst),
            "the rest ran in a task of its own"
        );
    }

    #[tokio::test]
    async fn a_panic_becomes_an_error() {
        let out = Detachable::new(async {
            if std::hint::black_box(true) {
                panic!("a bug");
            }
        })
        .await;
        assert!(out.is_err());
    }
}
