//! Taking back the blobs a refused publish created, unless something carried them since.
//!
//! Blobs are content-addressed and shared: a blob this publish created may have been found and
//! used by another publish a moment later (of this process or of another server on the same
//! folder). It is removed only when nothing carried it since its creation: no put of this
//! process (each counts a generation, under the lock take-backs hold), and no other process (a
//! put touches the file's modification time): the file is first renamed away (atomically: from
//! then on, a put of the same content finds no file and writes it anew, see `touch`), then its
//! modification time is compared with the one its creation left, and a touched file is linked
//! back (never replacing a file written meanwhile, which has the same bytes). Only conflicts
//! are taken back: a refusal that keeps a dead letter keeps the blobs it points at.
//!
//! The file set aside is named after the blob (`.aside-<random>.<name>`), so that a crash
//! between the rename and the link back loses nothing: opening the store and every pass of the
//! pruner link such files back where no file of their name is (a blob kept that should have
//! gone is removed by the pruner in time; one removed that a message carries would be lost).

use std::collections::HashMap;
use std::io::ErrorKind;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::{BlobError, BlobStore, Created, Mark, Place, checked_ext};

/// The prefix of a blob file set aside by a take-back.
const ASIDE: &str = ".aside-";

impl BlobStore {
    /// Forgets the blobs in `created` as pending: their message was stored (they are kept).
    pub fn settle(&self, created: Vec<Created>) {
        if created.is_empty() {
            return;
        }
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        for c in created {
            pending.remove(&c.name);
        }
    }

    /// Removes the blobs in `created` that nothing carried since their put (see the module
    /// doc); a failure is logged, not returned (the pruner removes what is left, in time).
    pub async fn take_back(&self, created: Vec<Created>) {
        if created.is_empty() {
            return;
        }
        match &self.place {
            Place::Memory(map) => {
                let mut map = map.lock().unwrap_or_else(|p| p.into_inner());
                for Created { name, mark } in created {
                    if map.get(&name).map(|held| Mark::Generation(held.generation)) == Some(mark) {
                        map.remove(&name);
                    }
                }
            }
            Place::Dir(dir) => {
                let (dir, files, pending) = (dir.clone(), self.files.clone(), self.pending.clone());
                // Counted before any file is set aside, until the last is linked back or gone,
                // even when this future is dropped: reads that miss a file look again then.
                let under_way = UnderWay::count(&self.taking_back);
                let done = tokio::task::spawn_blocking(move || {
                    for c in created {
                        if let Err(e) = take_back_file(&dir, &files, &pending, &c) {
                            tracing::warn!(blob = %c.name, error = %e, "a blob of a refused message was not removed");
                        }
                    }
                    drop(under_way);
                })
                .await;
                if let Err(e) = done {
                    tracing::warn!(error = %e, "the blobs of a refused message were not removed");
                }
            }
        }
    }
}

impl BlobStore {
    /// Links back the blob files a take-back set aside and did not finish with (a crash
    /// between its two steps, here or in another server on the same folder), where no file of
    /// their name is; returns how many were put back.
    pub async fn restore_set_aside(&self) -> Result<u64, BlobError> {
        let Place::Dir(dir) = &self.place else {
            return Ok(0);
        };
        let (dir, files) = (dir.clone(), self.files.clone());
        tokio::task::spawn_blocking(move || restore_dir(&dir, &files))
            .await
            .map_err(|e| BlobError(e.to_string()))?
    }
}

/// One take-back under way, counted until dropped.
struct UnderWay(Arc<AtomicUsize>);

impl UnderWay {
    fn count(counter: &Arc<AtomicUsize>) -> UnderWay {
        counter.fetch_add(1, Ordering::AcqRel);
        UnderWay(counter.clone())
    }
}

