//! Counting whole messages and conversations: text, media, tool calls, tool definitions and the
//! chat framing overhead.

use std::sync::Arc;

use chorus_core::{Content, ContentPart, Conversation, Message, ToolDefinition};
use serde::Serialize;
use serde_json::Value;

use super::approximate::{ApproxOptions, approximate_message};
use super::breakdown::Breakdown;
use super::harmony;
use super::profile::{Family, ModelProfile};
use super::pyrepr::json_dumps_len;
use super::text::{BpeEncoding, TextTokenizer};
use super::tools::tool_definition_tokens;
use crate::data::render_part;
use crate::error::Result;
use crate::media::{CostTable, MediaPricer};

/// The count of a list of messages, as `chorus count` prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConversationCount {
    /// All tokens of the request's input.
    pub total: usize,
    /// Per-message totals, in order (reply priming and tool definitions are not in them).
    pub messages: Vec<usize>,
    /// The total by category.
    pub breakdown: Breakdown,
    /// The text tokenizer: an encoding name or a `tokenizer.json` path.
    pub tokenizer: String,
    /// Whether text was counted with the model's own tokenizer; false for estimates (Claude and
    /// Gemini, whose tokenizers are not public, unknown models, the approximate counter).
    pub exact: bool,
    /// Why the count is an estimate, for the caller to show (not serialized).
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// Counts the tokens a model will see, offline.
#[derive(Clone)]
pub struct TokenCounter {
    profile: ModelProfile,
    text: Arc<dyn TextTokenizer>,
    media: MediaPricer,
    approx: ApproxOptions,
    exact: bool,
    warning: Option<String>,
    /// ChatML framing (`<|im_start|>role\n…<|im_end|>\n`) instead of the cookbook's.
    chatml: bool,
}

/// ChatML's message delimiters.
const IM_START: &str = "<|im_start|>";
const IM_END: &str = "<|im_end|>";

/// Chorus's estimate of the framing of one tool call (not a published figure).
const TOKENS_PER_TOOL_CALL: usize = 3;

impl TokenCounter {
    /// A counter for `model` with the default media cost table; a model of no known family is
    /// counted approximately (see [`TokenCounter::warning`]).
    pub fn for_model(model: &str) -> Result<Self> {
        Self::with_table(model, &CostTable::default())
    }

    /// A counter for `model` with media prices from `table`.
    pub fn with_table(model: &str, table: &CostTable) -> Result<Self> {
        let profile = ModelProfile::resolve(model);
        let text: Arc<dyn TextTokenizer> = match profile.family {
            Family::Cl100kBase => Arc::new(BpeEncoding::Cl100kBase),
            _ => Arc::new(BpeEncoding::O200kBase),
        };
        Ok(TokenCounter {
            media: MediaPricer::new(table, &profile.model)?,
            exact: profile.family.exact(),
            warning: profile.warning(),
            chatml: false,
            profile,
            text,
            approx: ApproxOptions::default(),
        })
    }

    /// A counter with any text tokenizer (e.g. a Hugging Face `tokenizer.json`) for `model`:
    /// ChatML framing when the tokenizer has `<|im_start|>` and `<|im_end|>` special tokens
    /// (Qwen and many open models), else the cookbook's, and the media prices `table` gives
    /// `model`. The count is exact for text unless `model` is of a family whose tokenizer is not
    /// public.
    pub fn with_tokenizer(
        tokenizer: Arc<dyn TextTokenizer>,
        model: &str,
        table: &CostTable,
    ) -> Result<Self> {
        let mut profile = ModelProfile::resolve(model);
        let closed = matches!(profile.family, Family::Anthropic | Family::Gemini);
        if !closed {
            // Text goes through `tokenizer`, whatever the model's own family would use.
            profile.family = Family::Unknown;
        }
        let warning = closed.then(|| {
            format!(
                "`{}`: text counted with {}, which cannot be the provider's own tokenizer (it is not public): an estimate",
                profile.model,
                tokenizer.name()
            )
        });
        let chatml = tokenizer.is_special(IM_START) && tokenizer.is_special(IM_END);
        Ok(TokenCounter {
            media: MediaPricer::new(table, &profile.model)?,
            exact: !closed,
            warning,
            chatml,
            profile,
            text: tokenizer,
            approx: ApproxOptions::default(),
        })
    }

