//! Crash tests with real child processes: `kill -9` of producers and consumers at several points
//! (sqlite and NATS), a full disk (RLIMIT_FSIZE) on sqlite.
//!
//! The children are this test executable itself, started with `CHORUS_FAULT_ROLE` set, running
//! the `child_process_entry` test; every child stops by itself within `CHILD_LIMIT`.

mod conformance;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chorus_bus::{Bus, BusConfig, Effect, Envelope, SqliteBus, handle_once};

const CHILD_LIMIT: Duration = Duration::from_secs(30);
const QUEUE: &str = "work";
const HANDLER: &str = "apply";

fn config() -> BusConfig {
    BusConfig {
        ack_wait: Duration::from_millis(300),
        max_deliver: 50,
        poll_interval: Duration::from_millis(5),
        validator: None,
        ..BusConfig::default()
    }
}

/// Opens the bus a child or the parent works on: `sqlite:PATH` or `nats:URL|NAMESPACE`.
async fn open(target: &str) -> Arc<dyn Bus> {
    if let Some(path) = target.strip_prefix("sqlite:") {
        return Arc::new(SqliteBus::open(path, config()).expect("open sqlite"));
    }
    #[cfg(feature = "nats")]
    if let Some(rest) = target.strip_prefix("nats:") {
        let (url, ns) = rest.split_once('|').expect("nats:URL|NS");
        let bus = chorus_bus::NatsBus::connect(url, ns, config())
            .await
            .expect("NATS reachable");
        return Arc::new(bus);
    }
    panic!("unknown target {target}");
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .expect("stdout");
}

fn die() -> ! {
    // SAFETY: sending SIGKILL to our own process; nothing after this runs.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
    unreachable!("SIGKILL returned")
}

/// Runs the role named in CHORUS_FAULT_ROLE; a no-op in a normal test run.
#[test]
fn child_process_entry() {
    let Ok(role) = std::env::var("CHORUS_FAULT_ROLE") else {
        return;
    };
    // The harness has printed "test child_process_entry ... " without a newline: end that line.
    say("");
    let target = std::env::var("CHORUS_FAULT_TARGET").expect("target");
    let arg = std::env::var("CHORUS_FAULT_ARG").unwrap_or_default();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let work = async {
        match role.as_str() {
            "producer" => produce(&target, arg.parse().unwrap()).await,
            "consumer" => consume(&target, &arg).await,
            "full_disk" => fill_disk(&target).await,
            other => panic!("unknown role {other}"),
        }
    };
    rt.block_on(async { tokio::time::timeout(CHILD_LIMIT, work).await.ok() });
    say("EXIT");
    // Work still running on blocking threads does not keep the child alive.
    rt.shutdown_timeout(Duration::from_secs(1));
}

fn message(i: usize) -> Envelope {
    let mut env = Envelope::new(format!("msg-{i:05}"), vec![QUEUE.into()], vec![b'x'; 1024]);
    env.task_id = Some("fault-task".into());
    env
}

/// Publishes `n` messages, 16 in flight; prints `ACKED id` once each publish returned.
async fn produce(target: &str, n: usize) {
    let bus = open(target).await;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<String>(64);
    let sender = tokio::spawn(async move {
        let sem = Arc::new(tokio::sync::Semaphore::new(16));
        for i in 0..n {
            let permit = sem.clone().acquire_owned().await.unwrap();
            let (bus, tx) = (bus.clone(), tx.clone());
            tokio::spawn(async move {
                let id = bus.publish_envelope(message(i)).await.expect("publish").id;
                tx.send(id).await.ok();
                drop(permit);
            });
        }
    });
    let mut acked = 0;
    while let Some(id) = rx.recv().await {
        say(&format!("ACKED {id}"));
        acked += 1;
        if acked == n {
            break;
        }
    }
    sender.await.ok();
}

/// Handles messages with `handle_once`; `point` names where to crash itself
/// (`before_ack:K`, `after_effect:K`), or `run` to go on until the queue stays empty.
async fn consume(target: &str, point: &str) {
    let bus = open(target).await;
    let (point, at) = point.split_once(':').unwrap_or((point, "0"));
    let at: usize = at.parse().unwrap();
    let mut handled = 0usize;
    loop {
        let batch = bus
            .receive(QUEUE, 4, Duration::from_millis(1500))
            .await
            .expect("receive");
        if batch.is_empty() {
            return;
        }
        for d in batch {
            handled += 1;
            if handled == at {
                match point {
                    "before_ack" => die(),
                    "after_effect" => {
                        let record = format!("effect of {}", d.envelope.id).into_bytes();
                        bus.commit_once(HANDLER, &d.envelope.id, &record, &[])
                            .await
                            .expect("commit");
                        die()
                    }
                    _ => {}
                }
            }
            handle_once(&*bus, &d, HANDLER, |env| {
                let record = format!("effect of {}", env.id).into_bytes();
                async move {
                    Ok(Effect {
                        record,
                        publish: vec![],
                    })
                }
            })
            .await
            .expect("handle_once");
            say(&format!("DONE {}", d.envelope.id));
        }
    }
}

