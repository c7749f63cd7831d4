//! Whole flows on the embedded bus: the support-desk example and failure handling.

use std::sync::Arc;

use chorus_agent::agents::Item;
use chorus_agent::confirm::MemoryConfirmations;
use chorus_agent::flow::{Flow, FlowError, FlowSpec};
use chorus_core::{Kind, Validator};

fn example(name: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/");
    std::fs::read_to_string(format!("{path}{name}")).unwrap()
}

async fn run(text: &str) -> (Result<chorus_agent::flow::FlowReport, FlowError>, Vec<Item>) {
    let spec = FlowSpec::parse(text).unwrap();
    let flow = Flow::new(spec, None, Arc::new(MemoryConfirmations::new())).unwrap();
    let mut seen = Vec::new();
    let result = flow.run(&mut |item: &Item| seen.push(item.clone())).await;
    (result, seen)
}

#[tokio::test]
async fn support_desk_runs_the_escalation_chain_with_valid_packets() {
    let (result, seen) = run(&example("support-desk.toml")).await;
    let report = result.unwrap();
    let chain: Vec<String> = seen
        .iter()
        .filter_map(|i| i.handoff_type().map(|t| format!("{}>{}:{t}", i.sender().unwrap(), i.recipients()[0])))
        .collect();
    assert_eq!(
        chain,
        [
            "customer_service>technical_support:ESCALATION",
            "technical_support>customer_service:REQUEST_INFORMATION",
            "technical_support>customer_service:STATUS_UPDATE",
            "customer_service>technical_support:PROVIDE_INFORMATION",
            "technical_support>level3_expert:ESCALATION",
            "level3_expert>technical_support:STATUS_UPDATE",
            "technical_support>customer_service:STATUS_UPDATE",
        ]
    );
    for item in &seen {
        let report = Validator::standard().validate_value(&item.to_json(), None);
        assert!(report.is_valid(), "{:?}: {:?}", item.describe(), report.problems);
        if let Item::Handoff(h) = item {
            let r = Validator::standard().validate_value(&item.to_json(), Some(Kind::Handoff));
            assert!(r.is_valid(), "{:?}", r.problems);
            assert_eq!(h.metadata.task_id, seen_task(&seen));
        }
    }
    let last = report.outputs.last().unwrap();
    assert!(last.text().contains("Root cause"), "{}", last.text());
    assert_eq!(last.recipients(), ["john.doe@example.com"]);
}

fn seen_task(seen: &[Item]) -> String {
    seen.iter()
        .find_map(|i| match i {
            Item::Handoff(h) => Some(h.metadata.task_id.clone()),
            Item::Message(_) => None,
        })
        .unwrap()
}
