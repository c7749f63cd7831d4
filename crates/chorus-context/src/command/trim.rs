//! `chorus trim`: the kept conversation on stdout, the report on stderr.

use chorus_core::{Conversation, Message};
use serde_json::{Value, json};

use crate::count::{ApproxOptions, TokenCounter, count_tokens_approximately};
use crate::trim::langchain::{LangChainOptions, MessageType, Strategy, split_lines, trim_messages};
use crate::trim::trim_chorus;

use super::{CommandError, counter_for};
use crate::media::CostTable;

/// `--strategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrimStrategy {
    /// The chorus strategy.
    Chorus,
    /// LangChain `strategy="last"`.
    LangChainLast,
    /// LangChain `strategy="first"`.
    LangChainFirst,
}

/// `--token-counter`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterChoice {
    /// The model's tokenizer and cost tables.
    Model,
    /// LangChain's approximate counter.
    Approximate,
    /// One per message (LangChain's `token_counter=len`).
    Messages,
}

/// Arguments of `chorus trim`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrimArgs {
    /// Model name.
    pub model: String,
    /// The budget.
    pub max_tokens: usize,
    /// Strategy.
    pub strategy: TrimStrategy,
    /// Token counter.
    pub counter: CounterChoice,
    /// LangChain `include_system`.
    pub include_system: bool,
    /// LangChain `allow_partial`.
    pub allow_partial: bool,
    /// LangChain `start_on` (role or LangChain type names).
    pub start_on: Vec<String>,
    /// LangChain `end_on`.
    pub end_on: Vec<String>,
    /// The summary message's JSON, for the chorus strategy.
    pub summary: Option<String>,
    /// A Hugging Face `tokenizer.json` that counts the text.
    pub tokenizer: Option<String>,
}

/// What `chorus trim` prints.
#[derive(Debug, Clone, PartialEq)]
pub struct TrimOutput {
    /// The kept conversation (its tools and other keys unchanged).
    pub kept: Conversation,
    /// The report.
    pub report: Value,
    /// Why the counts are estimates, when they are.
    pub warnings: Vec<String>,
}

/// Trims `conversation`.
pub fn trim(conversation: &Conversation, args: &TrimArgs) -> Result<TrimOutput, CommandError> {
    let messages = &conversation.messages;
    match args.strategy {
        TrimStrategy::Chorus => {
            let model = match args.counter {
                CounterChoice::Model => args.model.as_str(),
                CounterChoice::Approximate => "approximate",
                CounterChoice::Messages => {
                    return Err(CommandError::Usage(
                        "--token-counter messages works with the langchain strategies only".into(),
                    ));
                }
            };
            let tokenizer = match args.counter {
                CounterChoice::Model => args.tokenizer.as_deref(),
                _ => None,
            };
            let counter = counter_for(model, tokenizer, &CostTable::default())?;
            let summary: Option<Message> = args
                .summary
                .as_deref()
                .map(|s| {
                    serde_json::from_str(s).map_err(|e| {
                        CommandError::Input(format!("--summary: expected one message as JSON; {e}"))
                    })
                })
                .transpose()?;
            let tools = conversation.tools.as_deref().unwrap_or_default();
            let t = trim_chorus(messages, tools, &counter, args.max_tokens, summary.as_ref())?;
            Ok(TrimOutput {
                kept: with_messages(conversation, t.messages),
                report: serde_json::to_value(&t.report).unwrap_or_default(),
                warnings: counter.warning().map(str::to_owned).into_iter().collect(),
            })
        }
        TrimStrategy::LangChainLast | TrimStrategy::LangChainFirst => langchain(conversation, args),
    }
}

fn types(names: &[String]) -> Result<Vec<MessageType>, CommandError> {
    names
        .iter()
        .map(|n| {
            MessageType::parse(n).ok_or_else(|| {
                CommandError::Usage(format!(
                    "unknown role `{n}`; expected user, assistant, system, developer or tool"
                ))
            })
        })
        .collect()
}

fn with_messages(conversation: &Conversation, messages: Vec<Message>) -> Conversation {
    Conversation {
        messages,
        ..conversation.clone()
    }
}

fn langchain(conversation: &Conversation, args: &TrimArgs) -> Result<TrimOutput, CommandError> {
    let messages = &conversation.messages;
    let options = LangChainOptions {
        max_tokens: args.max_tokens,
        strategy: if args.strategy == TrimStrategy::LangChainFirst {
            Strategy::First
        } else {
            Strategy::Last
        },
        allow_partial: args.allow_partial,
        start_on: types(&args.start_on)?,
        end_on: types(&args.end_on)?,
        include_system: args.include_system,
    };
    let model = match args.counter {
        CounterChoice::Model => Some(counter_for(
            &args.model,
            args.tokenizer.as_deref(),
            &CostTable::default(),
        )?),
        _ => None,
    };
    // The model counter must not fail inside LangChain's loop: check the input counts first.
    if let Some(counter) = &model {
        counter.count_messages(messages)?;
    }
    let count = |ms: &[Message]| -> usize {
        match (&model, args.counter) {
            (Some(counter), _) => counter
                .count_messages(ms)
                .map(|c| c.total)
                .unwrap_or(usize::MAX),
            (None, CounterChoice::Approximate) => {
                count_tokens_approximately(ms, &ApproxOptions::default())
            }
            (None, _) => ms.len(),
        }
    };
    let kept = trim_messages(messages, &options, &count, &split_lines)?;
    let report = json!({
        "strategy": if options.strategy == Strategy::First { "langchain-first" } else { "langchain-last" },
        "budget": args.max_tokens,
        "tokens_before": count(messages),
        "tokens_after": count(&kept),
        "messages_before": messages.len(),
        "messages_after": kept.len(),
    });
    let warnings = model
        .as_ref()
        .and_then(TokenCounter::warning)
        .map(str::to_owned)
        .into_iter()
        .collect();
    Ok(TrimOutput {
        kept: with_messages(conversation, kept),
        report,
        warnings,
    })
}
