//! `tessera.Plan` (a backend's plan as data: JSON in and out, runnable) and the plan request
//! the keywords of `run`, `plan` and `explain` make.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use tessera::{Arithmetic, DeviceSelection, Plan, PlanRequest, Strategy};

/// The plan keywords of a call: everything left `None` is the backend's choice.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlanKeywords {
    /// `strategy="overlapped"`.
    pub strategy: Option<String>,
    /// `tile=(32, 32)`: CPU tile or GPU block, slowest axis first.
    pub tile: Option<Vec<usize>>,
    /// `time_tile=4`: steps fused per pass.
    pub time_tile: Option<u32>,
    /// `threads=8`.
    pub threads: Option<usize>,
    /// `exact=True`: results bitwise equal to the reference.
    pub exact: bool,
    /// `device="1"` or `"h100"`: which GPU (or the built-in table of one).
    pub device: Option<String>,
    /// `tuned=True`: the tuning database's plan when no keyword fixes the plan.
    pub tuned: bool,
}

impl PlanKeywords {
    /// The keywords of a call, as the Python signatures list them.
    pub fn new(
        (strategy, tile, time_tile, threads): (
            Option<String>,
            Option<Vec<usize>>,
            Option<u32>,
            Option<usize>,
        ),
        exact: bool,
        device: Option<String>,
        tuned: bool,
    ) -> PlanKeywords {
        PlanKeywords {
            strategy,
            tile,
            time_tile,
            threads,
            exact,
            device,
            tuned,
        }
    }

    /// The device these keywords select.
    pub fn device(&self) -> DeviceSelection {
        match &self.device {
            Some(name) => DeviceSelection::Named(name.clone()),
            None => DeviceSelection::Default,
        }
    }

    /// The facade's plan request; an unknown strategy is a `ValueError` listing the known.
    pub fn request(&self) -> PyResult<PlanRequest> {
        let strategy = match &self.strategy {
            None => None,
            Some(name) => Some(Strategy::from_name(name).ok_or_else(|| {
                let known: Vec<&str> = Strategy::ALL.iter().map(|s| s.name()).collect();
                PyValueError::new_err(format!(
                    "unknown strategy `{name}`; the strategies are {}",
                    known.join(", ")
                ))
            })?),
        };
        Ok(PlanRequest {
            strategy,
            tile: self.tile.clone(),
            time_tile: self.time_tile,
            threads: self.threads,
            arithmetic: Arithmetic::exact_if(self.exact),
            device: self.device(),
            isa: None,
            plane_reads: None,
            prefetch: None,
        })
    }

    /// Whether the tuning database may give the plan, as on the command line: asked for, and
    /// no keyword fixes part of the plan (`exact` and `device` select the entry instead).
    pub fn uses_tuned(&self) -> bool {
        self.tuned && !self.fixes_anything()
    }

    /// Whether any keyword fixes part of the plan (then a given `Plan` would contradict it).
    pub fn fixes_anything(&self) -> bool {
        self.strategy.is_some()
            || self.tile.is_some()
            || self.time_tile.is_some()
            || self.threads.is_some()
    }
}

/// A backend's plan: strategy, tiles, time tile, threads, arithmetic. `str(plan)` is the
/// one-line description, `plan.json` the plan file `tessera run --plan` reads.
#[pyclass(name = "Plan", module = "tessera", frozen, from_py_object)]
#[derive(Clone)]
pub struct PyPlan {
    /// The plan.
    pub plan: Plan,
}

#[pymethods]
impl PyPlan {
    /// A plan from the JSON of `plan.json` or a plan file.
    #[staticmethod]
    fn from_json(text: &str) -> PyResult<PyPlan> {
        Plan::from_json(text)
            .map(|plan| PyPlan { plan })
            .map_err(|e| PyValueError::new_err(format!("not a Tessera plan: {e}")))
    }

    /// The plan as JSON (what `tessera plan` writes).
    #[getter]
    fn json(&self) -> String {
        self.plan.to_json()
    }

    /// The backend the plan is for.
    #[getter]
    fn backend(&self) -> &'static str {
        self.plan.backend_name()
    }

    fn __str__(&self) -> String {
        format!("{}/{}", self.plan.backend_name(), self.plan.describe())
    }

    fn __repr__(&self) -> String {
        format!("<tessera.Plan {}>", self.__str__())
    }

    fn __eq__(&self, other: &PyPlan) -> bool {
        self.plan == other.plan
    }
}
