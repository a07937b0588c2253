//! What every GPU runtime shares (the CUDA backend uses it too): choosing a [`GpuPlan`] from
//! [`RunOptions`], and executing a lowered [`HostProgram`] on a [`HostDevice`] — the time loop,
//! `every K` operations, ping-pong swaps, reductions folded in THE fixed order, and `until`.

use tessera_analysis::BoundProgram;
use tessera_codegen::kernel::{
    DeviceLimits, GpuPlan, GpuStrategy, HostOp, KernelProgram, Launch, LaunchArg, default_plan,
    lower, validate,
};
use tessera_runtime::reduce::fold;
use tessera_runtime::{BackendError, Progress, ReductionRecord, RunOptions};

use crate::stop::stop_condition_holds;

/// The plan `options` ask for on a device with `limits`: the default plan of
/// [`default_plan`], with the strategy, block (`tile`, slowest axis first: `[.., y, x]`),
/// time tile and exactness overridden.
pub fn plan_for(
    bound: &BoundProgram,
    options: &RunOptions,
    limits: &DeviceLimits,
) -> Result<GpuPlan, BackendError> {
    if options.f64_accuracy {
        return Err(BackendError::Unsupported(
            "GPU backends have no f64 accuracy mode; use `--backend reference` for it".into(),
        ));
    }
    let mut plan = default_plan(bound, limits);
    if let Some(name) = &options.strategy {
        plan.strategy = GpuStrategy::from_name(name).ok_or_else(|| {
            let names: Vec<&str> = GpuStrategy::ALL.iter().map(|s| s.name()).collect();
            BackendError::InvalidOptions(format!(
                "unknown GPU strategy `{name}`; choose one of: {}",
                names.join(", ")
            ))
        })?;
    }
    if let Some(tile) = &options.tile {
        if tile.is_empty() || tile.len() > 3 {
            return Err(BackendError::InvalidOptions(format!(
                "a GPU block has 1 to 3 sizes (slowest axis first, e.g. `--tile 8x32`), not {}",
                tile.len()
            )));
        }
        plan.block = [1, 1, 1];
        for (axis, &size) in tile.iter().rev().enumerate() {
            plan.block[axis] = u32::try_from(size).map_err(|_| {
                BackendError::InvalidOptions(format!("block size {size} is too large"))
            })?;
        }
    }
    if let Some(depth) = options.time_tile {
        plan.time_tile = u32::try_from(depth)
            .map_err(|_| BackendError::InvalidOptions(format!("time tile {depth} is too large")))?;
    }
    plan.exact = options.exact;
    plan.check()
        .map_err(|e| BackendError::InvalidOptions(e.to_string()))?;
    Ok(plan)
}

/// Lowers `bound` under `plan` and checks the result against the device (memory, threads,
/// shared memory) before anything is allocated.
pub fn lower_for_device(
    bound: &BoundProgram,
    plan: &GpuPlan,
    limits: &DeviceLimits,
) -> Result<KernelProgram, BackendError> {
    let program = lower(bound, plan).map_err(|e| BackendError::Unsupported(e.to_string()))?;
    validate(&program, limits).map_err(|e| BackendError::Unsupported(e.to_string()))?;
    Ok(program)
}

/// A launch argument with buffer ids resolved to the allocations now bound to them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoundArg {
    /// A device allocation, by its index in the device's allocation list.
    Allocation(usize),
    /// The step counter, as a 64-bit signed integer.
    Step(i64),
}

/// The device operations a host program needs; allocations are addressed by index (one per
/// `BufferDecl`, created by the runtime in declaration order).
pub trait HostDevice {
    /// Launches `launch.kernel` with `args`.
    fn launch(&mut self, launch: &Launch, args: &[BoundArg]) -> Result<(), BackendError>;
    /// Copies all of allocation `from` into allocation `to`.
    fn copy(&mut self, from: usize, to: usize) -> Result<(), BackendError>;
    /// Reads the first `count` f64 values of an allocation back (waiting for earlier work).
    fn read_f64(&mut self, allocation: usize, count: usize) -> Result<Vec<f64>, BackendError>;
}

/// The state of a run that survives `run` calls: which allocation each buffer id is bound to,
/// and the latest value of each reduction.
#[derive(Clone, Debug)]
pub struct HostState {
    /// Allocation bound to each buffer id (swaps exchange entries).
    pub bindings: Vec<usize>,
    /// Latest value of each reduction, by reduction index.
    pub latest: Vec<Option<f64>>,
}

impl HostState {
    /// Buffer `i` bound to allocation `i`, no reduction values.
    pub fn new(program: &KernelProgram) -> HostState {
        HostState {
            bindings: (0..program.host.buffers.len()).collect(),
            latest: vec![None; program.checked.program().reductions.len()],
        }
    }
}

/// What the time loop did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LoopOutcome {
    /// Steps executed.
    pub steps: u64,
    /// Reduction values, in the order computed.
    pub reductions: Vec<ReductionRecord>,
    /// Whether `until` ended the loop.
    pub stopped_early: bool,
}

/// Whether an operation with `every` runs in step `t`.
fn due(every: u64, t: u64) -> bool {
    (t + 1).is_multiple_of(every.max(1))
}