impl Drop for UnderWay {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The blob name of a file set aside by a take-back.
fn set_aside(file: &str) -> Option<&str> {
    let (_random, name) = file.strip_prefix(ASIDE)?.split_once('.')?;
    checked_ext(name).map(|_| name)
}

/// [`BlobStore::restore_set_aside`] on a folder. The folder is listed without the lock; each
/// file is linked back under the lock take-backs hold (so a take-back of this process is never
/// cut in two; one of another process that loses the race finds its file gone and leaves the
/// blob in place: kept, never lost). A file that cannot be linked back is logged and left for
/// the next pass; only a folder that cannot be listed is an error.
pub(super) fn restore_dir(dir: &Path, files: &Mutex<()>) -> Result<u64, BlobError> {
    let listing = std::fs::read_dir(dir)
        .map_err(|e| BlobError(format!("cannot list {}: {e}", dir.display())))?;
    let aside: Vec<(std::path::PathBuf, String)> = listing
        .flatten()
        .filter_map(|entry| {
            let file = entry.file_name();
            let name = file.to_str().and_then(set_aside)?.to_owned();
            Some((entry.path(), name))
        })
        .collect();
    let mut restored = 0;
    for (path, name) in aside {
        let _held = files.lock().unwrap_or_else(|p| p.into_inner());
        match link_back(&path, &dir.join(&name)) {
            Ok(back) => restored += u64::from(back),
            Err(e) => {
                tracing::warn!(file = %path.display(), error = %e, "a blob set aside could not be put back; tried again on the pruner's next pass");
                continue;
            }
        }
        if let Err(e) = std::fs::remove_file(&path)
            && e.kind() != ErrorKind::NotFound
        {
            tracing::warn!(file = %path.display(), error = %e, "a blob set aside was put back but its copy aside not removed");
        }
    }
    Ok(restored)
}

/// Puts the file `aside` back at `target` (true), or, when a file was written there meanwhile
/// (the same bytes), marks that one carried now so that its own creator's take-back keeps it
/// (false). The file aside stays where it is, except on a file system without hard links,
/// where it is renamed into place.
fn link_back(aside: &Path, target: &Path) -> std::io::Result<bool> {
    let written_anew = |target: &Path| super::touch(target).map(|_| false);
    match std::fs::hard_link(aside, target) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => written_anew(target),
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::Unsupported | ErrorKind::PermissionDenied
            ) =>
        {
            match std::fs::symlink_metadata(target) {
                Ok(_) => written_anew(target),
                Err(absent) if absent.kind() == ErrorKind::NotFound => {
                    std::fs::rename(aside, target).map(|()| true)
                }
                Err(other) => Err(other),
            }
        }
        Err(e) => Err(e),
    }
}

