//! Run-time C compilation for Tessera's CPU backend.
//!
//! [`compile`] turns a C source into a loaded shared object ([`CompiledLibrary`]) using the
//! system C compiler ([`Compiler`]: `TESSERA_CC`, else `CC`, else `cc`) with OpenMP, and keeps
//! the result in an on-disk cache ([`cache_dir`]) keyed by the blake3 hash of source, compiler
//! identity, flags, host CPU and crate version. Cache entries are written atomically, built
//! once under a per-key lock even when several processes ask at once, and verified against
//! their manifest on every lookup; damaged entries are rebuilt.
//!
//! [`stream`] measures the machine's memory bandwidth and [`cpu_info`] reads its CPU and cache
//! sizes, for roofline reports and tile sizing.
//!
//! ```no_run
//! use tessera_jit::{CompileOptions, compile};
//!
//! let source = "double tessera_scale(double x) { return 2.0 * x; }";
//! let (library, info) = compile(source, &CompileOptions::exact())?;
//! // SAFETY: the type matches the C prototype.
//! let scale = unsafe { library.symbol::<unsafe extern "C" fn(f64) -> f64>("tessera_scale")? };
//! assert_eq!(unsafe { scale(21.0) }, 42.0);
//! println!("cache hit: {}, {:.3} s, {}", info.cache_hit, info.seconds, info.path.display());
//! # Ok::<(), tessera_jit::JitError>(())
//! ```
//!
//! # Environment
//! - `TESSERA_CC` / `CC`: the compiler (a program name searched in `PATH`, or a path).
//! - `TESSERA_CFLAGS`: replaces the optimisation flags (`-O3 -march=native`); the flags every
//!   kernel needs ([`REQUIRED_FLAGS`]) and the exact-mode flags ([`EXACT_FLAGS`]) are kept.
//! - `TESSERA_CACHE_DIR`: the cache root (default: the user cache directory + `tessera`),
//!   created 0700. A root that is not writable, not owned by the user or writable by others is
//!   not used: kernels are compiled into a private temporary directory and one warning is
//!   printed on stderr ([`trust`]); a root that exists and is not a directory is an error.
//!
//! # Sanitizers
//! Pass [`SANITIZER_FLAGS`] as extra flags to build kernels with ASan + UBSan. The process
//! loading them must start with the ASan runtime preloaded:
//! `LD_PRELOAD=$(cc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 <program>`
//! ([`asan_runtime_path`] returns that path).

mod cache;
mod compile;
mod compiler;
mod cpu;
mod error;
mod library;
mod options;
pub mod stream;
pub mod trust;

pub use cache::{cache_dir, clear_cache, clear_cache_in, lock_file};
pub use compile::{CompileInfo, compile};
pub use compiler::Compiler;
pub use cpu::{CpuInfo, cpu_info};
pub use error::JitError;
pub use library::CompiledLibrary;
pub use options::{
    CompileOptions, DEFAULT_OPTIMIZATION_FLAGS, EXACT_FLAGS, REQUIRED_FLAGS, SANITIZER_FLAGS,
};
pub use stream::{Bandwidth, measure_bandwidth};

/// The ASan runtime of the compiler of `options` (`cc -print-file-name=libasan.so`), to put in
/// `LD_PRELOAD` of a process that loads kernels built with [`SANITIZER_FLAGS`].
pub fn asan_runtime_path(options: &CompileOptions) -> Result<std::path::PathBuf, JitError> {
    let compiler = options.resolve_compiler()?;
    compiler
        .runtime_library("libasan.so")
        .ok_or_else(|| JitError::CompilerUnusable {
            path: compiler.path().to_path_buf(),
            reason: "it does not ship libasan.so (install the libasan package of this compiler)"
                .to_string(),
        })
}
