//! The conformance suite on the SQLite backend (a fresh file per test).

mod conformance;

use std::sync::Arc;

use chorus_bus::{Bus, SqliteBus};
use conformance::Fixture;

async fn setup() -> Option<Fixture> {
    let dir = Arc::new(tempfile::tempdir().expect("temp dir"));
    Some(Fixture {
        open: Box::new(move |config| {
            let dir = dir.clone();
            Box::pin(async move {
                let bus =
                    SqliteBus::open(dir.path().join("bus.db"), config).expect("open sqlite bus");
                Arc::new(bus) as Arc<dyn Bus>
            })
        }),
        durable: true,
        cleanup: None,
    })
}

conformance_tests!(setup, "sqlite");
