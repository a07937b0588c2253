//! Atomic file writes: a temporary file in the destination's directory, renamed when complete.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::IoError;

/// Writes `path` through `write`; the file appears only if `write` and the flush succeed.
pub(crate) fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), IoError> {
    let fail = |source: io::Error| IoError::Write {
        path: path.to_path_buf(),
        source,
    };
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let (temp_path, file, _registered) = create_temporary(dir).map_err(fail)?;
    let written = (|| {
        let mut out = BufWriter::new(&file);
        write(&mut out)?;
        out.flush()
    })();
    drop(file);
    // A write or rename failure removes the temporary; the registration lasts until then, so a
    // SIGINT/SIGTERM at any moment removes it too (the destination is whole or absent).
    if let Err(source) = written.and_then(|()| std::fs::rename(&temp_path, path)) {
        let _ = std::fs::remove_file(&temp_path);
        return Err(fail(source));
    }
    Ok(())
}

/// Creates a fresh temporary file `.tessera-<pid>-<n>.tmp` in `dir`, registered (before it is
/// created) with [`tessera_cleanup`] so that the signal handler removes it.
///
/// Temporary files are created with mode 0666 & umask: the result is an ordinary file.
fn create_temporary(dir: &Path) -> io::Result<(PathBuf, File, tessera_cleanup::Registered)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    loop {
        let unique = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!(".tessera-{}-{unique}.tmp", std::process::id()));
        let registered = tessera_cleanup::register(&path);
        let mut options = File::options();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o666);
        match options.open(&path) {
            Ok(file) => return Ok((path, file, registered)),
            // Left by a process of the same id that died: take the next name.
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
            Err(error) => return Err(error),
        }
    }
}

/// Writes `text` to `path` atomically (generated code, reports).
pub fn write_text(path: &Path, text: &str) -> Result<(), IoError> {
    write_atomic(path, |out| out.write_all(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_leaves_neither_the_file_nor_a_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.bin");
        let err = write_atomic(&path, |w| {
            w.write_all(b"partial")?;
            Err(io::Error::other("encoder gave up"))
        })
        .unwrap_err();
        assert!(err.to_string().contains("out.bin"), "{err}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_successful_write_replaces_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.bin");
        std::fs::write(&path, b"old").unwrap();
        write_text(&path, "new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_ne!(
                mode & 0o044,
                0,
                "an output file is readable by others unless the umask says otherwise: {mode:o}"
            );
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn the_temporary_is_registered_while_it_is_written_and_only_then() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.bin");
        write_atomic(&path, |w| {
            let live = tessera_cleanup::live_paths();
            let temporary = live
                .iter()
                .find(|p| p.parent() == Some(dir.path()))
                .expect("the temporary is registered");
            let name = temporary.file_name().unwrap().to_string_lossy();
            assert!(
                name.starts_with(".tessera-") && name.ends_with(".tmp"),
                "{name}"
            );
            assert!(temporary.exists());
            w.write_all(b"x")
        })
        .unwrap();
        assert!(
            !tessera_cleanup::live_paths()
                .iter()
                .any(|p| p.parent() == Some(dir.path()))
        );
    }

    #[test]
    fn a_missing_directory_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing").join("out.bin");
        let err = write_atomic(&path, |w| w.write_all(b"x")).unwrap_err();
        assert!(
            err.to_string()
                .starts_with(&format!("cannot write {}", path.display())),
            "{err}"
        );
    }
}
