//! The conformance suite on PostgreSQL (feature `postgres`; database URL in
//! CHORUS_TEST_POSTGRES_URL), and what only this store promises: migrations that replicas run
//! together, a newer schema refused, the effect and its ack in one transaction.

mod conformance;

server_conformance_tests!(
    "postgres",
    PostgresBus,
    "PostgreSQL",
    "CHORUS_TEST_POSTGRES_URL",
    "postgres://postgres@127.0.0.1:5432/test"
);

#[cfg(feature = "postgres")]
mod postgres_only {
    use std::sync::Arc;
    use std::time::Duration;

    use super::conformance::{packet, server_url, uid};
    use chorus_bus::{Backend, Bus, BusConfig, BusError, PostgresBus, SCHEMA_VERSION};

    /// The database URL and a fresh namespace, or `None` (said) without the variable.
    fn database() -> Option<(String, String)> {
        let url = server_url(
            "PostgreSQL",
            "CHORUS_TEST_POSTGRES_URL",
            "postgres://postgres@127.0.0.1:5432/test",
        )?;
        Some((
            url,
            format!("chorus_test_{}", uuid::Uuid::new_v4().simple()),
        ))
    }

    /// A client of the test's own, outside chorus.
    async fn raw(url: &str) -> tokio_postgres::Client {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .expect("PostgreSQL reachable (CHORUS_TEST_POSTGRES_URL is set)");
        tokio::spawn(connection);
        client
    }

