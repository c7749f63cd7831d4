//! One generation: the upstream's reply read token by token into [`Delta`]s, then finished
//! into the whole reply, with the engine's counts, the repairs counted and the timings
//! recorded. Both APIs drive it, whole or streamed.

use std::time::Instant;

use axum::http::HeaderValue;
use axum::response::Response;

use crate::error::ApiError;
use crate::prompt::Prompt;
use crate::reply::{Delta, Finished, Reply, Unreadable};
use crate::state::Gateway;
use crate::upstream::Streamed;

/// A reply being generated.
pub struct Generation<'a> {
    gateway: &'a Gateway,
    upstream: Streamed,
    reply: Reply,
    started: Instant,
    first: Option<f64>,
    done: bool,
}

/// A finished generation.
pub struct Generated {
    /// The whole reply.
    pub finished: Finished,
    /// The upstream's finish reason (`length` when it hit `max_tokens`).
    pub upstream_reason: Option<String>,
}

impl<'a> Generation<'a> {
    /// Reads `upstream`'s reply to `prompt`, its answer cut at the first of `stop`; `started`
    /// is when the request came.
    pub fn new(
        gateway: &'a Gateway,
        prompt: &Prompt,
        stop: Vec<String>,
        upstream: Streamed,
        started: Instant,
    ) -> Self {
        Generation {
            gateway,
            upstream,
            reply: Reply::new(&prompt.opened, stop),
            started,
            first: None,
            done: false,
        }
    }

    /// The deltas of the next tokens; `None` once the reply has ended (or a stop string ended
    /// it).
    pub async fn next(&mut self) -> Result<Option<Vec<Delta>>, ApiError> {
        if self.done {
            return Ok(None);
        }
        let Some(tokens) = self.upstream.next().await? else {
            self.done = true;
            return Ok(None);
        };
        if self.first.is_none() && !tokens.is_empty() {
            self.first = Some(self.started.elapsed().as_secs_f64());
        }
        let mut deltas = Vec::new();
        for id in tokens {
            self.reply.token(id, &mut deltas).map_err(unreadable)?;
        }
        self.done = self.reply.stopped();
        Ok(Some(deltas))
    }

    /// Reads the reply to its end, dropping the deltas (the whole reply is the finished parse).
    pub async fn run(mut self) -> Result<Generated, ApiError> {
        while self.next().await?.is_some() {}
        self.finish()
    }

    /// Ends the reply: the whole of it, what the deltas had not carried in its `tail`.
    pub fn finish(self) -> Result<Generated, ApiError> {
        let mut finished = self
            .reply
            .finish(self.gateway.config.strict)
            .map_err(unreadable)?;
        let reported = self
            .upstream
            .usage
            .as_ref()
            .and_then(|u| u.get("completion_tokens"))
            .and_then(serde_json::Value::as_u64);
        if let Some(n) = reported {
            finished.generated = n as usize;
        }
        self.gateway.count_repairs(&finished);
        let total = self.started.elapsed().as_secs_f64();
        self.gateway
            .metrics
            .timing(self.first, finished.generated, total);
        tracing::Span::current().record("gen_ai.usage.output_tokens", finished.generated);
        Ok(Generated {
            finished,
            upstream_reason: self.upstream.finish_reason,
        })
    }
}

/// The header listing the kinds of repair made to the model's output.
pub const REPAIRS_HEADER: &str = "x-chorus-repairs";

/// Names the kinds of repair of every reply in `finished` (each kind once) in
/// [`REPAIRS_HEADER`] of `response`, when they made any.
pub fn mark_repairs<'a>(response: &mut Response, finished: impl IntoIterator<Item = &'a Finished>) {
    let mut kinds: Vec<&str> = Vec::new();
    for kind in finished.into_iter().flat_map(|f| &f.repair_kinds) {
        if !kinds.contains(&kind.as_str()) {
            kinds.push(kind);
        }
    }
    if kinds.is_empty() {
        return;
    }
    if let Ok(value) = HeaderValue::from_str(&kinds.join(", ")) {
        response.headers_mut().insert(REPAIRS_HEADER, value);
    }
}

fn unreadable(e: Unreadable) -> ApiError {
    ApiError::upstream(
        "unreadable_output",
        format!(
            "the model's output cannot be read as Harmony: {}",
            e.message
        ),
        Some(e.raw),
    )
}
