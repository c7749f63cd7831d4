//! The conformance suite on NATS JetStream (feature `nats`; server URL in CHORUS_TEST_NATS_URL).

mod conformance;

server_conformance_tests!(
    "nats",
    NatsBus,
    "NATS",
    "CHORUS_TEST_NATS_URL",
    "nats://127.0.0.1:4222"
);