/// Starts a child role; returns it with a line reader over its stdout.
fn spawn(
    role: &str,
    target: &str,
    arg: &str,
    fsize: Option<u64>,
) -> (Child, std::sync::mpsc::Receiver<String>) {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "child_process_entry",
        "--nocapture",
        "--test-threads=1",
    ])
    .env("CHORUS_FAULT_ROLE", role)
    .env("CHORUS_FAULT_TARGET", target)
    .env("CHORUS_FAULT_ARG", arg)
    .stdout(Stdio::piped())
    .stderr(Stdio::null());
    if let Some(limit) = fsize {
        cmd.env("CHORUS_FAULT_FSIZE", limit.to_string());
    }
    let mut child = cmd.spawn().expect("spawn child");
    let out = BufReader::new(child.stdout.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in out.lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// Collects lines until `stop` says so, the child ends, or the limit passes.
fn read_until(
    rx: &std::sync::mpsc::Receiver<String>,
    mut stop: impl FnMut(&str) -> bool,
) -> Vec<String> {
    let deadline = Instant::now() + CHILD_LIMIT + Duration::from_secs(10);
    let mut lines = Vec::new();
    while let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        let done = stop(&line) || line == "EXIT";
        lines.push(line);
        if done {
            break;
        }
    }
    lines
}

/// Waits for a child that said `EXIT` or passed its limit; one still running after a few
/// seconds more is killed and the test fails.
fn finish(child: &mut Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().expect("child status") {
            return status;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    kill9(child);
    panic!("a child process did not end within its limit of {CHILD_LIMIT:?}");
}

fn kill9(child: &mut Child) {
    child.kill().ok(); // SIGKILL on Unix
    child.wait().ok();
}

fn ids(lines: &[String], tag: &str) -> BTreeSet<String> {
    lines
        .iter()
        .filter_map(|l| l.strip_prefix(tag).map(str::to_owned))
        .collect()
}

/// Runs the parent's checks on a fresh runtime, failing when they take over a minute.
fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
    let limit = Duration::from_secs(60);
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(async { tokio::time::timeout(limit, f).await })
        .unwrap_or_else(|_| panic!("the checks after the crashes did not finish within {limit:?}"))
}

/// The whole scenario on one target: producers killed mid-stream, consumers killed at each
/// point, then a clean consumer; every acknowledged message is handled exactly once.
fn crash_scenario(target: &str, total: usize) {
    let mut acked = BTreeSet::new();
    // Producers killed after 1, 40 and 120 acknowledgements, then one that finishes.
    for (round, kill_after) in [1usize, 40, 120].into_iter().enumerate() {
        let (mut child, rx) = spawn("producer", target, &total.to_string(), None);
        let mut seen = 0;
        let lines = read_until(&rx, |l| {
            seen += usize::from(l.starts_with("ACKED "));
            seen >= kill_after
        });
        kill9(&mut child);
        let got = ids(&lines, "ACKED ");
        assert!(
            got.len() >= kill_after.min(total),
            "round {round}: only {} acks",
            got.len()
        );
        acked.extend(got);
    }
    let (mut child, rx) = spawn("producer", target, &total.to_string(), None);
    acked.extend(ids(&read_until(&rx, |_| false), "ACKED "));
    finish(&mut child);
    assert_eq!(
        acked.len(),
        total,
        "every message acknowledged by some producer"
    );
    // Consumers crash before an ack, after the effect but before the ack, and at a random time.
    for point in [
        "before_ack:3",
        "after_effect:5",
        "before_ack:1",
        "after_effect:1",
    ] {
        let (mut child, rx) = spawn("consumer", target, point, None);
        read_until(&rx, |_| false);
        let status = finish(&mut child);
        assert!(
            !status.success(),
            "{point}: the consumer was expected to die"
        );
    }
    let (mut child, rx) = spawn("consumer", target, "run", None);
    let mut done = 0;
    read_until(&rx, |l| {
        done += usize::from(l.starts_with("DONE "));
        done >= 25
    });
    kill9(&mut child);
    let (mut child, rx) = spawn("consumer", target, "run", None);
    read_until(&rx, |_| false);
    finish(&mut child);
    // Afterwards: every acknowledged message has exactly one effect, and nothing is left.
    block_on(async {
        let bus = open(target).await;
        let effects = bus.effects(HANDLER).await.unwrap();
        let mut count: BTreeMap<String, usize> = BTreeMap::new();
        for e in &effects {
            *count.entry(e.message_id.clone()).or_default() += 1;
            assert_eq!(e.record, format!("effect of {}", e.message_id).into_bytes());
        }
        let twice: Vec<_> = count.iter().filter(|(_, n)| **n > 1).collect();
        assert!(twice.is_empty(), "effects repeated: {twice:?}");
        let handled: BTreeSet<String> = count.into_keys().collect();
        let missing: Vec<_> = acked.difference(&handled).collect();
        assert!(
            missing.is_empty(),
            "acknowledged but never handled: {missing:?}"
        );
        let left = bus
            .receive(QUEUE, 10, Duration::from_millis(700))
            .await
            .unwrap();
        assert!(
            left.is_empty(),
            "messages left after a clean run: {}",
            left.len()
        );
        let tracked = bus.by_task("fault-task").await.unwrap();
        let unique: BTreeSet<_> = tracked.iter().map(|e| e.id.clone()).collect();
        assert_eq!(unique.len(), total, "the log holds every message");
    });
}

