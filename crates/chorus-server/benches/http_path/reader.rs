//! One agent's consumer in the HTTP path bench: reads its inbox stream over SSE and
//! acknowledges what it read, one request per delivery or in batches.

use std::sync::Arc;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::load::{Ack, Clock, PATIENCE, index, token};

/// Acknowledgements sent in one batch request at most.
const MAX_ACKS: usize = 1000;

/// What one consumer measured: delivery and ack latencies (µs), when its last ack was answered.
pub struct Consumed {
    pub deliver: Vec<u64>,
    pub acks: Vec<u64>,
    pub last: u64,
}

/// A received delivery waiting for its ack.
struct Held {
    id: String,
    attempt: u32,
    read_at: u64,
}

#[derive(Deserialize)]
struct EventData {
    message_id: String,
    attempt: u32,
}

/// The data of the `message` event in one SSE block (none for a comment).
fn event_data(block: &[u8]) -> Option<EventData> {
    let text = std::str::from_utf8(block).expect("events are UTF-8");
    let mut name = "message";
    let mut data = None;
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("event:") {
            name = v.trim();
        } else if let Some(v) = line.strip_prefix("data:") {
            data = Some(v.trim_start());
        }
    }
    let data = data?;
    assert_eq!(name, "message", "the inbox stream failed: {data}");
    Some(serde_json::from_str(data).expect("event data"))
}

/// One agent's consumer: reads its inbox stream, hands each delivery to its acker.
pub struct Reader {
    pub client: reqwest::Client,
    pub base: String,
    pub agent: String,
    pub ack: Ack,
    pub clock: Arc<Clock>,
}

impl Reader {
    /// Reads `expect` messages; returns the delivery and ack latencies and when the last ack
    /// was answered.
    pub async fn consume(self, mut response: reqwest::Response, expect: usize) -> Consumed {
        let (tx, rx) = mpsc::unbounded_channel::<Held>();
        let clock = self.clock.clone();
        let acker = tokio::spawn(self.acker(rx));
        let mut deliver = Vec::with_capacity(expect);
        let mut buffer = Vec::new();
        while deliver.len() < expect {
            let chunk = tokio::time::timeout(PATIENCE, response.chunk())
                .await
                .expect("an event within the patience")
                .expect("stream read")
                .expect("the stream stays open");
            buffer.extend_from_slice(&chunk);
            let mut used = 0;
            while let Some(end) = buffer[used..].windows(2).position(|w| w == b"\n\n") {
                let block = &buffer[used..used + end];
                used += end + 2;
                let Some(data) = event_data(block) else {
                    continue;
                };
                let read_at = clock.now();
                if let Some(latency) = clock.delivered(index(&data.message_id), read_at) {
                    deliver.push(latency);
                }
                let held = Held {
                    id: data.message_id,
                    attempt: data.attempt,
                    read_at,
                };
                tx.send(held).expect("the acker runs");
            }
            buffer.drain(..used);
        }
        drop(tx);
        drop(response);
        let (acks, last) = acker.await.expect("the acker");
        Consumed {
            deliver,
            acks,
            last,
        }
    }

    /// Acknowledges what the reader hands over until it stops; returns the ack latencies and
    /// when the last ack was answered.
    async fn acker(self, mut rx: mpsc::UnboundedReceiver<Held>) -> (Vec<u64>, u64) {
        let (mut latencies, mut last) = (Vec::new(), 0);
        let bearer = token(&self.agent);
        match self.ack {
            Ack::Batch => {
                let url = format!("{}/v1/agents/{}/inbox/ack", self.base, self.agent);
                while let Some(first) = rx.recv().await {
                    let mut batch = vec![first];
                    while batch.len() < MAX_ACKS
                        && let Ok(h) = rx.try_recv()
                    {
                        batch.push(h);
                    }
                    let body: Vec<Value> = batch
                        .iter()
                        .map(|h| json!({"message_id": h.id, "attempt": h.attempt}))
                        .collect();
                    let response = self
                        .client
                        .post(&url)
                        .bearer_auth(&bearer)
                        .json(&body)
                        .send()
                        .await
                        .expect("ack request");
                    let status = response.status().as_u16();
                    let answer: Value = response.json().await.expect("a JSON answer");
                    assert_eq!(status, 200, "{answer}");
                    let results = answer["results"].as_array().expect("results");
                    assert!(results.iter().all(|r| r["status"] == 204), "{answer}");
                    last = self.clock.now();
                    latencies.extend(batch.iter().map(|h| last.saturating_sub(h.read_at)));
                }
            }
            Ack::Single => {
                let mut inflight = FuturesUnordered::new();
                let mut open = true;
                loop {
                    tokio::select! {
                        held = rx.recv(), if open => match held {
                            Some(h) => inflight.push(self.ack_one(&bearer, h)),
                            None => open = false,
                        },
                        Some(read_at) = inflight.next(), if !inflight.is_empty() => {
                            last = self.clock.now();
                            latencies.push(last.saturating_sub(read_at));
                        }
                        else => break,
                    }
                }
            }
        }
        (latencies, last)
    }

    /// Acknowledges one delivery on its own; returns when it was read.
    async fn ack_one(&self, bearer: &str, h: Held) -> u64 {
        let url = format!(
            "{}/v1/agents/{}/inbox/{}/ack?attempt={}",
            self.base, self.agent, h.id, h.attempt
        );
        let response = self
            .client
            .post(url)
            .bearer_auth(bearer)
            .send()
            .await
            .expect("ack request");
        assert_eq!(response.status(), 204, "{:?}", response.text().await);
        h.read_at
    }
}
