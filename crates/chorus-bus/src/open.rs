//! Store addresses (`memory`, `sqlite:PATH`, `nats://…`, `redis://…`, `postgres://…`) and
//! opening them as a bus.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use crate::bus::Bus;
use crate::config::BusConfig;
use crate::error::{BusError, BusResult};
use crate::memory::MemoryBus;
use crate::sqlite::{DEFAULT_MAX_BATCH, SqliteBus};

/// The namespace (stream and key prefix) a server store uses when its address names none.
pub const DEFAULT_NAMESPACE: &str = "chorus";

/// What a store address accepts, for error messages.
const EXPECTED: &str = "memory, sqlite:PATH, nats://HOST:PORT, redis://HOST:PORT or \
                        postgres://USER@HOST:PORT/DATABASE, optionally followed by ?namespace=NAME";

/// A parsed store address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreAddress {
    /// The in-process bus, lost when the process stops.
    Memory,
    /// One SQLite file, created when missing.
    Sqlite(PathBuf),
    /// A NATS JetStream server (cargo feature `nats`).
    Nats(RemoteStore),
    /// A Redis server (cargo feature `redis`).
    Redis(RemoteStore),
    /// A PostgreSQL database (cargo feature `postgres`); the namespace is a schema.
    Postgres(RemoteStore),
}

/// The address of a store on a server, and the namespace its streams and keys live under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteStore {
    /// The URL given to the client, without the `namespace` parameter.
    pub url: String,
    /// Prefix of the streams or keys: letters, digits, `_` and `-`.
    pub namespace: String,
}

impl StoreAddress {
    /// Parses `memory`, `sqlite:PATH`, `nats://HOST:PORT` or `redis://HOST:PORT`; a server address
    /// may end in `?namespace=NAME` (default [`DEFAULT_NAMESPACE`]).
    pub fn parse(s: &str) -> BusResult<StoreAddress> {
        let bad = |detail: String| BusError::Config {
            what: "store".into(),
            detail: format!("{detail} (found {s:?}; expected {EXPECTED})"),
        };
        if s == "memory" {
            return Ok(StoreAddress::Memory);
        }
        if let Some(path) = s.strip_prefix("sqlite:") {
            return match path {
                "" => Err(bad("the sqlite store needs a file path".into())),
                p => Ok(StoreAddress::Sqlite(PathBuf::from(p))),
            };
        }
        for (scheme, make) in [
            (
                "nats://",
                StoreAddress::Nats as fn(RemoteStore) -> StoreAddress,
            ),
            ("redis://", StoreAddress::Redis),
            ("postgres://", StoreAddress::Postgres),
            ("postgresql://", StoreAddress::Postgres),
        ] {
            if let Some(rest) = s.strip_prefix(scheme) {
                return RemoteStore::parse(scheme, rest).map(make).map_err(bad);
            }
        }
        Err(bad("unknown backend".into()))
    }

    /// Opens the store with `config`.
    pub async fn open(&self, config: BusConfig) -> BusResult<Arc<dyn Bus>> {
        self.open_with_batch(config, DEFAULT_MAX_BATCH).await
    }

    /// Opens the store with `config`; `max_batch` bounds a SQLite group commit.
    pub async fn open_with_batch(
        &self,
        config: BusConfig,
        max_batch: usize,
    ) -> BusResult<Arc<dyn Bus>> {
        match self {
            StoreAddress::Memory => Ok(Arc::new(MemoryBus::new(config))),
            StoreAddress::Sqlite(path) => Ok(Arc::new(SqliteBus::open_with_batch(
                path, config, max_batch,
            )?)),
            StoreAddress::Nats(server) => open_nats(server, config).await,
            StoreAddress::Redis(server) => open_redis(server, config).await,
            StoreAddress::Postgres(server) => open_postgres(server, config).await,
        }
    }

    /// Deletes the streams or keys a server store keeps under its namespace; memory and
    /// SQLite stores are left as they are. For scratch namespaces such as the bench's own.
    pub async fn destroy_namespace(&self) -> BusResult<()> {
        match self {
            StoreAddress::Memory | StoreAddress::Sqlite(_) => Ok(()),
            StoreAddress::Nats(server) => destroy_nats(server).await,
            StoreAddress::Redis(server) => destroy_redis(server).await,
            StoreAddress::Postgres(server) => destroy_postgres(server).await,
        }
    }

    /// Bytes the store holds: the SQLite file with its journal, or what the namespace takes on
    /// the NATS or Redis server; none for `memory`.
    pub async fn stored_bytes(&self) -> BusResult<Option<u64>> {
        match self {
            StoreAddress::Memory => Ok(None),
            StoreAddress::Sqlite(path) => {
                let mut total = 0;
                for suffix in ["", "-wal", "-shm"] {
                    let mut file = path.clone().into_os_string();
                    file.push(suffix);
                    total += std::fs::metadata(&file).map_or(0, |m| m.len());
                }
                Ok(Some(total))
            }
            StoreAddress::Nats(server) => stored_bytes_nats(server).await.map(Some),
            StoreAddress::Redis(server) => stored_bytes_redis(server).await.map(Some),
            StoreAddress::Postgres(server) => stored_bytes_postgres(server).await.map(Some),
        }
    }

