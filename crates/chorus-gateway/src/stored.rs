//! Stored responses, in memory: each response object with the conversation it ends (for
//! `previous_response_id`), the oldest forgotten past `max_stored_responses`.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use chorus_core::Message;
use serde_json::Value;

/// One stored response.
#[derive(Debug, Clone)]
pub struct Stored {
    /// The response object as it was answered.
    pub response: Value,
    /// The conversation up to and including its output, without instructions.
    pub messages: Vec<Message>,
}

/// The stored responses.
#[derive(Debug, Default)]
pub struct Responses {
    limit: usize,
    inner: Mutex<(HashMap<String, Stored>, VecDeque<String>)>,
}

impl Responses {
    /// A store keeping at most `limit` responses (0 keeps none).
    pub fn new(limit: usize) -> Self {
        Responses {
            limit,
            inner: Mutex::default(),
        }
    }

    /// Keeps `stored` under `id`, forgetting the oldest past the limit.
    pub fn put(&self, id: String, stored: Stored) {
        if self.limit == 0 {
            return;
        }
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let (map, order) = &mut *inner;
        if map.insert(id.clone(), stored).is_none() {
            order.push_back(id);
        }
        while map.len() > self.limit {
            match order.pop_front() {
                Some(oldest) => {
                    map.remove(&oldest);
                }
                None => break,
            }
        }
    }

    /// The response stored under `id`.
    pub fn get(&self, id: &str) -> Option<Stored> {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.0.get(id).cloned()
    }

    /// Forgets `id`; whether it was stored.
    pub fn delete(&self, id: &str) -> bool {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let (map, order) = &mut *inner;
        order.retain(|k| k != id);
        map.remove(id).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(n: u64) -> Stored {
        Stored {
            response: Value::from(n),
            messages: Vec::new(),
        }
    }

    #[test]
    fn the_oldest_go_first_past_the_limit() {
        let store = Responses::new(2);
        for n in 0..3 {
            store.put(format!("r{n}"), stored(n));
        }
        assert!(store.get("r0").is_none());
        assert_eq!(store.get("r2").unwrap().response, 2);
        assert!(store.delete("r1"));
        assert!(!store.delete("r1"));
        store.put("r3".into(), stored(3));
        assert!(store.get("r2").is_some() && store.get("r3").is_some());
        let none = Responses::new(0);
        none.put("x".into(), stored(0));
        assert!(none.get("x").is_none());
    }
}
