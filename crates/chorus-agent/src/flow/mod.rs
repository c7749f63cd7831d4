//! Flows: a TOML file declares agents, tools, how they connect and the first message; [`Flow`]
//! runs it on the embedded in-memory bus (chorus-bus `MemoryBus`, validating every message and
//! handoff on publish), or against a running `chorus serve` ([`Flow::run_remote`]), and reports
//! every item sent, for transcripts and progress output.

mod approval;
mod build;
mod error;
mod failure;
mod lease;
mod outputs;
mod parse;
mod remote;
mod remote_confirm;
mod run;
mod spec;
mod worker;

pub use approval::{ApprovalWait, WaitNotice};
pub use build::{ModelFactory, build_agents, build_journaled_agents, env_model_factory};
pub use error::FlowError;
pub use failure::handle_with_strategy;
pub use remote::{InboxDelivery, Remote, Settlement};
pub use remote_confirm::RemoteConfirmations;
pub use run::{Flow, FlowReport};
pub use spec::{
    AgentKind, AgentSpec, ClientKind, FlowSpec, InputSpec, LlmAgentSpec, Mode, RuleAgentSpec,
    ServerSpec, SpecError,
};
pub use worker::{SentNotice, Worker, WorkerOptions, WorkerReport};
