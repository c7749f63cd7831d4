//! A PostgreSQL server of a test's own (`initdb` + `postgres` from `pg_config --bindir`) on a
//! free port of 127.0.0.1, to kill -9 and restart: the machine's shared server must not be
//! disturbed. As root it runs as the `postgres` user (the server refuses root).

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long starting (or restarting after a kill, with crash recovery) may take.
const STARTING: Duration = Duration::from_secs(60);

/// A `postgres` server with its data directory; killed when dropped.
pub struct PgProcess {
    child: Option<Child>,
    data: PathBuf,
    /// Server settings given at each start (`-c NAME=VALUE` pairs).
    settings: Vec<String>,
    bin: PathBuf,
    owner: Option<(u32, u32)>,
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// `postgres://postgres@127.0.0.1:<port>/postgres`.
    pub url: String,
}

/// The directory of the server's programs.
fn bin_dir() -> PathBuf {
    let out = Command::new("pg_config").arg("--bindir").output().expect(
        "pg_config runs (CHORUS_TEST_POSTGRES_URL is set, so the server's programs must be here)",
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// The uid and gid of the `postgres` user, when this process is root (the server refuses to
/// run as root).
fn owner() -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions; getpwnam's result is read before any other call.
    unsafe {
        if libc::geteuid() != 0 {
            return None;
        }
        let pw = libc::getpwnam(c"postgres".as_ptr());
        assert!(
            !pw.is_null(),
            "a `postgres` user to run the test's server as"
        );
        Some(((*pw).pw_uid, (*pw).pw_gid))
    }
}

impl PgProcess {
    /// Makes a cluster in `dir` (`initdb`, trust authentication) and starts it on `port`.
    pub fn start(dir: &Path, port: u16) -> PgProcess {
        PgProcess::start_with(dir, port, &[])
    }

    /// Like [`PgProcess::start`], with TLS from the certificate and key files `cert` and `key`
    /// (copied into the data directory, as the server wants them: owned by it, mode 0600).
    pub fn start_tls(dir: &Path, port: u16, cert: &Path, key: &Path) -> PgProcess {
        let tls = dir.join("tls");
        std::fs::create_dir_all(&tls).unwrap();
        let (cert_to, key_to) = (tls.join("server.crt"), tls.join("server.key"));
        std::fs::copy(cert, &cert_to).unwrap();
        std::fs::copy(key, &key_to).unwrap();
        std::fs::set_permissions(&key_to, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .unwrap();
        if let Some((uid, gid)) = owner() {
            for path in [&tls, &cert_to, &key_to] {
                std::os::unix::fs::chown(path, Some(uid), Some(gid)).unwrap();
            }
        }
        let settings = [
            "ssl=on".to_owned(),
            format!("ssl_cert_file={}", cert_to.display()),
            format!("ssl_key_file={}", key_to.display()),
        ];
        PgProcess::start_with(dir, port, &settings)
    }

    fn start_with(dir: &Path, port: u16, settings: &[String]) -> PgProcess {
        let data = dir.join("pgdata");
        std::fs::create_dir_all(&data).unwrap();
        let owner = owner();
        if let Some((uid, gid)) = owner {
            for path in [dir, data.as_path()] {
                std::os::unix::fs::chown(path, Some(uid), Some(gid)).unwrap();
            }
        }
        let bin = bin_dir();
        let mut initdb = Command::new(bin.join("initdb"));
        initdb
            .args(["-U", "postgres", "--auth=trust", "-N", "-D"])
            .arg(&data)
            .stdout(Stdio::null());
        let status = as_owner(&mut initdb, owner).status().expect("initdb runs");
        assert!(status.success(), "initdb failed");
        let mut pg = PgProcess {
            child: None,
            data,
            settings: settings.to_vec(),
            bin,
            owner,
            port,
            url: format!("postgres://postgres@127.0.0.1:{port}/postgres"),
        };
        pg.spawn();
        pg
    }

    fn spawn(&mut self) {
        let deadline = Instant::now() + STARTING;
        loop {
            let mut command = Command::new(self.bin.join("postgres"));
            command
                .arg("-D")
                .arg(&self.data)
                .args(["-p", &self.port.to_string()])
                .args([
                    "-c",
                    "listen_addresses=127.0.0.1",
                    "-c",
                    "unix_socket_directories=",
                ])
                .args(self.settings.iter().flat_map(|s| ["-c", s.as_str()]))
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            // Killed with the thread that started it: no server outlives a test that aborts.
            // SAFETY: prctl is async-signal-safe and touches nothing of the parent's.
            unsafe {
                std::os::unix::process::CommandExt::pre_exec(&mut command, || {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    Ok(())
                });
            }
            let mut child = as_owner(&mut command, self.owner)
                .spawn()
                .expect("postgres runs");
            // Listening, or gone (a killed server's backends still hold its shared memory for
            // a moment: it refuses to start, and is started again).
            loop {
                if TcpStream::connect(("127.0.0.1", self.port)).is_ok() && self.ready() {
                    self.child = Some(child);
                    return;
                }
                if child.try_wait().unwrap().is_some() {
                    break;
                }
                assert!(Instant::now() < deadline, "postgres did not start");
                std::thread::sleep(Duration::from_millis(100));
            }
            assert!(Instant::now() < deadline, "postgres did not start");
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    /// True when the server accepts a connection (`pg_isready`).
    fn ready(&self) -> bool {
        Command::new(self.bin.join("pg_isready"))
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-q"])
            .status()
            .is_ok_and(|s| s.success())
    }

    /// SIGKILL of the postmaster (its backends follow), then a start on the same data: crash
    /// recovery replays the WAL.
    pub fn kill_and_restart(&mut self, down_for: Duration) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        std::thread::sleep(down_for);
        self.spawn();
    }

    /// Runs one statement with `psql`; its output (`None` when it failed).
    pub fn psql(&self, sql: &str) -> Option<String> {
        let out = Command::new("psql")
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "postgres",
            ])
            .args(["-d", "postgres", "-Atc", sql])
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }
}

fn as_owner(command: &mut Command, owner: Option<(u32, u32)>) -> &mut Command {
    if let Some((uid, gid)) = owner {
        std::os::unix::process::CommandExt::gid(command, gid);
        std::os::unix::process::CommandExt::uid(command, uid);
    }
    command
}

impl Drop for PgProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
