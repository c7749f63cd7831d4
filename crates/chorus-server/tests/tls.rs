//! HTTPS with rustls from PEM files: a request over TLS is served, plain HTTP is not, and bad
//! files are refused with a message naming them.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use chorus_server::tls::{TlsListener, acceptor};
use chorus_server::{Server, Store, bind};
use common::{ALICE, config, message};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/tls")
        .join(name)
}

#[tokio::test]
async fn serves_https_with_the_configured_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(30);
    let bus = Store::sqlite(dir.path().join("chorus.db"))
        .open(&config)
        .await
        .unwrap();
    let tls = acceptor(
        &fixture("test-only-cert.pem"),
        &fixture("test-only-key.pem"),
    )
    .unwrap();
    let (tcp, addr) = bind("127.0.0.1:0").await.unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(Server::new(bus, &config).serve(
        TlsListener::new(tcp, tls).unwrap(),
        async move {
            let _ = stopped.await;
        },
    ));

    let ca = std::fs::read(fixture("test-only-ca.pem")).unwrap();
    let https = reqwest::Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(&ca).unwrap())
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let health = https
        .get(format!("https://{addr}/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    // An A2A card served over TLS gives https URLs (no proxy header needed).
    let card: serde_json::Value = https
        .get(format!(
            "https://{addr}/a2a/bob/.well-known/agent-card.json"
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        card["supportedInterfaces"][0]["url"],
        format!("https://{addr}/a2a/bob")
    );
    let published = https
        .post(format!("https://{addr}/v1/messages"))
        .bearer_auth(ALICE)
        .json(&message("over-tls", "alice", "bob", "x"))
        .send()
        .await
        .unwrap();
    assert_eq!(published.status(), 201);

    let plain = common::client()
        .get(format!("http://{addr}/healthz"))
        .timeout(Duration::from_secs(10))
        .send()
        .await;
    assert!(plain.is_err(), "plain HTTP is not served: {plain:?}");

    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[test]
fn bad_files_are_refused_by_name() {
    let missing = acceptor(
        Path::new("/nonexistent/cert.pem"),
        &fixture("test-only-key.pem"),
    );
    assert!(missing.err().unwrap().contains("/nonexistent/cert.pem"));
    let swapped = acceptor(
        &fixture("test-only-key.pem"),
        &fixture("test-only-cert.pem"),
    );
    assert!(swapped.is_err());
    let wrong_pair = acceptor(&fixture("test-only-ca.pem"), &fixture("test-only-key.pem"));
    assert!(wrong_pair.err().unwrap().contains("usable pair"));
}
