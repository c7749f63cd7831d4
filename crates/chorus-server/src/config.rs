//! The server's configuration file (`chorus.toml`): agents with hashed tokens, the admin token,
//! limits and delivery settings.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::Duration;

use chorus_bus::QueueSettings;
use serde::Deserialize;

pub use crate::blobs::MediaConfig;
use crate::ids::id_problem;
pub use crate::pools::PoolEntry;
pub use crate::redact::RedactConfig;
use crate::redact::Redactor;
pub use crate::retention::RetentionConfig;
pub use crate::routes::{RouteEntry, Subscription};

/// Settings read from `chorus.toml`; every field has a default.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// SHA-256 (hex) of the admin token; none means one is generated and printed at start.
    #[serde(default)]
    pub admin_token_sha256: Option<String>,
    /// Agents allowed to connect, by id.
    #[serde(default)]
    pub agents: BTreeMap<String, AgentEntry>,
    /// Largest request body accepted, in bytes.
    #[serde(default = "default_max_body_bytes")]
    pub max_body_bytes: usize,
    /// Seconds a client may take to send a request's headers, and a keep-alive connection may
    /// stay idle; the connection is closed after it.
    #[serde(default = "default_header_timeout_secs")]
    pub header_timeout_secs: u64,
    /// Connections open at once; more are closed as they arrive (each costs memory, and none
    /// needs a token to open).
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
    /// Seconds an agent holds a delivery before it is delivered again.
    #[serde(default = "default_ack_wait_secs")]
    pub ack_wait_secs: u64,
    /// Messages an agent may publish per second on average; 0 turns the limit off.
    #[serde(default = "default_rate_per_sec")]
    pub rate_per_sec: f64,
    /// Messages an agent may publish at once.
    #[serde(default = "default_rate_burst")]
    pub rate_burst: u32,
    /// Acks, nacks and lease extensions an agent may make per second on average (a reader
    /// draining a queue settles as fast as it reads); 0 turns the limit off.
    #[serde(default = "default_settle_rate_per_sec")]
    pub settle_rate_per_sec: f64,
    /// Accept messages to recipients that are neither a configured agent nor an inbox some agent
    /// reads (a pool); by default they are refused (422), since nobody would read them. With no
    /// agents configured every recipient is accepted.
    #[serde(default)]
    pub accept_unknown_recipients: bool,
    /// Serve on a Redis server whose acknowledged messages would not survive a restart (no
    /// append-only file); by default `chorus serve` refuses to start on one.
    #[serde(default)]
    pub accept_volatile_store: bool,
    /// New inboxes (recipients not configured, not read by an agent and never used before) one
    /// agent may create by publishing; more are refused (each costs the store and `/metrics`).
    /// 0 turns the limit off.
    #[serde(default = "default_max_new_inboxes")]
    pub max_new_inboxes: usize,
    /// Keep each message's delivery history (every send with its reader and stream, hand-overs,
    /// nacks, acks; shown on the task page and by `GET /v1/deliveries`), written beside the
    /// message in the store in the background. Default true.
    #[serde(default = "default_true")]
    pub delivery_history: bool,
    /// Records one journal (an agent's, for one task) may hold; a record past it is refused
    /// with 422 (the pruner removes records after `[retention] records_secs`). 0 turns the cap
    /// off.
    #[serde(default = "default_max_journal_records")]
    pub max_journal_records: u64,
    /// Bytes of journal records one agent may write a minute (all its journals, on this
    /// replica); more get 429 with `Retry-After`. 0 turns the cap off.
    #[serde(default = "default_max_journal_bytes_per_minute")]
    pub max_journal_bytes_per_minute: u32,
    /// Inbox streams one agent may hold open at once (its workers together); more are refused
    /// with 429, so that one token cannot take every connection. 0 turns the cap off.
    #[serde(default = "default_max_streams_per_agent")]
    pub max_streams_per_agent: usize,
    /// Milliseconds what the last inbox stream of an inbox held waits, after the stream
    /// closed, for its client to reconnect (or until its ack deadline, if sooner) before it
    /// goes back to the store and comes again as a new attempt; streams ask `EventSource`
    /// clients to reconnect within half of it (`retry:`).
    #[serde(default = "default_hand_back_ms")]
    pub hand_back_ms: u64,
    /// Unsettled deliveries one inbox stream holds at once unless the agent's entry or the
    /// request (`?max_in_flight=`) says otherwise.
    #[serde(default = "default_max_in_flight")]
    pub max_in_flight: usize,
    /// PEM certificate chain; with `tls_key`, the server speaks HTTPS only.
    #[serde(default)]
    pub tls_cert: Option<std::path::PathBuf>,
    /// PEM private key of `tls_cert`.
    #[serde(default)]
    pub tls_key: Option<std::path::PathBuf>,
    /// What is redacted before a message is stored.
    #[serde(default)]
    pub redact: RedactConfig,
    /// Deliveries of a message before it becomes a dead letter (`max_deliver`).
    #[serde(default = "default_max_deliver")]
    pub max_deliver: u32,
    /// Seconds a published message id is remembered with its content: published again within
    /// them, the same content is a duplicate (200, not stored again) and other content a
    /// conflict (409). Unset: as long as the message log is kept (`[retention] messages_secs`,
    /// 7 days by default; "forever" there is 100 years here).
    #[serde(default)]
    pub dedupe_window_secs: Option<u64>,
    /// Pools (`[pools.NAME]`): inboxes several agents read, with their own delivery settings.
    #[serde(default)]
    pub pools: BTreeMap<String, PoolEntry>,
    /// Routing rules (`[[routes]]`), applied in order to every published message.
    #[serde(default)]
    pub routes: Vec<RouteEntry>,
    /// Subscriptions (`[[subscriptions]]`): inboxes that get copies of messages by handoff type
    /// or by recipient.
    #[serde(default)]
    pub subscriptions: Vec<Subscription>,
    /// How images and audio in messages are kept.
    #[serde(default)]
    pub media: MediaConfig,
    /// How long messages, dead letters, blobs, trace contexts and confirmations are kept.
    #[serde(default)]
    pub retention: RetentionConfig,
    /// Longest time the server may take to answer a request, in seconds (503 after it); the
    /// event streams (`GET /v1/agents/{agent}/inbox`, `/v1/events`) are not limited. 0: no
    /// limit.
    #[serde(default = "default_request_timeout_secs")]
    pub request_timeout_secs: u64,
    /// Cross-origin requests from browsers (`[cors]`); off unless origins are listed.
    #[serde(default)]
    pub cors: CorsConfig,
}

