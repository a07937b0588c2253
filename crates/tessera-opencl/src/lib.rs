//! Tessera's OpenCL backend, for any OpenCL device (GPUs, and CPUs through PoCL). The OpenCL
//! library is loaded at run time (`opencl3`'s `dynamic` feature): without one, the backend
//! reports itself unavailable with what to install.
//!
//! Finding the runtime: the ICD loader `libOpenCL.so.1` is opened through the dynamic linker
//! (`LD_LIBRARY_PATH`, ldconfig), or from the `;`-separated paths of `OPENCL_DYLIB_PATH` when
//! set; the loader then lists the installed drivers (`/etc/OpenCL/vendors/*.icd`, e.g. PoCL's
//! from `apt-get install pocl-opencl-icd`). PoCL caches its compiled kernels under
//! `~/.cache/pocl/kcache` (`POCL_CACHE_DIR`); Tessera also keeps built programs for the life of
//! the process, keyed by source, device and options.
//!
//! - [`device`]: platform/device discovery, selection (`--device P:D | index | name`), limits;
//! - [`build`]: contexts and built programs, cached per process;
//! - [`backend`]: [`OpenClBackend`] and [`OpenClDevice`], the device under the host-program
//!   executable of `tessera-gpu-host`;
//! - [`error`]: [`OpenClError`] and its mapping onto `BackendError`.

pub mod backend;
pub mod build;
pub mod device;
pub mod error;

pub use backend::{OpenClBackend, OpenClDevice, OpenClExecutable, device_limits};
pub use device::{DeviceInfo, list_devices, select_device};
pub use error::OpenClError;

/// Whether an OpenCL runtime with at least one device can be loaded here.
pub fn opencl_available() -> bool {
    list_devices().is_ok_and(|devices| !devices.is_empty())
}
