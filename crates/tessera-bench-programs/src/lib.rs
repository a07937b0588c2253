//! The benchmark programs of `benchmarks/`: the generator of the sixteen AN5D-style families
//! (`star{2,3}d{1..4}r`, `box{2,3}d{1..4}r`) and, in `tests/`, every program checked against
//! an independent plain-Rust implementation of its formula in BENCHMARKS.md.

pub mod example_image;
pub mod families;
