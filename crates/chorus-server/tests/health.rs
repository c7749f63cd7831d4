//! `/healthz` tells the truth about writing: a store that still answers reads but cannot take
//! a write (here: another process holds the SQLite file's write lock) is reported unhealthy,
//! as every publish then fails, and healthy again once it can write.

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

#[tokio::test]
async fn healthz_fails_while_the_store_cannot_write() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(&db(dir.path()), &config(30)).await;
    let health = || client().get(server.url("/healthz")).send();
    let ok = health().await.unwrap();
    assert_eq!(ok.status(), 200);
    assert_eq!(ok.json::<Value>().await.unwrap()["status"], "ok");

    // Another process takes the write lock and keeps it: reads still work (WAL), writes wait.
    let locker = rusqlite::Connection::open(db(dir.path())).unwrap();
    locker.execute_batch("BEGIN IMMEDIATE").unwrap();

    let asked = Instant::now();
    let sick = health().await.unwrap();
    let waited = asked.elapsed();
    assert_eq!(sick.status(), 503, "a store that cannot write is unhealthy");
    let body: Value = sick.json().await.unwrap();
    assert_eq!(body["error"], "store_unavailable", "{body}");
    assert!(
        waited < Duration::from_secs(8),
        "healthz answers within its own bound, took {waited:?}"
    );
    // The probe agrees with what a publish meets meanwhile.
    let refused = publish(&server, ALICE, &message("m-locked", "alice", "bob", "hi")).await;
    assert_eq!(refused.status(), 503, "a publish cannot be stored either");

    locker.execute_batch("ROLLBACK").unwrap();
    drop(locker);
    let deadline = Instant::now() + PATIENCE;
    loop {
        let again = health().await.unwrap();
        if again.status() == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still {} after the lock went",
            again.status()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let stored = publish(&server, ALICE, &message("m-after", "alice", "bob", "hi")).await;
    assert_eq!(stored.status(), 201);
    server.stop().await;
}

/// Where the child of [`healthz_fails_while_publishes_cannot_be_written`] keeps its store.
const FULL_DISK_CHILD: &str = "CHORUS_HEALTH_FULL_DISK_DIR";

/// The child: a server on a SQLite file, under a file-size limit (a disk that is full for its
/// files); prints its address and serves until killed. Does nothing in a normal test run.
#[test]
fn full_disk_child() {
    let Ok(dir) = std::env::var(FULL_DISK_CHILD) else {
        return;
    };
    // SAFETY: plain libc calls on this process alone: ignore SIGXFSZ, so that a write past the
    // limit fails with EFBIG instead of killing the process, then lower the file-size limit.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let limit = libc::rlimit {
            rlim_cur: 2 * 1024 * 1024,
            rlim_max: libc::RLIM_INFINITY,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &limit), 0);
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let server = TestServer::start(&db(std::path::Path::new(&dir)), &config(30)).await;
        println!("ADDR {}", server.base);
        std::future::pending::<()>().await;
    });
}

/// A disk full for the store's files (a file-size limit in the server's process): publishes
/// fail with 503, and `/healthz` says so (before, its tiny probe write still fitted and it
/// answered 200); once the limit is raised, a publish is stored and `/healthz` is 200 again.
#[tokio::test]
async fn healthz_fails_while_publishes_cannot_be_written() {
    use std::io::BufRead;
    use std::process::{Command, Stdio};

    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "full_disk_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(FULL_DISK_CHILD, dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let base = loop {
        let line = lines.next().expect("the child prints its address").unwrap();
        // The harness writes `test full_disk_child ... ` before it on the same line.
        if let Some((_, base)) = line.split_once("ADDR ") {
            break base.trim().to_owned();
        }
    };
    std::thread::spawn(move || lines.for_each(drop));
    let http = client();
    let health = || http.get(format!("{base}/healthz")).send();
    assert_eq!(health().await.unwrap().status(), 200);
    let filler = "x".repeat(12 * 1024);
    let mut refused = None;
    for i in 0..2000 {
        let body = message(&format!("fill-{i}"), "alice", "bob", &filler);
        let answer = http
            .post(format!("{base}/v1/messages"))
            .bearer_auth(ALICE)
            .json(&body)
            .send()
            .await
            .unwrap();
        if answer.status() == 503 {
            refused = Some(i);
            break;
        }
        assert_eq!(answer.status(), 201);
    }
    let refused = refused.expect("the disk filled up");
    assert!(refused > 10, "some publishes fitted first: {refused}");
    let sick = health().await.unwrap();
    assert_eq!(sick.status(), 503, "/healthz with publishes failing");
    let body: Value = sick.json().await.unwrap();
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("refuses the writes publishes make"),
        "{body}"
    );

    // Room again: the next publish is stored, and /healthz is 200.
    // SAFETY: prlimit on our own child process, raising a limit.
    let raised = unsafe {
        let unlimited = libc::rlimit {
            rlim_cur: libc::RLIM_INFINITY,
            rlim_max: libc::RLIM_INFINITY,
        };
        libc::prlimit(
            child.id() as libc::pid_t,
            libc::RLIMIT_FSIZE,
            &unlimited,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(raised, 0);
    let deadline = Instant::now() + PATIENCE;
    loop {
        let body = message("after-room", "alice", "bob", "hi");
        let answer = http
            .post(format!("{base}/v1/messages"))
            .bearer_auth(ALICE)
            .json(&body)
            .send()
            .await
            .unwrap();
        if answer.status() == 201 {
            break;
        }
        assert!(Instant::now() < deadline, "still {}", answer.status());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(health().await.unwrap().status(), 200);
    let _ = child.kill();
    let _ = child.wait();
}
