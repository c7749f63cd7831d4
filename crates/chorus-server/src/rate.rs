//! Per-agent rate limits: a token bucket per agent for the requests that write.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use axum::http::StatusCode;

use crate::error::ApiError;

/// Token buckets of every agent.
#[derive(Debug)]
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
        self.take_at(agent, 1, now).map_err(|wait| {
            refused(
                "rate_limited",
                format!(
                    "agent {agent:?} sent more than {} requests a second (burst {}); retry in {wait} s",
                    self.per_sec, self.burst
                ),
                wait,
            )
        })
    }

    /// Takes `n` tokens from `agent`'s bucket at `now`, all or none; else the whole seconds
    /// (at least 1) until `n` are there. More than the burst can never be taken.
    pub(crate) fn take_at(&self, agent: &str, n: u32, now: Instant) -> Result<(), u64> {
        if self.per_sec <= 0.0 || n == 0 {
            return Ok(());
        }
        let n = f64::from(n);
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let (tokens, at) = buckets.entry(agent.to_owned()).or_insert((self.burst, now));
        let refill = now.saturating_duration_since(*at).as_secs_f64() * self.per_sec;
        *tokens = (*tokens + refill).min(self.burst);
        *at = now;
        if *tokens >= n {
            *tokens -= n;
            return Ok(());
        }
        let wait = ((n.min(self.burst) - *tokens) / self.per_sec)
            .ceil()
            .max(1.0);
        // A small positive whole number of seconds.
        Err(wait as u64)
    }
}

/// A 429 with `Retry-After: wait`.
fn refused(code: &str, message: String, wait: u64) -> ApiError {
    let mut e = ApiError::new(StatusCode::TOO_MANY_REQUESTS, code, message);
    e.retry_after_secs = Some(wait);
    e
}

/// The `[media] max_new_blobs_per_minute` cap: a bucket per agent of blobs it may create (a
/// piece of media the store does not hold yet; one it holds costs nothing).
#[derive(Debug)]
pub struct NewBlobLimit {
    per_minute: u32,
    buckets: RateLimiter,
}

impl NewBlobLimit {
    /// `per_minute` new blobs an agent may create a minute, all of them at once; 0 turns the
    /// cap off.
    pub fn new(per_minute: u32) -> NewBlobLimit {
        NewBlobLimit {
            per_minute,
            buckets: RateLimiter::new(f64::from(per_minute) / 60.0, per_minute),
        }
    }

    /// The cap: new blobs an agent may create a minute (0: none).
    pub fn per_minute(&self) -> u32 {
        self.per_minute
    }

    /// Takes `n` new blobs from `agent`'s minute, all or none; else the whole seconds to wait.
    pub fn take(&self, agent: &str, n: u32) -> Result<(), u64> {
        self.take_at(agent, n, Instant::now())
    }

    fn take_at(&self, agent: &str, n: u32, now: Instant) -> Result<(), u64> {
        match self.per_minute {
            0 => Ok(()),
            _ => self.buckets.take_at(agent, n, now),
        }
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

    #[test]
    fn new_blobs_are_taken_all_or_none_and_refill_over_the_minute() {
        let cap = NewBlobLimit::new(60);
        let t0 = Instant::now();
        assert_eq!(cap.take_at("a", 50, t0), Ok(()));
        // 10 left: 11 are refused and nothing is taken, so 10 still pass.
        assert_eq!(cap.take_at("a", 11, t0), Err(1));
        assert_eq!(cap.take_at("a", 10, t0), Ok(()));
        assert_eq!(cap.take_at("a", 30, t0), Err(30));
        assert_eq!(cap.take_at("b", 60, t0), Ok(()), "per agent");
        // One a second comes back.
        assert_eq!(cap.take_at("a", 5, t0 + Duration::from_secs(5)), Ok(()));
        // More than a minute's worth is never taken (the caller says so; the wait is 1 s).
        assert_eq!(cap.take_at("c", 61, t0), Err(1));
        assert_eq!(NewBlobLimit::new(0).take_at("a", 1_000, t0), Ok(()));
    }
}
