//! Token ids of the o200k_harmony encoding: the special tokens and the stop-token sets.
//!
//! Ids 0..[`FIRST_SPECIAL`] are ordinary o200k_base byte-pair tokens; every id from
//! [`FIRST_SPECIAL`] to [`LAST_SPECIAL`] is a special token. Special tokens are produced only by
//! the renderer: text is never encoded into them.

/// A token id.
pub type Rank = u32;

/// `<|startoftext|>`.
pub const STARTOFTEXT: Rank = 199_998;
/// `<|endoftext|>`.
pub const ENDOFTEXT: Rank = 199_999;
/// `<|return|>`: the assistant is done sampling.
pub const RETURN: Rank = 200_002;
/// `<|constrain|>`: starts a constrained content type such as `<|constrain|>json`.
pub const CONSTRAIN: Rank = 200_003;
/// `<|channel|>`: introduces the channel in a header.
pub const CHANNEL: Rank = 200_005;
/// `<|start|>`: opens a message header.
pub const START: Rank = 200_006;
/// `<|end|>`: closes a message.
pub const END: Rank = 200_007;
/// `<|message|>`: ends a header and starts the content.
pub const MESSAGE: Rank = 200_008;
/// `<|call|>`: closes an assistant message addressed to a tool.
pub const CALL: Rank = 200_012;

/// The first special token id.
pub const FIRST_SPECIAL: Rank = STARTOFTEXT;
/// The last special token id (`<|reserved_201088|>`).
pub const LAST_SPECIAL: Rank = 201_088;
/// Number of token ids in the encoding.
pub const VOCAB_SIZE: usize = LAST_SPECIAL as usize + 1;

/// Tokens that end a message: `<|return|>`, `<|call|>` and `<|end|>`.
pub const STOP_TOKENS: [Rank; 3] = [RETURN, CALL, END];
/// Tokens that end an assistant's sampling turn: `<|return|>` and `<|call|>`.
pub const STOP_TOKENS_FOR_ASSISTANT_ACTIONS: [Rank; 2] = [RETURN, CALL];

/// The special tokens that have a name other than `<|reserved_ID|>`.
const NAMED: [(Rank, &str); 9] = [
    (STARTOFTEXT, "<|startoftext|>"),
    (ENDOFTEXT, "<|endoftext|>"),
    (RETURN, "<|return|>"),
    (CONSTRAIN, "<|constrain|>"),
    (CHANNEL, "<|channel|>"),
    (START, "<|start|>"),
    (END, "<|end|>"),
    (MESSAGE, "<|message|>"),
    (CALL, "<|call|>"),
];

/// Whether `id` is a special token.
pub const fn is_special(id: Rank) -> bool {
    id >= FIRST_SPECIAL && id <= LAST_SPECIAL
}

/// Whether `id` ends a message (`<|return|>`, `<|call|>`, `<|end|>`).
pub const fn is_stop(id: Rank) -> bool {
    matches!(id, RETURN | CALL | END)
}

/// The literal text of a special token (`<|start|>`, `<|reserved_200013|>`), or `None` for other ids.
pub fn special_name(id: Rank) -> Option<String> {
    if !is_special(id) {
        return None;
    }
    Some(match NAMED.iter().find(|(rank, _)| *rank == id) {
        Some((_, name)) => (*name).to_string(),
        None => format!("<|reserved_{id}|>"),
    })
}

/// The id of a special token given its literal text, or `None` if `text` names no special token.
pub fn special_id(text: &str) -> Option<Rank> {
    if let Some((rank, _)) = NAMED.iter().find(|(_, name)| *name == text) {
        return Some(*rank);
    }
    let digits = text.strip_prefix("<|reserved_")?.strip_suffix("|>")?;
    if digits.is_empty() || digits.len() > 6 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let id: Rank = digits.parse().ok()?;
    let named = NAMED.iter().any(|(rank, _)| *rank == id);
    (is_special(id) && !named && digits.len() == 6).then_some(id)
}

/// The first special token's literal name spelled inside `text` (`<|end|>`), if any.
pub fn find_special_text(text: &str) -> Option<&str> {
    text.match_indices("<|").find_map(|(open, _)| {
        let close = text[open + 2..].find("|>")? + open + 4;
        let candidate = &text[open..close];
        special_id(candidate).map(|_| candidate)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_ids_round_trip_for_every_special_token() {
        for id in FIRST_SPECIAL..=LAST_SPECIAL {
            let name = special_name(id).unwrap();
            assert_eq!(special_id(&name), Some(id), "{name}");
        }
        assert_eq!(special_name(FIRST_SPECIAL - 1), None);
        assert_eq!(special_name(LAST_SPECIAL + 1), None);
    }

    #[test]
    fn special_text_is_found_anywhere_in_a_string() {
        assert_eq!(find_special_text("a<|<|end|>b"), Some("<|end|>"));
        assert_eq!(
            find_special_text("x <|reserved_200013|>"),
            Some("<|reserved_200013|>")
        );
        assert_eq!(find_special_text("<|x|> <| end |> <|end"), None);
        assert_eq!(find_special_text("é<|call|>"), Some("<|call|>"));
    }

    #[test]
    fn reserved_names_do_not_alias_named_tokens() {
        assert_eq!(special_id("<|reserved_200006|>"), None);
        assert_eq!(special_id("<|reserved_201089|>"), None);
        assert_eq!(special_id("<|reserved_0200013|>"), None);
        assert_eq!(special_id("<|reserved_200013|>"), Some(200_013));
        assert_eq!(special_id("<|start|>"), Some(START));
    }
}
