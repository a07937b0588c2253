//! Whether the kernel cache may be used: ownership and permissions of its directories and
//! entries, and the one warning printed when it is not used.
//!
//! A cache directory or entry is trusted only when it is owned by the user running Tessera and
//! nobody else can write it (no group or other write bit): anyone who can write there could
//! plant a shared library that Tessera would load and run. Directories are created with mode
//! 0700 and files with 0600 (0700 for libraries). An untrusted, read-only or otherwise
//! unusable cache is not used: kernels are compiled into a private temporary directory,
//! loaded and deleted, and one warning says so.

use std::collections::HashSet;
use std::fs::{self, DirBuilder};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use crate::JitError;

/// Why a file or directory with owner `uid` and mode `mode` is not trusted by the process of
/// effective user `euid`; `None` when it is.
pub fn distrust(uid: u32, mode: u32, euid: u32) -> Option<String> {
    if uid != euid {
        return Some(format!(
            "it is owned by user {uid}, not by the user running Tessera ({euid})"
        ));
    }
    let writers = match (mode & 0o020 != 0, mode & 0o002 != 0) {
        (true, true) => "its group and by all users",
        (true, false) => "its group",
        (false, true) => "all users",
        (false, false) => return None,
    };
    Some(format!(
        "it is writable by {writers} (mode {:o})",
        mode & 0o7777
    ))
}

/// The effective user id of this process.
pub(crate) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Why the file or directory `path` is not trusted (see [`distrust`]), or why it cannot be
/// inspected; `None` when it is trusted. Symbolic links are followed.
pub fn untrusted_reason(path: &Path) -> Option<String> {
    match fs::metadata(path) {
        Ok(meta) => distrust(meta.uid(), meta.mode(), euid()),
        Err(error) => Some(format!("it cannot be inspected: {error}")),
    }
}

/// What is wrong with a cache directory.
#[derive(Debug)]
pub(crate) enum DirProblem {
    /// It exists and is not a directory: a configuration error, reported as an error.
    NotADirectory,
    /// It cannot be used (created, inspected, trusted): the cache is skipped with a warning.
    Unusable(String),
}

/// Creates the directory `dir` (mode 0700, parents included) if it is missing and checks that
/// it is a directory this user alone can write.
pub(crate) fn private_dir(dir: &Path) -> Result<(), DirProblem> {
    match fs::metadata(dir) {
        Ok(meta) if !meta.is_dir() => return Err(DirProblem::NotADirectory),
        Ok(_) => {}
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| DirProblem::Unusable(format!("it cannot be created: {e}")))?;
        }
        Err(error) => {
            return Err(DirProblem::Unusable(format!(
                "it cannot be inspected: {error}"
            )));
        }
    }
    match untrusted_reason(dir) {
        Some(why) => Err(DirProblem::Unusable(why)),
        None => Ok(()),
    }
}

/// Creates `dir` (mode 0700, parents included) if it is missing and checks that it is a
/// directory of this user that nobody else can write; the error says why it is not.
pub fn check_private_dir(dir: &Path) -> Result<(), String> {
    private_dir(dir).map_err(|problem| match problem {
        DirProblem::NotADirectory => "it is not a directory".to_string(),
        DirProblem::Unusable(why) => why,
    })
}

/// Where the cache root came from, for messages.
#[derive(Clone, Copy, Debug)]
pub(crate) enum RootOrigin {
    /// [`crate::CompileOptions::cache_dir`].
    Options,
    /// The `TESSERA_CACHE_DIR` environment variable.
    Environment,
    /// The default location.
    Default,
}

impl RootOrigin {
    /// The origin of the root [`crate::cache_dir`] returns now.
    pub(crate) fn of_default_root() -> RootOrigin {
        match std::env::var_os("TESSERA_CACHE_DIR") {
            Some(dir) if !dir.is_empty() => RootOrigin::Environment,
            _ => RootOrigin::Default,
        }
    }
}

/// Checks the cache root `root`: creates it (0700) if missing; an existing non-directory is an
/// error ([`JitError::CacheNotADirectory`]); `Ok(false)` when it exists or was created but is
/// not usable, after the one warning of [`warn_cache_unused`]; `Ok(true)` when it can be used.
pub fn check_cache_root(root: &Path) -> Result<bool, JitError> {
    check_root(root, RootOrigin::of_default_root())
}

/// [`check_cache_root`] for a root that came from `origin`.
pub(crate) fn check_root(root: &Path, origin: RootOrigin) -> Result<bool, JitError> {
    match private_dir(root) {
        Ok(()) => Ok(true),
        Err(DirProblem::NotADirectory) => Err(JitError::CacheNotADirectory {
            path: root.to_path_buf(),
            origin: match origin {
                RootOrigin::Options => "the cache_dir compile option",
                RootOrigin::Environment => "TESSERA_CACHE_DIR",
                RootOrigin::Default => "the default location (TESSERA_CACHE_DIR is not set)",
            },
        }),
        Err(DirProblem::Unusable(why)) => {
            warn_cache_unused(root, &why);
            Ok(false)
        }
    }
}

