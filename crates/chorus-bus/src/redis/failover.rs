//! Where a Redis store's primary is, and a connection that follows it.
//!
//! A store address names one server (`redis://h:6379`), several servers of which one is the
//! primary (`redis://h1:6379,h2:6380`: the one whose `ROLE` is `master`), or Redis Sentinels
//! (`redis://s1:26379,s2:26379?sentinel=NAME`: the primary they name for `NAME`). With more than
//! one server or with Sentinels, a command that finds its connection lost, or a write refused
//! with `READONLY` (a primary demoted to a replica), has the primary looked up again, and the
//! next commands go to the new one: a failover is followed without a restart. `min_replicas=N`
//! (with `replica_wait_ms`, 1000 by default) makes each acknowledged write wait (`WAIT`) until
//! N replicas have it.

use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager};
use redis::{Cmd, Pipeline, RedisFuture, Value};
use tokio::sync::Notify;

use super::{CONNECT_TIMEOUT, connection_settings, redis_error};
use crate::error::{BusError, BusResult};

/// What a Redis store address says of its servers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Topology {
    /// Each server named, a `redis://` URL with the address's user, password and database.
    servers: Vec<String>,
    /// The master name the servers (then Sentinels) are asked for.
    sentinel: Option<String>,
    /// The parameters the client itself reads (`protocol=resp3` …), kept on each data server's
    /// URL.
    passed: Vec<String>,
    /// Replicas each acknowledged write waits for.
    pub min_replicas: usize,
    /// How long a write waits for them.
    pub replica_wait: Duration,
}

fn config_error(detail: String) -> BusError {
    BusError::Config {
        what: "store".into(),
        detail,
    }
}

impl Topology {
    /// Reads `redis://[user:pass@]host:port[,host:port…][/db][?min_replicas=N&replica_wait_ms=MS&sentinel=NAME]`.
    pub fn parse(url: &str) -> BusResult<Topology> {
        let rest = url.strip_prefix("redis://").unwrap_or(url);
        let (address, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (userinfo, hosts) = match address.rsplit_once('@') {
            Some((user, hosts)) => (format!("{user}@"), hosts),
            None => (String::new(), address),
        };
        let (hosts, db) = match hosts.split_once('/') {
            Some((hosts, db)) => (hosts, format!("/{db}")),
            None => (hosts, String::new()),
        };
        let servers: Vec<String> = (hosts.split(','))
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .map(|h| format!("redis://{userinfo}{h}{db}"))
            .collect();
        if servers.is_empty() {
            return Err(config_error(format!("{url:?} names no Redis server")));
        }
        let mut topology = Topology {
            servers,
            sentinel: None,
            passed: Vec::new(),
            min_replicas: 0,
            replica_wait: Duration::from_millis(1000),
        };
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let number = || {
                value.parse::<u64>().map_err(|_| {
                    config_error(format!("{name}: expected a whole number, found {value:?}"))
                })
            };
            match name {
                "min_replicas" => topology.min_replicas = number()? as usize,
                "replica_wait_ms" => match number()? {
                    0 => {
                        return Err(config_error(
                            "replica_wait_ms: expected 1 or more (0 would wait for ever)".into(),
                        ));
                    }
                    ms => topology.replica_wait = Duration::from_millis(ms),
                },
                "sentinel" if !value.is_empty() => topology.sentinel = Some(value.to_owned()),
                // The client's own (`protocol`, …): redis-rs reads them, or says what is wrong.
                _ => topology.passed.push(pair.to_owned()),
            }
        }
        if !topology.passed.is_empty() {
            let query = topology.passed.join("&");
            if topology.sentinel.is_none() {
                for server in &mut topology.servers {
                    *server = format!("{server}?{query}");
                }
            }
        }
        Ok(topology)
    }

    /// True when the primary may move (several servers, or Sentinels).
    fn can_move(&self) -> bool {
        self.servers.len() > 1 || self.sentinel.is_some()
    }

    /// The URL of the primary now.
    pub async fn primary(&self) -> BusResult<String> {
        if !self.can_move() {
            return Ok(self.servers[0].clone());
        }
        let mut heard = Vec::new();
        for server in &self.servers {
            match self.ask(server).await {
                Ok(Some(url)) => return Ok(url),
                Ok(None) => heard.push(format!("{}: not the primary", host_of(server))),
                Err(e) => heard.push(format!("{}: {e}", host_of(server))),
            }
        }
        Err(redis_error(format!(
            "no primary found ({}); a failover may be under way",
            heard.join("; ")
        )))
    }

