//! The flow file (TOML): agents, tools, how they connect, and the initial input.

use std::collections::{HashMap, HashSet};

use serde::Deserialize;

use crate::agents::Rule;
use crate::tools::{ToolKind, ToolSpec};

/// How the agents of a flow connect.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Agents hand off to each other freely over the bus, each addressing its recipient.
    #[default]
    Handoffs,
    /// Each agent's reply feeds the next, in `order`.
    Sequential,
    /// Every agent answers the input independently.
    FanOut,
    /// Agents speak in turn for `rounds`, each hearing the previous reply.
    Hub,
}

/// A whole flow file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    /// The flow's name.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: Option<String>,
    /// How the agents connect.
    #[serde(default)]
    pub mode: Mode,
    /// Deliveries at most before the flow is stopped as failed (default 100).
    #[serde(default)]
    pub max_steps: Option<usize>,
    /// Hub rounds (default 1).
    #[serde(default)]
    pub rounds: Option<usize>,
    /// Agent order for pipelines and hubs (default: declaration order).
    #[serde(default)]
    pub order: Vec<String>,
    /// The task id (default: a fresh UUID).
    #[serde(default)]
    pub task_id: Option<String>,
    /// The message that starts the flow.
    pub input: InputSpec,
    /// Tools the agents may use.
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    /// The agents.
    pub agents: Vec<AgentSpec>,
    /// Tokens and settings for running against a chorus server (`chorus run --server`).
    #[serde(default)]
    pub server: ServerSpec,
}

/// The `[server]` table of a flow file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSpec {
    /// Bearer token per sender (agents, and whoever sends the first message); a value `$NAME`
    /// is read from the environment variable NAME.
    #[serde(default)]
    pub tokens: HashMap<String, String>,
    /// The flow ends after this long without a delivery (default 2000 ms).
    #[serde(default)]
    pub idle_ms: Option<u64>,
    /// How often `chorus run --server` extends the lease of a delivery its agent is handling
    /// (default 10000 ms); keep it under the hub's `ack_wait_secs`.
    #[serde(default)]
    pub renew_ms: Option<u64>,
}

/// The initial message.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputSpec {
    /// Who speaks (default `user`).
    #[serde(default = "default_from")]
    pub from: String,
    /// The first agent (default: the first agent declared).
    #[serde(default)]
    pub to: Option<String>,
    /// What they say.
    pub text: String,
}

fn default_from() -> String {
    "user".into()
}

/// One `[[agents]]` entry (read with [`FlowSpec::parse`], which puts the options of the entry's
/// kind under `kind`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// Unique name; also its bus queue.
    pub name: String,
    /// The personality (the LLM agent's system prompt; documentation for rule agents).
    #[serde(default)]
    pub personality: Option<String>,
    /// Tools it may call.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Agents it may hand off to (an LLM agent's `transfer_to_<agent>` tools); each must be an
    /// agent of the flow.
    #[serde(default)]
    pub handoffs: Vec<String>,
    /// `kind = "rule"`, `"llm"` or `"a2a"`, and the options of that kind.
    pub kind: AgentKind,
}

impl AgentSpec {
    /// The keys of the fields above other than `kind`: every agent takes them whatever its kind.
    /// A field added above without its key here is refused in every flow file, so a test that
    /// uses it fails at once.
    pub(crate) const SHARED_KEYS: &[&str] = &["name", "personality", "tools", "handoffs"];
}

/// What an agent is, by its `kind`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentKind {
    /// Deterministic rules.
    Rule(RuleAgentSpec),
    /// A language model.
    Llm(LlmAgentSpec),
    /// A remote A2A agent, reached through its agent card.
    A2a(A2aAgentSpec),
}

/// The options of a `kind = "a2a"` agent.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct A2aAgentSpec {
    /// The URL of the remote agent's card (e.g. `http://host/.well-known/agent-card.json`).
    #[serde(default)]
    pub card: String,
    /// The environment variable holding the bearer token sent to the remote agent.
    #[serde(default)]
    pub token_env: Option<String>,
    /// Seconds to wait for the remote task to end or ask for input (default 300).
    #[serde(default)]
    pub timeout_secs: Option<u64>,
}

