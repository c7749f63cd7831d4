//! Media that lasts: images and audio taken out of messages into a content-addressed store
//! beside the database, served at `/v1/blobs/sha256-<hex>.<ext>`.

mod media;
mod prune;
mod rewrite;
mod take_back;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::rate::NewBlobLimit;

pub use media::{content_type, extension};
pub use rewrite::Kept;

/// The URL path under which blobs are served.
pub const BLOB_PATH: &str = "/v1/blobs/";

/// The `[media]` table of the config.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MediaConfig {
    /// Also fetch images and audio given by http(s) URL and keep them (off by default: the
    /// server then makes requests to addresses chosen by agents).
    #[serde(default)]
    pub fetch_remote: bool,
    /// Largest image or audio kept, in bytes.
    #[serde(default = "default_max_blob_bytes")]
    pub max_blob_bytes: usize,
    /// Seconds a fetch may take.
    #[serde(default = "default_fetch_timeout_secs")]
    pub fetch_timeout_secs: u64,
    /// Most images and audio clips one message may carry (each becomes a file): a message
    /// past it is refused before any is decoded or written.
    #[serde(default = "default_max_items_per_message")]
    pub max_items_per_message: usize,
    /// Most new images and audio clips (ones the store does not hold yet) one agent may make
    /// the store keep in a minute, all its messages together; 0 turns the cap off.
    #[serde(default = "default_max_new_blobs_per_minute")]
    pub max_new_blobs_per_minute: u32,
}

/// 600 new pieces of media an agent a minute: ten a second, far above an agent that sends a
/// screenshot a step, and a bound on the files and the disk one token can make the hub write.
fn default_max_new_blobs_per_minute() -> u32 {
    600
}

/// 100 pieces of media a message, as Anthropic's Messages API allows images a request; what a
/// model is given at once rarely comes near it.
fn default_max_items_per_message() -> usize {
    100
}

fn default_max_blob_bytes() -> usize {
    20 * 1024 * 1024
}

fn default_fetch_timeout_secs() -> u64 {
    10
}

impl Default for MediaConfig {
    fn default() -> Self {
        MediaConfig {
            fetch_remote: false,
            max_blob_bytes: default_max_blob_bytes(),
            fetch_timeout_secs: default_fetch_timeout_secs(),
            max_items_per_message: default_max_items_per_message(),
            max_new_blobs_per_minute: default_max_new_blobs_per_minute(),
        }
    }
}

/// Where blob bytes live: files (their modification time is when a message last carried
/// them), or a map of bytes with that time in Unix milliseconds and the generation of the last
/// put that carried them.
#[derive(Debug)]
enum Place {
    Dir(PathBuf),
    Memory(Mutex<HashMap<String, Held>>),
}

/// A blob held in memory.
#[derive(Debug)]
struct Held {
    bytes: Vec<u8>,
    /// When a message last carried it, Unix milliseconds.
    carried_ms: i64,
    /// The generation of the last put that carried it.
    generation: u64,
}

/// A blob a put created (it was not there before), with what tells whether anything carried it
/// since: see [`BlobStore::take_back`].
#[derive(Debug)]
pub struct Created {
    name: String,
    mark: Mark,
}

/// The state a created blob was left in by its put.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mark {
    /// The file's modification time (a later put, of any process, touches it) and the
    /// generation of the put (a later put of this process gives it a new one).
    Modified(SystemTime, u64),
    /// The map entry's generation (a later put gives it a new one).
    Generation(u64),
}

