//! The one list of formats: each format's id and how it treats fields chorus does not model.
//!
//! This module names formats and imports no codec, so every other module may use it. The codec
//! of each format is found in `codecs/mod.rs`, whose `match` on [`Format`] the compiler checks
//! for every variant listed here.

/// Declares [`Format`] with its ids and the `open` flags, and [`Format::ALL`] in list order.
macro_rules! formats {
    ($($(#[doc = $doc:literal])* $variant:ident = $id:literal, $fields:ident;)+) => {
        /// A format chorus converts to and from.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Format {
            $($(#[doc = $doc])* $variant,)+
        }

        impl Format {
            /// Every format, in the order `chorus formats` prints them.
            pub const ALL: [Format; [$($id),+].len()] = [$(Format::$variant),+];

            /// The id used on the command line and in `x-<id>` namespaces.
            pub const fn id(self) -> &'static str {
                match self {
                    $(Format::$variant => $id,)+
                }
            }

            /// Open formats write unknown top-level keys back as they are; closed ones keep them
            /// under their `x-<id>` namespace.
            pub const fn is_open(self) -> bool {
                match self {
                    $(Format::$variant => formats!(@open $fields),)+
                }
            }
        }
    };
    (@open open) => { true };
    (@open closed) => { false };
}

formats! {
    /// chorus' own JSON.
    Chorus = "chorus", open;
    /// OpenAI Chat Completions.
    OpenAiChat = "openai-chat", open;
    /// OpenAI Chat Completions response (`chat.completion`).
    OpenAiChatResponse = "openai-chat-response", closed;
    /// OpenAI Responses.
    OpenAiResponses = "openai-responses", closed;
    /// Anthropic Messages.
    Anthropic = "anthropic", closed;
    /// Google Gemini generateContent.
    Gemini = "gemini", closed;
    /// Qwen3 ChatML text.
    Qwen3 = "qwen3", closed;
    /// AgentScope Msg dicts.
    AgentScope = "agentscope", closed;
    /// A2A messages.
    A2a = "a2a", closed;
    /// Harmony text (gpt-oss).
    Harmony = "harmony", closed;
}

impl Format {
    /// Every id, in list order.
    pub fn ids() -> Vec<&'static str> {
        Format::ALL.iter().map(|f| f.id()).collect()
    }

    /// The format with this id.
    pub fn from_id(id: &str) -> Option<Format> {
        Format::ALL.iter().copied().find(|f| f.id() == id)
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}
