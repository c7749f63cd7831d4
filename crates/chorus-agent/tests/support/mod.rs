//! Shared test support: the fake OpenAI-compatible server, the support-desk chain.
//!
//! Each test file that needs it declares `mod support;` and uses `support::fake_openai`.
//! Not every test file uses every helper, hence the `dead_code` allowance.
#![allow(dead_code)]

pub mod desk;
pub mod fake_openai;

use chorus_agent::model::ModelReply;
use chorus_core::{ContentPart, Message, Role};

/// The one assistant message of a reply that ends in one call of `tool` with `arguments`
/// (failing the test otherwise).
pub fn one_tool_call<'a>(reply: &'a ModelReply, tool: &str, arguments: &str) -> &'a Message {
    assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(reply.messages.len(), 1);
    let message = &reply.messages[0];
    assert_eq!(message.role, Role::Assistant);
    let calls = message.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].function.name, tool);
    assert_eq!(calls[0].function.arguments, arguments);
    message
}

/// The text of each reasoning part of `message`, in order.
pub fn reasoning(message: &Message) -> Vec<String> {
    message
        .parts()
        .into_iter()
        .filter_map(|p| match p {
            ContentPart::Reasoning(r) => Some(r.text),
            _ => None,
        })
        .collect()
}
