//! Bearer tokens: hashed at rest, resolved to the calling agent or the admin (the extractors
//! that read them from a request are in `api::extract`).

use std::collections::HashMap;
use std::fmt::Write as _;

use axum::http::StatusCode;
use sha2::{Digest, Sha256};

use crate::config::ServerConfig;
use crate::error::ApiError;

/// Who made a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// An agent of the config, by id.
    Agent(String),
    /// The holder of the admin token.
    Admin,
}

/// SHA-256 of a token, as 64 lower-case hex digits (the form kept in the config).
pub fn hash_token(token: &str) -> String {
    // Written into one string: every request is authenticated through this.
    let mut hex = String::with_capacity(64);
    for b in Sha256::digest(token.as_bytes()) {
        let _ = write!(hex, "{b:02x}");
    }
    hex
}

/// The known token hashes.
#[derive(Debug, Clone, Default)]
pub struct Tokens {
    by_hash: HashMap<String, Caller>,
}

impl Tokens {
    /// The agents and admin of `config`; `admin_hash` overrides the configured admin hash.
    pub fn new(config: &ServerConfig, admin_hash: Option<String>) -> Tokens {
        let mut by_hash: HashMap<String, Caller> = config
            .agents
            .iter()
            .map(|(id, a)| {
                (
                    a.token_sha256.to_ascii_lowercase(),
                    Caller::Agent(id.clone()),
                )
            })
            .collect();
        if let Some(hash) = admin_hash.or_else(|| config.admin_token_sha256.clone()) {
            by_hash.insert(hash.to_ascii_lowercase(), Caller::Admin);
        }
        Tokens { by_hash }
    }

    /// The caller holding the bearer token in `authorization`, or 401.
    pub fn caller(&self, authorization: Option<&str>) -> Result<Caller, ApiError> {
        let unauthorized =
            |m: &str| ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", m.to_owned());
        let value = authorization
            .ok_or_else(|| unauthorized("missing `Authorization: Bearer <token>` header"))?;
        let token = value
            .strip_prefix("Bearer ")
            .ok_or_else(|| unauthorized("the Authorization header must be `Bearer <token>`"))?;
        self.by_hash
            .get(&hash_token(token.trim()))
            .cloned()
            .ok_or_else(|| unauthorized("unknown token"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::AgentEntry;

    #[test]
    fn hashes_like_sha256() {
        assert_eq!(
            hash_token("test"),
            "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
        );
    }

    #[test]
    fn resolves_agents_and_admin_and_refuses_the_rest() {
        let mut config = ServerConfig::default();
        config.agents.insert(
            "alice".into(),
            AgentEntry::with_token_hash(hash_token("a-token")),
        );
        let tokens = Tokens::new(&config, Some(hash_token("root")));
        assert_eq!(
            tokens.caller(Some("Bearer a-token")).unwrap(),
            Caller::Agent("alice".into())
        );
        assert_eq!(tokens.caller(Some("Bearer root")).unwrap(), Caller::Admin);
        for bad in [None, Some("Bearer nope"), Some("Basic a-token"), Some("")] {
            assert_eq!(
                tokens.caller(bad).unwrap_err().status,
                StatusCode::UNAUTHORIZED
            );
        }
    }
}
