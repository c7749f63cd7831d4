//! The floor of the HTTP path bench: the same messages through the SQLite bus alone.

use std::sync::atomic::Ordering;
use std::time::Duration;

use chorus_bus::Delivery;
use chorus_server::Store;

use crate::load::{
    Clock, PUBLISHERS, Report, agent, config, expected, gather, index, message, run_id,
};
use crate::reader::Consumed;

/// The same `n` messages through the SQLite bus alone (validation on, as the server opens it):
/// 64 publishing tasks, 8 consumers receiving up to 64 at a time and acknowledging each batch
/// together while fetching the next.
pub async fn bus_run(n: usize) -> Report {
    let dir = tempfile::tempdir().expect("temporary folder");
    let bus = Store::sqlite(dir.path().join("chorus.db"))
        .open(&config())
        .await
        .expect("open the store");
    let (run, clock) = (run_id(), Clock::new(n));
    let publishers: Vec<_> = (0..PUBLISHERS)
        .map(|p| {
            let (bus, run, clock) = (bus.clone(), run.clone(), clock.clone());
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                for i in (p..n).step_by(PUBLISHERS) {
                    let began = clock.now();
                    clock.sent_at[i].store(began, Ordering::Relaxed);
                    let receipt = bus.publish(message(&run, i).into_bytes()).await;
                    assert!(!receipt.expect("published").duplicate);
                    latencies.push(clock.now() - began);
                }
                latencies
            })
        })
        .collect();
    let consumers: Vec<_> = expected(n)
        .into_iter()
        .enumerate()
        .map(|(j, expect)| {
            let (bus, clock, queue) = (bus.clone(), clock.clone(), agent(j));
            tokio::spawn(async move {
                let (mut deliver, mut acks, mut last) = (Vec::new(), Vec::new(), 0);
                let mut unacked: Vec<(Delivery, u64)> = Vec::new();
                loop {
                    let done = deliver.len() == expect;
                    let held: Vec<Delivery> = unacked.iter().map(|(d, _)| d.clone()).collect();
                    let wait = Duration::from_millis(100);
                    let (acked, batch) = tokio::join!(
                        async { held.is_empty() || bus.ack_all(&held).await.is_ok() },
                        async {
                            match done {
                                true => Ok(Vec::new()),
                                false => bus.receive(&queue, 64, wait).await,
                            }
                        }
                    );
                    assert!(acked, "acknowledged");
                    if !unacked.is_empty() {
                        last = clock.now();
                        acks.extend(unacked.drain(..).map(|(_, at)| last - at));
                    }
                    if done {
                        return Consumed {
                            deliver,
                            acks,
                            last,
                        };
                    }
                    let read_at = clock.now();
                    for d in batch.expect("received") {
                        if let Some(l) = clock.delivered(index(&d.envelope.id), read_at) {
                            deliver.push(l);
                        }
                        unacked.push((d, read_at));
                    }
                }
            })
        })
        .collect();
    gather(n, &clock, publishers, consumers, None).await
}
