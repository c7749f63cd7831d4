//! The NATS backend's dedupe record: stream `ns_SEEN`, one subject per message id
//! (`ns.seen.<hex id>`, only the last message kept), holding the digest of the content, when it
//! was stored and whether all its copies were; the stream's max age is the dedupe window.
//!
//! JetStream's own de-duplication (`Nats-Msg-Id`) keeps the ids of its duplicate window in the
//! server's memory and, on the work-queue stream, forgets an id once its message is acknowledged
//! and the server restarts; it also cannot tell other content from a retry. It is kept only for
//! what it does well: making a retry of a store cut short within [`RETRY_WINDOW`] store each copy
//! once. This record, on disk in the stream, answers for the whole window.

use std::time::Duration;

use async_nats::jetstream::Context;
use async_nats::jetstream::context::{Publish, PublishErrorKind};
use async_nats::jetstream::stream::{self, LastRawMessageErrorKind, StorageType};
use serde::{Deserialize, Serialize};

use super::wire::{hex, nats_error};
use crate::config::millis;
use crate::content::ContentDigest;
use crate::error::seen_again;
use crate::error::{BusError, BusResult};

/// JetStream's duplicate window on the queue and log streams: a store retried within it after
/// being cut short stores each copy once.
pub(super) const RETRY_WINDOW: Duration = Duration::from_secs(120);

/// The record of one id.
#[derive(Serialize, Deserialize)]
struct Record {
    /// The content digest, hex.
    digest: String,
    /// When the id was claimed, Unix ms (the window counts from it).
    at_ms: i64,
    /// True once every copy was stored.
    stored: bool,
    /// The sequence of the message's entry in the log stream, once stored (records of
    /// earlier versions have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    log_seq: Option<u64>,
}

/// What a store finds when it claims an id.
pub(super) enum Claim {
    /// Store the copies, with JetStream message ids tagged by the claim's time `at_ms`: the id
    /// was free (or its record past the window) and is now claimed at this time, or a store of
    /// the same content claimed then did not finish (cut short, or still running), whose copies
    /// JetStream recognises by the same ids within [`RETRY_WINDOW`].
    Store {
        /// When the id was claimed, Unix ms.
        at_ms: i64,
    },
    /// The same content is stored: a duplicate.
    Stored,
}

/// The `ns_SEEN` stream of one bus.
pub(super) struct Seen {
    js: Context,
    stream: stream::Stream,
    ns: String,
    window: Duration,
}

impl Seen {
    /// Creates the stream with `replicas` copies, or sets its max age to `window` (and its
    /// replicas) when it had another. A zero window
    /// remembers nothing: [`Seen::active`] is false and the stream stays empty.
    pub(super) async fn open(
        js: &Context,
        ns: &str,
        window: Duration,
        replicas: usize,
    ) -> BusResult<Seen> {
        let config = stream::Config {
            name: format!("{ns}_SEEN"),
            subjects: vec![format!("{ns}.seen.>")],
            storage: StorageType::File,
            // A max age of 0 would keep records forever.
            max_age: window.max(Duration::from_millis(100)),
            max_messages_per_subject: 1,
            // Unused here, but the server wants it within the max age.
            duplicate_window: window.clamp(Duration::from_millis(100), RETRY_WINDOW),
            ..Default::default()
        };
        let stream = super::setup::ensure_stream(js, config, replicas).await?;
        Ok(Seen {
            js: js.clone(),
            stream,
            ns: ns.to_owned(),
            window,
        })
    }

    /// False for a zero window: ids are not remembered.
    pub(super) fn active(&self) -> bool {
        !self.window.is_zero()
    }

    fn subject(&self, id: &str) -> String {
        format!("{}.seen.{}", self.ns, hex(id))
    }

