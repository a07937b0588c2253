//! What can go wrong in the CUDA backend, and its mapping onto [`BackendError`].

use std::path::PathBuf;

use tessera_runtime::BackendError;

/// A failure of the CUDA toolchain or driver.
#[derive(Clone, Debug, thiserror::Error)]
pub enum CudaError {
    /// A tool or library could not be found anywhere Tessera looks.
    #[error("{tool} not found: {hint}")]
    ToolNotFound {
        /// What is missing.
        tool: &'static str,
        /// How to get it.
        hint: &'static str,
    },
    /// An override variable names a file that does not exist.
    #[error("{var} is set to {}, which is not a file: fix or unset it", path.display())]
    BadOverride {
        /// The variable.
        var: &'static str,
        /// Its value.
        path: PathBuf,
    },
    /// A library was found but could not be loaded.
    #[error("cannot load {}: {reason}", path.display())]
    Load {
        /// The library file.
        path: PathBuf,
        /// The loader's message.
        reason: String,
    },
    /// No CUDA driver library (`libcuda.so`) is present.
    #[error(
        "no CUDA driver found (libcuda.so.1 is not loadable): install the NVIDIA driver, or use `--backend opencl` or `--backend cpu`"
    )]
    NoDriver,
    /// The driver has no device matching the selection.
    #[error("{0}")]
    NoDevice(String),
    /// NVRTC rejected the generated source.
    #[error("NVRTC failed to compile the generated CUDA source (saved to {}) with options {options:?}:\n{log}", source_path.display())]
    Compile {
        /// Where the source was saved for inspection.
        source_path: PathBuf,
        /// The options passed.
        options: Vec<String>,
        /// NVRTC's log.
        log: String,
    },
    /// `ptxas` failed or printed something unexpected.
    #[error("ptxas: {0}")]
    Ptxas(String),
    /// A CUDA driver call failed.
    #[error("CUDA driver error during {during}: {message}")]
    Driver {
        /// What Tessera was doing.
        during: String,
        /// The driver's error.
        message: String,
    },
    /// The program cannot run on this device as planned.
    #[error("{0}")]
    Unsupported(String),
}

impl CudaError {
    /// A driver failure while doing `during`.
    pub fn driver(during: impl Into<String>, error: impl std::fmt::Display) -> CudaError {
        CudaError::Driver {
            during: during.into(),
            message: error.to_string(),
        }
    }
}

impl From<CudaError> for BackendError {
    fn from(error: CudaError) -> BackendError {
        let message = error.to_string();
        match error {
            CudaError::ToolNotFound { .. }
            | CudaError::BadOverride { .. }
            | CudaError::Load { .. }
            | CudaError::NoDriver
            | CudaError::NoDevice(_) => BackendError::Unavailable(message),
            CudaError::Compile { .. } | CudaError::Ptxas(_) => BackendError::Compile(message),
            CudaError::Driver { .. } => BackendError::Runtime(message),
            CudaError::Unsupported(_) => BackendError::Unsupported(message),
        }
    }
}
