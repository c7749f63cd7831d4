//! Listings a page at a time: the query (`limit`, `after`), the page bodies (`items`, the
//! `next` cursor, the `total` when the store counts it cheaply) and the refusal of a bad cursor.

use chorus_agent::confirm::Confirmation;
use chorus_bus::{BusError, Page};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::api::bodies::{DeadLetterBody, StoredMessage, Track};
use crate::error::ApiError;

/// Most entries of one page.
pub const MAX_LIMIT: usize = 1000;

/// Entries of a page when `limit` is not given.
pub const DEFAULT_LIMIT: usize = 100;

/// Which page of a listing.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct PageQuery {
    /// At most this many entries (default 100; 1 to 1000, a value outside is brought inside).
    pub limit: Option<usize>,
    /// The `next` of the page before, unchanged; the first page when absent.
    pub after: Option<String>,
}

/// The page size asked for, brought within 1 to [`MAX_LIMIT`].
pub fn limit(asked: Option<usize>) -> usize {
    asked.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT)
}

impl PageQuery {
    /// The page size.
    pub fn limit(&self) -> usize {
        limit(self.limit)
    }

    /// The cursor.
    pub fn after(&self) -> Option<&str> {
        self.after.as_deref()
    }
}

/// The refusal of a listing the store could not read: a cursor it did not hand out is the
/// caller's mistake (400 `bad_cursor`).
pub fn listing_error(e: BusError) -> ApiError {
    match e {
        BusError::Config { ref what, .. } if what == "cursor" => {
            ApiError::bad_request("bad_cursor", format!("after: {e}"))
        }
        other => ApiError::from(other),
    }
}

/// Declares a page body of `$item`s.
macro_rules! page_body {
    ($(#[$doc:meta])* $name:ident, $item:ty) => {
        $(#[$doc])*
        #[derive(Debug, Serialize, ToSchema)]
        pub struct $name {
            /// The entries of this page.
            pub items: Vec<$item>,
            /// Pass as `after` for the next page; null on the last page.
            pub next: Option<String>,
            /// How many entries the whole listing has, when the store counts them cheaply.
            pub total: Option<u64>,
        }

        impl $name {
            /// The body of a store's page, its entries converted.
            #[allow(
                dead_code,
                reason = "a message page is built by hand: its entries' trace contexts are awaited"
            )]
            pub fn of<T>(page: Page<T>, each: impl FnMut(T) -> $item) -> $name {
                $name {
                    items: page.items.into_iter().map(each).collect(),
                    next: page.next,
                    total: page.total,
                }
            }
        }
    };
}

page_body!(
    /// A page of dead letters, oldest first.
    DeadLetterPage,
    DeadLetterBody
);
page_body!(
    /// A page of tasks or conversations, most recently active first.
    TrackPage,
    Track
);
page_body!(
    /// A page of stored messages, in publish order.
    MessagePage,
    StoredMessage
);
page_body!(
    /// A page of confirmations, oldest first.
    ConfirmationPage,
    Confirmation
);
