//! What a compilation is asked to do: compiler, flags, exactness and cache location.

use std::path::PathBuf;

use crate::{Compiler, JitError};

/// Optimisation flags used when neither `TESSERA_CFLAGS` nor the options override them.
pub const DEFAULT_OPTIMIZATION_FLAGS: &[&str] = &["-O3", "-march=native"];

/// Flags every kernel is built with, whatever the optimisation flags are.
pub const REQUIRED_FLAGS: &[&str] = &["-std=c11", "-fopenmp", "-fPIC", "-shared"];

/// Flags added in exact mode so that floating point follows the source operation by operation.
pub const EXACT_FLAGS: &[&str] = &["-ffp-contract=off", "-fno-fast-math"];

/// Flags for the AddressSanitizer + UndefinedBehaviorSanitizer build (pass as extra flags).
///
/// A process that loads a library built with these must have the ASan runtime loaded first:
/// run it with `LD_PRELOAD=$(cc -print-file-name=libasan.so)` (see
/// [`crate::asan_runtime_path`]) and usually `ASAN_OPTIONS=detect_leaks=0`, because the host
/// program itself is not instrumented. Without the preload, `dlopen` fails with "ASan runtime
/// does not come first in initial library list".
pub const SANITIZER_FLAGS: &[&str] = &["-fsanitize=address,undefined", "-fno-omit-frame-pointer"];

/// Libraries linked into every kernel (after the source file).
pub(crate) const LINK_LIBRARIES: &[&str] = &["-lm"];

/// How to compile one C source: everything that can change the produced code.
///
/// Every field defaults to "ask the environment": the compiler from `TESSERA_CC`/`CC`/`cc`, the
/// optimisation flags from `TESSERA_CFLAGS` or [`DEFAULT_OPTIMIZATION_FLAGS`], the cache in
/// [`crate::cache_dir`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompileOptions {
    /// Exact floating point: adds [`EXACT_FLAGS`]; callers must not add value-changing flags.
    pub exact: bool,
    /// Flags appended after all others (defines, sanitizers, `-fno-math-errno`).
    pub extra_flags: Vec<String>,
    /// Compiler name or path, overriding `TESSERA_CC` / `CC`.
    pub compiler: Option<String>,
    /// Optimisation flags, overriding `TESSERA_CFLAGS` and the defaults.
    pub optimization_flags: Option<Vec<String>>,
    /// Cache root, overriding `TESSERA_CACHE_DIR` and the user cache directory.
    pub cache_dir: Option<PathBuf>,
}

impl CompileOptions {
    /// Options for exact mode (bitwise reproducible floating point).
    pub fn exact() -> Self {
        CompileOptions {
            exact: true,
            ..CompileOptions::default()
        }
    }

    /// Appends one flag to [`CompileOptions::extra_flags`].
    pub fn with_flag(mut self, flag: impl Into<String>) -> Self {
        self.extra_flags.push(flag.into());
        self
    }

    /// Uses the compiler `name` (a program name or a path).
    pub fn with_compiler(mut self, name: impl Into<String>) -> Self {
        self.compiler = Some(name.into());
        self
    }

    /// Keeps the cache under `dir` instead of the default location.
    pub fn with_cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache_dir = Some(dir.into());
        self
    }

    /// The compiler these options use: [`CompileOptions::compiler`], else the environment's.
    pub fn resolve_compiler(&self) -> Result<Compiler, JitError> {
        match &self.compiler {
            Some(name) => Compiler::named(name),
            None => Compiler::discover(),
        }
    }

    /// The full list of compiler flags, in command-line order (source and output excluded).
    pub fn flags(&self) -> Vec<String> {
        let optimization = match &self.optimization_flags {
            Some(flags) => flags.clone(),
            None => environment_optimization_flags()
                .unwrap_or_else(|| to_strings(DEFAULT_OPTIMIZATION_FLAGS)),
        };
        let mut flags = optimization;
        flags.extend(to_strings(REQUIRED_FLAGS));
        if self.exact {
            flags.extend(to_strings(EXACT_FLAGS));
        }
        flags.extend(self.extra_flags.iter().cloned());
        flags
    }
}

/// The optimisation flags from `TESSERA_CFLAGS` (split on whitespace), if set and non-empty.
fn environment_optimization_flags() -> Option<Vec<String>> {
    let value = std::env::var("TESSERA_CFLAGS").ok()?;
    let flags: Vec<String> = value.split_whitespace().map(str::to_string).collect();
    (!flags.is_empty()).then_some(flags)
}

fn to_strings(flags: &[&str]) -> Vec<String> {
    flags.iter().map(|flag| flag.to_string()).collect()
}
