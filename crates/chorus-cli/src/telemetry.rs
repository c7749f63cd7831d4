//! `--log-format` and the tracing setup shared by `chorus serve` and `chorus run`.

use chorus_server::telemetry::{self, LogFormat, Setup, Telemetry};

/// The logging options of a command that runs for a while.
#[derive(clap::Args, Debug, Clone)]
pub struct LogArgs {
    /// Log lines on standard error as `text` (coloured on a terminal) or `json` (one object a
    /// line). `CHORUS_LOG` filters them (e.g. `debug`, `chorus_agent=debug`); spans go to the
    /// OTLP collector named by `OTEL_EXPORTER_OTLP_ENDPOINT` (see docs/server.md).
    #[arg(long, value_name = "text|json", default_value = "text", value_parser = parse_format)]
    pub log_format: LogFormat,
}

fn parse_format(s: &str) -> Result<LogFormat, String> {
    s.parse()
}

impl LogArgs {
    /// Installs the tracing setup of `command`; keep the result until the command ends (its
    /// drop sends the spans not yet exported).
    pub fn init(
        &self,
        command: &'static str,
        service: &'static str,
        default_filter: &'static str,
    ) -> Telemetry {
        telemetry::init(&Setup {
            command,
            service,
            default_filter,
            log_format: self.log_format,
        })
    }
}
