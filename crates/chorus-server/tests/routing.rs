//! Routing rules and subscriptions set in `chorus.toml`, over real HTTP: seed 003's escalation
//! of category NETWORK_CONNECTIVITY goes to the network pool, every escalation is copied to an
//! audit inbox, and a bad entry is refused when the config is read.

mod common;

use chorus_server::ServerConfig;
use common::*;
use serde_json::{Value, json};

fn escalation(id: &str, category: &str) -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/seeds/003-escalation.json"
    );
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    doc["metadata"]["message_id"] = id.into();
    doc["metadata"]["sender_id"] = "alice".into();
    doc["payload"]["data"]["issue_category"] = category.into();
    doc
}

const ROUTES: &str = r#"
[[routes]]
pointer = "/payload/data/issue_category"
equals = "NETWORK_CONNECTIVITY"
route_to = "network_pool"

[[subscriptions]]
queue = "audit"
handoff_type = "ESCALATION"
"#;

#[tokio::test]
async fn routes_and_subscriptions_from_the_config_decide_where_a_handoff_goes() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(30);
    let routing = ServerConfig::from_toml(ROUTES).unwrap();
    config.routes = routing.routes;
    config.subscriptions = routing.subscriptions;
    config.agents.get_mut("bob").unwrap().read = vec![
        "technical_support_agent_pool".into(),
        "network_pool".into(),
        "audit".into(),
    ];
    let server = TestServer::start(&db(dir.path()), &config).await;
    let cases = [
        (
            "00000000-0000-4000-8000-0000000000a1",
            "NETWORK_CONNECTIVITY",
            json!(["network_pool", "audit"]),
        ),
        (
            "00000000-0000-4000-8000-0000000000a2",
            "BILLING",
            json!(["technical_support_agent_pool", "audit"]),
        ),
    ];
    for (id, category, queues) in cases {
        let r = publish(&server, ALICE, &escalation(id, category)).await;
        assert_eq!(r.status(), 201, "{category}");
        let receipt: Value = r.json().await.unwrap();
        assert_eq!(receipt["queues"], queues, "{category}");
    }
    let mut network = SseReader::open(&server, "network_pool", BOB, None).await;
    assert_eq!(
        delivered(&network.next().await).0,
        "00000000-0000-4000-8000-0000000000a1"
    );
    let mut audit = SseReader::open(&server, "audit", BOB, None).await;
    let mut copies = vec![
        delivered(&audit.next().await).0,
        delivered(&audit.next().await).0,
    ];
    copies.sort();
    assert_eq!(
        copies,
        [
            "00000000-0000-4000-8000-0000000000a1",
            "00000000-0000-4000-8000-0000000000a2"
        ]
    );
    server.stop().await;
}

#[test]
fn bad_routing_entries_are_refused_with_their_place() {
    let cases = [
        (
            "[[routes]]\npointer = \"payload/x\"\nequals = 1\nroute_to = \"p\"\n",
            "routes[0].pointer",
        ),
        (
            "[[routes]]\npointer = \"/x\"\nequals = 1\nroute_to = \"a/b\"\n",
            "routes[0].route_to",
        ),
        (
            "[[routes]]\npointer = \"/x\"\nequals = [1]\nroute_to = \"p\"\n",
            "routes[0].equals",
        ),
        (
            "[[subscriptions]]\nqueue = \"audit\"\n",
            "subscriptions[0]: expected exactly one",
        ),
        (
            "[[subscriptions]]\nqueue = \"audit\"\nhandoff_type = \"X\"\nrecipient = \"y\"\n",
            "subscriptions[0]: expected exactly one",
        ),
        (
            "[[routes]]\npointer = \"/x\"\nequal = 1\nroute_to = \"p\"\n",
            "unknown field `equal`",
        ),
    ];
    for (text, fragment) in cases {
        let e = ServerConfig::from_toml(text).unwrap_err().to_string();
        assert!(e.contains(fragment), "{fragment:?} in {e}");
    }
}

