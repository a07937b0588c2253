//! The temporary files and directories Tessera has live, removed by the command-line tool's
//! SIGINT/SIGTERM handler before it exits.
//!
//! A writer calls [`register`] with the temporary path *before* creating it and keeps the
//! returned [`Registered`] until the path is gone (renamed into place or deleted). The signal
//! handler calls [`remove_all_for_exit`], which deletes every registered path and keeps the
//! registry locked until the process exits: a writer that has not registered yet blocks in
//! [`register`], so it never creates a file that nobody would remove.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Live temporary paths, each with the number of its registration.
static LIVE: Mutex<Vec<(u64, PathBuf)>> = Mutex::new(Vec::new());

/// Numbers registrations, so that two registrations of one path are told apart.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// The registry, also after a panic in another thread while it held the lock.
fn live() -> MutexGuard<'static, Vec<(u64, PathBuf)>> {
    LIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A registered temporary path; dropping it unregisters the path (it does not delete it).
#[derive(Debug)]
#[must_use = "the path is unregistered when this is dropped"]
pub struct Registered {
    id: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        live().retain(|(id, _)| *id != self.id);
    }
}

/// Registers `path` (a file or a directory, removed with its content) as a live temporary.
///
/// Call it before creating the path: once the handler has started, this blocks until the
/// process exits.
pub fn register(path: impl Into<PathBuf>) -> Registered {
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    live().push((id, path.into()));
    Registered { id }
}

/// The live temporary paths, oldest first.
pub fn live_paths() -> Vec<PathBuf> {
    live().iter().map(|(_, path)| path.clone()).collect()
}

/// Deletes every live temporary path (directories with their content) and returns the
/// registry still locked: hold it until the process exits, so that no new temporary appears.
///
/// Must not be called by a thread that holds a [`Registered`] it may drop before exiting.
pub fn remove_all_for_exit() -> MutexGuard<'static, Vec<(u64, PathBuf)>> {
    let mut live = live();
    for (_, path) in live.drain(..) {
        remove(&path);
    }
    live
}

/// Removes `path`, a file or a directory tree; a path already gone is not an error.
fn remove(path: &Path) {
    // The process is exiting: nothing more can be done about a failure.
    let _ = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(_) => Ok(()),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_paths_are_removed_and_dropped_ones_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(".tessera-a.tmp");
        let tree = dir.path().join("tessera-kernels");
        let kept = dir.path().join("out.npy");
        let file_guard = register(&file);
        let tree_guard = register(&tree);
        let kept_guard = register(&kept);
        std::fs::write(&file, b"partial").unwrap();
        std::fs::create_dir(&tree).unwrap();
        std::fs::write(tree.join("k.so"), b"x").unwrap();
        std::fs::write(&kept, b"whole").unwrap();
        drop(kept_guard); // renamed into place: no longer a temporary
        assert!(live_paths().contains(&file));
        assert!(!live_paths().contains(&kept));
        {
            let held = remove_all_for_exit();
            assert!(held.is_empty());
        }
        assert!(!file.exists());
        assert!(!tree.exists());
        assert!(kept.exists());
        // Dropping the guards of removed paths is harmless.
        drop(file_guard);
        drop(tree_guard);
        assert!(!live_paths().contains(&file));
    }
}
