//! Extractors whose refusals are JSON like every other refusal: the caller (from its bearer
//! token), the admin, path and query parameters.

use axum::extract::{FromRequestParts, MatchedPath, Path, Query};
use axum::http::header;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::state::AppState;

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    /// The holder of the bearer token, or 401.
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Caller, ApiError> {
        let header = parts
            .headers
            .get(header::AUTHORIZATION)
            .map(|v| v.to_str().unwrap_or(""));
        state.tokens.caller(header)
    }
}

/// A request made with the admin token: 401 without a known token, 403 with an agent's.
pub struct Admin;

impl FromRequestParts<AppState> for Admin {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Admin, ApiError> {
        match Caller::from_request_parts(parts, state).await? {
            Caller::Admin => Ok(Admin),
            Caller::Agent(_) => {
                let route = parts
                    .extensions
                    .get::<MatchedPath>()
                    .map_or(parts.uri.path(), MatchedPath::as_str);
                Err(ApiError::forbidden(format!(
                    "{} {route} needs the admin token",
                    parts.method
                )))
            }
        }
    }
}

/// Path parameters; a bad one is a 400 with a JSON body.
pub struct ApiPath<T>(pub T);

/// Query parameters; a bad one is a 400 with a JSON body.
pub struct ApiQuery<T>(pub T);

/// Implements the extractor `$name` over axum's `$inner`, refusing with the code `$code`.
macro_rules! json_refusing {
    ($name:ident, $inner:ident, $code:literal) => {
        impl<T, S> FromRequestParts<S> for $name<T>
        where
            T: DeserializeOwned + Send,
            S: Send + Sync,
        {
            type Rejection = ApiError;

            async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
                $inner::<T>::from_request_parts(parts, state)
                    .await
                    .map(|$inner(v)| $name(v))
                    .map_err(|e| ApiError::bad_request($code, e.body_text()))
            }
        }
    };
}

json_refusing!(ApiPath, Path, "bad_path");
json_refusing!(ApiQuery, Query, "bad_query");
