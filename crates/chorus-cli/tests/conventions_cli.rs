//! The command-line conventions every command shares: a secret read from standard input or a
//! file rather than the command line, completion scripts for the shells, an example in every
//! command's help.

mod common;

use common::{chorus, code, stderr, stdout};

/// SHA-256 of "test", as `chorus serve --hash-token` prints it.
const TEST_HASH: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

#[test]
fn hash_token_reads_the_secret_from_stdin_or_a_file() {
    let piped = chorus(&["serve", "--hash-token", "-"], "test\n");
    assert_eq!(code(&piped), 0, "{}", stderr(&piped));
    assert_eq!(stdout(&piped).trim(), TEST_HASH);
    assert_eq!(stderr(&piped), "", "no warning for a token read from stdin");

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, "  test\r\n").unwrap();
    let from_file = chorus(
        &["serve", "--hash-token", &format!("@{}", file.display())],
        "",
    );
    assert_eq!(code(&from_file), 0, "{}", stderr(&from_file));
    assert_eq!(stdout(&from_file).trim(), TEST_HASH);

    // On the command line it still works, with a warning.
    let inline = chorus(&["serve", "--hash-token", "test"], "");
    assert_eq!(stdout(&inline).trim(), TEST_HASH);
    assert!(
        stderr(&inline).contains("process list"),
        "{}",
        stderr(&inline)
    );

    let empty = chorus(&["serve", "--hash-token", "-"], "\n");
    assert_eq!(code(&empty), 2);
    assert!(
        stderr(&empty).contains("expected a token, found nothing"),
        "{}",
        stderr(&empty)
    );
    let missing = chorus(&["serve", "--hash-token", "@/nonexistent/token"], "");
    assert_eq!(code(&missing), 2);
    assert!(
        stderr(&missing).contains("/nonexistent/token"),
        "{}",
        stderr(&missing)
    );
}

#[test]
fn completions_are_scripts_the_shells_accept() {
    let bash = chorus(&["completions", "bash"], "");
    assert_eq!(code(&bash), 0, "{}", stderr(&bash));
    let script = stdout(&bash);
    for word in ["validate", "serve", "--hash-token", "completions"] {
        assert!(script.contains(word), "the bash script lacks {word}");
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chorus.bash");
    std::fs::write(&path, &script).unwrap();
    let checked = std::process::Command::new("bash")
        .arg("-n")
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stderr)
    );
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let out = chorus(&["completions", shell], "");
        assert_eq!(code(&out), 0, "{shell}: {}", stderr(&out));
        assert!(stdout(&out).contains("validate"), "{shell}");
    }
    let bad = chorus(&["completions", "tcsh"], "");
    assert_eq!(code(&bad), 2);
}

#[test]
fn every_command_help_shows_an_example() {
    let top = chorus(&["--help"], "");
    let commands: Vec<String> = stdout(&top)
        .split("Commands:")
        .nth(1)
        .unwrap()
        .split("Options:")
        .next()
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .filter(|c| c != "help")
        .collect();
    assert!(commands.len() >= 13, "{commands:?}");
    for command in commands {
        let help = chorus(&[&command, "--help"], "");
        let text = stdout(&help);
        assert!(
            text.contains(&format!("Example:\n  chorus {command}")),
            "`chorus {command} --help` shows no example:\n{text}"
        );
    }
}
