//! Wake-ups across processes by `LISTEN`/`NOTIFY`: after each commit that makes deliveries
//! visible (a store, a nack), the queue's name is sent on the namespace's channel (coalesced:
//! one statement for every queue named since the last); one connection per bus listens and
//! wakes this process's consumers of that queue. Nothing polls: an idle hub sends no query.

use std::collections::HashSet;
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::StreamExt;
use tokio_postgres::AsyncMessage;

use super::options::{Options, quoted};
use crate::wakers::{Listener, Wakers};

/// How long the listener waits before connecting again after its connection was lost.
const AGAIN: Duration = Duration::from_secs(1);

/// Listens on `channel` for as long as `wakers` has owners; after a lost connection it
/// connects again every second, and wakes every waiter once it listens again (what was sent
/// meanwhile was not heard). The first connection is made before this returns: an error then
/// is the caller's.
pub(super) async fn listen(
    options: &Options,
    channel: &str,
    wakers: &Arc<Wakers>,
) -> Result<Listener, tokio_postgres::Error> {
    let first = connect(options, channel, Arc::downgrade(wakers)).await?;
    let (options, channel, wakers) = (options.clone(), channel.to_owned(), Arc::downgrade(wakers));
    Ok(Listener(tokio::spawn(async move {
        let mut session = first;
        loop {
            // The session ends when its connection does.
            let _ = session.await;
            session = loop {
                tokio::time::sleep(AGAIN).await;
                if wakers.strong_count() == 0 {
                    return;
                }
                match connect(&options, &channel, wakers.clone()).await {
                    Ok(again) => break again,
                    Err(e) => tracing::debug!(error = %e, "postgres: listening again failed"),
                }
            };
            tracing::info!("postgres: listening for wake-ups again");
            if let Some(w) = wakers.upgrade() {
                w.wake_all();
            }
        }
    })))
}

/// One listening session: connects, sends `LISTEN`, and returns the task that wakes the
/// queues named until the connection ends (or the wakers are gone).
async fn connect(
    options: &Options,
    channel: &str,
    wakers: Weak<Wakers>,
) -> Result<tokio::task::JoinHandle<()>, tokio_postgres::Error> {
    let (client, mut connection) = options.pg.connect(options.tls.clone()).await?;
    let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
    let driver = tokio::spawn(async move {
        while let Some(message) = messages.next().await {
            let Ok(AsyncMessage::Notification(n)) = message else {
                if message.is_err() {
                    return;
                }
                continue;
            };
            match wakers.upgrade() {
                Some(w) => w.wake(n.payload()),
                None => return,
            }
        }
    });
    client
        .batch_execute(&format!("LISTEN {}", quoted(channel)))
        .await?;
    Ok(tokio::spawn(async move {
        let _ = driver.await;
        drop(client);
    }))
}

/// Tells the other processes which queues got deliveries, after the commits: a task sends one
/// `pg_notify` statement for all the queues named since its last one. Such a statement writes
/// nothing, so it holds the server's notification lock only for a moment (a notifying
/// transaction that writes holds it through its WAL flush, and such commits go one at a time).
/// A notification lost with a connection is made up for by the listeners, which wake every
/// waiter when they connect again, and by each waiter's own deadline.
pub(super) struct Announcer {
    queues: tokio::sync::mpsc::UnboundedSender<String>,
    _task: Listener,
}

impl Announcer {
    /// The announcer of channel `channel`, sending on connections of `pool`.
    pub(super) fn spawn(pool: deadpool_postgres::Pool, channel: &str) -> Announcer {
        let (queues, mut named) = tokio::sync::mpsc::unbounded_channel::<String>();
        let channel = channel.to_owned();
        let task = tokio::spawn(async move {
            while let Some(first) = named.recv().await {
                let mut all = HashSet::from([first]);
                while let Ok(more) = named.try_recv() {
                    all.insert(more);
                }
                let all: Vec<String> = all.into_iter().collect();
                let sent = match pool.get().await {
                    Ok(c) => c
                        .execute(
                            "SELECT pg_notify($1, q) FROM unnest($2::text[]) AS q",
                            &[&channel, &all],
                        )
                        .await
                        .map(drop)
                        .map_err(|e| e.to_string()),
                    Err(e) => Err(e.to_string()),
                };
                if let Err(e) = sent {
                    tracing::debug!(error = %e, "postgres: a wake-up was not sent");
                }
            }
        });
        Announcer {
            queues,
            _task: Listener(task),
        }
    }

    /// Has `queues` announced soon.
    pub(super) fn announce(&self, queues: &[String]) {
        for q in queues {
            let _ = self.queues.send(q.clone());
        }
    }
}
