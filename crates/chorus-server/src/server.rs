//! A running server: opens the store, binds the listener, serves until shut down.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use chorus_agent::confirm::{Confirmations, MemoryConfirmations, SqliteConfirmations};
use chorus_bus::{Bus, BusConfig, BusError, StoreAddress};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::api::router;
use crate::auth::{Tokens, hash_token};
use crate::blobs::BlobStore;
use crate::config::ServerConfig;
use crate::connections::ConnectionLimits;
use crate::connections::Scheme;
use crate::inbox::Inboxes;
use crate::layers::Outer;
use crate::metrics::Metrics;
use crate::policy::Policy;
use crate::pruner::Pruner;
use crate::rate::RateLimiter;
use crate::redact::Redactor;
use crate::routes::RouteEntry;
use crate::state::{AppState, Shared};
use crate::telemetry::Traces;

/// Where messages are stored, and where the server keeps what lies beside them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Store {
    address: StoreAddress,
}

impl Store {
    /// Parses `memory`, `sqlite:PATH`, `nats://HOST:PORT` or `redis://HOST:PORT` (a server
    /// address may end in `?namespace=NAME`).
    pub fn parse(s: &str) -> Result<Store, BusError> {
        StoreAddress::parse(s).map(Store::from)
    }

    /// In memory: lost when the server stops.
    pub fn memory() -> Store {
        Store::from(StoreAddress::Memory)
    }

    /// One SQLite file (created when missing).
    pub fn sqlite(path: impl Into<PathBuf>) -> Store {
        Store::from(StoreAddress::Sqlite(path.into()))
    }

    /// The parsed address.
    pub fn address(&self) -> &StoreAddress {
        &self.address
    }

    /// Opens the store with the delivery settings of `config` (connecting to a NATS or Redis
    /// server; the backend's cargo feature must be on).
    pub async fn open(&self, config: &ServerConfig) -> Result<Arc<dyn Bus>, BusError> {
        let bus_config = BusConfig {
            ack_wait: config.ack_wait(),
            dedupe_window: config.dedupe_window(),
            max_deliver: config.max_deliver,
            queue_settings: config.queue_settings(),
            rules: config.routes.iter().map(RouteEntry::rule).collect(),
            ..BusConfig::default()
        };
        self.check_persistence(config).await?;
        let bus = self.address.open(bus_config).await?;
        for (i, s) in config.subscriptions.iter().enumerate() {
            let binding = s
                .binding(&format!("subscriptions[{i}]"))
                .map_err(|detail| BusError::Config {
                    what: "config".into(),
                    detail,
                })?;
            bus.bind(binding).await?;
        }
        Ok(bus)
    }

    /// Refuses a Redis server that would lose acknowledged messages on a restart, unless
    /// `accept_volatile_store`; warns when it may lose the last second, or cannot be asked.
    async fn check_persistence(&self, config: &ServerConfig) -> Result<(), BusError> {
        #[cfg(feature = "redis")]
        if let StoreAddress::Redis(server) = &self.address {
            use chorus_bus::redis::{Persistence, persistence, volatile_error};
            let found = persistence(&server.url).await?;
            match &found {
                Persistence::Always => {}
                Persistence::AppendOnly { .. } | Persistence::Unknown { .. } => {
                    tracing::warn!(store = %server.url, persistence = %found, "Redis persistence");
                }
                _ if config.accept_volatile_store => tracing::warn!(
                    store = %server.url,
                    persistence = %found,
                    "serving on a Redis server that loses acknowledged messages on a restart \
                     (accept_volatile_store = true)"
                ),
                _ => return Err(volatile_error(&server.url, &found)),
            }
        }
        #[cfg(not(feature = "redis"))]
        let _ = config;
        Ok(())
    }

