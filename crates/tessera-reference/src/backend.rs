//! The `reference` backend: [`ReferenceBackend`], its executable and active run, and direct
//! entry points ([`run_exact`], [`run_f64`]).

use tessera_analysis::BoundProgram;
use tessera_ir::{Id, Receiver};
use tessera_plan::{
    Arithmetic, BackendPlan, DeviceSelection, Plan, PlanError, PlanRequest, Precision,
    ReferencePlan,
};
use tessera_runtime::reduce::RowPartials;
use tessera_runtime::{
    ActiveRun, Backend, BackendError, Bandwidth, Buffer, Executable, Explanation, FieldSet,
    MemoryEstimate, Pass, RunReport, RunTimes, Source,
};

use crate::precision::{check_fields, convert_buffer};
use crate::step::{Interpreter, condition_holds};

/// The reference interpreter as a [`Backend`] named `reference`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReferenceBackend;

impl Backend for ReferenceBackend {
    fn name(&self) -> &'static str {
        "reference"
    }

    fn plan(&self, program: &BoundProgram, request: &PlanRequest) -> Result<Plan, BackendError> {
        Ok(Plan::new(
            program,
            BackendPlan::Reference(reference_plan(request)?),
        ))
    }

    fn emit(
        &self,
        program: &BoundProgram,
        plan: &Plan,
        _device: &DeviceSelection,
    ) -> Result<Source, BackendError> {
        reference_plan_of(program, plan)?;
        Ok(Source {
            text: tessera_ir::print_program(program.program()),
            extension: "tess",
        })
    }

    fn explain(
        &self,
        program: &BoundProgram,
        plan: &Plan,
        _device: &DeviceSelection,
    ) -> Result<Explanation, BackendError> {
        reference_plan_of(program, plan)?;
        Ok(Explanation {
            bytes_per_point: program.traffic_bytes_per_point() as f64,
            traffic_model: "each field a stage reads counted once, each field a stage writes once"
                .into(),
            roofline_note: "the interpreter is far from it".into(),
            ..Explanation::default()
        })
    }

    fn bandwidth(
        &self,
        _device: &DeviceSelection,
        _threads: Option<usize>,
    ) -> Result<Bandwidth, BackendError> {
        Err(BackendError::Unsupported(
            "the reference interpreter is not bound by memory bandwidth".into(),
        ))
    }

    fn memory(
        &self,
        program: &BoundProgram,
        plan: &Plan,
        _device: &DeviceSelection,
    ) -> Result<MemoryEstimate, BackendError> {
        let reference = reference_plan_of(program, plan)?;
        let shadow = match reference.precision {
            Precision::F64 => (program.cell_count() as u64)
                .saturating_mul(8 * program.program().fields.len() as u64),
            Precision::Exact => 0,
        };
        Ok(MemoryEstimate::fields(program)
            .with_host("f64 copies of the fields", shadow)
            .with_host("stage results", stage_result_bytes(program)))
    }

    fn prepare(
        &self,
        program: &BoundProgram,
        plan: &Plan,
        device: &DeviceSelection,
    ) -> Result<Box<dyn Executable>, BackendError> {
        if device.name().is_some() {
            return Err(refuse("devices", "--device"));
        }
        Ok(Box::new(ReferenceExecutable::new(program, plan)?))
    }
}

/// The error for a request the reference backend has no use for.
fn refuse(what: &str, flag: &str) -> BackendError {
    BackendError::InvalidOptions(format!(
        "the reference backend does not use {what}; drop `{flag}` or choose another backend"
    ))
}

