//! What a NATS store address says beyond its servers (`nats://h1:4222,h2:4222?replicas=3&…`):
//! the replica count of chorus's streams, credentials and TLS; and creating or updating a
//! stream to the configuration chorus wants.
//!
//! Parameters: `replicas=N` (1 to 5, default 1), `creds=PATH` (a `.creds` file), `nkey=PATH` (a
//! file holding an NKey seed), `token=PATH` (a file holding a token), `tls=required`,
//! `tls_ca=PATH`, `tls_cert=PATH` with `tls_key=PATH`; a user and password may stand in the URL
//! (`nats://user:pass@host`, percent-encoded; it holds for every server). Other secrets are read
//! from files, so that none shows in a process list.

use std::path::PathBuf;
use std::time::Duration;

use async_nats::jetstream::context::GetStreamErrorKind;
use async_nats::jetstream::{Context, ErrorCode, stream};

use super::wire::nats_error;
use crate::error::{BusError, BusResult};

/// The most replicas JetStream keeps of a stream.
const MAX_REPLICAS: usize = 5;

/// The connection settings and stream replicas of a NATS store address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Options {
    /// Every server given, each a `nats://` (or `tls://`) URL.
    pub servers: Vec<String>,
    /// Replicas of each stream (and so of its consumers).
    pub replicas: usize,
    /// The user and password of the address (`nats://user:pass@…`), percent-decoded. The client
    /// reads no credentials from a server URL it is given with options, so they go as options.
    user: Option<(String, String)>,
    creds: Option<PathBuf>,
    nkey: Option<PathBuf>,
    token: Option<PathBuf>,
    tls_required: bool,
    tls_ca: Option<PathBuf>,
    tls_client: Option<(PathBuf, PathBuf)>,
}

fn config_error(detail: String) -> BusError {
    BusError::Config {
        what: "store".into(),
        detail,
    }
}

impl Options {
    /// Reads `url`: `nats://` then servers separated by commas, then the parameters.
    pub fn parse(url: &str) -> BusResult<Options> {
        let rest = url.strip_prefix("nats://").unwrap_or(url);
        let (hosts, query) = rest.split_once('?').unwrap_or((rest, ""));
        // A user and password given once, before the first host, hold for every server.
        let (userinfo, hosts) = match hosts.rsplit_once('@') {
            Some((user, hosts)) => (Some(user), hosts),
            None => (None, hosts),
        };
        let servers: Vec<String> = hosts
            .split(',')
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .map(|h| format!("nats://{}", h.strip_prefix("nats://").unwrap_or(h)))
            .collect();
        let decoded = |s: &str| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8()
                .map(|s| s.into_owned())
                .map_err(|_| {
                    config_error(
                        "the user or password of the NATS address is not UTF-8 once \
                         percent-decoded"
                            .into(),
                    )
                })
        };
        let user = match userinfo.map(|u| u.split_once(':').unwrap_or((u, ""))) {
            Some((user, password)) => Some((decoded(user)?, decoded(password)?)),
            None => None,
        };
        if servers.is_empty() {
            return Err(config_error(format!(
                "{url:?} names no NATS server (expected nats://HOST:PORT[,HOST:PORT…])"
            )));
        }
        let mut options = Options {
            servers,
            replicas: 1,
            user,
            creds: None,
            nkey: None,
            token: None,
            tls_required: false,
            tls_ca: None,
            tls_client: None,
        };
        let (mut cert, mut key) = (None, None);
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let path = || Some(PathBuf::from(value));
            match name {
                "replicas" => options.replicas = replicas(value)?,
                "creds" => options.creds = path(),
                "nkey" => options.nkey = path(),
                "token" => options.token = path(),
                "tls" if value == "required" => options.tls_required = true,
                "tls_ca" => options.tls_ca = path(),
                "tls_cert" => cert = path(),
                "tls_key" => key = path(),
                other => {
                    return Err(config_error(format!(
                        "unknown NATS store parameter {other:?} (expected replicas, creds, nkey, \
                         token, tls=required, tls_ca, tls_cert, tls_key or namespace)"
                    )));
                }
            }
        }
        options.tls_client = match (cert, key) {
            (Some(cert), Some(key)) => Some((cert, key)),
            (None, None) => None,
            _ => {
                return Err(config_error(
                    "tls_cert and tls_key go together (a client certificate and its key)".into(),
                ));
            }
        };
        Ok(options)
    }

    /// The client's connection options: credentials and TLS as given, reconnecting for ever
    /// (across the servers given and those the cluster announces), each attempt bounded.
    pub async fn connect_options(&self) -> BusResult<async_nats::ConnectOptions> {
        let read = |what: &str, path: &PathBuf| {
            std::fs::read_to_string(path)
                .map(|s| s.trim().to_owned())
                .map_err(|e| {
                    config_error(format!(
                        "cannot read the NATS {what} {}: {e}",
                        path.display()
                    ))
                })
        };
        // A server that stops answering (paused, or cut off without a reset) is found by its
        // missed pings and left for another of the cluster within about 10 s, instead of
        // holding every request until its own timeout.
        let mut options = async_nats::ConnectOptions::new()
            .connection_timeout(Duration::from_secs(3))
            .ping_interval(Duration::from_secs(3))
            .max_reconnects(None);
        if let Some((user, password)) = &self.user {
            options = options.user_and_password(user.clone(), password.clone());
        }
        if let Some(path) = &self.creds {
            options = options.credentials_file(path).await.map_err(|e| {
                config_error(format!(
                    "cannot read the NATS credentials {}: {e}",
                    path.display()
                ))
            })?;
        }
        if let Some(path) = &self.nkey {
            options = options.nkey(read("NKey seed", path)?);
        }
        if let Some(path) = &self.token {
            options = options.token(read("token", path)?);
        }
        if self.tls_required {
            options = options.require_tls(true);
        }
        if let Some(ca) = &self.tls_ca {
            options = options.add_root_certificates(ca.clone());
        }
        if let Some((cert, key)) = &self.tls_client {
            options = options.add_client_certificate(cert.clone(), key.clone());
        }
        Ok(options)
    }
}

