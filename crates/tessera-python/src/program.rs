//! `tessera.Program`: a program's text bound to parameter values; its runs, plans and
//! explanations. A program keeps what its calls made (a few of each: programs bound to other
//! parameters, plans by parameters, backend and keywords, executables by parameters, plan and
//! device), so that a repeated call neither binds, plans (nor reads the tuning database),
//! compiles nor loads a kernel again.

use std::path::PathBuf;

use pyo3::exceptions::{PyTypeError, PyUserWarning, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString, PyTuple};
use tessera::ir::Constant;
use tessera::runtime::memory::bytes_text;
use tessera::runtime::{Backend, Executable, RunState, drive};
use tessera::tuning::TuningDb;
use tessera::{Plan, PlanRequest, Session};

use crate::arrays::{dtype_name, fields_to_py, fields_with_inputs};
use crate::errors::IntoPy;
use crate::interrupt::SignalWatch;
use crate::outcome::RunResult;
use crate::plans::{PlanKeywords, PyPlan};
use crate::recent::Recent;

/// Bound programs, plans and prepared executables a program keeps, of each at most.
const KEEP_RECENT: usize = 8;

/// A stencil program, checked and bound to parameter values.
#[pyclass(module = "tessera", frozen)]
pub struct Program {
    /// The source text.
    text: String,
    /// The source's name in diagnostics.
    file_name: String,
    /// The program's name unless it says `program NAME;`.
    default_name: String,
    /// The parameter values given at construction, as `--set` takes them.
    sets: Vec<(String, String)>,
    /// The program bound to `sets`.
    session: Session,
    /// The program bound to other parameters by earlier calls.
    sessions: Recent<Vec<(String, String)>, Session>,
    /// Plans chosen by earlier calls.
    plans: Recent<PlanKey, Plan>,
    /// Executables prepared by earlier calls (taken while a call runs them).
    prepared: Recent<PreparedKey, Box<dyn Executable>>,
}

/// What a plan was chosen for.
#[derive(Clone, Debug, PartialEq, Eq)]
struct PlanKey {
    sets: Vec<(String, String)>,
    backend: String,
    keywords: PlanKeywords,
}

/// What an executable was prepared for.
#[derive(Clone, Debug, PartialEq, Eq)]
struct PreparedKey {
    sets: Vec<(String, String)>,
    plan: String,
    device: String,
}

/// A call's program, bound to its parameters, and the executable it runs.
pub struct PreparedCall {
    /// The program bound to the call's parameters.
    pub session: Session,
    /// What the executable was prepared for.
    key: PreparedKey,
    /// The executable.
    pub executable: Box<dyn Executable>,
}

/// A field as Python sees it: name, NumPy dtype and shape.
#[pyclass(module = "tessera", frozen, get_all)]
pub struct FieldInfo {
    /// The field's name (`E.ex` for a struct member).
    name: String,
    /// NumPy's name of its dtype (`float32`).
    dtype: String,
    /// The grid's shape, slowest axis first.
    shape: Py<PyTuple>,
}

#[pymethods]
impl FieldInfo {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "FieldInfo(name={:?}, dtype={:?}, shape={})",
            self.name,
            self.dtype,
            self.shape.bind(py).repr()?
        ))
    }
}

/// The backends this build has, by name.
#[pyfunction]
pub fn backends() -> Vec<&'static str> {
    tessera::backend_names()
}

