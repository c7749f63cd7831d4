//! The codec of each format, found from its [`Format`], and conversion between any two formats
//! through chorus.
//!
//! A codec lives in its own folder here and implements [`Codec`]. `with_codec!` below is the one
//! place that maps formats to codecs: its `match` must cover every [`Format`], so a format
//! without a codec does not compile.

mod a2a;
mod agentscope;
mod anthropic;
mod chorus;
mod gemini;
mod harmony;
pub(crate) mod openai_chat;
mod openai_responses;
mod qwen3;

use std::str::FromStr;

use chorus_core::Conversation;

pub use a2a::A2a;
pub use agentscope::AgentScope;
pub use anthropic::Anthropic;
pub use chorus::Chorus;
pub use gemini::Gemini;
pub use harmony::Harmony;
pub use openai_chat::{OpenAiChat, OpenAiChatResponse};
pub use openai_responses::OpenAiResponses;
pub use qwen3::Qwen3;

use crate::capability::Capabilities;
use crate::codec::Codec;
use crate::error::Error;
use crate::format::Format;
use crate::loss::Encoded;
use crate::options::EncodeOptions;

/// Evaluates `$body` with the type `$codec` naming the codec of `$format`. The list after `@codecs`
/// is the one place where a format meets its codec.
macro_rules! with_codec {
    ($format:expr, $codec:ident => $body:expr) => {
        with_codec!(@codecs $format, $codec, $body;
            Chorus => Chorus,
            OpenAiChat => OpenAiChat,
            OpenAiChatResponse => OpenAiChatResponse,
            OpenAiResponses => OpenAiResponses,
            Anthropic => Anthropic,
            Gemini => Gemini,
            Qwen3 => Qwen3,
            AgentScope => AgentScope,
            A2a => A2a,
            Harmony => Harmony,
        )
    };
    (@codecs $format:expr, $codec:ident, $body:expr; $($variant:ident => $type:ty,)+) => {
        match $format {
            $(Format::$variant => {
                type $codec = $type;
                $body
            })+
        }
    };
}

impl Format {
    /// The capability table.
    pub fn capabilities(self) -> &'static Capabilities {
        with_codec!(self, C => &C::CAPABILITIES)
    }

    /// Decodes `input` (JSON, or text for text formats).
    pub fn decode(self, input: &str) -> Result<Conversation, Error> {
        with_codec!(self, C => Ok(C::decode_str(input)?))
    }

    /// Encodes `conversation` as text: pretty JSON, or the format's text.
    pub fn encode(
        self,
        conversation: &Conversation,
        options: &EncodeOptions,
    ) -> Result<Encoded<String>, Error> {
        with_codec!(self, C => C::encode_string(conversation, options))
    }
}

impl FromStr for Format {
    type Err = Error;

    fn from_str(id: &str) -> Result<Self, Error> {
        Format::from_id(id).ok_or_else(|| Error::UnknownFormat(id.to_owned()))
    }
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
    fn every_format_is_served_by_the_codec_of_that_format() {
        for format in Format::ALL {
            assert_eq!(with_codec!(format, C => C::FORMAT), format);
            assert_eq!(format.capabilities().format, format.id());
        }
    }
}
