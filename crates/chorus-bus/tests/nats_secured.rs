//! chorus on a `nats-server` that demands what production ones do: TLS with a certificate of a
//! private CA, and credentials (a user and password in the store address, a token or an NKey
//! seed read from a file, a `.creds` file on a server in operator mode). With the right ones a
//! message goes through; with a wrong password, a wrong token or seed, no credentials, a stolen
//! or foreign `.creds` or a CA that does not sign the server's certificate, opening the store
//! fails within a bounded time with an error that says why, and never hangs.
//! The servers are started by this test on free loopback ports (with this repository's
//! test-only certificates) when CHORUS_TEST_NATS_URL is set; without it the test says it was
//! not run.

#[cfg(feature = "nats")]
mod nats_cluster;

#[cfg(feature = "nats")]
mod secured {
    use std::net::TcpStream;
    use std::path::{Path, PathBuf};
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant};

    use chorus_bus::{BusConfig, Envelope, StoreAddress};

    use super::nats_cluster::{free_port, server_binary};

    /// How long opening a store may take before the test calls it a hang.
    const OPEN_LIMIT: Duration = Duration::from_secs(30);

    pub(crate) fn fixtures() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../chorus-server/tests/tls")
    }

    /// A `nats-server` with JetStream, TLS and `authorization` (a block of its config file),
    /// killed when dropped.
    pub(crate) struct Server {
        child: Child,
        pub(crate) port: u16,
        _dir: tempfile::TempDir,
    }

    impl Server {
        pub(crate) fn start(authorization: &str) -> Server {
            Server::start_with(&format!("authorization {{ {authorization} }}"))
        }

        /// A server whose config ends with `security` (an `authorization` block, or the
        /// `operator` and `resolver` lines of JWT authentication).
        pub(crate) fn start_with(security: &str) -> Server {
            let dir = tempfile::tempdir().unwrap();
            let port = free_port();
            let tls = fixtures();
            let config = format!(
                "listen: 127.0.0.1:{port}\n\
                 jetstream {{ store_dir: {:?} }}\n\
                 tls {{ cert_file: {:?}, key_file: {:?}, timeout: 2 }}\n\
                 {security}\n",
                dir.path().join("js"),
                tls.join("test-only-cert.pem"),
                tls.join("test-only-key.pem"),
            );
            let file = dir.path().join("nats.conf");
            std::fs::write(&file, config).unwrap();
            let binary = server_binary();
            let log = dir.path().join("nats.log");
            let mut child = Command::new(&binary)
                .arg("-c")
                .arg(&file)
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&log).unwrap())
                .spawn()
                .unwrap_or_else(|e| panic!("{binary} starts (CHORUS_TEST_NATS_URL is set): {e}"));
            let deadline = Instant::now() + Duration::from_secs(10);
            while TcpStream::connect(("127.0.0.1", port)).is_err() {
                let exited = child.try_wait().unwrap().is_some();
                if exited || Instant::now() > deadline {
                    let said = std::fs::read_to_string(&log).unwrap_or_default();
                    panic!("nats-server does not listen on {port} (exited: {exited}): {said}");
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            Server {
                child,
                port,
                _dir: dir,
            }
        }
    }

    impl Drop for Server {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    fn quick() -> BusConfig {
        BusConfig {
            ack_wait: Duration::from_secs(5),
            ..BusConfig::default()
        }
    }

    /// Opens the store at `address` within [`OPEN_LIMIT`]: its error, or a message published,
    /// received and acknowledged through it.
    pub(crate) async fn round_trip(address: &str) -> Result<(), String> {
        let opened = tokio::time::timeout(OPEN_LIMIT, async {
            StoreAddress::parse(address)
                .map_err(|e| e.to_string())?
                .open(quick())
                .await
                .map_err(|e| e.to_string())
        })
        .await
        .unwrap_or_else(|_| panic!("opening {address} hung past {OPEN_LIMIT:?}"))?;
        let document = br#"{"role": "user", "id": "m-secured", "content": "hello"}"#;
        let env = Envelope::new("m-secured", vec!["inbox".into()], document.to_vec());
        opened
            .publish_envelope(env)
            .await
            .map_err(|e| e.to_string())?;
        let got = opened
            .receive("inbox", 10, Duration::from_secs(5))
            .await
            .map_err(|e| e.to_string())?;
        assert_eq!(got.len(), 1, "the message came through");
        opened.ack(&got[0]).await.map_err(|e| e.to_string())?;
        Ok(())
    }

    /// Asserts that `address` is refused with an error containing one of `words`.
    pub(crate) async fn refused(address: &str, words: &[&str]) {
        let err = round_trip(address).await.expect_err("refused");
        let lower = err.to_lowercase();
        assert!(
            words.iter().any(|w| lower.contains(w)),
            "{address}: the error says why ({words:?}): {err}"
        );
    }

    pub(crate) fn not_run() -> bool {
        if std::env::var("CHORUS_TEST_NATS_URL").is_ok_and(|v| !v.is_empty()) {
            return false;
        }
        eprintln!(
            "\n*** NATS with TLS and credentials NOT tested: CHORUS_TEST_NATS_URL not set ***\n"
        );
        true
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_user_and_password_over_tls_with_a_private_ca() {
        if not_run() {
            return;
        }
        let server = Server::start(r#"users = [ { user: chorus, password: "pw-for-tests" } ]"#);
        let ca = fixtures().join("test-only-ca.pem");
        let at = |userinfo: &str, query: &str| {
            format!("nats://{userinfo}127.0.0.1:{}?{query}", server.port)
        };
        let trusted = format!("tls=required&tls_ca={}&namespace=secured", ca.display());
        round_trip(&at("chorus:pw-for-tests@", &trusted))
            .await
            .expect("the right password over TLS");
        refused(&at("chorus:wrong@", &trusted), &["authorization", "auth"]).await;
        refused(&at("", &trusted), &["authorization", "auth"]).await;
        // The server's certificate is not signed by any CA the client trusts.
        refused(
            &at("chorus:pw-for-tests@", "tls=required&namespace=secured"),
            &["certificate", "tls", "unknown issuer", "invalid peer"],
        )
        .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_token_read_from_a_file() {
        if not_run() {
            return;
        }
        let server = Server::start(r#"token: "token-for-tests""#);
        let dir = tempfile::tempdir().unwrap();
        let (good, bad) = (dir.path().join("good"), dir.path().join("bad"));
        std::fs::write(&good, "token-for-tests\n").unwrap();
        std::fs::write(&bad, "not-the-token").unwrap();
        let ca = fixtures().join("test-only-ca.pem");
        let at = |token: &Path| {
            format!(
                "nats://127.0.0.1:{}?tls=required&tls_ca={}&token={}&namespace=secured",
                server.port,
                ca.display(),
                token.display()
            )
        };
        round_trip(&at(&good)).await.expect("the right token");
        refused(&at(&bad), &["authorization", "auth"]).await;
    }
}

#[cfg(feature = "nats")]
mod nkey {
    use super::secured::{Server, fixtures, not_run, refused, round_trip};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_nkey_seed_read_from_a_file() {
        if not_run() {
            return;
        }
        let user = nkeys::KeyPair::new_user();
        let server = Server::start(&format!("users = [ {{ nkey: {:?} }} ]", user.public_key()));
        let dir = tempfile::tempdir().unwrap();
        let (seed, other) = (dir.path().join("seed"), dir.path().join("other"));
        std::fs::write(&seed, user.seed().unwrap()).unwrap();
        std::fs::write(&other, nkeys::KeyPair::new_user().seed().unwrap()).unwrap();
        let ca = fixtures().join("test-only-ca.pem");
        let at = |seed: &std::path::Path| {
            format!(
                "nats://127.0.0.1:{}?tls=required&tls_ca={}&nkey={}&namespace=secured",
                server.port,
                ca.display(),
                seed.display()
            )
        };
        round_trip(&at(&seed)).await.expect("the user's seed");
        refused(&at(&other), &["authorization", "auth"]).await;
    }
}

#[cfg(feature = "nats")]
mod creds {
    //! A `.creds` file (a user's JWT and its NKey seed) on a server in operator mode: the
    //! decentralized authentication of NATS, where the server trusts an operator's key, knows the
    //! account from the account's JWT (a memory resolver preloaded with it), and lets in a user
    //! whose JWT that account signed and who proves it holds the user's seed.

    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use nkeys::KeyPair;
    use serde_json::{Value, json};

    use super::secured::{Server, fixtures, not_run, refused, round_trip};

    /// A JWT of NATS's v2 claims about `subject`, signed by `issuer` with ed25519 over
    /// `header.claims`, as nats-server checks it. Written here: no maintained Rust crate issues
    /// NATS JWTs (`nsc`, the Go tool for it, is not on this machine or in Debian).
    fn jwt(issuer: &KeyPair, subject: &str, name: &str, nats: Value) -> String {
        let part = |v: Value| URL_SAFE_NO_PAD.encode(v.to_string());
        let claims = json!({
            "jti": uuid::Uuid::new_v4().simple().to_string().to_uppercase(),
            "iat": std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs(),
            "iss": issuer.public_key(),
            "sub": subject,
            "name": name,
            "nats": nats,
        });
        let signed = format!(
            "{}.{}",
            part(json!({"typ": "JWT", "alg": "ed25519-nkey"})),
            part(claims)
        );
        let signature = issuer.sign(signed.as_bytes()).unwrap();
        format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature))
    }

    /// The JWT of an account with no limit, signed by `operator`; with JetStream when
    /// `jetstream` (the system account may not have it).
    fn account_jwt(operator: &KeyPair, account: &KeyPair, jetstream: bool) -> String {
        let storage = if jetstream { -1 } else { 0 };
        let unlimited = json!({
            "subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1,
            "wildcards": true, "conn": -1, "leaf": -1,
            "mem_storage": storage, "disk_storage": storage, "streams": storage,
            "consumer": storage,
        });
        let nats = json!({"limits": unlimited, "type": "account", "version": 2});
        jwt(operator, &account.public_key(), "chorus-account", nats)
    }

    /// A `.creds` file's text: `user`'s JWT signed by `account`, and the seed `seed_of` holds.
    fn creds(account: &KeyPair, user: &KeyPair, seed_of: &KeyPair) -> String {
        let nats = json!({
            "pub": {}, "sub": {}, "subs": -1, "data": -1, "payload": -1,
            "type": "user", "version": 2,
        });
        let token = jwt(account, &user.public_key(), "chorus-user", nats);
        format!(
            "-----BEGIN NATS USER JWT-----\n{token}\n------END NATS USER JWT------\n\n\
             -----BEGIN USER NKEY SEED-----\n{}\n------END USER NKEY SEED------\n",
            seed_of.seed().unwrap()
        )
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_creds_file_on_a_server_in_operator_mode() {
        if not_run() {
            return;
        }
        let (operator, account, user) = (
            KeyPair::new_operator(),
            KeyPair::new_account(),
            KeyPair::new_user(),
        );
        let operator_jwt = jwt(
            &operator,
            &operator.public_key(),
            "chorus-operator",
            json!({"type": "operator", "version": 2}),
        );
        // JetStream in operator mode needs a system account for its internal subscriptions.
        let system = KeyPair::new_account();
        let server = Server::start_with(&format!(
            "operator: {operator_jwt:?}\nsystem_account: {}\nresolver: MEMORY\n\
             resolver_preload: {{ {}: {:?}, {}: {:?} }}",
            system.public_key(),
            account.public_key(),
            account_jwt(&operator, &account, true),
            system.public_key(),
            account_jwt(&operator, &system, false),
        ));
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, text: String| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let good = file("good.creds", creds(&account, &user, &user));
        // The JWT is the user's, the seed another user's: the server's nonce is signed with a
        // key the JWT does not name.
        let stolen = file("stolen.creds", creds(&account, &user, &KeyPair::new_user()));
        // A user of an account the server does not know.
        let stranger = KeyPair::new_user();
        let foreign = file(
            "foreign.creds",
            creds(&KeyPair::new_account(), &stranger, &stranger),
        );
        let ca = fixtures().join("test-only-ca.pem");
        let at = |creds: &std::path::Path| {
            format!(
                "nats://127.0.0.1:{}?tls=required&tls_ca={}&creds={}&namespace=secured",
                server.port,
                ca.display(),
                creds.display()
            )
        };
        round_trip(&at(&good))
            .await
            .expect("the user's .creds file");
        refused(&at(&stolen), &["authorization", "auth"]).await;
        refused(&at(&foreign), &["authorization", "auth"]).await;
        let missing = dir.path().join("missing.creds");
        refused(&at(&missing), &["missing.creds", "no such file", "creds"]).await;
    }
}

#[cfg(not(feature = "nats"))]
#[test]
fn nats_secured_not_built() {
    eprintln!("\n*** NATS with TLS and credentials NOT tested: built without feature `nats` ***\n");
}
