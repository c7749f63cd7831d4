//! Building a flow's tools and agents from its spec.

use std::sync::Arc;

use indexmap::IndexMap;

use super::spec::{AgentKind, ClientKind, FlowSpec, LlmAgentSpec, SpecError};
use crate::agents::{A2aAgent, FlowAgent, LlmAgent, LlmAgentConfig, RuleAgent};
use crate::confirm::Confirmations;
use crate::journal::Journal;
use crate::model::ModelClient;
use crate::tools::{ToolKind, ToolRegistry};

/// Gives each LLM agent its model client, from the agent's options.
pub type ModelFactory =
    Arc<dyn Fn(&LlmAgentSpec) -> Result<Arc<dyn ModelClient>, String> + Send + Sync>;

/// Builds the tool registry and the agents of `spec`, in declaration order.
pub fn build_agents(
    spec: &FlowSpec,
    models: Option<&ModelFactory>,
    confirmations: Arc<dyn Confirmations>,
) -> Result<IndexMap<String, Arc<dyn FlowAgent>>, SpecError> {
    build_journaled_agents(spec, models, confirmations, None)
}

/// As [`build_agents`], the agents keeping their tool calls and conversations in `journal`
/// (see [`crate::journal`]) when one is given.
pub fn build_journaled_agents(
    spec: &FlowSpec,
    models: Option<&ModelFactory>,
    confirmations: Arc<dyn Confirmations>,
    journal: Option<Arc<dyn Journal>>,
) -> Result<IndexMap<String, Arc<dyn FlowAgent>>, SpecError> {
    let mut registry = ToolRegistry::new().with_confirmations(confirmations);
    if let Some(journal) = journal {
        registry = registry.with_journal(journal);
    }
    for (i, tool) in spec.tools.iter().enumerate() {
        let location = format!("tools[{i}]");
        let built = tool.build_all().map_err(|e| SpecError {
            location: location.clone(),
            message: e.to_string(),
        })?;
        for built in built {
            let name = built.definition().function.name.clone();
            registry.register(built).map_err(|e| SpecError {
                location: location.clone(),
                message: e.to_string(),
            })?;
            if !tool.idempotent {
                registry.set_not_idempotent(&name);
            }
        }
    }
    let mut agents: IndexMap<String, Arc<dyn FlowAgent>> = IndexMap::new();
    for (i, a) in spec.agents.iter().enumerate() {
        let agent: Arc<dyn FlowAgent> = match &a.kind {
            AgentKind::Rule(rule) => Arc::new(RuleAgent::new(
                &a.name,
                rule.rules.clone(),
                registry.clone(),
            )),
            AgentKind::A2a(a2a) => {
                let token = match &a2a.token_env {
                    Some(var) => Some(std::env::var(var).map_err(|_| SpecError {
                        location: format!("agents[{i}].token_env"),
                        message: format!(
                            "agent `{}` sends the token in ${var}, which is not set",
                            a.name
                        ),
                    })?),
                    None => None,
                };
                let timeout = std::time::Duration::from_secs(a2a.timeout_secs.unwrap_or(300));
                Arc::new(A2aAgent::new(&a.name, &a2a.card, token, timeout))
            }
            AgentKind::Llm(llm) => {
                let factory = models.ok_or_else(|| SpecError {
                    location: format!("agents[{i}]"),
                    message: format!(
                        "agent `{}` is an llm agent but no model endpoint is configured; set \
                         CHORUS_MODEL_BASE_URL (and OPENAI_API_KEY if the endpoint needs one)",
                        a.name
                    ),
                })?;
                let client = factory(llm).map_err(|message| SpecError {
                    location: format!("agents[{i}]"),
                    message,
                })?;
                let mut config = LlmAgentConfig::new(
                    &a.name,
                    a.personality.clone().unwrap_or_default(),
                    llm.model.clone(),
                );
                config.tools =
                    agent_tools(spec, &a.tools, &registry).map_err(|message| SpecError {
                        location: format!("agents[{i}].tools"),
                        message,
                    })?;
                config.handoffs = a.handoffs.clone();
                config.context_budget = llm.context_budget;
                config.max_steps = llm.max_steps.unwrap_or(config.max_steps);
                config.show_analysis = llm.show_analysis;
                config.temperature = llm.temperature;
                let agent = LlmAgent::new(config, client, registry.clone()).map_err(|message| {
                    SpecError {
                        location: format!("agents[{i}].model"),
                        message,
                    }
                })?;
                Arc::new(agent)
            }
        };
        agents.insert(a.name.clone(), agent);
    }
    Ok(agents)
}

/// The registry names of an agent's `tools`: an `mcp` entry's name stands for every tool of its
/// server; a `<server>__<tool>` name must be one the server listed.
fn agent_tools(
    spec: &FlowSpec,
    names: &[String],
    registry: &ToolRegistry,
) -> Result<Vec<String>, String> {
    let mut tools = Vec::new();
    for name in names {
        let mcp = spec
            .tools
            .iter()
            .any(|t| t.name == *name && matches!(t.kind, ToolKind::Mcp(_)));
        if mcp {
            let prefix = format!("{name}__");
            tools.extend(
                registry
                    .definitions(None)
                    .into_iter()
                    .map(|d| d.function.name)
                    .filter(|n| n.starts_with(&prefix)),
            );
        } else if registry.contains(name) {
            tools.push(name.clone());
        } else {
            return Err(format!(
                "expected a tool declared in [[tools]] or listed by an mcp server, found `{name}`"
            ));
        }
    }
    Ok(tools)
}

/// Model clients from the environment (`CHORUS_MODEL_BASE_URL` or `OPENAI_BASE_URL`, and
/// `OPENAI_API_KEY`): the Chat Completions client, or the Harmony client for agents with
/// `client = "harmony"`; `None` when no endpoint is configured.
pub fn env_model_factory() -> Option<ModelFactory> {
    let config = crate::model::EndpointConfig::from_env().ok()?;
    Some(Arc::new(move |agent: &LlmAgentSpec| {
        let client: Arc<dyn ModelClient> = match agent.client {
            ClientKind::Chat => Arc::new(crate::model::OpenAiChatClient::new(config.clone())),
            ClientKind::Harmony => Arc::new(crate::model::HarmonyClient::new(config.clone())),
        };
        Ok(client)
    }))
}
