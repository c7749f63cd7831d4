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
    let config = BusConfig {
        max_deliver: 1,
        ..BusConfig::default()
    };
    let bus = NatsBus::connect(&url, &ns, config).await.unwrap();
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
    assert!(
        bus.dead_letters_of("m-later").await.unwrap().is_empty(),
        "a letter refused on publish is no delivery's"
    );
    let id = conformance::mid();
    let packet = conformance::packet(&id, serde_json::json!("inbox"), "LOW", "NOTIFICATION");
    bus.publish(serde_json::to_vec(&packet).unwrap())
        .await
        .unwrap();
    let wait = std::time::Duration::from_secs(3);
    let d = bus.receive("inbox", 1, wait).await.unwrap().pop().unwrap();
    bus.nack(&d, std::time::Duration::ZERO).await.unwrap();
    let short = std::time::Duration::from_millis(200);
    let again = bus.receive("inbox", 1, short).await.unwrap();
    assert!(
        again.is_empty(),
        "{:?}",
        again
            .iter()
            .map(|d| (&d.envelope.id, d.attempt))
            .collect::<Vec<_>>()
    );
    let given_up = bus.dead_letters_of(&id).await.unwrap();
    assert_eq!(
        given_up.len(),
        1,
        "found under the new subject: {given_up:?}"
    );
    assert_eq!(
        bus.dead_letters().await.unwrap().len(),
        3,
        "all three listed"
    );
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

/// The write probe behind `/healthz` writes to JetStream (a cached read could not see a store
/// that refuses writes) and keeps one message however often it runs.
#[cfg(feature = "nats")]
#[tokio::test]
async fn the_write_probe_writes_and_keeps_one_message() {
    use chorus_bus::{Backend, BusConfig, NatsBus};

    let Some(url) =
        conformance::server_url("NATS", "CHORUS_TEST_NATS_URL", "nats://127.0.0.1:4222")
    else {
        return;
    };
    let ns = format!("chorus_probe_{}", uuid::Uuid::new_v4().simple());
    let bus = NatsBus::connect(&url, &ns, BusConfig::default())
        .await
        .unwrap();
    let js = async_nats::jetstream::new(async_nats::connect(&url).await.unwrap());
    let subject = format!("{ns}.health");
    let mut last = 0;
    for _ in 0..3 {
        bus.probe_write().await.expect("a write the server took");
        let mut stream = js.get_stream(format!("{ns}_BIND")).await.unwrap();
        let info = stream.info().await.unwrap();
        assert_eq!(info.state.messages, 1, "one probe kept");
        assert!(info.state.last_sequence > last, "a new write each time");
        last = info.state.last_sequence;
        let kept = stream
            .get_last_raw_message_by_subject(&subject)
            .await
            .unwrap();
        assert_eq!(kept.sequence, last);
    }
    assert!(
        bus.bindings().await.unwrap().is_empty(),
        "no binding read from it"
    );
    bus.destroy().await.unwrap();
}
