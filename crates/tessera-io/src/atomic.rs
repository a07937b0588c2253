//! Atomic file writes: a temporary file in the destination's directory, renamed when complete.

use std::io::{self, BufWriter, Write};
use std::path::Path;

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
    let mut builder = tempfile::Builder::new();
    builder.prefix(".tessera-").suffix(".tmp");
    // Temporary files are private (0600); the result is an ordinary file (0666 & umask).
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let mut temp = builder.tempfile_in(dir).map_err(fail)?;
    {
        let mut out = BufWriter::new(temp.as_file_mut());
        write(&mut out).map_err(fail)?;
        out.flush().map_err(fail)?;
    }
    temp.persist(path).map_err(|e| fail(e.error))?;
    Ok(())
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
