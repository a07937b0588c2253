//! `tessera.verify`: runs a backend and the reference on the same inputs and compares every
//! field and reduction (the facade's [`tessera::verify`], as `tessera verify` does).

use pyo3::prelude::*;
use pyo3::types::PyDict;
use tessera::verify::{Comparison, Tolerance, verify_executable};

use crate::arrays::fields_with_inputs;
use crate::errors::IntoPy;
use crate::plans::{PlanKeywords, PyPlan};
use crate::program::Program;

/// What `verify` found: `ok` (also the object's truth value), whether the runs are `bitwise`
/// equal, the `criterion` applied, the `worst` failure, and per field and reduction the
/// differing cells and the largest absolute, relative and ulp differences.
#[pyclass(module = "tessera", frozen, get_all)]
pub struct Verification {
    /// Whether the check passed.
    ok: bool,
    /// Whether every cell and reduction value is bit-identical and the step counts agree.
    bitwise: bool,
    /// `bitwise`, or the tolerance applied (`rtol=1e-4 atol=1e-6`).
    criterion: String,
    /// The worst failure, in one line (`None` when the check passed).
    worst: Option<String>,
    /// Per field: `cells`, `differing`, `max_abs`, `max_rel`, `max_ulp`, `first_difference`.
    fields: Py<PyDict>,
    /// Per reduction: `evaluations`, `differing`, `max_abs`, `max_rel`, `max_ulp`.
    reductions: Py<PyDict>,
    /// The comparison table, as `tessera verify` prints it.
    table: String,
}

#[pymethods]
impl Verification {
    fn __bool__(&self) -> bool {
        self.ok
    }

    fn __str__(&self) -> String {
        let verdict = match &self.worst {
            None => format!("passed ({})", self.criterion),
            Some(worst) => format!("FAILED ({}): {worst}", self.criterion),
        };
        format!("{}\n{verdict}", self.table)
    }

    fn __repr__(&self) -> String {
        format!(
            "<tessera.Verification {} ({})>",
            if self.ok { "passed" } else { "FAILED" },
            self.criterion
        )
    }
}

/// Runs `program` on `backend` and on the reference from the same inputs (which are only
/// read) for `steps` steps and compares them: an exact plan must be bitwise equal unless
/// `rtol` or `atol` is given; other plans must agree within the tolerance (defaults by the
/// fields' precision, as `tessera verify`).
#[pyfunction]
#[pyo3(signature = (
    program, backend = None, strategy = None, exact = false, params = None, inputs = None,
    steps = None, rtol = None, atol = None, plan = None, tile = None, time_tile = None,
    threads = None, device = None, tuned = true
))]
#[allow(clippy::too_many_arguments)]
pub fn verify(
    py: Python<'_>,
    program: &Program,
    backend: Option<&str>,
    strategy: Option<String>,
    exact: bool,
    params: Option<&Bound<'_, PyDict>>,
    inputs: Option<&Bound<'_, PyDict>>,
    steps: Option<u64>,
    rtol: Option<f64>,
    atol: Option<f64>,
    plan: Option<PyPlan>,
    tile: Option<Vec<usize>>,
    time_tile: Option<u32>,
    threads: Option<usize>,
    device: Option<String>,
    tuned: bool,
) -> PyResult<Verification> {
    let keywords = PlanKeywords::new((strategy, tile, time_tile, threads), exact, device, tuned);
    let mut call = program.prepare_call(py, params, backend, plan.as_ref(), &keywords, None)?;
    let session = call.session.clone();
    let (fields, _loans) = fields_with_inputs(py, &session, inputs)?;
    let steps = steps.unwrap_or_else(|| session.default_steps());
    let comparison = py
        .detach(|| verify_executable(&session, call.executable.as_mut(), &fields, steps))
        .py_err()?;
    let tolerance = match (rtol, atol) {
        (None, None) if call.executable.plan().is_exact() => None,
        _ => {
            let default = Tolerance::default_for(&session);
            Some(Tolerance {
                rtol: rtol.unwrap_or(default.rtol),
                atol: atol.unwrap_or(default.atol),
            })
        }
    };
    program.keep_prepared(call);
    Verification::new(py, &comparison, tolerance)
}

impl Verification {
    /// The verdict on `comparison` under `tolerance` (`None`: bitwise).
    fn new(
        py: Python<'_>,
        comparison: &Comparison,
        tolerance: Option<Tolerance>,
    ) -> PyResult<Verification> {
        let fields = PyDict::new(py);
        for f in &comparison.fields {
            let entry = PyDict::new(py);
            entry.set_item("cells", f.cells)?;
            entry.set_item("differing", f.differing)?;
            entry.set_item("max_abs", f.max_abs)?;
            entry.set_item("max_rel", f.max_rel)?;
            entry.set_item("max_ulp", f.max_ulp)?;
            entry.set_item("first_difference", f.first_difference.clone())?;
            fields.set_item(&f.name, entry)?;
        }
        let reductions = PyDict::new(py);
        for r in &comparison.reductions {
            let entry = PyDict::new(py);
            entry.set_item("evaluations", r.evaluations)?;
            entry.set_item("differing", r.differing)?;
            entry.set_item("max_abs", r.max_abs)?;
            entry.set_item("max_rel", r.max_rel)?;
            entry.set_item("max_ulp", r.max_ulp)?;
            reductions.set_item(&r.name, entry)?;
        }
        let worst = comparison.worst_failure(tolerance);
        Ok(Verification {
            ok: worst.is_none(),
            bitwise: comparison.is_bitwise(),
            criterion: tolerance.map_or("bitwise".into(), |t| t.to_string()),
            worst,
            fields: fields.unbind(),
            reductions: reductions.unbind(),
            table: comparison.describe(),
        })
    }
}
