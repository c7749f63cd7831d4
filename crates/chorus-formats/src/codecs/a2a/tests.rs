//! Golden tests written from the A2A specification's Message and Part shapes (v1.0 `a2a.proto`
//! in ProtoJSON; v0.3 for input).

use chorus_core::{ContentPart, Role};
use serde_json::json;

use super::*;

#[test]
fn a_documented_message_survives_decode_and_encode_unchanged() {
    let messages = json!([{
        "messageId": "9229e770-767c-417b-a0b0-f0741243c589", "role": "ROLE_USER",
        "contextId": "ctx-1", "taskId": "task-1",
        "parts": [
            {"text": "Summarize this report and the chart."},
            {"url": "https://example.com/report.pdf", "mediaType": "application/pdf", "filename": "report.pdf"},
            {"raw": "iVBORw0KGgo=", "mediaType": "image/png"},
            {"data": {"deadline": "2025-01-01"}, "metadata": {"source": "form"}}
        ],
        "metadata": {"trace": "t-1"},
        "extensions": ["https://example.com/ext/v1"]
    }]);
    let conversation = A2a::decode(messages.clone()).unwrap();
    let m = &conversation.messages[0];
    assert_eq!(
        (m.role, m.id.as_deref()),
        (Role::User, Some("9229e770-767c-417b-a0b0-f0741243c589"))
    );
    let parts = m.parts();
    assert!(
        matches!(&parts[1], ContentPart::File(f) if f.file.url.as_deref() == Some("https://example.com/report.pdf"))
    );
    assert!(
        matches!(&parts[2], ContentPart::Image(i) if i.image_url.url == "data:image/png;base64,iVBORw0KGgo=")
    );
    assert!(matches!(&parts[3], ContentPart::Data(d) if d.data["deadline"] == "2025-01-01"));
    let out = A2a::encode(&conversation, &EncodeOptions::default()).unwrap();
    assert_eq!(out.losses, []);
    assert_eq!(out.value, messages);
}

