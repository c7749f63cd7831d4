//! Codecs stand alone: no codec names another codec, and `src/common/` names none. What two
//! codecs share lives in `common/` (see "where to add a codec" in docs/formats.md).
//!
//! The check reads the sources: every path that starts with `crate::` (also each path inside
//! `crate::{...}`) and every `super::super`, which would leave a codec's folder.

use std::fs;
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The `.rs` files under `dir`, recursively.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The codec folders and the codec types `codecs/mod.rs` re-exports.
fn codecs() -> (Vec<String>, Vec<String>) {
    let list = fs::read_to_string(src().join("codecs/mod.rs")).unwrap();
    let folders: Vec<String> = list
        .lines()
        .filter_map(|l| l.strip_prefix("mod ").or(l.strip_prefix("pub(crate) mod ")))
        .filter_map(|l| l.strip_suffix(';'))
        .map(str::to_owned)
        .collect();
    let types: Vec<String> = list
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub use "))
        .flat_map(|l| {
            let names = l.split_once("::").map_or("", |(_, rest)| rest);
            names
                .trim_end_matches(';')
                .trim_matches(['{', '}'])
                .split(',')
                .map(|n| n.trim().to_owned())
                .collect::<Vec<_>>()
        })
        .filter(|n| !n.is_empty())
        .collect();
    (folders, types)
}

/// The first segment of every `crate::` path in `text`, with its line.
fn crate_paths(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let names = match rest.strip_prefix('{') {
                Some(group) => group.split('}').next().unwrap_or_default(),
                None => rest,
            };
            for name in names.split(',') {
                let first: String = name
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !first.is_empty() {
                    out.push((n + 1, first));
                }
            }
        }
    }
    out
}

#[test]
fn no_codec_names_another_and_common_names_none() {
    let (folders, types) = codecs();
    assert!(
        folders.len() >= 9 && types.len() >= 10,
        "{folders:?} {types:?}"
    );
    let mut forbidden: Vec<String> = types.clone();
    forbidden.extend(["codecs".to_owned(), "openai_chat".to_owned()]);
    let mut places = Vec::new();
    let mut checked = 0;
    let trees = folders
        .iter()
        .map(|f| src().join("codecs").join(f))
        .chain([src().join("common")]);
    for tree in trees {
        for file in rust_files(&tree) {
            let text = fs::read_to_string(&file).unwrap();
            checked += 1;
            for (line, first) in crate_paths(&text) {
                if forbidden.contains(&first) {
                    places.push(format!("{}:{line}: crate::{first}", file.display()));
                }
            }
            for (n, l) in text.lines().enumerate() {
                if l.contains("super::super") {
                    places.push(format!("{}:{}: super::super", file.display(), n + 1));
                }
            }
        }
    }
    assert!(checked > 40, "only {checked} files read");
    assert!(
        places.is_empty(),
        "move what codecs share into src/common/:\n{}",
        places.join("\n")
    );
}

#[test]
fn the_check_sees_paths_in_groups_and_alone() {
    let text = "use crate::{common::json, Anthropic};\nlet x = crate::codecs::qwen3::f();";
    let found: Vec<String> = crate_paths(text).into_iter().map(|(_, p)| p).collect();
    assert_eq!(found, ["common", "Anthropic", "codecs"]);
}
