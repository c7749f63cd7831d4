//! The JSON Schemas checked in under `schemas/` must equal the ones generated from the types.
//! Regenerate them with `CHORUS_BLESS=1 cargo test -p chorus-core --test schemas_in_sync`.

use std::path::PathBuf;

use chorus_core::Kind;
use chorus_core::handoff::HandoffType;
use chorus_core::schema::handoff_data_schema;
use serde_json::Value;

fn schemas_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../schemas")
}

fn generated() -> Vec<(PathBuf, Value)> {
    let dir = schemas_dir();
    let mut files: Vec<(PathBuf, Value)> = Kind::ALL
        .iter()
        .map(|kind| {
            (
                dir.join(format!("{}.schema.json", kind.name())),
                kind.schema(),
            )
        })
        .collect();
    for handoff_type in HandoffType::STANDARD {
        let name = handoff_type.as_str().to_lowercase();
        let schema = handoff_data_schema(&handoff_type).expect("standard type");
        files.push((
            dir.join(format!("handoff-data/{name}_data.schema.json")),
            schema,
        ));
    }
    files
}

#[test]
fn checked_in_schemas_match_the_types() {
    let bless = std::env::var_os("CHORUS_BLESS").is_some();
    let mut drifted = Vec::new();
    for (path, schema) in generated() {
        let text = serde_json::to_string_pretty(&schema).unwrap() + "\n";
        if bless {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &text).unwrap();
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            drifted.push(path.display().to_string());
        }
    }
    assert!(
        drifted.is_empty(),
        "schemas drifted from the types: {drifted:?}\nregenerate: CHORUS_BLESS=1 cargo test -p chorus-core --test schemas_in_sync"
    );
}

#[test]
fn every_checked_in_schema_is_a_valid_2020_12_schema() {
    for (path, _) in generated() {
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let schema: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            schema["$schema"],
            "https://json-schema.org/draft/2020-12/schema",
            "{}",
            path.display()
        );
        jsonschema::draft202012::new(&schema).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}
