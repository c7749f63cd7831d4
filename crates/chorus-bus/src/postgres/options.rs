//! A PostgreSQL store's address made into a connection: the URL, libpq's `PG*` environment
//! variables for what the URL leaves out, chorus's own parameters, TLS by rustls, and the pool.

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio_postgres::config::{Host, SslMode};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::error::{BusError, BusResult};

/// Connections a bus keeps at most in its pool (`max_connections=` in the URL).
pub const DEFAULT_MAX_CONNECTIONS: usize = 16;

/// How long a request waits for a pooled connection before it fails (a 503 to a publisher).
const POOL_WAIT: Duration = Duration::from_secs(5);

/// How long opening one connection may take (`connect_timeout=` in the URL changes it).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// Idle time before TCP keepalive probes start, so that a connection the network dropped
/// (the listener's, which is idle between notifications) is found within about a minute.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(15);

/// chorus's own URL parameters, taken out before the rest goes to the client.
const OWN: [&str; 5] = [
    "max_connections",
    "password_file",
    "sslrootcert",
    "sslcert",
    "sslkey",
];

/// How to reach the database.
#[derive(Clone)]
pub(crate) struct Options {
    /// The client's settings (host, port, user, password, database, TLS mode, timeouts).
    pub pg: tokio_postgres::Config,
    /// Pool size.
    pub max_connections: usize,
    /// TLS when the mode asks for it; the server's certificate is always verified.
    pub tls: MakeRustlsConnect,
}

fn bad(detail: impl Into<String>) -> BusError {
    BusError::Config {
        what: "store".into(),
        detail: detail.into(),
    }
}

impl Options {
    /// Reads `postgres://[user[:password]@]host[:port][/database][?param=value&…]` (the
    /// namespace already taken out), with the `PG*` variables in `env` for what it leaves out.
    pub(crate) fn parse(url: &str, env: &dyn Fn(&str) -> Option<String>) -> BusResult<Options> {
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let mut own = std::collections::HashMap::new();
        let mut kept = Vec::new();
        let mut sslmode_given = false;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            if OWN.contains(&key) {
                own.insert(key, value.to_owned());
            } else {
                sslmode_given |= key == "sslmode";
                kept.push(pair);
            }
        }
        let client_url = match kept.is_empty() {
            true => base.to_owned(),
            false => format!("{base}?{}", kept.join("&")),
        };
        let mut pg = tokio_postgres::Config::from_str(&client_url).map_err(|e| {
            bad(format!(
                "{e} in the PostgreSQL URL (expected postgres://USER@HOST:PORT/DATABASE with \
                 libpq's parameters such as sslmode, connect_timeout or application_name, and \
                 chorus's max_connections, password_file, sslrootcert, sslcert, sslkey)"
            ))
        })?;
        apply_environment(&mut pg, env, sslmode_given)?;
        if let Some(file) = own.get("password_file") {
            pg.password(read_password(Path::new(file))?);
        } else if pg.get_password().is_none() {
            let passfile =
                env("PGPASSFILE").or_else(|| env("HOME").map(|home| format!("{home}/.pgpass")));
            if let Some(password) = passfile.and_then(|f| pgpass_lookup(Path::new(&f), &pg)) {
                pg.password(password);
            }
        }
        if pg.get_connect_timeout().is_none() {
            pg.connect_timeout(CONNECT_TIMEOUT);
        }
        pg.keepalives_idle(KEEPALIVE_IDLE);
        if pg.get_application_name().is_none() {
            pg.application_name("chorus");
        }
        let max_connections = match own.get("max_connections") {
            None => DEFAULT_MAX_CONNECTIONS,
            Some(n) => n.parse().ok().filter(|n| *n >= 1).ok_or_else(|| {
                bad(format!(
                    "max_connections must be a whole number of at least 1 (found {n:?})"
                ))
            })?,
        };
        let tls = tls_config(
            own.get("sslrootcert").map(Path::new),
            own.get("sslcert").map(Path::new),
            own.get("sslkey").map(Path::new),
        )?;
        Ok(Options {
            pg,
            max_connections,
            tls: MakeRustlsConnect::new(tls),
        })
    }

    /// [`Options::parse`] with this process's environment.
    pub(crate) fn from_env(url: &str) -> BusResult<Options> {
        Options::parse(url, &|name| std::env::var(name).ok())
    }

    /// The pool, with the namespace's schema as every connection's search path. Creates no
    /// connection yet.
    pub(crate) fn pool(&self, schema: &str) -> BusResult<Pool> {
        let mut pg = self.pg.clone();
        let search_path = format!("-c search_path={}", quoted(schema));
        let options = match pg.get_options() {
            Some(given) => format!("{given} {search_path}"),
            None => search_path,
        };
        pg.options(&options);
        let manager = Manager::from_config(
            pg,
            self.tls.clone(),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        Pool::builder(manager)
            .max_size(self.max_connections)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(POOL_WAIT))
            .create_timeout(Some(
                self.pg
                    .get_connect_timeout()
                    .copied()
                    .unwrap_or(CONNECT_TIMEOUT),
            ))
            .recycle_timeout(Some(CONNECT_TIMEOUT))
            .build()
            .map_err(|e| bad(format!("the connection pool: {e}")))
    }

    /// Where the store is, for messages: `user@host:port/database`, never the password.
    pub(crate) fn describe(&self) -> String {
        let host = match self.pg.get_hosts().first() {
            Some(Host::Tcp(h)) => h.clone(),
            Some(Host::Unix(p)) => p.display().to_string(),
            None => "?".into(),
        };
        let port = self.pg.get_ports().first().copied().unwrap_or(5432);
        format!(
            "{}@{host}:{port}/{}",
            self.pg.get_user().unwrap_or("?"),
            self.pg.get_dbname().unwrap_or("?")
        )
    }
}

