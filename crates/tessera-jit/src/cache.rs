//! The on-disk kernel cache: layout, keys, manifests, verification, atomic writes, clearing.
//!
//! Layout: `<root>/v1/<key>.so` (the library), `<key>.json` (its [`Manifest`]), `<key>.c` (the
//! source), `<key>.log` (the last compiler output) and `<key>.lock` (the per-key lock file).
//! Every file is written to a temporary name in the same directory and renamed into place, the
//! manifest last, so a reader never sees a half-written file and an existing inode (possibly
//! mapped by another process) is never modified. A manifest is trusted only when the library
//! beside it has the recorded size and blake3 hash and the source hash of the kernel asked
//! for, and when both files are owned by this user and writable by nobody else (see
//! [`crate::trust`]); anything else is deleted and rebuilt, with a warning. Directories are
//! created 0700, files 0600 (libraries 0700). Temporary files are registered with
//! [`tessera_cleanup`], so that the signal handler of the command-line tool removes them.

use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use crate::JitError;
use crate::trust::{self, DirProblem};

/// Name of the versioned subdirectory; bump when the layout or manifest format changes.
pub(crate) const LAYOUT_VERSION: &str = "v1";

/// The cache root: `TESSERA_CACHE_DIR`, else `<user cache dir>/tessera`, else `<tmp>/tessera-cache`.
///
/// Entries live in the `v1` subdirectory of this root.
pub fn cache_dir() -> PathBuf {
    match std::env::var_os("TESSERA_CACHE_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => dirs::cache_dir()
            .map(|dir| dir.join("tessera"))
            .unwrap_or_else(|| std::env::temp_dir().join("tessera-cache")),
    }
}

/// Removes every cache entry under [`cache_dir`]; returns how many entries were removed.
pub fn clear_cache() -> io::Result<u64> {
    clear_cache_in(&cache_dir())
}

/// Removes every cache entry under the cache root `root`; returns how many entries were removed.
///
/// Only files named like cache files in `root/v1` are touched, so pointing this at a wrong
/// directory cannot delete anything else. Kernels already loaded by running processes stay valid.
pub fn clear_cache_in(root: &Path) -> io::Result<u64> {
    let dir = root.join(LAYOUT_VERSION);
    let entries = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(error) => return Err(error),
    };
    let mut removed = 0;
    for entry in entries {
        let path = entry?.path();
        let Some(name) = path.file_name().and_then(|name| name.to_str()) else {
            continue;
        };
        if !is_cache_file_name(name) {
            continue;
        }
        match fs::remove_file(&path) {
            Ok(()) => removed += u64::from(name.ends_with(".json")),
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(error),
        }
    }
    Ok(removed)
}

/// Whether `name` is one of the files this module creates (entries and temporary files).
fn is_cache_file_name(name: &str) -> bool {
    let base = name.strip_prefix('.').unwrap_or(name);
    let Some((key, rest)) = base.split_at_checked(KEY_HEX_LEN) else {
        return false;
    };
    let is_key = key.bytes().all(|b| b.is_ascii_hexdigit());
    let is_entry = [".so", ".json", ".c", ".log", ".lock"].contains(&rest);
    let is_temporary = name.starts_with('.') && rest.ends_with(".tmp");
    is_key && (is_entry || is_temporary)
}

/// Length of a key in hex digits (a full blake3 hash).
const KEY_HEX_LEN: usize = 64;

/// Everything that determines the produced library, hashed into the cache key.
pub(crate) struct KeyInputs<'a> {
    /// The C source.
    pub source: &'a str,
    /// [`crate::Compiler::identity`].
    pub compiler_identity: &'a str,
    /// The full flag list.
    pub flags: &'a [String],
    /// What `-march=native` means here (see [`host_fingerprint`]).
    pub host: &'a str,
}

