//! Tessera's reference backend: a plain interpreter of checked, bound programs. It defines the
//! semantics every other backend reproduces bitwise in exact mode, and is the oracle of their
//! tests.
//!
//! How it evaluates: a domain is split into rows (points sharing every index but the fastest);
//! each expression node is evaluated over a whole row at once, element by element in the node's
//! elaborated type (the private `ops` module holds the element semantics). Rows run in parallel; results
//! are written after the whole stage was evaluated (Jacobi semantics), and reductions combine
//! per-row partials in row order (`tessera_runtime::reduce`).
//!
//! Entry points: [`ReferenceBackend`] (the `Backend`), [`run_exact`], [`run_f64`] (f64 accuracy
//! mode with unrounded results), [`initial_fields`]/[`initial_fields_with`]/[`initialize`] (declared initial values),
//! [`trace_reads`] (the offsets actually read, for footprint tests) and [`until_holds`] (the stop
//! condition, for backends evaluating it on the host).

mod backend;
mod border;
mod eval;
mod init;
mod ops;
mod precision;
mod rows;
mod scan;
mod step;
mod trace;
mod value;

pub use backend::{ReferenceBackend, ReferenceExecutable, run_exact, run_f64};
pub use init::{initial_fields, initial_fields_with, initialize};
pub use step::until_holds;
pub use trace::{TracedRead, trace_reads};
