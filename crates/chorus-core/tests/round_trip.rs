//! Parse then serialize reproduces the input, unknown fields included (property tests), and the
//! validator never panics on malformed input.

use chorus_core::{Conversation, HandoffMessage, HandoffPacket, Kind, Message, Validator};
use proptest::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        (-1e9f64..1e9).prop_map(|f| json!(f)),
        ".{0,12}".prop_map(Value::String),
    ]
}

fn any_json() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Unknown keys (prefixed so they never collide with known ones) with any values.
fn extra() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map("x_[a-z]{1,5}", any_json(), 0..3)
        .prop_map(|m| m.into_iter().collect())
}

fn with_extra(object: Value, extra: Map<String, Value>) -> Value {
    let mut object = object;
    object.as_object_mut().unwrap().extend(extra);
    object
}

/// Inserts `key: value` when `value` is `Some`.
fn put(object: &mut Value, key: &str, value: Option<Value>) {
    if let Some(value) = value {
        object[key] = value;
    }
}

fn text() -> impl Strategy<Value = String> {
    ".{0,24}"
}

fn part() -> impl Strategy<Value = Value> {
    let text_part = (text(), prop::option::of(0u64..10), extra()).prop_map(|(t, index, x)| {
        let mut part = json!({"type": "text", "text": t});
        put(&mut part, "index", index.map(|i| json!(i)));
        with_extra(part, x)
    });
    let reasoning = (text(), prop::option::of("[a-zA-Z0-9]{4,8}")).prop_map(|(t, sig)| {
        let mut part = json!({"type": "reasoning", "text": t});
        put(&mut part, "signature", sig.map(Value::String));
        part
    });
    let image = (
        "https://[a-z]{1,8}\\.example/[a-z]{1,8}\\.png",
        prop::option::of(prop_oneof![Just("low"), Just("high"), Just("auto")]),
        prop::option::of(prop_oneof![
            Just(json!(0)),
            Just(json!(90)),
            Just(json!(-90.5))
        ]),
        prop::option::of((
            prop::option::of("[a-z]{3}"),
            prop::option::of(0.0f64..100.0),
            prop::option::of(0u64..1000),
            extra(),
        )),
        extra(),
    )
        .prop_map(|(url, detail, rotation, video, x)| {
            let mut image_url = json!({"url": url});
            put(&mut image_url, "detail", detail.map(|d| json!(d)));
            put(&mut image_url, "rotation", rotation);
            let mut part = json!({"type": "image_url", "image_url": image_url});
            if let Some((id, ts, frame, vx)) = video {
                let mut meta = json!({});
                put(&mut meta, "video_id", id.map(Value::String));
                put(&mut meta, "timestamp_sec", ts.map(|t| json!(t)));
                put(&mut meta, "frame_index", frame.map(|f| json!(f)));
                part["video_metadata"] = with_extra(meta, vx);
            }
            with_extra(part, x)
        });
    let audio = (prop::option::of(8000u32..48000), extra()).prop_map(|(rate, x)| {
        let mut input = json!({"data": "UklGRiQAAABXQVZF", "format": "wav"});
        put(&mut input, "sample_rate", rate.map(|r| json!(r)));
        with_extra(json!({"type": "input_audio", "input_audio": input}), x)
    });
    let file = ("[a-z]{1,8}\\.pdf", extra()).prop_map(|(name, x)| {
        json!({"type": "file", "file": with_extra(json!({"filename": name, "file_id": "file-1"}), x)})
    });
    let data = (
        prop::option::of("[a-z]{1,6}"),
        any_json(),
        prop::option::of(text()),
        prop::option::of(0u32..4),
        extra(),
    )
        .prop_map(|(kind, data, description, instance, x)| {
            let mut part = json!({"type": "data", "data": data});
            put(&mut part, "kind", kind.map(Value::String));
            put(&mut part, "description", description.map(Value::String));
            put(
                &mut part,
                "_instance",
                instance.map(|i| json!(format!("run-{i}"))),
            );
            with_extra(part, x)
        });
    let unknown =
        ("x-[a-z]{1,6}", extra()).prop_map(|(kind, x)| with_extra(json!({"type": kind}), x));
    prop_oneof![text_part, reasoning, image, audio, file, data, unknown]
}

