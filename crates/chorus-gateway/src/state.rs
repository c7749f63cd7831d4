//! What every request shares: the settings, the upstream client, the limit on requests at once,
//! and the counts of repairs.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode, header};
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::config::GatewayConfig;
use crate::error::ApiError;
use crate::metrics::Metrics;
use crate::reply::Finished;
use crate::stored::Responses;
use crate::upstream::Upstream;

/// The gateway's shared state.
pub struct Gateway {
    /// The settings.
    pub config: GatewayConfig,
    /// The upstream client.
    pub upstream: Upstream,
    slots: Arc<Semaphore>,
    key_hashes: Vec<[u8; 32]>,
    /// The metrics.
    pub metrics: Metrics,
    /// The stored responses of `/v1/responses`.
    pub responses: Responses,
}

impl Gateway {
    /// The state for `config` (checked first).
    pub fn new(config: GatewayConfig) -> Result<Self, String> {
        config.check()?;
        let upstream = Upstream::new(&config)?;
        let key_hashes = config
            .api_key_hashes
            .iter()
            .map(|h| {
                let mut out = [0u8; 32];
                let bytes = hex::decode(h.strip_prefix("sha256:").unwrap_or(h)).unwrap_or_default();
                out.copy_from_slice(&bytes[..32.min(bytes.len())]);
                out
            })
            .collect();
        Ok(Gateway {
            slots: Arc::new(Semaphore::new(config.max_concurrent)),
            upstream,
            key_hashes,
            metrics: Metrics::new(),
            responses: Responses::new(config.max_stored_responses),
            config,
        })
    }

    /// Checks the client's `Authorization: Bearer KEY` when keys are configured.
    pub fn authorize(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        if self.key_hashes.is_empty() {
            return Ok(());
        }
        let key = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        let denied = |message: &str| {
            ApiError::status(
                StatusCode::UNAUTHORIZED,
                "invalid_request_error",
                "invalid_api_key",
                message,
            )
        };
        let Some(key) = key else {
            return Err(denied("no API key: send `Authorization: Bearer KEY`"));
        };
        let digest: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        // Every configured hash is compared, each in full, so the time says nothing of the key.
        let mut found = false;
        for hash in &self.key_hashes {
            let same = hash
                .iter()
                .zip(digest.iter())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0;
            found |= same;
        }
        if found {
            Ok(())
        } else {
            Err(denied("the API key is not one of this gateway's"))
        }
    }

    /// A slot for one request, or a 429 when `max_concurrent` are being served.
    pub fn permit(&self) -> Result<OwnedSemaphorePermit, ApiError> {
        self.permits(1)
    }

    /// `count` slots, one for each generation of a request (its `n` choices), or a 429 when
    /// fewer than `count` are free.
    pub fn permits(&self, count: usize) -> Result<OwnedSemaphorePermit, ApiError> {
        let count = u32::try_from(count).unwrap_or(u32::MAX);
        self.slots.clone().try_acquire_many_owned(count).map_err(|_| {
            let max = self.config.max_concurrent;
            let message = if count == 1 {
                format!("{max} requests are being served already (max_concurrent)")
            } else {
                format!(
                    "the request's {count} more choices need as many of the {max} slots (max_concurrent), and fewer are free"
                )
            };
            let mut e = ApiError::status(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limit_error",
                "too_many_concurrent_requests",
                message,
            );
            e.retry_after = Some(1);
            e
        })
    }

    /// The request body as JSON, at most `max_body_bytes`.
    pub async fn read_json(&self, body: Body) -> Result<Value, ApiError> {
        let limit = self.config.max_body_bytes;
        let bytes = axum::body::to_bytes(body, limit).await.map_err(|_| {
            ApiError::status(
                StatusCode::PAYLOAD_TOO_LARGE,
                "invalid_request_error",
                "request_too_large",
                format!("the request body is over {limit} bytes (max_body_bytes), or broke off"),
            )
        })?;
        serde_json::from_slice(&bytes).map_err(|e| {
            ApiError::invalid(
                "",
                "invalid_json",
                format!(
                    "the body is not JSON: {e} (line {}, column {})",
                    e.line(),
                    e.column()
                ),
            )
        })
    }

    /// A 404 unless `model` is the one served.
    pub fn check_model(&self, model: &str) -> Result<(), ApiError> {
        if model == self.config.model {
            return Ok(());
        }
        let mut e = ApiError::status(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            "model_not_found",
            format!(
                "The model `{model}` does not exist; this gateway serves `{}` (GET /v1/models)",
                self.config.model
            ),
        );
        e.param = Some("/model".into());
        Err(e)
    }

    /// Counts a reply's repairs by kind.
    pub fn count_repairs(&self, finished: &Finished) {
        for kind in &finished.repair_kinds {
            self.metrics.repair(kind);
            tracing::info!(kind = %kind, "the model's output was repaired");
        }
    }
}