impl KeyInputs<'_> {
    /// The cache key: blake3 of every input, length-prefixed so fields cannot run together.
    pub fn key(&self) -> String {
        let mut hasher = blake3::Hasher::new();
        let mut field = |bytes: &[u8]| {
            hasher.update(&(bytes.len() as u64).to_le_bytes());
            hasher.update(bytes);
        };
        field(env!("CARGO_PKG_VERSION").as_bytes());
        field(LAYOUT_VERSION.as_bytes());
        field(self.compiler_identity.as_bytes());
        field(&(self.flags.len() as u64).to_le_bytes());
        for flag in self.flags {
            field(flag.as_bytes());
        }
        field(self.host.as_bytes());
        field(self.source.as_bytes());
        hasher.finalize().to_hex().to_string()
    }
}

/// A description of the host CPU, so a cache shared between machines (a network home directory)
/// never hands a `-march=native` library built for another CPU.
pub(crate) fn host_fingerprint() -> String {
    let info = crate::cpu_info();
    format!("{} | {}", info.model_name, info.isa_flags)
}

/// What a cache entry was built from; a manifest is only trusted for exactly these inputs.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct EntryInputs {
    /// The cache key (file stem).
    pub key: String,
    /// blake3 of the C source.
    pub source_blake3: String,
    /// Compiler identity (path and version line).
    pub compiler: String,
    /// Full flag list.
    pub flags: Vec<String>,
}

/// The manifest stored beside each library, describing and authenticating it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub(crate) struct Manifest {
    /// What the entry was built from.
    #[serde(flatten)]
    pub inputs: EntryInputs,
    /// blake3 of the shared object.
    pub library_blake3: String,
    /// Size of the shared object in bytes.
    pub library_size: u64,
    /// Version of tessera-jit that wrote the entry.
    pub tessera_jit_version: String,
    /// Creation time, seconds since the Unix epoch.
    pub created_unix_seconds: u64,
    /// Seconds the compilation took.
    pub compile_seconds: f64,
}

/// The files of one cache entry.
pub(crate) struct Entry {
    /// The cache key.
    pub key: String,
    /// The directory holding the entry (`<root>/v1`).
    pub dir: PathBuf,
}

impl Entry {
    /// The entry for `key` under the cache root `root`, creating the directory (0700) if
    /// needed; an untrusted or unusable directory is a [`JitError::CacheIo`] saying why.
    pub fn open(root: &Path, key: String) -> Result<Entry, JitError> {
        let dir = root.join(LAYOUT_VERSION);
        match trust::private_dir(&dir) {
            Ok(()) => Ok(Entry { key, dir }),
            Err(DirProblem::NotADirectory) => Err(JitError::cache_io(
                "use directory",
                &dir,
                io::Error::other("it is not a directory"),
            )),
            Err(DirProblem::Unusable(why)) => Err(JitError::cache_io(
                "use directory",
                &dir,
                io::Error::other(why),
            )),
        }
    }

    /// The entry for `key` in the private directory `dir` (an uncached compilation).
    pub fn in_private_dir(dir: &Path, key: String) -> Entry {
        Entry {
            key,
            dir: dir.to_path_buf(),
        }
    }

    /// The path of the entry's file with extension `extension`.
    pub fn file(&self, extension: &str) -> PathBuf {
        self.dir.join(format!("{}.{extension}", self.key))
    }

    /// Takes the per-key lock (blocking); the lock is released when the returned file is dropped.
    ///
    /// The lock only avoids duplicate compilations: correctness never depends on it, because
    /// every write is an atomic rename of a complete file. If the lock file is deleted (by
    /// [`clear_cache`]) while we wait, the lock is taken again on the new file, so that holders
    /// of the lock always agree on one file.
    pub fn lock(&self) -> Result<File, JitError> {
        let path = self.file("lock");
        lock_file(&path).map_err(|(what, e)| JitError::cache_io(what, &path, e))
    }