/// An identifier in double quotes (a namespace holds letters, digits, `_` and `-` only).
pub(crate) fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Fills what the URL leaves out from `PGHOST`, `PGPORT`, `PGUSER`, `PGPASSWORD`,
/// `PGDATABASE` and `PGSSLMODE`, as libpq does; without a user, the login name. Without a TLS
/// mode anywhere: none to a loopback address or a socket, required (and verified) elsewhere.
fn apply_environment(
    pg: &mut tokio_postgres::Config,
    env: &dyn Fn(&str) -> Option<String>,
    sslmode_given: bool,
) -> BusResult<()> {
    if pg.get_hosts().is_empty() {
        pg.host(env("PGHOST").as_deref().unwrap_or("localhost"));
    }
    if pg.get_ports().is_empty()
        && let Some(port) = env("PGPORT")
    {
        pg.port(
            port.parse()
                .map_err(|_| bad(format!("PGPORT {port:?} is not a port")))?,
        );
    }
    if pg.get_user().is_none() {
        let user = env("PGUSER").or_else(|| env("USER")).ok_or_else(|| {
            bad("the PostgreSQL URL names no user (hint: postgres://USER@HOST/DATABASE or PGUSER)")
        })?;
        pg.user(&user);
    }
    if pg.get_password().is_none()
        && let Some(password) = env("PGPASSWORD")
    {
        pg.password(password);
    }
    if pg.get_dbname().is_none()
        && let Some(db) = env("PGDATABASE")
    {
        pg.dbname(&db);
    }
    let mode = match (sslmode_given, env("PGSSLMODE")) {
        (true, _) => None,
        (false, Some(mode)) => Some(ssl_mode(&mode)?),
        (false, None) if pg.get_hosts().iter().all(is_local) => Some(SslMode::Disable),
        (false, None) => Some(SslMode::Require),
    };
    if let Some(mode) = mode {
        pg.ssl_mode(mode);
    }
    Ok(())
}

fn is_local(host: &Host) -> bool {
    match host {
        Host::Unix(_) => true,
        Host::Tcp(h) => matches!(h.as_str(), "localhost" | "127.0.0.1" | "::1" | "[::1]"),
    }
}

/// libpq's modes as the client knows them; `verify-ca` and `verify-full` are `require`, which
/// here always verifies the certificate and the host name.
fn ssl_mode(mode: &str) -> BusResult<SslMode> {
    match mode {
        "disable" | "allow" => Ok(SslMode::Disable),
        "prefer" => Ok(SslMode::Prefer),
        "require" | "verify-ca" | "verify-full" => Ok(SslMode::Require),
        other => Err(bad(format!(
            "sslmode {other:?} is not one of disable, allow, prefer, require, verify-ca, verify-full"
        ))),
    }
}

/// The first line of a password file, without its line end.
fn read_password(file: &Path) -> BusResult<String> {
    let text = std::fs::read_to_string(file).map_err(|e| {
        bad(format!(
            "password_file {}: {e} (hint: a file holding the password on its first line)",
            file.display()
        ))
    })?;
    Ok(text.lines().next().unwrap_or_default().to_owned())
}

/// The password of a `.pgpass` file (`host:port:database:user:password` lines, `*` matching
/// anything, `\` escaping `:` and `\`) for this connection, if a line matches.
fn pgpass_lookup(file: &Path, pg: &tokio_postgres::Config) -> Option<String> {
    let text = std::fs::read_to_string(file).ok()?;
    let host = match pg.get_hosts().first()? {
        Host::Tcp(h) => h.clone(),
        Host::Unix(_) => "localhost".into(),
    };
    let port = pg.get_ports().first().copied().unwrap_or(5432).to_string();
    let wanted = [
        host.as_str(),
        port.as_str(),
        pg.get_dbname().unwrap_or(pg.get_user().unwrap_or_default()),
        pg.get_user().unwrap_or_default(),
    ];
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(pgpass_fields)
        .find(|fields| {
            fields.len() == 5
                && fields
                    .iter()
                    .zip(wanted)
                    .all(|(field, want)| field == "*" || field == want)
        })
        .map(|mut fields| fields.remove(4))
}

fn pgpass_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        let c = match c {
            '\\' => chars.next().unwrap_or('\\'),
            ':' if fields.len() < 5 => {
                fields.push(String::new());
                continue;
            }
            c => c,
        };
        if let Some(field) = fields.last_mut() {
            field.push(c);
        }
    }
    fields
}

