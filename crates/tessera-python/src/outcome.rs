//! `tessera.Result`: the fields after a run, every evaluation of every reduction, every
//! recording of every receiver, and what the run cost.

use numpy::PyArray1;
use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use tessera::Session;
use tessera::metrics::gcells_per_s;
use tessera::runtime::{RunReport, receiver_series};

use crate::arrays::owned_to_py;

/// What a run gave back.
#[pyclass(name = "Result", module = "tessera", frozen)]
pub struct RunResult {
    /// Every field after the run, by name (`E.ex` for struct members): NumPy arrays of the
    /// grid's shape; an input array lent to the run is itself here.
    #[pyo3(get)]
    fields: Py<PyDict>,
    /// Every evaluation of every reduction, by name: a NumPy array (int64 for integer
    /// reductions, float64 otherwise).
    #[pyo3(get)]
    reductions: Py<PyDict>,
    /// The step after which each value of `reductions` was computed, by name (uint64).
    #[pyo3(get)]
    reduction_steps: Py<PyDict>,
    /// Every recording of every receiver, by name: a NumPy array of shape (recordings,
    /// points) in the field's dtype.
    #[pyo3(get)]
    receivers: Py<PyDict>,
    /// The step after which each row of `receivers` was recorded, by name (uint64).
    #[pyo3(get)]
    receiver_steps: Py<PyDict>,
    /// Steps executed (fewer than asked when `until` held).
    #[pyo3(get)]
    steps: u64,
    /// Whether the `until` condition ended the run.
    #[pyo3(get)]
    stopped_early: bool,
    /// Seconds in the time loop (compilation and transfers excluded).
    #[pyo3(get)]
    seconds: f64,
    /// Seconds moving fields between host and device.
    #[pyo3(get)]
    transfer_seconds: f64,
    /// Grid points updated per second over the time loop, in billions.
    #[pyo3(get)]
    gcells_per_s: f64,
    /// The backend and plan that ran (`cpu overlapped tile=64x64 T=4 ...`).
    #[pyo3(get)]
    plan: String,
    /// Each struct or vector field's name and its members' names.
    groups: Vec<(String, Vec<String>)>,
}

impl RunResult {
    /// The result of a run of `session` that left `fields` (as NumPy arrays) and `report`.
    pub fn new(
        py: Python<'_>,
        session: &Session,
        fields: Bound<'_, PyDict>,
        report: &RunReport,
    ) -> PyResult<RunResult> {
        let (reductions, reduction_steps) = reduction_series(py, session, report)?;
        let (receivers, receiver_steps) = recordings(py, session, report)?;
        let seconds = report.compute_time.as_secs_f64();
        Ok(RunResult {
            fields: fields.unbind(),
            reductions: reductions.unbind(),
            reduction_steps: reduction_steps.unbind(),
            receivers: receivers.unbind(),
            receiver_steps: receiver_steps.unbind(),
            steps: report.steps,
            stopped_early: report.stopped_early,
            seconds,
            transfer_seconds: report.transfer_time.as_secs_f64(),
            gcells_per_s: gcells_per_s(session.bound(), report.steps, seconds),
            plan: report.plan.clone(),
            groups: groups(session),
        })
    }
}

/// Each struct or vector field's name and its members' names.
fn groups(session: &Session) -> Vec<(String, Vec<String>)> {
    let program = session.program();
    (program.groups.values())
        .map(|g| {
            let members = g.components.iter().map(|&c| program.fields[c].name.clone());
            (g.name.clone(), members.collect())
        })
        .collect()
}

/// Each reduction's values and steps as NumPy arrays, by name, in the program's order.
fn reduction_series<'py>(
    py: Python<'py>,
    session: &Session,
    report: &RunReport,
) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyDict>)> {
    let (values, steps) = (PyDict::new(py), PyDict::new(py));
    let checked = session.bound().checked();
    for reduction in session.program().reductions.values() {
        let records = report
            .reductions
            .iter()
            .filter(|r| r.name == reduction.name);
        let step_list: Vec<u64> = records.clone().map(|r| r.step).collect();
        if checked.ty(reduction.value).is_float() {
            let list: Vec<f64> = records.map(|r| r.value).collect();
            values.set_item(&reduction.name, PyArray1::from_vec(py, list))?;
        } else {
            let list: Vec<i64> = records.map(|r| r.value as i64).collect();
            values.set_item(&reduction.name, PyArray1::from_vec(py, list))?;
        }
        steps.set_item(&reduction.name, PyArray1::from_vec(py, step_list))?;
    }
    Ok((values, steps))
}

/// Each receiver's recordings (shape (recordings, points), the field's dtype) and steps as
/// NumPy arrays, by name, in the program's order.
fn recordings<'py>(
    py: Python<'py>,
    session: &Session,
    report: &RunReport,
) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyDict>)> {
    let (values, steps) = (PyDict::new(py), PyDict::new(py));
    for series in receiver_series(session.program(), &report.receivers) {
        let shape = [series.steps.len(), series.points];
        values.set_item(&series.name, owned_to_py(py, series.values, &shape)?)?;
        steps.set_item(&series.name, PyArray1::from_vec(py, series.steps))?;
    }
    Ok((values, steps))
}

#[pymethods]
impl RunResult {
    /// A field by name: the array of `fields` for a scalar field or member, and for a struct or
    /// vector field its members stacked along a trailing axis (a copy).
    fn field<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        let fields = self.fields.bind(py);
        if let Some(array) = fields.get_item(name)? {
            return Ok(array);
        }
        let Some((_, members)) = self.groups.iter().find(|(group, _)| group == name) else {
            let mut known: Vec<String> = fields.keys().extract()?;
            known.extend(self.groups.iter().map(|(group, _)| group.clone()));
            return Err(PyKeyError::new_err(format!(
                "no field `{name}`; the fields are {}",
                known.join(", ")
            )));
        };
        let arrays = (members.iter())
            .map(|m| {
                fields
                    .get_item(m)?
                    .ok_or_else(|| PyKeyError::new_err(m.clone()))
            })
            .collect::<PyResult<Vec<_>>>()?;
        let kwargs = PyDict::new(py);
        kwargs.set_item("axis", -1)?;
        py.import("numpy")?
            .call_method("stack", (arrays,), Some(&kwargs))
    }

    fn __repr__(&self) -> String {
        format!(
            "<tessera.Result {} steps{} in {:.3} s, {:.3} GCells/s, {}>",
            self.steps,
            if self.stopped_early {
                " (until held)"
            } else {
                ""
            },
            self.seconds,
            self.gcells_per_s,
            self.plan
        )
    }
}
