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

/// A dead-letter stream made by an older chorus (one subject, `ns.dlq`) is widened on connect:
/// its letters stay listed, and new letters are found by their message id.
#[cfg(feature = "nats")]
#[tokio::test]
async fn an_older_dead_letter_stream_is_widened_and_keeps_its_letters() {
    use chorus_bus::{Backend, Bus, BusConfig, DeadReason, NatsBus};

    let Some(url) =
        conformance::server_url("NATS", "CHORUS_TEST_NATS_URL", "nats://127.0.0.1:4222")
    else {
        return;
    };
    let ns = format!("chorus_old_dlq_{}", uuid::Uuid::new_v4().simple());
    let js = async_nats::jetstream::new(async_nats::connect(&url).await.unwrap());
    let old = js
        .create_stream(async_nats::jetstream::stream::Config {
            name: format!("{ns}_DLQ"),
            subjects: vec![format!("{ns}.dlq")],
            ..Default::default()
        })
        .await
        .unwrap();
    drop(old);
    let bus = NatsBus::connect(&url, &ns, BusConfig::default())
        .await
        .unwrap();
    let early = bus
        .record_rejected(b"{early", None, DeadReason::NoRoute)
        .await
        .unwrap();
    let later = bus
        .record_rejected(b"{later", Some("m-later"), DeadReason::NoRoute)
        .await
        .unwrap();
    let listed: Vec<String> = bus
        .dead_letters()
        .await
        .unwrap()
        .into_iter()
        .map(|d| d.id)
        .collect();
    assert_eq!(listed, [early, later.clone()]);
    let found = bus
        .dead_letter_of("m-later")
        .await
        .unwrap()
        .expect("indexed");
    assert_eq!(found.id, later);
    let subjects = js
        .get_stream(format!("{ns}_DLQ"))
        .await
        .unwrap()
        .info()
        .await
        .unwrap()
        .config
        .subjects
        .clone();
    assert_eq!(subjects, [format!("{ns}.dlq"), format!("{ns}.dlq.>")]);
    bus.destroy().await.unwrap();
}
