//! The conformance suite on Redis Streams (feature `redis`; server URL in CHORUS_TEST_REDIS_URL).

mod conformance;

#[cfg(feature = "redis")]
mod on_server {
    use std::sync::Arc;

    use super::conformance::{self, Fixture, server_url};
    use chorus_bus::{Bus, RedisBus};

    async fn setup() -> Option<Fixture> {
        let url = server_url("Redis", "CHORUS_TEST_REDIS_URL", "redis://127.0.0.1:6379")?;
        let ns = format!("chorus_test_{}", uuid::Uuid::new_v4().simple());
        let (url2, ns2) = (url.clone(), ns.clone());
        Some(Fixture {
            open: Box::new(move |config| {
                let (url, ns) = (url.clone(), ns.clone());
                Box::pin(async move {
                    let bus = RedisBus::connect(&url, &ns, config)
                        .await
                        .expect("Redis server reachable");
                    Arc::new(bus) as Arc<dyn Bus>
                })
            }),
            durable: true,
            cleanup: Some(Box::pin(async move {
                let bus = RedisBus::connect(&url2, &ns2, Default::default())
                    .await
                    .expect("reconnect");
                bus.destroy().await.expect("delete the test namespace");
            })),
        })
    }

    crate::conformance_tests!(setup);
}

#[cfg(not(feature = "redis"))]
#[test]
fn redis_backend_not_built() {
    conformance::not_tested("Redis", "built without cargo feature `redis`");
}
