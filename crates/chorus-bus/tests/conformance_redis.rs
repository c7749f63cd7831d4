//! The conformance suite on Redis Streams (feature `redis`; server URL in CHORUS_TEST_REDIS_URL).

mod conformance;

server_conformance_tests!(
    "redis",
    RedisBus,
    "Redis",
    "CHORUS_TEST_REDIS_URL",
    "redis://127.0.0.1:6379"
);