    /// Why counts of this counter are estimates, when they are (for a warning on stderr).
    pub fn warning(&self) -> Option<&str> {
        self.warning.as_deref()
    }

    /// Whether text is counted with the model's own tokenizer.
    pub fn exact(&self) -> bool {
        self.exact
    }

    /// The text tokenizer's name for reports: an encoding name or a `tokenizer.json` path.
    pub fn tokenizer_name(&self) -> &str {
        match self.profile.family {
            Family::Approximate => "approximate",
            Family::O200kHarmony => "o200k_harmony",
            _ => self.text.name(),
        }
    }

    /// Lets image parts name local files whose headers are then read.
    pub fn read_local_files(mut self, yes: bool) -> Self {
        self.media = self.media.read_local_files(yes);
        self
    }

    /// The model profile in use.
    pub fn profile(&self) -> &ModelProfile {
        &self.profile
    }

    /// Tokens of plain text (for the approximate family: characters / 4, rounded up).
    pub fn count_text(&self, text: &str) -> usize {
        match self.profile.family {
            Family::Approximate => {
                (text.chars().count() as f64 / self.approx.chars_per_token).ceil() as usize
            }
            _ => self.text.count(text),
        }
    }

    /// The breakdown of one message; `index` places it in error pointers (`/messages/{index}`).
    pub fn count_message(&self, message: &Message, index: usize) -> Result<Breakdown> {
        match self.profile.family {
            Family::Approximate => return Ok(self.approximate_breakdown(message)),
            Family::O200kHarmony => return harmony::message_breakdown(message, self.text.as_ref()),
            _ => {}
        }
        let pointer = format!("/messages/{index}");
        let o = self.profile.overhead;
        let mut b = Breakdown {
            overhead: o.tokens_per_message.max(0) as usize + self.text.count(message.role.as_str()),
            ..Breakdown::default()
        };
        if self.chatml {
            b.overhead = self.chatml_framing(message);
        } else if let Some(name) = &message.name {
            b.text += self.text.count(name);
            let with_name = b.overhead as i64 + o.tokens_per_name;
            b.overhead = with_name.max(0) as usize;
        }
        match message.content() {
            None => {}
            Some(Content::Text(text)) => b.text += self.text.count(text),
            Some(Content::Parts(parts)) => {
                for (i, part) in parts.iter().enumerate() {
                    self.add_part(part, &format!("{pointer}/content/{i}"), &mut b)?;
                }
            }
        }
        for call in message.calls() {
            b.tools += TOKENS_PER_TOOL_CALL
                + self.text.count(&call.function.name)
                + self.text.count(&call.function.arguments);
        }
        if let Some(id) = &message.tool_call_id {
            b.overhead += self.text.count(id);
        }
        Ok(b)
    }

    /// `<|im_start|>{role}\n{content}<|im_end|>\n` less the content's own tokens: the newline
    /// after the role is counted joined to text content, as the tokenizer sees it (a content
    /// that starts with a line break merges with it). ChatML has no `name`.
    fn chatml_framing(&self, message: &Message) -> usize {
        let newline = self.text.count("\n");
        let joined = match message.content() {
            Some(Content::Text(text)) => self
                .text
                .count(&format!("\n{text}"))
                .saturating_sub(self.text.count(text)),
            _ => newline,
        };
        self.text.count(IM_START)
            + self.text.count(message.role.as_str())
            + joined
            + self.text.count(IM_END)
            + newline
    }

    fn add_part(&self, part: &ContentPart, pointer: &str, b: &mut Breakdown) -> Result<()> {
        match part {
            ContentPart::Text(t) => b.text += self.text.count(&t.text),
            ContentPart::Reasoning(r) => b.text += self.text.count(&r.text),
            ContentPart::Data(d) => b.text += self.text.count(&render_part(d)),
            ContentPart::Image(image) => b.images += self.media.image(image, pointer)? as usize,
            ContentPart::Audio(audio) => b.audio += self.media.audio(audio, pointer)? as usize,
            ContentPart::File(file) => {
                b.text += file
                    .file
                    .filename
                    .as_deref()
                    .map_or(0, |n| self.text.count(n));
                if let Some((frames, audio)) = self.media.video(file, pointer)? {
                    b.images += frames as usize;
                    b.audio += audio as usize;
                }
            }
            ContentPart::Other(map) => {
                b.text += self.text.count(&Value::Object(map.clone()).to_string())
            }
        }
        Ok(())
    }