/// Which web pages of other origins may call the API (CORS).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CorsConfig {
    /// Origins allowed (`https://app.example.com`), or `["*"]` for any; empty: CORS is off.
    #[serde(default)]
    pub allow_origins: Vec<String>,
    /// How long a browser may keep a preflight answer, in seconds.
    #[serde(default)]
    pub max_age_secs: Option<u64>,
}

impl CorsConfig {
    /// What is wrong with the origins, if anything.
    pub fn problem(&self) -> Option<String> {
        if self.allow_origins.len() > 1 && self.allow_origins.iter().any(|o| o == "*") {
            return Some("cors.allow_origins: `*` allows every origin; list it alone".into());
        }
        self.allow_origins.iter().enumerate().find_map(|(i, origin)| {
            let scheme_host = origin
                .strip_prefix("https://")
                .or_else(|| origin.strip_prefix("http://"));
            let fine = origin == "*"
                || scheme_host.is_some_and(|rest| {
                    !rest.is_empty()
                        && !rest.contains('/')
                        && rest.chars().all(|c| c.is_ascii_graphic())
                });
            (!fine).then(|| {
                format!(
                    "cors.allow_origins[{i}]: expected an origin such as https://app.example.com (scheme and host, no path), found {origin:?}"
                )
            })
        })
    }
}

fn default_request_timeout_secs() -> u64 {
    30
}

