//! `chorus serve`: the hub as an HTTP service until Ctrl-C or SIGTERM.

use std::path::PathBuf;

use chorus_gateway::GatewayConfig;
use chorus_server::{Server, ServerConfig, Store, bind, hash_token, shutdown_signal, tls};

use crate::error::CliError;
use crate::service::{listen_address, listen_of, secret, section};
use crate::telemetry::LogArgs;

/// Arguments of `chorus serve`.
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on, HOST:PORT (port 0 picks a free port; 0.0.0.0:PORT for every
    /// interface).
    #[arg(long, default_value = "127.0.0.1:7700", value_name = "HOST:PORT", value_parser = listen_address)]
    pub listen: String,
    /// Not an option of chorus serve: refused with a pointer to `--listen HOST:PORT`.
    #[arg(long, hide = true, value_name = "PORT")]
    pub port: Option<String>,
    /// Where messages are kept: sqlite:PATH, memory, nats://HOST:PORT, redis://HOST:PORT or
    /// postgres://USER@HOST:PORT/DATABASE (a server address may end in ?namespace=NAME; the
    /// password of PostgreSQL from PGPASSWORD, password_file=FILE or ~/.pgpass; NATS, Redis and
    /// PostgreSQL are in the default build, features `nats`, `redis` and `postgres`).
    #[arg(long, default_value = "sqlite:./chorus.db")]
    pub store: String,
    /// Agents, tokens and limits (TOML); without it only a generated admin token is accepted.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Print the SHA-256 of a token, as the config keeps it, and exit: `-` reads the token from
    /// standard input, `@FILE` from a file (surrounding whitespace dropped); a token given here
    /// itself shows in the process list and the shell history.
    #[arg(long, value_name = "-|@FILE|TOKEN")]
    pub hash_token: Option<String>,
    /// Serve on a Redis that would lose acknowledged messages on a restart (no append-only
    /// file), with a warning, instead of refusing to start; as `accept_volatile_store = true`.
    #[arg(long)]
    pub accept_volatile_store: bool,
    /// Bring the store's schema to this build's version (PostgreSQL's migrations; the tables
    /// of the other stores) and exit, without serving: for a deploy step before the replicas
    /// start (they migrate on start too, one at a time).
    #[arg(long)]
    pub migrate_only: bool,
    #[command(flatten)]
    pub log: LogArgs,
}

/// Runs `chorus serve`.
pub fn run(args: ServeArgs) -> Result<(), CliError> {
    if let Some(port) = &args.port {
        return Err(CliError::usage(format!(
            "chorus serve has no --port (hint: --listen 127.0.0.1:{port}, or 0.0.0.0:{port} for \
             every interface)"
        )));
    }
    if let Some(source) = &args.hash_token {
        outln!("{}", hash_token(&secret("--hash-token", "token", source)?));
        return Ok(());
    }
    let (mut config, gateway) = match &args.config {
        Some(path) => load(path)?,
        None => (ServerConfig::default(), None),
    };
    config.accept_volatile_store |= args.accept_volatile_store;
    let store = Store::parse(&args.store).map_err(CliError::usage)?;
    // Kept to the end: dropping it sends the spans not yet exported.
    let _telemetry = args
        .log
        .init("chorus serve", "chorus-server", "info,rmcp=warn");
    let runtime = tokio::runtime::Runtime::new().map_err(CliError::usage)?;
    if args.migrate_only {
        return runtime.block_on(migrate_only(&store, &config));
    }
    runtime.block_on(async {
        // Before the address is printed: a SIGTERM from then on stops the server gracefully.
        let shutdown = shutdown_signal();
        let bus = store.open(&config).await.map_err(CliError::usage)?;
        let side = store.open_side(&config).map_err(CliError::usage)?;
        let server = Server::with_side(bus, side, &config);
        let (listener, addr) = bind(&args.listen)
            .await
            .map_err(|e| CliError::usage(format!("cannot listen on {}: {e}", args.listen)))?;
        let acceptor = match (&config.tls_cert, &config.tls_key) {
            (Some(cert), Some(key)) => Some(tls::acceptor(cert, key).map_err(CliError::usage)?),
            _ => None,
        };
        let scheme = if acceptor.is_some() { "https" } else { "http" };
        outln!("chorus serve: listening on {scheme}://{addr} (store {store})");
        if let Some(gateway) = gateway {
            let listen = listen_of(&gateway)?;
            gateway
                .check()
                .map_err(|e| CliError::usage(format!("[gateway]: {e}")))?;
            let (listener, at) = bind(&listen)
                .await
                .map_err(|e| CliError::usage(format!("cannot listen on {listen}: {e}")))?;
            outln!(
                "chorus serve: gateway listening on http://{at} (model {}, upstream {})",
                gateway.model,
                gateway.upstream
            );
            tokio::spawn(async move {
                if let Err(e) = chorus_gateway::serve(gateway, listener, shutdown_signal()).await {
                    errln!("chorus serve: the gateway stopped: {e}");
                }
            });
        }
        if let Some(token) = server.generated_admin_token() {
            outln!("chorus serve: admin token for this run: {token}");
        }
        let served = match acceptor {
            Some(acceptor) => match tls::TlsListener::new(listener, acceptor) {
                Ok(l) => server.serve(l, shutdown).await,
                Err(e) => Err(e),
            },
            None => server.serve(listener, shutdown).await,
        };
        served.map_err(CliError::usage)?;
        outln!("chorus serve: stopped");
        Ok(())
    })
}

/// The config file: the hub's settings and, in a `[gateway]` section, the gateway's. A file
/// without that section is read as it always was (its errors keep their line numbers).
fn load(path: &std::path::Path) -> Result<(ServerConfig, Option<GatewayConfig>), CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::usage(format!("{}: cannot read the file: {e}", path.display())))?;
    // Not TOML, or no [gateway]: the hub's reader reads the file (and says where it is wrong).
    let mut table: toml::Table = toml::from_str(&text).unwrap_or_default();
    let Some(gateway) = section(&mut table, path)? else {
        return Ok((ServerConfig::load(path).map_err(CliError::usage)?, None));
    };
    let rest = toml::to_string(&table).map_err(|e| CliError::usage(e.to_string()))?;
    let config = ServerConfig::from_toml(&rest).map_err(|mut e| {
        e.source_name = path.display().to_string();
        CliError::usage(e)
    })?;
    Ok((config, Some(gateway)))
}

/// `--migrate-only`: migrates (PostgreSQL) or opens (creating the tables of) the store, says
/// what it found, and returns.
async fn migrate_only(store: &Store, config: &ServerConfig) -> Result<(), CliError> {
    #[cfg(feature = "postgres")]
    if let chorus_bus::StoreAddress::Postgres(server) = store.address() {
        let before = chorus_bus::PostgresBus::migrate_only(&server.url, &server.namespace)
            .await
            .map_err(CliError::usage)?;
        let now = chorus_bus::SCHEMA_VERSION;
        match before == now {
            true => outln!(
                "chorus serve: schema {} is at version {now}; nothing to do",
                server.namespace
            ),
            false => outln!(
                "chorus serve: schema {} migrated from version {before} to {now}",
                server.namespace
            ),
        }
        return Ok(());
    }
    store.open(config).await.map_err(CliError::usage)?;
    outln!("chorus serve: store {store} is ready");
    Ok(())
}
