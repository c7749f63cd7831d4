//! `chorus count`: tokens of a conversation per message and by category, offline.

use chorus_context::{ConversationCount, CostTable};
use chorus_core::Conversation;
use chorus_formats::Format;
use clap::Args;

use crate::conversation::{parse_format, read_conversation};
use crate::counting::{CommandError, counter_for};
use crate::error::CliError;
use crate::input::read_text;
use crate::output::{FormatArgs, warn};

/// Arguments of `chorus count`.
#[derive(Debug, Args)]
pub struct CountArgs {
    /// Model whose tokenizer and media prices apply (e.g. gpt-4o, gpt-oss-20b, claude-sonnet-4-5,
    /// gemini-2.5-pro, approximate); other names are counted approximately, with a warning.
    #[arg(long)]
    model: String,
    /// A Hugging Face tokenizer.json that counts the text exactly (open models).
    #[arg(long, value_name = "FILE")]
    tokenizer: Option<String>,
    /// Input format id (chorus, openai-chat, openai-responses, anthropic, gemini, ...).
    #[arg(long, default_value = "chorus", value_parser = parse_format)]
    from: Format,
    /// A JSON file overlaying the media cost table.
    #[arg(long, value_name = "FILE")]
    costs: Option<String>,
    /// Let image parts name local files (their headers are read).
    #[arg(long)]
    read_files: bool,
    /// The conversation; `-` reads standard input.
    #[arg(value_name = "FILE")]
    file: String,
    #[command(flatten)]
    output: FormatArgs,
}

/// Runs `chorus count`.
pub fn run(args: CountArgs) -> Result<(), CliError> {
    let conversation = read_conversation(&args.file, args.from)?;
    let costs = args.costs.as_deref().map(read_text).transpose()?;
    let out = count(&conversation, &args, costs.as_deref())
        .map_err(|e| CliError::context(&args.file, e))?;
    warn(&out.warnings);
    if args.output.json() {
        outln!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    } else {
        out!("{}", text(&out));
    }
    Ok(())
}

/// The count for people: the total, the tokenizer, the categories and each message's share.
fn text(count: &ConversationCount) -> String {
    let b = &count.breakdown;
    let how = if count.exact { "exact" } else { "estimate" };
    let messages: Vec<String> = count.messages.iter().map(usize::to_string).collect();
    format!(
        "{} tokens ({}, {how})\n  text {}, images {}, audio {}, tools {}, overhead {}\n  per message: {}\n",
        count.total,
        count.tokenizer,
        b.text,
        b.images,
        b.audio,
        b.tools,
        b.overhead,
        messages.join(", ")
    )
}

/// `{"total", "messages", "breakdown", "tokenizer", "exact"}` of `conversation`, with `costs`
/// (the text of a JSON overlay) over the media cost table; its `warnings` say why a count is an
/// estimate.
fn count(
    conversation: &Conversation,
    args: &CountArgs,
    costs: Option<&str>,
) -> Result<ConversationCount, CommandError> {
    let table = match costs {
        Some(overlay) => CostTable::with_overlay(overlay)?,
        None => CostTable::default(),
    };
    let counter = counter_for(&args.model, args.tokenizer.as_deref(), &table)?
        .read_local_files(args.read_files);
    Ok(counter.count_conversation(conversation)?)
}

#[cfg(test)]
mod tests {
    use chorus_core::ContentPart;
    use serde_json::json;

    use super::*;
    use crate::counting::sample_conversation as conversation;

    fn count_args(model: &str) -> CountArgs {
        CountArgs {
            model: model.into(),
            tokenizer: None,
            from: Format::Chorus,
            costs: None,
            read_files: false,
            file: "-".into(),
            output: FormatArgs::default(),
        }
    }

    #[test]
    fn the_text_form_says_what_the_json_form_says() {
        let out = count(&conversation(), &count_args("gpt-4o"), None).unwrap();
        let shown = text(&out);
        let b = &out.breakdown;
        assert!(
            shown.starts_with(&format!("{} tokens (o200k_base, exact)\n", out.total)),
            "{shown}"
        );
        assert!(
            shown.contains(&format!("images {}, audio {}", b.images, b.audio)),
            "{shown}"
        );
        let listed: Vec<usize> = shown
            .lines()
            .find_map(|l| l.trim().strip_prefix("per message: "))
            .unwrap()
            .split(", ")
            .map(|n| n.parse().unwrap())
            .collect();
        assert_eq!(listed, out.messages);
    }

