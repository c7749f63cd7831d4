//! Keeping a delivery's lease while its agent works: a model call or a wait for a person may
//! outlast the store's ack wait, after which the delivery would be handed to someone else.

use std::future::Future;
use std::time::Duration;

/// Runs `work`, calling `extend` every `every` until it ends (each call restarts the
/// delivery's ack deadline; a failed extension is logged by `extend` and the work goes on).
pub(crate) async fn with_lease<T, E>(
    work: impl Future<Output = T>,
    every: Duration,
    mut extend: impl FnMut() -> E,
) -> T
where
    E: Future<Output = ()>,
{
    let renew = async {
        loop {
            tokio::time::sleep(every).await;
            extend().await;
        }
    };
    tokio::select! {
        out = work => out,
        never = renew => never,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn extends_while_the_work_runs_and_stops_with_it() {
        let extended = AtomicUsize::new(0);
        let out = with_lease(
            async {
                tokio::time::sleep(Duration::from_millis(1050)).await;
                7
            },
            Duration::from_millis(100),
            || async {
                extended.fetch_add(1, Ordering::SeqCst);
            },
        )
        .await;
        assert_eq!(out, 7);
        assert_eq!(extended.load(Ordering::SeqCst), 10);
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(
            extended.load(Ordering::SeqCst),
            10,
            "no extension after the work"
        );
    }
}
