//! Harmony text (gpt-oss) through `chorus-harmony`: its chorus mapping, renderer and parser.

mod losses;
#[cfg(test)]
mod tests;

use chorus_core::{Conversation, Message};
use chorus_harmony::chorus_map::{from_harmony, to_harmony};
use chorus_harmony::{
    ParseOptions, RenderMode, RenderOptions, SystemContent, encoding, parse, render,
};

use crate::capability::Capabilities;
use crate::codec::Codec;
use crate::common::outgoing::{Pairing, unnamed};
use chorus_core::Problem;

use crate::error::Error;
use crate::format::Format;
use crate::loss::{Encoded, Losses, Policy};
use crate::options::EncodeOptions;

/// The Harmony codec: gpt-oss text, rendered and parsed by `chorus-harmony`.
pub struct Harmony;

impl Codec for Harmony {
    const FORMAT: Format = Format::Harmony;
    const CAPABILITIES: Capabilities = CAPABILITIES;
    type Document = String;

    /// Parses Harmony text (a trailing `<|start|>assistant` prompt end is left out).
    fn decode(document: String) -> Result<Conversation, Problem> {
        parse_text(&document)
    }

    /// Renders a conversation as Harmony text (a completion prompt with
    /// `add_generation_prompt`).
    fn encode(
        conversation: &Conversation,
        options: &EncodeOptions,
    ) -> Result<Encoded<String>, Error> {
        render_text(conversation, options)
    }
}

const PROMPT_END: &str = "<|start|>assistant";

fn render_text(
    conversation: &Conversation,
    options: &EncodeOptions,
) -> Result<Encoded<String>, Error> {
    let mut losses = Losses::default();
    let named = unnamed(conversation, Pairing::AsGiven, options.names, &mut losses);
    let origin: Vec<usize> = named.iter().map(|(i, _)| *i).collect();
    let messages: Vec<Message> = named.into_iter().map(|(_, m)| m).collect();
    let source = Conversation {
        messages,
        ..conversation.clone()
    };
    let mapped = to_harmony(&source, SystemContent::default());
    losses::report(&conversation.messages, &mut losses);
    if conversation.tools.is_some() {
        losses.push("/tools", Policy::Downgraded, "tools are rendered as a TypeScript namespace, which parsing does not turn back into definitions");
    }
    for loss in mapped.losses {
        losses.push(remap(&loss.pointer, &origin), Policy::Dropped, loss.what);
    }
    let render_options = RenderOptions {
        mode: if options.add_generation_prompt {
            RenderMode::Completion
        } else {
            RenderMode::Plain
        },
        drop_analysis: false,
        ..RenderOptions::default()
    };
    let tokens = render(&mapped.conversation, &render_options).map_err(|e| {
        Error::Unsupported(format!(
            "Harmony cannot render {}: {}",
            remap(&e.pointer, &origin),
            e.message
        ))
    })?;
    let text = encoding()
        .decode_utf8(&tokens)
        .map_err(|e| Error::Unsupported(format!("rendered Harmony tokens are not UTF-8: {e}")))?;
    Ok(losses.finish(text))
}

/// A pointer into the renamed message list, as a pointer into the input.
fn remap(pointer: &str, origin: &[usize]) -> String {
    let Some(rest) = pointer.strip_prefix("/messages/") else {
        return pointer.to_owned();
    };
    let (index, tail) = rest.split_once('/').map_or((rest, ""), |(i, t)| (i, t));
    match index.parse::<usize>().ok().and_then(|i| origin.get(i)) {
        Some(original) if tail.is_empty() => format!("/messages/{original}"),
        Some(original) => format!("/messages/{original}/{tail}"),
        None => pointer.to_owned(),
    }
}

fn parse_text(text: &str) -> Result<Conversation, Problem> {
    let text = text.strip_suffix(PROMPT_END).unwrap_or(text);
    let tokens = encoding().encode_with_special_tokens(text);
    let parsed = parse(&tokens, None, ParseOptions::STRICT)?;
    let messages = parsed.messages.into_iter().map(instructions).collect();
    Ok(from_harmony(&chorus_harmony::Conversation { messages }))
}

/// Sections the renderer writes after the instructions of a developer message.
const AFTER_INSTRUCTIONS: [&str; 2] = ["\n\n# Tools\n\n", "\n\n# Response Formats\n\n"];

/// A parsed developer message keeps its `# Instructions` text as developer instructions, so that
/// decoding what `encode` wrote gives the developer message back.
fn instructions(mut message: chorus_harmony::Message) -> chorus_harmony::Message {
    if message.author.role != chorus_harmony::Role::Developer {
        return message;
    }
    for content in &mut message.content {
        let chorus_harmony::Content::Text(text) = content else {
            continue;
        };
        let Some(body) = text.text.strip_prefix("# Instructions\n\n") else {
            continue;
        };
        let end = AFTER_INSTRUCTIONS
            .iter()
            .filter_map(|section| body.find(section))
            .min()
            .unwrap_or(body.len());
        *content = chorus_harmony::Content::DeveloperContent(chorus_harmony::DeveloperContent {
            instructions: Some(body[..end].to_owned()),
            tools: None,
            response_formats: None,
        });
    }
    message
}

/// What Harmony carries.
const CAPABILITIES: Capabilities = Capabilities {
    format: Harmony::FORMAT.id(),
    describes: "Harmony text of gpt-oss (<|start|>role<|channel|>...<|message|>...<|end|>), rendered and parsed by chorus-harmony",
    roles: &[
        "system (generated)",
        "developer (instructions and tools)",
        "user",
        "assistant",
        "tool (functions.NAME)",
    ],
    parts: &["text", "reasoning (analysis channel)"],
    tool_results: "text, paired with calls by function name and order",
    names: "no: policy prefix (`name: text`) or <history> fold",
    citations: "no",
    reasoning: "analysis channel messages",
    downgrades: &[
        "system and developer messages become the developer instructions",
        "call ids are not carried; parsing numbers calls call_0, call_1, ...",
        "images, audio, files and data parts are dropped",
    ],
};