    /// Tokens of one content part at JSON pointer `pointer` (media priced by the cost table).
    pub fn count_part(&self, part: &ContentPart, pointer: &str) -> Result<usize> {
        if self.profile.family == Family::Approximate {
            return Ok(match part {
                ContentPart::Image(_) => self.approx.tokens_per_image,
                ContentPart::Text(t) => self.count_text(&t.text),
                other => self.count_text(&serde_json::to_string(other).unwrap_or_default()),
            });
        }
        let mut b = Breakdown::default();
        self.add_part(part, pointer, &mut b)?;
        Ok(b.total())
    }

    fn approximate_breakdown(&self, message: &Message) -> Breakdown {
        let total = approximate_message(message, &self.approx) as usize;
        let images = match message.content() {
            Some(Content::Parts(parts)) => {
                parts
                    .iter()
                    .filter(|p| matches!(p, ContentPart::Image(_)))
                    .count()
                    * self.approx.tokens_per_image
            }
            _ => 0,
        };
        let overhead = self.approx.extra_tokens_per_message as usize;
        Breakdown {
            text: total - images - overhead,
            images,
            overhead,
            ..Breakdown::default()
        }
    }

    /// Tokens of tool definitions: the cookbook heuristic, for gpt-oss what declaring them in
    /// the Harmony developer message adds, or for the approximate family LangChain's
    /// `json.dumps` length / 4.
    pub fn count_tools(&self, tools: &[ToolDefinition]) -> Result<usize> {
        if self.profile.family == Family::O200kHarmony {
            return Ok(harmony::fixed_tokens(tools)? - harmony::fixed_tokens(&[])?);
        }
        if self.profile.family == Family::Approximate {
            let chars: usize = tools
                .iter()
                .map(|t| json_dumps_len(&serde_json::to_value(t).unwrap_or(Value::Null)))
                .sum();
            return Ok((chars as f64 / self.approx.chars_per_token).ceil() as usize);
        }
        Ok(tool_definition_tokens(
            tools,
            &self.profile.tools,
            self.text.as_ref(),
        ))
    }

    /// Counts messages as one request: per-message counts plus the reply priming.
    pub fn count_messages(&self, messages: &[Message]) -> Result<ConversationCount> {
        self.count_request(messages, &[])
    }

    /// Counts a conversation with its tool definitions.
    pub fn count_conversation(&self, conversation: &Conversation) -> Result<ConversationCount> {
        self.count_request(
            &conversation.messages,
            conversation.tools.as_deref().unwrap_or_default(),
        )
    }

    /// Counts `messages` offered `tools` as one request.
    pub fn count_request(
        &self,
        messages: &[Message],
        tools: &[ToolDefinition],
    ) -> Result<ConversationCount> {
        let mut breakdown = Breakdown::default();
        let mut per_message = Vec::with_capacity(messages.len());
        for (i, m) in messages.iter().enumerate() {
            let b = self.count_message(m, i)?;
            per_message.push(b.total());
            breakdown.add(&b);
        }
        breakdown.overhead += self.reply_priming()?;
        breakdown.tools += self.count_tools(tools)?;
        if self.profile.family == Family::O200kHarmony {
            // The exact total; the overhead absorbs what per-message renderings miss.
            let total = harmony::rendered_tokens(messages, tools)?;
            let other = breakdown.total() - breakdown.overhead;
            breakdown.overhead = total.saturating_sub(other);
        }
        Ok(ConversationCount {
            total: breakdown.total(),
            messages: per_message,
            breakdown,
            tokenizer: self.tokenizer_name().to_owned(),
            exact: self.exact,
            warnings: self.warning.iter().cloned().collect(),
        })
    }

    /// Tokens added once per request to prime the reply (0 for the approximate family; for
    /// gpt-oss also the Harmony system message).
    pub fn reply_priming(&self) -> Result<usize> {
        match self.profile.family {
            Family::Approximate => Ok(0),
            Family::O200kHarmony => harmony::fixed_tokens(&[]),
            _ if self.chatml => Ok(self.text.count(&format!("{IM_START}assistant\n"))),
            _ => Ok(self.profile.overhead.reply_priming),
        }
    }
}