    /// Claims `id` for content `digest` at `now`, or says who holds it: a conflict when the
    /// id is held with other content within the window.
    pub(super) async fn claim(
        &self,
        id: &str,
        digest: ContentDigest,
        now: i64,
    ) -> BusResult<Claim> {
        let subject = self.subject(id);
        let mut expected = 0;
        // Each turn loses a race to another store of the id; three in a row is a broken server.
        for _ in 0..3 {
            if self.write(&subject, digest, now, Some(expected)).await? {
                return Ok(Claim::Store { at_ms: now });
            }
            let found = match self.stream.get_last_raw_message_by_subject(&subject).await {
                Ok(m) => m,
                // Expired since: claim it as free.
                Err(e) if e.kind() == LastRawMessageErrorKind::NoMessageFound => {
                    expected = 0;
                    continue;
                }
                Err(e) => return Err(nats_error(e)),
            };
            let record = parse(id, &found.payload)?;
            if record.at_ms < now - millis(self.window) {
                // Past the window, not yet removed by the server: replace it.
                expected = found.sequence;
                continue;
            }
            let stored = ContentDigest::from_hex(&record.digest).ok_or_else(|| {
                BusError::Corrupt(format!(
                    "the content digest kept for id {id:?} does not parse"
                ))
            })?;
            seen_again(id, stored, digest)?;
            return Ok(if record.stored {
                Claim::Stored
            } else {
                Claim::Store {
                    at_ms: record.at_ms,
                }
            });
        }
        Err(nats_error(format!(
            "the dedupe record of id {id:?} changed three times while it was claimed"
        )))
    }

    /// Records `id` as stored with `digest`, claimed at `at_ms`, whatever the record held (a
    /// store without dedupe starts the id's window again).
    ///
    /// Sent without waiting for the server's confirmation: the store's answer does not depend
    /// on it, and a record it never reaches stays unfinished, which only makes a later publish
    /// of the same content store its copies again (de-duplicated within [`RETRY_WINDOW`]).
    /// Waiting made a publish one round trip slower.
    pub(super) async fn stored(&self, id: &str, digest: ContentDigest, at_ms: i64, log_seq: u64) {
        if let Ok(publish) = record(digest, at_ms, Some(log_seq), None) {
            let _ = self.js.send_publish(self.subject(id), publish).await;
        }
    }

    /// The log stream sequence of the message stored under `id` within the window, if its
    /// record says.
    pub(super) async fn log_sequence(&self, id: &str) -> BusResult<Option<u64>> {
        if !self.active() {
            return Ok(None);
        }
        match self
            .stream
            .get_last_raw_message_by_subject(&self.subject(id))
            .await
        {
            Ok(m) => Ok(parse(id, &m.payload)?.log_seq),
            Err(e) if e.kind() == LastRawMessageErrorKind::NoMessageFound => Ok(None),
            Err(e) => Err(nats_error(e)),
        }
    }

    /// Writes the record of a claim (not yet stored); with `expected`, only over that subject
    /// sequence (0: none), and false when the subject holds another.
    async fn write(
        &self,
        subject: &str,
        digest: ContentDigest,
        now: i64,
        expected: Option<u64>,
    ) -> BusResult<bool> {
        let publish = record(digest, now, None, expected)?;
        let ack = self
            .js
            .send_publish(subject.to_owned(), publish)
            .await
            .map_err(nats_error)?
            .await;
        match ack {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == PublishErrorKind::WrongLastSequence => Ok(false),
            Err(e) => Err(nats_error(e)),
        }
    }
}

/// The record of an id kept in `ns_SEEN`, read back.
fn parse(id: &str, payload: &[u8]) -> BusResult<Record> {
    serde_json::from_slice(payload).map_err(|e| {
        BusError::Corrupt(format!(
            "the dedupe record of id {id:?} does not parse: {e}"
        ))
    })
}

/// The publish of a record, stored when `log_seq` is given; with `expected`, only over that
/// subject sequence (0: none).
fn record(
    digest: ContentDigest,
    at_ms: i64,
    log_seq: Option<u64>,
    expected: Option<u64>,
) -> BusResult<Publish> {
    let record = Record {
        digest: digest.hex(),
        at_ms,
        stored: log_seq.is_some(),
        log_seq,
    };
    let payload = serde_json::to_vec(&record).map_err(nats_error)?;
    let publish = Publish::build().payload(payload.into());
    Ok(match expected {
        Some(seq) => publish.expected_last_subject_sequence(seq),
        None => publish,
    })
}
