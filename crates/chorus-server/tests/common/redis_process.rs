//! `redis-server` processes of a test's own, on free ports of 127.0.0.1, to kill, restart and
//! reconfigure (the shared test Redis must not be disturbed).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::PATIENCE;

/// Persistence that keeps every acknowledged write across `kill -9`: an append-only file
/// fsync'd on every write, no snapshots.
pub const DURABLE: [&str; 6] = [
    "--appendonly",
    "yes",
    "--appendfsync",
    "always",
    "--save",
    "",
];

/// A `redis-server` of the test's own, with its files in a directory; killed when dropped.
pub struct RedisProcess {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// `redis://127.0.0.1:<port>`.
    pub url: String,
}

impl RedisProcess {
    /// Starts Redis on `port` with `settings` (`--appendonly yes` …); waits until it answers.
    pub fn start(dir: &Path, port: u16, settings: &[&str]) -> RedisProcess {
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .arg("--dir")
            .arg(dir)
            .args(settings)
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server runs (CHORUS_TEST_REDIS_URL is set, so it must)");
        let deadline = Instant::now() + PATIENCE;
        while redis_cli(port, &["PING"]).as_deref() != Some("PONG") {
            assert!(Instant::now() < deadline, "redis-server did not answer");
            std::thread::sleep(Duration::from_millis(50));
        }
        RedisProcess {
            child,
            port,
            url: format!("redis://127.0.0.1:{port}"),
        }
    }

    /// Runs one command with `redis-cli`; its output, trimmed (`None` when it did not run).
    pub fn cli(&self, args: &[&str]) -> Option<String> {
        redis_cli(self.port, args)
    }

    /// SIGSTOP (`pause = true`) or SIGCONT of the server.
    pub fn pause(&self, pause: bool) {
        let signal = if pause { "-STOP" } else { "-CONT" };
        let done = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(done.success());
    }

    /// Waits until this server, a replica, has its link to the primary up.
    pub fn wait_linked(&self) {
        let deadline = Instant::now() + PATIENCE;
        while !self
            .cli(&["INFO", "replication"])
            .is_some_and(|i| i.contains("master_link_status:up"))
        {
            assert!(Instant::now() < deadline, "the replica did not link up");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// `kill -9`: nothing is flushed.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for RedisProcess {
    fn drop(&mut self) {
        // A paused server is woken first, so that it can be killed and reaped.
        let _ = Command::new("kill")
            .args(["-CONT", &self.child.id().to_string()])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `redis-cli -p port args…`, its output trimmed; `None` when it failed.
pub fn redis_cli(port: u16, args: &[&str]) -> Option<String> {
    let out = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// A port nothing listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