/// rustls on the ring provider: the server's certificate checked against `root` (PEM) or the
/// web's roots, and a client certificate when `cert` and `key` are given.
fn tls_config(
    root: Option<&Path>,
    cert: Option<&Path>,
    key: Option<&Path>,
) -> BusResult<rustls::ClientConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let pem_error = |what: &str, file: &Path, e: rustls::pki_types::pem::Error| {
        bad(format!("{what} {}: {e}", file.display()))
    };
    let mut roots = rustls::RootCertStore::empty();
    match root {
        Some(file) => {
            for cert in CertificateDer::pem_file_iter(file)
                .map_err(|e| pem_error("sslrootcert", file, e))?
            {
                let cert = cert.map_err(|e| pem_error("sslrootcert", file, e))?;
                roots
                    .add(cert)
                    .map_err(|e| bad(format!("sslrootcert {}: {e}", file.display())))?;
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| bad(format!("TLS: {e}")))?
    .with_root_certificates(roots);
    match (cert, key) {
        (None, None) => Ok(builder.with_no_client_auth()),
        (Some(cert), Some(key)) => {
            let chain = CertificateDer::pem_file_iter(cert)
                .map_err(|e| pem_error("sslcert", cert, e))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| pem_error("sslcert", cert, e))?;
            let key_der =
                PrivateKeyDer::from_pem_file(key).map_err(|e| pem_error("sslkey", key, e))?;
            builder
                .with_client_auth_cert(chain, key_der)
                .map_err(|e| bad(format!("sslcert and sslkey: {e}")))
        }
        _ => Err(bad(
            "sslcert and sslkey come together (a client certificate and its key)",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(url: &str, vars: &[(&str, &str)]) -> BusResult<Options> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Options::parse(url, &|name| {
            vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn the_url_wins_and_the_environment_fills_in() {
        let o = parse(
            "postgres://app@db.internal:6432/chorus?max_connections=4",
            &[
                ("PGUSER", "other"),
                ("PGPASSWORD", "s3cret"),
                ("PGDATABASE", "x"),
            ],
        )
        .unwrap();
        assert_eq!(o.pg.get_user(), Some("app"));
        assert_eq!(o.pg.get_password(), Some(&b"s3cret"[..]));
        assert_eq!(o.pg.get_dbname(), Some("chorus"));
        assert_eq!(o.pg.get_ports(), [6432]);
        assert_eq!(o.max_connections, 4);
        assert_eq!(o.pg.get_ssl_mode(), SslMode::Require, "TLS off loopback");
        assert_eq!(o.describe(), "app@db.internal:6432/chorus");
    }

    #[test]
    fn loopback_goes_without_tls_unless_asked() {
        let o = parse("postgres://u@127.0.0.1/db", &[]).unwrap();
        assert_eq!(o.pg.get_ssl_mode(), SslMode::Disable);
        let o = parse("postgres://u@127.0.0.1/db?sslmode=require", &[]).unwrap();
        assert_eq!(o.pg.get_ssl_mode(), SslMode::Require);
        let o = parse("postgres://u@127.0.0.1/db", &[("PGSSLMODE", "verify-full")]).unwrap();
        assert_eq!(o.pg.get_ssl_mode(), SslMode::Require);
    }

    #[test]
    fn a_password_comes_from_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pw");
        std::fs::write(&file, "from-file\n").unwrap();
        let url = format!("postgres://u@h/db?password_file={}", file.display());
        let o = parse(&url, &[("PGPASSWORD", "env")]).unwrap();
        assert_eq!(o.pg.get_password(), Some(&b"from-file"[..]));
        let pgpass = dir.path().join("pgpass");
        std::fs::write(&pgpass, "# comment\nother:*:*:*:no\nh:5432:db:u:pa\\:ss\n").unwrap();
        let o = parse(
            "postgres://u@h/db",
            &[("PGPASSFILE", pgpass.to_str().unwrap())],
        )
        .unwrap();
        assert_eq!(o.pg.get_password(), Some(&b"pa:ss"[..]));
    }

    #[test]
    fn bad_settings_are_explained() {
        let err = parse("postgres://u@h/db?max_connections=0", &[])
            .err()
            .unwrap();
        assert!(err.to_string().contains("max_connections must be"), "{err}");
        let err = parse("postgres://u@h/db?sslmode=sometimes", &[])
            .err()
            .unwrap();
        assert!(err.to_string().contains("in the PostgreSQL URL"), "{err}");
        let err = parse("postgres://u@h/db?password_file=/nonexistent/x", &[])
            .err()
            .unwrap();
        assert!(
            err.to_string().contains("password_file /nonexistent/x"),
            "{err}"
        );
        let err = parse("postgres://u@h/db?sslcert=/a", &[]).err().unwrap();
        assert!(err.to_string().contains("come together"), "{err}");
        let err = parse("postgres://h/db", &[]).err().unwrap();
        assert!(err.to_string().contains("names no user"), "{err}");
    }
}
