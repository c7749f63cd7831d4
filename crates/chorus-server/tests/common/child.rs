//! A server in a child process (the test binary itself, started again with an environment
//! variable naming its store): for tests that kill it or measure its memory.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use chorus_server::{Server, ServerConfig, Store, bind};

/// The server process, killed when dropped (also when the test fails).
pub struct ServerProcess(pub Child);

impl ServerProcess {
    /// The process id (for `/proc/<pid>/status`).
    pub fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts this test binary again with `var` = `store`, so that it serves (see [`serve`]);
/// returns the process and its base URL.
pub fn spawn_server(var: &str, store: &str) -> (ServerProcess, String) {
    spawn_server_with(var, store, &[], None)
}

/// Like [`spawn_server`], with more variables in the child's environment and, when `dir` is
/// given, that working directory (where a NATS or Redis store keeps its side files).
pub fn spawn_server_with(
    var: &str,
    store: &str,
    more: &[(&str, String)],
    dir: Option<&std::path::Path>,
) -> (ServerProcess, String) {
    let mut command = Command::new(std::env::current_exe().unwrap());
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
    let mut child = command
        .env(var, store)
        .envs(more.iter().map(|(k, v)| (k, v)))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the server process");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let child = ServerProcess(child);
    while let Some(Ok(line)) = lines.next() {
        if let Some(base) = line.strip_prefix("ADDR ") {
            // Keep reading, so that a later print in the child never meets a closed pipe.
            std::thread::spawn(move || lines.for_each(drop));
            return (child, base.to_owned());
        }
    }
    panic!("the server process printed no address");
}

/// In the child process: opens `store` with `config`, prints its address, serves until killed.
/// With `beside`, confirmations, trace contexts and media are kept in files beside the store
/// (see `Store::open_side`); else in memory.
pub async fn serve(store: &str, config: &ServerConfig, beside: bool) {
    let store = Store::parse(store).expect("a store address");
    let bus = store.open(config).await.expect("open store");
    let server = if beside {
        let side = store.open_side(config).expect("open the stores beside");
        Server::with_side(bus, side, config)
    } else {
        Server::new(bus, config)
    };
    let (listener, addr) = bind("127.0.0.1:0").await.expect("bind");
    println!("ADDR http://{addr}");
    server
        .serve(listener, std::future::pending())
        .await
        .expect("serve");
}

/// The value of the `/metrics` line of the server at `base` that starts with `name` (labels
/// included), read with the admin token `admin`; none when the server does not answer or has
/// no such line.
pub async fn metric(base: &str, admin: &str, name: &str) -> Option<u64> {
    let text = super::client()
        .get(format!("{base}/metrics"))
        .bearer_auth(admin)
        .send()
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|n| n.parse().ok())
}
