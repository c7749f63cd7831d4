//! A JetStream cluster of `nats-server` processes on free loopback ports, for the tests that run
//! chorus on a cluster: start, kill -9 and restart a node, pause it (SIGSTOP) and resume it,
//! and ask which node leads a stream (the monitoring endpoint's `/jsz`). Shared by the bus's
//! and the server's tests (the server's include this file by path). A node is killed with the
//! thread that started it: start and restart nodes from a thread that lives as long as they
//! should. The binary is `CHORUS_TEST_NATS_SERVER` (a path) when set, else `nats-server` on
//! PATH; [`server_version`] says which version that is.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The `nats-server` binary the nodes run: `CHORUS_TEST_NATS_SERVER` when set, else
/// `nats-server` on PATH.
pub fn server_binary() -> String {
    std::env::var("CHORUS_TEST_NATS_SERVER")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "nats-server".to_owned())
}

/// What `<binary> --version` prints (`nats-server: v2.9.10`), with the binary's path; says so
/// when it does not run.
pub fn server_version() -> String {
    let binary = server_binary();
    match Command::new(&binary).arg("--version").output() {
        Ok(out) => format!("{} ({binary})", String::from_utf8_lossy(&out.stdout).trim()),
        Err(e) => format!("{binary} does not run: {e}"),
    }
}

/// How long a cluster may take to elect its JetStream meta leader.
const FORMING: Duration = Duration::from_secs(30);

/// One node: its process (none while killed) and its ports.
pub struct Node {
    child: Option<Child>,
    /// Client port.
    pub port: u16,
    /// Monitoring (HTTP) port.
    pub monitor: u16,
    cluster_port: u16,
    /// Its server name, `n0`, `n1`, ….
    pub name: String,
    dir: PathBuf,
}

/// A running cluster; its nodes are killed when it is dropped.
pub struct Cluster {
    pub nodes: Vec<Node>,
    routes: String,
    _dir: tempfile::TempDir,
}

