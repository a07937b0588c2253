//! Tessera's CUDA backend. Everything NVIDIA is loaded at run time, so the crate builds and
//! its binary runs on machines without CUDA:
//!
//! - [`toolkit`]: where NVRTC and `ptxas` are found (overrides, toolkit roots, the dynamic
//!   linker, pip wheels);
//! - [`nvrtc`]: CUDA C to PTX for any architecture, without a device ([`compile_ptx`]);
//! - [`ptxas`]: per-kernel registers, shared memory and spills ([`ptxas_report`]);
//! - [`modules`]: PTX cached per process;
//! - [`device`]: the driver probe ([`cuda_available`]), device selection and limits;
//! - [`backend`]: [`CudaBackend`] and [`CudaStreamDevice`], the device under the host-program
//!   executable of `tessera-gpu-host`;
//! - [`error`]: [`CudaError`] and its mapping onto `BackendError`.

pub mod backend;
pub mod device;
pub mod error;
pub mod modules;
pub mod nvrtc;
pub mod ptxas;
pub mod toolkit;

pub use backend::{CudaBackend, CudaExecutable, CudaStreamDevice};
pub use device::{CudaDevice, cuda_available, select_device};
pub use error::CudaError;
pub use nvrtc::compile_ptx;
pub use ptxas::{KernelResources, ptxas_report};
