//! Compiling CUDA C to PTX with NVRTC (no device needed).

use std::io::Write;
use std::sync::OnceLock;

use cudarc::nvrtc::{CompileError, CompileOptions};

use crate::error::CudaError;
use crate::toolkit::{NvrtcLocation, find_nvrtc};

/// Compiles `source` to PTX for `arch` (`"sm_90"`). In `exact` mode floating-point
/// contraction is off (`--fmad=false`) and division and square root are IEEE-rounded, so that
/// results match the reference backend bitwise. On failure the source is saved to a temporary
/// file whose path is in the error, with NVRTC's log.
pub fn compile_ptx(source: &str, arch: &str, exact: bool) -> Result<String, CudaError> {
    ensure_loaded()?;
    let options = nvrtc_options(arch, exact);
    let compile_options = CompileOptions {
        options: options.clone(),
        ..Default::default()
    };
    match cudarc::nvrtc::compile_ptx_with_opts(source, compile_options) {
        Ok(ptx) => Ok(ptx.to_src()),
        Err(CompileError::CompileError { log, .. }) => Err(CudaError::Compile {
            source_path: save_source(source, "cu"),
            options,
            log: log.to_string_lossy().into_owned(),
        }),
        Err(other) => Err(CudaError::Compile {
            source_path: save_source(source, "cu"),
            options,
            log: other.to_string(),
        }),
    }
}

/// The NVRTC options Tessera uses for `arch` and the exactness mode.
pub fn nvrtc_options(arch: &str, exact: bool) -> Vec<String> {
    let mut options = vec![
        format!("--gpu-architecture={arch}"),
        "--std=c++17".to_string(),
    ];
    if exact {
        options.extend(
            [
                "--fmad=false",
                "--prec-div=true",
                "--prec-sqrt=true",
                "--ftz=false",
            ]
            .map(String::from),
        );
    }
    options
}

/// The version of the NVRTC library in use, as `(major, minor)`.
pub fn nvrtc_version() -> Result<(i32, i32), CudaError> {
    ensure_loaded()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: the library is loaded; both pointers are valid for writes.
    let status = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    if status != cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(CudaError::Compile {
            source_path: Default::default(),
            options: Vec::new(),
            log: format!("nvrtcVersion: {status:?}"),
        });
    }
    Ok((major, minor))
}

/// Writes generated source to a kept temporary file for the user to inspect; returns its path
/// (empty if even that fails).
pub(crate) fn save_source(source: &str, extension: &str) -> std::path::PathBuf {
    let saved = tempfile::Builder::new()
        .prefix("tessera-")
        .suffix(&format!(".{extension}"))
        .tempfile()
        .and_then(|mut file| {
            file.write_all(source.as_bytes())?;
            file.keep().map_err(|e| e.error)
        });
    saved.map(|(_, path)| path).unwrap_or_default()
}

/// Makes NVRTC loadable by the bindings: a library found by path is opened once and kept open,
/// so that the bindings' by-name lookup (`libnvrtc.so.13`) finds the already-loaded object.
fn ensure_loaded() -> Result<(), CudaError> {
    static LOADED: OnceLock<Result<(), CudaError>> = OnceLock::new();
    LOADED
        .get_or_init(|| {
            let location = find_nvrtc()?;
            if let NvrtcLocation::File(path) = &location {
                // SAFETY: NVRTC's initialisers have no preconditions.
                let library =
                    unsafe { libloading::Library::new(path) }.map_err(|e| CudaError::Load {
                        path: path.clone(),
                        reason: e.to_string(),
                    })?;
                std::mem::forget(library);
            }
            // SAFETY: probing only.
            if unsafe { cudarc::nvrtc::sys::is_culib_present() } {
                Ok(())
            } else {
                let path = match location {
                    NvrtcLocation::File(path) => path,
                    NvrtcLocation::SystemSearch => "libnvrtc.so.13".into(),
                };
                Err(CudaError::Load {
                    path,
                    reason: "loaded, but not visible under the name libnvrtc.so.13".into(),
                })
            }
        })
        .clone()
}
