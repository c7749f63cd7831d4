//! The one tracing setup of `chorus serve` and `chorus run`: a log filter (`CHORUS_LOG`), text
//! or JSON log lines on standard error (colour only on a terminal, never with `NO_COLOR`), and
//! with feature `otlp` span export over OTLP/HTTP or HTTPS configured by the standard `OTEL_*`
//! variables.

use std::io::IsTerminal;
use std::str::FromStr;

use tracing_subscriber::EnvFilter;
#[cfg(feature = "otlp")]
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::{Layer, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Text,
    /// One JSON object per event (with the fields of the spans it is in).
    Json,
}

impl FromStr for LogFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => Err(format!("expected `text` or `json`, found `{other}`")),
        }
    }
}

/// What differs between the commands that set tracing up.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The command, opening its messages (`chorus serve`).
    pub command: &'static str,
    /// `service.name` of the exported spans unless `OTEL_SERVICE_NAME` or a `service.name` in
    /// `OTEL_RESOURCE_ATTRIBUTES` names one.
    pub service: &'static str,
    /// The log filter when `CHORUS_LOG` is unset (`info`, `warn` …); it filters the log lines
    /// only, spans of level `info` and above are exported whatever it says.
    pub default_filter: &'static str,
    /// Text or JSON lines.
    pub log_format: LogFormat,
}

/// Keeps the exporter alive; dropping it sends the spans not yet sent.
pub struct Telemetry {
    #[cfg(feature = "otlp")]
    provider: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
}

impl Telemetry {
    /// Sends every finished span now (with the `otlp` feature and an endpoint).
    pub fn flush(&self) {
        #[cfg(feature = "otlp")]
        if let Some(p) = &self.provider {
            let _ = p.force_flush();
        }
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        #[cfg(feature = "otlp")]
        if let Some(p) = self.provider.take() {
            let _ = p.shutdown();
        }
    }
}

/// Installs the subscriber `setup` describes; spans are exported when
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT` is set (and neither
/// `OTEL_SDK_DISABLED=true` nor `OTEL_TRACES_EXPORTER=none` says otherwise). Does nothing when
/// a subscriber is already installed.
pub fn init(setup: &Setup) -> Telemetry {
    install(setup, None)
}

/// The setup of `chorus serve` exporting to `endpoint` (e.g. `http://127.0.0.1:4318`;
/// `/v1/traces` is added when missing), or as [`init`] says with `None`.
pub fn init_with(endpoint: Option<&str>) -> Telemetry {
    let setup = Setup {
        command: "chorus serve",
        service: "chorus-server",
        default_filter: "info,rmcp=warn",
        log_format: LogFormat::Text,
    };
    install(&setup, endpoint.filter(|e| !e.trim().is_empty()))
}

/// The value of environment variable `name` when set and not blank.
fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Whether the environment asks for span export.
fn export_wanted() -> bool {
    let disabled = var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
        || var("OTEL_TRACES_EXPORTER").is_some_and(|v| v.trim().eq_ignore_ascii_case("none"));
    !disabled
        && (var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some()
            || var("OTEL_EXPORTER_OTLP_ENDPOINT").is_some())
}

/// Colour when standard error is a terminal and `NO_COLOR` is unset.
fn colour() -> bool {
    std::io::stderr().is_terminal() && var("NO_COLOR").is_none()
}

fn install(setup: &Setup, endpoint: Option<&str>) -> Telemetry {
    let filter = EnvFilter::try_from_env("CHORUS_LOG")
        .unwrap_or_else(|_| EnvFilter::new(setup.default_filter));
    let (text, json) = match setup.log_format {
        LogFormat::Text => (
            Some(
                tracing_subscriber::fmt::layer()
                    .with_writer(std::io::stderr)
                    .with_ansi(colour()),
            ),
            None,
        ),
        LogFormat::Json => (
            None,
            Some(
                tracing_subscriber::fmt::layer()
                    .json()
                    .with_current_span(true)
                    .with_span_list(false)
                    .with_writer(std::io::stderr),
            ),
        ),
    };
    // The filter is the log lines' own: spans are exported at `info` whatever the logs show.
    let logs = Layer::and_then(text, json).with_filter(filter);
    let registry = tracing_subscriber::registry().with(logs);
    let wanted = endpoint.is_some() || export_wanted();
    #[cfg(feature = "otlp")]
    {
        if wanted {
            match super::otlp::layer(setup.service, endpoint) {
                Ok((layer, provider)) => {
                    let _ = registry
                        .with(layer.with_filter(LevelFilter::INFO))
                        .try_init();
                    return Telemetry {
                        provider: Some(provider),
                    };
                }
                Err(e) => report(setup, &format!("OTLP export is off: {e}")),
            }
        }
        let _ = registry.try_init();
        Telemetry { provider: None }
    }
    #[cfg(not(feature = "otlp"))]
    {
        if wanted {
            report(
                setup,
                "an OTLP endpoint is set but this build has no OTLP exporter (build with the `otlp` feature)",
            );
        }
        let _ = registry.try_init();
        Telemetry {}
    }
}

/// Says on standard error why telemetry is not what was asked for.
#[allow(clippy::print_stderr)]
fn report(setup: &Setup, message: &str) {
    eprintln!("{}: {message}", setup.command);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_formats_parse_and_others_are_refused() {
        assert_eq!("json".parse::<LogFormat>(), Ok(LogFormat::Json));
        assert_eq!("text".parse::<LogFormat>(), Ok(LogFormat::Text));
        let bad = "yaml".parse::<LogFormat>().unwrap_err();
        assert!(bad.contains("`text` or `json`"), "{bad}");
    }
}
