//! Helpers shared by the GPU end-to-end suites in `tests/`:
//!
//! - [`availability`]: skip with a clear line on a developer machine without PoCL/NVRTC,
//!   fail under `CI`;
//! - [`programs`]: benchmark-like programs beyond the kernel generator's examples;
//! - [`cases`]: binding, seeded random inputs, and the reference run;
//! - [`compare`]: bitwise comparison of fields and reductions.

pub mod availability;
pub mod cases;
pub mod compare;
pub mod programs;