/// A content-addressed store of images and audio.
#[derive(Debug)]
pub struct BlobStore {
    place: Place,
    config: MediaConfig,
    client: OnceLock<reqwest::Client>,
    /// Held while a file is written or touched, and while a prune looks at and removes one, so
    /// that a blob carried again is never removed between the two.
    files: Arc<Mutex<()>>,
    /// The generation of the last put.
    generation: Arc<AtomicU64>,
    /// Blobs of this process created by a publish not yet stored or refused, with the
    /// generation of the last put that carried them: a take-back keeps one carried since,
    /// whatever the file system's time resolution.
    pending: Arc<Mutex<HashMap<String, u64>>>,
    /// Take-backs of this process under way: one may have a blob's file set aside for a moment.
    taking_back: Arc<AtomicUsize>,
    /// What each agent may still create this minute (`max_new_blobs_per_minute`).
    new_blobs: NewBlobLimit,
}

/// A blob could not be kept or read.
#[derive(Debug, thiserror::Error)]
#[error("blob store: {0}")]
pub struct BlobError(pub String);

/// The blob name (`sha256-<hex>.<ext>`) of `bytes` of media type `mime`, if the type is kept.
pub fn blob_name(bytes: &[u8], mime: &str) -> Option<String> {
    let ext = extension(mime)?;
    let hex: String = Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Some(format!("sha256-{hex}.{ext}"))
}

/// The extension of `name` when it is a well-formed blob name.
fn checked_ext(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("sha256-")?;
    let (hex, ext) = rest.split_once('.')?;
    let ok = hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    (ok && content_type(ext).is_some()).then_some(ext)
}

impl BlobStore {
    /// A store of files in `dir` (created when missing).
    pub fn open(dir: PathBuf, config: MediaConfig) -> Result<BlobStore, BlobError> {
        std::fs::create_dir_all(&dir)
            .map_err(|e| BlobError(format!("cannot create {}: {e}", dir.display())))?;
        let store = BlobStore::with_place(Place::Dir(dir.clone()), config);
        // The pruner tries again on each pass: a blob it cannot put back now is not a reason
        // to refuse to start.
        if let Err(e) = take_back::restore_dir(&dir, &store.files) {
            tracing::warn!(error = %e, "blobs set aside could not be put back at start");
        }
        Ok(store)
    }

    /// A store held in memory, lost when the server stops.
    pub fn in_memory(config: MediaConfig) -> BlobStore {
        BlobStore::with_place(Place::Memory(Mutex::default()), config)
    }

    fn with_place(place: Place, config: MediaConfig) -> BlobStore {
        BlobStore {
            place,
            new_blobs: NewBlobLimit::new(config.max_new_blobs_per_minute),
            config,
            client: OnceLock::new(),
            files: Arc::default(),
            generation: Arc::default(),
            pending: Arc::default(),
            taking_back: Arc::default(),
        }
    }

    /// The HTTP client for fetching remote media, built on first use.
    fn client(&self) -> Result<&reqwest::Client, BlobError> {
        if let Some(c) = self.client.get() {
            return Ok(c);
        }
        let built = reqwest::Client::builder()
            .timeout(Duration::from_secs(self.config.fetch_timeout_secs.max(1)))
            .build()
            .map_err(|e| BlobError(format!("cannot build the HTTP client: {e}")))?;
        Ok(self.client.get_or_init(|| built))
    }

    /// The media settings.
    pub fn config(&self) -> &MediaConfig {
        &self.config
    }

    /// Keeps `bytes` (once per content; a blob kept before is marked as carried now) and
    /// returns the blob's name.
    pub async fn put(&self, bytes: Vec<u8>, mime: &str) -> Result<String, BlobError> {
        let name = blob_name(&bytes, mime)
            .ok_or_else(|| BlobError(format!("media type {mime:?} is not kept")))?;
        self.put_named(name, bytes).await.map(|(name, _)| name)
    }

