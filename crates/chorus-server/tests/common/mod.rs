//! A server on 127.0.0.1 with a temporary SQLite store, and an inbox reader (on chorus-agent's
//! shared SSE reader).

// Each test file uses a part of these helpers.
#![allow(dead_code)]

pub mod child;
#[cfg(feature = "postgres")]
pub mod pg_process;
#[cfg(any(feature = "redis", feature = "postgres"))]
pub mod recovery;
pub mod redis_process;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use chorus_bus::Bus;
use chorus_server::{AgentEntry, Server, ServerConfig, Store, bind, hash_token};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub const ADMIN: &str = "admin-token-for-tests";
pub const ALICE: &str = "alice-token-for-tests";
pub const BOB: &str = "bob-token-for-tests";
/// The longest a test waits for anything.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// A running server; stopped (gracefully) by `stop`.
pub struct TestServer {
    pub base: String,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<std::io::Result<()>>,
}

pub fn config(ack_wait_secs: u64) -> ServerConfig {
    let mut c = ServerConfig {
        admin_token_sha256: Some(hash_token(ADMIN)),
        max_body_bytes: 16 * 1024,
        ack_wait_secs,
        ..ServerConfig::default()
    };
    for (id, token) in [("alice", ALICE), ("bob", BOB)] {
        c.agents
            .insert(id.into(), AgentEntry::with_token_hash(hash_token(token)));
    }
    c
}

pub fn db(dir: &Path) -> PathBuf {
    dir.join("chorus.db")
}

impl TestServer {
    pub async fn start(db: &Path, config: &ServerConfig) -> TestServer {
        let store = Store::sqlite(db);
        let bus = store.open(config).await.expect("open store");
        let side = store.open_side(config).expect("open the stores beside");
        TestServer::serve(Server::with_side(bus, side, config)).await
    }

    /// A server over `bus`, keeping confirmations and media in memory.
    pub async fn start_on(bus: Arc<dyn Bus>, config: &ServerConfig) -> TestServer {
        TestServer::serve(Server::new(bus, config)).await
    }

    async fn serve(server: Server) -> TestServer {
        let (listener, addr): (_, SocketAddr) = bind("127.0.0.1:0").await.expect("bind");
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(server.serve(listener, async move {
            let _ = stopped.await;
        }));
        TestServer {
            base: format!("http://{addr}"),
            stop: Some(stop),
            task,
        }
    }

    /// Stops the server and waits (bounded) until it has shut down.
    pub async fn stop(mut self) {
        let _ = self.stop.take().expect("running").send(());
        tokio::time::timeout(PATIENCE, &mut self.task)
            .await
            .expect("graceful shutdown within the patience")
            .expect("server task")
            .expect("server ran");
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Stops the server at once, as a crash would for its clients: its task is aborted, its
    /// connections dropped mid-request, nothing handed back or flushed.
    pub fn abort(self) {
        self.task.abort();
    }
}

/// True when the server closes `stream` within `wait` (whatever it sends first).
pub async fn closed_within(stream: &mut tokio::net::TcpStream, wait: Duration) -> bool {
    use tokio::io::AsyncReadExt;
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0) | Err(_)) => return true,
            Ok(Ok(_)) => {}
        }
    }
}

/// A server on a fresh SQLite file in a temporary folder (kept while the folder lives).
pub async fn fresh(ack_wait_secs: u64) -> (tempfile::TempDir, TestServer) {
    let dir = tempfile::tempdir().expect("temporary folder");
    let server = TestServer::start(&db(dir.path()), &config(ack_wait_secs)).await;
    (dir, server)
}

/// The metrics text, read with the admin token.
pub async fn metrics_text(server: &TestServer) -> String {
    client()
        .get(server.url("/metrics"))
        .bearer_auth(ADMIN)
        .send()
        .await
        .expect("metrics request")
        .text()
        .await
        .expect("metrics text")
}

/// The JSON answer to a GET of `path`, with `token` as bearer when given.
pub async fn get_json(server: &TestServer, path: &str, token: Option<&str>) -> Value {
    let mut request = client().get(server.url(path));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("GET request");
    response.json().await.expect("a JSON answer")
}