#[tokio::test]
async fn a_recipient_nobody_reads_is_refused_unless_a_rule_routes_it_or_the_config_accepts_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(30);
    config.routes = ServerConfig::from_toml(ROUTES).unwrap().routes;
    config.agents.get_mut("bob").unwrap().read = vec!["team_pool".into()];
    let server = TestServer::start(&db(dir.path()), &config).await;
    // A misspelled agent: refused with the pointer and how to fix it, and nothing stored (the
    // same id is new when sent to the right agent).
    let r = publish(&server, ALICE, &message("m-typo", "alice", "bobb", "hi")).await;
    assert_eq!(r.status(), 422);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["issues"][0]["pointer"], "/recipient", "{body}");
    let hint = body["issues"][0]["hint"].as_str().unwrap_or_default();
    assert!(hint.contains("accept_unknown_recipients"), "{body}");
    let r = publish(&server, ALICE, &message("m-typo", "alice", "bob", "hi")).await;
    assert_eq!(r.status(), 201, "the refused message was not stored");
    // A pool an agent reads is known.
    let r = publish(
        &server,
        ALICE,
        &message("m-pool", "alice", "team_pool", "hi"),
    )
    .await;
    assert_eq!(r.status(), 201);
    // A handoff to an inbox nobody reads: taken when a routing rule sends it elsewhere.
    let mut routed = escalation(
        "00000000-0000-4000-8000-0000000000b1",
        "NETWORK_CONNECTIVITY",
    );
    routed["metadata"]["recipient_id"] = "nobody_pool".into();
    let r = publish(&server, ALICE, &routed).await;
    assert_eq!(r.status(), 201);
    let receipt: Value = r.json().await.unwrap();
    assert_eq!(receipt["queues"], json!(["network_pool"]));
    let mut unrouted = escalation("00000000-0000-4000-8000-0000000000b2", "BILLING");
    unrouted["metadata"]["recipient_id"] = "nobody_pool".into();
    let r = publish(&server, ALICE, &unrouted).await;
    assert_eq!(r.status(), 422);
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        body["issues"][0]["pointer"], "/metadata/recipient_id",
        "{body}"
    );
    server.stop().await;

    let dir = tempfile::tempdir().unwrap();
    let mut config = self::config(30);
    config.accept_unknown_recipients = true;
    let server = TestServer::start(&db(dir.path()), &config).await;
    let r = publish(&server, ALICE, &message("m-typo", "alice", "bobb", "hi")).await;
    assert_eq!(r.status(), 201, "accepted when the config says so");
    server.stop().await;
}

