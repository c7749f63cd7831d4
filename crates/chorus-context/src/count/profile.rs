//! Model families: which tokenizer a model uses and the chat overheads it adds.

use crate::error::{ContextError, Result};

/// The tokenizer family of a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// `o200k_base`: gpt-4o, gpt-4.1, gpt-4.5, gpt-5, o1/o3/o4.
    O200kBase,
    /// `o200k_harmony`: gpt-oss, counted as chorus-harmony renders the request.
    O200kHarmony,
    /// `cl100k_base`: gpt-4, gpt-3.5-turbo.
    Cl100kBase,
    /// LangChain's `count_tokens_approximately` rules (`--model approximate`).
    Approximate,
    /// Claude: Anthropic's tokenizer is not public; text is estimated with `o200k_base`.
    Anthropic,
    /// Gemini: Google's tokenizer is not public; text is estimated with `o200k_base`.
    Gemini,
    /// A model chorus does not know: text estimated with `o200k_base`, OpenAI framing.
    Unknown,
}

impl Family {
    /// Whether text is counted with the model's own tokenizer.
    pub fn exact(self) -> bool {
        matches!(
            self,
            Family::O200kBase | Family::O200kHarmony | Family::Cl100kBase
        )
    }
}

/// Chat overhead of the OpenAI cookbook ("How to count tokens with tiktoken").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChatOverhead {
    /// Tokens added for every message: 3 (`<|start|>{role}<|message|>…<|end|>` framing),
    /// 4 for gpt-3.5-turbo-0301.
    pub tokens_per_message: i64,
    /// Tokens added when a message has a `name`: 1, or -1 for gpt-3.5-turbo-0301 (the role is
    /// then omitted).
    pub tokens_per_name: i64,
    /// Tokens priming the reply (`<|start|>assistant<|message|>`): 3.
    pub reply_priming: usize,
}

/// The cookbook's heuristic for the tokens of function (tool) definitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolHeuristic {
    /// Per function: 7 on gpt-4o / gpt-4o-mini, 10 on gpt-4 / gpt-3.5-turbo.
    pub func_init: i64,
    /// Once per function that has properties: 3.
    pub prop_init: i64,
    /// Per property: 3.
    pub prop_key: i64,
    /// Per property that has an `enum`: -3.
    pub enum_init: i64,
    /// Per enum item, plus the item's own tokens: 3.
    pub enum_item: i64,
    /// Once for the whole tool list: 12.
    pub func_end: i64,
}

/// Everything model-specific that message counting needs (media costs live in the cost table).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelProfile {
    /// The model name as given.
    pub model: String,
    /// Its tokenizer family.
    pub family: Family,
    /// Per-message overheads.
    pub overhead: ChatOverhead,
    /// Tool-definition heuristic.
    pub tools: ToolHeuristic,
}

/// Model-name prefixes of the `o200k_base` family (tiktoken's model table).
const O200K_PREFIXES: [&str; 9] = [
    "gpt-4o",
    "chatgpt-4o",
    "gpt-4.1",
    "gpt-4.5",
    "gpt-5",
    "o1",
    "o3",
    "o4",
    "codex-",
];
/// Model-name prefixes of the `cl100k_base` family.
const CL100K_PREFIXES: [&str; 5] = [
    "gpt-4",
    "gpt-3.5",
    "gpt-35",
    "text-embedding-ada-002",
    "text-embedding-3",
];

const COOKBOOK_OVERHEAD: ChatOverhead = ChatOverhead {
    tokens_per_message: 3,
    tokens_per_name: 1,
    reply_priming: 3,
};

const GPT4O_TOOLS: ToolHeuristic = ToolHeuristic {
    func_init: 7,
    prop_init: 3,
    prop_key: 3,
    enum_init: -3,
    enum_item: 3,
    func_end: 12,
};

impl ModelProfile {
    /// The profile of `model`; `approximate` selects the approximate counter; a name of no
    /// known family is an error (see [`ModelProfile::resolve`] for the fallback).
    pub fn for_model(model: &str) -> Result<Self> {
        let profile = Self::resolve(model);
        if profile.family == Family::Unknown {
            return Err(ContextError::UnknownModel {
                model: model.to_owned(),
                known: "gpt-oss*, gpt-4o*, gpt-4.1*, gpt-4.5*, gpt-5*, o1*, o3*, o4*, gpt-4*, gpt-3.5*, claude*, gemini*, approximate"
                    .into(),
            });
        }
        Ok(profile)
    }

