//! The HTTP routes and the OpenAPI document generated from them.

pub mod admin;
pub mod batch;
pub mod blobs;
mod bodies;
pub mod catalog;
pub mod confirmations;
pub mod deliveries;
pub mod events;
pub mod extract;
mod frames;
pub mod inbox;
pub mod journal;
pub mod ops;
pub mod pages;
pub mod peek;
pub mod publish;
pub mod search;

use std::borrow::Cow;

use axum::Json;
use axum::Router;
use axum::http::StatusCode;
use axum::routing::{get, post};
use serde_json::value::RawValue;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::ApiError;
use crate::state::AppState;

/// Stored bytes as JSON for an answer, on one line: passed through as they are when they hold
/// no line break, without building a tree and serialising it again (borrowed: an event copies
/// them once, into its frame); written again compactly when they do (an event's `data:` must
/// stay one line for the line-by-line readers of curl and shell clients); a string when they
/// are not JSON.
fn document(bytes: &[u8]) -> Cow<'_, RawValue> {
    let one_line = !bytes.iter().any(|&b| b == b'\n' || b == b'\r');
    if one_line && let Ok(raw) = serde_json::from_slice::<&RawValue>(bytes) {
        return Cow::Borrowed(raw);
    }
    let again = serde_json::from_slice::<serde_json::Value>(bytes)
        .and_then(|value| serde_json::value::to_raw_value(&value));
    Cow::Owned(
        again
            .or_else(|_| serde_json::value::to_raw_value(&String::from_utf8_lossy(bytes)))
            .unwrap_or_else(|_| RawValue::NULL.to_owned()),
    )
}

/// The document's fixed parts; the paths are added from the handlers.
#[derive(OpenApi)]
#[openapi(
    info(title = "chorus", description = "The chorus hub: publish messages and handoffs, read an agent's inbox."),
    modifiers(&BearerAuth)
)]
struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// Adds the 400 answer to every operation with path or query parameters: ids are checked
/// against the safe alphabet and query strings parsed before any handler runs, so each of them
/// can answer 400 (declared here once, not in each handler).
fn document_bad_requests(openapi: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
    for item in openapi.paths.paths.values_mut() {
        let shared = item.parameters.as_ref().is_some_and(|p| !p.is_empty());
        for operation in [
            &mut item.get,
            &mut item.post,
            &mut item.put,
            &mut item.delete,
            &mut item.patch,
        ]
        .into_iter()
        .flatten()
        {
            for parameter in operation.parameters.iter_mut().flatten() {
                constrain_id(parameter);
            }
            let own = operation.parameters.as_ref().is_some_and(|p| !p.is_empty());
            if !(shared || own) || operation.responses.responses.contains_key("400") {
                continue;
            }
            let answer = ResponseBuilder::new()
                .description("An id outside the safe alphabet, or a malformed query parameter")
                .content(
                    "application/json",
                    ContentBuilder::new()
                        .schema(Some(Ref::from_schema_name("ErrorBody")))
                        .build(),
                )
                .build();
            operation
                .responses
                .responses
                .insert("400".into(), answer.into());
        }
    }
}

/// Declares what the server checks of a path parameter (each but a blob's name is an id): the safe alphabet
/// of [`crate::ids`], at most 128 bytes, so that generated clients and fuzzers know it.
fn constrain_id(parameter: &mut utoipa::openapi::path::Parameter) {
    use utoipa::openapi::path::ParameterIn;
    use utoipa::openapi::{RefOr, Schema};
    // Blob names are content hashes with an extension, checked by the blob store.
    if !matches!(parameter.parameter_in, ParameterIn::Path) || parameter.name == "name" {
        return;
    }
    if let Some(RefOr::T(Schema::Object(object))) = parameter.schema.as_mut() {
        object.pattern = Some(crate::ids::SAFE_ID_PATTERN.into());
        object.max_length = Some(crate::ids::MAX_ID_LEN);
    }
}

/// The application with every route (and the `extra` routes of other modules: A2A), and its
/// OpenAPI document; each answer but the event streams' takes at most `timeout`.
pub fn router(
    state: AppState,
    timeout: Option<std::time::Duration>,
    extra: Router<AppState>,
) -> (Router, utoipa::openapi::OpenApi) {
    let router = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(publish::publish))
        .routes(routes!(batch::publish_batch))
        .routes(routes!(peek::inbox_messages))
        .routes(routes!(inbox::ack))
        .routes(routes!(batch::ack_batch))
        .routes(routes!(inbox::nack))
        .routes(routes!(inbox::in_progress))
        .routes(routes!(inbox::dead_letter))
        .routes(routes!(journal::records))
        .routes(routes!(journal::record))
        .routes(routes!(admin::dead_letters))
        .routes(routes!(deliveries::deliveries))
        .routes(routes!(admin::replay))
        .routes(routes!(admin::delete_dead_letter))
        .routes(routes!(admin::task))
        .routes(routes!(admin::conversation))
        .routes(routes!(ops::healthz))
        .routes(routes!(ops::metrics))
        .routes(routes!(catalog::tasks))
        .routes(routes!(catalog::conversations))
        .routes(routes!(search::search))
        .routes(routes!(confirmations::request, confirmations::list))
        .routes(routes!(confirmations::get))
        .routes(routes!(confirmations::approve))
        .routes(routes!(confirmations::reject))
        .routes(routes!(confirmations::consume))
        .routes(routes!(blobs::blob))
        .route(
            "/v1/agents/{agent}/inbox/{message_id}/{action}",
            post(inbox::settle),
        );
    // The routes above answer at once; the event streams below stay open as long as the
    // reader wants, so the timeout is only around the former.
    let router = match timeout {
        Some(limit) => router.route_layer(crate::layers::timeout(limit)),
        None => router,
    };
    let (router, openapi) = router
        .routes(routes!(inbox::inbox))
        .routes(routes!(events::events))
        .split_for_parts();
    let mut openapi = openapi;
    document_bad_requests(&mut openapi);
    let document = openapi.clone();
    let router = router
        .route("/openapi.json", get(move || async move { Json(document) }))
        .merge(crate::ui::routes())
        .merge(extra)
        .fallback(|| async {
            ApiError::new(
                StatusCode::NOT_FOUND,
                "not_found",
                "no such route; the API is described at /openapi.json",
            )
        })
        .with_state(state);
    (router, openapi)
}

#[cfg(test)]
mod document_tests {
    use super::document;

    #[test]
    fn answers_carry_stored_documents_on_one_line() {
        // One line already: the bytes themselves, number spellings and key order included.
        let compact = r#"{"b":1.0e2,"a":"Grüße \u00e9","n":-0}"#;
        assert_eq!(document(compact.as_bytes()).get(), compact);
        // Line breaks between tokens (a pretty-printed publish): the same value, on one line.
        let pretty = "{\r\n  \"role\": \"user\",\n  \"content\": \"a\\nb\"\n}";
        let one = document(pretty.as_bytes());
        assert!(!one.get().contains(['\n', '\r']), "{}", one.get());
        let (a, b): (serde_json::Value, serde_json::Value) = (
            serde_json::from_str(one.get()).unwrap(),
            serde_json::from_str(pretty).unwrap(),
        );
        assert_eq!(a, b);
        // Not JSON (a refused publish kept as a dead letter): a JSON string of its text.
        assert_eq!(document(b"{oops\n").get(), r#""{oops\n""#);
    }
}
