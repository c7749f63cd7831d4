//! The formats by id, and conversion between any two of them through chorus.

use std::str::FromStr;

use chorus_core::Conversation;

use crate::capability::Capabilities;
use crate::common::json::parse;
use crate::error::Error;
use crate::format::Format;
use crate::loss::Encoded;
use crate::options::EncodeOptions;
use crate::{
    a2a, agentscope, anthropic, chorus, gemini, harmony, openai_chat, openai_responses, qwen3,
};

impl Format {
    /// The capability table.
    pub fn capabilities(self) -> &'static Capabilities {
        match self {
            Format::Chorus => &chorus::CAPABILITIES,
            Format::OpenAiChat => &openai_chat::CAPABILITIES,
            Format::OpenAiChatResponse => &openai_chat::RESPONSE_CAPABILITIES,
            Format::Anthropic => &anthropic::CAPABILITIES,
            Format::Qwen3 => &qwen3::CAPABILITIES,
            Format::Gemini => &gemini::CAPABILITIES,
            Format::AgentScope => &agentscope::CAPABILITIES,
            Format::A2a => &a2a::CAPABILITIES,
            Format::Harmony => &harmony::CAPABILITIES,
            Format::OpenAiResponses => &openai_responses::CAPABILITIES,
        }
    }

    /// Decodes `input` (JSON, or text for text formats).
    pub fn decode(self, input: &str) -> Result<Conversation, Error> {
        Ok(match self {
            Format::Chorus => chorus::decode_str(input)?,
            Format::OpenAiChat => openai_chat::decode_str(input)?,
            Format::OpenAiChatResponse => openai_chat::decode_response_str(input)?,
            Format::Anthropic => anthropic::decode(&parse(input)?)?,
            Format::Qwen3 => qwen3::decode(input)?,
            Format::Gemini => gemini::decode(&parse(input)?)?,
            Format::AgentScope => agentscope::decode(&parse(input)?)?,
            Format::A2a => a2a::decode(&parse(input)?)?,
            Format::Harmony => harmony::decode(input)?,
            Format::OpenAiResponses => openai_responses::decode(&parse(input)?)?,
        })
    }

    /// Encodes `conversation` as text: pretty JSON, or the format's text.
    pub fn encode(
        self,
        conversation: &Conversation,
        options: &EncodeOptions,
    ) -> Result<Encoded<String>, Error> {
        Ok(match self {
            Format::Chorus => chorus::encode(conversation).map(pretty),
            Format::OpenAiChat => openai_chat::encode(conversation, options).map(pretty),
            Format::OpenAiChatResponse => openai_chat::encode_response(conversation).map(pretty),
            Format::OpenAiResponses => openai_responses::encode(conversation, options).map(pretty),
            Format::Anthropic => anthropic::encode(conversation, options).map(pretty),
            Format::Gemini => gemini::encode(conversation, options).map(pretty),
            Format::Qwen3 => qwen3::encode(conversation, options),
            Format::AgentScope => agentscope::encode(conversation, options).map(pretty),
            Format::A2a => a2a::encode(conversation, options).map(pretty),
            Format::Harmony => harmony::encode(conversation, options)?,
        })
    }
}

impl FromStr for Format {
    type Err = Error;

    fn from_str(id: &str) -> Result<Self, Error> {
        Format::from_id(id).ok_or_else(|| Error::UnknownFormat(id.to_owned()))
    }
}

fn pretty(value: serde_json::Value) -> String {
    let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
    text.push('\n');
    text
}

/// Converts `input` from one format to another through chorus; losses are reported, and turned
/// into an error when `strict` is set.
pub fn convert(
    from: Format,
    to: Format,
    input: &str,
    options: &EncodeOptions,
    strict: bool,
) -> Result<Encoded<String>, Error> {
    let conversation = from.decode(input)?;
    let encoded = to.encode(&conversation, options)?;
    if strict && !encoded.losses.is_empty() {
        return Err(Error::Lossy(encoded.losses));
    }
    Ok(encoded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Policy;

    const REQUEST: &str = r#"{"messages": [{"role": "user", "name": "alice", "content": "hi"}]}"#;

    #[test]
    fn strict_conversion_fails_on_a_loss_and_lenient_reports_it() {
        let options = EncodeOptions::default();
        let lenient = convert(
            Format::OpenAiChat,
            Format::Anthropic,
            REQUEST,
            &options,
            false,
        )
        .unwrap();
        assert_eq!(lenient.losses[0].policy, Policy::Prefixed);
        assert!(lenient.value.contains("alice: hi"));
        let strict = convert(
            Format::OpenAiChat,
            Format::Anthropic,
            REQUEST,
            &options,
            true,
        );
        assert!(
            matches!(strict, Err(Error::Lossy(losses)) if losses[0].path == "/messages/0/name")
        );
        assert!(
            convert(
                Format::OpenAiChat,
                Format::OpenAiChat,
                REQUEST,
                &options,
                true
            )
            .is_ok()
        );
    }

    #[test]
    fn every_format_has_a_distinct_id_that_parses_back() {
        for format in Format::ALL {
            assert_eq!(format.id().parse::<Format>().unwrap(), format);
        }
        assert!(matches!(
            "wizard".parse::<Format>(),
            Err(Error::UnknownFormat(_))
        ));
    }

    #[test]
    fn every_capability_table_names_its_own_format() {
        for format in Format::ALL {
            assert_eq!(format.capabilities().format, format.id());
        }
    }
}
