//! How long the SQLite backend takes to prune many old messages, and how long publishes wait
//! meanwhile (the prune goes through the writer in batches, so they should not wait for the
//! whole of it), beside the same publishes without a prune in the same run (the anchor): the
//! ratio of their medians is printed.
//!
//! `cargo bench -p chorus-bus --bench prune`

use std::sync::Arc;
use std::time::{Duration, Instant};

use chorus_bus::{Backend, BusConfig, Envelope, PruneBefore, SqliteBus, now_ms};

/// Old messages stored (and acknowledged) before the prune.
const OLD: usize = 50_000;

fn tracked(i: usize) -> Envelope {
    let mut env = Envelope::new(format!("m{i}"), vec!["q".into()], vec![b'x'; 200]);
    env.task_id = Some(format!("task-{}", i % 100));
    env
}

/// Publish latencies (each alone, one after the other) until `done` is set.
async fn publish_until(
    bus: Arc<SqliteBus>,
    done: Arc<std::sync::atomic::AtomicBool>,
) -> Vec<Duration> {
    let mut waits = Vec::new();
    let mut i = 0;
    while !done.load(std::sync::atomic::Ordering::SeqCst) {
        let started = Instant::now();
        bus.store(&tracked(OLD + 1_000_000 + i), &["other".to_owned()], false)
            .await
            .unwrap();
        waits.push(started.elapsed());
        i += 1;
    }
    waits
}

fn summary(mut waits: Vec<Duration>) -> String {
    waits.sort();
    let at = |q: f64| waits[((waits.len() - 1) as f64 * q) as usize];
    format!(
        "{} publishes, median {:?}, p99 {:?}, max {:?}",
        waits.len(),
        at(0.5),
        at(0.99),
        at(1.0)
    )
}

fn median(waits: &[Duration]) -> Duration {
    let mut sorted = waits.to_vec();
    sorted.sort();
    sorted[sorted.len() / 2]
}

fn main() {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(pruning_many_old_messages_beside_publishes());
}

async fn pruning_many_old_messages_beside_publishes() {
    let dir = tempfile::tempdir().unwrap();
    let config = BusConfig {
        dedupe_window: Duration::from_millis(1),
        validator: None,
        ..BusConfig::default()
    };
    let bus = Arc::new(SqliteBus::open(dir.path().join("b.db"), config).unwrap());
    let queues = vec!["q".to_owned()];
    for chunk in (0..OLD).collect::<Vec<_>>().chunks(1000) {
        futures::future::try_join_all(chunk.iter().map(|&i| {
            let bus = bus.clone();
            let queues = queues.clone();
            async move { bus.store(&tracked(i), &queues, false).await }
        }))
        .await
        .unwrap();
        let got = bus.fetch("q", 1000).await.unwrap();
        bus.ack_all(&got).await.unwrap();
    }
    assert_eq!(bus.depth("q").await.unwrap(), 0);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let cut = now_ms();

    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let baseline = {
        let publisher = tokio::spawn(publish_until(bus.clone(), done.clone()));
        tokio::time::sleep(Duration::from_secs(2)).await;
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        publisher.await.unwrap()
    };
    done.store(false, std::sync::atomic::Ordering::SeqCst);
    let publisher = tokio::spawn(publish_until(bus.clone(), done.clone()));
    let started = Instant::now();
    let pruned = bus
        .prune(PruneBefore {
            messages_ms: Some(cut),
            dead_letters_ms: None,
            effects_ms: None,
        })
        .await
        .unwrap();
    let took = started.elapsed();
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let during = publisher.await.unwrap();
    assert_eq!(pruned.messages, OLD as u64);
    println!("pruned {} old messages in {took:?}", pruned.messages);
    let ratio = median(&during).as_secs_f64() / median(&baseline).as_secs_f64();
    println!("publishes without a prune: {}", summary(baseline));
    println!("publishes during the prune: {}", summary(during));
    println!("median publish wait during / without a prune: {ratio:.2}x");
}
