//! The conformance suite on NATS JetStream (feature `nats`; server URL in CHORUS_TEST_NATS_URL).

mod conformance;

#[cfg(feature = "nats")]
mod on_server {
    use std::sync::Arc;

    use super::conformance::{self, Fixture, server_url};
    use chorus_bus::{Bus, NatsBus};

    async fn setup() -> Option<Fixture> {
        let url = server_url("NATS", "CHORUS_TEST_NATS_URL", "nats://127.0.0.1:4222")?;
        let ns = format!("chorus_test_{}", uuid::Uuid::new_v4().simple());
        let (url2, ns2) = (url.clone(), ns.clone());
        Some(Fixture {
            open: Box::new(move |config| {
                let (url, ns) = (url.clone(), ns.clone());
                Box::pin(async move {
                    let bus = NatsBus::connect(&url, &ns, config)
                        .await
                        .expect("NATS server reachable");
                    Arc::new(bus) as Arc<dyn Bus>
                })
            }),
            durable: true,
            cleanup: Some(Box::pin(async move {
                let bus = NatsBus::connect(&url2, &ns2, Default::default())
                    .await
                    .expect("reconnect");
                bus.destroy().await.expect("delete the test namespace");
            })),
        })
    }

    crate::conformance_tests!(setup);
}

#[cfg(not(feature = "nats"))]
#[test]
fn nats_backend_not_built() {
    conformance::not_tested("NATS", "built without cargo feature `nats`");
}