/// One agent of the config: its token and what it may do.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentEntry {
    /// SHA-256 (hex) of the agent's bearer token.
    pub token_sha256: String,
    /// Recipients it may send to; none means any.
    #[serde(default)]
    pub send_to: Option<Vec<String>>,
    /// Handoff types it may send; none means any.
    #[serde(default)]
    pub handoff_types: Option<Vec<String>>,
    /// Inboxes it may read besides its own (e.g. pools).
    #[serde(default)]
    pub read: Vec<String>,
    /// Unsettled deliveries one stream of this agent's inbox holds at once.
    #[serde(default)]
    pub max_in_flight: Option<usize>,
    /// Seconds a delivery from this agent's inbox is held before it is delivered again
    /// (instead of the server's `ack_wait_secs`).
    #[serde(default)]
    pub ack_wait_secs: Option<u64>,
    /// Deliveries of a message in this agent's inbox before it becomes a dead letter (instead
    /// of the server's `max_deliver`).
    #[serde(default)]
    pub max_deliver: Option<u32>,
}

impl AgentEntry {
    /// An agent with this token hash and no restrictions beyond its own inbox.
    pub fn with_token_hash(token_sha256: String) -> AgentEntry {
        AgentEntry {
            token_sha256,
            ..AgentEntry::default()
        }
    }
}

fn default_max_body_bytes() -> usize {
    1024 * 1024
}

fn default_rate_per_sec() -> f64 {
    200.0
}

fn default_rate_burst() -> u32 {
    400
}

fn default_settle_rate_per_sec() -> f64 {
    5000.0
}

fn default_max_in_flight() -> usize {
    16
}

/// The most unsettled deliveries one inbox stream may hold.
pub const MAX_IN_FLIGHT: usize = 1000;

/// Refuses a `max_in_flight` outside 1 to [`MAX_IN_FLIGHT`].
fn check_in_flight(name: &str, value: Option<usize>) -> Result<(), String> {
    match value {
        Some(n) if !(1..=MAX_IN_FLIGHT).contains(&n) => Err(format!(
            "{name}: expected 1 to {}, found {n}",
            MAX_IN_FLIGHT
        )),
        _ => Ok(()),
    }
}

/// Refuses the delivery settings of an agent's inbox or a pool (`at`): `max_in_flight`,
/// `ack_wait_secs`, `max_deliver`.
fn check_inbox_settings(
    at: &str,
    (max_in_flight, ack_wait_secs, max_deliver): (Option<usize>, Option<u64>, Option<u32>),
) -> Result<(), String> {
    check_in_flight(&format!("{at}.max_in_flight"), max_in_flight)?;
    if ack_wait_secs == Some(0) {
        return Err(format!(
            "{at}.ack_wait_secs: expected 1 or more seconds, found 0"
        ));
    }
    if max_deliver == Some(0) {
        return Err(format!(
            "{at}.max_deliver: expected 1 or more deliveries before a message is dead-lettered, found 0"
        ));
    }
    Ok(())
}

fn default_ack_wait_secs() -> u64 {
    30
}

fn default_header_timeout_secs() -> u64 {
    10
}

fn default_max_connections() -> usize {
    10_000
}

fn default_max_new_inboxes() -> usize {
    1000
}

fn default_true() -> bool {
    true
}

fn default_max_journal_records() -> u64 {
    10_000
}

fn default_max_journal_bytes_per_minute() -> u32 {
    16 * 1024 * 1024
}

fn default_max_streams_per_agent() -> usize {
    1000
}

fn default_hand_back_ms() -> u64 {
    1000
}

/// The shortest and longest hand-back waits: clients asked to reconnect within less than
/// 100 ms (half the shortest) would hammer a server that is down, and one not back after a
/// minute has gone.
const HAND_BACK_MS: std::ops::RangeInclusive<u64> = 200..=60_000;

