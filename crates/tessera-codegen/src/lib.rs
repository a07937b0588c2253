//! Code generation, a pure function of (bound program, plan):
//! - [`cfamily`]: the C-family expression and type printer, with C, CUDA and OpenCL dialects;
//! - [`exact_math`]: the exact math library's C twin, for all three dialects;
//! - [`cpu`]: C + OpenMP source for the CPU backend's strategies;
//! - [`kernel`]: the GPU kernel IR, its lowering strategies and the CUDA/OpenCL printers.

pub mod cfamily;
pub mod cpu;
pub mod exact_math;
pub mod half;
pub mod kernel;