    /// What `server` says: the primary's URL (itself when it is the primary, or the one a
    /// Sentinel names), or none.
    async fn ask(&self, server: &str) -> BusResult<Option<String>> {
        // A Sentinel has no databases and a password of its own (if any): asked bare.
        let asked = match &self.sentinel {
            Some(_) => format!("redis://{}", host_of(server)),
            None => server.to_owned(),
        };
        let client = redis::Client::open(asked.as_str()).map_err(redis_error)?;
        let mut con =
            tokio::time::timeout(CONNECT_TIMEOUT, client.get_multiplexed_async_connection())
                .await
                .map_err(|_| redis_error("connecting timed out"))?
                .map_err(redis_error)?;
        let Some(name) = &self.sentinel else {
            let role: Vec<Value> = redis::cmd("ROLE")
                .query_async(&mut con)
                .await
                .map_err(redis_error)?;
            let is_primary = role
                .first()
                .and_then(|r| redis::from_redis_value::<String>(r).ok())
                .is_some_and(|r| r == "master");
            return Ok(is_primary.then(|| server.to_owned()));
        };
        let named: Option<(String, u16)> = redis::cmd("SENTINEL")
            .arg("get-master-addr-by-name")
            .arg(name)
            .query_async(&mut con)
            .await
            .map_err(redis_error)?;
        // The data servers take the address's user, password and database, not the Sentinel's.
        Ok(named.map(|(host, port)| {
            let template = &self.servers[0];
            let (head, tail) = template.split_once('@').map_or(
                (
                    "redis://".to_owned(),
                    template.trim_start_matches("redis://"),
                ),
                |(user, rest)| (format!("{user}@"), rest),
            );
            let db = tail.split_once('/').map(|(_, db)| format!("/{db}"));
            let query = match self.passed.is_empty() {
                true => String::new(),
                false => format!("?{}", self.passed.join("&")),
            };
            format!("{head}{host}:{port}{}{query}", db.unwrap_or_default())
        }))
    }
}

/// `host:port` of a `redis://` URL, without its password.
fn host_of(url: &str) -> &str {
    let rest = url.trim_start_matches("redis://");
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    rest.split('/').next().unwrap_or(rest)
}

/// The connection of a store: to the primary, looked up again when a command suggests that it
/// moved. Cheap to clone (one shared connection).
#[derive(Clone)]
pub(super) struct Following {
    shared: Arc<Shared>,
    /// Told by a failed command that the primary may have moved.
    suspect: Arc<Notify>,
    /// Sends on the primary's writer connection (see [`Primary::writer`]).
    writes: bool,
}

struct Shared {
    current: RwLock<Primary>,
    topology: Topology,
}

/// The primary's URL and connections.
struct Primary {
    url: String,
    /// Every command but the writes that wait for replicas.
    manager: ConnectionManager,
    /// With `min_replicas`: the writes that are answered once replicas have them, each with its
    /// `WAIT`. A connection of their own, since Redis holds a client in `WAIT` and everything
    /// queued behind it (fetches, reads, the health probe) would wait too; and `WAIT` counts
    /// the writes of the connection it is sent on.
    writer: Option<ConnectionManager>,
}

impl Primary {
    async fn connect(url: String, topology: &Topology) -> BusResult<Primary> {
        let manager = manage(&url).await?;
        let writer = match topology.min_replicas {
            0 => None,
            _ => Some(manage(&url).await?),
        };
        Ok(Primary {
            url,
            manager,
            writer,
        })
    }
}

impl Following {
    /// Connects to the primary of `topology`, and follows it when it can move.
    pub async fn connect(topology: Topology) -> BusResult<Following> {
        let url = topology.primary().await?;
        let primary = Primary::connect(url, &topology).await?;
        let following = Following {
            shared: Arc::new(Shared {
                current: RwLock::new(primary),
                topology,
            }),
            suspect: Arc::new(Notify::new()),
            writes: false,
        };
        if following.shared.topology.can_move() {
            tokio::spawn(watch(
                Arc::downgrade(&following.shared),
                following.suspect.clone(),
            ));
        }
        Ok(following)
    }

    /// The primary's URL now.
    pub fn url(&self) -> String {
        self.read().url.clone()
    }