    /// Opens what the server keeps beside the messages: in memory for `memory`; for
    /// `sqlite:DIR/NAME.db` the file `DIR/NAME-confirmations.db` (confirmations and the trace
    /// contexts of handoffs) and the folder `DIR/NAME-blobs/`; for a NATS or Redis store,
    /// `NAMESPACE-confirmations.db` and `NAMESPACE-blobs/` in the working directory.
    pub fn open_side(&self, config: &ServerConfig) -> Result<SideStores, BusError> {
        let Some(beside) = self.beside() else {
            return Ok(SideStores::in_memory(config));
        };
        let confirmations = SqliteConfirmations::open(&beside("-confirmations.db"))
            .map_err(|e| BusError::Storage(e.to_string()))?;
        let traces = Traces::open(&beside("-confirmations.db")).map_err(BusError::Storage)?;
        let blobs = BlobStore::open(beside("-blobs"), config.media.clone())
            .map_err(|e| BusError::Storage(e.to_string()))?;
        Ok(SideStores {
            confirmations: Arc::new(confirmations),
            blobs: Arc::new(blobs),
            traces: Arc::new(traces),
        })
    }
}

impl Store {
    /// The file where [`Store::open_side`] keeps confirmations; none for `memory`.
    pub fn confirmations_path(&self) -> Option<PathBuf> {
        self.beside().map(|beside| beside("-confirmations.db"))
    }

    /// Names a file beside the store (`DIR/NAME` + suffix); none for `memory`.
    fn beside(&self) -> Option<impl Fn(&str) -> PathBuf + use<>> {
        let base = match &self.address {
            StoreAddress::Memory => return None,
            StoreAddress::Sqlite(path) => path.clone(),
            StoreAddress::Nats(server)
            | StoreAddress::Redis(server)
            | StoreAddress::Postgres(server) => PathBuf::from(format!("{}.db", server.namespace)),
        };
        Some(move |suffix: &str| {
            let stem = base
                .file_stem()
                .map_or_else(|| "chorus".into(), |s| s.to_string_lossy().into_owned());
            base.with_file_name(format!("{stem}{suffix}"))
        })
    }
}

impl From<StoreAddress> for Store {
    fn from(address: StoreAddress) -> Store {
        Store { address }
    }
}

impl std::fmt::Display for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.address.fmt(f)
    }
}

/// What the server keeps beside the messages.
pub struct SideStores {
    /// Tool calls waiting for a person.
    pub confirmations: Arc<dyn Confirmations>,
    /// Images and audio taken out of messages.
    pub blobs: Arc<BlobStore>,
    /// Trace contexts of messages that cannot carry one (in the confirmations file).
    pub traces: Arc<Traces>,
}

impl SideStores {
    /// Everything in memory, lost when the server stops.
    pub fn in_memory(config: &ServerConfig) -> SideStores {
        SideStores {
            confirmations: Arc::new(MemoryConfirmations::new()),
            blobs: Arc::new(BlobStore::in_memory(config.media.clone())),
            traces: Arc::new(Traces::in_memory()),
        }
    }
}

/// A server ready to accept connections.
pub struct Server {
    router: Router,
    outer: Outer,
    limits: ConnectionLimits,
    openapi: utoipa::openapi::OpenApi,
    stop: watch::Sender<bool>,
    generated_admin_token: Option<String>,
    pruner: Pruner,
}

impl Server {
    /// A server over `bus` with the agents and limits of `config`, keeping confirmations and
    /// media in memory; when the config names no admin token, a random one is generated (see
    /// [`Server::generated_admin_token`]).
    pub fn new(bus: Arc<dyn Bus>, config: &ServerConfig) -> Server {
        Server::with_side(bus, SideStores::in_memory(config), config)
    }