/// Removes `dir/<name>` when no put of this process carried it since its creation and its
/// modification time is still the one its creation left (no other process touched it).
fn take_back_file(
    dir: &Path,
    files: &Mutex<()>,
    pending: &Mutex<HashMap<String, u64>>,
    created: &Created,
) -> std::io::Result<()> {
    let Mark::Modified(made, generation) = created.mark else {
        return Ok(());
    };
    let _held = files.lock().unwrap_or_else(|p| p.into_inner());
    let last = pending
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&created.name);
    if last != Some(generation) {
        return Ok(());
    }
    let target = dir.join(&created.name);
    let aside = dir.join(format!(
        "{ASIDE}{}.{}",
        uuid::Uuid::new_v4().simple(),
        created.name
    ));
    match std::fs::rename(&target, &aside) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    }
    let untouched = std::fs::metadata(&aside)
        .and_then(|m| m.modified())
        .is_ok_and(|at| at == made);
    if !untouched && let Err(e) = link_back(&aside, &target) {
        // Put back as it was (a file of the same name has the same bytes).
        std::fs::rename(&aside, &target)?;
        return Err(e);
    }
    match std::fs::remove_file(&aside) {
        Err(e) if e.kind() != ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::MediaConfig;
    use super::*;

    /// Puts `bytes` as a PNG: its name, and whether this put created it.
    async fn put(store: &BlobStore, bytes: &[u8]) -> (String, Option<Created>) {
        let name = super::super::blob_name(bytes, "image/png").unwrap();
        store.put_named(name, bytes.to_vec()).await.unwrap()
    }

    fn files(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// A created blob nothing carried since goes; one another put carried since stays; one
    /// found (not created) is never taken.
    async fn exercise(store: &BlobStore, listed: impl Fn() -> usize) {
        let (a, made_a) = put(store, b"a").await;
        let (_, made_b) = put(store, b"b").await;
        assert!(made_a.is_some() && made_b.is_some(), "both created");
        // Another publish carries `a` again before the first one is refused.
        let (again, found) = put(store, b"a").await;
        assert_eq!(again, a);
        assert!(found.is_none(), "found, not created");
        store
            .take_back(vec![made_a.unwrap(), made_b.unwrap()])
            .await;
        assert_eq!(listed(), 1, "b taken back, a kept");
        assert!(store.get(&a).await.unwrap().is_some(), "a still served");
        // Created again after it went: a new blob, taken back alone.
        let (_, made) = put(store, b"b").await;
        assert!(made.is_some());
        store.take_back(made.into_iter().collect()).await;
        assert_eq!(listed(), 1);
    }

    #[tokio::test]
    async fn a_blob_is_taken_back_only_when_nothing_carried_it_since() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("blobs");
        let store = BlobStore::open(folder.clone(), MediaConfig::default()).unwrap();
        exercise(&store, || files(&folder).len()).await;
        assert!(
            files(&folder)
                .iter()
                .all(|n| !n.starts_with(".tmp-") && !n.starts_with(ASIDE)),
            "no temporary file left: {:?}",
            files(&folder)
        );
        let memory = BlobStore::in_memory(MediaConfig::default());
        let count = || match &memory.place {
            Place::Memory(map) => map.lock().unwrap().len(),
            Place::Dir(_) => unreachable!(),
        };
        exercise(&memory, count).await;
    }

    /// A put of this process since the creation keeps the blob even when the file's time did
    /// not move (a file system that keeps seconds only).
    #[tokio::test]
    async fn a_blob_carried_by_this_process_is_kept_whatever_the_file_time() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::open(dir.path().to_path_buf(), MediaConfig::default()).unwrap();
        let (name, made) = put(&store, b"y").await;
        let path = dir.path().join(&name);
        let made_at = std::fs::metadata(&path).unwrap().modified().unwrap();
        let (_, found) = put(&store, b"y").await;
        assert!(found.is_none());
        // The touch's time, as a coarse file system would keep it: the creation's.
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(made_at).unwrap();
        store.take_back(made.into_iter().collect()).await;
        assert_eq!(files(dir.path()), [name]);
    }

    /// A read that misses a file a take-back of this process has set aside waits for the
    /// take-back: a blob another message carries is served, not answered as absent.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_read_during_a_take_back_waits_for_the_link_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::open(dir.path().to_path_buf(), MediaConfig::default()).unwrap();
        let store = Arc::new(store);
        let bytes = b"carried by another message".to_vec();
        let (name, _) = put(&store, &bytes).await;
        let target = dir.path().join(&name);
        let aside = dir.path().join(format!("{ASIDE}0123.{name}"));
        // A take-back between its rename and its link back, as `take_back_file` does it.
        let under_way = UnderWay::count(&store.taking_back);
        let (set_aside, is_set_aside) = tokio::sync::oneshot::channel();
        let (link_back, may_link_back) = std::sync::mpsc::channel::<()>();
        let files = store.files.clone();
        let taker = std::thread::spawn(move || {
            let _held = files.lock().unwrap();
            std::fs::rename(&target, &aside).unwrap();
            set_aside.send(()).unwrap();
            may_link_back.recv().unwrap();
            std::fs::hard_link(&aside, &target).unwrap();
            std::fs::remove_file(&aside).unwrap();
        });
        is_set_aside.await.unwrap();
        let reading = tokio::spawn({
            let (store, name) = (store.clone(), name.clone());
            async move { store.get(&name).await.unwrap() }
        });
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        assert!(!reading.is_finished(), "the read waits for the take-back");
        link_back.send(()).unwrap();
        taker.join().unwrap();
        drop(under_way);
        let read = reading.await.unwrap().map(|(b, _)| b);
        assert_eq!(read, Some(bytes));
        assert_eq!(store.taking_back.load(Ordering::Acquire), 0);
    }

    /// A take-back counts itself as under way before it sets any file aside (it waits for
    /// the lock first) and stops counting when it is done.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_take_back_is_counted_while_under_way() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::open(dir.path().to_path_buf(), MediaConfig::default()).unwrap();
        let store = Arc::new(store);
        let (_, made) = put(&store, b"refused").await;
        let held = store.files.clone();
        let (release, may_go) = std::sync::mpsc::channel::<()>();
        let (locked, is_locked) = tokio::sync::oneshot::channel();
        let holder = std::thread::spawn(move || {
            let _held = held.lock().unwrap();
            locked.send(()).unwrap();
            may_go.recv().unwrap();
        });
        is_locked.await.unwrap();
        let taking = tokio::spawn({
            let store = store.clone();
            async move { store.take_back(made.into_iter().collect()).await }
        });
        let counted = async {
            while store.taking_back.load(Ordering::Acquire) == 0 {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(10), counted)
            .await
            .expect("the take-back waiting for the lock is counted");
        release.send(()).unwrap();
        holder.join().unwrap();
        taking.await.unwrap();
        assert_eq!(store.taking_back.load(Ordering::Acquire), 0);
        assert!(files(dir.path()).is_empty(), "{:?}", files(dir.path()));
    }

    /// A take-back cut by a crash between its rename and its link back: the blob is back
    /// when the store is opened again, and the pruner's pass does the same for a folder shared
    /// with a server that crashed.
    #[tokio::test]
    async fn a_blob_set_aside_by_a_crashed_take_back_is_put_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::open(dir.path().to_path_buf(), MediaConfig::default()).unwrap();
        let (name, _) = put(&store, b"carried elsewhere").await;
        let (other, _) = put(&store, b"written anew").await;
        let aside = |n: &str| dir.path().join(format!("{ASIDE}0123.{n}"));
        std::fs::rename(dir.path().join(&name), aside(&name)).unwrap();
        std::fs::copy(dir.path().join(&other), aside(&other)).unwrap();
        std::fs::write(dir.path().join(".aside-x.not-a-blob"), b"?").unwrap();
        assert!(
            store.get(&name).await.unwrap().is_none(),
            "gone while set aside"
        );
        let store = BlobStore::open(dir.path().to_path_buf(), MediaConfig::default()).unwrap();
        assert_eq!(
            store.get(&name).await.unwrap().map(|(bytes, _)| bytes),
            Some(b"carried elsewhere".to_vec())
        );
        assert_eq!(
            files(dir.path()),
            {
                let mut v = vec![".aside-x.not-a-blob".to_owned(), name.clone(), other];
                v.sort();
                v
            },
            "the set-aside files went, one of them linked back; anything else is left alone"
        );
        std::fs::rename(dir.path().join(&name), aside(&name)).unwrap();
        assert_eq!(store.restore_set_aside().await.unwrap(), 1);
        assert!(store.get(&name).await.unwrap().is_some());
        assert_eq!(store.restore_set_aside().await.unwrap(), 0);
    }

    /// Linking back onto a file written anew meanwhile leaves that file, marked carried now:
    /// the take-back of its own creator (another server) then keeps it.
    #[test]
    fn linking_back_onto_a_new_file_marks_it_carried() {
        let dir = tempfile::tempdir().unwrap();
        let (aside, target) = (dir.path().join("aside"), dir.path().join("target"));
        std::fs::write(&aside, b"same").unwrap();
        std::fs::write(&target, b"same").unwrap();
        let long_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        let file = std::fs::File::options().write(true).open(&target).unwrap();
        file.set_modified(long_ago).unwrap();
        assert!(
            !link_back(&aside, &target).unwrap(),
            "not linked: a file is there"
        );
        let touched = std::fs::metadata(&target).unwrap().modified().unwrap();
        assert!(touched > long_ago + std::time::Duration::from_secs(3000));
        std::fs::remove_file(&target).unwrap();
        assert!(link_back(&aside, &target).unwrap(), "linked where none is");
        assert_eq!(std::fs::read(&target).unwrap(), b"same");
    }

    #[tokio::test]
    async fn a_file_written_anew_meanwhile_is_left_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::open(dir.path().to_path_buf(), MediaConfig::default()).unwrap();
        let (name, made) = put(&store, b"x").await;
        // Another process removed it and wrote it again (a new file, a later time).
        let path = dir.path().join(&name);
        let made_at = std::fs::metadata(&path).unwrap().modified().unwrap();
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, b"x").unwrap();
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(made_at + std::time::Duration::from_secs(1))
            .unwrap();
        store.take_back(made.into_iter().collect()).await;
        assert_eq!(files(dir.path()), [name]);
    }
}
