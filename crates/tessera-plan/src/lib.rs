//! Planning: which strategy runs a bound program, with which tile sizes and time-tile depth.
//! Plans are plain data; code generation is a pure function of (program, plan).

pub mod cpu;
pub mod gpu;
pub mod lanes;
pub mod reuse;
