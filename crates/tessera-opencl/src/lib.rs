//! Tessera's OpenCL backend, for any OpenCL device (GPUs, and CPUs through PoCL). The OpenCL
//! library is loaded at run time (`opencl3`'s `dynamic` feature): without one, the backend
//! reports itself unavailable with what to install.
//!
//! - [`device`]: platform/device discovery, selection (`--device P:D | index | name`), limits;
//! - [`build`]: contexts and built programs, cached per process;
//! - [`backend`]: [`OpenClBackend`] and its executable;
//! - [`host`]: what GPU runtimes share: plans from run options and the host-program driver;
//! - [`stop`]: the `until` condition;
//! - [`error`]: [`OpenClError`] and its mapping onto `BackendError`.

pub mod backend;
pub mod build;
pub mod device;
pub mod error;
pub mod host;
pub mod stop;

pub use backend::{OpenClBackend, OpenClExecutable, device_limits};
pub use device::{DeviceInfo, list_devices, select_device};
pub use error::OpenClError;

/// Whether an OpenCL runtime with at least one device can be loaded here.
pub fn opencl_available() -> bool {
    list_devices().is_ok_and(|devices| !devices.is_empty())
}
