//! The cap on streams one agent holds open at once (its inbox streams and its A2A task streams,
//! `SendStreamingMessage` and `SubscribeToTask`): one token cannot take every connection the
//! server allows (`max_connections`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::http::StatusCode;

use crate::error::ApiError;

/// Counts each agent's open inbox streams; refuses one past the cap.
#[derive(Debug, Default)]
pub struct StreamCap {
    max: usize,
    open: Mutex<HashMap<String, usize>>,
}

/// One open stream of an agent, counted until it is dropped (when the stream ends).
#[derive(Debug)]
pub struct StreamTicket {
    cap: Arc<StreamCap>,
    agent: String,
}

impl StreamCap {
    /// A cap of `max` open streams per agent; 0 turns it off.
    pub fn new(max: usize) -> StreamCap {
        StreamCap {
            max,
            open: Mutex::default(),
        }
    }

    /// Counts a new stream of `agent`; 429 `too_many_streams` when it holds `max` already.
    pub fn open(self: &Arc<Self>, agent: &str) -> Result<StreamTicket, ApiError> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let count = open.entry(agent.to_owned()).or_insert(0);
        if self.max > 0 && *count >= self.max {
            let mut e = ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_streams",
                format!(
                    "agent {agent:?} holds {} streams open (inbox and A2A task streams), the most one agent may (max_streams_per_agent); close one first",
                    self.max
                ),
            );
            e.retry_after_secs = Some(1);
            return Err(e);
        }
        *count += 1;
        Ok(StreamTicket {
            cap: self.clone(),
            agent: agent.to_owned(),
        })
    }

    /// Streams `agent` holds open now.
    #[cfg(test)]
    pub fn open_of(&self, agent: &str) -> usize {
        let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        open.get(agent).copied().unwrap_or(0)
    }
}

impl Drop for StreamTicket {
    fn drop(&mut self) {
        let mut open = self.cap.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = open.get_mut(&self.agent) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.agent);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_holds_at_most_max_streams_and_gets_them_back_when_they_close() {
        let cap = Arc::new(StreamCap::new(2));
        let a = cap.open("a").unwrap();
        let _b = cap.open("a").unwrap();
        let refused = cap.open("a").unwrap_err();
        assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(refused.body.error, "too_many_streams");
        let _other = cap.open("other").expect("another agent has its own count");
        drop(a);
        assert_eq!(cap.open_of("a"), 1);
        let _c = cap.open("a").expect("a closed stream is given back");
        let off = Arc::new(StreamCap::new(0));
        let kept: Vec<_> = (0..100).map(|_| off.open("a").unwrap()).collect();
        assert_eq!(off.open_of("a"), kept.len());
    }
}