    /// The same address with `namespace` when it is a server store.
    pub fn with_namespace(mut self, namespace: &str) -> StoreAddress {
        if let StoreAddress::Nats(server)
        | StoreAddress::Redis(server)
        | StoreAddress::Postgres(server) = &mut self
        {
            server.namespace = namespace.to_owned();
        }
        self
    }
}

impl RemoteStore {
    /// Splits `HOST:PORT[/…][?namespace=NAME&…]` (after `scheme`) into the URL and the namespace.
    fn parse(scheme: &str, rest: &str) -> Result<RemoteStore, String> {
        let (address, query) = rest.split_once('?').unwrap_or((rest, ""));
        let host = address.split('/').next().unwrap_or_default();
        if host.is_empty() {
            return Err(format!("{scheme} needs a HOST:PORT"));
        }
        let mut namespace = DEFAULT_NAMESPACE.to_owned();
        let mut kept = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.strip_prefix("namespace=") {
                Some(ns) => namespace = ns.to_owned(),
                None => kept.push(pair),
            }
        }
        if namespace.is_empty()
            || !namespace
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return Err(format!(
                "the namespace {namespace:?} must be non-empty letters, digits, '_' or '-'"
            ));
        }
        let url = match kept.is_empty() {
            true => format!("{scheme}{address}"),
            false => format!("{scheme}{address}?{}", kept.join("&")),
        };
        Ok(RemoteStore { url, namespace })
    }
}

impl fmt::Display for StoreAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreAddress::Memory => f.write_str("memory"),
            StoreAddress::Sqlite(path) => write!(f, "sqlite:{}", path.display()),
            StoreAddress::Nats(s) | StoreAddress::Redis(s) | StoreAddress::Postgres(s) => {
                let sep = if s.url.contains('?') { '&' } else { '?' };
                write!(f, "{}{sep}namespace={}", s.url, s.namespace)
            }
        }
    }
}

/// The error for a server store whose cargo feature is off.
#[cfg(not(all(feature = "nats", feature = "redis", feature = "postgres")))]
fn not_built(backend: &str, feature: &str) -> BusError {
    BusError::Config {
        what: "store".into(),
        detail: format!(
            "the {backend} store is not in this build (hint: build chorus with cargo feature \
             `{feature}`, e.g. `cargo build -p chorus-cli --features {feature}`)"
        ),
    }
}

#[cfg(feature = "nats")]
async fn open_nats(server: &RemoteStore, config: BusConfig) -> BusResult<Arc<dyn Bus>> {
    let bus = crate::nats::NatsBus::connect(&server.url, &server.namespace, config).await?;
    Ok(Arc::new(bus))
}

#[cfg(feature = "nats")]
async fn destroy_nats(server: &RemoteStore) -> BusResult<()> {
    crate::nats::NatsBus::connect(&server.url, &server.namespace, BusConfig::default())
        .await?
        .destroy()
        .await
}

#[cfg(not(feature = "nats"))]
async fn destroy_nats(_: &RemoteStore) -> BusResult<()> {
    Err(not_built("NATS", "nats"))
}

#[cfg(feature = "nats")]
async fn stored_bytes_nats(server: &RemoteStore) -> BusResult<u64> {
    crate::nats::NatsBus::stored_bytes_at(&server.url, &server.namespace).await
}

#[cfg(not(feature = "nats"))]
async fn stored_bytes_nats(_: &RemoteStore) -> BusResult<u64> {
    Err(not_built("NATS", "nats"))
}

#[cfg(feature = "redis")]
async fn stored_bytes_redis(server: &RemoteStore) -> BusResult<u64> {
    crate::redis::RedisBus::stored_bytes_at(&server.url, &server.namespace).await
}

#[cfg(not(feature = "redis"))]
async fn stored_bytes_redis(_: &RemoteStore) -> BusResult<u64> {
    Err(not_built("Redis", "redis"))
}

#[cfg(not(feature = "nats"))]
async fn open_nats(_: &RemoteStore, _: BusConfig) -> BusResult<Arc<dyn Bus>> {
    Err(not_built("NATS", "nats"))
}

#[cfg(feature = "redis")]
async fn open_redis(server: &RemoteStore, config: BusConfig) -> BusResult<Arc<dyn Bus>> {
    let bus = crate::redis::RedisBus::connect(&server.url, &server.namespace, config).await?;
    Ok(Arc::new(bus))
}

#[cfg(feature = "redis")]
async fn destroy_redis(server: &RemoteStore) -> BusResult<()> {
    crate::redis::RedisBus::connect(&server.url, &server.namespace, BusConfig::default())
        .await?
        .destroy()
        .await
}

#[cfg(not(feature = "redis"))]
async fn destroy_redis(_: &RemoteStore) -> BusResult<()> {
    Err(not_built("Redis", "redis"))
}

