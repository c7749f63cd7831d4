//! The escalation chain of `examples/support-desk.toml`, checked by this crate's flow tests and
//! by the CLI's (which include this file by path).

use serde_json::Value;

/// The handoffs of the support-desk example in order, as `sender>recipient:TYPE`.
pub const SUPPORT_DESK_CHAIN: [&str; 7] = [
    "customer_service>technical_support:ESCALATION",
    "technical_support>customer_service:STATUS_UPDATE",
    "technical_support>customer_service:REQUEST_INFORMATION",
    "customer_service>technical_support:PROVIDE_INFORMATION",
    "technical_support>level3_expert:ESCALATION",
    "level3_expert>technical_support:STATUS_UPDATE",
    "technical_support>customer_service:STATUS_UPDATE",
];

/// `sender>recipient:TYPE` of each handoff packet among chorus JSON documents, in order
/// (messages are passed over); the first recipient when there are several.
pub fn handoff_chain<'a>(documents: impl IntoIterator<Item = &'a Value>) -> Vec<String> {
    documents
        .into_iter()
        .filter_map(|d| {
            let handoff_type = d.pointer("/payload/handoff_type")?.as_str()?;
            let metadata = &d["metadata"];
            let recipient = match &metadata["recipient_id"] {
                Value::Array(ids) => &ids[0],
                one => one,
            };
            Some(format!(
                "{}>{}:{handoff_type}",
                metadata["sender_id"].as_str()?,
                recipient.as_str()?
            ))
        })
        .collect()
}

/// The previous actions of the last handoff, in the order every step added them.
pub const SUPPORT_DESK_ACTIONS: [&str; 6] = [
    "INITIAL_CONTACT",
    "DIAGNOSTIC_ATTEMPT",
    "SYMPTOM_REVIEW",
    "INFORMATION_PROVIDED",
    "LOG_REVIEW",
    "FIRMWARE_UPDATE",
];

/// Fails unless the support desk's transcript tells one story: every handoff carries the
/// previous actions of the one it follows, in time order, with its own after them; the history
/// summary grows along the chain; the customer hears the solution last; every message is filed
/// under the task of the handoffs.
pub fn assert_coherent_story(documents: &[Value]) {
    let handoffs: Vec<&Value> = documents
        .iter()
        .filter(|d| d.pointer("/payload/handoff_type").is_some())
        .collect();
    let mut longest: Vec<(String, String)> = Vec::new();
    let mut summary = String::new();
    for h in &handoffs {
        let actions: Vec<(String, String)> = h["context"]["previous_actions"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|x| {
                        let field = |k: &str| x[k].as_str().unwrap_or_default().to_owned();
                        (field("action_type"), field("timestamp"))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let times: Vec<&String> = actions.iter().map(|(_, t)| t).collect();
        assert!(
            times.windows(2).all(|w| w[0] <= w[1]),
            "not in time order: {actions:?}"
        );
        if actions.len() >= longest.len() {
            assert_eq!(
                actions[..longest.len()],
                longest[..],
                "the earlier actions change along the chain"
            );
            longest = actions;
        }
        let now = h["context"]["historical_data_summary"]
            .as_str()
            .unwrap_or_default();
        assert!(
            now.starts_with(&summary),
            "the summary {now:?} drops {summary:?}"
        );
        summary = now.to_owned();
    }
    let kinds: Vec<&str> = longest.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(kinds, SUPPORT_DESK_ACTIONS);
    assert!(
        summary.contains("Level 3 resolved it: Root cause"),
        "{summary}"
    );

    let told: Vec<&str> = documents
        .iter()
        .filter(|d| d["recipient"] == "customer_john")
        .map(|d| d["content"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(told.len(), 3, "{told:?}");
    assert!(
        told[2].starts_with("Your connection problem is solved."),
        "{told:?}"
    );
    let task = handoffs[0]["metadata"]["task_id"]
        .as_str()
        .expect("a task id");
    for d in documents.iter().filter(|d| d.get("role").is_some()) {
        assert_eq!(
            d["metadata"]["task_id"], task,
            "a message outside the task: {d}"
        );
    }
}
