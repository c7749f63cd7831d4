//! Differential test against the openai-harmony 0.0.8 Python package from PyPI (the reference):
//! generated conversations (Unicode and odd header text, undeclared channels, numbers in every
//! JSON form in tool schemas, every role, multi-turn tool use) rendered in every mode with and
//! without dropping analysis; their tokens, damaged, parsed strictly and streamed.
//!
//! Needs `CHORUS_TEST_PYTHON` (a python with `openai-harmony==0.0.8`, see
//! `.ci/python-oracles.txt`); without it the test says "not run" and passes, with it an oracle
//! that cannot run fails the test. Every case of a run goes to one python process
//! (`tests/oracle/harmony_wheel.py`, JSON lines). Each run draws new cases from a fresh seed,
//! printed at the start; `HARMONY_WHEEL_SEED=<seed>` replays a run, and the seeds in
//! `tests/oracle/harmony_wheel_seeds.txt` (runs that once failed) are replayed on every run.
//! `HARMONY_WHEEL_CASES` sets the number of conversations per seed (default 700; each gives a
//! render case, a parse case and a stream case).
//!
//! Run alone: `CHORUS_TEST_PYTHON=$HOME/.cache/chorus/oracle-venv/bin/python
//! cargo test -p chorus-harmony --test wheel -- --nocapture` (prints the counts).

mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use chorus_harmony::tokens::{self, Rank};
use chorus_harmony::{
    Conversation, Message, ParseOptions, RenderMode, RenderOptions, Role, StreamParser, encoding,
};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{Value, json};

const MODES: [(&str, RenderMode); 3] = [
    ("completion", RenderMode::Completion),
    ("training", RenderMode::Training),
    ("plain", RenderMode::Plain),
];

/// One generated case and what chorus made of it.
enum Case {
    Render {
        json: String,
    },
    Parse {
        tokens: Vec<Rank>,
        role: Option<Role>,
    },
    Stream {
        tokens: Vec<Rank>,
        role: Option<Role>,
    },
}

impl Case {
    fn request(&self) -> Value {
        let role = |role: &Option<Role>| role.map(|r| r.as_str());
        match self {
            Case::Render { json } => json!({"op": "render", "conversation": json}),
            Case::Parse { tokens, role: r } => {
                json!({"op": "parse", "tokens": tokens, "role": role(r)})
            }
            Case::Stream { tokens, role: r } => {
                json!({"op": "stream", "tokens": tokens, "role": role(r)})
            }
        }
    }
}

/// How a case came out.
#[derive(Debug, PartialEq)]
enum Outcome {
    Agrees,
    /// Both refuse the input.
    BothRefuse,
    RefusedInjection,
    Differs(String),
}

fn seed_runner(seed: u64) -> TestRunner {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
    )
}

fn draw<S: Strategy>(runner: &mut TestRunner, strategy: &S) -> S::Value {
    strategy
        .new_tree(runner)
        .expect("the strategies never reject everything")
        .current()
}

/// The rendering options for one of the reference's modes.
fn options(mode: RenderMode, drop: bool) -> RenderOptions {
    RenderOptions {
        mode,
        drop_analysis: drop,
        ..RenderOptions::default()
    }
}

/// Tokens to parse: a generated conversation rendered plainly, sometimes damaged.
fn completion(runner: &mut TestRunner) -> Option<(Vec<Rank>, Option<Role>)> {
    let json = draw(runner, &support::wild::conversation_json());
    let conversation = Conversation::from_json(&json).ok()?;
    let mut ids = chorus_harmony::render(&conversation, &options(RenderMode::Plain, false)).ok()?;
    let (damage, at, special) = draw(
        runner,
        &(
            0u8..6,
            any::<prop::sample::Index>(),
            prop::sample::select(vec![
                tokens::START,
                tokens::END,
                tokens::MESSAGE,
                tokens::CHANNEL,
                tokens::CONSTRAIN,
                tokens::CALL,
                tokens::RETURN,
            ]),
        ),
    );
    let i = at.index(ids.len().max(1));
    match damage {
        1 => ids.truncate(i),
        2 if !ids.is_empty() => {
            ids.remove(i);
        }
        3 => ids.insert(i.min(ids.len()), special),
        _ => {}
    }
    let mut assistant = vec![tokens::START];
    assistant.extend(encoding().encode_ordinary("assistant"));
    let role = ids.starts_with(&assistant) && damage != 4;
    if role {
        ids.drain(..assistant.len());
    }
    Some((ids, role.then_some(Role::Assistant)))
}

