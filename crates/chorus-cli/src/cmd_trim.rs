//! `chorus trim`: the kept conversation on stdout, the report on stderr (JSON).

use chorus_context::trim::langchain::{
    LangChainOptions, MessageType, Strategy, split_lines, trim_messages,
};
use chorus_context::trim::trim_chorus;
use chorus_context::{ApproxOptions, CostTable, TokenCounter, count_tokens_approximately};
use chorus_core::{Conversation, Message};
use chorus_formats::{EncodeOptions, Format};
use clap::{Args, ValueEnum};
use serde_json::{Value, json};

use crate::conversation::{parse_format, read_conversation};
use crate::counting::{CommandError, counter_for};
use crate::error::CliError;
use crate::input::read_text;
use crate::output::warn;

/// `--strategy` values: the chorus strategy, or LangChain's `strategy="last"` / `"first"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum TrimStrategy {
    Chorus,
    LangchainLast,
    LangchainFirst,
}

/// `--token-counter` values: the model's tokenizer and cost tables, LangChain's approximate
/// counter, or one per message (LangChain's `token_counter=len`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum CounterChoice {
    Model,
    Approximate,
    Messages,
}

/// Arguments of `chorus trim`.
#[derive(Debug, Args)]
pub struct TrimArgs {
    /// Model whose tokenizer and media prices apply; other names are counted approximately.
    #[arg(long)]
    model: String,
    /// A Hugging Face tokenizer.json that counts the text exactly (open models).
    #[arg(long, value_name = "FILE")]
    tokenizer: Option<String>,
    /// The token budget.
    #[arg(long)]
    max_tokens: usize,
    /// chorus (never orphans a tool result), or LangChain's trim_messages.
    #[arg(long, value_enum, default_value_t = TrimStrategy::Chorus)]
    strategy: TrimStrategy,
    /// How tokens are counted.
    #[arg(long, value_enum, default_value_t = CounterChoice::Model)]
    token_counter: CounterChoice,
    /// LangChain: keep a leading system message.
    #[arg(long)]
    include_system: bool,
    /// LangChain: allow cutting a message.
    #[arg(long)]
    allow_partial: bool,
    /// LangChain: start on this role (repeatable).
    #[arg(long, value_name = "ROLE")]
    start_on: Vec<String>,
    /// LangChain: end on this role (repeatable).
    #[arg(long, value_name = "ROLE")]
    end_on: Vec<String>,
    /// chorus: a message (JSON file) summarizing what gets dropped.
    #[arg(long, value_name = "FILE")]
    summary: Option<String>,
    /// Input format id; the kept conversation is written in the same format.
    #[arg(long, default_value = "chorus", value_parser = parse_format)]
    from: Format,
    /// The conversation; `-` reads standard input.
    #[arg(value_name = "FILE")]
    file: String,
}

/// Runs `chorus trim`.
pub fn run(args: TrimArgs) -> Result<(), CliError> {
    let conversation = read_conversation(&args.file, args.from)?;
    let summary = args.summary.as_deref().map(read_text).transpose()?;
    let out = trim(&conversation, &args, summary.as_deref())
        .map_err(|e| CliError::context(&args.file, e))?;
    warn(&out.warnings);
    let encoded = args
        .from
        .encode(&out.kept, &EncodeOptions::default())
        .map_err(|e| CliError::rejected(format!("{}: {e}", args.file)))?;
    let mut report = out.report;
    if !encoded.losses.is_empty() {
        report["format_losses"] = serde_json::to_value(&encoded.losses).unwrap_or_default();
    }
    outln!("{}", encoded.value);
    errln!("{}", serde_json::to_string(&report).unwrap_or_default());
    Ok(())
}

/// What `chorus trim` prints.
#[derive(Debug, Clone, PartialEq)]
struct TrimOutput {
    /// The kept conversation (its tools and other keys unchanged).
    kept: Conversation,
    /// The report.
    report: Value,
    /// Why the counts are estimates, when they are.
    warnings: Vec<String>,
}

/// Trims `conversation`; `summary` is the text of the `--summary` file.
fn trim(
    conversation: &Conversation,
    args: &TrimArgs,
    summary: Option<&str>,
) -> Result<TrimOutput, CommandError> {
    let messages = &conversation.messages;
    match args.strategy {
        TrimStrategy::Chorus => {
            let model = match args.token_counter {
                CounterChoice::Model => args.model.as_str(),
                CounterChoice::Approximate => "approximate",
                CounterChoice::Messages => {
                    return Err(CommandError::Usage(
                        "--token-counter messages works with the langchain strategies only".into(),
                    ));
                }
            };
            let tokenizer = match args.token_counter {
                CounterChoice::Model => args.tokenizer.as_deref(),
                _ => None,
            };
            let counter = counter_for(model, tokenizer, &CostTable::default())?;
            let summary: Option<Message> = summary
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
        TrimStrategy::LangchainLast | TrimStrategy::LangchainFirst => langchain(conversation, args),
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
        strategy: if args.strategy == TrimStrategy::LangchainFirst {
            Strategy::First
        } else {
            Strategy::Last
        },
        allow_partial: args.allow_partial,
        start_on: types(&args.start_on)?,
        end_on: types(&args.end_on)?,
        include_system: args.include_system,
    };
    let model = match args.token_counter {
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
        match (&model, args.token_counter) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counting::sample_conversation as conversation;

    fn trim_args(strategy: TrimStrategy, max_tokens: usize) -> TrimArgs {
        TrimArgs {
            model: "gpt-4o".into(),
            tokenizer: None,
            max_tokens,
            strategy,
            token_counter: CounterChoice::Model,
            include_system: true,
            allow_partial: false,
            start_on: vec!["user".into()],
            end_on: vec![],
            summary: None,
            from: Format::Chorus,
            file: "-".into(),
        }
    }

    #[test]
    fn trim_keeps_tools_and_reports() {
        let out = trim(&conversation(), &trim_args(TrimStrategy::Chorus, 90), None).unwrap();
        assert_eq!(out.kept.messages.len(), 4);
        assert_eq!(out.kept.tools, conversation().tools);
        assert_eq!(out.report["replaced"][0]["media_tokens"], json!(765));
        let last = trim_args(TrimStrategy::LangchainLast, 60);
        let lc = trim(&conversation(), &last, None).unwrap();
        assert_eq!(lc.kept.messages.len(), 2); // the system message and the last user message
        assert_eq!(lc.kept.messages[1].text(), "Of what?");
        assert_eq!(lc.report["messages_before"], json!(4));
    }

    #[test]
    fn errors_are_input_or_usage() {
        let mut args = trim_args(TrimStrategy::Chorus, 100);
        args.token_counter = CounterChoice::Messages;
        assert!(matches!(
            trim(&conversation(), &args, None),
            Err(CommandError::Usage(_))
        ));
        let args = trim_args(TrimStrategy::Chorus, 100);
        assert!(matches!(
            trim(&conversation(), &args, Some("not json")),
            Err(CommandError::Input(m)) if m.starts_with("--summary")
        ));
    }
}
