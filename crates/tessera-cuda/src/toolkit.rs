//! Finding the CUDA tools Tessera loads or runs: the NVRTC library and `ptxas`.
//!
//! Lookup order, first match wins:
//!
//! | what     | 1. explicit file          | 2. toolkit root                                   | 3. system search            | 4. pip wheels                                  |
//! |----------|---------------------------|---------------------------------------------------|-----------------------------|------------------------------------------------|
//! | NVRTC    | `TESSERA_NVRTC=/path/libnvrtc.so.13` | `TESSERA_CUDA_HOME`, `CUDA_HOME`, `CUDA_PATH`: `lib64/`, `lib/` | the dynamic linker (`LD_LIBRARY_PATH`, ldconfig) | `site-packages/nvidia/cu13/lib/libnvrtc.so.13` |
//! | `ptxas`  | `TESSERA_PTXAS=/path/ptxas` | the same roots: `bin/ptxas`                      | `PATH`                      | `site-packages/nvidia/cu13/bin/ptxas`          |
//!
//! The pip location is that of `pip install nvidia-cuda-nvrtc nvidia-cuda-nvcc`; the
//! site-packages folders are those of the `nvidia` namespace package as `python3` reports them.
//! An explicit variable naming a missing file is an error rather than a silent fallback.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::error::CudaError;

/// The NVRTC library file names Tessera accepts (CUDA 13, as the bindings are built for).
const NVRTC_NAMES: [&str; 2] = ["libnvrtc.so.13", "libnvrtc.so"];

/// Where NVRTC comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NvrtcLocation {
    /// A library file found by path (an override, a toolkit root or a pip wheel).
    File(PathBuf),
    /// The dynamic linker's own search finds it by name.
    SystemSearch,
}

/// Finds the NVRTC library (see the module documentation for the order).
pub fn find_nvrtc() -> Result<NvrtcLocation, CudaError> {
    if let Some(path) = explicit_file("TESSERA_NVRTC")? {
        return Ok(NvrtcLocation::File(path));
    }
    let in_roots = toolkit_roots()
        .into_iter()
        .flat_map(|root| ["lib64", "lib"].map(|dir| root.join(dir)))
        .find_map(|dir| first_existing(&dir, &NVRTC_NAMES));
    if let Some(path) = in_roots {
        return Ok(NvrtcLocation::File(path));
    }
    // SAFETY: only probes whether the library can be opened; loading NVRTC runs no
    // initialisers with preconditions.
    if unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Ok(NvrtcLocation::SystemSearch);
    }
    if let Some(path) = pip_cuda_dirs()
        .iter()
        .find_map(|cu| first_existing(&cu.join("lib"), &NVRTC_NAMES))
    {
        return Ok(NvrtcLocation::File(path));
    }
    Err(CudaError::ToolNotFound {
        tool: "NVRTC (libnvrtc.so.13)",
        hint: "install it with `pip install nvidia-cuda-nvrtc`, or a CUDA 13 toolkit, or point \
               TESSERA_NVRTC at libnvrtc.so.13 (or TESSERA_CUDA_HOME at the toolkit)",
    })
}

/// Finds the `ptxas` executable (see the module documentation for the order).
pub fn find_ptxas() -> Result<PathBuf, CudaError> {
    if let Some(path) = explicit_file("TESSERA_PTXAS")? {
        return Ok(path);
    }
    let in_roots = toolkit_roots()
        .into_iter()
        .find_map(|root| first_existing(&root.join("bin"), &["ptxas"]));
    let on_path = || {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths).find_map(|dir| first_existing(&dir, &["ptxas"]))
        })
    };
    let in_pip = || {
        pip_cuda_dirs()
            .iter()
            .find_map(|cu| first_existing(&cu.join("bin"), &["ptxas"]))
    };
    in_roots
        .or_else(on_path)
        .or_else(in_pip)
        .ok_or(CudaError::ToolNotFound {
            tool: "ptxas",
            hint: "install it with `pip install nvidia-cuda-nvcc`, or a CUDA 13 toolkit, or point \
               TESSERA_PTXAS at the executable (or TESSERA_CUDA_HOME at the toolkit)",
        })
}

/// The file named by environment variable `var`, if set; an error if it does not exist.
fn explicit_file(var: &'static str) -> Result<Option<PathBuf>, CudaError> {
    match std::env::var_os(var).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(value) => {
            let path = PathBuf::from(value);
            if path.is_file() {
                Ok(Some(path))
            } else {
                Err(CudaError::BadOverride { var, path })
            }
        }
    }
}

/// Toolkit roots named by `TESSERA_CUDA_HOME`, `CUDA_HOME` and `CUDA_PATH`, in that order.
fn toolkit_roots() -> Vec<PathBuf> {
    ["TESSERA_CUDA_HOME", "CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(|var| {
            std::env::var_os(var)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .collect()
}

fn first_existing(dir: &Path, names: &[&str]) -> Option<PathBuf> {
    names
        .iter()
        .map(|name| dir.join(name))
        .find(|path| path.is_file())
}

/// The `nvidia/cu13` folders of the pip wheels, asked of `python3` once per process.
fn pip_cuda_dirs() -> &'static [PathBuf] {
    static DIRS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    DIRS.get_or_init(|| {
        let script = "import nvidia\nfor p in nvidia.__path__: print(p)";
        let Ok(output) = Command::new("python3").args(["-c", script]).output() else {
            return Vec::new();
        };
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(|line| PathBuf::from(line.trim()).join("cu13"))
            .filter(|dir| dir.is_dir())
            .collect()
    })
}