    /// [`BlobStore::put`] of bytes already named by [`blob_name`], also saying whether this put
    /// created the blob (for [`BlobStore::take_back`]).
    pub(crate) async fn put_named(
        &self,
        name: String,
        bytes: Vec<u8>,
    ) -> Result<(String, Option<Created>), BlobError> {
        let mark = match &self.place {
            Place::Memory(map) => {
                let mut map = map
                    .lock()
                    .map_err(|_| BlobError("the store's lock was poisoned".into()))?;
                let generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
                let created = !map.contains_key(&name);
                let held = map.entry(name.clone()).or_insert(Held {
                    bytes,
                    carried_ms: 0,
                    generation: 0,
                });
                held.carried_ms = chorus_bus::now_ms();
                held.generation = generation;
                created.then_some(Mark::Generation(generation))
            }
            Place::Dir(dir) => {
                let (dir, file, files) = (dir.clone(), name.clone(), self.files.clone());
                let (generations, pending) = (self.generation.clone(), self.pending.clone());
                tokio::task::spawn_blocking(move || {
                    // Under the lock that take-backs hold: a put is counted before any of them
                    // looks.
                    let _held = files.lock().unwrap_or_else(|p| p.into_inner());
                    let made = write_once(&dir, &file, &bytes)?;
                    let generation = generations.fetch_add(1, Ordering::SeqCst) + 1;
                    let mut pending = pending.lock().unwrap_or_else(|p| p.into_inner());
                    if made.is_some() || pending.contains_key(&file) {
                        pending.insert(file, generation);
                    }
                    Ok::<_, BlobError>(made.map(|at| Mark::Modified(at, generation)))
                })
                .await
                .map_err(|e| BlobError(e.to_string()))??
            }
        };
        let created = mark.map(|mark| Created {
            name: name.clone(),
            mark,
        });
        Ok((name, created))
    }

    /// How many of `names` the store does not hold yet.
    async fn missing(&self, names: Vec<String>) -> Result<usize, BlobError> {
        match &self.place {
            Place::Memory(map) => {
                let map = map
                    .lock()
                    .map_err(|_| BlobError("the store's lock was poisoned".into()))?;
                Ok(names.iter().filter(|n| !map.contains_key(*n)).count())
            }
            Place::Dir(dir) => {
                let dir = dir.clone();
                tokio::task::spawn_blocking(move || {
                    names.iter().try_fold(0, |missing, name| {
                        match std::fs::symlink_metadata(dir.join(name)) {
                            Ok(_) => Ok(missing),
                            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(missing + 1),
                            Err(e) => Err(BlobError(format!("cannot look for blob {name}: {e}"))),
                        }
                    })
                })
                .await
                .map_err(|e| BlobError(e.to_string()))?
            }
        }
    }

    /// The bytes and content type of the blob `name`; `None` when absent or not a blob name.
    pub async fn get(&self, name: &str) -> Result<Option<(Vec<u8>, &'static str)>, BlobError> {
        let Some(mime) = checked_ext(name).and_then(content_type) else {
            return Ok(None);
        };
        let bytes = match &self.place {
            Place::Memory(map) => map
                .lock()
                .map_err(|_| BlobError("the store's lock was poisoned".into()))?
                .get(name)
                .map(|held| held.bytes.clone()),
            Place::Dir(dir) => {
                let (path, owned) = (dir.join(name), name.to_owned());
                let (files, taking_back) = (self.files.clone(), self.taking_back.clone());
                tokio::task::spawn_blocking(move || {
                    if let Some(bytes) = read_present(&path, &owned)? {
                        return Ok(Some(bytes));
                    }
                    // A take-back of this process may have had the file set aside while it was
                    // read: one that has finished linked a carried blob back, and one under way
                    // does before it lets go of the lock.
                    let _held = (taking_back.load(Ordering::Acquire) > 0)
                        .then(|| files.lock().unwrap_or_else(|p| p.into_inner()));
                    read_present(&path, &owned)
                })
                .await
                .map_err(|e| BlobError(e.to_string()))??
            }
        };
        Ok(bytes.map(|b| (b, mime)))
    }
}

/// The bytes of the file at `path` (the blob `name`), `None` when there is none.
fn read_present(path: &std::path::Path, name: &str) -> Result<Option<Vec<u8>>, BlobError> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(BlobError(format!("cannot read blob {name}: {e}"))),
    }
}

