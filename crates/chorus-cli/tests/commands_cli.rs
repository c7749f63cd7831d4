//! `chorus harmony`, `count` and `trim` through the real binary: what reaches stdout and stderr,
//! and the exit codes (0 ok, 1 rejected input, 2 usage or I/O).

mod common;

use serde_json::{Value, json};

use common::{chorus, code, stderr, stdout};

/// A Chat Completions request with a system prompt, a tool call, its result and an answer.
fn chat_request() -> Value {
    let long = "The weather report says it will rain heavily in the afternoon. ".repeat(20);
    json!({
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": "You answer questions about the weather."},
            {"role": "user", "content": long},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": long},
            {"role": "assistant", "content": "Take an umbrella."},
            {"role": "user", "content": "And tomorrow?"}
        ]
    })
}

#[test]
fn harmony_render_then_parse_through_the_binary() {
    let conversation = json!({"messages": [
        {"role": "user", "content": "What is 2 + 2?"},
        {"role": "assistant", "channel": "final", "content": "4"}
    ]});
    let rendered = chorus(
        &[
            "harmony", "render", "--mode", "plain", "--output", "text", "-",
        ],
        &conversation.to_string(),
    );
    assert_eq!(code(&rendered), 0, "{}", stderr(&rendered));
    let text = stdout(&rendered);
    assert!(
        text.starts_with("<|start|>user<|message|>What is 2 + 2?<|end|>"),
        "{text}"
    );
    assert!(text.contains("<|channel|>final<|message|>4"), "{text}");

    let tokens = chorus(
        &["harmony", "render", "--mode", "plain", "-"],
        &conversation.to_string(),
    );
    assert_eq!(code(&tokens), 0, "{}", stderr(&tokens));
    let ids: Vec<u32> = serde_json::from_str(&stdout(&tokens)).unwrap();
    assert_eq!(ids[0], 200006, "<|start|> opens the first message");

    let parsed = chorus(
        &["harmony", "parse", "--to", "chorus", "-"],
        &stdout(&tokens),
    );
    assert_eq!(code(&parsed), 0, "{}", stderr(&parsed));
    let messages: Value = serde_json::from_str(&stdout(&parsed)).unwrap();
    let texts: Vec<String> = messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].to_string())
        .collect();
    assert!(texts[0].contains("What is 2 + 2?"), "{messages}");
    assert!(texts[1].contains('4'), "{messages}");
    assert_eq!(messages[1]["role"], "assistant");
}

#[test]
fn harmony_rejects_malformed_completions_unless_lenient() {
    // The header never reaches `<|message|>`: models write this when they skip the framing.
    let broken = "<|start|>assistant<|channel|>final 4<|end|>";
    let strict = chorus(&["harmony", "parse", "--input", "text", "-"], broken);
    assert_eq!(code(&strict), 1, "{}", stdout(&strict));
    assert!(
        stderr(&strict).contains("expected <|message|>"),
        "{}",
        stderr(&strict)
    );
    assert!(stdout(&strict).is_empty());

    let lenient = chorus(
        &["harmony", "parse", "--input", "text", "--lenient", "-"],
        broken,
    );
    assert_eq!(code(&lenient), 0, "{}", stderr(&lenient));
    assert!(stdout(&lenient).contains('4'), "{}", stdout(&lenient));
    assert!(
        stderr(&lenient).contains("repaired"),
        "{}",
        stderr(&lenient)
    );
}

