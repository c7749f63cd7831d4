//! The code blocks of the README and of every page in `docs/`, as a reader copies them: every
//! ```toml and ```json block parses; a block after `<!-- test: chorus.toml -->` loads as a
//! server config; a block after `<!-- test: flow -->` parses as a flow file; JSON after `<!-- test: validate -->` passes `chorus validate`; shell blocks
//! after `<!-- test: run -->` run with bash from the repository root (with `chorus` on the PATH)
//! against a real `chorus serve` started with `examples/clients/chorus.toml` (`CHORUS_URL` and
//! `CHORUS_ADMIN_TOKEN` set), and exit 0.

mod common;

use std::process::Command;

use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};

use common::{have_programs, repo};

/// One fenced code block of a Markdown file.
struct Block {
    /// `FILE:LINE` of its opening fence.
    at: String,
    /// The first word of its info string (`toml`, `json`, `sh`…).
    lang: String,
    /// The `<!-- test: MARK -->` comment right before it.
    mark: Option<String>,
    text: String,
}

/// The README and `docs/*.md`, in name order.
fn markdown_files() -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(repo().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort();
    files.insert(0, repo().join("README.md"));
    files
}

/// Every fenced code block of the README and the docs.
fn blocks() -> Vec<Block> {
    let mut blocks = Vec::new();
    for path in markdown_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path
            .strip_prefix(repo())
            .unwrap_or(&path)
            .display()
            .to_string();
        let mut mark = None;
        let mut open: Option<Block> = None;
        for (event, range) in Parser::new(&text).into_offset_iter() {
            match event {
                Event::Html(html) => {
                    let html = html.trim();
                    if let Some(rest) = html.strip_prefix("<!-- test:") {
                        mark = Some(rest.trim_end_matches("-->").trim().to_owned());
                    }
                }
                Event::Start(Tag::HtmlBlock) => {}
                Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) => {
                    let line = text[..range.start].lines().count() + 1;
                    open = Some(Block {
                        at: format!("{name}:{line}"),
                        lang: info.split_whitespace().next().unwrap_or("").to_owned(),
                        mark: mark.take(),
                        text: String::new(),
                    });
                }
                Event::Text(chunk) => {
                    if let Some(block) = open.as_mut() {
                        block.text.push_str(&chunk);
                    }
                }
                Event::End(TagEnd::CodeBlock) => blocks.extend(open.take()),
                Event::End(TagEnd::HtmlBlock) => {}
                // Anything else between a mark and a block detaches the mark.
                _ => mark = None,
            }
        }
    }
    blocks
}

#[test]
fn every_toml_and_json_block_parses() {
    let blocks = blocks();
    let mut failures = Vec::new();
    let mut counted = (0, 0);
    for block in &blocks {
        match block.lang.as_str() {
            "toml" => {
                counted.0 += 1;
                if let Err(e) = toml::from_str::<toml::Table>(&block.text) {
                    failures.push(format!("{}: TOML: {e}", block.at));
                }
            }
            "json" => {
                counted.1 += 1;
                if let Err(e) = serde_json::from_str::<serde_json::Value>(&block.text) {
                    failures.push(format!("{}: JSON: {e}", block.at));
                }
            }
            _ => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        counted.0 >= 7 && counted.1 >= 1,
        "too few blocks found: {counted:?}"
    );
}

/// The blocks marked `<!-- test: MARK -->`; at least one (a mark lost in an edit fails).
fn marked<'a>(blocks: &'a [Block], mark: &str) -> Vec<&'a Block> {
    let found: Vec<_> = blocks
        .iter()
        .filter(|b| b.mark.as_deref() == Some(mark))
        .collect();
    assert!(!found.is_empty(), "no block marked `<!-- test: {mark} -->`");
    found
}

#[test]
fn marked_config_blocks_load_as_a_server_config() {
    for block in marked(&blocks(), "chorus.toml") {
        if let Err(e) = chorus_server::ServerConfig::from_toml(&block.text) {
            panic!("{}: {}", block.at, e.detail);
        }
    }
}

#[test]
fn marked_flow_blocks_parse_as_flow_files() {
    for block in marked(&blocks(), "flow") {
        if let Err(e) = chorus_agent::flow::FlowSpec::parse(&block.text) {
            panic!("{}: {e}", block.at);
        }
    }
}

#[test]
fn marked_json_blocks_pass_chorus_validate() {
    for block in marked(&blocks(), "validate") {
        let out = common::chorus(&["validate", "-"], &block.text);
        assert_eq!(
            common::code(&out),
            0,
            "{}: {}{}",
            block.at,
            common::stdout(&out),
            common::stderr(&out)
        );
    }
}

#[test]
fn runnable_shell_blocks_run_against_a_real_server() {
    let blocks = blocks();
    let runnable = marked(&blocks, "run");
    if !have_programs("the runnable doc blocks", &["bash", "curl", "jq"]) {
        return;
    }
    // The example clients' config with an admin token the blocks can use.
    let dir = tempfile::tempdir().unwrap();
    let config = std::fs::read_to_string(repo().join("examples/clients/chorus.toml")).unwrap();
    let admin = "docs-test-admin-token";
    let config = format!(
        "admin_token_sha256 = \"{}\"\n{config}",
        chorus_server::hash_token(admin)
    );
    let config_path = dir.path().join("chorus.toml");
    std::fs::write(&config_path, config).unwrap();
    let mut served = common::Served::start(
        dir.path(),
        &[
            "--store",
            "memory",
            "--config",
            config_path.to_str().unwrap(),
        ],
        std::process::Stdio::null(),
    );
    served.keep_reading();
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_chorus"))
        .parent()
        .unwrap()
        .to_owned();
    let path = std::env::join_paths(
        std::iter::once(bin).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    for block in runnable {
        assert!(
            matches!(block.lang.as_str(), "sh" | "bash" | "console"),
            "{}: a runnable block must be a shell block, not {:?}",
            block.at,
            block.lang
        );
        let out = Command::new("bash")
            .args(["-euo", "pipefail", "-c", &block.text])
            .current_dir(repo())
            .env("PATH", &path)
            .env("CHORUS_URL", format!("http://{}", served.addr))
            .env("CHORUS_ADMIN_TOKEN", admin)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: {:?}\n{}\n{}\n{}",
            block.at,
            out.status,
            block.text,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