    /// The same connection, sending on the writer connection when replicas are waited for:
    /// for a write and its [`Following::replicated`].
    pub fn for_writes(&self) -> Following {
        Following {
            writes: true,
            ..self.clone()
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Primary> {
        self.shared
            .current
            .read()
            .unwrap_or_else(|p| p.into_inner())
    }

    fn manager(&self) -> ConnectionManager {
        let primary = self.read();
        match (&primary.writer, self.writes) {
            (Some(writer), true) => writer.clone(),
            _ => primary.manager.clone(),
        }
    }

    /// Says that the primary may have moved when `e` looks so.
    fn check(&self, e: &redis::RedisError) {
        let moved = e.is_io_error()
            || e.is_connection_dropped()
            || e.is_connection_refusal()
            || e.is_unrecoverable_error()
            || e.code() == Some("READONLY");
        if moved && self.shared.topology.can_move() {
            self.suspect.notify_one();
        }
    }

    /// After the writes just made on this connection: waits until `min_replicas` replicas
    /// have them, or fails saying how many did.
    pub async fn replicated(&mut self) -> BusResult<()> {
        let (wanted, wait) = (
            self.shared.topology.min_replicas,
            self.shared.topology.replica_wait,
        );
        if wanted == 0 {
            return Ok(());
        }
        let confirmed: usize = redis::cmd("WAIT")
            .arg(wanted)
            .arg(wait.as_millis() as u64)
            .query_async(self)
            .await
            .map_err(redis_error)?;
        if confirmed < wanted {
            return Err(redis_error(format!(
                "{confirmed} of the {wanted} replicas required (min_replicas) confirmed the \
                 write within {} ms; it is on the primary, and a failover now could lose it \
                 (hint: retry; a publish retried is a duplicate, not a second message)",
                wait.as_millis()
            )));
        }
        Ok(())
    }
}

/// A connection manager for `url`, reconnecting by itself (see [`connection_settings`]).
async fn manage(url: &str) -> BusResult<ConnectionManager> {
    let client = redis::Client::open(url).map_err(redis_error)?;
    tokio::time::timeout(
        CONNECT_TIMEOUT,
        ConnectionManager::new_with_config(client, connection_settings()),
    )
    .await
    .map_err(|_| redis_error(format!("connecting to {} timed out", host_of(url))))?
    .map_err(|e| redis_error(format!("cannot connect to {}: {e}", host_of(url))))
}

/// Looks the primary up again each time a command suspects it moved (at most every 250 ms),
/// and moves the connection to it; ends with the store.
async fn watch(shared: Weak<Shared>, suspect: Arc<Notify>) {
    loop {
        suspect.notified().await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let now = shared
            .current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .url
            .clone();
        match shared.topology.primary().await {
            Ok(url) if url != now => match Primary::connect(url.clone(), &shared.topology).await {
                Ok(primary) => {
                    tracing::warn!(
                        from = host_of(&now),
                        to = host_of(&url),
                        "the Redis primary moved; following it"
                    );
                    *shared.current.write().unwrap_or_else(|p| p.into_inner()) = primary;
                }
                Err(e) => tracing::warn!(error = %e, "the new Redis primary did not answer"),
            },
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "the Redis primary was not found"),
        }
        drop(shared);
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

impl ConnectionLike for Following {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        let mut manager = self.manager();
        Box::pin(async move {
            let answer = manager.req_packed_command(cmd).await;
            if let Err(e) = &answer {
                self.check(e);
            }
            answer
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        let mut manager = self.manager();
        Box::pin(async move {
            let answer = manager.req_packed_commands(cmd, offset, count).await;
            if let Err(e) = &answer {
                self.check(e);
            }
            answer
        })
    }

    fn get_db(&self) -> i64 {
        self.read().manager.get_db()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_sentinels_and_replicas_are_read_from_the_address() {
        let t =
            Topology::parse("redis://:pw@a:1,b:2/3?min_replicas=1&replica_wait_ms=500").unwrap();
        assert_eq!(t.servers, ["redis://:pw@a:1/3", "redis://:pw@b:2/3"]);
        assert_eq!(
            (t.min_replicas, t.replica_wait),
            (1, Duration::from_millis(500))
        );
        assert!(t.can_move());
        let t = Topology::parse("redis://s:26379?sentinel=main").unwrap();
        assert_eq!(t.sentinel.as_deref(), Some("main"));
        let t = Topology::parse("redis://one:6379").unwrap();
        assert!(!t.can_move());
        assert_eq!(t.min_replicas, 0);
        for (url, says) in [
            ("redis://a:1?min_replicas=x", "expected a whole number"),
            ("redis://a:1?replica_wait_ms=0", "wait for ever"),
            ("redis://?min_replicas=1", "names no Redis server"),
        ] {
            let e = Topology::parse(url).unwrap_err().to_string();
            assert!(e.contains(says), "{url}: {e}");
        }
        assert_eq!(host_of("redis://u:secret@h:1/2"), "h:1");
        // The client's own parameters stay on the servers' URLs.
        let t = Topology::parse("redis://a:1/2?protocol=resp3&min_replicas=1").unwrap();
        assert_eq!(t.servers, ["redis://a:1/2?protocol=resp3"]);
    }
}