    #[test]
    fn count_gives_total_messages_and_breakdown() {
        let out = count(&conversation(), &count_args("gpt-4o"), None).unwrap();
        assert_eq!(
            out.total,
            out.messages.iter().sum::<usize>() + 3 + out.breakdown.tools
        );
        assert_eq!(out.breakdown.images, 765);
        assert!(out.breakdown.tools > 0);
        assert_eq!(out.breakdown.total(), out.total);
        let value = serde_json::to_value(&out).unwrap();
        for key in ["text", "images", "audio", "tools", "overhead"] {
            assert!(value["breakdown"][key].is_u64(), "{key}");
        }
    }

    #[test]
    fn count_for_gpt_oss_is_the_harmony_rendering() {
        let conversation = conversation();
        let out = count(&conversation, &count_args("gpt-oss-120b"), None).unwrap();
        let mapped = chorus_harmony::chorus_map::to_harmony(
            &conversation,
            chorus_harmony::SystemContent::default(),
        );
        let rendered = chorus_harmony::render(
            &mapped.conversation,
            &chorus_harmony::RenderOptions::default(),
        )
        .unwrap();
        assert_eq!(out.total, rendered.len());
        assert_eq!(out.breakdown.total(), out.total);
        // gpt-oss takes no images: the image is not rendered, so it costs nothing.
        assert_eq!(out.breakdown.images, 0);
    }

    #[test]
    fn errors_are_input_or_usage() {
        // An unknown model is no usage error (issue 20): it is counted approximately, and says
        // so; a tokenizer file that cannot be read is.
        let unknown = count(&conversation(), &count_args("llama"), None).unwrap();
        assert!(!unknown.exact);
        assert!(
            unknown.warnings[0].contains("llama"),
            "{:?}",
            unknown.warnings
        );
        let missing_tokenizer = CountArgs {
            tokenizer: Some("/nonexistent/tokenizer.json".into()),
            ..count_args("llama")
        };
        assert!(matches!(
            count(&conversation(), &missing_tokenizer, None),
            Err(CommandError::Usage(m)) if m.contains("/nonexistent/tokenizer.json")
        ));
        let bad_costs = count(
            &conversation(),
            &count_args("gpt-4o"),
            Some("{\"models\": 5}"),
        );
        assert!(matches!(bad_costs, Err(CommandError::Input(m)) if m.contains("/models")));
    }

    #[test]
    fn every_provider_family_counts_and_says_whether_exactly() {
        let conversation = conversation();
        let exact = count(&conversation, &count_args("gpt-4o"), None).unwrap();
        assert!(exact.exact && exact.warnings.is_empty());
        assert_eq!(exact.tokenizer, "o200k_base");
        for (model, rule) in [
            ("claude-sonnet-4-5", "Anthropic"),
            ("gemini-2.5-pro", "Gemini"),
            ("some-unknown-model", "unknown model"),
        ] {
            let out = count(&conversation, &count_args(model), None).unwrap();
            assert!(!out.exact, "{model}");
            assert!(
                out.warnings[0].contains(rule),
                "{model}: {:?}",
                out.warnings
            );
            assert_eq!(serde_json::to_value(&out).unwrap()["exact"], json!(false));
            // Text is the o200k_base estimate; images follow the provider's own rule.
            assert_eq!(out.breakdown.text, exact.breakdown.text, "{model}");
            let table = CostTable::default();
            let image = &conversation.messages[1].parts()[1];
            let ContentPart::Image(image) = image else {
                panic!("not an image")
            };
            let priced = chorus_context::media::MediaPricer::new(&table, model)
                .unwrap()
                .image(image, "/p")
                .unwrap();
            assert_eq!(out.breakdown.images as u64, priced, "{model}");
        }
        // The provider rules differ: the same image is not priced alike everywhere.
        let claude = count(&conversation, &count_args("claude-sonnet-4-5"), None).unwrap();
        let gemini = count(&conversation, &count_args("gemini-2.5-pro"), None).unwrap();
        assert_ne!(claude.breakdown.images, gemini.breakdown.images);
    }
}
