//! The escalation chain of `examples/support-desk.toml`, checked by this crate's flow tests and
//! by the CLI's (which include this file by path).

use serde_json::Value;

/// The handoffs of the support-desk example in order, as `sender>recipient:TYPE`.
pub const SUPPORT_DESK_CHAIN: [&str; 7] = [
    "customer_service>technical_support:ESCALATION",
    "technical_support>customer_service:REQUEST_INFORMATION",
    "technical_support>customer_service:STATUS_UPDATE",
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
