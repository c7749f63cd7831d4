//! How the NATS backend names things and packs envelopes into JetStream messages.

use async_nats::HeaderMap;
use bytes::Bytes;

use crate::envelope::Envelope;
use crate::error::{BusError, BusResult};
use crate::stored::{envelope_from_keys, keys_json};

/// Header carrying the envelope's routing keys (JSON, without the bytes).
pub(crate) const ENVELOPE_HEADER: &str = "Chorus-Envelope";
/// Header carrying a dead letter's details (JSON).
pub(crate) const DEAD_HEADER: &str = "Chorus-Dead";

/// Maps any NATS client error.
pub(crate) fn nats_error(e: impl std::fmt::Display) -> BusError {
    BusError::Backend {
        backend: "nats",
        detail: e.to_string(),
    }
}

/// Lower-case hex of a name, so any string is a valid subject token, consumer or key part.
pub(crate) fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

/// The inverse of [`hex`]; `None` when the text is not hex of UTF-8.
pub(crate) fn unhex(s: &str) -> Option<String> {
    let bytes: Option<Vec<u8>> = (0..s.len())
        .step_by(2)
        .map(|i| s.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
        .collect();
    String::from_utf8(bytes?).ok()
}

/// A tracking key as a subject token: hex, or `_` when absent.
pub(crate) fn key_token(key: Option<&str>) -> String {
    key.map_or_else(|| "_".to_owned(), hex)
}

/// Headers holding the envelope's routing keys.
pub(crate) fn envelope_headers(env: &Envelope) -> BusResult<HeaderMap> {
    let mut headers = HeaderMap::new();
    headers.insert(ENVELOPE_HEADER, keys_json(env)?.as_str());
    Ok(headers)
}

/// Rebuilds an envelope from a JetStream message's headers and payload.
pub(crate) fn envelope_from(headers: Option<&HeaderMap>, payload: &Bytes) -> BusResult<Envelope> {
    let json = headers
        .and_then(|h| h.get(ENVELOPE_HEADER))
        .ok_or_else(|| BusError::Corrupt("a stream message lacks the envelope header".into()))?;
    envelope_from_keys(json.as_str(), payload.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_any_name() {
        for s in ["pool.a", "a b*>", "ünï", ""] {
            let h = hex(s);
            assert!(h.bytes().all(|b| b.is_ascii_hexdigit()));
            assert_eq!(unhex(&h).as_deref(), Some(s));
        }
        assert_eq!(unhex("zz"), None);
        assert_eq!(key_token(None), "_");
    }

    #[test]
    fn envelopes_survive_the_header_trip() {
        let mut env = Envelope::new("id", vec!["a".into()], b"{\"x\":\"\\n\"}".to_vec());
        env.task_id = Some("t\nwith newline".into());
        let headers = envelope_headers(&env).unwrap();
        assert_eq!(envelope_from(Some(&headers), &env.bytes).unwrap(), env);
        assert!(matches!(
            envelope_from(None, &Bytes::new()),
            Err(BusError::Corrupt(_))
        ));
    }
}