fn cases(seed: u64, count: usize) -> Vec<Case> {
    let mut runner = seed_runner(seed);
    let mut cases = Vec::with_capacity(count * 3);
    for _ in 0..count {
        let json = draw(&mut runner, &support::wild::conversation_json());
        cases.push(Case::Render { json });
        // Every other case: plain assistant output (most of it parses) instead of wild text.
        let wild = cases.len() % 2 == 0;
        let (tokens, role) = match completion(&mut runner).filter(|_| wild) {
            Some(found) => found,
            None if wild => (draw(&mut runner, &support::token_soup()), None),
            None => {
                let (tokens, with_role) =
                    draw(&mut runner, &(support::completion_tokens(), any::<bool>()));
                if with_role {
                    (
                        support::strip_assistant_start(&tokens),
                        Some(Role::Assistant),
                    )
                } else {
                    (tokens, None)
                }
            }
        };
        cases.push(Case::Parse {
            tokens: tokens.clone(),
            role,
        });
        cases.push(Case::Stream { tokens, role });
    }
    cases
}

/// Whether some header field of the conversation spells a special token.
fn spells_special_token(conversation: &Conversation) -> bool {
    conversation.messages.iter().any(|m| {
        let content_type = m
            .content_type
            .as_deref()
            .map(|c| c.strip_prefix("<|constrain|>").unwrap_or(c));
        [
            m.author.name.as_deref(),
            m.recipient.as_deref(),
            m.channel.as_deref(),
            content_type,
        ]
        .into_iter()
        .flatten()
        .any(|text| tokens::find_special_text(text).is_some())
    })
}

fn compare_render(json: &str, answer: &Value) -> Outcome {
    // The reference reads some JSON it then cannot render (1e400 is read as infinity, which its
    // Rust core refuses); chorus refuses such JSON when reading it.
    let refuses_all = answer.get("error").is_some()
        || answer
            .as_object()
            .is_some_and(|modes| modes.values().all(|v| v.get("error").is_some()));
    let conversation = match (Conversation::from_json(json), refuses_all) {
        (Ok(conversation), _) => conversation,
        (Err(_), true) => return Outcome::BothRefuse,
        (Err(error), false) => {
            return Outcome::Differs(format!("chorus refuses to read it: {error}"));
        }
    };
    let injection = spells_special_token(&conversation);
    let mut rendered = false;
    for (name, mode) in MODES {
        for drop in [true, false] {
            let key = format!("{name}/{}", if drop { "drop" } else { "keep" });
            let theirs = &answer[&key];
            let ours = chorus_harmony::render(&conversation, &options(mode, drop));
            match (ours, theirs.get("error")) {
                (Err(error), _) if injection => {
                    if !error.to_string().contains("special token") {
                        return Outcome::Differs(format!(
                            "{key}: refused for another reason: {error}"
                        ));
                    }
                    return Outcome::RefusedInjection;
                }
                (Err(_), Some(_)) => {}
                (Ok(ours), None) => {
                    rendered = true;
                    let theirs: Vec<Rank> = serde_json::from_value(theirs.clone()).unwrap();
                    if ours != theirs {
                        return Outcome::Differs(format!(
                            "{key}: chorus renders\n{:?}\nthe reference renders\n{:?}",
                            encoding().decode_utf8(&ours),
                            encoding().decode_utf8(&theirs)
                        ));
                    }
                }
                (ours, theirs) => {
                    return Outcome::Differs(format!(
                        "{key}: chorus {ours:?}, reference {theirs:?}"
                    ));
                }
            }
        }
    }
    if injection {
        return Outcome::Differs("chorus renders header text that spells a special token".into());
    }
    if rendered {
        Outcome::Agrees
    } else {
        Outcome::BothRefuse
    }
}

fn messages(value: &Value) -> Vec<Message> {
    serde_json::from_value(value.clone()).expect("the reference's messages read as chorus messages")
}

fn compare_parse(tokens: &[Rank], role: Option<Role>, answer: &Value) -> Outcome {
    let ours = chorus_harmony::parse(tokens, role, ParseOptions::STRICT);
    match (ours, answer.get("messages")) {
        (Ok(ours), Some(theirs)) if ours.messages == messages(theirs) => Outcome::Agrees,
        (Err(_), None) => Outcome::BothRefuse,
        (ours, _) => Outcome::Differs(format!("chorus {ours:?}, reference {answer}")),
    }
}

fn compare_stream(tokens: &[Rank], role: Option<Role>, answer: &Value) -> Outcome {
    let steps = answer["steps"].as_array().expect("steps");
    let mut parser = StreamParser::new(role, ParseOptions::STRICT);
    for (i, &token) in tokens.iter().enumerate() {
        let accepted = parser.process(token).is_ok();
        let Some(step) = steps.get(i) else {
            return if accepted {
                Outcome::Differs(format!(
                    "token {i} ({token}): the reference stops, chorus goes on"
                ))
            } else if messages(&answer["messages"]) == parser.messages() {
                Outcome::Agrees
            } else {
                Outcome::Differs(format!("messages before the error differ at token {i}"))
            };
        };
        if !accepted {
            return Outcome::Differs(format!(
                "token {i} ({token}): chorus stops, the reference goes on"
            ));
        }
        let ours = json!({
            "role": parser.current_role().map(|r| r.as_str()),
            "channel": parser.current_channel(),
            "recipient": parser.current_recipient(),
            "content_type": parser.current_content_type(),
            "delta": parser.last_content_delta(),
            "content": parser.current_content(),
            "messages": parser.messages().len(),
        });
        if &ours != step {
            return Outcome::Differs(format!(
                "token {i} ({token}): chorus {ours}, reference {step}"
            ));
        }
    }
    if messages(&answer["messages"]) == parser.messages() {
        Outcome::Agrees
    } else {
        Outcome::Differs("the messages at the end differ".into())
    }
}