#[test]
fn sqlite_survives_kill_9_of_producers_and_consumers() {
    if std::env::var("CHORUS_FAULT_ROLE").is_ok() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let target = format!("sqlite:{}", dir.path().join("bus.db").display());
    crash_scenario(&target, 300);
}

#[cfg(feature = "nats")]
#[test]
fn nats_survives_kill_9_of_producers_and_consumers() {
    if std::env::var("CHORUS_FAULT_ROLE").is_ok() {
        return;
    }
    let Some(url) =
        conformance::server_url("NATS", "CHORUS_TEST_NATS_URL", "nats://127.0.0.1:4222")
    else {
        return;
    };
    let ns = format!("chorus_fault_{}", uuid::Uuid::new_v4().simple());
    crash_scenario(&format!("nats:{url}|{ns}"), 200);
    block_on(async {
        let bus = chorus_bus::NatsBus::connect(&url, &ns, config())
            .await
            .unwrap();
        bus.destroy().await.unwrap();
    });
}

#[cfg(not(feature = "nats"))]
#[test]
fn nats_faults_not_built() {
    conformance::not_tested("NATS (fault tests)", "built without cargo feature `nats`");
}

/// Publishes under a file-size limit until storage fails; prints `ACKED id` and `FAILED id`.
async fn fill_disk(target: &str) {
    let limit: u64 = std::env::var("CHORUS_FAULT_FSIZE")
        .unwrap()
        .parse()
        .unwrap();
    // SAFETY: plain libc calls on our own process: ignore SIGXFSZ so that writes past the limit
    // fail with EFBIG instead of killing us, then lower the file-size limit.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let rl = libc::rlimit {
            rlim_cur: limit,
            rlim_max: limit,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &rl), 0);
    }
    let bus = open(target).await;
    let mut failures = 0;
    for i in 0..100_000 {
        let env = message(i);
        match bus.publish_envelope(env.clone()).await {
            Ok(r) => say(&format!("ACKED {}", r.id)),
            Err(e) => {
                say(&format!("FAILED {}", env.id));
                say(&format!("ERROR {e}"));
                failures += 1;
                if failures == 5 {
                    return;
                }
            }
        }
    }
}

#[test]
fn sqlite_full_disk_fails_publish_and_acknowledges_nothing() {
    if std::env::var("CHORUS_FAULT_ROLE").is_ok() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bus.db");
    let target = format!("sqlite:{}", path.display());
    let (mut child, rx) = spawn("full_disk", &target, "", Some(2 * 1024 * 1024));
    let lines = read_until(&rx, |_| false);
    finish(&mut child);
    let acked = ids(&lines, "ACKED ");
    let failed = ids(&lines, "FAILED ");
    let errors: Vec<_> = lines.iter().filter(|l| l.starts_with("ERROR ")).collect();
    assert!(acked.len() > 20, "some publishes fit: {}", acked.len());
    assert_eq!(failed.len(), 5, "publish failed with an error: {lines:?}");
    assert!(
        errors.iter().all(|e| e.contains("storage failed")),
        "{errors:?}"
    );
    block_on(async {
        let bus = open(&target).await;
        let stored: BTreeSet<String> = bus
            .by_task("fault-task")
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.id)
            .collect();
        assert_eq!(
            stored, acked,
            "exactly the acknowledged messages are stored"
        );
        assert!(failed.is_disjoint(&stored));
    });
}
