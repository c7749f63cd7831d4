//! Removing blobs no message carried since a given time.

use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, UNIX_EPOCH};

use super::{BlobError, BlobStore, Place, checked_ext};

impl BlobStore {
    /// Removes the blobs last carried by a message before `before_ms` (Unix milliseconds);
    /// returns how many.
    pub async fn prune(&self, before_ms: i64) -> Result<u64, BlobError> {
        match &self.place {
            Place::Memory(map) => {
                let mut map = map
                    .lock()
                    .map_err(|_| BlobError("the store's lock was poisoned".into()))?;
                let before = map.len();
                map.retain(|_, held| held.carried_ms >= before_ms);
                Ok((before - map.len()) as u64)
            }
            Place::Dir(dir) => {
                let (dir, files) = (dir.clone(), self.files.clone());
                tokio::task::spawn_blocking(move || prune_dir(&dir, &files, before_ms))
                    .await
                    .map_err(|e| BlobError(e.to_string()))?
            }
        }
    }
}

/// Removes the blob files of `dir` modified before `before_ms`, each under the lock that
/// writes and touches them.
fn prune_dir(dir: &Path, files: &Mutex<()>, before_ms: i64) -> Result<u64, BlobError> {
    let before = UNIX_EPOCH + Duration::from_millis(u64::try_from(before_ms).unwrap_or(0));
    let listing = std::fs::read_dir(dir)
        .map_err(|e| BlobError(format!("cannot list {}: {e}", dir.display())))?;
    let mut removed = 0;
    for entry in listing {
        let entry = entry.map_err(|e| BlobError(format!("cannot list {}: {e}", dir.display())))?;
        let name = entry.file_name();
        // Only blobs, and temporary files an hour old (left by a crash while a blob was written
        // or taken back); a temporary file being written, or anything else, is left alone.
        let stale_tmp = name.to_str().is_some_and(|n| n.starts_with(".tmp-"))
            && entry.metadata().and_then(|m| m.modified()).is_ok_and(|at| {
                at.elapsed()
                    .is_ok_and(|age| age > Duration::from_secs(3600))
            });
        if stale_tmp {
            let _ = std::fs::remove_file(entry.path());
            continue;
        }
        if name.to_str().and_then(checked_ext).is_none() {
            continue;
        }
        let _held = files.lock().unwrap_or_else(|p| p.into_inner());
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|at| at < before);
        if old {
            match std::fs::remove_file(entry.path()) {
                Ok(()) => removed += 1,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(BlobError(format!(
                        "cannot remove blob {}: {e}",
                        entry.path().display()
                    )));
                }
            }
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::super::MediaConfig;
    use super::*;

    async fn exercise(store: &BlobStore) {
        let old = store.put(b"old".to_vec(), "image/png").await.unwrap();
        let again = store
            .put(b"carried again".to_vec(), "image/png")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(30)).await;
        let cut = chorus_bus::now_ms();
        tokio::time::sleep(Duration::from_millis(30)).await;
        let fresh = store.put(b"fresh".to_vec(), "audio/wav").await.unwrap();
        assert_eq!(
            store
                .put(b"carried again".to_vec(), "image/png")
                .await
                .unwrap(),
            again
        );
        assert_eq!(store.prune(cut).await.unwrap(), 1);
        assert!(
            store.get(&old).await.unwrap().is_none(),
            "old and not carried since"
        );
        assert!(
            store.get(&again).await.unwrap().is_some(),
            "carried again after the cut"
        );
        assert!(store.get(&fresh).await.unwrap().is_some());
        assert_eq!(store.prune(cut).await.unwrap(), 0);
    }

    #[tokio::test]
    async fn removes_blobs_not_carried_since_the_cut() {
        exercise(&BlobStore::in_memory(MediaConfig::default())).await;
        let dir = tempfile::tempdir().unwrap();
        let blobs = dir.path().join("blobs");
        exercise(&BlobStore::open(blobs.clone(), MediaConfig::default()).unwrap()).await;
        std::fs::write(blobs.join("notes.txt"), b"not a blob").unwrap();
        let store = BlobStore::open(blobs.clone(), MediaConfig::default()).unwrap();
        assert_eq!(store.prune(chorus_bus::now_ms() + 60_000).await.unwrap(), 2);
        assert!(blobs.join("notes.txt").exists(), "only blobs are removed");
    }
}
