//! Seed 004: data messages merged by identity, rendered in the seed's layout, variables and
//! `_outputPath`.

use chorus_context::ContextError;
use chorus_context::data::{assemble, merge_parts, output_data, render_all, resolve_call};
use chorus_core::{ContentPart, DataPart, Message, Role, ToolCall};
use serde_json::{Value, json};

fn data(value: Value) -> ContentPart {
    let mut v = value;
    v["type"] = json!("data");
    serde_json::from_value(v).unwrap()
}

/// The seed's example request: one text part and two `user` data parts.
fn seed_request() -> Vec<Message> {
    vec![
        Message::with_parts(
            Role::User,
            vec![ContentPart::text("Update the user's city to Austin")],
        ),
        Message::with_parts(
            Role::User,
            vec![
                data(json!({
                    "kind": "user",
                    "description": "Represents the current user.",
                    "data": {"name": "John Doe"},
                    "schema": {"type": "object", "properties": {
                        "name": {"type": "string"}, "age": {"type": "number"}, "city": {"type": "string"}
                    }}
                })),
                data(json!({"kind": "user", "data": {"age": 30}})),
            ],
        ),
    ]
}

#[test]
fn the_seed_example_renders_in_its_layout() {
    let out = assemble(&seed_request());
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].text(), "Update the user's city to Austin");
    let expected = "\n## Data: ¶user\n{\n  \"name\": \"John Doe\",\n  \"age\": 30\n}\nRepresents the current user.\nSchema for ¶user:\n{\n  \"type\": \"object\",\n  \"properties\": {\n    \"name\": {\n      \"type\": \"string\"\n    },\n    \"age\": {\n      \"type\": \"number\"\n    },\n    \"city\": {\n      \"type\": \"string\"\n    }\n  }\n}";
    assert_eq!(out[1].text(), expected);
    assert_eq!(out[1].role, Role::User);
}

#[test]
fn instances_stay_apart_and_blocks_concatenate() {
    let parts: Vec<DataPart> = vec![
        serde_json::from_value(json!({"kind": "state", "data": {"n": 1}, "_instance": "a"}))
            .unwrap(),
        serde_json::from_value(json!({"kind": "state", "data": {"n": 2}, "_instance": "b"}))
            .unwrap(),
        serde_json::from_value(json!({"kind": "state", "data": {"m": 3}, "_instance": "a"}))
            .unwrap(),
    ];
    let merged = merge_parts(&parts);
    assert_eq!(merged.len(), 2);
    assert_eq!(
        render_all(&merged),
        "\n## Data: ¶state (_instance \"a\")\n{\n  \"n\": 1,\n  \"m\": 3\n}\n## Data: ¶state (_instance \"b\")\n{\n  \"n\": 2\n}"
    );
}

fn history_with_state() -> Vec<Message> {
    vec![Message::with_parts(
        Role::User,
        vec![
            data(json!({"kind": "input", "data": {"city": "Austin", "days": [1, 2]}})),
            data(json!({"kind": "state", "data": {"user": {"id": 7}}})),
        ],
    )]
}

#[test]
fn variables_resolve_whole_values_and_inside_text() {
    let call = ToolCall::function(
        "c1",
        "weather",
        &json!({"city": "†input.city", "day": "†input.days.1", "note": "for user †state.user.id in †input.city", "user": "†state.user"}),
    );
    let resolved = resolve_call(&call, &history_with_state(), "/messages/1/tool_calls/0").unwrap();
    assert_eq!(
        resolved.parsed_arguments().unwrap(),
        json!({"city": "Austin", "day": 2, "note": "for user 7 in Austin", "user": {"id": 7}})
    );
}

#[test]
fn a_missing_path_names_the_pointer_and_the_keys_there() {
    let call = ToolCall::function("c1", "weather", &json!({"q": {"city": "†input.town"}}));
    let err = resolve_call(&call, &history_with_state(), "/messages/1/tool_calls/0").unwrap_err();
    let ContextError::Variable { variable, problem } = &err else {
        panic!("{err}")
    };
    assert_eq!(
        problem.pointer,
        "/messages/1/tool_calls/0/function/arguments/q/city"
    );
    assert_eq!(variable, "†input.town");
    assert_eq!(problem.hint.as_deref(), Some("keys of input: [city, days]"));
    let unknown_kind = ToolCall::function("c2", "f", &json!({"a": "†nope.x"}));
    let err = resolve_call(&unknown_kind, &history_with_state(), "/m").unwrap_err();
    assert!(
        err.to_string().contains("no data part of kind `nope`"),
        "{err}"
    );
}

#[test]
fn output_path_stores_the_result_as_state() {
    let mut call = ToolCall::function("c1", "weather", &json!({"city": "Austin"}));
    call.extra
        .insert("_outputPath".into(), json!("state.weather.today"));
    let mut result = Message::new(Role::Tool, r#"{"temp": 31}"#);
    result.tool_call_id = Some("c1".into());
    let part = output_data(&call, &result, "/messages/1/tool_calls/0")
        .unwrap()
        .unwrap();
    assert_eq!(part.kind.as_deref(), Some("state"));
    assert_eq!(part.data, json!({"weather": {"today": {"temp": 31}}}));
    // In the arguments, with a sigil, and a plain-text result.
    let call = ToolCall::function("c2", "f", &json!({"_outputPath": "†summary"}));
    let text = Message::new(Role::Tool, "sunny");
    let part = output_data(&call, &text, "/m").unwrap().unwrap();
    assert_eq!(part.data, json!({"summary": "sunny"}));
    // No path: no data; a bad path: an error naming where.
    assert!(
        output_data(&ToolCall::function("c3", "f", &json!({})), &text, "/m")
            .unwrap()
            .is_none()
    );
    let bad = ToolCall::function("c4", "f", &json!({"_outputPath": 5}));
    let err = output_data(&bad, &text, "/m").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("/m/function/arguments/_outputPath"),
        "{err}"
    );
}

#[test]
fn stored_results_feed_later_variables() {
    let mut history = history_with_state();
    let call = ToolCall::function("c1", "f", &json!({"_outputPath": "state.temp"}));
    let part = output_data(&call, &Message::new(Role::Tool, "31"), "/m")
        .unwrap()
        .unwrap();
    history.push(Message::with_parts(
        Role::User,
        vec![ContentPart::Data(part)],
    ));
    let next = ToolCall::function(
        "c2",
        "g",
        &json!({"t": "†state.temp", "id": "†state.user.id"}),
    );
    let resolved = resolve_call(&next, &history, "/m").unwrap();
    assert_eq!(
        resolved.parsed_arguments().unwrap(),
        json!({"t": 31, "id": 7})
    );
}