/// The reference plan `request` asks for: exact order unless f64 accuracy is asked for.
fn reference_plan(request: &PlanRequest) -> Result<ReferencePlan, BackendError> {
    if request.strategy.is_some() {
        return Err(refuse("strategies", "--strategy"));
    }
    if request.tile.is_some() {
        return Err(refuse("spatial tiles", "--tile"));
    }
    if request.time_tile.is_some() {
        return Err(refuse("time tiles", "--time-tile"));
    }
    if request.device.name().is_some() {
        return Err(refuse("devices", "--device"));
    }
    if request.threads == Some(0) {
        return Err(BackendError::InvalidOptions(
            "the thread count must be at least 1".to_string(),
        ));
    }
    let precision = match request.arithmetic {
        Arithmetic::Relaxed | Arithmetic::Exact => Precision::Exact,
        Arithmetic::F64 => Precision::F64,
    };
    Ok(ReferencePlan {
        precision,
        threads: request.threads,
    })
}

/// The reference part of `plan`, checked against `program`.
fn reference_plan_of<'p>(
    program: &BoundProgram,
    plan: &'p Plan,
) -> Result<&'p ReferencePlan, BackendError> {
    plan.check_program(program)?;
    match &plan.backend {
        BackendPlan::Reference(reference) => Ok(reference),
        other => Err(PlanError::field(
            "backend",
            other.name(),
            "this is the reference backend; run the plan with `--backend` of its own",
        )
        .into()),
    }
}

/// A program prepared for the reference interpreter.
pub struct ReferenceExecutable {
    bound: BoundProgram,
    plan: Plan,
    precision: Precision,
    pool: Option<rayon::ThreadPool>,
    /// The unrounded f64 values of the last f64-accuracy run.
    unrounded: Option<Vec<Buffer>>,
}

impl ReferenceExecutable {
    /// Prepares `program` under `plan` (a reference plan made for it).
    pub fn new(program: &BoundProgram, plan: &Plan) -> Result<Self, BackendError> {
        let reference = reference_plan_of(program, plan)?;
        let pool = match reference.threads {
            None => None,
            Some(n) => Some(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(n)
                    .build()
                    .map_err(|e| {
                        BackendError::Unavailable(format!("cannot start {n} threads: {e}"))
                    })?,
            ),
        };
        Ok(ReferenceExecutable {
            bound: program.clone(),
            precision: reference.precision,
            plan: plan.clone(),
            pool,
            unrounded: None,
        })
    }

    /// An executable of `program` in `precision` on the global thread pool.
    fn with_precision(program: &BoundProgram, precision: Precision) -> Result<Self, BackendError> {
        let plan = Plan::new(
            program,
            BackendPlan::Reference(ReferencePlan {
                precision,
                threads: None,
            }),
        );
        ReferenceExecutable::new(program, &plan)
    }
}

impl Executable for ReferenceExecutable {
    fn program(&self) -> &BoundProgram {
        &self.bound
    }

    fn plan(&self) -> &Plan {
        &self.plan
    }

    fn start<'a>(
        &'a mut self,
        fields: &'a mut FieldSet,
    ) -> Result<Box<dyn ActiveRun + 'a>, BackendError> {
        check_fields(&self.bound, fields)?;
        let shadow = (self.precision == Precision::F64).then(|| shadow(self.precision, fields));
        let tables = (fields.tables.iter())
            .map(|b| convert_buffer(b.clone(), self.precision.ty(b.ty())))
            .collect();
        self.unrounded = None;
        Ok(Box::new(ReferenceRun {
            executable: self,
            fields,
            shadow,
            tables,
        }))
    }
}

/// A run of the interpreter: on the fields themselves in exact order, on an f64 copy of them
/// in f64 accuracy mode.
struct ReferenceRun<'a> {
    executable: &'a mut ReferenceExecutable,
    fields: &'a mut FieldSet,
    shadow: Option<Vec<Buffer>>,
    /// The input tables in the interpreter's precision.
    tables: Vec<Buffer>,
}

impl ReferenceRun<'_> {
    /// The fields rounded from the f64 copy, in f64 accuracy mode (unless the copy is to be
    /// made again from the fields).
    fn round_into_fields(&mut self) {
        if let Some(shadow) = self.shadow.as_ref().filter(|s| !s.is_empty()) {
            for (out, values) in self.fields.buffers.iter_mut().zip(shadow) {
                let ty = out.ty();
                *out = convert_buffer(values.clone(), ty);
            }
        }
    }
}

