//! What can go wrong in the OpenCL backend, and its mapping onto [`BackendError`].

use std::path::PathBuf;

use opencl3::error_codes::{ClError, DLOPEN_FUNCTION_NOT_AVAILABLE, DLOPEN_RUNTIME_LOAD_FAILED};
use tessera_runtime::BackendError;

/// A failure of the OpenCL runtime.
#[derive(Clone, Debug, thiserror::Error)]
pub enum OpenClError {
    /// `libOpenCL.so` could not be loaded.
    #[error(
        "no OpenCL runtime found: install an ICD, e.g. `apt-get install pocl-opencl-icd` (and `ocl-icd-libopencl1`)"
    )]
    NoRuntime,
    /// The runtime lists no platform.
    #[error(
        "the OpenCL runtime lists no platform: install a driver (ICD), e.g. `apt-get install pocl-opencl-icd`"
    )]
    NoPlatform,
    /// No device matches the selection (the message lists the devices).
    #[error("{0}")]
    NoDevice(String),
    /// Building the generated program failed.
    #[error("OpenCL build failed on {device} (source saved to {}, options `{options}`):\n{log}", source_path.display())]
    Build {
        /// The device's name.
        device: String,
        /// Where the source was saved.
        source_path: PathBuf,
        /// The build options.
        options: String,
        /// The build log.
        log: String,
    },
    /// The grid does not fit in the device's memory.
    #[error("{0}")]
    TooLarge(String),
    /// An OpenCL call failed.
    #[error("OpenCL error during {during}: {code}")]
    Call {
        /// What Tessera was doing.
        during: String,
        /// The error code and its name.
        code: String,
    },
    /// The program cannot run on this device as planned.
    #[error("{0}")]
    Unsupported(String),
}

impl OpenClError {
    /// Wraps a failed OpenCL call made while doing `during`.
    pub fn call(during: impl Into<String>, error: ClError) -> OpenClError {
        match error.0 {
            DLOPEN_RUNTIME_LOAD_FAILED | DLOPEN_FUNCTION_NOT_AVAILABLE => OpenClError::NoRuntime,
            _ => OpenClError::Call {
                during: during.into(),
                code: error.to_string(),
            },
        }
    }
}

impl From<OpenClError> for BackendError {
    fn from(error: OpenClError) -> BackendError {
        let message = error.to_string();
        match error {
            OpenClError::NoRuntime | OpenClError::NoPlatform | OpenClError::NoDevice(_) => {
                BackendError::Unavailable(message)
            }
            OpenClError::Build { .. } => BackendError::Compile(message),
            OpenClError::TooLarge(_) | OpenClError::Unsupported(_) => {
                BackendError::Unsupported(message)
            }
            OpenClError::Call { .. } => BackendError::Runtime(message),
        }
    }
}
