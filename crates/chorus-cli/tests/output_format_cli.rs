//! Machine output is spelled `--json` or `--format json` in every command that has it, and
//! `--format text` is the default; through the real binary.

mod common;

use common::{chorus, code, stderr, stdout};

#[test]
fn json_and_format_json_print_the_same() {
    let chat = r#"{"messages": [{"role": "user", "content": "Hello, Grüße, 你好"}]}"#;
    let commands: [(&[&str], &str); 5] = [
        (
            &[
                "validate",
                "examples/seeds/invalid/003-python-invalid-escalation.json",
            ],
            "",
        ),
        (&["validate", "examples/seeds/003-escalation.json"], ""),
        (&["formats"], ""),
        (&["count", "--model", "gpt-4o", "-"], chat),
        (&["count", "--model", "claude-sonnet-4-5", "-"], chat),
    ];
    for (args, input) in commands {
        let run = |extra: &[&str]| chorus(&[args, extra].concat(), input);
        let short = run(&["--json"]);
        let long = run(&["--format", "json"]);
        assert_eq!(code(&short), code(&long), "{args:?}");
        assert_eq!(stdout(&short), stdout(&long), "{args:?}");
        let value: serde_json::Value = serde_json::from_str(&stdout(&short))
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", stdout(&short)));
        assert!(value.is_array() || value.is_object(), "{args:?}");

        let default = run(&[]);
        let text = run(&["--format", "text"]);
        assert_eq!(code(&default), code(&text), "{args:?}");
        assert_eq!(stdout(&default), stdout(&text), "{args:?}");
        assert_ne!(stdout(&default), stdout(&short), "{args:?}");
    }
}

#[test]
fn the_two_spellings_cannot_disagree() {
    let out = chorus(&["formats", "--json", "--format", "text"], "");
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("cannot be used with"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_help_names_both_spellings() {
    let top = stdout(&chorus(&["--help"], ""));
    assert!(
        top.contains("`--format json` or its short form `--json`"),
        "{top}"
    );
    for command in [
        &["validate"][..],
        &["formats"],
        &["count"],
        &["bench", "bus"],
    ] {
        let help = stdout(&chorus(&[command, &["--help"]].concat(), ""));
        assert!(help.contains("--format <FORMAT>"), "{command:?}: {help}");
        assert!(help.contains("--json"), "{command:?}: {help}");
        assert!(
            help.contains("The same as `--format json`"),
            "{command:?}: {help}"
        );
    }
}