    /// Deletes temporary files of this key left by a process that died while building it.
    ///
    /// Call only while holding [`Entry::lock`]: every temporary file of a key is written under
    /// its lock, so none of them can belong to a live writer then.
    pub fn remove_stale_temporaries(&self) {
        let prefix = format!(".{}.", self.key);
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with(&prefix) && name.ends_with(".tmp") {
                // Harmless if it fails: the file is only garbage.
                let _ = fs::remove_file(entry.path());
            }
        }
    }

    /// The manifest, if the entry is complete, trusted and its library matches it exactly.
    ///
    /// A damaged or untrusted entry (unreadable manifest, missing library, wrong size or hash,
    /// manifest for other inputs or another source, a file owned by another user or writable by
    /// others) is removed so that it gets rebuilt, with a warning; `None` is returned.
    pub fn verified_manifest(&self, expected: &EntryInputs) -> Option<Manifest> {
        let manifest_path = self.file("json");
        match fs::metadata(&manifest_path) {
            Err(error) if error.kind() == io::ErrorKind::NotFound => return None,
            _ => {}
        }
        for extension in ["json", "so"] {
            let path = self.file(extension);
            if !path.exists() {
                continue;
            }
            if let Some(why) = trust::untrusted_reason(&path) {
                return self.discard(&format!("{} is not trusted: {why}", path.display()));
            }
        }
        let text = match fs::read_to_string(&manifest_path) {
            Ok(text) => text,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return None,
            Err(error) => return self.discard(&format!("manifest unreadable: {error}")),
        };
        let manifest: Manifest = match serde_json::from_str(&text) {
            Ok(manifest) => manifest,
            Err(error) => return self.discard(&format!("manifest is not valid JSON: {error}")),
        };
        if manifest.inputs.source_blake3 != expected.source_blake3 {
            return self.discard(&format!(
                "its recorded source hash {} is not the hash of the kernel's source ({})",
                manifest.inputs.source_blake3, expected.source_blake3
            ));
        }
        if manifest.inputs != *expected {
            return self.discard("manifest describes other inputs");
        }
        match hash_file(&self.file("so")) {
            Ok((hash, size))
                if hash == manifest.library_blake3 && size == manifest.library_size =>
            {
                Some(manifest)
            }
            Ok((_, size)) => self.discard(&format!(
                "library does not match its manifest ({size} bytes, expected {})",
                manifest.library_size
            )),
            Err(error) => self.discard(&format!("library unreadable: {error}")),
        }
    }

    /// Deletes the manifest and library of a damaged or untrusted entry, with a warning (once
    /// per entry and process); always returns `None`.
    fn discard(&self, reason: &str) -> Option<Manifest> {
        let entry = self.dir.join(&self.key);
        trust::warn_once(
            &format!("entry {}", entry.display()),
            &format!(
                "kernel cache entry {} is not loaded: {reason}; it is deleted and compiled again",
                entry.display()
            ),
        );
        for extension in ["json", "so"] {
            // A failure here is harmless: the rebuild renames fresh files over these paths.
            let _ = fs::remove_file(self.file(extension));
        }
        None
    }

    /// A fresh temporary path in the entry's directory for a file with extension `extension`,
    /// registered with [`tessera_cleanup`] (before anything creates it) while the result lives.
    pub fn temporary_file(&self, extension: &str) -> Temporary {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let unique = COUNTER.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let path = self
            .dir
            .join(format!(".{}.{extension}.{pid}-{unique}.tmp", self.key));
        Temporary {
            _registered: tessera_cleanup::register(&path),
            path,
        }
    }

    /// Writes `contents` to the entry's file `extension` atomically (temporary file + rename);
    /// the file is private (0600).
    pub fn write_atomically(&self, extension: &str, contents: &[u8]) -> Result<PathBuf, JitError> {
        let temporary = self.temporary_file(extension);
        let write = || -> io::Result<()> {
            let mut file = private_file_options().open(&temporary.path)?;
            file.write_all(contents)?;
            file.sync_all()
        };
        if let Err(error) = write() {
            let _ = fs::remove_file(&temporary.path);
            return Err(JitError::cache_io("write", &temporary.path, error));
        }
        self.install(&temporary.path, extension)
    }

    /// Renames the complete file `temporary` to the entry's file `extension`.
    pub fn install(&self, temporary: &Path, extension: &str) -> Result<PathBuf, JitError> {
        let target = self.file(extension);
        fs::rename(temporary, &target).map_err(|error| {
            let _ = fs::remove_file(temporary);
            JitError::cache_io("rename into place", &target, error)
        })?;
        Ok(target)
    }
}

