//! Reading a raw completions engine's reply into tokens: vLLM's and SGLang's `/v1/completions`
//! (`choices[0].token_ids` or `.text`), llama.cpp server's `/completion` (`tokens` or
//! `content`) and Ollama's `/api/generate` (`response`), streamed or whole.
//!
//! Token ids are taken as they are; text is tokenized with the special tokens read as such,
//! holding back a tail that may be the start of a special token's name (`<|cha` of
//! `<|channel|>`) until the next chunk completes it.

use serde_json::Value;

use crate::encoding::encoding;
use crate::tokens::Rank;

/// Turns the chunks of one reply into token ids (ids outside the vocabulary are passed on: the
/// lenient parser reads them as U+FFFD and reports it).
#[derive(Debug, Default, Clone)]
pub struct CompletionTokens {
    pending: String,
}

/// A chunk whose token ids are not token ids.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the reply's token id {0} is not a token")]
pub struct BadTokenId(pub String);

impl CompletionTokens {
    /// A reader for a new reply.
    pub fn new() -> Self {
        Self::default()
    }

    /// The tokens of one chunk: its `token_ids` (llama.cpp: `tokens`) if present and not
    /// empty, else its `text` (llama.cpp: `content`, Ollama: `response`); from the first
    /// choice, or from the chunk itself when it has no `choices`.
    pub fn chunk(&mut self, chunk: &Value) -> Result<Vec<Rank>, BadTokenId> {
        let choice = match chunk.get("choices") {
            Some(choices) => match choices.get(0) {
                Some(choice) => choice,
                None => return Ok(Vec::new()),
            },
            None => chunk,
        };
        let ids = choice.get("token_ids").or_else(|| choice.get("tokens"));
        if let Some(ids) = ids.and_then(Value::as_array).filter(|ids| !ids.is_empty()) {
            return ids
                .iter()
                .map(|id| {
                    id.as_u64()
                        .and_then(|id| Rank::try_from(id).ok())
                        .ok_or_else(|| BadTokenId(id.to_string()))
                })
                .collect();
        }
        let text = ["text", "content", "response"]
            .iter()
            .find_map(|key| choice.get(*key).and_then(Value::as_str));
        Ok(text.map(|t| self.text(t, false)).unwrap_or_default())
    }

    /// The tokens of `text` that can be cut off now (all of it when `last`).
    pub fn text(&mut self, text: &str, last: bool) -> Vec<Rank> {
        self.pending.push_str(text);
        let cut = if last {
            self.pending.len()
        } else {
            safe_cut(&self.pending)
        };
        if cut == 0 {
            return Vec::new();
        }
        let ready: String = self.pending.drain(..cut).collect();
        encoding().encode_with_special_tokens(&ready)
    }

    /// The tokens of the text held back, at the end of the reply.
    pub fn finish(&mut self) -> Vec<Rank> {
        self.text("", true)
    }
}

/// Where text can be cut without splitting a special-token name (`<|…|>`).
fn safe_cut(text: &str) -> usize {
    match text.rfind("<|") {
        Some(open) if !text[open..].contains("|>") => open,
        _ if text.ends_with('<') => text.len() - 1,
        _ => text.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cut_keeps_an_unfinished_special_token_back() {
        assert_eq!(safe_cut("abc<|chan"), 3);
        assert_eq!(safe_cut("abc<|channel|>x"), 15);
        assert_eq!(safe_cut("abc<"), 3);
        assert_eq!(safe_cut("a < b"), 5);
    }

    #[test]
    fn every_engine_shape_gives_the_same_tokens() {
        let text = "<|channel|>final<|message|>Hi<|return|>";
        let whole = encoding().encode_with_special_tokens(text);
        let shapes = [
            json!({"choices": [{"text": text}]}),
            json!({"choices": [{"text": "", "token_ids": whole}]}),
            json!({"content": text}),
            json!({"tokens": whole}),
            json!({"response": text}),
        ];
        for shape in shapes {
            let mut reader = CompletionTokens::new();
            let mut got = reader.chunk(&shape).unwrap();
            got.extend(reader.finish());
            assert_eq!(got, whole, "{shape}");
        }
    }

    #[test]
    fn text_split_inside_a_special_token_reads_as_whole_text() {
        let text = "<|channel|>analysis<|message|>x<|end|><|start|>assistant";
        let mut reader = CompletionTokens::new();
        let mut got = Vec::new();
        let chars: Vec<char> = text.chars().collect();
        for piece in chars.chunks(2) {
            let piece: String = piece.iter().collect();
            got.extend(
                reader
                    .chunk(&json!({"choices": [{"text": piece}]}))
                    .unwrap(),
            );
        }
        got.extend(reader.finish());
        // Ordinary text cut into pieces tokenizes differently; the special tokens come out
        // whole, in place, and the text reads the same.
        assert_eq!(encoding().decode_utf8(&got).unwrap(), text);
        let special = |ids: &[Rank]| -> Vec<Rank> {
            ids.iter()
                .copied()
                .filter(|&id| crate::tokens::is_special(id))
                .collect()
        };
        assert_eq!(
            special(&got),
            special(&encoding().encode_with_special_tokens(text))
        );
        assert_eq!(special(&got).len(), 4);
    }

    #[test]
    fn ids_that_are_no_tokens_are_refused() {
        let mut reader = CompletionTokens::new();
        assert!(reader.chunk(&json!({"tokens": [-1]})).is_err());
        assert!(reader.chunk(&json!({"tokens": ["a"]})).is_err());
        assert!(reader.chunk(&json!({"tokens": [1u64 << 40]})).is_err());
        assert_eq!(
            reader.chunk(&json!({"choices": []})).unwrap(),
            Vec::<Rank>::new()
        );
    }
}
