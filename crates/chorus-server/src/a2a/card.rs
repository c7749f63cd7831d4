//! Agent cards (A2A v1.0 `AgentCard`, ProtoJSON): the hub's at the well-known path and one per
//! agent or pool, each naming its JSON-RPC endpoint, the bearer tokens and the handoff extension.

use crate::connections::Scheme;
use serde_json::{Value, json};

use super::HANDOFF_EXTENSION;

/// The protocol version the cards declare.
pub const PROTOCOL_VERSION: &str = "1.0";

/// The card of the inbox `name` (an agent or a pool), served at `base`.
pub fn agent_card(base: &str, name: &str) -> Value {
    let url = format!("{base}/a2a/{name}");
    let mut card = card(
        &format!("chorus: {name}"),
        &format!(
            "The chorus inbox {name:?}: messages and seed-003 handoffs sent here are published \
             to it on the chorus hub, and its answers come back into the task."
        ),
        &url,
        vec![skill(name)],
    );
    if let Some(Value::Array(interfaces)) = card.get_mut("supportedInterfaces") {
        interfaces.push(json!({"url": url, "protocolBinding": "HTTP+JSON",
            "protocolVersion": PROTOCOL_VERSION}));
    }
    card
}

/// The hub's card: one skill per inbox; its endpoint takes messages for any of them (the
/// recipient is the handoff's `recipient_id`, or `metadata.recipient` of a plain message).
pub fn hub_card(base: &str, inboxes: &[String]) -> Value {
    card(
        "chorus hub",
        "A chorus hub: each skill is an agent or pool reachable over A2A. Each also has its own \
         card at /a2a/{name}/.well-known/agent-card.json.",
        &format!("{base}/a2a"),
        inboxes.iter().map(|n| skill(n)).collect(),
    )
}

fn skill(name: &str) -> Value {
    json!({
        "id": name,
        "name": name,
        "description": format!("Hand work to the chorus inbox {name:?}"),
        "tags": ["chorus", "handoff"],
    })
}

fn card(name: &str, description: &str, url: &str, skills: Vec<Value>) -> Value {
    json!({
        "name": name,
        "description": description,
        "supportedInterfaces": [
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": PROTOCOL_VERSION}
        ],
        "version": env!("CARGO_PKG_VERSION"),
        "capabilities": {
            "streaming": true,
            "pushNotifications": false,
            "extensions": [{
                "uri": HANDOFF_EXTENSION,
                "description": "A seed-003 handoff packet travels whole in a data part (the message \
                    lists this URI in `extensions`): handoff type, priority, expiration time, \
                    message id (the idempotency key) and data schema survive.",
                "required": false
            }]
        },
        "securitySchemes": {
            "bearer": {"httpAuthSecurityScheme": {
                "scheme": "Bearer",
                "description": "The calling agent's chorus token; a message is published as that agent"
            }}
        },
        "securityRequirements": [{"schemes": {"bearer": {"list": []}}}],
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["text/plain", "application/json"],
        "skills": skills,
    })
}

/// The address clients reach this server at, from the request's `Host` header; the scheme is
/// a proxy's `X-Forwarded-Proto`, else the listener's (`scheme`).
pub fn base_url(headers: &axum::http::HeaderMap, scheme: Option<Scheme>) -> String {
    let host = headers
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1");
    let scheme = headers
        .get("x-forwarded-proto")
        .and_then(|h| h.to_str().ok())
        .filter(|s| *s == "https" || *s == "http")
        .unwrap_or(scheme.unwrap_or(Scheme::Http).as_str());
    format!("{scheme}://{host}")
}
