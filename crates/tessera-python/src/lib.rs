//! `tessera` for Python: programs, plans and runs over NumPy arrays, built with PyO3 and
//! maturin over the facade crate only.
//!
//! - [`program`]: `tessera.Program`: a program's text, its parameters and fields, runs,
//!   plans and explanations, and the prepared programs it keeps for repeated runs;
//! - [`arrays`]: NumPy arrays lent to a run in place, and fields handed back without copies;
//! - [`outcome`]: `tessera.Result`, what a run gives back;
//! - [`plans`]: `tessera.Plan` and the plan request a call's keywords make;
//! - [`checking`]: `tessera.verify`, a backend against the reference;
//! - [`errors`]: `tessera.CompileError`, `tessera.RunError` and how facade errors map to them;
//! - [`interrupt`]: Ctrl-C during a run (the GIL released) raises `KeyboardInterrupt`;
//! - [`recent`]: the bound programs, plans and executables a program reuses between calls.

use pyo3::prelude::*;

pub mod arrays;
pub mod checking;
pub mod errors;
pub mod interrupt;
pub mod outcome;
pub mod plans;
pub mod program;
pub mod recent;

/// The native module behind the `tessera` package.
#[pymodule]
fn _tessera(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("TesseraError", py.get_type::<errors::TesseraError>())?;
    m.add("CompileError", py.get_type::<errors::CompileError>())?;
    m.add("RunError", py.get_type::<errors::RunError>())?;
    m.add_class::<program::Program>()?;
    m.add_class::<program::FieldInfo>()?;
    m.add_class::<outcome::RunResult>()?;
    m.add_class::<plans::PyPlan>()?;
    m.add_class::<checking::Verification>()?;
    m.add_function(wrap_pyfunction!(checking::verify, m)?)?;
    m.add_function(wrap_pyfunction!(program::backends, m)?)?;
    Ok(())
}