fn tool_call() -> impl Strategy<Value = Value> {
    ("call_[a-z0-9]{1,6}", "[a-z_]{1,8}", any_json(), extra()).prop_map(|(id, name, args, x)| {
        json!({"id": id, "type": "function", "function": with_extra(json!({"name": name, "arguments": args.to_string()}), x)})
    })
}

fn metadata() -> impl Strategy<Value = Value> {
    (prop::option::of((0u64..10_000, 0u64..10_000, 0.0f64..1.0)), prop::option::of((0u64..5000, 0.0f64..9000.0)), prop::option::of("[a-z0-9_]{1,10}"), extra())
        .prop_map(|(usage, latency, trace, x)| {
            let mut meta = json!({});
            if let Some((p, c, cost)) = usage {
                meta["token_usage"] = json!({"prompt_tokens": p, "completion_tokens": c, "total_cost_usd": cost});
            }
            if let Some((ttft, total)) = latency {
                meta["latency_ms"] = json!({"ttft": ttft, "total_time": total});
            }
            put(&mut meta, "trace_id", trace.map(Value::String));
            meta["citation_map"] = json!({"cit_01": {"source_type": "web_search", "url": "https://example.com", "location": {"page_number": 3, "bbox": [1, 2.5, 3, 4]}}});
            with_extra(meta, x)
        })
}

fn message() -> impl Strategy<Value = Value> {
    let content = prop::option::of(prop_oneof![
        Just(Value::Null),
        text().prop_map(Value::String),
        prop::collection::vec(part(), 0..4).prop_map(Value::Array),
    ]);
    (
        prop_oneof![
            Just("system"),
            Just("developer"),
            Just("user"),
            Just("assistant"),
            Just("tool")
        ],
        content,
        prop::option::of(prop_oneof![
            Just(Value::Null),
            prop::collection::vec(tool_call(), 0..3).prop_map(Value::Array)
        ]),
        prop::option::of("[A-Za-z_]{1,10}"),
        prop::option::of(prop_oneof![
            any::<i32>().prop_map(|n| json!(n)),
            Just(json!("2025-05-01T10:00:00Z"))
        ]),
        prop::option::of(prop_oneof![
            Just("analysis"),
            Just("commentary"),
            Just("final"),
            Just("other")
        ]),
        prop::option::of(metadata()),
        extra(),
    )
        .prop_map(|(role, content, calls, name, created, channel, meta, x)| {
            let mut message = json!({"role": role});
            put(&mut message, "content", content);
            put(&mut message, "tool_calls", calls);
            put(&mut message, "name", name.map(Value::String));
            put(&mut message, "created_at", created);
            put(&mut message, "channel", channel.map(|c| json!(c)));
            put(&mut message, "metadata", meta);
            with_extra(message, x)
        })
}

fn handoff() -> impl Strategy<Value = Value> {
    (
        prop_oneof![Just(json!("pool_a")), Just(json!(["a", "b"]))],
        prop_oneof![Just("LOW"), Just("MEDIUM"), Just("HIGH"), Just("CRITICAL")],
        prop::option::of(Just("2030-01-01T00:00:00Z")),
        any_json(),
        extra(),
        extra(),
    )
        .prop_map(|(recipient, priority, expiry, detail, x_meta, x_top)| {
            let mut metadata = json!({
                "message_id": "0b8f4c1e-2f5d-4c3a-9e1b-7d6a5c4b3a21", "timestamp": "2025-01-01T10:00:00Z",
                "protocol_version": "1.2.0", "sender_id": "s", "recipient_id": recipient, "task_id": "t",
                "priority": priority
            });
            put(&mut metadata, "expiration_time", expiry.map(|e| json!(e)));
            with_extra(
                json!({
                    "metadata": with_extra(metadata, x_meta),
                    "context": {"workflow_state": "W", "previous_actions": [{"action_type": "A", "details": "d", "timestamp": "2025-01-01T09:00:00Z", "x_extra": detail}]},
                    "payload": {"handoff_type": "NOTIFICATION", "data": {"event_type": "E", "message": "m"}},
                    "instructions": {"failure_handling_strategy": {"retry_count": 2}}
                }),
                x_top,
            )
        })
}

