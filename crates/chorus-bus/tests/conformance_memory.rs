//! The conformance suite on the in-memory backend.

mod conformance;

use std::sync::Arc;

use chorus_bus::{Bus, MemoryBus};
use conformance::Fixture;

async fn setup() -> Option<Fixture> {
    Some(Fixture {
        open: Box::new(|config| {
            Box::pin(async move { Arc::new(MemoryBus::new(config)) as Arc<dyn Bus> })
        }),
        durable: false,
        cleanup: None,
    })
}

conformance_tests!(setup, "memory");
