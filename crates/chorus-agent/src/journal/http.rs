//! A journal kept by a chorus server (`/v1/agents/{agent}/journal/{task}`), written with the
//! agent's token, so every replica of the agent on any machine reads the same records.

use std::collections::HashMap;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use super::{Book, Journal, JournalError};

/// The server's journal, used with each agent's token.
pub struct HttpJournal {
    base: String,
    tokens: HashMap<String, String>,
    http: reqwest::Client,
}

#[derive(Deserialize)]
struct Records {
    records: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    key: String,
    record: Value,
}

impl HttpJournal {
    /// The journal of the server at `base`, with `(agent, token)` pairs.
    pub fn new<'a>(base: &str, tokens: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        HttpJournal {
            base: base.trim_end_matches('/').to_owned(),
            tokens: tokens
                .into_iter()
                .map(|(a, t)| (a.to_owned(), t.to_owned()))
                .collect(),
            http: reqwest::Client::new(),
        }
    }

    /// The URL of `book`, or of its record `key`, each segment percent-encoded.
    fn url(&self, book: &Book, key: Option<&str>) -> Result<reqwest::Url, JournalError> {
        let mut url = reqwest::Url::parse(&self.base)
            .map_err(|e| JournalError(format!("server URL {:?}: {e}", self.base)))?;
        url.path_segments_mut()
            .map_err(|()| JournalError(format!("server URL {:?} cannot have a path", self.base)))?
            .pop_if_empty()
            .extend(["v1", "agents", &book.agent, "journal", &book.task])
            .extend(key);
        Ok(url)
    }

    fn token(&self, agent: &str) -> Result<&str, JournalError> {
        self.tokens.get(agent).map(String::as_str).ok_or_else(|| {
            JournalError(format!(
                "no token for `{agent}`: add it to [server] tokens in the flow file"
            ))
        })
    }
}

async fn refused(what: &str, response: reqwest::Response) -> JournalError {
    let status = response.status();
    let body = response.text().await.unwrap_or_default();
    JournalError(format!("the server refused to {what} ({status}): {body}"))
}

#[async_trait]
impl Journal for HttpJournal {
    async fn record(&self, book: &Book, key: &str, record: &Value) -> Result<bool, JournalError> {
        let response = self
            .http
            .put(self.url(book, Some(key))?)
            .bearer_auth(self.token(&book.agent)?)
            .json(record)
            .send()
            .await
            .map_err(|e| JournalError(format!("recording on the server: {e}")))?;
        match response.status().as_u16() {
            201 => Ok(true),
            200 => Ok(false),
            _ => Err(refused("record", response).await),
        }
    }

    async fn records(&self, book: &Book) -> Result<Vec<(String, Value)>, JournalError> {
        let response = self
            .http
            .get(self.url(book, None)?)
            .bearer_auth(self.token(&book.agent)?)
            .send()
            .await
            .map_err(|e| JournalError(format!("reading the journal on the server: {e}")))?;
        if !response.status().is_success() {
            return Err(refused("read the journal", response).await);
        }
        let page: Records = response
            .json()
            .await
            .map_err(|e| JournalError(format!("an unreadable journal: {e}")))?;
        Ok(page
            .records
            .into_iter()
            .map(|e| (e.key, e.record))
            .collect())
    }
}