/// A temporary file's path, registered for removal by the signal handler while this lives.
pub(crate) struct Temporary {
    /// The path.
    pub path: PathBuf,
    _registered: tessera_cleanup::Registered,
}

/// Options creating a new private file (0600), replacing a stale one of the same name.
fn private_file_options() -> fs::OpenOptions {
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = File::options();
    options.write(true).create(true).truncate(true).mode(0o600);
    options
}

/// Takes an exclusive lock on the lock file `path` (created if missing; blocking); the lock is
/// released when the returned file is dropped. If the file is deleted or replaced while we
/// wait, the lock is taken again on the new file, so that holders of the lock always agree on
/// one file. Errors name the operation that failed.
pub fn lock_file(path: &Path) -> Result<File, (&'static str, io::Error)> {
    loop {
        let file = {
            use std::os::unix::fs::OpenOptionsExt;
            File::options()
                .create(true)
                .truncate(false)
                .write(true)
                .mode(0o600)
                .open(path)
        }
        .map_err(|e| ("open lock file", e))?;
        file.lock().map_err(|e| ("lock", e))?;
        let locked = file.metadata().map_err(|e| ("inspect lock file", e))?;
        match fs::metadata(path) {
            Ok(current) if current.ino() == locked.ino() && current.dev() == locked.dev() => {
                return Ok(file);
            }
            Ok(_) => {}
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(("inspect lock file", error)),
        }
    }
}

/// blake3 hash (hex) and size of the file at `path`.
pub(crate) fn hash_file(path: &Path) -> io::Result<(String, u64)> {
    let mut hasher = blake3::Hasher::new();
    let size = io::copy(&mut File::open(path)?, &mut hasher)?;
    Ok((hasher.finalize().to_hex().to_string(), size))
}

/// blake3 hash (hex) of `bytes`.
pub(crate) fn hash_bytes(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_file_names_are_recognised_and_nothing_else() {
        let key = "a".repeat(KEY_HEX_LEN);
        for name in [
            format!("{key}.so"),
            format!("{key}.json"),
            format!("{key}.c"),
            format!("{key}.log"),
            format!("{key}.lock"),
            format!(".{key}.so.12-3.tmp"),
        ] {
            assert!(is_cache_file_name(&name), "{name}");
        }
        for name in [
            "notes.txt".to_string(),
            format!("{key}.txt"),
            format!("{}.so", "g".repeat(KEY_HEX_LEN)),
            format!("{key}.so.tmp"),
            "short.so".to_string(),
        ] {
            assert!(!is_cache_file_name(&name), "{name}");
        }
    }

    #[test]
    fn keys_depend_on_every_input() {
        let flags = vec!["-O2".to_string()];
        let base = KeyInputs {
            source: "int f(void){return 1;}",
            compiler_identity: "cc 1",
            flags: &flags,
            host: "cpu",
        };
        let key = base.key();
        assert_eq!(key.len(), KEY_HEX_LEN);
        assert_eq!(key, base.key(), "keys are deterministic");
        let other_flags = vec!["-O3".to_string()];
        let split_flags = vec!["-O".to_string(), "2".to_string()];
        let variants = [
            KeyInputs {
                source: "int f(void){return 2;}",
                ..base
            },
            KeyInputs {
                compiler_identity: "cc 2",
                ..base
            },
            KeyInputs {
                flags: &other_flags,
                ..base
            },
            KeyInputs {
                flags: &split_flags,
                ..base
            },
            KeyInputs {
                host: "other cpu",
                ..base
            },
        ];
        for variant in variants {
            assert_ne!(variant.key(), key);
        }
    }
}
