//! The conformance suite on Redis Streams (feature `redis`; server URL in CHORUS_TEST_REDIS_URL).

mod conformance;

server_conformance_tests!(
    "redis",
    RedisBus,
    "Redis",
    "CHORUS_TEST_REDIS_URL",
    "redis://127.0.0.1:6379"
);

/// `chorus bench bus` on Redis runs in a namespace of its own and deletes its keys afterwards.
#[cfg(feature = "redis")]
#[tokio::test]
async fn the_bench_deletes_its_keys() {
    let Some(url) =
        conformance::server_url("Redis", "CHORUS_TEST_REDIS_URL", "redis://127.0.0.1:6379")
    else {
        return;
    };
    conformance::run_bench_on(&url).await;
    let mut conn = redis::Client::open(url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let left: Vec<String> = redis::cmd("KEYS")
        .arg(format!("chorus_bench_{}:*", std::process::id()))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(left.is_empty(), "keys left behind: {left:?}");
}