/// A port on 127.0.0.1 free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Cluster {
    /// Starts `n` nodes with JetStream and cluster routes to each other, and waits until the
    /// cluster has a meta leader that every node knows.
    pub fn start(n: usize) -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let nodes: Vec<Node> = (0..n)
            .map(|i| Node {
                child: None,
                port: free_port(),
                monitor: free_port(),
                cluster_port: free_port(),
                name: format!("n{i}"),
                dir: dir.path().join(format!("n{i}")),
            })
            .collect();
        let routes = nodes
            .iter()
            .map(|n| format!("nats://127.0.0.1:{}", n.cluster_port))
            .collect::<Vec<_>>()
            .join(",");
        let mut cluster = Cluster {
            nodes,
            routes,
            _dir: dir,
        };
        for i in 0..n {
            cluster.spawn(i);
        }
        cluster.wait_formed();
        cluster
    }

    fn spawn(&mut self, i: usize) {
        let node = &self.nodes[i];
        std::fs::create_dir_all(&node.dir).unwrap();
        let mut command = Command::new(server_binary());
        // Killed with the thread that started it, so that no node outlives a test process
        // that ends without dropping its cluster (a static one, or a panic that aborts).
        // SAFETY: prctl is async-signal-safe and touches nothing of the parent's.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut command, || {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = command
            .args(["-a", "127.0.0.1", "-p", &node.port.to_string()])
            .args(["-m", &node.monitor.to_string()])
            .args(["-n", &node.name, "-js", "-sd"])
            .arg(&node.dir)
            .args(["--cluster_name", "chorus_test"])
            .args([
                "--cluster",
                &format!("nats://127.0.0.1:{}", node.cluster_port),
            ])
            .args(["--routes", &self.routes])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "{} runs (CHORUS_TEST_NATS_URL is set, so it must): {e}",
                    server_binary()
                )
            });
        self.nodes[i].child = Some(child);
        let deadline = Instant::now() + FORMING;
        while TcpStream::connect(("127.0.0.1", self.nodes[i].port)).is_err() {
            assert!(Instant::now() < deadline, "nats-server {i} did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until every running node knows the meta leader of a cluster of all the nodes.
    pub fn wait_formed(&self) {
        let deadline = Instant::now() + FORMING;
        loop {
            let formed = self.nodes.iter().filter(|n| n.child.is_some()).all(|n| {
                jsz(n.monitor, "").is_some_and(|j| {
                    j["meta_cluster"]["leader"]
                        .as_str()
                        .is_some_and(|l| !l.is_empty())
                        && j["meta_cluster"]["cluster_size"].as_u64()
                            == Some(self.nodes.len() as u64)
                })
            });
            if formed {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the JetStream cluster did not form within {FORMING:?}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// `nats://127.0.0.1:p0,127.0.0.1:p1,…?replicas=N`.
    pub fn url(&self, replicas: usize) -> String {
        let hosts: Vec<String> = (self.nodes.iter())
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        format!("nats://{}?replicas={replicas}", hosts.join(","))
    }

    /// `kill -9` of node `i` (nothing flushed).
    pub fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.nodes[i].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts node `i` again on its ports and files.
    pub fn restart(&mut self, i: usize) {
        assert!(self.nodes[i].child.is_none(), "node {i} runs");
        self.spawn(i);
    }

    /// SIGSTOP (`pause = true`) or SIGCONT of node `i`.
    pub fn pause(&self, i: usize, pause: bool) {
        let pid = self.nodes[i].child.as_ref().expect("running").id();
        let signal = if pause { "-STOP" } else { "-CONT" };
        let done = Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .expect("kill runs");
        assert!(done.success());
    }

    /// The index of the node leading stream `name`, as the running nodes report it.
    pub fn leader_of(&self, name: &str) -> Option<usize> {
        for node in self.nodes.iter().filter(|n| n.child.is_some()) {
            let Some(j) = jsz(node.monitor, "&accounts=true&streams=true") else {
                continue;
            };
            if let Some(leader) = find_leader(&j, name) {
                return self.nodes.iter().position(|n| n.name == leader);
            }
        }
        None
    }
}

impl Cluster {
    /// One request of the NATS API (`$JS.API.…`) with a JSON `payload`, over a bare client
    /// connection to the first running node that answers within 2 s: its JSON answer.
    pub fn request(&self, subject: &str, payload: &str) -> Option<Value> {
        (self.nodes.iter().filter(|n| n.child.is_some()))
            .find_map(|n| request(n.port, subject, payload))
    }

    /// What each running node's `/jsz` says of stream `name` and its consumers (each node's
    /// own copy of their state), a line each.
    pub fn stream_report(&self, name: &str) -> String {
        let mut out = String::new();
        for node in self.nodes.iter().filter(|n| n.child.is_some()) {
            let query = "&accounts=true&streams=true&consumers=true";
            let Some(j) = jsz(node.monitor, query) else {
                out += &format!("{}: no /jsz answer\n", node.name);
                continue;
            };
            let Some(stream) = find_named(&j, name, "state") else {
                out += &format!("{}: no stream {name}\n", node.name);
                continue;
            };
            let state = &stream["state"];
            out += &format!(
                "{}: stream leader {}, messages {}, first {}, last {}, deleted {}\n",
                node.name,
                stream["cluster"]["leader"],
                state["messages"],
                state["first_seq"],
                state["last_seq"],
                state["num_deleted"],
            );
            let consumers = stream["consumer_detail"].as_array().cloned();
            for c in consumers.unwrap_or_default() {
                out += &format!(
                    "  {}: consumer {} (leader {}): delivered {}/{} (stream/consumer), ack floor \
                     {}/{}, pending {}, ack pending {}, redelivered {}, waiting {}\n",
                    node.name,
                    c["name"],
                    c["cluster"]["leader"],
                    c["delivered"]["stream_seq"],
                    c["delivered"]["consumer_seq"],
                    c["ack_floor"]["stream_seq"],
                    c["ack_floor"]["consumer_seq"],
                    c["num_pending"],
                    c["num_ack_pending"],
                    c["num_redelivered"],
                    c["num_waiting"],
                );
            }
        }
        out
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for i in 0..self.nodes.len() {
            // A paused node is woken first, so that it can be killed and reaped.
            if let Some(child) = &self.nodes[i].child {
                let _ = Command::new("kill")
                    .args(["-CONT", &child.id().to_string()])
                    .stderr(Stdio::null())
                    .status();
            }
            self.kill(i);
        }
    }
}

/// The leader named for stream `name` anywhere in a `/jsz` answer.
fn find_leader(j: &Value, name: &str) -> Option<String> {
    match j {
        Value::Object(map) => {
            if map.get("name").and_then(Value::as_str) == Some(name)
                && let Some(leader) = map.get("cluster").and_then(|c| c["leader"].as_str())
                && !leader.is_empty()
            {
                return Some(leader.to_owned());
            }
            map.values().find_map(|v| find_leader(v, name))
        }
        Value::Array(items) => items.iter().find_map(|v| find_leader(v, name)),
        _ => None,
    }
}

/// The object anywhere in `j` whose `name` is `name` and that has the field `field`.
fn find_named<'a>(j: &'a Value, name: &str, field: &str) -> Option<&'a Value> {
    match j {
        Value::Object(map) => {
            if map.get("name").and_then(Value::as_str) == Some(name) && map.contains_key(field) {
                return Some(j);
            }
            map.values().find_map(|v| find_named(v, name, field))
        }
        Value::Array(items) => items.iter().find_map(|v| find_named(v, name, field)),
        _ => None,
    }
}

/// A NATS request on client port `port` in the bare protocol (CONNECT, SUB, PUB, then the
/// one MSG answered): its payload as JSON; `None` when none came within 2 s.
fn request(port: u16, subject: &str, payload: &str) -> Option<Value> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?; // INFO
    write!(
        stream,
        "CONNECT {{\"verbose\":false,\"pedantic\":false}}\r\nSUB _chorus_test.reply 1\r\n\
         PUB {subject} _chorus_test.reply {}\r\n{payload}\r\n",
        payload.len()
    )
    .ok()?;
    loop {
        line.clear();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if line.starts_with("PING") {
            stream.write_all(b"PONG\r\n").ok()?;
        } else if line.starts_with("MSG ") {
            let len: usize = line.split_whitespace().last()?.parse().ok()?;
            let mut body = vec![0; len + 2];
            reader.read_exact(&mut body).ok()?;
            return serde_json::from_slice(&body[..len]).ok();
        } else if line.starts_with("-ERR") {
            return None;
        }
    }
}

/// `GET /jsz?…` of the monitoring port (a plain HTTP/1.0 request); `None` when it did not
/// answer with JSON within a second.
fn jsz(port: u16, query: &str) -> Option<Value> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(1))).ok()?;
    write!(
        stream,
        "GET /jsz?x=1{query} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n"
    )
    .ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let body = answer.split_once("\r\n\r\n")?.1;
    serde_json::from_str(body).ok()
}

/// The directory of node `i`'s files (for a test that looks at them).
pub fn node_dir(cluster: &Cluster, i: usize) -> &Path {
    &cluster.nodes[i].dir
}