#[test]
fn tool_calls_and_names_travel_in_chorus_metadata() {
    let conversation: Conversation = serde_json::from_value(json!({"messages": [
        {"role": "assistant", "name": "Planner", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{\"q\": 1}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "ok", "index": 0}]}]}))
    .unwrap();
    let out = A2a::encode(&conversation, &EncodeOptions::default()).unwrap();
    assert_eq!(out.losses, []);
    assert_eq!(out.value[0]["role"], "ROLE_AGENT");
    assert_eq!(out.value[0]["metadata"]["chorus"]["name"], "Planner");
    assert_eq!(out.value[1]["metadata"]["chorus"]["role"], "tool");
    assert_eq!(A2a::decode(out.value.clone()).unwrap(), conversation);
}

#[test]
fn a_handoff_packet_travels_as_a_data_part() {
    let packet: chorus_core::HandoffPacket = serde_json::from_value(json!({
        "protocol": "harmony_handoff_v1",
        "meta": {"source_agent": "planner_v2", "target_agent": "coder_v1", "timestamp": "2024-03-20T10:00:00Z"},
        "context": {"primary_objective": "Build a snake game", "status": "in_progress",
                    "completed_steps": ["requirements"], "next_immediate_step": "game loop",
                    "constraints": ["comments"], "artifacts": {"design_doc": "s3://x/spec.md"}},
        "history_summary": "2D, not 3D"}))
    .unwrap();
    let conversation = Conversation {
        messages: vec![chorus_core::Message::with_parts(
            Role::Assistant,
            vec![A2a::handoff_part(&packet)],
        )],
        ..Conversation::default()
    };
    let out = A2a::encode(&conversation, &EncodeOptions::default()).unwrap();
    let part = &out.value[0]["parts"][0];
    assert_eq!(
        (part.get("kind"), part["data"]["protocol"].as_str()),
        (None, Some("harmony_handoff_v1"))
    );
    let back = A2a::decode(out.value.clone()).unwrap();
    assert_eq!(A2a::handoff_packets(&back), [packet]);
}

#[test]
fn an_unknown_role_is_rejected() {
    let err = A2a::decode(json!({"messageId": "m", "role": "robot", "parts": []})).unwrap_err();
    assert_eq!(err.pointer, "/role");
    assert!(err.to_string().contains("ROLE_USER"), "{err}");
}

#[test]
fn v0_3_input_is_read_and_written_back_as_v1_0() {
    let old = json!({
        "kind": "message", "messageId": "m1", "role": "agent", "contextId": "ctx-1",
        "parts": [
            {"kind": "text", "text": "here"},
            {"kind": "file", "file": {"name": "r.pdf", "mimeType": "application/pdf", "uri": "https://example.com/r.pdf"}},
            {"kind": "file", "file": {"mimeType": "image/png", "bytes": "iVBORw0KGgo="}},
            {"kind": "data", "data": {"k": 1}}
        ]
    });
    let conversation = A2a::decode(old).unwrap();
    assert_eq!(conversation.messages[0].role, Role::Assistant);
    let out = A2a::encode(&conversation, &EncodeOptions::default()).unwrap();
    assert_eq!(out.losses, []);
    assert_eq!(
        out.value,
        json!([{
            "messageId": "m1", "role": "ROLE_AGENT",
            "parts": [
                {"text": "here"},
                {"url": "https://example.com/r.pdf", "mediaType": "application/pdf", "filename": "r.pdf"},
                {"raw": "iVBORw0KGgo=", "mediaType": "image/png"},
                {"data": {"k": 1}}
            ],
            "contextId": "ctx-1"
        }])
    );
}

#[test]
fn a_v1_task_is_read_as_its_history() {
    let task = json!({"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"},
        "history": [{"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}]});
    let conversation = A2a::decode(task).unwrap();
    assert_eq!(conversation.messages.len(), 1);
}

#[test]
fn a_part_without_content_names_the_part() {
    let err = A2a::decode(json!({"messageId": "m", "role": "ROLE_USER",
        "parts": [{"text": "ok"}, {"mediaType": "text/plain"}]}))
    .unwrap_err();
    assert_eq!(err.pointer, "/parts/1");
    assert!(err.hint.is_some());
    let err = A2a::decode(json!({"messageId": "m", "role": "ROLE_USER", "parts": [{"raw": 7}]}))
        .unwrap_err();
    assert_eq!(err.pointer, "/parts/0/raw");
}

#[test]
fn a_file_known_by_its_provider_id_comes_back() {
    let conversation: Conversation = serde_json::from_value(json!({"messages": [
        {"role": "user", "content": [{"type": "file", "file": {"file_id": "file-abc"}}]}]}))
    .unwrap();
    let out = A2a::encode(&conversation, &EncodeOptions::default()).unwrap();
    assert_eq!(
        out.value[0]["parts"][0]["data"],
        json!({"file_id": "file-abc"})
    );
    assert_eq!(A2a::decode(out.value).unwrap(), conversation);
}

mod any_input {
    //! Whatever JSON arrives in the shape of an A2A message, decoding answers with a value or a
    //! problem, never a panic.

    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::*;

    fn scalar() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(|n| json!(n)),
            "[a-z/+=:.]{0,12}".prop_map(Value::String),
            Just(json!({})),
            Just(json!([])),
        ]
    }

    /// Metadata, sometimes with the chorus keys the decoder reads.
    fn metadata() -> impl Strategy<Value = Value> {
        prop_oneof![
            scalar(),
            (
                prop::sample::select(vec![
                    "image_url",
                    "input_audio",
                    "file",
                    "other",
                    "data",
                    "reasoning",
                    "text",
                ]),
                prop::sample::select(vec!["text", "null", "absent", "empty", "parts"]),
                scalar(),
            )
                .prop_map(|(kind, content, file)| {
                    // The kind's own key holding a scalar too: the decoder writes into it.
                    let mut chorus = json!({"type": kind, "content": content, "file": file,
                        "role": "tool", "generated_id": true});
                    chorus[kind] = file;
                    json!({ "chorus": chorus })
                }),
        ]
    }

    fn part() -> impl Strategy<Value = Value> {
        let keys = prop::sample::subsequence(
            vec![
                "text",
                "raw",
                "url",
                "data",
                "mediaType",
                "filename",
                "metadata",
                "kind",
                "file",
            ],
            0..5,
        );
        (keys, prop::collection::vec(scalar(), 5), metadata()).prop_map(
            |(keys, values, metadata)| {
                let mut map: serde_json::Map<String, Value> = keys
                    .into_iter()
                    .zip(values)
                    .map(|(k, v)| (k.to_owned(), v))
                    .collect();
                if map.contains_key("metadata") {
                    map.insert("metadata".into(), metadata);
                }
                Value::Object(map)
            },
        )
    }

    fn message() -> impl Strategy<Value = Value> {
        (
            prop::sample::select(vec![
                json!("ROLE_USER"),
                json!("ROLE_AGENT"),
                json!("agent"),
                json!(7),
                Value::Null,
            ]),
            prop::option::of(prop::sample::select(vec![json!("m"), json!(1)])),
            prop_oneof![
                prop::collection::vec(part(), 0..4).prop_map(Value::Array),
                scalar()
            ],
            prop::option::of(metadata()),
        )
            .prop_map(|(role, id, parts, metadata)| {
                let mut m = json!({"role": role, "parts": parts});
                if let Some(id) = id {
                    m["messageId"] = id;
                }
                if let Some(metadata) = metadata {
                    m["metadata"] = metadata;
                }
                m
            })
    }

    proptest! {
        #[test]
        fn decoding_never_panics(m in message(), wrap in 0u8..3) {
            let input = match wrap {
                0 => m,
                1 => json!([m]),
                _ => json!({"id": "t", "status": {}, "history": [m]}),
            };
            if let Err(problem) = A2a::decode(input) {
                prop_assert!(problem.pointer.is_empty() || problem.pointer.starts_with('/'));
            }
        }
    }
}

#[test]
fn a_sender_scalar_where_the_decoder_writes_is_no_panic() {
    // Regression: `metadata.chorus.image_url` (and input_audio, file) holding a number or a
    // string made the decoder index into a non-object, a panic any A2A caller could cause.
    for kind in ["image_url", "input_audio", "file"] {
        let message = serde_json::json!({
            "messageId": "m1", "role": "ROLE_USER",
            "parts": [{"url": "https://x.example/a.png", "mediaType": "image/png",
                       "metadata": {"chorus": {"type": kind, kind: 1}}}]
        });
        let _ = super::decode::conversation(&message);
    }
}
