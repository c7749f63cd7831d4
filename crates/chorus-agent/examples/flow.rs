//! Runs a flow file of agents on the embedded bus and prints every message and handoff as it is
//! sent, then what reached the person who started it, as `chorus run` does.
//!
//! ```text
//! cargo run -p chorus-agent --example flow -- [FLOW.toml]
//! ```
//!
//! Without a file it runs `examples/support-desk.toml`: the seed-003 support desk with rule
//! agents only (no model, no network). LLM agents in a flow file read their endpoint from
//! `CHORUS_MODEL_BASE_URL`.

use std::process::ExitCode;
use std::sync::Arc;

use chorus_agent::Flow;
use chorus_agent::agents::Item;
use chorus_agent::confirm::MemoryConfirmations;
use chorus_agent::flow::{FlowSpec, env_model_factory};

/// The workspace's offline support desk.
const SUPPORT_DESK: &str = include_str!("../../../examples/support-desk.toml");

fn main() -> ExitCode {
    let text = match std::env::args().nth(1) {
        None => SUPPORT_DESK.to_owned(),
        Some(path) => match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) => {
                eprintln!("error: {path}: {e}");
                return ExitCode::from(2);
            }
        },
    };
    match run(&text) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(text: &str) -> Result<(), Box<dyn std::error::Error>> {
    let spec = FlowSpec::parse(text)?;
    let models = env_model_factory();
    let flow = Flow::new(spec, models.as_ref(), Arc::new(MemoryConfirmations::new()))?;
    let mut observe = |item: &Item| println!("{}", item.describe());
    let report = tokio::runtime::Runtime::new()?.block_on(flow.run(&mut observe))?;
    println!("--- {} steps; to the person who asked:", report.steps);
    for item in &report.outputs {
        println!("{}: {}", item.recipients().join(","), item.text());
    }
    Ok(())
}
