//! Compiling a C source into a cached, loaded shared object.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::cache::{self, Entry, EntryInputs, KeyInputs, Manifest};
use crate::options::LINK_LIBRARIES;
use crate::trust::{self, PrivateTempDir, RootOrigin};
use crate::{CompileOptions, CompiledLibrary, Compiler, JitError};

/// The most compiler output lines quoted in an error message (the full log is saved).
const LOG_LINES_SHOWN: usize = 60;
/// The most compiler output characters quoted in an error message.
const LOG_CHARS_SHOWN: usize = 8000;

/// What [`compile`] did.
#[derive(Clone, Debug, PartialEq)]
pub struct CompileInfo {
    /// Whether a valid cache entry was reused (no compiler run).
    pub cache_hit: bool,
    /// Whether the library is kept in the on-disk cache; `false` when the cache was not usable
    /// (a warning said why) and the kernel was compiled into a private temporary directory,
    /// deleted once the library was loaded.
    pub cached: bool,
    /// Wall time of the whole call: lookup, compilation if any, loading.
    pub seconds: f64,
    /// The shared object that was loaded (already deleted when not [`CompileInfo::cached`]).
    pub path: PathBuf,
    /// The saved C source (`<key>.c` beside the library; deleted when not cached).
    pub source_path: PathBuf,
    /// The cache key: blake3 of source, compiler identity, flags, host CPU and crate version.
    pub key: String,
}

/// Compiles `source` with `options` (or reuses the cached result) and loads it.
///
/// Concurrent calls for the same kernel, in threads or processes, wait for one another on a
/// per-key lock; all of them end with the same valid library. When the cache cannot be used
/// (not writable, not trusted: see [`crate::trust`]), the kernel is compiled into a private
/// temporary directory that is deleted after loading, and one warning per process says so; a
/// cache root that exists and is not a directory is an error.
pub fn compile(
    source: &str,
    options: &CompileOptions,
) -> Result<(CompiledLibrary, CompileInfo), JitError> {
    let start = Instant::now();
    let compiler = options.resolve_compiler()?;
    let flags = options.flags();
    let key = KeyInputs {
        source,
        compiler_identity: compiler.identity(),
        flags: &flags,
        host: host_fingerprint(),
    }
    .key();
    let (root, origin) = match &options.cache_dir {
        Some(dir) => (dir.clone(), RootOrigin::Options),
        None => (cache::cache_dir(), RootOrigin::of_default_root()),
    };
    let inputs = EntryInputs {
        key: key.clone(),
        source_blake3: cache::hash_bytes(source.as_bytes()),
        compiler: compiler.identity().to_string(),
        flags,
    };

    let mut built = None;
    if trust::check_root(&root, origin)? {
        match compile_cached(&root, source, &compiler, inputs.clone()) {
            Err(JitError::CacheIo {
                action,
                path,
                source: error,
            }) => trust::warn_cache_unused(
                &root,
                &format!("cannot {action} {}: {error}", path.display()),
            ),
            result => built = Some(result?),
        }
    }
    let cached = built.is_some();
    let Built {
        library,
        cache_hit,
        path,
        source_path,
    } = match built {
        Some(built) => built,
        None => compile_uncached(source, &compiler, inputs)?,
    };

    let info = CompileInfo {
        cache_hit,
        cached,
        seconds: start.elapsed().as_secs_f64(),
        path,
        source_path,
        key,
    };
    tracing::debug!(key = %info.key, cache_hit, cached, seconds = info.seconds, "kernel library ready");
    Ok((library, info))
}

/// A loaded library and where it came from.
struct Built {
    library: CompiledLibrary,
    cache_hit: bool,
    path: PathBuf,
    source_path: PathBuf,
}

/// Looks the kernel up in the cache under `root`, building it there if needed, and loads it.
/// A [`JitError::CacheIo`] means the cache is not usable (the caller compiles uncached).
fn compile_cached(
    root: &Path,
    source: &str,
    compiler: &Compiler,
    inputs: EntryInputs,
) -> Result<Built, JitError> {
    let entry = Entry::open(root, inputs.key.clone())?;
    let lock = entry.lock()?;
    let cache_hit = entry.verified_manifest(&inputs).is_some();
    let source_path = if cache_hit {
        saved_source(&entry, source)?
    } else {
        build(&entry, source, compiler, inputs)?
    };
    let path = entry.file("so");
    let library = CompiledLibrary::load(&path)?;
    drop(lock);
    Ok(Built {
        library,
        cache_hit,
        path,
        source_path,
    })
}

/// Compiles the kernel into a private temporary directory, loads it and deletes the directory
/// (kept when the compilation fails, for the source and log the error points to).
fn compile_uncached(
    source: &str,
    compiler: &Compiler,
    inputs: EntryInputs,
) -> Result<Built, JitError> {
    let mut dir = PrivateTempDir::new()?;
    let entry = Entry::in_private_dir(dir.path(), inputs.key.clone());
    let source_path = match build(&entry, source, compiler, inputs) {
        Ok(path) => path,
        Err(error) => {
            dir.keep = matches!(error, JitError::CompileFailed { .. });
            return Err(error);
        }
    };
    let path = entry.file("so");
    let library = CompiledLibrary::load(&path)?;
    Ok(Built {
        library,
        cache_hit: false,
        path,
        source_path,
    })
}

/// The host CPU description used in cache keys, read once per process.
fn host_fingerprint() -> &'static str {
    static HOST: OnceLock<String> = OnceLock::new();
    HOST.get_or_init(cache::host_fingerprint)
}