    /// A server over `bus` and the stores `side` (see [`Store::open_side`]).
    pub fn with_side(bus: Arc<dyn Bus>, side: SideStores, config: &ServerConfig) -> Server {
        let generated_admin_token = config.admin_token_sha256.is_none().then(|| {
            format!(
                "{}{}",
                uuid::Uuid::new_v4().simple(),
                uuid::Uuid::new_v4().simple()
            )
        });
        let (stop, stopping) = watch::channel(false);
        let metrics = Arc::new(Metrics::default());
        let state = AppState::new(Shared {
            bus: bus.clone(),
            tokens: Arc::new(Tokens::new(
                config,
                generated_admin_token.as_deref().map(hash_token),
            )),
            policy: Arc::new(Policy::new(config)),
            quota: Arc::new(crate::quota::InboxQuota::new(config.max_new_inboxes)),
            journal_quota: Arc::new(crate::quota::JournalQuota::new(
                config.max_journal_records,
                config.max_journal_bytes_per_minute,
            )),
            streams: Arc::new(crate::streams::StreamCap::new(config.max_streams_per_agent)),
            rate: Arc::new(RateLimiter::new(config.rate_per_sec, config.rate_burst)),
            settle_rate: Arc::new(RateLimiter::new(
                config.settle_rate_per_sec,
                settle_burst(config),
            )),
            // The config was checked when it was read; an unchecked one redacts nothing.
            redactor: Arc::new(Redactor::new(&config.redact).unwrap_or_default()),
            inboxes: Arc::new(
                Inboxes::new(config.ack_wait()).with_ack_waits(
                    config
                        .queue_settings()
                        .into_iter()
                        .filter_map(|(inbox, s)| Some((inbox, s.ack_wait?)))
                        .collect(),
                ),
            ),
            history: crate::history::History::start(
                bus.clone(),
                config.delivery_history,
                metrics.history_dropped.clone(),
            ),
            metrics,
            confirmations: side.confirmations,
            blobs: side.blobs,
            traces: side.traces,
            max_body_bytes: config.max_body_bytes,
            hand_back: config.hand_back(),
            request_timeout: config.request_timeout(),
            stopping,
            live: crate::live::Live::default(),
            writes: Default::default(),
        });
        let pruner = Pruner::new(state.clone(), config.retention.clone());
        let extra = crate::a2a::routes();
        #[cfg(feature = "mcp")]
        let extra = extra.merge(crate::mcp::routes(state.clone(), &config.cors));
        let outer = Outer::new(
            &config.cors,
            state.max_body_bytes,
            // Nine tenths of the request timeout: a late body is answered 408 by its read,
            // before the route's timeout would answer 503 for the whole request.
            config.request_timeout().map(|t| t.mul_f64(0.9)),
            state.live.clone(),
        );
        let (router, openapi) = router(state, config.request_timeout(), extra);
        Server {
            router,
            outer,
            limits: ConnectionLimits {
                header_timeout: Duration::from_secs(config.header_timeout_secs.max(1)),
                max_connections: config.max_connections,
            },
            openapi,
            stop,
            generated_admin_token,
            pruner,
        }
    }

    /// The admin token generated at start, when the config named none.
    pub fn generated_admin_token(&self) -> Option<&str> {
        self.generated_admin_token.as_deref()
    }

    /// The OpenAPI 3.1 document of the API.
    pub fn openapi(&self) -> &utoipa::openapi::OpenApi {
        &self.openapi
    }

    /// Serves on `listener` (a [`TcpListener`], or a [`crate::tls::TlsListener`]) until
    /// `shutdown` resolves, pruning by the `[retention]` settings meanwhile; open inbox
    /// streams and the pruner stop then, and the requests under way finish.
    pub async fn serve<L>(
        self,
        listener: L,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()>
    where
        L: axum::serve::Listener,
        L::Addr: std::fmt::Debug,
    {
        let stop = self.stop;
        let pruner = tokio::spawn(self.pruner.run(stop.subscribe()));
        let app = crate::layers::around(self.router, self.outer, Scheme::of::<L::Io>());
        crate::connections::serve(listener, app, self.limits, async move {
            shutdown.await;
            let _ = stop.send(true);
        })
        .await;
        // It stops at the signal; a panic in it is not the server's to report.
        let _ = pruner.await;
        Ok(())
    }
}

/// Binds `addr` (port 0 picks a free port); returns the listener and the address bound.
pub async fn bind(addr: &str) -> std::io::Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    Ok((listener, local))
}

/// Resolves on Ctrl-C or, on Unix, SIGTERM. The handlers are installed when this is called
/// (inside a runtime), not when the future is first polled: a signal that arrives before the
/// server first waits for one still stops it gracefully instead of killing the process.
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let handlers = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        );
        async move {
            match handlers {
                (Ok(mut interrupt), Ok(mut terminate)) => {
                    tokio::select! {
                        _ = interrupt.recv() => {},
                        _ = terminate.recv() => {},
                    }
                }
                _ => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
    }
    #[cfg(not(unix))]
    async {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// The settle limiter's burst: two seconds' worth of settles, at least one.
fn settle_burst(config: &ServerConfig) -> u32 {
    // Saturating: a huge rate only means "no practical limit".
    (config.settle_rate_per_sec * 2.0).clamp(1.0, f64::from(u32::MAX)) as u32
}
