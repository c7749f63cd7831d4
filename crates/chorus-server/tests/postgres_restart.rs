//! On PostgreSQL, `chorus serve` keeps serving through what managed databases and their
//! operators do: every connection terminated by the server (`pg_terminate_backend`, as an idle
//! timeout, a proxy or a failover does), and a `kill -9` of PostgreSQL with a restart (crash
//! recovery) while publishers are sending. Each time the hub recovers by itself: while the
//! database is down, publishes get a prompt 503 with `Retry-After` and `/healthz` says so; an
//! open inbox stream waits and goes on; every message answered 201 is delivered, none
//! acknowledged with 204 comes again.
//!
//! Also: TLS to the database, the server's certificate verified against `sslrootcert`.
//!
//! Runs its own PostgreSQL (`initdb` and `postgres` of `pg_config --bindir`, as the `postgres`
//! user when run as root) on a free port of 127.0.0.1: the shared server must not be killed.
//! Tested when CHORUS_TEST_POSTGRES_URL is set; then missing server programs fail the test.

#[cfg(feature = "postgres")]
mod common;

#[cfg(not(feature = "postgres"))]
#[test]
fn postgres_not_built() {
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "\n*** PostgreSQL restart NOT tested: built without cargo feature `postgres` ***\n"
    );
}

#[cfg(feature = "postgres")]
mod restart {
    use std::collections::BTreeSet;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use super::common::pg_process::PgProcess;
    use super::common::recovery::*;
    use super::common::redis_process::free_port;
    use super::common::*;
    use chorus_server::Store;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_hub_recovers_by_itself_from_terminated_connections_and_a_restart_under_load() {
        let Some(_) = server_url(
            "PostgreSQL restart",
            "PostgreSQL",
            "CHORUS_TEST_POSTGRES_URL",
        ) else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let mut pg = PgProcess::start(dir.path(), free_port());
        let config = config(30);
        let bus = Store::parse(&pg.url)
            .unwrap()
            .open(&config)
            .await
            .expect("the test's PostgreSQL is served");
        let server = Arc::new(TestServer::start_on(bus, &config).await);
        let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
        let (mut sent, mut acked) = (BTreeSet::new(), BTreeSet::new());

        assert_eq!(publish_until_accepted(&server, "before").await.refused, 0);
        sent.insert("before".to_owned());
        read_and_ack(&server, &mut inbox, &sent, &mut acked).await;

        // 1. Every connection of the hub terminated by the server.
        let cut = pg
            .psql(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                 WHERE application_name = 'chorus'",
            )
            .unwrap();
        assert_ne!(cut, "0", "the hub's connections were there to terminate");
        let after_cut = publish_until_accepted(&server, "after-terminate").await;
        sent.insert("after-terminate".to_owned());
        read_and_ack(&server, &mut inbox, &sent, &mut acked).await;
        eprintln!(
            "pg_terminate_backend: {} refused, served again after {:?}",
            after_cut.refused, after_cut.took
        );

        // 2. kill -9 and restart while four publishers send (each id until accepted).
        let accepted = Arc::new(Mutex::new(BTreeSet::new()));
        let publishers: Vec<_> = (0..4)
            .map(|p| {
                let (server, accepted) = (server.clone(), accepted.clone());
                tokio::spawn(async move {
                    let mut refusals = 0;
                    for i in 0..60 {
                        let id = format!("load-{p}-{i}");
                        refusals += publish_until_accepted(&server, &id).await.refused;
                        accepted.lock().unwrap().insert(id);
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    refusals
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(400)).await;
        let before_kill = accepted.lock().unwrap().len();
        let killed_at = Instant::now();
        let (pg_back, health_down) = {
            let down = tokio::task::spawn_blocking(move || {
                pg.kill_and_restart(Duration::from_secs(2));
                pg
            });
            // While it is down: /healthz names the store.
            tokio::time::sleep(Duration::from_millis(700)).await;
            let health = health(&server).await;
            (down.await.unwrap(), health)
        };
        pg = pg_back;
        let restarted_after = killed_at.elapsed();
        let mut refusals = 0;
        for p in publishers {
            refusals += p.await.unwrap();
        }
        let accepted = accepted.lock().unwrap().clone();
        assert_eq!(accepted.len(), 240);
        assert_eq!(
            health_down.0, 503,
            "/healthz with the database away: {}",
            health_down.1
        );
        assert!(
            health_down.1.contains("postgres"),
            "/healthz names the store: {}",
            health_down.1
        );
        assert!(
            refusals > 0,
            "the publishers met the restart ({before_kill} accepted before it)"
        );
        let deadline = Instant::now() + RECOVERY;
        while health(&server).await.0 != 200 {
            assert!(Instant::now() < deadline, "/healthz stays unhealthy");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        sent.extend(accepted);
        // The stream opened before all of this is still the one that reads.
        read_and_ack(&server, &mut inbox, &sent, &mut acked).await;
        inbox
            .assert_quiet(Duration::from_millis(700), "nothing comes twice")
            .await;
        assert_eq!(acked, sent);
        eprintln!(
            "kill -9 and restart under load: 240 publishes, {refusals} refused (503) while it \
             was away, database back {restarted_after:?} after the kill; every one delivered, \
             none again after its 204"
        );
        drop(inbox);
        match Arc::try_unwrap(server) {
            Ok(server) => server.stop().await,
            Err(_) => panic!("the publishers still hold the server"),
        }
        drop(pg);
    }

    /// `sslmode=require` with `sslrootcert`: the connection is TLS (the server's own view,
    /// `pg_stat_ssl`); without the root (the web's roots only), the test certificate is refused
    /// and the error says why.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tls_to_the_database_is_verified() {
        let Some(_) = server_url(
            "PostgreSQL over TLS",
            "PostgreSQL",
            "CHORUS_TEST_POSTGRES_URL",
        ) else {
            return;
        };
        let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tls");
        let dir = tempfile::tempdir().unwrap();
        let pg = PgProcess::start_tls(
            dir.path(),
            free_port(),
            &fixtures.join("test-only-cert.pem"),
            &fixtures.join("test-only-key.pem"),
        );
        let verified = format!(
            "{}?sslmode=require&sslrootcert={}&application_name=chorus_tls",
            pg.url,
            fixtures.join("test-only-ca.pem").display()
        );
        let config = config(30);
        let bus = Store::parse(&verified)
            .unwrap()
            .open(&config)
            .await
            .expect("served over TLS with the test CA");
        bus.probe_write().await.expect("a write over TLS");
        let ssl = pg
            .psql(
                "SELECT bool_and(s.ssl) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
                 WHERE a.application_name = 'chorus_tls'",
            )
            .unwrap();
        assert_eq!(ssl, "t", "every connection of the bus is TLS");
        drop(bus);
        let unverified = format!("{}?sslmode=require", pg.url);
        let err = Store::parse(&unverified)
            .unwrap()
            .open(&config)
            .await
            .err()
            .expect("a certificate no web root signed is refused")
            .to_string();
        assert!(err.to_lowercase().contains("certificate"), "{err}");
    }
}
