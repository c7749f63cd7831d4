//! The shape every codec has: its format, its capability table, `decode` and `encode`.

use chorus_core::Conversation;
use serde_json::Value;

use crate::capability::Capabilities;
use crate::common::json::parse;
use chorus_core::Problem;

use crate::error::Error;
use crate::format::Format;
use crate::loss::Encoded;
use crate::options::EncodeOptions;

/// A codec between chorus conversations and one format.
///
/// Codecs convert to and from [`Conversation`] only; a conversion between two formats decodes
/// with one codec and encodes with the other (see [`convert`](crate::convert)).
pub trait Codec {
    /// The format this codec reads and writes.
    const FORMAT: Format;

    /// What the format carries, as `chorus formats` prints it.
    const CAPABILITIES: Capabilities;

    /// A document of the format: a JSON value, or text.
    type Document: Document;

    /// Reads a conversation; an error names the place in the document, what was expected there
    /// and what was found.
    fn decode(document: Self::Document) -> Result<Conversation, Problem>;

    /// Writes a conversation, with every item the format could not carry as it is.
    fn encode(
        conversation: &Conversation,
        options: &EncodeOptions,
    ) -> Result<Encoded<Self::Document>, Error>;

    /// Reads a conversation from text (JSON text for JSON formats).
    fn decode_str(input: &str) -> Result<Conversation, Problem> {
        Self::decode(Self::Document::read(input)?)
    }

    /// Writes a conversation as text: pretty JSON ending in a newline, or the format's text.
    fn encode_string(
        conversation: &Conversation,
        options: &EncodeOptions,
    ) -> Result<Encoded<String>, Error> {
        Ok(Self::encode(conversation, options)?.map(Document::write))
    }
}

/// A document as it is read from text and written back.
pub trait Document: Sized {
    /// Reads a document from text.
    fn read(input: &str) -> Result<Self, Problem>;

    /// Writes the document as text.
    fn write(self) -> String;
}

/// JSON formats: read with the position of a syntax error, written pretty with a final newline.
impl Document for Value {
    fn read(input: &str) -> Result<Self, Problem> {
        parse(input)
    }

    fn write(self) -> String {
        let mut text = serde_json::to_string_pretty(&self).unwrap_or_default();
        text.push('\n');
        text
    }
}

/// Text formats: the text as it is.
impl Document for String {
    fn read(input: &str) -> Result<Self, Problem> {
        Ok(input.to_owned())
    }

    fn write(self) -> String {
        self
    }
}
