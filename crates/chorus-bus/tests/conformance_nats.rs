//! The conformance suite on NATS JetStream (feature `nats`; server URL in CHORUS_TEST_NATS_URL).

mod conformance;

server_conformance_tests!(
    "nats",
    NatsBus,
    "NATS",
    "CHORUS_TEST_NATS_URL",
    "nats://127.0.0.1:4222"
);

/// `chorus bench bus` on NATS runs in a namespace of its own and deletes it afterwards.
#[cfg(feature = "nats")]
#[tokio::test]
async fn the_bench_deletes_its_streams() {
    use futures::StreamExt;

    let Some(url) =
        conformance::server_url("NATS", "CHORUS_TEST_NATS_URL", "nats://127.0.0.1:4222")
    else {
        return;
    };
    conformance::run_bench_on(&url).await;
    let js = async_nats::jetstream::new(async_nats::connect(&url).await.unwrap());
    let ns = format!("chorus_bench_{}_", std::process::id());
    let names: Vec<String> = js.stream_names().map(|name| name.unwrap()).collect().await;
    let left: Vec<&String> = names.iter().filter(|n| n.starts_with(&ns)).collect();
    assert!(left.is_empty(), "streams left behind: {left:?}");
}
