//! Every JSON example of seeds 000 and 003 (in `examples/seeds/`) is accepted as written, and the
//! seed's deliberately invalid escalation message is rejected where the seed says.

use std::path::PathBuf;

use chorus_core::handoff::{HandoffMessage, HandoffPacket, MappingOptions};
use chorus_core::{Kind, Report, Severity, Validator};
use serde_json::Value;

fn example(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/seeds")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn validate(name: &str) -> Report {
    Validator::standard().validate_bytes(&example(name), None)
}

#[test]
fn every_valid_seed_example_is_accepted_as_its_kind() {
    let expected = [
        ("000-a1-text-part.json", Kind::Message),
        ("000-a1-image-part.json", Kind::Message),
        ("000-a1-video-frame-part.json", Kind::Message),
        ("000-a1-audio-part.json", Kind::Message),
        ("000-a2-1-tool-call.json", Kind::Message),
        ("000-a2-2-tool-success.json", Kind::Message),
        ("000-a2-2-tool-error.json", Kind::Message),
        ("000-a2-3-multimodal-tool-result.json", Kind::Message),
        ("000-a3-handoff-packet.json", Kind::HarmonyHandoff),
        ("000-a4-citation-map.json", Kind::Message),
        ("000-a6-metadata.json", Kind::Message),
        ("000-exercise-1-video-frames.json", Kind::Message),
        ("000-exercise-2-halted.json", Kind::Message),
        ("003-escalation.json", Kind::Handoff),
        ("003-python-valid-escalation.json", Kind::Handoff),
    ];
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/seeds");
    let on_disk = std::fs::read_dir(dir).unwrap().filter(|e| {
        let name = e.as_ref().unwrap().file_name().into_string().unwrap();
        name.ends_with(".json") && !name.contains("invalid")
    });
    assert_eq!(
        on_disk.count(),
        expected.len(),
        "every example file is listed here"
    );
    for (name, kind) in expected {
        let report = validate(name);
        assert_eq!(report.kind, Some(kind), "{name}");
        assert!(report.is_valid(), "{name}: {:?}", report.problems);
    }
}

#[test]
fn the_elided_audio_placeholder_is_only_a_warning() {
    let report = validate("000-a1-audio-part.json");
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    let problem = &report.problems[0];
    assert_eq!(problem.severity, Severity::Warning);
    assert_eq!(problem.pointer, "/content/0/input_audio/data");
}

#[test]
fn the_seeds_invalid_escalation_is_rejected_for_the_missing_name() {
    let report = validate("invalid/003-python-invalid-escalation.json");
    let errors: Vec<_> = report.errors().collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].pointer, "/payload/data/customer_info");
    assert!(
        errors[0].message.contains("\"name\""),
        "{}",
        errors[0].message
    );
}

#[test]
fn the_checked_in_handoff_schema_agrees_with_the_validator() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../schemas/handoff.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap();
    for name in ["003-escalation.json", "003-python-valid-escalation.json"] {
        let doc: Value = serde_json::from_slice(&example(name)).unwrap();
        assert!(validator.is_valid(&doc), "{name}");
    }
    let invalid: Value =
        serde_json::from_slice(&example("invalid/003-python-invalid-escalation.json")).unwrap();
    let pointers: Vec<String> = validator
        .iter_errors(&invalid)
        .map(|e| e.instance_path().to_string())
        .collect();
    assert_eq!(pointers, ["/payload/data/customer_info"]);
}

#[test]
fn the_a3_packet_maps_to_a_valid_handoff_and_back_unchanged() {
    let packet: HandoffPacket =
        serde_json::from_slice(&example("000-a3-handoff-packet.json")).unwrap();
    let mapped = packet.to_handoff_message(&MappingOptions::default());
    assert!(mapped.dropped.is_empty(), "{:?}", mapped.dropped);
    let message: HandoffMessage = mapped.value;
    let json = serde_json::to_value(&message).unwrap();
    let report = Validator::standard().validate_value(&json, Some(Kind::Handoff));
    assert!(report.is_valid(), "{:?}", report.problems);
    assert_eq!(message.metadata.sender_id, "planner_v2");
    assert_eq!(
        json["payload"]["data"]["task_description"],
        "为用户构建一个 Python 贪吃蛇游戏"
    );
    let back = message.to_packet().unwrap();
    assert!(back.dropped.is_empty(), "{:?}", back.dropped);
    assert_eq!(back.value, packet);
}
