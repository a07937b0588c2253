//! What every backend shares: field storage ([`FieldSet`]), the [`Backend`] trait, run options,
//! run reports and the fixed reduction order.
//!
//! Invariant: backends receive only bound programs ([`tessera_analysis::BoundProgram`]): checked,
//! with concrete sizes and parameter values.

pub mod backend;
pub mod buffer;
mod pages;
pub mod reduce;

pub use backend::{
    Backend, BackendError, Executable, Progress, ReductionRecord, RunOptions, RunReport,
};
pub use buffer::{Buffer, FieldSet};
