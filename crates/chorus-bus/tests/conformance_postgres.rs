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
