//! The tower-http layers: request ids, the request timeout (never on the event streams), and
//! CORS (off by default, on for the configured origins).

mod common;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use chorus_server::ServerConfig;
use common::{
    ADMIN, ALICE, BOB, PATIENCE, SseReader, TestServer, client, config, db, message, publish,
};

async fn start(config: &ServerConfig) -> (tempfile::TempDir, TestServer) {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(&db(dir.path()), config).await;
    (dir, server)
}

#[tokio::test]
async fn every_answer_carries_a_request_id_kept_from_the_caller_or_made() {
    let (_dir, server) = start(&config(30)).await;
    let given = client()
        .get(server.url("/healthz"))
        .header("x-request-id", "trace-me-42")
        .send()
        .await
        .unwrap();
    assert_eq!(given.headers()["x-request-id"], "trace-me-42");
    let mut made = Vec::new();
    for path in ["/healthz", "/no/such/route"] {
        let answer = client().get(server.url(path)).send().await.unwrap();
        let id = answer.headers()["x-request-id"]
            .to_str()
            .unwrap()
            .to_owned();
        assert_eq!(
            uuid::Uuid::parse_str(&id).map(|u| u.get_version_num()),
            Ok(4),
            "{id}"
        );
        made.push(id);
    }
    assert_ne!(made[0], made[1], "a new id per request");
    server.stop().await;
}

#[tokio::test]
async fn a_request_slower_than_the_timeout_is_cut_but_an_open_inbox_stream_lives_on() {
    let mut config = config(30);
    config.request_timeout_secs = 1;
    let (_dir, server) = start(&config).await;
    let mut inbox = SseReader::open(&server, "bob", BOB, None).await;

    // A publish whose body trickles in slower than the limit.
    let addr = server.base.trim_start_matches("http://").to_owned();
    let started = Instant::now();
    let answer = tokio::task::spawn_blocking(move || {
        let mut tcp = std::net::TcpStream::connect(addr).unwrap();
        tcp.set_read_timeout(Some(PATIENCE)).unwrap();
        let head = format!(
            "POST /v1/messages HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {ALICE}\r\n\
             content-type: application/json\r\ncontent-length: 200\r\n\r\n{{\"role\""
        );
        tcp.write_all(head.as_bytes()).unwrap();
        let mut answer = String::new();
        let _ = tcp.read_to_string(&mut answer);
        answer
    })
    .await
    .unwrap();
    // The body's own deadline (nine tenths of the request timeout) answers first: 408.
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("body_timeout"), "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("x-request-id"),
        "{answer}"
    );
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(850) && waited < Duration::from_secs(5),
        "{waited:?}"
    );

    // The inbox stream opened before is older than the limit by now and still delivers.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let sent = publish(
        &server,
        ALICE,
        &message("late-1", "alice", "bob", "still there?"),
    )
    .await;
    assert_eq!(sent.status(), 201);
    let event = inbox
        .next_within(PATIENCE)
        .await
        .expect("a delivery on the old stream");
    assert_eq!(event.json()["message_id"], "late-1");
    server.stop().await;
}

/// A CORS preflight for `POST /v1/messages` from `origin`.
async fn preflight(server: &TestServer, origin: &str) -> reqwest::Response {
    client()
        .request(reqwest::Method::OPTIONS, server.url("/v1/messages"))
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "authorization, content-type",
        )
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn cors_is_off_by_default_and_on_for_the_configured_origins() {
    let (_dir, off) = start(&config(30)).await;
    let answer = preflight(&off, "https://app.example.com").await;
    assert!(
        answer
            .headers()
            .get("access-control-allow-origin")
            .is_none()
    );
    off.stop().await;

    let mut on = config(30);
    on.cors.allow_origins = vec!["https://app.example.com".into()];
    on.cors.max_age_secs = Some(600);
    let (_dir, server) = start(&on).await;
    let answer = preflight(&server, "https://app.example.com").await;
    assert!(answer.status().is_success(), "{}", answer.status());
    let headers = answer.headers();
    assert_eq!(
        headers["access-control-allow-origin"],
        "https://app.example.com"
    );
    let allowed = headers["access-control-allow-headers"]
        .to_str()
        .unwrap()
        .to_ascii_lowercase();
    assert!(
        allowed.contains("authorization") && allowed.contains("content-type"),
        "{allowed}"
    );
    assert!(
        headers["access-control-allow-methods"]
            .to_str()
            .unwrap()
            .contains("POST")
    );
    assert_eq!(headers["access-control-max-age"], "600");
    let other = preflight(&server, "https://evil.example.net").await;
    assert!(other.headers().get("access-control-allow-origin").is_none());
    // A real request from the origin sees the request id.
    let get = client()
        .get(server.url("/healthz"))
        .header("origin", "https://app.example.com")
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    assert_eq!(
        get.headers()["access-control-allow-origin"],
        "https://app.example.com"
    );
    let exposed = get.headers()["access-control-expose-headers"]
        .to_str()
        .unwrap();
    assert!(exposed.contains("x-request-id"), "{exposed}");
    server.stop().await;
}

#[test]
fn bad_cors_origins_are_refused_with_their_key() {
    for (origins, key) in [
        (vec!["app.example.com"], "cors.allow_origins[0]"),
        (
            vec!["https://a.example.com", "https://b.example.com/path"],
            "cors.allow_origins[1]",
        ),
        (vec!["*", "https://a.example.com"], "`*`"),
    ] {
        let mut config = ServerConfig::default();
        config.cors.allow_origins = origins.iter().map(|o| o.to_string()).collect();
        let error = config.check().unwrap_err().to_string();
        assert!(error.contains(key), "{origins:?}: {error}");
    }
    let mut fine = ServerConfig::default();
    fine.cors.allow_origins = vec![
        "http://localhost:5173".into(),
        "https://app.example.com".into(),
    ];
    assert!(fine.check().is_ok());
}