/// `replicas=N`: 1 to [`MAX_REPLICAS`].
fn replicas(value: &str) -> BusResult<usize> {
    match value.parse::<usize>() {
        Ok(n) if (1..=MAX_REPLICAS).contains(&n) => Ok(n),
        _ => Err(config_error(format!(
            "replicas: expected 1 to {MAX_REPLICAS} (JetStream keeps at most {MAX_REPLICAS} \
             copies of a stream), found {value:?}"
        ))),
    }
}

/// The stream of `config` with `replicas` copies: created when missing; updated when it has
/// other replicas, lacks a subject of `config` or keeps records for another max age or
/// duplicate window (an
/// existing stream takes the replica count chorus is started with). A cluster with fewer
/// servers than `replicas` (or no cluster) is refused with what to do.
pub(super) async fn ensure_stream(
    js: &Context,
    mut config: stream::Config,
    replicas: usize,
) -> BusResult<stream::Stream> {
    config.num_replicas = replicas;
    js.get_or_create_stream(config.clone())
        .await
        .map_err(|e| replicas_error(&config.name, replicas, e))?;
    let mut found = settled(js, &config.name).await?;
    let has = found.cached_info().config.clone();
    let subjects_missing = config.subjects.iter().any(|s| !has.subjects.contains(s));
    let differs = has.num_replicas.max(1) != replicas
        || has.max_age != config.max_age
        || has.duplicate_window != config.duplicate_window;
    if differs || subjects_missing {
        let mut wanted = has.clone();
        wanted.num_replicas = replicas;
        // Together: the server refuses a duplicate window longer than the max age.
        wanted.max_age = config.max_age;
        wanted.duplicate_window = config.duplicate_window;
        if subjects_missing {
            wanted.subjects = config.subjects.clone();
        }
        js.update_stream(wanted)
            .await
            .map_err(|e| replicas_error(&config.name, replicas, e))?;
        found = settled(js, &config.name).await?;
    }
    Ok(found)
}

/// How long a stream just created or updated may stay unknown to the server this client is
/// connected to.
const SETTLE: Duration = Duration::from_secs(10);

/// Stream `name` as the server this client is connected to sees it. In a cluster a stream just
/// created is assigned by the meta leader, and each other server learns of it a moment later:
/// until then it answers "stream not found" (10059), so the lookup is repeated for up to
/// [`SETTLE`]. Every later request of this bus then finds the stream.
async fn settled(js: &Context, name: &str) -> BusResult<stream::Stream> {
    let deadline = tokio::time::Instant::now() + SETTLE;
    let mut pause = Duration::from_millis(10);
    loop {
        match js.get_stream(name).await {
            Ok(found) => return Ok(found),
            Err(e)
                if matches!(e.kind(), GetStreamErrorKind::JetStream(j)
                    if j.error_code() == ErrorCode::STREAM_NOT_FOUND)
                    && tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(500));
            }
            Err(e) => return Err(nats_error(format!("stream {name}: {e}"))),
        }
    }
}

/// A failure to create or update stream `name` with `replicas` copies, said plainly when the
/// cluster cannot hold that many.
fn replicas_error(name: &str, replicas: usize, e: impl std::fmt::Display) -> BusError {
    let text = e.to_string();
    let short = text.contains("non-clustered")
        || text.contains("insufficient resources")
        || text.contains("no suitable peers");
    if replicas > 1 && short {
        return config_error(format!(
            "the stream {name} cannot have {replicas} replicas: {text} (hint: replicas=N needs \
             a JetStream cluster of at least N servers; use replicas=1 on a single server)"
        ));
    }
    nats_error(format!("stream {name}: {text}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_replicas_and_secrets_are_read_from_the_address() {
        let o =
            Options::parse("nats://a:4222,b:4223,nats://c:4224?replicas=3&creds=/x.creds").unwrap();
        assert_eq!(
            o.servers,
            ["nats://a:4222", "nats://b:4223", "nats://c:4224"]
        );
        assert_eq!(o.replicas, 3);
        assert_eq!(o.creds, Some(PathBuf::from("/x.creds")));
        let o = Options::parse("nats://u:p%40ss@a:1,b:2").unwrap();
        assert_eq!(o.servers, ["nats://a:1", "nats://b:2"]);
        assert_eq!(o.user, Some(("u".to_owned(), "p@ss".to_owned())));
        assert_eq!(o.replicas, 1);
    }

    #[test]
    fn bad_parameters_are_refused_with_what_is_expected() {
        for (url, says) in [
            ("nats://a:1?replicas=0", "expected 1 to 5"),
            ("nats://a:1?replicas=7", "expected 1 to 5"),
            (
                "nats://a:1?replica=3",
                "unknown NATS store parameter \"replica\"",
            ),
            ("nats://a:1?tls_cert=/c", "go together"),
            ("nats://?replicas=1", "names no NATS server"),
        ] {
            let e = Options::parse(url).unwrap_err().to_string();
            assert!(e.contains(says), "{url}: {e}");
        }
    }
}
