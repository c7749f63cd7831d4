//! What the browser tests publish: seed-003 handoffs of a task, published or failing the test.

use serde_json::Value;

use crate::common::{TestServer, publish};

/// The seed-003 escalation from `from` to `to` in task `task-ui`, conversation `conv-ui`.
pub fn handoff(id: &str, from: &str, to: &str) -> Value {
    let path = format!(
        "{}/../../examples/seeds/003-python-valid-escalation.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut h: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("seed")).expect("seed JSON");
    let md = &mut h["metadata"];
    md["message_id"] = id.into();
    md["sender_id"] = from.into();
    md["recipient_id"] = to.into();
    md["task_id"] = "task-ui".into();
    md["correlation_id"] = "conv-ui".into();
    md["expiration_time"] = "2099-01-01T00:00:00.000Z".into();
    h
}

pub async fn publish_ok(server: &TestServer, token: &str, body: &Value) {
    let r = publish(server, token, body).await;
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap_or_default());
}
