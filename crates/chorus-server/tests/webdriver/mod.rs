//! A small W3C WebDriver client over reqwest: chromedriver on a free 127.0.0.1 port driving a
//! headless Debian chromium with a fresh profile. Every wait is bounded.

// Each browser test file uses a part of these.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

/// The key W3C WebDriver names element references with.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";
/// The longest a browser test waits for the page to show something.
pub const SHOW: Duration = Duration::from_secs(10);

/// Browsers are launched one at a time (2 cores are shared with the rest of the tests).
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn program(env: &str, default: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(std::env::var(env).unwrap_or_else(|_| default.to_owned()));
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "{} not found (set {env} or `apt-get install -y chromium chromium-driver`)",
            path.display()
        ))
    }
}

/// A running chromedriver with one chromium session; both end when it is dropped.
pub struct Browser {
    http: reqwest::Client,
    session: String,
    driver: Child,
    _profile: tempfile::TempDir,
    _turn: tokio::sync::MutexGuard<'static, ()>,
}

impl Browser {
    /// A browser, or None when chromium or chromedriver is missing and `CHORUS_TEST_BROWSER` is
    /// unset (then "browser tests NOT run: <reason>" goes to standard error). With
    /// `CHORUS_TEST_BROWSER` set, a missing browser fails the test.
    pub async fn launch() -> Option<Browser> {
        let found = program("CHORUS_CHROMIUM", "/usr/bin/chromium")
            .and_then(|c| Ok((c, program("CHORUS_CHROMEDRIVER", "/usr/bin/chromedriver")?)));
        let (chromium, chromedriver) = match found {
            Ok(paths) => paths,
            Err(reason) if std::env::var_os("CHORUS_TEST_BROWSER").is_some() => {
                panic!("CHORUS_TEST_BROWSER is set but {reason}")
            }
            Err(reason) => {
                // Straight to the process's stderr: the test harness would swallow eprintln!.
                use std::io::Write;
                let _ = writeln!(std::io::stderr(), "browser tests NOT run: {reason}");
                return None;
            }
        };
        let turn = ONE_AT_A_TIME.lock().await;
        Some(Browser::start(&chromium, &chromedriver, turn).await)
    }