/// Runs steps `first_step .. first_step + steps` of `program`'s host program on `device`.
pub fn run_steps(
    program: &KernelProgram,
    bound: &BoundProgram,
    device: &mut dyn HostDevice,
    state: &mut HostState,
    first_step: u64,
    steps: u64,
    progress: &mut dyn Progress,
) -> Result<LoopOutcome, BackendError> {
    let per_iteration = program.host.steps_per_iteration.max(1);
    if per_iteration != 1 {
        return Err(BackendError::Unsupported(format!(
            "this runtime executes one step per iteration, the host program computes {per_iteration}"
        )));
    }
    let mut outcome = LoopOutcome::default();
    for done in 0..steps {
        let t = first_step + done;
        let step = i64::try_from(t)
            .map_err(|_| BackendError::InvalidOptions(format!("step {t} exceeds i64")))?;
        let mut computed = false;
        for op in &program.host.step {
            match op {
                HostOp::Launch(launch) if due(launch.every, t) => {
                    let args: Vec<BoundArg> = launch
                        .args
                        .iter()
                        .map(|arg| match arg {
                            LaunchArg::Buffer(id) => BoundArg::Allocation(state.bindings[id.0]),
                            LaunchArg::Step => BoundArg::Step(step),
                        })
                        .collect();
                    device.launch(launch, &args)?;
                }
                HostOp::Launch(_) => {}
                HostOp::Copy { from, to } => {
                    device.copy(state.bindings[from.0], state.bindings[to.0])?
                }
                HostOp::Swap(a, b) => state.bindings.swap(a.0, b.0),
                HostOp::Reduce(readback) if due(readback.every, t) => {
                    let partials =
                        device.read_f64(state.bindings[readback.partials.0], readback.rows)?;
                    let value = fold(readback.op, partials);
                    state.latest[readback.reduction.index()] = Some(value);
                    outcome.reductions.push(ReductionRecord {
                        step: t,
                        name: readback.name.clone(),
                        value,
                    });
                    computed = true;
                }
                HostOp::Reduce(_) => {}
            }
        }
        outcome.steps = done + 1;
        progress.advance(done + 1, steps);
        if computed && stop_condition_holds(bound, &state.latest)? {
            outcome.stopped_early = true;
            break;
        }
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tessera_codegen::kernel::example_programs;
    use tessera_ir::Constant;

    use super::*;

    fn j2d5pt() -> BoundProgram {
        let example = example_programs()
            .into_iter()
            .find(|e| e.name == "j2d5pt")
            .expect("the example exists");
        let checked = tessera_analysis::check(&example.program).expect("checks");
        let sizes = [
            ("NY".to_string(), Constant::Int(40)),
            ("NX".to_string(), Constant::Int(70)),
        ];
        tessera_analysis::bind(Arc::new(checked), &sizes).expect("binds")
    }

    #[test]
    fn options_override_the_default_plan() {
        let bound = j2d5pt();
        let limits = DeviceLimits::typical_gpu();
        let options = RunOptions {
            exact: true,
            strategy: Some("naive".into()),
            tile: Some(vec![4, 16]),
            time_tile: Some(1),
            ..RunOptions::default()
        };
        let plan = plan_for(&bound, &options, &limits).unwrap();
        assert_eq!(
            (plan.strategy, plan.block, plan.exact),
            (GpuStrategy::Naive, [16, 4, 1], true)
        );
        assert!(
            !plan_for(&bound, &RunOptions::default(), &limits)
                .unwrap()
                .exact
        );
    }

    #[test]
    fn bad_options_are_refused_with_the_alternatives() {
        let bound = j2d5pt();
        let limits = DeviceLimits::typical_gpu();
        let refuse =
            |options: RunOptions| plan_for(&bound, &options, &limits).unwrap_err().to_string();
        assert!(
            refuse(RunOptions {
                strategy: Some("diamond".into()),
                ..RunOptions::default()
            })
            .contains("naive, tiled, streaming")
        );
        assert!(
            refuse(RunOptions {
                tile: Some(vec![1, 2, 3, 4]),
                ..RunOptions::default()
            })
            .contains("1 to 3 sizes")
        );
        assert!(
            refuse(RunOptions {
                tile: Some(vec![8, 0]),
                ..RunOptions::default()
            })
            .contains("at least 1")
        );
        assert!(
            refuse(RunOptions {
                time_tile: Some(4),
                ..RunOptions::default()
            })
            .contains("time tile")
        );
        assert!(
            refuse(RunOptions {
                f64_accuracy: true,
                ..RunOptions::default()
            })
            .contains("reference")
        );
    }

    #[test]
    fn a_block_over_the_device_limits_is_refused_before_running() {
        let bound = j2d5pt();
        let plan = GpuPlan {
            block: [64, 32, 1],
            ..GpuPlan::new(GpuStrategy::Tiled)
        };
        let error = lower_for_device(&bound, &plan, &DeviceLimits::typical_gpu()).unwrap_err();
        assert!(matches!(error, BackendError::Unsupported(_)), "{error}");
    }
}