#[test]
fn count_reads_a_provider_format_and_sums_its_messages() {
    let output = chorus(
        &[
            "count",
            "--model",
            "gpt-4o",
            "--from",
            "openai-chat",
            "--json",
            "-",
        ],
        &chat_request().to_string(),
    );
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let per_message: Vec<u64> = report["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    assert_eq!(per_message.len(), 6);
    let total = report["total"].as_u64().unwrap();
    assert!(total > per_message.iter().sum::<u64>(), "{report}");
    // The two long texts are the same string, so they cost the same; the short answer less.
    assert!(per_message[1] > 100 && per_message[4] < 20, "{report}");
}

#[test]
fn count_exit_codes_separate_bad_input_from_bad_usage() {
    let request = chat_request().to_string();
    // An unknown model is counted approximately with a warning (issue 20), no longer exit 2;
    // an unreadable --tokenizer file is the usage error now.
    let unknown_model = chorus(&["count", "--model", "no-such-model", "-"], &request);
    assert_eq!(code(&unknown_model), 0, "{}", stderr(&unknown_model));
    assert!(stderr(&unknown_model).contains("warning: unknown model `no-such-model`"));
    let missing_tokenizer = chorus(
        &[
            "count",
            "--model",
            "x",
            "--tokenizer",
            "/nonexistent/tokenizer.json",
            "-",
        ],
        &request,
    );
    assert_eq!(
        code(&missing_tokenizer),
        2,
        "{}",
        stderr(&missing_tokenizer)
    );

    let missing_file = chorus(
        &[
            "count",
            "--model",
            "gpt-4o",
            "/nonexistent/conversation.json",
        ],
        "",
    );
    assert_eq!(code(&missing_file), 2, "{}", stderr(&missing_file));
    assert!(stderr(&missing_file).contains("/nonexistent/conversation.json"));

    let bad_json = chorus(
        &["count", "--model", "gpt-4o", "--from", "openai-chat", "-"],
        "{\"messages\": [",
    );
    assert_eq!(code(&bad_json), 1, "{}", stderr(&bad_json));

    let bad_role = chorus(
        &["count", "--model", "gpt-4o", "--from", "openai-chat", "-"],
        r#"{"messages": [{"role": "wizard", "content": "hi"}]}"#,
    );
    assert_eq!(code(&bad_role), 1, "{}", stderr(&bad_role));
    assert!(
        stderr(&bad_role).contains("/messages/0/role"),
        "{}",
        stderr(&bad_role)
    );
}

#[test]
fn trim_writes_the_kept_conversation_in_its_format_without_orphans() {
    let output = chorus(
        &[
            "trim",
            "--model",
            "gpt-4o",
            "--from",
            "openai-chat",
            "--max-tokens",
            "150",
            "-",
        ],
        &chat_request().to_string(),
    );
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let kept: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(kept["model"], "gpt-4o", "request fields survive: {kept}");
    let messages = kept["messages"].as_array().unwrap();
    assert!(messages.len() < 6, "something was dropped: {kept}");
    assert_eq!(messages.last().unwrap()["content"], "And tomorrow?");
    for (i, message) in messages.iter().enumerate() {
        if message["role"] == "tool" {
            let id = &message["tool_call_id"];
            assert!(
                messages[..i].iter().any(|m| m["tool_calls"]
                    .as_array()
                    .is_some_and(|calls| calls.iter().any(|c| &c["id"] == id))),
                "tool result {id} kept without its call: {kept}"
            );
        }
        if let Some(calls) = message["tool_calls"].as_array() {
            for call in calls {
                assert!(
                    messages[i..]
                        .iter()
                        .any(|m| m["tool_call_id"] == call["id"]),
                    "call {} kept without its result: {kept}",
                    call["id"]
                );
            }
        }
    }
    let report: Value = serde_json::from_str(stderr(&output).trim()).unwrap();
    let dropped = report["dropped"].as_array().unwrap();
    assert_eq!(dropped.len() + messages.len(), 6, "{report}");
    assert!(report["tokens_after"].as_u64().unwrap() <= 150, "{report}");
}

#[test]
fn trim_rejects_a_budget_without_a_model_counter_for_messages() {
    let output = chorus(
        &[
            "trim",
            "--model",
            "gpt-4o",
            "--max-tokens",
            "10",
            "--token-counter",
            "messages",
            "--from",
            "openai-chat",
            "-",
        ],
        &chat_request().to_string(),
    );
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    assert!(stdout(&output).is_empty());
}

#[test]
fn harmony_render_takes_any_channel_unless_strict() {
    let input = r#"{"messages": [{"role": "assistant", "channel": "ничего", "content": "x"}]}"#;
    let args = |strict: bool| {
        let mut a = vec!["harmony", "render", "--mode", "plain", "--output", "text"];
        if strict {
            a.push("--strict");
        }
        a.push("-");
        a
    };
    let lenient = chorus(&args(false), input);
    assert_eq!(code(&lenient), 0, "{}", stderr(&lenient));
    assert!(
        stdout(&lenient).contains("<|channel|>ничего<|message|>x"),
        "{}",
        stdout(&lenient)
    );
    let strict = chorus(&args(true), input);
    assert_eq!(code(&strict), 1, "{}", stderr(&strict));
    assert!(
        stderr(&strict).contains("/messages/0/channel"),
        "{}",
        stderr(&strict)
    );
}

/// The commands that read text refuse bytes that are not UTF-8 as they refuse an unreadable
/// file: exit 2, with the command's prefix and the file named.
#[test]
fn input_that_is_not_utf8_is_refused_alike_by_every_command() {
    const LATIN1: &[u8] = b"{\"messages\": [{\"role\": \"user\", \"content\": \"caf\xe9\"}]}";
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("latin1.json");
    std::fs::write(&path, LATIN1).unwrap();
    let file = path.to_str().unwrap();
    for (args, prefix) in [
        (vec!["count", "--model", "gpt-4o", file], "error"),
        (
            vec!["trim", "--model", "gpt-4o", "--max-tokens", "9", file],
            "error",
        ),
        (
            vec!["convert", "--from", "chorus", "--to", "anthropic", file],
            "error",
        ),
        (vec!["harmony", "render", file], "chorus harmony"),
    ] {
        let out = chorus(&args, "");
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        let said = format!("{prefix}: {file}: expected UTF-8 text; invalid utf-8");
        assert!(
            stderr(&out).starts_with(&said),
            "{args:?}: {}",
            stderr(&out)
        );
        assert_eq!(stdout(&out), "", "{args:?}");
    }
}
