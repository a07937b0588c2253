//! The one error type of the crate.

use std::io;
use std::path::PathBuf;

/// Everything that can go wrong while finding the compiler, compiling, caching or loading.
#[derive(Debug, thiserror::Error)]
pub enum JitError {
    /// The C compiler named by the user (or the default `cc`) is not an executable file.
    #[error("C compiler `{name}` not found (from {origin}); install gcc or set TESSERA_CC")]
    CompilerNotFound {
        /// The name or path that was looked for.
        name: String,
        /// Where the name came from: `TESSERA_CC`, `CC`, `CompileOptions` or `default`.
        origin: &'static str,
    },

    /// The compiler exists but could not be started or did not answer `--version`.
    #[error(
        "C compiler `{path}` could not be run: {reason}; check that it works or set TESSERA_CC"
    )]
    CompilerUnusable {
        /// The resolved compiler path.
        path: PathBuf,
        /// What went wrong when starting it.
        reason: String,
    },

    /// The compiler rejected the generated source.
    #[error(
        "C compilation failed ({status}); source saved at {source_path}, full log at {log_path}\n\
         command: {command}\ncompiler output:\n{log}"
    )]
    CompileFailed {
        /// Where the source that failed to compile was saved.
        source_path: PathBuf,
        /// Where the complete compiler output was saved.
        log_path: PathBuf,
        /// The command line that was run.
        command: String,
        /// The exit status of the compiler.
        status: String,
        /// The compiler's output (stderr then stdout), truncated to a readable length.
        log: String,
    },

    /// The compiled shared object could not be loaded.
    #[error("cannot load compiled kernel library {path}: {source}")]
    Load {
        /// The shared object path.
        path: PathBuf,
        /// The loader's error.
        source: libloading::Error,
    },

    /// A symbol was not found in a loaded library.
    #[error("symbol `{name}` not found in {path}: {source}")]
    MissingSymbol {
        /// The symbol name.
        name: String,
        /// The shared object path.
        path: PathBuf,
        /// The loader's error.
        source: libloading::Error,
    },

    /// A file operation in the kernel cache failed.
    #[error(
        "kernel cache: cannot {action} {path}: {source}; check permissions or set TESSERA_CACHE_DIR"
    )]
    CacheIo {
        /// What was being done (`create directory`, `write`, `rename`, ...).
        action: &'static str,
        /// The file or directory concerned.
        path: PathBuf,
        /// The operating system error.
        source: io::Error,
    },

    /// The kernel cache root exists and is not a directory (a configuration error).
    #[error(
        "the kernel cache directory {} (from {origin}) is not a directory; \
         set TESSERA_CACHE_DIR to a directory (it is created, mode 0700, if missing) or remove the file",
        path.display()
    )]
    CacheNotADirectory {
        /// The configured cache root.
        path: PathBuf,
        /// Where it came from: `TESSERA_CACHE_DIR`, the compile option, or the default location.
        origin: &'static str,
    },

    /// A machine measurement kernel ran but reported a failure.
    #[error("measurement failed: {0}")]
    Measurement(String),
}

impl JitError {
    /// Builds a [`JitError::CacheIo`] for `action` on `path`.
    pub(crate) fn cache_io(
        action: &'static str,
        path: impl Into<PathBuf>,
        source: io::Error,
    ) -> Self {
        JitError::CacheIo {
            action,
            path: path.into(),
            source,
        }
    }
}