    /// The profile of `model`, falling back to [`Family::Unknown`] for a name of no known family.
    pub fn resolve(model: &str) -> Self {
        let name = model.trim();
        let family = if name == "approximate" {
            Family::Approximate
        } else if name.starts_with("gpt-oss") {
            Family::O200kHarmony
        } else if O200K_PREFIXES.iter().any(|p| name.starts_with(p)) {
            Family::O200kBase
        } else if CL100K_PREFIXES.iter().any(|p| name.starts_with(p)) {
            Family::Cl100kBase
        } else if name.starts_with("claude") {
            Family::Anthropic
        } else if name.starts_with("gemini") {
            Family::Gemini
        } else {
            Family::Unknown
        };
        let overhead = if name == "gpt-3.5-turbo-0301" {
            ChatOverhead {
                tokens_per_message: 4,
                tokens_per_name: -1,
                reply_priming: 3,
            }
        } else {
            COOKBOOK_OVERHEAD
        };
        let tools = match family {
            Family::Cl100kBase => ToolHeuristic {
                func_init: 10,
                ..GPT4O_TOOLS
            },
            _ => GPT4O_TOOLS,
        };
        ModelProfile {
            model: name.to_owned(),
            family,
            overhead,
            tools,
        }
    }

    /// What a count for this model cannot promise, for a warning on stderr; `None` when text is
    /// counted with the model's own tokenizer or the approximate counter was asked for.
    pub fn warning(&self) -> Option<String> {
        let why = match self.family {
            Family::Unknown => format!(
                "unknown model `{}`: counted approximately (o200k_base text, OpenAI chat framing and media rules)",
                self.model
            ),
            Family::Anthropic => format!(
                "`{}`: Anthropic's tokenizer is not public; text is estimated with o200k_base (images follow Anthropic's published rule)",
                self.model
            ),
            Family::Gemini => format!(
                "`{}`: Gemini's tokenizer is not public; text is estimated with o200k_base (images, video and audio follow Google's published rates)",
                self.model
            ),
            _ => return None,
        };
        Some(format!(
            "{why}; pass --tokenizer FILE (a Hugging Face tokenizer.json) to count text exactly"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_families_by_prefix() {
        let family = |m: &str| ModelProfile::for_model(m).unwrap().family;
        assert_eq!(family("gpt-4o-mini"), Family::O200kBase);
        assert_eq!(family("o3-mini"), Family::O200kBase);
        assert_eq!(family("gpt-4-0613"), Family::Cl100kBase);
        assert_eq!(family("gpt-3.5-turbo"), Family::Cl100kBase);
        assert_eq!(family("approximate"), Family::Approximate);
        assert_eq!(family("gpt-oss-120b"), Family::O200kHarmony);
        assert_eq!(family("gpt-oss-20b"), Family::O200kHarmony);
        assert!(matches!(
            ModelProfile::for_model("llama-3"),
            Err(ContextError::UnknownModel { .. })
        ));
        assert_eq!(family("claude-sonnet-4-5"), Family::Anthropic);
        assert_eq!(family("gemini-2.5-pro"), Family::Gemini);
        assert_eq!(ModelProfile::resolve("llama-3").family, Family::Unknown);
        assert!(
            ModelProfile::resolve("llama-3")
                .warning()
                .unwrap()
                .contains("llama-3")
        );
        assert!(ModelProfile::resolve("gpt-4o").warning().is_none());
    }

    #[test]
    fn legacy_turbo_has_its_own_overhead() {
        let p = ModelProfile::for_model("gpt-3.5-turbo-0301").unwrap();
        assert_eq!(p.overhead.tokens_per_message, 4);
        assert_eq!(p.overhead.tokens_per_name, -1);
        assert_eq!(
            ModelProfile::for_model("gpt-4").unwrap().tools.func_init,
            10
        );
        assert_eq!(
            ModelProfile::for_model("gpt-4o").unwrap().tools.func_init,
            7
        );
    }
}