/// Prints, once per process, the warning that the cache under `root` is not used because of
/// `why` (later calls, whatever their reason, print nothing).
pub fn warn_cache_unused(root: &Path, why: &str) {
    warn_once(
        "cache-unused",
        &format!(
            "the kernel cache {} is not used: {why}. Kernels are compiled into a private \
             temporary directory and deleted after loading, so every run compiles them again \
             (a slower start), and tuned plans are neither read nor saved. To fix it, make the \
             directory yours and private (`chmod 700`) and writable, or set TESSERA_CACHE_DIR \
             to such a directory",
            root.display()
        ),
    );
}

/// Topics already warned about in this process.
static WARNED: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// Prints `warning: <message>` on stderr (and logs it) the first time `topic` is warned about
/// in this process; later warnings of the same topic print nothing. Returns whether it printed.
pub fn warn_once(topic: &str, message: &str) -> bool {
    let mut warned = WARNED.lock().unwrap_or_else(PoisonError::into_inner);
    if !warned
        .get_or_insert_with(HashSet::new)
        .insert(topic.to_string())
    {
        return false;
    }
    tracing::warn!("{message}");
    eprintln!("warning: {message}");
    true
}

/// A private temporary directory (mode 0700) for an uncached compilation, registered for
/// removal by the signal handler and removed when dropped.
pub(crate) struct PrivateTempDir {
    path: PathBuf,
    _registered: tessera_cleanup::Registered,
    /// Kept on drop (a failed compilation's source and log are shown to the user).
    pub keep: bool,
}

impl PrivateTempDir {
    /// Creates a fresh directory `tessera-kernel-<pid>-<n>` in the system temporary directory.
    pub fn new() -> Result<PrivateTempDir, JitError> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let base = std::env::temp_dir();
        loop {
            let unique = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = base.join(format!("tessera-kernel-{}-{unique}", std::process::id()));
            let registered = tessera_cleanup::register(&path);
            match DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => {
                    return Ok(PrivateTempDir {
                        path,
                        _registered: registered,
                        keep: false,
                    });
                }
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
                Err(error) => {
                    return Err(JitError::cache_io(
                        "create private temporary directory",
                        path,
                        error,
                    ));
                }
            }
        }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PrivateTempDir {
    fn drop(&mut self) {
        if !self.keep {
            // Only garbage in the temporary directory is left if this fails.
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_private_paths_of_this_user_are_trusted() {
        assert_eq!(distrust(1000, 0o40700, 1000), None);
        assert_eq!(distrust(1000, 0o100600, 1000), None);
        assert_eq!(
            distrust(1000, 0o40755, 1000),
            None,
            "readable by others is fine"
        );
        let other = distrust(0, 0o40700, 1000).unwrap();
        assert!(other.contains("owned by user 0"), "{other}");
        let other = distrust(1001, 0o100700, 1000).unwrap();
        assert!(
            other.contains("not by the user running Tessera (1000)"),
            "{other}"
        );
        assert_eq!(
            distrust(1000, 0o40770, 1000).unwrap(),
            "it is writable by its group (mode 770)"
        );
        assert_eq!(
            distrust(1000, 0o40777, 1000).unwrap(),
            "it is writable by its group and by all users (mode 777)"
        );
        assert_eq!(
            distrust(1000, 0o41777, 1000).unwrap(),
            "it is writable by its group and by all users (mode 1777)"
        );
        assert_eq!(
            distrust(1000, 0o100702, 1000).unwrap(),
            "it is writable by all users (mode 702)"
        );
        // Root is not trusted with another user's cache, nor the user with root's.
        assert!(distrust(1000, 0o40700, 0).is_some());
        assert!(distrust(0, 0o40700, 1000).is_some());
    }

    #[test]
    fn missing_directories_are_created_private() {
        use std::os::unix::fs::PermissionsExt;
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("a").join("cache");
        private_dir(&dir).unwrap();
        let mode = fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{mode:o}");
    }

    #[test]
    fn shared_directories_and_files_are_refused() {
        use std::os::unix::fs::PermissionsExt;
        let base = tempfile::tempdir().unwrap();
        for mode in [0o777, 0o770, 0o1777] {
            fs::set_permissions(base.path(), fs::Permissions::from_mode(mode)).unwrap();
            match private_dir(base.path()) {
                Err(DirProblem::Unusable(why)) => assert!(why.contains("writable by"), "{why}"),
                other => panic!("mode {mode:o}: {other:?}"),
            }
        }
        fs::set_permissions(base.path(), fs::Permissions::from_mode(0o700)).unwrap();
        let file = base.path().join("file");
        fs::write(&file, b"").unwrap();
        assert!(matches!(private_dir(&file), Err(DirProblem::NotADirectory)));
    }

    #[test]
    fn a_warning_topic_is_printed_once() {
        assert!(warn_once("test-topic-once", "first"));
        assert!(!warn_once("test-topic-once", "second"));
        assert!(warn_once("test-topic-other", "third"));
    }

    #[test]
    fn private_temporary_directories_are_registered_and_removed() {
        let dir = PrivateTempDir::new().unwrap();
        let path = dir.path().to_path_buf();
        assert!(tessera_cleanup::live_paths().contains(&path));
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o700
        );
        drop(dir);
        assert!(!path.exists());
        assert!(!tessera_cleanup::live_paths().contains(&path));
    }
}
