//! Running the real `chorus` binary from the repository root, for the CLI tests.
// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};

/// Runs `chorus ARGS` in the repository root with `stdin` on its standard input.
pub fn chorus(args: &[&str], stdin: &str) -> Output {
    spawn(args, stdin).wait_with_output().unwrap()
}

/// Starts `chorus ARGS` in the repository root, writes `stdin` to it and closes it.
pub fn spawn(args: &[&str], stdin: &str) -> Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_chorus"))
        .args(args)
        .current_dir(repo())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A command that exits before reading (usage errors) closes the pipe: that is not a failure.
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    child
}

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Standard output as text.
pub fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// Standard error as text.
pub fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

/// The exit code.
pub fn code(output: &Output) -> i32 {
    output.status.code().expect("exited")
}

/// A `chorus serve` child on a free port of 127.0.0.1, killed when dropped (also when a test
/// fails before stopping it).
pub struct Served {
    /// The process.
    pub child: std::process::Child,
    /// `host:port` it listens on.
    pub addr: String,
    /// The line that announced the address (it also names the store).
    pub first_line: String,
    lines: Option<std::io::Lines<std::io::BufReader<std::process::ChildStdout>>>,
}

impl Served {
    /// Starts `chorus serve --listen 127.0.0.1:0 ARGS` in `dir`, its standard error going to
    /// `stderr`, and reads the address from its first line.
    pub fn start(dir: &std::path::Path, args: &[&str], stderr: Stdio) -> Served {
        Served::start_with(dir, args, stderr, |_| {})
    }

    /// [`Served::start`] with the command adjusted by `adjust` first (its environment).
    pub fn start_with(
        dir: &std::path::Path,
        args: &[&str],
        stderr: Stdio,
        adjust: impl FnOnce(&mut Command),
    ) -> Served {
        Served::launch(dir, "serve", args, stderr, adjust)
    }

    /// Starts `chorus gateway --listen 127.0.0.1:0 ARGS` in `dir` and reads its address.
    pub fn gateway(dir: &std::path::Path, args: &[&str]) -> Served {
        Served::launch(dir, "gateway", args, Stdio::inherit(), |_| {})
    }

    fn launch(
        dir: &std::path::Path,
        subcommand: &str,
        args: &[&str],
        stderr: Stdio,
        adjust: impl FnOnce(&mut Command),
    ) -> Served {
        use std::io::BufRead;
        let mut command = Command::new(env!("CARGO_BIN_EXE_chorus"));
        command
            .args([subcommand, "--listen", "127.0.0.1:0"])
            .args(args)
            .current_dir(dir)
            .stdout(Stdio::piped())
            .stderr(stderr);
        adjust(&mut command);
        let mut child = command.spawn().unwrap();
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let first_line = lines
            .next()
            .expect("an address line (is the store reachable?)")
            .unwrap();
        let addr = first_line
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("no address in {first_line:?}"))
            .to_owned();
        Served {
            child,
            addr,
            first_line,
            lines: Some(lines),
        }
    }

    /// The next line of standard output.
    pub fn next_line(&mut self) -> String {
        let lines = self.lines.as_mut().expect("output still read here");
        lines.next().expect("another output line").unwrap()
    }

    /// The admin token printed on the next line (its last word).
    pub fn admin_token(&mut self) -> String {
        let line = self.next_line();
        line.rsplit(' ').next().unwrap().to_owned()
    }

    /// Keeps reading standard output in the background: a closed pipe would end the server at
    /// its next line.
    pub fn keep_reading(&mut self) {
        if let Some(lines) = self.lines.take() {
            std::thread::spawn(move || lines.for_each(drop));
        }
    }

    /// Sends SIGTERM and waits up to 10 s for the process to end; its exit status.
    pub fn stop(&mut self) -> std::process::ExitStatus {
        let killed = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "chorus did not stop on SIGTERM"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends one HTTP/1.1 request to `addr` and returns the whole answer.
pub fn http(addr: &str, request: &str) -> String {
    use std::io::Read;
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

/// One HTTP request with an optional JSON body; the status and the body of the answer.
pub fn request(
    addr: &str,
    method: &str,
    path: &str,
    token: &str,
    body: Option<&serde_json::Value>,
) -> (u16, String) {
    let body = body.map(serde_json::Value::to_string).unwrap_or_default();
    let answer = http(
        addr,
        &format!(
            "{method} {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    );
    let status = answer[9..12].parse().unwrap();
    let body = answer
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    (status, body)
}

/// True when every program in `programs` runs (`PROGRAM --version`). Otherwise prints
/// "not run: …" to standard error and returns false, or fails when `CHORUS_TEST_CLIENTS` is set
/// (as `.ci/run` does): the example clients must then run.
pub fn have_programs(what: &str, programs: &[&str]) -> bool {
    for program in programs {
        let runs = Command::new(program)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !runs {
            let why = format!("{what} needs `{program}`, which does not run here");
            assert!(
                std::env::var_os("CHORUS_TEST_CLIENTS").is_none(),
                "{why} (CHORUS_TEST_CLIENTS is set)"
            );
            eprintln!("not run: {why}");
            return false;
        }
    }
    true
}

/// A `chorus serve` on a free port with an in-memory store and the example clients' two-agent
/// config (`examples/clients/chorus.toml`), its output read in the background.
pub fn serve_examples_config(dir: &std::path::Path) -> Served {
    serve_memory(dir, &repo().join("examples/clients/chorus.toml"))
}

/// A `chorus serve` on a free port with an in-memory store and the config at `config`, its
/// output read in the background.
pub fn serve_memory(dir: &std::path::Path, config: &std::path::Path) -> Served {
    let mut served = Served::start(
        dir,
        &["--store", "memory", "--config", config.to_str().unwrap()],
        Stdio::null(),
    );
    served.keep_reading();
    served
}

/// The Python of `CHORUS_TEST_PYTHON` when it can `import` what `imports` names; `None` (after
/// saying "not run") when the variable is unset; a failure when it cannot import it.
pub fn python_with(what: &str, imports: &str) -> Option<PathBuf> {
    let Some(python) = std::env::var_os("CHORUS_TEST_PYTHON") else {
        // Straight to stderr: the test harness would hide eprintln! of a passing test.
        let _ = writeln!(
            std::io::stderr(),
            "\n*** not run: CHORUS_TEST_PYTHON is not set (the client is {what}) ***\n"
        );
        return None;
    };
    let imported = Command::new(&python)
        .args(["-c", &format!("import {imports}")])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        imported,
        "CHORUS_TEST_PYTHON={} cannot import {imports} ({what}); install it: pip install -r .ci/python-oracles.txt",
        python.to_string_lossy()
    );
    Some(PathBuf::from(python))
}