/// Acks or nacks `id` in `agent`'s inbox; returns the status.
pub async fn settle(server: &TestServer, agent: &str, token: &str, id: &str, action: &str) -> u16 {
    client()
        .post(server.url(&format!("/v1/agents/{agent}/inbox/{id}/{action}")))
        .bearer_auth(token)
        .send()
        .await
        .expect("settle request")
        .status()
        .as_u16()
}

/// Nacks message `id` at each of its 5 deliveries in `agent`'s inbox (the bus's default
/// max_deliver), so that it becomes a dead letter; fails the test if any delivery differs.
pub async fn nack_past_max_deliver(
    server: &TestServer,
    inbox: &mut SseReader,
    (agent, token): (&str, &str),
    id: &str,
) {
    for attempt in 1..=5 {
        assert_eq!(delivered(&inbox.next().await), (id.to_owned(), attempt));
        assert_eq!(settle(server, agent, token, id, "nack").await, 204);
    }
}

/// The message id and attempt of an inbox event.
pub fn delivered(event: &SseEvent) -> (String, u64) {
    let data = event.json();
    (
        data["message_id"].as_str().expect("message_id").to_owned(),
        data["attempt"].as_u64().expect("attempt"),
    )
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client")
}

/// A chorus message from `from` to `to`.
pub fn message(id: &str, from: &str, to: &str, text: &str) -> Value {
    json!({"role": "user", "id": id, "name": from, "recipient": to, "content": text})
}

pub async fn publish(server: &TestServer, token: &str, body: &Value) -> reqwest::Response {
    client()
        .post(server.url("/v1/messages"))
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .expect("publish request")
}

/// One server-sent event.
#[derive(Debug, Clone)]
pub struct SseEvent {
    /// The last event id (`None` before any `id:` line).
    pub id: Option<String>,
    /// The event type (`message` when the event names none).
    pub event: Option<String>,
    pub data: String,
    /// The reconnection delay the event's `retry:` field asks for.
    pub retry: Option<Duration>,
}

impl SseEvent {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).expect("event data is JSON")
    }
}

/// Reads events from a `text/event-stream` response.
pub struct SseReader {
    events: chorus_agent::sse::SseReader,
}

impl SseReader {
    /// Opens `agent`'s inbox with `token`, resuming after `last_event_id`.
    pub async fn open(
        server: &TestServer,
        agent: &str,
        token: &str,
        last_event_id: Option<&str>,
    ) -> SseReader {
        SseReader::open_at(&server.base, agent, token, last_event_id).await
    }

    /// Opens `agent`'s inbox with `token` and the query string `query` (`max_in_flight=2`).
    pub async fn open_with(
        server: &TestServer,
        agent: &str,
        token: &str,
        query: &str,
    ) -> SseReader {
        SseReader::open_url(
            &format!("{}/v1/agents/{agent}/inbox?{query}", server.base),
            token,
            None,
        )
        .await
    }

    /// The same on the server at `base` (`http://host:port`).
    pub async fn open_at(
        base: &str,
        agent: &str,
        token: &str,
        last_event_id: Option<&str>,
    ) -> SseReader {
        SseReader::open_url(
            &format!("{base}/v1/agents/{agent}/inbox"),
            token,
            last_event_id,
        )
        .await
    }

    async fn open_url(url: &str, token: &str, last_event_id: Option<&str>) -> SseReader {
        SseReader::try_open_url(url, token, last_event_id)
            .await
            .expect("inbox request")
    }