/// Writes `dir/name` through a temporary file linked into place (never replacing a file of the
/// same name: another process may have just written it); when it is already there, marks it as
/// carried now (its modification time). Returns the new file's modification time when this
/// call created it.
fn write_once(
    dir: &std::path::Path,
    name: &str,
    bytes: &[u8],
) -> Result<Option<SystemTime>, BlobError> {
    use std::io::{ErrorKind, Write};
    let target = dir.join(name);
    let fail = |e: std::io::Error| BlobError(format!("cannot write blob {name}: {e}"));
    // A file that goes away between the look and the touch (taken back or pruned by another
    // process) is written anew: the touch counts only when the name still leads to the file
    // touched afterwards.
    match touch(&target) {
        Ok(true) => return Ok(None),
        Ok(false) => {}
        Err(e) => return Err(fail(e)),
    }
    let tmp = dir.join(format!(".tmp-{}", uuid::Uuid::new_v4().simple()));
    let written = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        let modified = file.metadata()?.modified()?;
        match std::fs::hard_link(&tmp, &target) {
            Ok(()) => Ok(modified),
            // A file system without hard links: renamed into place (a file of the same name
            // written meanwhile has the same bytes).
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::Unsupported | ErrorKind::PermissionDenied
                ) =>
            {
                std::fs::rename(&tmp, &target).map(|()| modified)
            }
            Err(e) => Err(e),
        }
    })();
    let _ = std::fs::remove_file(&tmp);
    match written {
        Ok(modified) => Ok(Some(modified)),
        // Written meanwhile by another process: the same bytes, carried now.
        Err(e) if e.kind() == ErrorKind::AlreadyExists => match touch(&target) {
            Ok(true) => Ok(None),
            Ok(false) => write_once(dir, name, bytes),
            Err(e) => Err(fail(e)),
        },
        Err(e) => Err(fail(e)),
    }
}

/// Marks the file at `path` as carried now; false when there is none, or when the name led to
/// another file by the time it was touched (taken away meanwhile).
fn touch(path: &std::path::Path) -> std::io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let file = match std::fs::File::options().write(true).open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    file.set_modified(SystemTime::now())?;
    let touched = file.metadata()?;
    match std::fs::metadata(path) {
        Ok(now) => Ok(now.dev() == touched.dev() && now.ino() == touched.ino()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn keeps_each_content_once_and_reads_it_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::open(dir.path().join("blobs"), MediaConfig::default()).unwrap();
        let a = store.put(b"png bytes".to_vec(), "image/png").await.unwrap();
        let b = store.put(b"png bytes".to_vec(), "image/png").await.unwrap();
        assert_eq!(a, b);
        assert!(a.starts_with("sha256-") && a.ends_with(".png"), "{a}");
        let files: Vec<_> = std::fs::read_dir(dir.path().join("blobs"))
            .unwrap()
            .collect();
        assert_eq!(files.len(), 1, "one file, no temporary left");
        let (bytes, mime) = store.get(&a).await.unwrap().unwrap();
        assert_eq!(bytes, b"png bytes");
        assert_eq!(mime, "image/png");
        assert!(
            store
                .put(b"<svg/>".to_vec(), "image/svg+xml")
                .await
                .is_err()
        );
    }

    #[tokio::test]
    async fn refuses_names_that_are_not_blob_names() {
        let store = BlobStore::in_memory(MediaConfig::default());
        let name = store.put(b"x".to_vec(), "audio/wav").await.unwrap();
        assert!(store.get(&name).await.unwrap().is_some());
        let upper = name.to_ascii_uppercase();
        for bad in [
            "../etc/passwd",
            "sha256-00.png",
            upper.as_str(),
            &name.replace(".wav", ".exe"),
        ] {
            assert!(store.get(bad).await.unwrap().is_none(), "{bad}");
        }
    }
}
