//! What the long-running commands (`chorus serve`, `chorus gateway`) share: the `--listen`
//! check, secrets read from standard input or a file, and the `[gateway]` section of a config
//! file.

use std::path::Path;

use chorus_gateway::GatewayConfig;

use crate::error::CliError;
use crate::input::read_text;
use crate::output::warn;

/// The secret an option (`--hash-token`, `--hash-key`) names: read from standard input (`-`) or a
/// file (`@FILE`), else the argument itself (with a warning).
pub(crate) fn secret(option: &str, what: &str, source: &str) -> Result<String, CliError> {
    let text = if source == "-" {
        read_text("-")?
    } else if let Some(path) = source.strip_prefix('@') {
        read_text(path)?
    } else {
        warn(&[format!(
            "{option}: a {what} on the command line shows in the process list and the shell \
             history; pass `-` to read it from standard input, or `@FILE`"
        )]);
        source.to_owned()
    };
    let token = text.trim();
    if token.is_empty() {
        return Err(CliError::usage(format!(
            "{option} {source}: expected a {what}, found nothing"
        )));
    }
    Ok(token.to_owned())
}

/// Checks a `--listen` value: HOST:PORT, or a bare port refused with the form it needs.
pub(crate) fn listen_address(value: &str) -> Result<String, String> {
    if value.parse::<u16>().is_ok() {
        return Err(format!(
            "expected HOST:PORT, found a port alone (hint: --listen 127.0.0.1:{value} for this \
             machine, --listen 0.0.0.0:{value} for every interface)"
        ));
    }
    match value.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => {
            Ok(value.to_owned())
        }
        _ => Err(format!(
            "expected HOST:PORT, found {value:?} (hint: --listen 127.0.0.1:7700, or [::1]:7700 for IPv6)"
        )),
    }
}

/// Takes the `[gateway]` section out of a config file's table, read as the gateway's settings.
pub(crate) fn section(
    table: &mut toml::Table,
    path: &Path,
) -> Result<Option<GatewayConfig>, CliError> {
    match table.remove("gateway") {
        None => Ok(None),
        Some(section) => section
            .try_into()
            .map(Some)
            .map_err(|e| CliError::usage(format!("{}: [gateway]: {e}", path.display()))),
    }
}

/// The address the gateway of `config` listens on.
pub(crate) fn listen_of(config: &GatewayConfig) -> Result<String, CliError> {
    let listen = config
        .listen
        .clone()
        .unwrap_or_else(|| "127.0.0.1:8080".into());
    listen_address(&listen).map_err(|e| CliError::usage(format!("[gateway] listen: {e}")))
}