/// The options of a `kind = "rule"` agent.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleAgentSpec {
    /// The rules, first match wins (at least one).
    #[serde(default)]
    pub rules: Vec<Rule>,
}

/// The options of a `kind = "llm"` agent.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmAgentSpec {
    /// The model name (required; [`FlowSpec::parse`] says where it is missing).
    #[serde(default)]
    pub model: String,
    /// The API its model is called through.
    #[serde(default)]
    pub client: ClientKind,
    /// Token budget per request.
    #[serde(default)]
    pub context_budget: Option<usize>,
    /// Model calls per input at most (default 8).
    #[serde(default)]
    pub max_steps: Option<usize>,
    /// Send analysis-channel text with replies.
    #[serde(default)]
    pub show_analysis: bool,
    /// Sampling temperature.
    #[serde(default)]
    pub temperature: Option<f64>,
}

/// The API an LLM agent's model is called through (`client`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientKind {
    /// Chat Completions.
    #[default]
    Chat,
    /// Raw completions of Harmony text (gpt-oss).
    Harmony,
}

/// A flow file that cannot be used: where (a TOML path or line) and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{location}: {message}")]
pub struct SpecError {
    /// The TOML path (e.g. `agents[1].tools[0]`) or `line L, column C`.
    pub location: String,
    /// What is wrong and what was expected.
    pub message: String,
}

impl FlowSpec {
    /// Refuses what the types cannot: names that must be unique or declared, and empty kinds.
    pub(super) fn check(&self) -> Result<(), SpecError> {
        let err = |location: String, message: String| Err(SpecError { location, message });
        if self.agents.is_empty() {
            return err(
                "agents".into(),
                "expected at least one [[agents]] entry".into(),
            );
        }
        let mut names = HashSet::new();
        for (i, a) in self.agents.iter().enumerate() {
            if !names.insert(a.name.as_str()) {
                return err(
                    format!("agents[{i}].name"),
                    format!("agent `{}` is declared twice", a.name),
                );
            }
        }
        let tools: HashSet<&str> = self.tools.iter().map(|t| t.name.as_str()).collect();
        // `<server>__<tool>` names one tool of an mcp entry; the server says at build time.
        let of_mcp = |t: &str| {
            self.tools.iter().any(|s| {
                matches!(s.kind, ToolKind::Mcp(_))
                    && t.strip_prefix(s.name.as_str())
                        .is_some_and(|rest| rest.starts_with("__"))
            })
        };
        for (i, a) in self.agents.iter().enumerate() {
            for (j, t) in a.tools.iter().enumerate() {
                if !tools.contains(t.as_str()) && !of_mcp(t) {
                    return err(
                        format!("agents[{i}].tools[{j}]"),
                        format!("expected a tool declared in [[tools]], found `{t}`"),
                    );
                }
            }
            for (j, h) in a.handoffs.iter().enumerate() {
                if !names.contains(h.as_str()) {
                    return err(
                        format!("agents[{i}].handoffs[{j}]"),
                        format!("expected the name of an agent of this flow, found `{h}`"),
                    );
                }
            }
            match &a.kind {
                AgentKind::Llm(llm) if llm.model.is_empty() => {
                    return err(
                        format!("agents[{i}].model"),
                        "an llm agent needs `model`".into(),
                    );
                }
                AgentKind::A2a(a2a)
                    if !(a2a.card.starts_with("http://") || a2a.card.starts_with("https://")) =>
                {
                    return err(
                        format!("agents[{i}].card"),
                        format!(
                            "an a2a agent needs `card`, the http(s) URL of its agent card; found {:?}",
                            a2a.card
                        ),
                    );
                }
                AgentKind::Rule(rule) if rule.rules.is_empty() => {
                    return err(
                        format!("agents[{i}].rules"),
                        "a rule agent needs at least one [[agents.rules]]".into(),
                    );
                }
                _ => {}
            }
        }
        if let Some(to) = &self.input.to
            && !names.contains(to.as_str())
        {
            return err(
                "input.to".into(),
                format!("expected the name of an agent of this flow, found `{to}`"),
            );
        }
        for (i, o) in self.order.iter().enumerate() {
            if !names.contains(o.as_str()) {
                return err(
                    format!("order[{i}]"),
                    format!("expected the name of an agent of this flow, found `{o}`"),
                );
            }
        }
        Ok(())
    }
}