impl ActiveRun for ReferenceRun<'_> {
    fn run_pass(&mut self, pass: &Pass) -> Result<Vec<RowPartials>, BackendError> {
        if let Some(shadow) = &mut self.shadow
            && shadow.is_empty()
        {
            *shadow = self::shadow(self.executable.precision, self.fields);
        }
        let executable = &*self.executable;
        let interpreter = Interpreter {
            bound: &executable.bound,
            precision: executable.precision,
            observer: None,
            pool: executable.pool.as_ref(),
            tables: &self.tables,
        };
        let storage = match &mut self.shadow {
            Some(shadow) => shadow.as_mut_slice(),
            None => self.fields.buffers.as_mut_slice(),
        };
        let mut values = Vec::new();
        for t in pass.first_step..=pass.last_step() {
            let due = if t == pass.last_step() {
                pass.reductions.as_slice()
            } else {
                &[]
            };
            values = interpreter.run_step(storage, t, due)?;
        }
        Ok(values)
    }

    fn until_holds(&mut self, latest: &[Option<f64>]) -> Result<bool, BackendError> {
        condition_holds(&self.executable.bound, self.executable.precision, latest)
    }

    fn fields(&mut self) -> Result<&FieldSet, BackendError> {
        self.round_into_fields();
        Ok(self.fields)
    }

    fn fields_mut(&mut self) -> Result<&mut FieldSet, BackendError> {
        self.round_into_fields();
        if let Some(shadow) = &mut self.shadow {
            // The f64 copy is made again from the fields at the next pass.
            shadow.clear();
        }
        Ok(self.fields)
    }

    fn sample(&mut self, receiver: Id<Receiver>, points: &[usize]) -> Result<Buffer, BackendError> {
        let field = self.executable.bound.program().receivers[receiver]
            .field
            .index();
        let values = match &self.shadow {
            Some(shadow) => {
                let ty = self.fields.buffers[field].ty();
                convert_buffer(shadow[field].gather(points), ty)
            }
            None => self.fields.buffers[field].gather(points),
        };
        Ok(values)
    }

    fn finish(mut self: Box<Self>) -> Result<RunTimes, BackendError> {
        self.round_into_fields();
        self.executable.unrounded = self.shadow.take();
        Ok(RunTimes::default())
    }
}

/// The interpreter's storage for `fields` in `precision` (f32 fields widened in f64 mode).
fn shadow(precision: Precision, fields: &FieldSet) -> Vec<Buffer> {
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
    ReferenceExecutable::with_precision(bound, Precision::Exact)?.run(
        fields,
        first_step,
        steps,
        &mut (),
    )
}

/// Runs `steps` steps from `first_step` in f64 accuracy mode starting from `inputs`, and returns
/// every field's final values unrounded, as f64 (index = field index), with the report.
pub fn run_f64(
    bound: &BoundProgram,
    inputs: &FieldSet,
    first_step: u64,
    steps: u64,
) -> Result<(Vec<Vec<f64>>, RunReport), BackendError> {
    let mut executable = ReferenceExecutable::with_precision(bound, Precision::F64)?;
    let mut fields = inputs.clone();
    let report = executable.run(&mut fields, first_step, steps, &mut ())?;
    let values = executable
        .unrounded
        .take()
        .unwrap_or_default()
        .iter()
        .map(|b| (0..b.len()).map(|i| b.get_f64(i)).collect())
        .collect();
    Ok((values, report))
}

/// The interpreter's largest stage result: every written value of a stage is held (8 bytes
/// each) until the whole stage has been evaluated.
fn stage_result_bytes(program: &BoundProgram) -> u64 {
    let stages = &program.program().stages;
    stages
        .iter()
        .map(|(id, stage)| {
            let points = u64::try_from(program.stage_domain(id).point_count()).unwrap_or(u64::MAX);
            points.saturating_mul(8 * stage.outputs().len() as u64)
        })
        .max()
        .unwrap_or(0)
}
