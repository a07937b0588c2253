//! Helpers of the GPU end-to-end suites in `tests/` (programs, inputs and the differential
//! harness come from `tessera_testkit`):
//!
//! - [`availability`]: skip with a clear line on a developer machine without PoCL/NVRTC,
//!   fail under `CI`; CUDA device suites skip without a GPU.
//! - [`suites`]: the one body of each differential suite, run on OpenCL and on CUDA.

pub mod availability;
pub mod suites;
