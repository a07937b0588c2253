//! The `reference` backend: [`ReferenceBackend`], its executable, and direct entry points.

use tessera_analysis::BoundProgram;
use tessera_runtime::{
    Backend, BackendError, Executable, FieldSet, Progress, RunOptions, RunReport,
};

use crate::precision::{Precision, check_fields, convert_buffer};
use crate::step::Interpreter;

/// The reference interpreter as a [`Backend`] named `reference`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReferenceBackend;

impl Backend for ReferenceBackend {
    fn name(&self) -> &'static str {
        "reference"
    }

    fn prepare(
        &self,
        program: &BoundProgram,
        options: &RunOptions,
    ) -> Result<Box<dyn Executable>, BackendError> {
        Ok(Box::new(ReferenceExecutable::new(program, options)?))
    }
}

/// A program prepared for the reference interpreter.
pub struct ReferenceExecutable {
    bound: BoundProgram,
    precision: Precision,
    pool: Option<rayon::ThreadPool>,
    /// Latest value of each reduction (by index), kept across `run` calls of one run and
    /// cleared when a run starts at step 0.
    latest: Vec<Option<f64>>,
}

impl ReferenceExecutable {
    /// Validates `options` (the reference backend has no strategies, tiles or devices) and
    /// prepares `program`.
    pub fn new(program: &BoundProgram, options: &RunOptions) -> Result<Self, BackendError> {
        let refuse = |what: &str, flag: &str| {
            Err(BackendError::InvalidOptions(format!(
                "the reference backend does not use {what}; drop `{flag}` or choose another backend"
            )))
        };
        if options
            .strategy
            .as_deref()
            .is_some_and(|s| s != "reference")
        {
            return refuse("strategies", "--strategy");
        }
        if options.tile.is_some() {
            return refuse("spatial tiles", "--tile");
        }
        if options.time_tile.is_some() {
            return refuse("time tiles", "--time-tile");
        }
        if options.device.is_some() {
            return refuse("devices", "--device");
        }
        if options.exact && options.f64_accuracy {
            return Err(BackendError::InvalidOptions(
                "exact mode and f64 accuracy mode exclude each other; choose one".to_string(),
            ));
        }
        let pool = match options.threads {
            None => None,
            Some(0) => {
                return Err(BackendError::InvalidOptions(
                    "the thread count must be at least 1".to_string(),
                ));
            }
            Some(n) => Some(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(n)
                    .build()
                    .map_err(|e| {
                        BackendError::Unavailable(format!("cannot start {n} threads: {e}"))
                    })?,
            ),
        };
        let precision = if options.f64_accuracy {
            Precision::F64
        } else {
            Precision::Exact
        };
        Ok(ReferenceExecutable {
            bound: program.clone(),
            precision,
            pool,
            latest: vec![None; program.program().reductions.len()],
        })
    }
}

impl Executable for ReferenceExecutable {
    fn run(
        &mut self,
        fields: &mut FieldSet,
        first_step: u64,
        steps: u64,
        progress: &mut dyn Progress,
    ) -> Result<RunReport, BackendError> {
        check_fields(&self.bound, fields)?;
        if first_step == 0 {
            self.latest.fill(None);
        }
        let interpreter = Interpreter {
            bound: &self.bound,
            precision: self.precision,
            observer: None,
            pool: self.pool.as_ref(),
        };
        let mut report = match self.precision {
            Precision::Exact => interpreter.run_steps(
                &mut fields.buffers,
                first_step,
                steps,
                &mut self.latest,
                progress,
            )?,
            Precision::F64 => {
                let mut storage = shadow(self.precision, fields);
                let report = interpreter.run_steps(
                    &mut storage,
                    first_step,
                    steps,
                    &mut self.latest,
                    progress,
                )?;
                for (out, shadow) in fields.buffers.iter_mut().zip(storage) {
                    let ty = out.ty();
                    *out = convert_buffer(shadow, ty);
                }
                report
            }
        };
        report.plan = self.describe();
        Ok(report)
    }

    fn describe(&self) -> String {
        format!("reference {}", self.precision.describe())
    }
}

/// The interpreter's storage for `fields` in `precision` (f32 fields widened in f64 mode).
fn shadow(precision: Precision, fields: &FieldSet) -> Vec<tessera_runtime::Buffer> {
    fields
        .buffers
        .iter()
        .map(|b| convert_buffer(b.clone(), precision.ty(b.ty())))
        .collect()
}

/// Runs `steps` steps from `first_step` on `fields` in exact-order mode (the oracle), in place.
pub fn run_exact(
    bound: &BoundProgram,
    fields: &mut FieldSet,
    first_step: u64,
    steps: u64,
) -> Result<RunReport, BackendError> {
    ReferenceExecutable::new(bound, &RunOptions::default())?.run(fields, first_step, steps, &mut ())
}

/// Runs `steps` steps from `first_step` in f64 accuracy mode starting from `inputs`, and returns
/// every field's final values unrounded, as f64 (index = field index), with the report.
pub fn run_f64(
    bound: &BoundProgram,
    inputs: &FieldSet,
    first_step: u64,
    steps: u64,
) -> Result<(Vec<Vec<f64>>, RunReport), BackendError> {
    check_fields(bound, inputs)?;
    let mut storage = shadow(Precision::F64, inputs);
    let mut latest = vec![None; bound.program().reductions.len()];
    let interpreter = Interpreter {
        bound,
        precision: Precision::F64,
        observer: None,
        pool: None,
    };
    let mut report =
        interpreter.run_steps(&mut storage, first_step, steps, &mut latest, &mut ())?;
    report.plan = format!("reference {}", Precision::F64.describe());
    let values = storage
        .iter()
        .map(|b| (0..b.len()).map(|i| b.get_f64(i)).collect())
        .collect();
    Ok((values, report))
}
