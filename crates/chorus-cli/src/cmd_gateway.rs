//! `chorus gateway`: an OpenAI-compatible server for gpt-oss in front of a raw completions
//! engine, until Ctrl-C or SIGTERM.

use std::path::{Path, PathBuf};

use chorus_gateway::{GatewayConfig, UpstreamKind, hash_key};
use chorus_server::{bind, shutdown_signal};

use crate::error::CliError;
use crate::service::{listen_address, listen_of, secret, section};
use crate::telemetry::LogArgs;

/// Arguments of `chorus gateway`.
#[derive(clap::Args, Debug)]
pub struct GatewayArgs {
    /// The engine's base URL up to `/v1` (vLLM, SGLang: `http://127.0.0.1:8000/v1`); over the
    /// config's `upstream`.
    #[arg(long, value_name = "URL")]
    pub upstream: Option<String>,
    /// Address to listen on, HOST:PORT (port 0 picks a free port); over the config's `listen`,
    /// default 127.0.0.1:8080.
    #[arg(long, value_name = "HOST:PORT", value_parser = listen_address)]
    pub listen: Option<String>,
    /// A TOML file whose `[gateway]` section holds the settings (see docs/gateway.md).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// What the upstream speaks: openai-completions (vLLM, SGLang), llama-cpp or ollama; over
    /// the config's `upstream_kind`.
    #[arg(long, value_name = "KIND", value_parser = upstream_kind)]
    pub upstream_kind: Option<UpstreamKind>,
    /// The model name the engine serves and clients send; over the config's `model`.
    #[arg(long)]
    pub model: Option<String>,
    /// Answer a repaired model output with a 502 instead of the repaired answer.
    #[arg(long)]
    pub strict: bool,
    /// Print the SHA-256 of a client API key, as `api_key_hashes` keeps it, and exit: `-` reads
    /// the key from standard input, `@FILE` from a file.
    #[arg(long, value_name = "-|@FILE|KEY")]
    pub hash_key: Option<String>,
    #[command(flatten)]
    pub log: LogArgs,
}

fn upstream_kind(name: &str) -> Result<UpstreamKind, String> {
    UpstreamKind::from_name(name)
        .ok_or_else(|| format!("expected openai-completions, llama-cpp or ollama, found {name:?}"))
}

/// The `[gateway]` section of a TOML file (the whole file may hold the hub's settings too).
fn load(path: &Path) -> Result<GatewayConfig, CliError> {
    let name = path.display();
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::usage(format!("{name}: cannot read the file: {e}")))?;
    let mut table: toml::Table =
        toml::from_str(&text).map_err(|e| CliError::usage(format!("{name}: {e}")))?;
    match section(&mut table, path)? {
        None => Err(CliError::usage(format!(
            "{name}: no [gateway] section (hint: [gateway] with upstream = \"http://127.0.0.1:8000/v1\")"
        ))),
        Some(config) => Ok(config),
    }
}

/// Runs `chorus gateway`.
pub fn run(args: GatewayArgs) -> Result<(), CliError> {
    if let Some(source) = &args.hash_key {
        outln!("{}", hash_key(&secret("--hash-key", "key", source)?));
        return Ok(());
    }
    let mut config = match &args.config {
        Some(path) => load(path)?,
        None => GatewayConfig::default(),
    };
    if let Some(upstream) = args.upstream {
        config.upstream = upstream;
    }
    if let Some(kind) = args.upstream_kind {
        config.upstream_kind = kind;
    }
    if let Some(model) = args.model {
        config.model = model;
    }
    config.strict |= args.strict;
    if let Some(listen) = args.listen {
        config.listen = Some(listen);
    }
    let listen = listen_of(&config)?;
    config.check().map_err(CliError::usage)?;
    let _telemetry = args.log.init("chorus gateway", "chorus-gateway", "info");
    let runtime = tokio::runtime::Runtime::new().map_err(CliError::usage)?;
    runtime.block_on(async {
        let shutdown = shutdown_signal();
        let (listener, addr) = bind(&listen)
            .await
            .map_err(|e| CliError::usage(format!("cannot listen on {listen}: {e}")))?;
        outln!(
            "chorus gateway: listening on http://{addr} (model {}, upstream {})",
            config.model,
            config.upstream
        );
        chorus_gateway::serve(config, listener, shutdown)
            .await
            .map_err(|e| CliError::usage(e.to_string()))?;
        outln!("chorus gateway: stopped");
        Ok(())
    })
}