fn default_max_deliver() -> u32 {
    5
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            admin_token_sha256: None,
            agents: BTreeMap::new(),
            max_body_bytes: default_max_body_bytes(),
            header_timeout_secs: default_header_timeout_secs(),
            max_connections: default_max_connections(),
            ack_wait_secs: default_ack_wait_secs(),
            rate_per_sec: default_rate_per_sec(),
            rate_burst: default_rate_burst(),
            settle_rate_per_sec: default_settle_rate_per_sec(),
            accept_unknown_recipients: false,
            accept_volatile_store: false,
            max_new_inboxes: default_max_new_inboxes(),
            delivery_history: true,
            max_journal_records: default_max_journal_records(),
            max_journal_bytes_per_minute: default_max_journal_bytes_per_minute(),
            max_streams_per_agent: default_max_streams_per_agent(),
            max_in_flight: default_max_in_flight(),
            hand_back_ms: default_hand_back_ms(),
            redact: RedactConfig::default(),
            tls_cert: None,
            tls_key: None,
            dedupe_window_secs: None,
            max_deliver: default_max_deliver(),
            media: MediaConfig::default(),
            retention: RetentionConfig::default(),
            routes: Vec::new(),
            subscriptions: Vec::new(),
            request_timeout_secs: default_request_timeout_secs(),
            cors: CorsConfig::default(),
            pools: BTreeMap::new(),
        }
    }
}

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{source_name}: {detail}")]
pub struct ConfigError {
    /// The file (or `config`).
    pub source_name: String,
    /// What is wrong, with the key.
    pub detail: String,
}

impl ServerConfig {
    /// Reads and checks a TOML file.
    pub fn load(path: &Path) -> Result<ServerConfig, ConfigError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            source_name: name.clone(),
            detail: format!("cannot read the file: {e}"),
        })?;
        ServerConfig::from_toml(&text).map_err(|mut e| {
            e.source_name = name;
            e
        })
    }

    /// Parses and checks TOML text.
    pub fn from_toml(text: &str) -> Result<ServerConfig, ConfigError> {
        let config: ServerConfig = toml::from_str(text).map_err(|e| ConfigError {
            source_name: "config".into(),
            detail: e.to_string(),
        })?;
        config.check()?;
        Ok(config)
    }

    /// Checks agent ids, token hashes and limits.
    pub fn check(&self) -> Result<(), ConfigError> {
        let fail = |detail: String| ConfigError {
            source_name: "config".into(),
            detail,
        };
        if let Some(hash) = &self.admin_token_sha256 {
            check_hash("admin_token_sha256", hash).map_err(fail)?;
        }
        for (id, agent) in &self.agents {
            if let Some(why) = id_problem(id) {
                return Err(fail(format!("agents.{id:?}: the agent id {why}")));
            }
            check_hash(&format!("agents.{id}.token_sha256"), &agent.token_sha256).map_err(fail)?;
            let settings = (agent.max_in_flight, agent.ack_wait_secs, agent.max_deliver);
            check_inbox_settings(&format!("agents.{id}"), settings).map_err(fail)?;
        }
        check_distinct_tokens(self).map_err(fail)?;
        for (name, pool) in &self.pools {
            if let Some(why) = id_problem(name) {
                return Err(fail(format!("pools.{name:?}: the pool name {why}")));
            }
            if self.agents.contains_key(name) {
                return Err(fail(format!(
                    "pools.{name}: an agent has this id; a pool is an inbox of its own (hint: name the pool e.g. {name}_pool and list it in the agents' read)"
                )));
            }
            let settings = (pool.max_in_flight, pool.ack_wait_secs, pool.max_deliver);
            check_inbox_settings(&format!("pools.{name}"), settings).map_err(fail)?;
        }
        if !HAND_BACK_MS.contains(&self.hand_back_ms) {
            return Err(fail(format!(
                "hand_back_ms: expected {} to {} milliseconds, found {}",
                HAND_BACK_MS.start(),
                HAND_BACK_MS.end(),
                self.hand_back_ms
            )));
        }
        for (name, rate) in [
            ("rate_per_sec", self.rate_per_sec),
            ("settle_rate_per_sec", self.settle_rate_per_sec),
        ] {
            if !(rate >= 0.0 && rate.is_finite()) {
                return Err(fail(format!(
                    "{name}: expected a number of requests a second, 0 or more"
                )));
            }
        }
        check_in_flight("max_in_flight", Some(self.max_in_flight)).map_err(fail)?;
        if let Some(why) = self.cors.problem() {
            return Err(fail(why));
        }
        for (i, route) in self.routes.iter().enumerate() {
            if let Some(why) = route.problem(&format!("routes[{i}]")) {
                return Err(fail(why));
            }
        }
        for (i, s) in self.subscriptions.iter().enumerate() {
            s.binding(&format!("subscriptions[{i}]")).map_err(fail)?;
        }
        if self.max_deliver == 0 {
            return Err(fail(
                "max_deliver: expected 1 or more deliveries before a message is dead-lettered"
                    .into(),
            ));
        }
        Redactor::new(&self.redact).map_err(fail)?;
        if self.tls_cert.is_some() != self.tls_key.is_some() {
            return Err(fail("tls_cert and tls_key: give both or neither".into()));
        }
        if self.media.max_blob_bytes == 0 {
            return Err(fail(
                "media.max_blob_bytes: expected a positive size".into(),
            ));
        }
        if self.max_body_bytes == 0 {
            return Err(fail("max_body_bytes: expected a positive size".into()));
        }
        if let Some(why) = self.retention.problem() {
            return Err(fail(why));
        }
        Ok(())
    }

    /// The longest a request may take (`None`: no limit).
    pub fn request_timeout(&self) -> Option<Duration> {
        (self.request_timeout_secs > 0).then(|| Duration::from_secs(self.request_timeout_secs))
    }

    /// How long a closed stream's deliveries wait for their client (`hand_back_ms`).
    pub fn hand_back(&self) -> Duration {
        Duration::from_millis(self.hand_back_ms)
    }

    /// The ack deadline as a duration.
    pub fn ack_wait(&self) -> Duration {
        Duration::from_secs(self.ack_wait_secs.max(1))
    }

    /// The dedupe window: `dedupe_window_secs`, else the message log's retention (so that an
    /// id is recognised for as long as its message is kept).
    pub fn dedupe_window(&self) -> Duration {
        match self.dedupe_window_secs {
            Some(secs) => Duration::from_secs(secs),
            None => self.retention.messages_kept(),
        }
    }

    /// The agents' and pools' own `ack_wait_secs` and `max_deliver`, for their inbox queues
    /// (an agent's inbox is the queue named by its id, a pool's by its name).
    pub fn queue_settings(&self) -> HashMap<String, QueueSettings> {
        let agents = self
            .agents
            .iter()
            .map(|(id, a)| (id, a.ack_wait_secs, a.max_deliver));
        let pools = self
            .pools
            .iter()
            .map(|(name, p)| (name, p.ack_wait_secs, p.max_deliver));
        agents
            .chain(pools)
            .filter(|(_, ack_wait, max_deliver)| ack_wait.is_some() || max_deliver.is_some())
            .map(|(queue, ack_wait, max_deliver)| {
                let settings = QueueSettings {
                    ack_wait: ack_wait.map(Duration::from_secs),
                    max_deliver,
                };
                (queue.clone(), settings)
            })
            .collect()
    }
}

