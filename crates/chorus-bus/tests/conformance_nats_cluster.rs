//! The conformance suite on a three-node NATS JetStream cluster with every stream (and so every
//! consumer) replicated three times (`?replicas=3`): the guarantees hold on a cluster as on one
//! server. The cluster is started by this test binary on free loopback ports when
//! CHORUS_TEST_NATS_URL is set (then a missing `nats-server` fails the tests).

mod conformance;
#[cfg(feature = "nats")]
mod nats_cluster;

#[cfg(feature = "nats")]
mod on_cluster {
    use std::sync::{Arc, OnceLock};

    use super::conformance::{self, Fixture, server_url};
    use super::nats_cluster::Cluster;
    use chorus_bus::{Bus, NatsBus};

    /// The store address of the one cluster of this test binary, started on first use by a
    /// thread that lives as long as the process (its nodes die with it).
    fn cluster_url() -> &'static str {
        static URL: OnceLock<String> = OnceLock::new();
        URL.get_or_init(|| {
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let cluster = Cluster::start(3);
                tx.send(cluster.url(3)).unwrap();
                loop {
                    std::thread::park();
                }
            });
            rx.recv().expect("the cluster started")
        })
    }

    async fn setup() -> Option<Fixture> {
        server_url(
            "NATS cluster",
            "CHORUS_TEST_NATS_URL",
            "nats://127.0.0.1:4222",
        )?;
        let url = tokio::task::spawn_blocking(cluster_url)
            .await
            .unwrap()
            .to_owned();
        let ns = format!("chorus_test_{}", uuid::Uuid::new_v4().simple());
        let (url2, ns2) = (url.clone(), ns.clone());
        Some(Fixture {
            open: Box::new(move |config| {
                let (url, ns) = (url.clone(), ns.clone());
                Box::pin(async move {
                    let bus = NatsBus::connect(&url, &ns, config)
                        .await
                        .expect("the NATS cluster reachable");
                    Arc::new(bus) as Arc<dyn Bus>
                })
            }),
            durable: true,
            cleanup: Some(Box::new(move || {
                Box::pin(async move {
                    let bus = NatsBus::connect(&url2, &ns2, Default::default())
                        .await
                        .expect("reconnect");
                    bus.destroy().await.expect("delete the test namespace");
                })
            })),
        })
    }

    crate::conformance_tests!(setup, "NATS cluster");

    /// Three replicas are asked of a single server: refused at connect with what to do.
    #[tokio::test]
    async fn replicas_past_the_cluster_are_refused_with_what_to_do() {
        let Some(url) = server_url("NATS", "CHORUS_TEST_NATS_URL", "nats://127.0.0.1:4222") else {
            return;
        };
        let ns = format!("chorus_test_{}", uuid::Uuid::new_v4().simple());
        let e = NatsBus::connect(&format!("{url}?replicas=3"), &ns, Default::default())
            .await
            .err()
            .expect("refused")
            .to_string();
        assert!(e.contains("cannot have 3 replicas"), "{e}");
        assert!(
            e.contains("needs a JetStream cluster of at least N servers"),
            "{e}"
        );
    }
}

#[cfg(not(feature = "nats"))]
#[test]
fn backend_not_built() {
    conformance::not_tested("NATS cluster", "built without cargo feature `nats`");
}
