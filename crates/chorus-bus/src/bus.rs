//! The `Bus` trait: the delivery guarantees, written once above every [`Backend`].

use std::future::Future;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use serde_json::Value;

use crate::backend::Backend;
use crate::config::now_ms;
use crate::delivery::{DeadLetter, DeadReason, Delivery, Effect, Handled, Receipt, TrackSummary};
use crate::envelope::Envelope;
use chorus_core::Problem;

use crate::error::{BusError, BusResult};
use crate::routing::resolve;

/// The page size of the methods that read a whole listing a page at a time.
const WHOLE_PAGE: usize = 1000;

/// Durable, routed, at-least-once delivery of messages, with the same guarantees on every
/// [`Backend`].
///
/// Every method here is provided, once, above the backend's primitives: validation and
/// refusal into dead letters (`publish`), expiration at publish and at delivery, routing,
/// the delivery limit (`receive`), replay of dead letters, and the whole listings read a page
/// at a time. Implemented for every backend by a blanket implementation, so no backend can
/// change them. The backend's own methods are reachable through it too (`Bus: Backend`).
#[async_trait]
pub trait Bus: Backend {
    /// All dead letters, oldest first (read a page at a time).
    async fn dead_letters(&self) -> BusResult<Vec<DeadLetter>> {
        let mut all = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = self.dead_letters_page(after.as_deref(), WHOLE_PAGE).await?;
            all.extend(page.items);
            match page.next {
                Some(next) => after = Some(next),
                None => return Ok(all),
            }
        }
    }

    /// Every stored message of a task, in publish order (read a page at a time).
    async fn by_task(&self, task_id: &str) -> BusResult<Vec<Envelope>> {
        let mut all = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = self
                .task_messages(task_id, after.as_deref(), WHOLE_PAGE)
                .await?;
            all.extend(page.items.into_iter().map(|l| l.envelope));
            match page.next {
                Some(next) => after = Some(next),
                None => return Ok(all),
            }
        }
    }

    /// The known task ids, most recently active first, at most `limit`.
    async fn tasks(&self, limit: usize) -> BusResult<Vec<TrackSummary>> {
        Ok(self.tasks_page(None, limit).await?.items)
    }

    /// The known conversation ids, most recently active first, at most `limit`.
    async fn conversations(&self, limit: usize) -> BusResult<Vec<TrackSummary>> {
        Ok(self.conversations_page(None, limit).await?.items)
    }

    /// Publishes a handoff or a chorus message (JSON bytes): validates it, routes it, stores it
    /// durably.
    ///
    /// An invalid packet is refused with [`BusError::Invalid`] and kept as a dead letter. An id
    /// already stored within the dedupe window gives a receipt with `duplicate` set when the
    /// content is the same, and [`BusError::Conflict`] (nothing stored, no dead letter) when not.
    async fn publish(&self, bytes: Vec<u8>) -> BusResult<Receipt> {
        let bytes = Bytes::from(bytes);
        let document = parsed(self, &bytes).await?;
        self.publish_parsed(bytes, &document).await
    }

    /// Reads, checks and routes `bytes` as [`Bus::publish`] does, without storing them: the
    /// envelope and the queues it goes to, for a commit that stores it together with an effect
    /// ([`Backend::commit_once_and_ack`]). What `publish` refuses is refused the same way, and
    /// kept as a dead letter.
    async fn route_document(&self, bytes: Vec<u8>) -> BusResult<(Envelope, Vec<String>)> {
        let bytes = Bytes::from(bytes);
        let document = parsed(self, &bytes).await?;
        let env = checked(self, bytes, &document, None, None).await?;
        routed(self, env, Some(&document)).await
    }

    /// As [`Bus::publish`], for a caller that has already parsed `bytes` into `document`
    /// (their JSON value, as the server has after its own checks): nothing is parsed again.
    async fn publish_parsed(&self, bytes: Bytes, document: &Value) -> BusResult<Receipt> {
        self.publish_read(bytes, document, None, None).await
    }

    /// As [`Bus::publish_parsed`], with the envelope the caller read from this same `document`
    /// with [`Envelope::from_document`] (its bytes aside), when it has one: it is not read
    /// again. `publisher` is who sent it, as the caller authenticated them: a refused document
    /// is filed under it, not under the sender it claims.
    async fn publish_read(
        &self,
        bytes: Bytes,
        document: &Value,
        read: Option<Envelope>,
        publisher: Option<&str>,
    ) -> BusResult<Receipt> {
        let env = checked(self, bytes, document, read, publisher).await?;
        self.publish_routed(env, Some(document)).await
    }

    /// Publishes an envelope built by the caller; its bytes are validated when a validator
    /// or routing rules need the document.
    async fn publish_envelope(&self, env: Envelope) -> BusResult<Receipt> {
        let config = self.config();
        if config.validator.is_some() || !config.rules.is_empty() {
            // Boxed on its own: inline, its state would make every publish's future over
            // 1 KiB, past the allocator's fast path.
            return Box::pin(publish_checked(self, env)).await;
        }
        if env.expires_at_ms.is_some_and(|t| t <= now_ms()) {
            return self.publish_routed(env, None).await;
        }
        // Nothing is awaited while the one-step store's answer (which may hold the envelope)
        // is alive: it would stay in this future's state, which every publish allocates.
        let routed = match self.store_routed_now(env) {
            Ok(receipt) => Ok(receipt),
            Err(env) => Err(self.publish_routed(env, None)),
        };
        match routed {
            Ok(receipt) => {
                // A publisher that never waits on anything else still lets the consumers it
                // woke run.
                tokio::task::consume_budget().await;
                receipt
            }
            Err(general) => general.await,
        }
    }

    /// Routes an accepted envelope and stores it; used by `publish` and `publish_envelope`.
    async fn publish_routed(&self, env: Envelope, document: Option<&Value>) -> BusResult<Receipt> {
        let (env, queues) = routed(self, env, document).await?;
        let id = env.id.clone();
        let stored = self.store_owned(env, &queues, true).await?;
        crate::crash::reached(crate::crash::points::STORED);
        Ok(Receipt {
            id,
            duplicate: !stored,
            queues,
        })
    }

    /// Receives up to `max` deliveries from `queue`, waiting up to `wait` for the first.
    ///
    /// Expired messages and messages past `max_deliver` never reach the caller: they become
    /// dead letters here, at delivery time.
    async fn receive(&self, queue: &str, max: usize, wait: Duration) -> BusResult<Vec<Delivery>> {
        let deadline = Instant::now() + wait;
        loop {
            let now = now_ms();
            // Filtered in place: the fetched batch is what the caller gets.
            let mut out = self.fetch(queue, max).await?;
            let mut i = 0;
            while let Some(d) = out.get(i) {
                if let Some(t) = d.envelope.expires_at_ms.filter(|&t| t <= now) {
                    self.dead_letter(d, DeadReason::Expired { expired_at_ms: t })
                        .await?;
                    let message_id = &d.envelope.id;
                    tracing::info!(%queue, %message_id, expired_at_ms = t, "expired: dead-lettered unread");
                    out.remove(i);
                } else if d.attempt > self.config().max_deliver_for(queue) {
                    let attempts = d.attempt - 1;
                    self.dead_letter(d, DeadReason::MaxDeliver { attempts })
                        .await?;
                    let message_id = &d.envelope.id;
                    tracing::info!(%queue, %message_id, attempts, "dead-lettered: delivered max_deliver times without an ack");
                    out.remove(i);
                } else {
                    i += 1;
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if !out.is_empty() || left.is_zero() {
                return Ok(out);
            }
            self.wait_for(queue, left).await;
        }
    }

    /// Not done: `delivery` comes again after `delay`, unless this was its last attempt
    /// (`max_deliver` of its queue): then it becomes a dead letter now, not when it is next
    /// fetched (which, with no consumer reading, could be never). True when it was dead-lettered.
    async fn nack_or_dead_letter(&self, delivery: &Delivery, delay: Duration) -> BusResult<bool> {
        if delivery.attempt >= self.config().max_deliver_for(&delivery.queue) {
            let attempts = delivery.attempt;
            self.dead_letter(delivery, DeadReason::MaxDeliver { attempts })
                .await?;
            return Ok(true);
        }
        self.nack(delivery, delay).await.map(|()| false)
    }

    /// Stores a dead letter again on its queue (with a fresh delivery count), or publishes
    /// refused bytes again, then deletes the dead letter.
    ///
    /// A dead letter that would be refused again (invalid, or past its expiration time) is
    /// refused with [`BusError::Invalid`] naming it, and stays as it was: one entry, not two.
    async fn replay(&self, dead_letter_id: &str) -> BusResult<Receipt> {
        let letter = self
            .find_dead_letter(dead_letter_id)
            .await?
            .ok_or_else(|| BusError::UnknownDeadLetter(dead_letter_id.to_owned()))?;
        if let Some(issue) = letter.envelope.as_ref().and_then(|e| expired(e, now_ms())) {
            return Err(BusError::Invalid {
                issues: vec![issue],
                dead_letter_id: dead_letter_id.to_owned(),
            });
        }
        let again = match (letter.envelope, letter.queue) {
            (Some(env), Some(queue)) => {
                let queues = vec![queue];
                self.store(&env, &queues, false).await?;
                Ok(Receipt {
                    id: env.id,
                    duplicate: false,
                    queues,
                })
            }
            (Some(env), None) => self.publish_envelope(env).await,
            (None, _) => self.publish(letter.bytes).await,
        };
        let receipt = match again {
            Ok(receipt) => receipt,
            Err(BusError::Invalid {
                issues,
                dead_letter_id: refused_again,
            }) => {
                // Refused again: the new dead letter is the old one over again.
                if refused_again != dead_letter_id {
                    self.remove_dead_letter(&refused_again).await?;
                }
                return Err(BusError::Invalid {
                    issues,
                    dead_letter_id: dead_letter_id.to_owned(),
                });
            }
            Err(e) => return Err(e),
        };
        self.remove_dead_letter(dead_letter_id).await?;
        Ok(receipt)
    }
}

/// Why `env` may not be published or replayed at `now_ms`: its expiration time has passed.
pub(crate) fn expired(env: &Envelope, now_ms: i64) -> Option<Problem> {
    let at = env.expires_at_ms.filter(|&t| t <= now_ms)?;
    let when = chrono::DateTime::from_timestamp_millis(at)
        .map_or_else(|| at.to_string(), |t| t.to_rfc3339());
    Some(
        Problem::expected(
            "/metadata/expiration_time",
            "a time still to come",
            format!("{when}, which has passed"),
        )
        .with_hint("set a later expiration_time, or leave it out for a message that never expires"),
    )
}

/// What `publish_envelope` does when a validator or routing rules need the document: validates
/// the bytes, then routes and stores.
async fn publish_checked<B: Bus + ?Sized>(bus: &B, env: Envelope) -> BusResult<Receipt> {
    let config = bus.config();
    if config.validator.is_none() && config.rules.is_empty() {
        return bus.publish_routed(env, None).await;
    }
    let document: Option<Value> = serde_json::from_slice(&env.bytes).ok();
    if let Some(v) = &config.validator {
        let issues = match &document {
            Some(doc) => v.validate(doc),
            None => vec![Problem::expected(
                "",
                "a JSON document",
                "bytes that are not JSON",
            )],
        };
        if !issues.is_empty() {
            return Err(reject(bus, &env.bytes, Some(&env.id), issues, None).await);
        }
    }
    bus.publish_routed(env, document.as_ref()).await
}

/// The JSON document in `bytes`, or their refusal (kept as a dead letter).
async fn parsed<B: Bus + ?Sized>(bus: &B, bytes: &Bytes) -> BusResult<Value> {
    match serde_json::from_slice(bytes) {
        Ok(v) => Ok(v),
        Err(e) => {
            let issue = Problem::expected(
                "",
                "a JSON document",
                format!(
                    "invalid JSON at line {} column {}: {e}",
                    e.line(),
                    e.column()
                ),
            );
            Err(reject(bus, bytes, None, vec![issue], None).await)
        }
    }
}

/// The envelope of `document` (`read` when the caller has it) once the validator took it, or
/// its refusal (kept as a dead letter, filed under `publisher`).
async fn checked<B: Bus + ?Sized>(
    bus: &B,
    bytes: Bytes,
    document: &Value,
    read: Option<Envelope>,
    publisher: Option<&str>,
) -> BusResult<Envelope> {
    // Schema problems first: they explain a missing routing key better than extraction.
    let mut issues = match &bus.config().validator {
        Some(v) => v.validate(document),
        None => Vec::new(),
    };
    let env = match read {
        _ if !issues.is_empty() => None,
        Some(env) => Some(Envelope {
            bytes: bytes.clone(),
            ..env
        }),
        None => Envelope::from_document(document, bytes.clone())
            .map_err(|found| issues = found)
            .ok(),
    };
    match env {
        Some(env) => Ok(env),
        None => {
            let id = document
                .pointer("/metadata/message_id")
                .or_else(|| document.get("id"))
                .and_then(Value::as_str);
            Err(reject(bus, &bytes, id, issues, publisher).await)
        }
    }
}

/// An accepted envelope with the queues its routing gives, or its refusal as expired or
/// without a route (kept as a dead letter).
async fn routed<B: Bus + ?Sized>(
    bus: &B,
    mut env: Envelope,
    document: Option<&Value>,
) -> BusResult<(Envelope, Vec<String>)> {
    if let Some(issue) = expired(&env, now_ms()) {
        let reason = DeadReason::Expired {
            expired_at_ms: env.expires_at_ms.unwrap_or_default(),
        };
        let id = bus
            .record_rejected(&env.bytes, Some(&env.id), reason)
            .await?;
        return Err(BusError::Invalid {
            issues: vec![issue],
            dead_letter_id: id,
        });
    }
    let bindings = bus.bindings().await?;
    let queues = resolve(&mut env, document, &bus.config().rules, &bindings);
    if queues.is_empty() {
        let id = bus
            .record_rejected(&env.bytes, Some(&env.id), DeadReason::NoRoute)
            .await?;
        let issue = Problem::expected(
            "/metadata/recipient_id",
            "a recipient or a binding matching the message",
            "no route",
        );
        return Err(BusError::Invalid {
            issues: vec![issue],
            dead_letter_id: id,
        });
    }
    Ok((env, queues))
}

async fn reject<B: Bus + ?Sized>(
    bus: &B,
    bytes: &[u8],
    message_id: Option<&str>,
    issues: Vec<Problem>,
    publisher: Option<&str>,
) -> BusError {
    let reason = DeadReason::Invalid {
        issues: issues.clone(),
        publisher: publisher.map(str::to_owned),
    };
    match bus.record_rejected(bytes, message_id, reason).await {
        Ok(dead_letter_id) => BusError::Invalid {
            issues,
            dead_letter_id,
        },
        Err(e) => e,
    }
}

/// Runs `handler` for a delivery at most once per message id (for this handler name): the
/// id is committed together with the handler's effect, then the delivery is acknowledged (in
/// the same transaction on PostgreSQL: [`Backend::commit_once_and_ack`]).
///
/// A redelivery after a crash finds the id recorded, skips the handler and acknowledges.
/// A handler error nacks the delivery (redelivered at once, or a dead letter after its last
/// attempt) and is returned.
pub async fn handle_once<B, F, Fut>(
    bus: &B,
    delivery: &Delivery,
    handler: &str,
    f: F,
) -> BusResult<Handled>
where
    B: Bus + ?Sized,
    F: FnOnce(&Envelope) -> Fut,
    Fut: Future<Output = Result<Effect, String>>,
{
    let id = &delivery.envelope.id;
    if bus.already_handled(handler, id).await? {
        bus.ack(delivery).await?;
        return Ok(Handled::AlreadyDone);
    }
    let effect = match f(&delivery.envelope).await {
        Ok(effect) => effect,
        Err(e) => {
            bus.nack_or_dead_letter(delivery, Duration::ZERO).await?;
            return Err(BusError::Handler(e));
        }
    };
    let bindings = bus.bindings().await?;
    let outgoing: Vec<(Envelope, Vec<String>)> = effect
        .publish
        .into_iter()
        .map(|mut env| {
            let doc = serde_json::from_slice::<Value>(&env.bytes).ok();
            let queues = resolve(&mut env, doc.as_ref(), &bus.config().rules, &bindings);
            (env, queues)
        })
        .collect();
    let applied = bus
        .commit_once_and_ack(delivery, handler, id, &effect.record, &outgoing)
        .await?;
    Ok(if applied {
        Handled::Applied
    } else {
        Handled::AlreadyDone
    })
}

impl<B: Backend> Bus for B {}