fn check_hash(key: &str, hash: &str) -> Result<(), String> {
    if hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(())
    } else {
        Err(format!(
            "{key}: expected the SHA-256 of the token as 64 hex digits, found {} characters (hint: `chorus serve --hash-token TOKEN` prints it)",
            hash.len()
        ))
    }
}

/// Refuses two holders of one token hash (two agents, or an agent and the admin): the first
/// found would silently win every request made with that token.
fn check_distinct_tokens(config: &ServerConfig) -> Result<(), String> {
    let mut holders: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    let admin = config
        .admin_token_sha256
        .iter()
        .map(|h| ("the admin".to_owned(), h));
    let agents = (config.agents.iter()).map(|(id, a)| (format!("agent {id:?}"), &a.token_sha256));
    for (who, hash) in admin.chain(agents) {
        if let Some(first) = holders.insert(hash.to_ascii_lowercase(), who.clone()) {
            return Err(format!(
                "{first} and {who} have the same token_sha256; each agent needs a token of its own (hint: make a new token, e.g. `openssl rand -hex 32`, and put what `chorus serve --hash-token -` prints for it here)"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HASH: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    const HASH2: &str = "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752";
    const HASH3: &str = "fd61a03af4f77d870fc21e05e7e80678095c92d808cfb3b5c279ee04c74aca13";

    #[test]
    fn two_holders_of_one_token_hash_are_refused_with_their_names() {
        let two_agents = ServerConfig::from_toml(&format!(
            "[agents.alice]\ntoken_sha256 = \"{HASH}\"\n[agents.mallory]\ntoken_sha256 = \"{}\"\n",
            HASH.to_ascii_uppercase()
        ))
        .unwrap_err()
        .to_string();
        assert!(
            two_agents.contains("agent \"alice\" and agent \"mallory\" have the same token_sha256"),
            "{two_agents}"
        );
        let admin = ServerConfig::from_toml(&format!(
            "admin_token_sha256 = \"{HASH}\"\n[agents.alice]\ntoken_sha256 = \"{HASH}\"\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(
            admin.contains("the admin and agent \"alice\" have the same token_sha256"),
            "{admin}"
        );
    }

    #[test]
    fn reads_agents_and_defaults() {
        let c = ServerConfig::from_toml(&format!(
            "admin_token_sha256 = \"{HASH2}\"\n[agents.alice]\ntoken_sha256 = \"{HASH}\"\n"
        ))
        .unwrap();
        assert_eq!(c.agents.len(), 1);
        assert_eq!(c.max_body_bytes, 1024 * 1024);
        assert_eq!(c.ack_wait(), Duration::from_secs(30));
    }

    #[test]
    fn pools_have_their_own_delivery_settings() {
        let c = ServerConfig::from_toml(&format!(
            "ack_wait_secs = 30\n\
             [agents.worker]\ntoken_sha256 = \"{HASH}\"\nread = [\"llm_pool\"]\n\
             [pools.llm_pool]\nack_wait_secs = 600\nmax_deliver = 2\nmax_in_flight = 1\n\
             [pools.quiet_pool]\n"
        ))
        .unwrap();
        let queues = c.queue_settings();
        assert_eq!(queues.len(), 1, "{queues:?}");
        assert_eq!(queues["llm_pool"].ack_wait, Some(Duration::from_secs(600)));
        assert_eq!(queues["llm_pool"].max_deliver, Some(2));
        for (text, fragment) in [
            (
                format!("[agents.p]\ntoken_sha256 = \"{HASH}\"\n[pools.p]\n"),
                "pools.p: an agent has this id",
            ),
            (
                "[pools.p]\nack_wait_secs = 0\n".into(),
                "pools.p.ack_wait_secs",
            ),
            ("[pools.p]\nmax_deliver = 0\n".into(), "pools.p.max_deliver"),
            (
                "[pools.p]\nmax_in_flight = 0\n".into(),
                "pools.p.max_in_flight",
            ),
            ("[pools.\"a/b\"]\n".into(), "the pool name"),
            (
                "[pools.p]\nack_wait = 5\n".into(),
                "unknown field `ack_wait`",
            ),
        ] {
            let e = ServerConfig::from_toml(&text).unwrap_err().to_string();
            assert!(e.contains(fragment), "{fragment:?} in {e}");
        }
    }

    #[test]
    fn agents_may_have_their_own_ack_wait_and_max_deliver() {
        let c = ServerConfig::from_toml(&format!(
            "ack_wait_secs = 30\nmax_deliver = 5\n\
             [agents.slow]\ntoken_sha256 = \"{HASH}\"\nack_wait_secs = 600\n\
             [agents.fragile]\ntoken_sha256 = \"{HASH2}\"\nmax_deliver = 1\n\
             [agents.plain]\ntoken_sha256 = \"{HASH3}\"\n"
        ))
        .unwrap();
        assert_eq!(c.dedupe_window(), Duration::from_secs(7 * 24 * 3600));
        // Unset, the window follows the message log's retention; set, it is its own.
        let longer = ServerConfig::from_toml("[retention]\nmessages_secs = 2592000\n").unwrap();
        assert_eq!(longer.dedupe_window(), Duration::from_secs(30 * 24 * 3600));
        let forever = ServerConfig::from_toml("[retention]\nmessages_secs = 0\n").unwrap();
        assert!(forever.dedupe_window() >= Duration::from_secs(99 * 365 * 24 * 3600));
        let own = ServerConfig::from_toml(
            "dedupe_window_secs = 60\n[retention]\nmessages_secs = 2592000\n",
        )
        .unwrap();
        assert_eq!(own.dedupe_window(), Duration::from_secs(60));
        let queues = c.queue_settings();
        assert_eq!(queues.len(), 2, "{queues:?}");
        assert_eq!(queues["slow"].ack_wait, Some(Duration::from_secs(600)));
        assert_eq!(queues["slow"].max_deliver, None);
        assert_eq!(queues["fragile"].max_deliver, Some(1));
        for (key, value) in [("ack_wait_secs", 0), ("max_deliver", 0)] {
            let err = ServerConfig::from_toml(&format!(
                "[agents.a]\ntoken_sha256 = \"{HASH}\"\n{key} = {value}\n"
            ))
            .unwrap_err();
            assert!(
                err.detail
                    .starts_with(&format!("agents.a.{key}: expected 1 or more")),
                "{}",
                err.detail
            );
        }
    }

    #[test]
    fn refuses_plain_tokens_bad_ids_and_unknown_keys() {
        let plain = ServerConfig::from_toml("[agents.alice]\ntoken_sha256 = \"secret\"\n");
        assert!(plain.unwrap_err().detail.contains("64 hex digits"));
        let bad_id =
            ServerConfig::from_toml(&format!("[agents.\"a/b\"]\ntoken_sha256 = \"{HASH}\"\n"));
        assert!(bad_id.unwrap_err().detail.contains("contains '/'"));
        assert!(ServerConfig::from_toml("listen = 1").is_err());
    }
}

#[cfg(test)]
mod retention_tests {
    use std::time::Duration;

    use crate::config::ServerConfig;
    use crate::retention::{RetentionConfig, cut};

    #[test]
    fn defaults_and_overrides_read_from_the_table() {
        let c = ServerConfig::from_toml("").unwrap();
        assert_eq!(c.retention, RetentionConfig::default());
        assert_eq!(c.retention.messages_secs, 604_800.0);
        let c = ServerConfig::from_toml(
            "[retention]\nmessages_secs = 3600\ndead_letters_secs = 0\nblobs_secs = 0.5\ninterval_secs = 5\n",
        )
        .unwrap();
        assert_eq!(c.retention.messages_secs, 3600.0);
        assert_eq!(c.retention.blobs_secs, Some(0.5));
        assert_eq!(c.retention.interval(), Duration::from_secs(5));
        assert_eq!(
            cut(10_000, c.retention.messages_secs),
            Some(10_000 - 3_600_000)
        );
        assert_eq!(
            cut(10_000, c.retention.dead_letters_secs),
            None,
            "0 keeps forever"
        );
    }

    #[test]
    fn bad_values_are_refused_at_their_key() {
        for (toml, key) in [
            ("messages_secs = -1", "retention.messages_secs"),
            ("traces_secs = nan", "retention.traces_secs"),
            ("blobs_secs = 1e300", "retention.blobs_secs"),
            ("interval_secs = 0", "retention.interval_secs"),
        ] {
            let e = ServerConfig::from_toml(&format!("[retention]\n{toml}\n")).unwrap_err();
            assert!(e.detail.starts_with(key), "{toml}: {}", e.detail);
        }
        for toml in ["hand_back_ms = 199", "hand_back_ms = 60001"] {
            let e = ServerConfig::from_toml(&format!("{toml}\n")).unwrap_err();
            assert!(e.detail.starts_with("hand_back_ms"), "{toml}: {}", e.detail);
        }
        for (toml, ms) in [("", 1000), ("hand_back_ms = 200", 200)] {
            let c = ServerConfig::from_toml(toml).unwrap();
            assert_eq!(c.hand_back(), Duration::from_millis(ms), "{toml:?}");
        }
        let unknown = ServerConfig::from_toml("[retention]\nmessages_days = 7\n").unwrap_err();
        assert!(
            unknown.detail.contains("messages_days"),
            "{}",
            unknown.detail
        );
    }
}
