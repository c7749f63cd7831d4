//! What the browser tests share: a browser beside a fresh server, and what they publish
//! (seed-003 handoffs of a task, published or failing the test).

use serde_json::Value;

use crate::common::{TestServer, fresh, publish};
use crate::webdriver::Browser;

/// A headless browser and a fresh server (with its folder); `None` when no browser can be
/// launched (`Browser::launch` says why).
pub async fn start() -> Option<(Browser, tempfile::TempDir, TestServer)> {
    let browser = Browser::launch().await?;
    let (dir, server) = fresh(30).await;
    Some((browser, dir, server))
}

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

/// Publishes `body` with `token`; fails the test unless the server accepts it (201).
pub async fn publish_ok(server: &TestServer, token: &str, body: &Value) {
    let r = publish(server, token, body).await;
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap_or_default());
}