/// The path of the entry's saved source, rewriting it if someone deleted it.
fn saved_source(entry: &Entry, source: &str) -> Result<PathBuf, JitError> {
    let path = entry.file("c");
    if path.is_file() {
        Ok(path)
    } else {
        entry.write_atomically("c", source.as_bytes())
    }
}

/// Runs the compiler for a missing or damaged entry and installs library and manifest.
fn build(
    entry: &Entry,
    source: &str,
    compiler: &Compiler,
    inputs: EntryInputs,
) -> Result<PathBuf, JitError> {
    entry.remove_stale_temporaries();
    let source_path = entry.write_atomically("c", source.as_bytes())?;
    let output = entry.temporary_file("so");
    let output_path = &output.path;
    let mut command = Command::new(compiler.path());
    command
        .args(&inputs.flags)
        .arg("-o")
        .arg(output_path)
        .arg(&source_path)
        .args(LINK_LIBRARIES);

    die_with_parent(&mut command);

    let start = Instant::now();
    let result = command.output();
    let compile_seconds = start.elapsed().as_secs_f64();
    let output = result.map_err(|e| JitError::CompilerUnusable {
        path: compiler.path().to_path_buf(),
        reason: format!("starting it failed: {e}"),
    })?;

    let mut log = String::from_utf8_lossy(&output.stderr).into_owned();
    log.push_str(&String::from_utf8_lossy(&output.stdout));
    let log_path = entry.write_atomically("log", log.as_bytes())?;
    if !output.status.success() {
        let _ = std::fs::remove_file(output_path);
        return Err(JitError::CompileFailed {
            source_path,
            command: display_command(&command),
            status: output.status.to_string(),
            log: truncate_log(&log, &log_path),
            log_path,
        });
    }

    let (library_blake3, library_size) = synced_hash(output_path, compiler)?;
    entry.install(output_path, "so")?;
    let manifest = Manifest {
        inputs,
        library_blake3,
        library_size,
        tessera_jit_version: env!("CARGO_PKG_VERSION").to_string(),
        created_unix_seconds: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_secs()),
        compile_seconds,
    };
    let manifest_text = serde_json::to_string_pretty(&manifest)
        .map_err(|e| JitError::cache_io("serialise manifest", entry.file("json"), e.into()))?;
    entry.write_atomically("json", manifest_text.as_bytes())?;
    Ok(source_path)
}

/// Has the compiler killed (SIGTERM) when the thread that started it ends, as when Tessera
/// exits on SIGINT/SIGTERM: it does not go on writing files that were removed (Linux only).
fn die_with_parent(command: &mut Command) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: the closure only calls prctl, which is async-signal-safe.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = command;
}

/// Makes the freshly compiled library private (0700), flushes it to disk and returns its
/// blake3 hash and size. A missing or unreadable library means the compiler misbehaved.
fn synced_hash(path: &Path, compiler: &Compiler) -> Result<(String, u64), JitError> {
    use std::os::unix::fs::PermissionsExt;
    let private = || std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700));
    let sync = || std::fs::File::open(path)?.sync_all();
    let hashed = private()
        .and_then(|()| sync())
        .and_then(|()| cache::hash_file(path));
    hashed.map_err(|error| {
        let _ = std::fs::remove_file(path);
        JitError::CompilerUnusable {
            path: compiler.path().to_path_buf(),
            reason: format!(
                "it reported success but its library {} cannot be read: {error}",
                path.display()
            ),
        }
    })
}

/// The command line, for error messages.
fn display_command(command: &Command) -> String {
    std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|part| part.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The first lines of a compiler log, with a note saying where the rest is.
fn truncate_log(log: &str, log_path: &Path) -> String {
    let lines: Vec<&str> = log.lines().collect();
    let mut shown = String::new();
    let mut count = 0;
    for line in &lines {
        if count == LOG_LINES_SHOWN || shown.len() + line.len() > LOG_CHARS_SHOWN {
            break;
        }
        shown.push_str(line);
        shown.push('\n');
        count += 1;
    }
    if count < lines.len() {
        shown.push_str(&format!(
            "... {} more lines in {}\n",
            lines.len() - count,
            log_path.display()
        ));
    }
    if shown.trim().is_empty() {
        shown = "(the compiler printed nothing)\n".to_string();
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_logs_are_cut_with_a_pointer_to_the_full_log() {
        let log: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let cut = truncate_log(&log, Path::new("/cache/k.log"));
        assert!(cut.starts_with("line 0\n"));
        assert!(cut.contains(&format!("line {}\n", LOG_LINES_SHOWN - 1)));
        assert!(!cut.contains(&format!("line {}\n", LOG_LINES_SHOWN)));
        assert!(cut.ends_with(&format!(
            "... {} more lines in /cache/k.log\n",
            1000 - LOG_LINES_SHOWN
        )));
    }

    #[test]
    fn very_long_lines_respect_the_character_budget() {
        let log = format!(
            "{}\n{}\n",
            "x".repeat(LOG_CHARS_SHOWN - 10),
            "y".repeat(100)
        );
        let cut = truncate_log(&log, Path::new("k.log"));
        assert!(cut.len() < LOG_CHARS_SHOWN + 100);
        assert!(cut.contains("1 more lines"));
    }

    #[test]
    fn short_logs_are_kept_whole() {
        assert_eq!(truncate_log("a\nb\n", Path::new("k.log")), "a\nb\n");
        assert_eq!(
            truncate_log("", Path::new("k.log")),
            "(the compiler printed nothing)\n"
        );
    }
}
