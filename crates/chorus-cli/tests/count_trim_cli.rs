//! `chorus count` for every provider family and `chorus trim` at its limits, through the real
//! binary, each run stopped after a minute so that a command that never returns fails the test.

mod common;

use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use common::{code, spawn, stderr, stdout};

/// Runs `chorus ARGS` with `stdin`; kills it and fails when it runs longer than a minute.
fn chorus_within_a_minute(args: &[&str], stdin: &str) -> Output {
    let mut child = spawn(args, stdin);
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("chorus {args:?} did not return within a minute");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// A conversation with text and two images (a 1024x768 PNG given inline, a remote one with
/// size hints).
fn text_and_images() -> String {
    // A PNG header is all a size reader needs: signature, IHDR length, type, width, height.
    let mut png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
    png.extend(1024u32.to_be_bytes());
    png.extend(768u32.to_be_bytes());
    png.extend([8, 2, 0, 0, 0, 0, 0, 0, 0]);
    let b64 = base64_encode(&png);
    json!({"messages": [
        {"role": "system", "content": "You describe pictures in one sentence."},
        {"role": "user", "content": [
            {"type": "text", "text": "What is in these pictures? 这两张图片里有什么?"},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{b64}")}},
            {"type": "image_url", "image_url": {"url": "https://example.com/b.jpg", "width": 1600, "height": 1200}}
        ]}
    ]})
    .to_string()
}

fn base64_encode(bytes: &[u8]) -> String {
    const ABC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().fold(0u32, |n, b| n << 8 | u32::from(*b)) << (8 * (3 - chunk.len()));
        for i in 0..=chunk.len() {
            out.push(ABC[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
        out.push_str(&"=".repeat(3 - chunk.len()));
    }
    out
}

fn count(model: &str, extra: &[&str]) -> (Value, String) {
    let mut args = vec!["count", "--json", "--model", model];
    args.extend(extra);
    args.push("-");
    let output = chorus_within_a_minute(&args, &text_and_images());
    assert_eq!(code(&output), 0, "{model}: {}", stderr(&output));
    (
        serde_json::from_str(&stdout(&output)).unwrap(),
        stderr(&output),
    )
}

#[test]
fn claude_gemini_and_unknown_models_count_as_estimates_with_a_warning() {
    let (openai, quiet) = count("gpt-4o", &[]);
    assert_eq!(openai["exact"], json!(true));
    assert!(quiet.is_empty(), "{quiet}");
    for (model, says) in [
        ("claude-sonnet-4-5", "Anthropic's tokenizer is not public"),
        ("gemini-2.5-pro", "Gemini's tokenizer is not public"),
        ("some-unknown-model", "unknown model `some-unknown-model`"),
    ] {
        let (report, warning) = count(model, &[]);
        assert_eq!(report["exact"], json!(false), "{model}");
        assert!(
            warning.starts_with("warning: ") && warning.contains(says),
            "{warning}"
        );
        assert!(
            report["breakdown"]["images"].as_u64().unwrap() > 0,
            "{report}"
        );
        assert_eq!(
            report["breakdown"]["text"], openai["breakdown"]["text"],
            "{model}"
        );
    }
    let (claude, _) = count("claude-sonnet-4-5", &[]);
    let (gemini, _) = count("gemini-2.5-pro", &[]);
    assert_ne!(claude["breakdown"]["images"], gemini["breakdown"]["images"]);
}

#[test]
fn a_real_tokenizer_json_counts_text_exactly() {
    let Some(path) = std::env::var_os("CHORUS_TEST_QWEN3_TOKENIZER").filter(|p| !p.is_empty())
    else {
        eprintln!(
            "a_real_tokenizer_json_counts_text_exactly: not run: CHORUS_TEST_QWEN3_TOKENIZER is not set (bash .ci/fetch-tokenizers)"
        );
        return;
    };
    let path = path.to_str().unwrap().to_owned();
    let (report, warning) = count("qwen3-8b", &["--tokenizer", &path]);
    assert!(warning.is_empty(), "{warning}");
    assert_eq!(report["exact"], json!(true));
    assert_eq!(report["tokenizer"], json!(path));
    let (estimate, _) = count("qwen3-8b", &[]);
    assert_eq!(
        report["breakdown"]["images"],
        estimate["breakdown"]["images"]
    );
    assert_ne!(report["breakdown"]["text"], estimate["breakdown"]["text"]);
}

#[test]
fn trim_of_an_empty_history_for_gpt_oss_returns_and_says_why() {
    // Regression: this never returned.
    let output = chorus_within_a_minute(
        &["trim", "--model", "gpt-oss-20b", "--max-tokens", "7", "-"],
        r#"{"messages":[]}"#,
    );
    assert_eq!(code(&output), 1, "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.contains("into a budget of 7") && err.contains("reply priming"),
        "{err}"
    );
    assert!(stdout(&output).is_empty());
}

#[test]
fn trim_of_pinned_messages_over_budget_exits_1_with_the_figures() {
    // Regression: this exited 0 with tokens_after above the budget.
    let history = json!({"messages": [
        {"role": "system", "content": "rule ".repeat(100)},
        {"role": "developer", "content": "Answer in French."},
        {"role": "user", "content": [{"type": "data", "kind": "state", "data": {"step": 1}}]}
    ]})
    .to_string();
    for model in ["gpt-4o", "gpt-oss-20b", "claude-sonnet-4-5"] {
        let output = chorus_within_a_minute(
            &["trim", "--model", model, "--max-tokens", "50", "-"],
            &history,
        );
        assert_eq!(code(&output), 1, "{model}: {}", stderr(&output));
        let err = stderr(&output);
        assert!(
            err.contains("into a budget of 50")
                && err.contains("pinned system/developer/data messages"),
            "{model}: {err}"
        );
    }
}