    async fn drop_schema(url: &str, ns: &str) {
        raw(url)
            .await
            .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{ns}\" CASCADE"))
            .await
            .unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn replicas_starting_together_migrate_once_and_a_newer_schema_is_refused() {
        let Some((url, ns)) = database() else { return };
        let starts = (0..6).map(|_| PostgresBus::connect(&url, &ns, BusConfig::default()));
        for bus in futures::future::join_all(starts).await {
            bus.expect("every replica starts");
        }
        let client = raw(&url).await;
        let versions: Vec<i32> = client
            .query(
                &format!("SELECT version FROM \"{ns}\".chorus_schema ORDER BY version"),
                &[],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(
            versions,
            (1..=SCHEMA_VERSION).collect::<Vec<_>>(),
            "each migration once"
        );
        client
            .execute(
                &format!("INSERT INTO \"{ns}\".chorus_schema VALUES ($1, 0)"),
                &[&(SCHEMA_VERSION + 1)],
            )
            .await
            .unwrap();
        let err = PostgresBus::connect(&url, &ns, BusConfig::default())
            .await
            .err()
            .expect("a newer schema is refused")
            .to_string();
        assert!(
            err.contains(&format!("version {}", SCHEMA_VERSION + 1)),
            "{err}"
        );
        assert!(err.contains("newer chorus"), "{err}");
        drop_schema(&url, &ns).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_publishers_of_one_id_store_it_once() {
        let Some((url, ns)) = database() else { return };
        let config = || BusConfig {
            validator: None,
            ..BusConfig::default()
        };
        let a = Arc::new(PostgresBus::connect(&url, &ns, config()).await.unwrap());
        let b = Arc::new(PostgresBus::connect(&url, &ns, config()).await.unwrap());
        let queue = uid("pg-dedupe");
        for round in 0..10 {
            let id = format!("m-{round}-{}", uid("x"));
            let doc = serde_json::to_vec(&packet(
                &id,
                serde_json::json!(queue),
                "HIGH",
                "NOTIFICATION",
            ))
            .unwrap();
            let publishes = (0..8).map(|i| {
                let bus = if i % 2 == 0 { a.clone() } else { b.clone() };
                let doc = doc.clone();
                async move { bus.publish(doc).await }
            });
            let receipts = futures::future::join_all(publishes).await;
            let fresh = receipts
                .iter()
                .filter(|r| matches!(r, Ok(r) if !r.duplicate))
                .count();
            assert_eq!(fresh, 1, "round {round}: {receipts:?}");
            assert!(receipts.iter().all(|r| r.is_ok()), "{receipts:?}");
        }
        assert_eq!(a.depth(&queue).await.unwrap(), 10);
        drop_schema(&url, &ns).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_effect_and_the_ack_commit_together() {
        let Some((url, ns)) = database() else { return };
        let config = BusConfig {
            validator: None,
            ack_wait: Duration::from_millis(300),
            ..BusConfig::default()
        };
        let bus = PostgresBus::connect(&url, &ns, config).await.unwrap();
        let queue = uid("pg-effects");
        for i in 0..2 {
            let doc = packet(
                &format!("e-{i}"),
                serde_json::json!(queue),
                "HIGH",
                "NOTIFICATION",
            );
            bus.publish(serde_json::to_vec(&doc).unwrap())
                .await
                .unwrap();
        }
        let held = bus
            .receive(&queue, 2, Duration::from_secs(2))
            .await
            .unwrap();
        assert_eq!(held.len(), 2);
        // Held: the record and the ack land together.
        assert!(
            bus.commit_once_and_ack(&held[0], "h", &held[0].envelope.id, b"one", &[])
                .await
                .unwrap()
        );
        assert_eq!(bus.depth(&queue).await.unwrap(), 1);
        // The lease ran out and another consumer holds it: the effect is kept, the ack is stale.
        tokio::time::sleep(Duration::from_millis(400)).await;
        let again = bus
            .receive(&queue, 1, Duration::from_secs(2))
            .await
            .unwrap();
        assert_eq!(again[0].envelope.id, held[1].envelope.id);
        let err = bus
            .commit_once_and_ack(&held[1], "h", &held[1].envelope.id, b"two", &[])
            .await
            .unwrap_err();
        assert!(matches!(err, BusError::StaleDelivery { .. }), "{err}");
        assert!(
            bus.already_handled("h", &held[1].envelope.id)
                .await
                .unwrap()
        );
        // The holder's own commit finds it done and settles it.
        assert!(
            !bus.commit_once_and_ack(&again[0], "h", &again[0].envelope.id, b"two", &[])
                .await
                .unwrap()
        );
        assert_eq!(bus.depth(&queue).await.unwrap(), 0);
        let records: Vec<Vec<u8>> = bus
            .effects("h")
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.record)
            .collect();
        assert_eq!(records, [b"one".to_vec(), b"two".to_vec()]);
        drop_schema(&url, &ns).await;
    }

    /// A managed database closing connections (idle timeouts, a failover's restart): every
    /// connection of the bus, the listener's too, is terminated by the server; the next
    /// operations work again without a restart, and a waiting consumer still hears a publish.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn connections_closed_by_the_server_are_made_again() {
        let Some((url, ns)) = database() else { return };
        let config = BusConfig {
            validator: None,
            ..BusConfig::default()
        };
        // Its own application name: only this bus's connections are cut, not the other tests'.
        let app = format!("chorus_{ns}");
        let own = match url.contains('?') {
            true => format!("{url}&application_name={app}"),
            false => format!("{url}?application_name={app}"),
        };
        let bus = Arc::new(PostgresBus::connect(&own, &ns, config).await.unwrap());
        let queue = uid("pg-reconnect");
        let doc = |id: &str| {
            serde_json::to_vec(&packet(
                id,
                serde_json::json!(queue),
                "HIGH",
                "NOTIFICATION",
            ))
            .unwrap()
        };
        bus.publish(doc("before")).await.unwrap();
        let killed = raw(&url)
            .await
            .query(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE application_name = $1",
                &[&app],
            )
            .await
            .unwrap()
            .len();
        assert!(
            killed >= 2,
            "the pool's and the listener's connections ({killed})"
        );
        // Each pooled connection is found closed when taken back: at most one failure a connection.
        let mut refused = 0;
        let started = std::time::Instant::now();
        loop {
            match bus.publish(doc("after")).await {
                Ok(_) => break,
                Err(e) => {
                    assert!(e.is_unavailable(), "{e}");
                    refused += 1;
                    assert!(
                        started.elapsed() < Duration::from_secs(10),
                        "still refused: {e}"
                    );
                }
            }
        }
        assert!(refused <= chorus_bus::DEFAULT_MAX_CONNECTIONS, "{refused}");
        // The listener is back within its second: a consumer waiting in another bus is woken
        // by this one's publish, long before its wait would end.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let other = PostgresBus::connect(
            &url,
            &ns,
            BusConfig {
                validator: None,
                ..BusConfig::default()
            },
        )
        .await
        .unwrap();
        let drained = bus
            .receive(&queue, 10, Duration::from_secs(1))
            .await
            .unwrap();
        assert_eq!(drained.len(), 2);
        bus.ack_all(&drained).await.unwrap();
        let waiting = tokio::spawn({
            let bus = bus.clone();
            let queue = queue.clone();
            async move {
                let t = std::time::Instant::now();
                let got = bus
                    .receive(&queue, 1, Duration::from_secs(20))
                    .await
                    .unwrap();
                (got.len(), t.elapsed())
            }
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        other.publish(doc("woken")).await.unwrap();
        let (got, waited) = waiting.await.unwrap();
        assert_eq!(got, 1);
        assert!(
            waited < Duration::from_secs(5),
            "woken by the notification, not the timeout: {waited:?}"
        );
        drop_schema(&url, &ns).await;
    }
}