/// Rules on other fields than the payload: by priority (the message goes to the rule's inbox
/// alone), by one recipient of a list (that recipient's copy goes to the rule's inbox, the
/// others keep theirs), and by a number however it is spelled; the first matching rule wins,
/// and a document no rule takes goes to its recipients.
#[tokio::test]
async fn rules_route_by_priority_by_a_recipient_in_a_list_and_by_a_number_in_any_form() {
    const RULES: &str = r#"
[[routes]]
pointer = "/metadata/priority"
equals = "CRITICAL"
route_to = "urgent_pool"

[[routes]]
pointer = "/metadata/recipient_id"
equals = "legacy_desk"
route_to = "technical_support_agent_pool"

[[routes]]
pointer = "/metadata/tier"
equals = 2
route_to = "tier2_pool"
"#;
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(30);
    config.routes = ServerConfig::from_toml(RULES).unwrap().routes;
    config.agents.get_mut("bob").unwrap().read = vec![
        "technical_support_agent_pool".into(),
        "urgent_pool".into(),
        "tier2_pool".into(),
    ];
    let server = TestServer::start(&db(dir.path()), &config).await;
    let id = |n: u8| format!("00000000-0000-4000-8000-0000000000c{n}");
    let mut critical = escalation(&id(1), "BILLING");
    critical["metadata"]["priority"] = "CRITICAL".into();
    // Critical and to the legacy desk: the first rule wins.
    critical["metadata"]["recipient_id"] = json!(["bob", "legacy_desk"]);
    let mut listed = escalation(&id(2), "BILLING");
    listed["metadata"]["recipient_id"] = json!(["bob", "legacy_desk"]);
    // A chorus message whose metadata carries the number as 2.0.
    let mut tier = message(&id(3), "alice", "bob", "to tier 2");
    tier["metadata"] = json!({"tier": 2.0});
    let mut plain = message(&id(4), "alice", "bob", "stays with bob");
    plain["metadata"] = json!({"tier": 3});
    let cases = [
        (critical, json!(["urgent_pool"])),
        (listed, json!(["bob", "technical_support_agent_pool"])),
        (tier, json!(["tier2_pool"])),
        (plain, json!(["bob"])),
    ];
    for (n, (doc, queues)) in cases.into_iter().enumerate() {
        let r = publish(&server, ALICE, &doc).await;
        let status = r.status();
        let receipt: Value = r.json().await.unwrap();
        assert_eq!(status, 201, "case {n}: {receipt}");
        assert_eq!(receipt["queues"], queues, "case {n}: {doc}");
    }
    // A rule that redirects one recipient of a list vouches for that one alone: another
    // recipient nobody reads is still refused.
    let mut half = escalation(&id(5), "BILLING");
    half["metadata"]["recipient_id"] = json!(["legacy_desk", "typo_desk"]);
    let r = publish(&server, ALICE, &half).await;
    assert_eq!(r.status(), 422, "{}", r.text().await.unwrap());
    let mut urgent = SseReader::open(&server, "urgent_pool", BOB, None).await;
    assert_eq!(delivered(&urgent.next().await).0, id(1));
    server.stop().await;
}

/// `send_to` holds for where a message goes, not for what it names: an agent allowed to send to
/// `bob` and `pool1` cannot reach `carol` by setting the field a rule matches (a rule on
/// `metadata.lane` sending to `carol`), whether it publishes alone or in a batch; a rule that
/// sends to an inbox the sender lists is followed, even from a recipient it does not list.
#[tokio::test]
async fn a_routing_rule_cannot_carry_a_message_past_the_senders_send_to() {
    const RULES: &str = r#"
[[routes]]
pointer = "/metadata/lane"
equals = "vip"
route_to = "carol"

[[routes]]
pointer = "/metadata/lane"
equals = "pooled"
route_to = "pool1"
"#;
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(30);
    config.routes = ServerConfig::from_toml(RULES).unwrap().routes;
    config.agents.get_mut("alice").unwrap().send_to = Some(vec!["bob".into(), "pool1".into()]);
    config.agents.get_mut("bob").unwrap().read = vec!["pool1".into(), "carol".into()];
    let server = TestServer::start(&db(dir.path()), &config).await;

    let mut vip = message("m-vip", "alice", "bob", "let me in");
    vip["metadata"] = json!({"lane": "vip"});
    let r = publish(&server, ALICE, &vip).await;
    let status = r.status();
    let body: Value = r.json().await.unwrap();
    assert_eq!(status, 403, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("\"carol\""),
        "the refusal names the inbox the rule would reach: {body}"
    );
    let batch = client()
        .post(server.url("/v1/messages/batch"))
        .bearer_auth(ALICE)
        .json(&json!([vip]))
        .send()
        .await
        .unwrap();
    let text = batch.text().await.unwrap();
    assert!(
        text.contains("403"),
        "the batch item is refused too: {text}"
    );

    // Nothing reached carol's inbox.
    let mut carol = SseReader::open(&server, "carol", BOB, None).await;
    carol
        .assert_quiet(std::time::Duration::from_millis(500), "carol got nothing")
        .await;

    // A rule into an inbox alice lists is followed, from a recipient she does not list.
    let mut pooled = message("m-pooled", "alice", "dave", "to the pool");
    pooled["metadata"] = json!({"lane": "pooled"});
    let r = publish(&server, ALICE, &pooled).await;
    let status = r.status();
    let receipt: Value = r.json().await.unwrap();
    assert_eq!(status, 201, "{receipt}");
    assert_eq!(receipt["queues"], json!(["pool1"]));
    server.stop().await;
}