impl Program {
    /// Binds `text` to `params`.
    fn load(
        text: String,
        file_name: String,
        default_name: String,
        params: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Program> {
        let sets = set_values(&[], params)?;
        let session = Session::from_text(&text, &file_name, &default_name, &sets).py_err()?;
        warn_about(&session)?;
        Ok(Program {
            text,
            file_name,
            default_name,
            sets,
            session,
            sessions: Recent::new(KEEP_RECENT),
            plans: Recent::new(KEEP_RECENT),
            prepared: Recent::new(KEEP_RECENT),
        })
    }

    /// The program bound to the construction's parameters with `params` replacing some, and
    /// the parameter values as `--set` takes them.
    fn session(
        &self,
        params: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<(Session, Vec<(String, String)>)> {
        let sets = set_values(&self.sets, params)?;
        if sets == self.sets {
            return Ok((self.session.clone(), sets));
        }
        if let Some(session) = self.sessions.get(&sets) {
            return Ok((session, sets));
        }
        let session =
            Session::from_text(&self.text, &self.file_name, &self.default_name, &sets).py_err()?;
        self.sessions.put(sets.clone(), session.clone());
        Ok((session, sets))
    }

    /// The backend and plan a call runs: `plan` when given (its backend must agree with a
    /// `backend` keyword, and no plan keyword may be given beside it), else the plan an earlier
    /// call chose for the same parameters, backend and keywords, else the tuning database's
    /// (when the keywords allow) or the backend's plan for the keywords.
    fn resolve_plan(
        &self,
        (session, sets): (&Session, &[(String, String)]),
        backend: Option<&str>,
        plan: Option<&PyPlan>,
        keywords: &PlanKeywords,
    ) -> PyResult<(Box<dyn Backend>, Plan)> {
        if let Some(given) = plan {
            let plan = given.plan.clone();
            if let Some(named) = backend.filter(|b| *b != plan.backend_name()) {
                return Err(PyValueError::new_err(format!(
                    "the plan is for the {} backend, not `{named}`; leave `backend` out",
                    plan.backend_name()
                )));
            }
            if keywords.fixes_anything() {
                return Err(PyValueError::new_err(
                    "a plan and plan keywords (strategy, tile, time_tile, threads) were both given; give one",
                ));
            }
            return Ok((tessera::backend(plan.backend_name()).py_err()?, plan));
        }
        let backend = tessera::backend(backend.unwrap_or("cpu")).py_err()?;
        let key = PlanKey {
            sets: sets.to_vec(),
            backend: backend.name().to_string(),
            keywords: keywords.clone(),
        };
        if let Some(plan) = self.plans.get(&key) {
            return Ok((backend, plan));
        }
        let request = keywords.request()?;
        let tuned = match keywords.uses_tuned() {
            true => tuned_plan(session, backend.name(), &request)?,
            false => None,
        };
        let plan = match tuned {
            Some(plan) => plan,
            None => session.plan(backend.as_ref(), &request).py_err()?,
        };
        self.plans.put(key, plan.clone());
        Ok((backend, plan))
    }

    /// The program bound for a call, with an executable for the call's plan: one kept from an
    /// earlier run, else compiled (without the GIL) after the memory check.
    pub fn prepare_call(
        &self,
        py: Python<'_>,
        params: Option<&Bound<'_, PyDict>>,
        backend: Option<&str>,
        plan: Option<&PyPlan>,
        keywords: &PlanKeywords,
        max_memory: Option<u64>,
    ) -> PyResult<PreparedCall> {
        let (session, sets) = self.session(params)?;
        let (backend, plan) = self.resolve_plan((&session, &sets), backend, plan, keywords)?;
        let device = keywords.device();
        let key = PreparedKey {
            sets,
            plan: plan.to_json(),
            device: format!("{device:?}"),
        };
        let executable = match self.prepared.take(&key) {
            Some(executable) => executable,
            None => py
                .detach(|| {
                    session.check_memory(backend.as_ref(), &plan, &device, max_memory)?;
                    session.prepare(backend.as_ref(), &plan, &device)
                })
                .py_err()?,
        };
        Ok(PreparedCall {
            session,
            key,
            executable,
        })
    }

    /// Keeps a call's executable for later calls.
    pub fn keep_prepared(&self, call: PreparedCall) {
        self.prepared.put(call.key, call.executable);
    }
}

/// The checker's warnings on the program (literals that lose digits) as one Python warning.
fn warn_about(session: &Session) -> PyResult<()> {
    let Some(text) = session.rendered_warnings(false) else {
        return Ok(());
    };
    Python::attach(|py| {
        let message = std::ffi::CString::new(text.replace('\0', " "))?;
        PyErr::warn(py, &py.get_type::<PyUserWarning>(), &message, 1)
    })
}

/// The tuning database's plan for `session` on `backend` with `request`, if it holds one;
/// notes on entries not used (damaged, no longer fitting) become Python warnings.
fn tuned_plan(session: &Session, backend: &str, request: &PlanRequest) -> PyResult<Option<Plan>> {
    let (entry, notes) =
        tessera::tuning::tuned_plan(&TuningDb::open_default(), session, backend, request);
    Python::attach(|py| {
        notes.iter().try_for_each(|note| {
            let message = std::ffi::CString::new(note.replace('\0', " "))?;
            PyErr::warn(py, &py.get_type::<PyUserWarning>(), &message, 1)
        })
    })?;
    Ok(entry.map(|e| e.plan))
}

/// `base` with the values of `params` replacing or adding entries, sorted by name, each value
/// as `--set` takes it.
fn set_values(
    base: &[(String, String)],
    params: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<(String, String)>> {
    let mut sets = base.to_vec();
    for (name, value) in params.into_iter().flat_map(|p| p.iter()) {
        let name: String = name.extract()?;
        let value = param_text(&name, &value)?;
        match sets.iter_mut().find(|(n, _)| *n == name) {
            Some(entry) => entry.1 = value,
            None => sets.push((name, value)),
        }
    }
    sets.sort();
    Ok(sets)
}

/// A Python parameter value (bool, int, float, or text such as a type name `"f64"`) as
/// `--set` takes it; floats keep every bit (Rust's shortest round-trip form).
fn param_text(name: &str, value: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(flag) = value.cast::<PyBool>() {
        Ok(flag.is_true().to_string())
    } else if value.is_instance_of::<PyInt>() {
        Ok(value.extract::<i64>()?.to_string())
    } else if value.is_instance_of::<PyFloat>() || value.hasattr("__float__")? {
        Ok(format!("{:?}", value.extract::<f64>()?))
    } else if let Ok(text) = value.cast::<PyString>() {
        Ok(text.extract::<String>()?)
    } else {
        Err(PyTypeError::new_err(format!(
            "parameter `{name}`: give a bool, int, float or str, not {}",
            value.get_type().name()?
        )))
    }
}

/// A parameter's value as a Python object.
fn constant_to_py(py: Python<'_>, value: Constant) -> PyResult<Bound<'_, PyAny>> {
    Ok(match value {
        Constant::Int(i) => i.into_pyobject(py)?.into_any(),
        Constant::Float(f) => f.into_pyobject(py)?.into_any(),
        Constant::Bool(b) => PyBool::new(py, b).to_owned().into_any(),
    })
}

#[pymethods]
impl Program {
    /// Checks and binds program `source`; `params` sets parameters and type aliases
    /// (`{"N": 512, "real": "f64"}`); `name` names it unless it says `program NAME;`.
    #[new]
    #[pyo3(signature = (source, params = None, name = "program"))]
    fn new(source: String, params: Option<&Bound<'_, PyDict>>, name: &str) -> PyResult<Program> {
        Program::load(source, "<string>".into(), name.into(), params)
    }

    /// Reads, checks and binds the program in the file `path`.
    #[staticmethod]
    #[pyo3(signature = (path, params = None))]
    fn from_file(path: PathBuf, params: Option<&Bound<'_, PyDict>>) -> PyResult<Program> {
        let text = std::fs::read_to_string(&path).map_err(|source| {
            crate::errors::to_py(tessera::Error::ReadProgram {
                path: path.clone(),
                source,
            })
        })?;
        let stem = path
            .file_stem()
            .map_or("program".into(), |s| s.to_string_lossy().into_owned());
        Program::load(text, path.display().to_string(), stem, params)
    }

    /// The program's name.
    #[getter]
    fn name(&self) -> String {
        self.session.name().to_string()
    }

    /// The source text.
    #[getter]
    fn source(&self) -> &str {
        &self.text
    }

    /// Every parameter's value, by name.
    #[getter]
    fn params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        let program = self.session.program();
        for (param, value) in program
            .params
            .values()
            .zip(&self.session.bound().param_values)
        {
            dict.set_item(&param.name, constant_to_py(py, *value)?)?;
        }
        Ok(dict)
    }

    /// Every input table, by name: NumPy's name of its dtype (`{"wavelet": "float32"}`).
    #[getter]
    fn tables<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        for table in self.session.program().tables.values() {
            dict.set_item(&table.name, dtype_name(py, table.ty)?)?;
        }
        Ok(dict)
    }

    /// Every receiver, by name: its points as a list of `[coordinate, ...]` (slowest axis
    /// first), or `None` for a receiver whose points are given in `inputs` (`at input`).
    #[getter]
    fn receivers<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        for receiver in self.session.program().receivers.values() {
            match &receiver.points {
                tessera::ir::ReceiverPoints::Fixed(points) => {
                    dict.set_item(&receiver.name, points.clone())?;
                }
                tessera::ir::ReceiverPoints::Input => dict.set_item(&receiver.name, py.None())?,
            }
        }
        Ok(dict)
    }

    /// Every field: name, dtype and shape for the program's parameters.
    #[getter]
    fn fields(&self, py: Python<'_>) -> PyResult<Vec<FieldInfo>> {
        let shape = PyTuple::new(py, &self.session.bound().extents)?.unbind();
        (self.session.program().fields.values())
            .map(|f| {
                Ok(FieldInfo {
                    name: f.name.clone(),
                    dtype: dtype_name(py, f.ty)?,
                    shape: shape.clone_ref(py),
                })
            })
            .collect()
    }

    /// The grid's shape, slowest axis first.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.session.bound().extents)
    }

