//! Path and query extractors whose refusals are JSON like every other refusal.

use axum::extract::{FromRequestParts, Path, Query};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

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
