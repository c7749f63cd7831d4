//! One agent's consumer in the HTTP path bench: reads its inbox stream over SSE (reqwest and
//! chorus-agent's SSE reader) and acknowledges what it read, one request per delivery or in
//! batches (over a connection of the publishers' kind).

use std::sync::Arc;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use crate::load::{Ack, Clock, PATIENCE, index, token};
use crate::publisher::Publisher;

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

/// One item of a batch ack.
#[derive(Serialize)]
struct AckItem<'a> {
    message_id: &'a str,
    attempt: u32,
}

#[derive(Deserialize)]
struct EventData {
    message_id: String,
    attempt: u32,
}

/// The data of an inbox event (read with chorus-agent's shared SSE reader).
fn event_data(event: chorus_agent::sse::Event) -> EventData {
    assert_eq!(
        event.event, "message",
        "the inbox stream failed: {}",
        event.data
    );
    serde_json::from_str(&event.data).expect("event data")
}

/// One agent's consumer: reads its inbox stream, hands each delivery to its acker.
pub struct Reader {
    /// Reads the stream, and sends the acks of [`Ack::Single`] (many at once).
    pub client: reqwest::Client,
    /// Sends the acks of [`Ack::Batch`], one request at a time.
    pub batch_acks: Publisher,
    pub base: String,
    pub agent: String,
    pub ack: Ack,
    pub clock: Arc<Clock>,
}

impl Reader {
    /// Reads `expect` messages; returns the delivery and ack latencies and when the last ack
    /// was answered.
    pub async fn consume(self, response: reqwest::Response, expect: usize) -> Consumed {
        let (tx, rx) = mpsc::unbounded_channel::<Held>();
        let clock = self.clock.clone();
        let acker = tokio::spawn(self.acker(rx));
        let mut deliver = Vec::with_capacity(expect);
        let mut events = chorus_agent::sse::SseReader::response(response, Some(PATIENCE));
        while deliver.len() < expect {
            let data = event_data(
                events
                    .next()
                    .await
                    .expect("the stream stays open")
                    .expect("an event within the patience"),
            );
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
        drop(tx);
        drop(events);
        let (acks, last) = acker.await.expect("the acker");
        Consumed {
            deliver,
            acks,
            last,
        }
    }

    /// Acknowledges what the reader hands over until it stops; returns the ack latencies and
    /// when the last ack was answered.
    async fn acker(mut self, mut rx: mpsc::UnboundedReceiver<Held>) -> (Vec<u64>, u64) {
        let (mut latencies, mut last) = (Vec::new(), 0);
        let bearer = token(&self.agent);
        match self.ack {
            Ack::Batch => {
                let path = format!("/v1/agents/{}/inbox/ack", self.agent);
                while let Some(first) = rx.recv().await {
                    let mut batch = vec![first];
                    while batch.len() < MAX_ACKS
                        && let Ok(h) = rx.try_recv()
                    {
                        batch.push(h);
                    }
                    let items: Vec<AckItem> = batch
                        .iter()
                        .map(|h| AckItem {
                            message_id: &h.id,
                            attempt: h.attempt,
                        })
                        .collect();
                    let body = serde_json::to_string(&items).expect("acks as JSON");
                    let (status, answer) = self.batch_acks.post(&path, &bearer, body).await;
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