    async fn start(
        chromium: &Path,
        chromedriver: &Path,
        turn: tokio::sync::MutexGuard<'static, ()>,
    ) -> Browser {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let driver = Command::new(chromedriver)
            .args([format!("--port={port}"), "--allowed-ips=127.0.0.1".into()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let profile = tempfile::tempdir().expect("profile folder");
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .expect("client");
        let base = format!("http://127.0.0.1:{port}");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while !matches!(http.get(format!("{base}/status")).send().await, Ok(r) if r.status().is_success())
        {
            assert!(
                tokio::time::Instant::now() < deadline,
                "chromedriver did not answer within 20 s"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--window-size=1200,900",
        ];
        let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        args.push(format!("--user-data-dir={}", profile.path().display()));
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args},
            "timeouts": {"implicit": 0, "pageLoad": 20000, "script": 10000},
        }}});
        let answer: Value = http
            .post(format!("{base}/session"))
            .json(&caps)
            .send()
            .await
            .expect("new session request")
            .json()
            .await
            .expect("new session answer");
        let session = answer["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {answer}"))
            .to_owned();
        Browser {
            http,
            session: format!("{base}/session/{session}"),
            driver,
            _profile: profile,
            _turn: turn,
        }
    }

    async fn try_call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, String> {
        let mut request = self.http.request(method, format!("{}{path}", self.session));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let answer: Value = request
            .send()
            .await
            .expect("webdriver request")
            .json()
            .await
            .expect("webdriver answer");
        match answer["value"]["error"].as_str() {
            Some(error) => Err(format!(
                "webdriver {path}: {error}: {}",
                answer["value"]["message"]
            )),
            None => Ok(answer["value"].clone()),
        }
    }

    /// Opens `url` and waits for it to load.
    pub async fn goto(&self, url: &str) {
        let done = self.try_call(reqwest::Method::POST, "/url", Some(json!({"url": url})));
        done.await.unwrap_or_else(|e| panic!("{e}"));
    }

    /// Runs `script` (a function body; its arguments are `args`) in the page; what it returns.
    pub async fn run_with(&self, script: &str, args: Value) -> Value {
        let body = json!({"script": script, "args": args});
        let done = self.try_call(reqwest::Method::POST, "/execute/sync", Some(body));
        done.await.unwrap_or_else(|e| panic!("{e}"))
    }

    /// Runs `script` (a function body) in the page and returns what it returns.
    pub async fn run(&self, script: &str) -> Value {
        self.run_with(script, json!([])).await
    }

    /// The text a person sees (`innerText`: folded content is not in it) of every element
    /// matching the CSS selector, read at one instant.
    pub async fn texts(&self, css: &str) -> Vec<String> {
        let script = "return [...document.querySelectorAll(arguments[0])].map(e => e.innerText ?? e.textContent)";
        let found = self.run_with(script, json!([css])).await;
        let texts = found
            .as_array()
            .map(|a| a.iter().map(|t| t.as_str().unwrap_or_default().to_owned()));
        texts.map(Iterator::collect).unwrap_or_default()
    }

    /// Sets the page's `prefers-color-scheme` to `scheme` (`light` or `dark`), as the system
    /// setting would (Chrome DevTools `Emulation.setEmulatedMedia` through chromedriver).
    pub async fn color_scheme(&self, scheme: &str) {
        let body = json!({"cmd": "Emulation.setEmulatedMedia", "params": {
            "features": [{"name": "prefers-color-scheme", "value": scheme}]}});
        let done = self.try_call(reqwest::Method::POST, "/goog/cdp/execute", Some(body));
        done.await.unwrap_or_else(|e| panic!("{e}"));
    }

    /// Writes a PNG of the whole page (beyond the window's height) to `path`.
    pub async fn screenshot(&self, path: &Path) {
        use base64::Engine as _;
        let size = self
            .run("return [document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            .await;
        let (width, height) = (
            size[0].as_u64().unwrap_or(1200),
            size[1].as_u64().unwrap_or(900),
        );
        let body = json!({"cmd": "Page.captureScreenshot", "params": {"format": "png",
            "captureBeyondViewport": true,
            "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}}});
        let done = self.try_call(reqwest::Method::POST, "/goog/cdp/execute", Some(body));
        let shot = done.await.unwrap_or_else(|e| panic!("{e}"));
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().expect("screenshot data"))
            .expect("screenshot base64");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("screenshot folder");
        }
        std::fs::write(path, png).expect("screenshot written");
    }

    /// How many elements match the CSS selector now.
    pub async fn count(&self, css: &str) -> usize {
        let found = self.run_with(
            "return document.querySelectorAll(arguments[0]).length",
            json!([css]),
        );
        found.await.as_u64().unwrap_or_default() as usize
    }

    /// The text of the first element matching `css` that shows `needle`, waiting up to
    /// [`SHOW`]; fails the test with what was seen instead.
    pub async fn shown(&self, css: &str, needle: &str) -> String {
        let deadline = tokio::time::Instant::now() + SHOW;
        loop {
            let seen = self.texts(css).await;
            if let Some(text) = seen.iter().find(|t| t.contains(needle)) {
                return text.clone();
            }
            if tokio::time::Instant::now() >= deadline {
                let page = self
                    .run("return document.body ? document.body.innerText : ''")
                    .await;
                panic!(
                    "no `{css}` showing {needle:?} within {SHOW:?}; seen: {seen:?}; page: {page}"
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits up to [`SHOW`] until no element matching `css` shows `needle`.
    pub async fn gone(&self, css: &str, needle: &str) {
        let deadline = tokio::time::Instant::now() + SHOW;
        while self.texts(css).await.iter().any(|t| t.contains(needle)) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "`{css}` still shows {needle:?} after {SHOW:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Does `action` (a WebDriver element command with `body`) on the first element matching
    /// `css`, finding it again when the page re-drew it meanwhile; bounded by [`SHOW`].
    async fn act(&self, css: &str, action: &str, body: Value) {
        let deadline = tokio::time::Instant::now() + SHOW;
        loop {
            let find = json!({"using": "css selector", "value": css});
            let found = self
                .try_call(reqwest::Method::POST, "/element", Some(find))
                .await;
            let outcome = match found.map(|v| v[ELEMENT].as_str().map(str::to_owned)) {
                Ok(Some(id)) => {
                    let path = format!("/element/{id}/{action}");
                    self.try_call(reqwest::Method::POST, &path, Some(body.clone()))
                        .await
                        .map(drop)
                }
                Ok(None) => Err("no element reference".to_owned()),
                Err(e) => Err(e),
            };
            match outcome {
                Ok(()) => return,
                Err(e) if tokio::time::Instant::now() >= deadline => {
                    panic!("`{css}` {action}: {e}")
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }

    /// Clicks the first element matching `css`.
    pub async fn click(&self, css: &str) {
        self.act(css, "click", json!({})).await;
    }

    /// Types `text` into the first element matching `css`.
    pub async fn type_in(&self, css: &str, text: &str) {
        self.act(css, "value", json!({"text": text})).await;
    }

    /// Opens the UI at `base` and gives it the admin token through the token form.
    pub async fn sign_in(&self, base: &str, token: &str) {
        self.goto(&format!("{base}/")).await;
        self.shown("#token-form", "Admin token").await;
        self.type_in("#token", token).await;
        self.click("#token-form button").await;
    }
}

impl Drop for Browser {
    /// Ends the session (chromium quits with it), then the driver; bounded, also on a panic.
    fn drop(&mut self) {
        let url = self.session.trim_start_matches("http://");
        if let Some((host, path)) = url.split_once('/')
            && let Ok(addr) = host.parse::<std::net::SocketAddr>()
            && let Ok(mut stream) =
                std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        {
            use std::io::{Read, Write};
            let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
            let request = format!(
                "DELETE /{path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            if stream.write_all(request.as_bytes()).is_ok() {
                // chromedriver keeps the connection open: read up to the end of the answer.
                let mut answer = Vec::new();
                let mut chunk = [0u8; 4096];
                while let Ok(n @ 1..) = stream.read(&mut chunk) {
                    answer.extend_from_slice(&chunk[..n]);
                    if answered(&answer) {
                        break;
                    }
                }
            }
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// Whether `bytes` hold a whole HTTP answer (headers and a `Content-Length` body).
fn answered(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return false;
    };
    let length = head.lines().find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.eq_ignore_ascii_case("content-length")
            .then(|| value.trim().parse::<usize>().ok())?
    });
    length.is_some_and(|n| body.len() >= n)
}