    /// The step count a run takes when `steps` is not given (`steps N;`, else 1).
    #[getter]
    fn default_steps(&self) -> u64 {
        self.session.default_steps()
    }

    /// Runs the program and returns its fields and reductions. Inputs that are writeable
    /// C-contiguous arrays of the field's dtype and shape are updated in place (and are the
    /// result's arrays); others are copied once. The plan: `plan` when given, else the tuning
    /// database's (`tessera tune`) when `tuned` and no keyword fixes the plan, else the
    /// backend's model. The GIL is released during the run; Ctrl-C stops it with
    /// `KeyboardInterrupt`.
    #[pyo3(signature = (
        steps = None, backend = None, strategy = None, exact = false, params = None,
        inputs = None, plan = None, tile = None, time_tile = None, threads = None,
        device = None, max_memory = None, tuned = true
    ))]
    #[allow(clippy::too_many_arguments)]
    fn run(
        &self,
        py: Python<'_>,
        steps: Option<u64>,
        backend: Option<&str>,
        strategy: Option<String>,
        exact: bool,
        params: Option<&Bound<'_, PyDict>>,
        inputs: Option<&Bound<'_, PyDict>>,
        plan: Option<PyPlan>,
        tile: Option<Vec<usize>>,
        time_tile: Option<u32>,
        threads: Option<usize>,
        device: Option<String>,
        max_memory: Option<&Bound<'_, PyAny>>,
        tuned: bool,
    ) -> PyResult<RunResult> {
        let keywords =
            PlanKeywords::new((strategy, tile, time_tile, threads), exact, device, tuned);
        let limit = max_memory.map(memory_limit).transpose()?;
        let mut call = self.prepare_call(py, params, backend, plan.as_ref(), &keywords, limit)?;
        let session = call.session.clone();
        let (mut fields, loans) = fields_with_inputs(py, &session, inputs)?;
        let steps = steps.unwrap_or_else(|| session.default_steps());
        let mut watch = SignalWatch::new(session.bound().cell_count());
        let outcome = py.detach(|| {
            let mut state = RunState::new(session.program());
            drive(
                call.executable.as_mut(),
                &mut fields,
                0,
                steps,
                &mut state,
                &mut watch,
            )
        });
        if let Some(raised) = watch.raised() {
            return Err(raised);
        }
        let report = outcome.py_err()?;
        self.keep_prepared(call);
        let fields = fields_to_py(py, &session, fields, loans)?;
        RunResult::new(py, &session, fields, &report)
    }

    /// The plan `backend` would run the program with for these keywords.
    #[pyo3(signature = (
        backend = None, strategy = None, exact = false, params = None, tile = None,
        time_tile = None, threads = None, device = None, tuned = true
    ))]
    #[allow(clippy::too_many_arguments)]
    fn plan(
        &self,
        backend: Option<&str>,
        strategy: Option<String>,
        exact: bool,
        params: Option<&Bound<'_, PyDict>>,
        tile: Option<Vec<usize>>,
        time_tile: Option<u32>,
        threads: Option<usize>,
        device: Option<String>,
        tuned: bool,
    ) -> PyResult<PyPlan> {
        let keywords =
            PlanKeywords::new((strategy, tile, time_tile, threads), exact, device, tuned);
        let (session, sets) = self.session(params)?;
        let (_, plan) = self.resolve_plan((&session, &sets), backend, None, &keywords)?;
        Ok(PyPlan { plan })
    }

    /// What the backend says of the plan it would run: its kernels or passes, the memory the
    /// run needs, and the traffic model, as text.
    #[pyo3(signature = (
        backend = None, strategy = None, exact = false, params = None, plan = None,
        tile = None, time_tile = None, threads = None, device = None, tuned = true
    ))]
    #[allow(clippy::too_many_arguments)]
    fn explain(
        &self,
        backend: Option<&str>,
        strategy: Option<String>,
        exact: bool,
        params: Option<&Bound<'_, PyDict>>,
        plan: Option<PyPlan>,
        tile: Option<Vec<usize>>,
        time_tile: Option<u32>,
        threads: Option<usize>,
        device: Option<String>,
        tuned: bool,
    ) -> PyResult<String> {
        let keywords =
            PlanKeywords::new((strategy, tile, time_tile, threads), exact, device, tuned);
        let (session, sets) = self.session(params)?;
        let (backend, plan) =
            self.resolve_plan((&session, &sets), backend, plan.as_ref(), &keywords)?;
        let device = keywords.device();
        let explanation = backend.explain(session.bound(), &plan, &device).py_err()?;
        let memory = backend.memory(session.bound(), &plan, &device).py_err()?;
        let mut lines = vec![format!(
            "plan: {}/{}{}",
            backend.name(),
            plan.describe(),
            explanation.target
        )];
        lines.extend(explanation.lines.iter().map(|l| format!("  {l}")));
        lines.push(format!("memory: {}", memory.describe()));
        lines.push(format!(
            "traffic model: {:.2} bytes per point per step ({})",
            explanation.bytes_per_point, explanation.traffic_model
        ));
        Ok(lines.join("\n"))
    }

    fn __repr__(&self) -> String {
        format!(
            "<tessera.Program {} on a {} grid>",
            self.session.name(),
            self.session.grid_text()
        )
    }
}

/// A `max_memory` keyword: bytes as an int, or text such as `"2G"`.
pub fn memory_limit(value: &Bound<'_, PyAny>) -> PyResult<u64> {
    if let Ok(bytes) = value.extract::<u64>() {
        return Ok(bytes);
    }
    let text: String = value.extract()?;
    tessera::runtime::memory::parse_bytes(&text).map_err(|why| {
        PyValueError::new_err(format!(
            "max_memory `{text}`: {why} (e.g. {} or \"2G\")",
            bytes_text(1 << 30)
        ))
    })
}