    /// Opens the inbox stream at `url`; an error for a server that cannot be reached or does
    /// not answer 200 with an event stream (for tests whose server dies on purpose).
    pub async fn try_open_url(
        url: &str,
        token: &str,
        last_event_id: Option<&str>,
    ) -> Result<SseReader, String> {
        let mut request = client()
            .get(url)
            .bearer_auth(token)
            .timeout(Duration::from_secs(120));
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id);
        }
        let response = request.send().await.map_err(|e| e.to_string())?;
        if response.status() != 200 {
            return Err(format!("status {}", response.status()));
        }
        assert_eq!(
            response.headers()["content-type"].to_str().unwrap(),
            "text/event-stream"
        );
        Ok(SseReader {
            events: chorus_agent::sse::SseReader::response(response, None),
        })
    }

    /// Fails the test with `why` when an event comes within `wait`.
    pub async fn assert_quiet(&mut self, wait: Duration, why: &str) {
        if let Some(event) = self.next_within(wait).await {
            panic!("{why}: {}", event.data);
        }
    }

    /// The next event with data, or None when none comes within `wait`.
    pub async fn next_within(&mut self, wait: Duration) -> Option<SseEvent> {
        match self.try_next_within(wait).await {
            Ok(event) => event,
            Err(e) if e == STREAM_ENDED => None,
            Err(e) => panic!("stream read: {e}"),
        }
    }

    /// Like [`SseReader::next_within`], with an error when the stream breaks or ends.
    pub async fn try_next_within(&mut self, wait: Duration) -> Result<Option<SseEvent>, String> {
        match tokio::time::timeout(wait, self.events.next()).await {
            Err(_) => Ok(None),
            Ok(None) => Err(STREAM_ENDED.into()),
            Ok(Some(Err(e))) => Err(e.to_string()),
            Ok(Some(Ok(e))) => Ok(Some(SseEvent {
                id: (!e.id.is_empty()).then_some(e.id),
                event: Some(e.event),
                data: e.data,
                retry: e.retry,
            })),
        }
    }

    /// The next event; fails the test when none comes within the patience.
    pub async fn next(&mut self) -> SseEvent {
        self.next_within(PATIENCE)
            .await
            .expect("an event within the patience")
    }
}

/// What [`SseReader::try_next_within`] says when the server ended the stream.
pub const STREAM_ENDED: &str = "the stream ended";

/// The server stores a test also runs on, with the variable naming each one's URL.
pub const SERVER_STORES: [(&str, &str); 3] = [
    ("NATS", "CHORUS_TEST_NATS_URL"),
    ("Redis", "CHORUS_TEST_REDIS_URL"),
    ("PostgreSQL", "CHORUS_TEST_POSTGRES_URL"),
];

/// The URL in `var`; none after saying, past the harness's capture, that `what` was not tested
/// on `backend` because the variable is unset.
pub fn server_url(what: &str, backend: &str, var: &str) -> Option<String> {
    use std::io::Write;
    let url = std::env::var(var).ok();
    if url.is_none() {
        let _ = writeln!(
            std::io::stderr(),
            "\n*** {what} on {backend} NOT tested: {var} not set ***\n"
        );
    }
    url
}

/// The store address `url` with a fresh namespace (`chorus_test_<uuid>`).
pub fn fresh_namespace(url: &str) -> String {
    format!(
        "{url}?namespace=chorus_test_{}",
        uuid::Uuid::new_v4().simple()
    )
}

/// Deletes the namespace of the store at `address` (made by [`fresh_namespace`]).
pub async fn destroy_namespace(address: &str) {
    Store::parse(address)
        .expect("a store address")
        .address()
        .destroy_namespace()
        .await
        .expect("delete the test namespace");
}

/// A server with `config` on the NATS or Redis server named by `var`, in a fresh namespace
/// (delete it with `store.address().destroy_namespace()`); `None` after saying, past the
/// harness's capture, that `what` was not tested there when the variable is unset. An
/// unreachable server fails the test.
#[cfg(any(feature = "nats", feature = "redis"))]
pub async fn on_server(
    what: &str,
    backend: &str,
    var: &str,
    config: &ServerConfig,
) -> Option<(TestServer, Store)> {
    let url = server_url(what, backend, var)?;
    let store = Store::parse(&fresh_namespace(&url)).expect("a store address");
    let bus = store
        .open(config)
        .await
        .unwrap_or_else(|e| panic!("the {backend} server at {url} is reachable: {e}"));
    Some((TestServer::start_on(bus, config).await, store))
}

/// Says, past the test harness's capture, that `what` was not tested on `backend`: this test
/// binary was built without the cargo feature `feature`.
pub fn not_built(what: &str, backend: &str, feature: &str) {
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "\n*** {what} on {backend} NOT tested: built without cargo feature `{feature}` ***\n"
    );
}

/// Runs `body` against a server with `config` on the NATS or Redis server named by `var` (see
/// [`on_server`]), then stops the server and deletes its namespace.
#[cfg(any(feature = "nats", feature = "redis"))]
pub async fn run_on_server(
    what: &str,
    backend: &str,
    var: &str,
    config: &ServerConfig,
    body: impl AsyncFnOnce(&TestServer),
) {
    if let Some((server, store)) = on_server(what, backend, var, config).await {
        body(&server).await;
        server.stop().await;
        store
            .address()
            .destroy_namespace()
            .await
            .expect("delete the test namespace");
    }
}