fn packet() -> impl Strategy<Value = Value> {
    (prop::option::of(prop::collection::vec(text(), 0..3)), prop::option::of(text()), extra(), extra()).prop_map(|(steps, summary, x_ctx, x_top)| {
        let mut context = json!({"primary_objective": "o", "status": "in_progress", "artifacts": {"doc": "s3://b/k"}});
        put(&mut context, "completed_steps", steps.map(|s| json!(s)));
        let mut packet = json!({"protocol": "harmony_handoff_v1", "meta": {"source_agent": "a", "target_agent": "b", "timestamp": "2024-03-20T10:00:00Z"}, "context": with_extra(context, x_ctx)});
        put(&mut packet, "history_summary", summary.map(Value::String));
        with_extra(packet, x_top)
    })
}

fn round_trips<T: DeserializeOwned + Serialize>(value: &Value) -> Result<(), TestCaseError> {
    let typed: T =
        serde_json::from_value(value.clone()).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(&serde_json::to_value(&typed).unwrap(), value);
    let text = serde_json::to_string(&typed).unwrap();
    let again: T = serde_json::from_str(&text).unwrap();
    prop_assert_eq!(&serde_json::to_value(&again).unwrap(), value);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn messages_round_trip(value in message()) {
        round_trips::<Message>(&value)?;
        let report = Validator::standard().validate_value(&value, Some(Kind::Message));
        prop_assert!(report.errors().all(|p| !p.message.contains("expected a well-formed value")), "{:?}", report.problems);
    }

    #[test]
    fn conversations_round_trip(messages in prop::collection::vec(message(), 0..5), x in extra()) {
        let value = with_extra(json!({"messages": messages, "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]}), x);
        round_trips::<Conversation>(&value)?;
    }

    #[test]
    fn handoffs_round_trip(value in handoff()) {
        round_trips::<HandoffMessage>(&value)?;
    }

    #[test]
    fn packets_round_trip(value in packet()) {
        round_trips::<HandoffPacket>(&value)?;
    }

    #[test]
    fn accepted_documents_always_read_as_their_type(value in prop_oneof![message(), handoff(), packet()]) {
        let report = Validator::standard().validate_value(&value, None);
        if report.is_valid() {
            match report.kind.unwrap() {
                Kind::Message => { serde_json::from_value::<Message>(value).unwrap(); }
                Kind::Handoff => { serde_json::from_value::<HandoffMessage>(value).unwrap(); }
                Kind::HarmonyHandoff => { serde_json::from_value::<HandoffPacket>(value).unwrap(); }
                other => prop_assert!(false, "unexpected kind {other}"),
            }
        }
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let report = Validator::standard().validate_bytes(&bytes, None);
        prop_assert!(!report.problems.is_empty() || report.is_valid());
    }

    #[test]
    fn truncated_documents_are_rejected_without_panic(value in prop_oneof![message(), handoff()], cut in 0.0f64..1.0) {
        let text = serde_json::to_string(&value).unwrap();
        let mut end = ((text.len() as f64) * cut) as usize;
        while !text.is_char_boundary(end) { end -= 1; }
        let report = Validator::standard().validate_bytes(&text.as_bytes()[..end], None);
        prop_assert!(!report.is_valid());
    }

    #[test]
    fn values_of_the_wrong_type_are_rejected_at_their_pointer(value in message(), key in prop_oneof![Just("role"), Just("content"), Just("tool_calls"), Just("metadata")], wrong in prop_oneof![Just(json!(7)), Just(json!(true)), Just(json!({"k": 1}))]) {
        let mut value = value;
        if key == "metadata" && wrong.is_object() { return Ok(()); }
        if key == "content" && wrong == json!(null) { return Ok(()); }
        value[key] = wrong;
        let report = Validator::standard().validate_value(&value, Some(Kind::Message));
        prop_assert!(!report.is_valid());
        let pointer = format!("/{key}");
        prop_assert!(report.errors().any(|p| p.pointer.starts_with(&pointer)), "{:?}", report.problems);
    }
}

#[test]
fn huge_strings_and_deep_nesting_are_handled() {
    let huge = format!(
        r#"{{"role": "user", "content": "{}"}}"#,
        "a".repeat(8 * 1024 * 1024)
    );
    assert!(
        Validator::standard()
            .validate_bytes(huge.as_bytes(), None)
            .is_valid()
    );
    let deep = format!(
        r#"{{"role": "user", "content": "x", "x_deep": {}1{}}}"#,
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let report = Validator::standard().validate_bytes(deep.as_bytes(), None);
    assert!(!report.is_valid());
    assert!(report.problems[0].message.contains("nesting"));
}
