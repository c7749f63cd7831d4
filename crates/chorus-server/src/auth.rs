//! Bearer tokens: hashed at rest, resolved to the calling agent or the admin (the extractors
//! that read them from a request are in `api::extract`).

use std::collections::HashMap;

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

impl Caller {
    /// The caller's agent id, or `admin`.
    pub fn name(&self) -> &str {
        match self {
            Caller::Agent(id) => id,
            Caller::Admin => "admin",
        }
    }
}

/// SHA-256 of a token, as 64 lower-case hex digits (the form kept in the config).
pub fn hash_token(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// The SHA-256 digest of a hex hash from the configuration (`None`: not 64 hex digits, which
/// the configuration's check refuses first).
fn digest_of(hash: &str) -> Option<[u8; 32]> {
    let mut digest = [0u8; 32];
    hex::decode_to_slice(hash, &mut digest).ok()?;
    Some(digest)
}

/// The known token hashes.
#[derive(Debug, Clone, Default)]
pub struct Tokens {
    /// By the token's SHA-256 digest: a request's token is hashed and looked up as bytes,
    /// with no hex string made per request.
    by_digest: HashMap<[u8; 32], Caller>,
}

impl Tokens {
    /// The agents and admin of `config`; `admin_hash` overrides the configured admin hash.
    pub fn new(config: &ServerConfig, admin_hash: Option<String>) -> Tokens {
        let mut by_digest: HashMap<[u8; 32], Caller> = config
            .agents
            .iter()
            .filter_map(|(id, a)| Some((digest_of(&a.token_sha256)?, Caller::Agent(id.clone()))))
            .collect();
        let admin = admin_hash.or_else(|| config.admin_token_sha256.clone());
        if let Some(digest) = admin.as_deref().and_then(digest_of) {
            by_digest.insert(digest, Caller::Admin);
        }
        Tokens { by_digest }
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
        let digest: [u8; 32] = Sha256::digest(token.trim().as_bytes()).into();
        self.by_digest
            .get(&digest)
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
        // A hash written in capitals in the configuration names the same token.
        config.agents.insert(
            "bob".into(),
            AgentEntry::with_token_hash(hash_token("b-token").to_ascii_uppercase()),
        );
        let tokens = Tokens::new(&config, Some(hash_token("root")));
        assert_eq!(
            tokens.caller(Some("Bearer a-token")).unwrap(),
            Caller::Agent("alice".into())
        );
        assert_eq!(
            tokens.caller(Some("Bearer  b-token ")).unwrap(),
            Caller::Agent("bob".into())
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
