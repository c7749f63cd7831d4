//! Where the changes the admin's event stream shows are announced (`/v1/events`): below the
//! state, which holds it, and the routes, which announce and read it.

use serde::Serialize;
use tokio::sync::broadcast;
use utoipa::ToSchema;

/// Changes kept for a slow reader before it is told to re-read everything.
const BUFFER: usize = 256;

/// The data of one `change` event.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Change {
    /// published, acked, nacked, replayed, confirmation, changed, or dead_lettered (the number
    /// of dead letters moved); `ready` (the stream is open) and `resync` (changes were missed:
    /// re-read everything) with the stream's own path.
    pub kind: String,
    /// The request path that made the change.
    pub path: String,
}

/// Where changes are announced; shared by the middleware and the streams.
#[derive(Debug, Clone)]
pub struct Live {
    tx: broadcast::Sender<Change>,
}

impl Default for Live {
    fn default() -> Live {
        Live {
            tx: broadcast::channel(BUFFER).0,
        }
    }
}

impl Live {
    /// Announces a change to every open stream (none open: nothing happens).
    pub fn announce(&self, change: Change) {
        let _ = self.tx.send(change);
    }

    /// True when a stream is open to hear announcements.
    pub fn watched(&self) -> bool {
        self.tx.receiver_count() > 0
    }

    /// A receiver of the changes announced from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.tx.subscribe()
    }
}
