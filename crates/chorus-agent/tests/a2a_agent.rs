//! A flow agent of kind a2a against a small A2A peer on 127.0.0.1 that answers as told: a plain
//! message answered by a message, and what a refusal of the remote agent, a card without a
//! JSON-RPC interface and an unreachable card become (the agent's failure, said in words).
//! (The official a2a-sdk peer is in chorus-cli's tests/a2a_sdk.rs.)

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::routing::{get, post};
use chorus_agent::FlowAgent;
use chorus_agent::agents::{A2aAgent, Item};
use chorus_core::{Message, Role};
use serde_json::{Value, json};

/// What the peer says: its card, and its answer to every JSON-RPC request.
struct Peer {
    card: Value,
    answer: Value,
}

/// A peer on a free port whose card is `card(its address)`; the URL of its card.
async fn peer(card: impl FnOnce(&str) -> Value, answer: Value) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let peer = Arc::new(Peer {
        card: card(&base),
        answer,
    });
    let app = Router::new()
        .route(
            "/.well-known/agent-card.json",
            get(|State(p): State<Arc<Peer>>| async move { Json(p.card.clone()) }),
        )
        .route(
            "/rpc",
            post(
                |State(p): State<Arc<Peer>>, Json(request): Json<Value>| async move {
                    let mut answer = p.answer.clone();
                    answer["id"] = request["id"].clone();
                    Json(answer)
                },
            ),
        )
        .with_state(peer);
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("{base}/.well-known/agent-card.json")
}

/// A card with one JSON-RPC interface at `base/rpc`.
fn json_rpc_card(base: &str, streaming: bool) -> Value {
    json!({"name": "peer", "supportedInterfaces": [
        {"url": format!("{base}/rpc"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": streaming}})
}

fn question() -> Item {
    let mut m = Message::new(Role::User, "Where is my parcel?");
    m.name = Some("front".into());
    Item::Message(m)
}

/// What the agent makes of `question()` sent to the peer at `card_url`.
async fn handled(card_url: &str) -> Result<Vec<Item>, String> {
    let agent = A2aAgent::new("remote", card_url, None, Duration::from_secs(5));
    agent
        .handle(&question(), "task-1")
        .await
        .map_err(|e| e.message)
}

#[tokio::test]
async fn a_message_answered_by_a_message_comes_back_as_a_reply() {
    let answer = json!({"jsonrpc": "2.0", "result": {"message": {"messageId": "a1",
        "role": "ROLE_AGENT", "parts": [{"text": "On its way."}]}}});
    let url = peer(|base| json_rpc_card(base, false), answer).await;
    let items = handled(&url).await.unwrap();
    let Item::Message(reply) = &items[0] else {
        panic!("{items:?}")
    };
    assert_eq!(
        (
            reply.text(),
            reply.recipient.as_deref(),
            reply.name.as_deref()
        ),
        ("On its way.".to_owned(), Some("front"), Some("remote"))
    );
}

#[tokio::test]
async fn a_refusal_of_the_remote_agent_is_the_agents_failure_in_words() {
    let refusal = json!({"jsonrpc": "2.0", "error": {"code": -32602, "message": "bad role"}});
    // A streaming peer refuses with one JSON answer too, not with a stream.
    for streaming in [false, true] {
        let url = peer(|base| json_rpc_card(base, streaming), refusal.clone()).await;
        let e = handled(&url).await.unwrap_err();
        assert!(
            e.contains("-32602") && e.contains("bad role"),
            "{streaming}: {e}"
        );
    }
}

#[tokio::test]
async fn a_card_without_json_rpc_or_out_of_reach_is_said() {
    let grpc_only = |base: &str| {
        json!({"supportedInterfaces": [
            {"url": format!("{base}/grpc"), "protocolBinding": "GRPC", "protocolVersion": "1.0"}]})
    };
    let url = peer(grpc_only, Value::Null).await;
    let e = handled(&url).await.unwrap_err();
    assert!(e.contains("no JSONRPC interface"), "{e}");
    let e = handled("http://127.0.0.1:9/.well-known/agent-card.json")
        .await
        .unwrap_err();
    assert!(e.contains("the agent card at http://127.0.0.1:9/"), "{e}");
}
