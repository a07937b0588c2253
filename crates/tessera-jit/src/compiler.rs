//! Finding the system C compiler and telling compilers apart.
//!
//! The compiler is named by `TESSERA_CC`, else `CC`, else `cc` (or explicitly through
//! [`crate::CompileOptions::compiler`]); a bare name is searched in `PATH`. Its identity — the
//! absolute path plus the first line of `--version` — is part of every cache key, so upgrading
//! the compiler or switching between gcc and clang never reuses a stale kernel.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use crate::JitError;

/// A resolved C compiler: an absolute path and the identity used in cache keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compiler {
    path: PathBuf,
    identity: String,
}

impl Compiler {
    /// Finds the compiler named by `TESSERA_CC`, else `CC`, else `cc`.
    pub fn discover() -> Result<Compiler, JitError> {
        let (name, origin) = requested_compiler();
        Compiler::named_from(&name, origin)
    }

    /// Resolves `name` (a bare program name searched in `PATH`, or a path) to a compiler.
    pub fn named(name: &str) -> Result<Compiler, JitError> {
        Compiler::named_from(name, "CompileOptions")
    }

    /// Like [`Compiler::named`]; `origin` says where the name came from, for error messages.
    fn named_from(name: &str, origin: &'static str) -> Result<Compiler, JitError> {
        let not_found = || JitError::CompilerNotFound {
            name: name.to_string(),
            origin,
        };
        let path = resolve_program(OsStr::new(name)).ok_or_else(not_found)?;
        let identity = cached_identity(&path)?;
        Ok(Compiler { path, identity })
    }

    /// The absolute path of the compiler executable.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Path and first `--version` line; two compilers with the same identity produce the same code.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Asks the compiler where its copy of the runtime library `file` lives
    /// (`cc -print-file-name=FILE`); `None` when the compiler does not ship it.
    pub fn runtime_library(&self, file: &str) -> Option<PathBuf> {
        let output = Command::new(&self.path)
            .arg(format!("-print-file-name={file}"))
            .output()
            .ok()?;
        let printed = String::from_utf8_lossy(&output.stdout).trim().to_string();
        // When the file is unknown, gcc and clang echo the bare name back.
        let path = PathBuf::from(printed);
        (output.status.success() && path.is_absolute() && path.exists()).then_some(path)
    }
}

/// The compiler name requested by the environment and the variable it came from.
fn requested_compiler() -> (String, &'static str) {
    for variable in ["TESSERA_CC", "CC"] {
        if let Ok(value) = std::env::var(variable) {
            let value = value.trim();
            if !value.is_empty() {
                return (value.to_string(), variable);
            }
        }
    }
    ("cc".to_string(), "default")
}

/// Resolves a program name the way a shell would: paths as given, bare names through `PATH`.
fn resolve_program(name: &OsStr) -> Option<PathBuf> {
    let candidate = Path::new(name);
    if name.is_empty() {
        return None;
    }
    if candidate.components().count() > 1 || candidate.is_absolute() {
        let absolute = std::path::absolute(candidate).ok()?;
        return is_executable_file(&absolute).then_some(absolute);
    }
    let search_path = std::env::var_os("PATH")?;
    std::env::split_paths(&search_path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(candidate))
        .find(|path| is_executable_file(path))
}

/// Whether `path` is a regular file (after symlinks) with an execute bit set.
fn is_executable_file(path: &Path) -> bool {
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// The identity of the compiler at `path`, computed once per process.
fn cached_identity(path: &Path) -> Result<String, JitError> {
    static IDENTITIES: OnceLock<Mutex<HashMap<PathBuf, String>>> = OnceLock::new();
    let identities = IDENTITIES.get_or_init(Mutex::default);
    if let Some(identity) = identities
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(path)
    {
        return Ok(identity.clone());
    }
    let identity = query_identity(path)?;
    identities
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(path.to_path_buf(), identity.clone());
    Ok(identity)
}

/// Runs `path --version` and builds the identity string from its first line.
fn query_identity(path: &Path) -> Result<String, JitError> {
    let unusable = |reason: String| JitError::CompilerUnusable {
        path: path.to_path_buf(),
        reason,
    };
    let output = Command::new(path).arg("--version").output().map_err(|e| {
        unusable(format!(
            "starting `{} --version` failed: {e}",
            path.display()
        ))
    })?;
    if !output.status.success() {
        return Err(unusable(format!(
            "`--version` exited with {}",
            output.status
        )));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let version = stdout
        .lines()
        .find(|line| !line.trim().is_empty())
        .unwrap_or("")
        .trim();
    if version.is_empty() {
        return Err(unusable("`--version` printed nothing".to_string()));
    }
    Ok(format!("{} | {}", path.display(), version))
}
