//! Per-agent rate limits: a token bucket per agent for the requests that write.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use axum::http::StatusCode;

use crate::error::ApiError;

/// Token buckets of every agent.
pub struct RateLimiter {
    per_sec: f64,
    burst: f64,
    buckets: Mutex<HashMap<String, (f64, Instant)>>,
}

impl RateLimiter {
    /// `per_sec` requests a second on average, `burst` at once; `per_sec` 0 turns limits off.
    pub fn new(per_sec: f64, burst: u32) -> RateLimiter {
        RateLimiter {
            per_sec,
            burst: f64::from(burst.max(1)),
            buckets: Mutex::default(),
        }
    }

    /// Takes one request from `agent`'s bucket, or refuses (429) with the seconds to wait.
    pub fn check(&self, agent: &str) -> Result<(), ApiError> {
        self.check_at(agent, Instant::now())
    }

    fn check_at(&self, agent: &str, now: Instant) -> Result<(), ApiError> {
        if self.per_sec <= 0.0 {
            return Ok(());
        }
        let mut buckets = self.buckets.lock().expect("rate lock");
        let (tokens, at) = buckets.entry(agent.to_owned()).or_insert((self.burst, now));
        let refill = now.saturating_duration_since(*at).as_secs_f64() * self.per_sec;
        *tokens = (*tokens + refill).min(self.burst);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            return Ok(());
        }
        let wait = ((1.0 - *tokens) / self.per_sec).ceil().max(1.0);
        let mut e = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            format!(
                "agent {agent:?} sent more than {} requests a second (burst {}); retry in {wait} s",
                self.per_sec, self.burst
            ),
        );
        // The wait is a small positive whole number of seconds.
        e.retry_after_secs = Some(wait as u64);
        Err(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn allows_a_burst_then_refills_at_the_rate() {
        let limiter = RateLimiter::new(2.0, 3);
        let t0 = Instant::now();
        for _ in 0..3 {
            assert!(limiter.check_at("a", t0).is_ok());
        }
        let refused = limiter.check_at("a", t0).unwrap_err();
        assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(refused.retry_after_secs, Some(1));
        assert!(limiter.check_at("b", t0).is_ok(), "buckets are per agent");
        assert!(
            limiter
                .check_at("a", t0 + Duration::from_millis(500))
                .is_ok()
        );
        assert!(
            limiter
                .check_at("a", t0 + Duration::from_millis(500))
                .is_err()
        );
        assert!(RateLimiter::new(0.0, 1).check_at("a", t0).is_ok());
    }
}
