//! The differential harness: a [`Subject`] (a program bound at one size, seeded inputs and the
//! reference backend's exact result) run under any backend and plan, and compared with the
//! reference — bitwise in exact mode, within a tolerance otherwise. Every plan is written to
//! JSON and read back before it runs (what `tessera plan --json` then `tessera run --plan`
//! do), so every case of every matrix also checks that a stored plan replays exactly.

use std::fmt::Display;

use tessera_analysis::BoundProgram;
use tessera_plan::{DeviceSelection, Plan, PlanRequest};
use tessera_runtime::{Backend, Executable, FieldSet, RunReport};

use crate::compare::{first_difference, first_distant, report_difference};
use crate::corpus::Case;
use crate::inputs::inputs;

/// A program bound at one size, its inputs and the reference result.
pub struct Subject {
    /// What it is, for messages: `star2d1r [17, 20]`.
    pub label: String,
    /// The program.
    pub bound: BoundProgram,
    /// The inputs of every run.
    pub inputs: FieldSet,
    /// Steps per run.
    pub steps: u64,
    /// The reference backend's fields after the run (exact order).
    pub expected: FieldSet,
    /// The reference backend's report.
    pub expected_report: RunReport,
}

impl Subject {
    /// `bound` with inputs of `seed` ([`inputs`]) and its reference result after `steps` steps.
    pub fn new(label: impl Into<String>, bound: BoundProgram, seed: u64, steps: u64) -> Subject {
        let inputs = inputs(&bound, seed);
        let mut expected = inputs.clone();
        let expected_report = tessera_reference::run_exact(&bound, &mut expected, 0, steps)
            .expect("the reference backend runs every program of the corpus");
        Subject {
            label: label.into(),
            bound,
            inputs,
            steps,
            expected,
            expected_report,
        }
    }

    /// Size number `index` of `case`, with inputs of `seed`.
    pub fn of_case(case: &Case, index: usize, seed: u64) -> Subject {
        let bound = case.bind(index);
        let label = format!("{} {:?}", case.name, bound.extents);
        Subject::new(label, bound, seed, case.steps)
    }

    /// Field names by field index.
    pub fn field_names(&self) -> Vec<String> {
        (self.bound.program().fields.values())
            .map(|f| f.name.clone())
            .collect()
    }

    /// The plan `backend` makes for `request`, or why it refuses.
    pub fn plan(&self, backend: &dyn Backend, request: &PlanRequest) -> Result<Plan, String> {
        backend
            .plan(&self.bound, request)
            .map_err(|e| format!("{}: plan {request:?}: {e}", self.label))
    }

    /// Runs `plan` (read back from its JSON form) on `backend` from the inputs; returns the
    /// fields and the report.
    pub fn run(&self, backend: &dyn Backend, plan: &Plan) -> Result<(FieldSet, RunReport), String> {
        let what = format!("{} {}/{}", self.label, plan.backend_name(), plan.describe());
        let stored = Plan::from_json(&plan.to_json())
            .map_err(|e| format!("{what}: the plan's JSON does not read back: {e}"))?;
        if &stored != plan {
            return Err(format!("{what}: the plan's JSON reads back as {stored:?}"));
        }
        let mut executable = backend
            .prepare(&self.bound, &stored, &DeviceSelection::Default)
            .map_err(|e| format!("{what}: prepare failed: {e}"))?;
        let mut fields = self.inputs.clone();
        let report = executable
            .run(&mut fields, 0, self.steps, &mut ())
            .map_err(|e| format!("{what}: run failed: {e}"))?;
        Ok((fields, report))
    }

    /// Runs `plan` on `backend` and compares every field and the report bitwise with the
    /// reference.
    pub fn check_exact(&self, backend: &dyn Backend, plan: &Plan) -> Result<(), String> {
        let (fields, report) = self.run(backend, plan)?;
        self.compare_exact(&fields, &report)
            .map_err(|d| format!("{} {}: {d}", self.label, report.plan))
    }

    /// Runs an executable prepared elsewhere (a distributed run, say) from the inputs and
    /// compares every field and the report bitwise with the reference; errors name `label`.
    pub fn check_executable(
        &self,
        executable: &mut dyn Executable,
        label: &str,
    ) -> Result<(), String> {
        let mut fields = self.inputs.clone();
        let report = (executable.run(&mut fields, 0, self.steps, &mut ()))
            .map_err(|e| format!("{label}: {e}"))?;
        self.compare_exact(&fields, &report)
            .map_err(|d| format!("{label}: {d}"))
    }

    /// The first bitwise difference of `fields` and `report` from the reference's.
    fn compare_exact(&self, fields: &FieldSet, report: &RunReport) -> Result<(), String> {
        first_difference(&self.field_names(), &self.expected, fields)
            .or_else(|| report_difference(&self.expected_report, report))
            .map_or(Ok(()), Err)
    }

    /// Runs `plan` on `backend` and compares every field with the reference within
    /// `tolerance` (relative, absolute below 1), and the step count.
    pub fn check_close(
        &self,
        backend: &dyn Backend,
        plan: &Plan,
        tolerance: f64,
    ) -> Result<(), String> {
        let (fields, report) = self.run(backend, plan)?;
        let steps = (report.steps != self.expected_report.steps).then(|| {
            format!(
                "ran {} steps, expected {}",
                report.steps, self.expected_report.steps
            )
        });
        steps
            .or_else(|| first_distant(&self.field_names(), &self.expected, &fields, tolerance))
            .map_or(Ok(()), |d| {
                Err(format!("{} {}: {d}", self.label, report.plan))
            })
    }
}

/// The failures of many checks, reported together at the end.
#[derive(Debug, Default)]
pub struct Failures {
    checks: usize,
    failures: Vec<String>,
}

impl Failures {
    /// No checks yet.
    pub fn new() -> Failures {
        Failures::default()
    }

    /// Counts one check and keeps its failure, if any.
    pub fn record(&mut self, result: Result<(), String>) {
        self.checks += 1;
        if let Err(message) = result {
            self.failures.push(message);
        }
    }

    /// The number of checks recorded.
    pub fn checks(&self) -> usize {
        self.checks
    }

    /// The number of checks that failed.
    pub fn failed(&self) -> usize {
        self.failures.len()
    }

    /// Panics listing every failure, if any, of the checks of `what`.
    pub fn assert_none(self, what: impl Display) {
        assert!(
            self.failures.is_empty(),
            "{} of {} checks of {what} failed:\n{}",
            self.failures.len(),
            self.checks,
            self.failures.join("\n")
        );
    }
}