#[cfg(not(feature = "redis"))]
async fn open_redis(_: &RemoteStore, _: BusConfig) -> BusResult<Arc<dyn Bus>> {
    Err(not_built("Redis", "redis"))
}

#[cfg(feature = "postgres")]
async fn open_postgres(server: &RemoteStore, config: BusConfig) -> BusResult<Arc<dyn Bus>> {
    let bus = crate::postgres::PostgresBus::connect(&server.url, &server.namespace, config).await?;
    Ok(Arc::new(bus))
}

#[cfg(feature = "postgres")]
async fn destroy_postgres(server: &RemoteStore) -> BusResult<()> {
    crate::postgres::PostgresBus::connect(&server.url, &server.namespace, BusConfig::default())
        .await?
        .destroy()
        .await
}

#[cfg(feature = "postgres")]
async fn stored_bytes_postgres(server: &RemoteStore) -> BusResult<u64> {
    crate::postgres::PostgresBus::stored_bytes_at(&server.url, &server.namespace).await
}

#[cfg(not(feature = "postgres"))]
async fn open_postgres(_: &RemoteStore, _: BusConfig) -> BusResult<Arc<dyn Bus>> {
    Err(not_built("PostgreSQL", "postgres"))
}

#[cfg(not(feature = "postgres"))]
async fn destroy_postgres(_: &RemoteStore) -> BusResult<()> {
    Err(not_built("PostgreSQL", "postgres"))
}

#[cfg(not(feature = "postgres"))]
async fn stored_bytes_postgres(_: &RemoteStore) -> BusResult<u64> {
    Err(not_built("PostgreSQL", "postgres"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(url: &str, namespace: &str) -> RemoteStore {
        RemoteStore {
            url: url.into(),
            namespace: namespace.into(),
        }
    }

    #[test]
    fn addresses_parse() {
        assert_eq!(StoreAddress::parse("memory").unwrap(), StoreAddress::Memory);
        assert_eq!(
            StoreAddress::parse("sqlite:/tmp/x.db").unwrap(),
            StoreAddress::Sqlite("/tmp/x.db".into())
        );
        assert_eq!(
            StoreAddress::parse("nats://127.0.0.1:4222").unwrap(),
            StoreAddress::Nats(server("nats://127.0.0.1:4222", "chorus"))
        );
        assert_eq!(
            StoreAddress::parse("redis://127.0.0.1:6379/2?namespace=hub-1&protocol=resp3").unwrap(),
            StoreAddress::Redis(server("redis://127.0.0.1:6379/2?protocol=resp3", "hub-1"))
        );
    }

    #[test]
    fn display_gives_back_a_parsable_address() {
        for s in [
            "memory",
            "sqlite:./chorus.db",
            "nats://127.0.0.1:4222?namespace=chorus",
            "redis://127.0.0.1:6379/2?protocol=resp3&namespace=x_1",
        ] {
            let spec = StoreAddress::parse(s).unwrap();
            assert_eq!(spec.to_string(), s);
            assert_eq!(StoreAddress::parse(&spec.to_string()).unwrap(), spec);
        }
    }

    #[test]
    fn bad_addresses_are_explained() {
        let err = StoreAddress::parse("kafka://x").unwrap_err().to_string();
        assert!(err.contains("unknown backend"), "{err}");
        assert!(err.contains("expected memory, sqlite:PATH"), "{err}");
        let err = StoreAddress::parse("sqlite:").unwrap_err().to_string();
        assert!(err.contains("needs a file path"), "{err}");
        let err = StoreAddress::parse("nats://").unwrap_err().to_string();
        assert!(err.contains("needs a HOST:PORT"), "{err}");
        let err = StoreAddress::parse("redis://h:1?namespace=a.b")
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"a.b\" must be non-empty letters"), "{err}");
    }

    #[test]
    fn with_namespace_changes_only_server_stores() {
        let nats = StoreAddress::parse("nats://h:1")
            .unwrap()
            .with_namespace("n2");
        assert_eq!(nats, StoreAddress::Nats(server("nats://h:1", "n2")));
        assert_eq!(
            StoreAddress::Memory.with_namespace("n2"),
            StoreAddress::Memory
        );
    }

    #[cfg(not(feature = "nats"))]
    #[tokio::test]
    async fn a_store_left_out_of_the_build_names_its_feature() {
        let spec = StoreAddress::parse("nats://127.0.0.1:4222").unwrap();
        let err = spec
            .open(BusConfig::default())
            .await
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("cargo feature `nats`"), "{err}");
    }

    #[tokio::test]
    async fn memory_and_sqlite_open() {
        let dir = tempfile::tempdir().unwrap();
        for spec in [
            StoreAddress::Memory,
            StoreAddress::Sqlite(dir.path().join("s.db")),
        ] {
            let bus = spec.open(BusConfig::default()).await.unwrap();
            assert_eq!(bus.depth("nobody").await.unwrap(), 0);
        }
    }
}