fn compare(case: &Case, answer: &Value) -> Outcome {
    match case {
        Case::Render { json } => compare_render(json, answer),
        Case::Parse { tokens, role } => compare_parse(tokens, *role, answer),
        Case::Stream { tokens, role } => compare_stream(tokens, *role, answer),
    }
}

/// Runs every case through one python process; returns its answers in order.
fn ask_reference(python: &str, cases: &[Case]) -> Vec<Value> {
    let vocabulary =
        std::env::temp_dir().join(format!("chorus-wheel-vocab-{}", std::process::id()));
    std::fs::create_dir_all(&vocabulary).unwrap();
    let mut file = std::io::BufWriter::new(
        std::fs::File::create(vocabulary.join("o200k_base.tiktoken")).unwrap(),
    );
    encoding().write_tiktoken_file(&mut file).unwrap();
    file.flush().unwrap();
    drop(file);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/oracle/harmony_wheel.py");
    let mut child = Command::new(python)
        .arg(script)
        .env("TIKTOKEN_ENCODINGS_BASE", &vocabulary)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("CHORUS_TEST_PYTHON={python} cannot run: {e}"));
    let requests: Vec<String> = cases.iter().map(|c| c.request().to_string()).collect();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        for request in requests {
            writeln!(stdin, "{request}").unwrap();
        }
    });
    let answers: Vec<Value> = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(|line| serde_json::from_str(&line.unwrap()).unwrap())
        .collect();
    writer.join().unwrap();
    let status = child.wait().unwrap();
    std::fs::remove_dir_all(&vocabulary).ok();
    assert!(
        status.success(),
        "the reference's python exited with {status}"
    );
    assert_eq!(
        answers.len(),
        cases.len(),
        "the reference answered every case"
    );
    answers
}

fn seeds() -> Vec<u64> {
    if let Ok(seed) = std::env::var("HARMONY_WHEEL_SEED") {
        return vec![seed.parse().expect("HARMONY_WHEEL_SEED is a number")];
    }
    let kept = include_str!("oracle/harmony_wheel_seeds.txt");
    let mut seeds: Vec<u64> = kept
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.parse().expect("seeds are numbers"))
        .collect();
    let fresh = std::hash::BuildHasher::hash_one(
        &std::collections::hash_map::RandomState::new(),
        std::time::SystemTime::now(),
    );
    seeds.push(fresh);
    seeds
}

#[test]
fn chorus_matches_the_openai_harmony_python_package() {
    let Ok(python) = std::env::var("CHORUS_TEST_PYTHON") else {
        let _ = writeln!(
            std::io::stderr(),
            "not run: CHORUS_TEST_PYTHON is not set (a python with openai-harmony==0.0.8)"
        );
        return;
    };
    let count: usize = std::env::var("HARMONY_WHEEL_CASES")
        .map(|n| n.parse().expect("HARMONY_WHEEL_CASES is a number"))
        .unwrap_or(700);
    let mut failures = Vec::new();
    for seed in seeds() {
        let cases = cases(seed, count);
        let answers = ask_reference(&python, &cases);
        let (mut agree, mut both_refuse, mut refused) = ([0usize; 3], [0usize; 3], 0usize);
        for (case, answer) in cases.iter().zip(&answers) {
            let kind = match case {
                Case::Render { .. } => 0,
                Case::Parse { .. } => 1,
                Case::Stream { .. } => 2,
            };
            match compare(case, answer) {
                Outcome::Agrees => agree[kind] += 1,
                Outcome::BothRefuse => {
                    agree[kind] += 1;
                    both_refuse[kind] += 1;
                }
                Outcome::RefusedInjection => refused += 1,
                Outcome::Differs(why) => {
                    failures.push(format!("seed {seed}: {why}\nrequest: {}", case.request()))
                }
            }
        }
        eprintln!(
            "openai-harmony 0.0.8 (Python), seed {seed}: {} of {} generated cases agree \
             (render in 3 modes x 2 analysis rules {}, strict parse {}, stream {}; \
             of these both refuse the input: render {}, parse {}); \
             {refused} refused as header injection, counted apart; {} differ",
            agree.iter().sum::<usize>(),
            cases.len(),
            agree[0],
            agree[1],
            agree[2],
            both_refuse[0],
            both_refuse[1],
            cases.len() - agree.iter().sum::<usize>() - refused,
        );
    }
    assert!(
        failures.is_empty(),
        "{} cases differ from the reference (keep the seed in tests/oracle/harmony_wheel_seeds.txt once fixed):\n{}",
        failures.len(),
        failures
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n\n")
    );
}
