//! Records the server backends (NATS, Redis) keep next to the messages themselves.

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::config::now_ms;
use crate::delivery::{DeadReason, Delivery};
use crate::envelope::Envelope;
use crate::error::{BusError, BusResult};

/// What a dead letter keeps besides the original bytes.
#[derive(Serialize, Deserialize)]
pub(crate) struct DeadInfo {
    pub message_id: Option<String>,
    pub queue: Option<String>,
    pub reason: DeadReason,
    pub envelope: Option<Envelope>,
    /// When it became a dead letter, Unix ms (absent in records written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_ms: Option<i64>,
}

impl DeadInfo {
    /// The record of a delivery dead-lettered now for `reason` (its envelope without the
    /// bytes, which are kept beside it).
    pub(crate) fn of_delivery(d: &Delivery, reason: DeadReason) -> DeadInfo {
        let env = (*d.envelope).clone();
        DeadInfo {
            message_id: Some(env.id.clone()),
            queue: Some(d.queue.to_string()),
            reason,
            envelope: Some(Envelope {
                bytes: Bytes::new(),
                ..env
            }),
            at_ms: Some(now_ms()),
        }
    }

    /// The record of a document refused on publish now for `reason`.
    pub(crate) fn rejected(message_id: Option<&str>, reason: DeadReason) -> DeadInfo {
        DeadInfo {
            message_id: message_id.map(str::to_owned),
            queue: None,
            reason,
            envelope: None,
            at_ms: Some(now_ms()),
        }
    }
}

/// What `commit_once` keeps per (handler, message id): the effect and its outgoing messages.
#[derive(Serialize, Deserialize)]
pub(crate) struct Committed {
    pub record: Vec<u8>,
    pub outgoing: Vec<(Envelope, Vec<String>)>,
}

impl Committed {
    /// The stored form of an effect and its outgoing messages.
    pub fn encode(record: &[u8], outgoing: &[(Envelope, Vec<String>)]) -> BusResult<Vec<u8>> {
        let committed = Committed {
            record: record.to_vec(),
            outgoing: outgoing.to_vec(),
        };
        serde_json::to_vec(&committed)
            .map_err(|e| BusError::Storage(format!("a handled record does not encode: {e}")))
    }

    /// Reads a stored record back.
    pub fn decode(bytes: &[u8]) -> BusResult<Committed> {
        serde_json::from_slice(bytes)
            .map_err(|e| BusError::Corrupt(format!("a handled record does not parse: {e}")))
    }
}

/// The envelope's routing keys as JSON, without the bytes.
pub(crate) fn keys_json(env: &Envelope) -> BusResult<String> {
    let keys = Envelope {
        bytes: Bytes::new(),
        ..env.clone()
    };
    serde_json::to_string(&keys)
        .map_err(|e| BusError::Storage(format!("cannot encode an envelope: {e}")))
}

/// Rebuilds an envelope from its routing-key JSON and its bytes.
pub(crate) fn envelope_from_keys(json: &str, bytes: impl Into<Bytes>) -> BusResult<Envelope> {
    let mut env: Envelope = serde_json::from_str(json)
        .map_err(|e| BusError::Corrupt(format!("stored routing keys do not parse: {e}")))?;
    env.bytes = bytes.into();
    Ok(env)
}

#[cfg(feature = "redis")]
/// One value holding the routing keys, a newline, then the bytes (JSON never holds a raw newline).
pub(crate) fn pack(env: &Envelope) -> BusResult<Vec<u8>> {
    let mut out = keys_json(env)?.into_bytes();
    out.push(b'\n');
    out.extend_from_slice(&env.bytes);
    Ok(out)
}

#[cfg(feature = "redis")]
/// The inverse of [`pack`].
pub(crate) fn unpack(value: &[u8]) -> BusResult<Envelope> {
    let split = value
        .iter()
        .position(|&b| b == b'\n')
        .ok_or_else(|| BusError::Corrupt("a stored message has no key/bytes separator".into()))?;
    let keys = std::str::from_utf8(&value[..split])
        .map_err(|_| BusError::Corrupt("stored routing keys are not UTF-8".into()))?;
    envelope_from_keys(keys, Bytes::copy_from_slice(&value[split + 1..]))
}

#[cfg(all(test, feature = "redis"))]
mod tests {
    use super::*;

    #[test]
    fn pack_round_trips_bytes_with_newlines() {
        let mut env = Envelope::new("id", vec!["q".into()], b"line1\nline2\n".to_vec());
        env.task_id = Some("t\n2".into());
        assert_eq!(unpack(&pack(&env).unwrap()).unwrap(), env);
        assert!(matches!(unpack(b"no separator"), Err(BusError::Corrupt(_))));
    }
}
