//! The time loop of a lowered [`KernelProgram`]'s host program on a [`HostDevice`]: `every K`
//! operations, ping-pong swaps, reductions folded in THE fixed order, and `until`.

use tessera_analysis::BoundProgram;
use tessera_codegen::kernel::{HostOp, KernelProgram, Launch, LaunchArg};
use tessera_runtime::reduce::fold;
use tessera_runtime::{BackendError, Progress, ReductionRecord};

use tessera_reference::until_holds;

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
    /// Copies the start of an allocation into `data`, after all earlier work; done when it
    /// returns.
    fn download(&mut self, allocation: usize, data: &mut [u8]) -> Result<(), BackendError>;
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
                        read_f64(device, state.bindings[readback.partials.0], readback.rows)?;
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
        if computed && until_holds(bound, &state.latest)? {
            outcome.stopped_early = true;
            break;
        }
    }
    Ok(outcome)
}

/// The first `count` f64 values of an allocation.
fn read_f64(
    device: &mut dyn HostDevice,
    allocation: usize,
    count: usize,
) -> Result<Vec<f64>, BackendError> {
    let mut raw = vec![0u8; count * 8];
    if count > 0 {
        device.download(allocation, &mut raw)?;
    }
    Ok(raw
        .chunks_exact(8)
        .map(|c| f64::from_ne_bytes(c.try_into().expect("8-byte chunk")))
        .collect())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tessera_analysis::BoundProgram;
    use tessera_ir::builder::ProgramBuilder;
    use tessera_ir::{BinaryOp, Constant, ScalarType, SizeExpr, UnaryOp};
    use tessera_reference::until_holds;

    /// A program with two reductions and `until (a < limit && !(b > 2)) || i32(a) == 7`.
    fn program() -> BoundProgram {
        let mut b = ProgramBuilder::new("stop");
        let n = b.param("N", ScalarType::I64, Constant::Int(4));
        let limit = b.param("limit", ScalarType::F64, Constant::Float(1.5));
        b.grid(vec![SizeExpr::Param(n)]);
        let u = b.field("u", ScalarType::F64);
        let mut stage = b.stage("copy");
        let here = b.read(u, &[0]);
        stage.assign(u, here);
        b.finish_stage(stage);
        let (ra, rb) = (b.read(u, &[0]), b.read(u, &[0]));
        let a = b.reduce_after_step("a", tessera_ir::ReduceOp::Sum, ra, None, 1);
        let c = b.reduce_after_step("b", tessera_ir::ReduceOp::Max, rb, None, 2);
        let (va, vb, limit) = (
            b.reduction_value(a),
            b.reduction_value(c),
            b.param_value(limit),
        );
        let below = b.binary(BinaryOp::Lt, va, limit);
        let two = b.lit(Constant::Int(2));
        let above = b.binary(BinaryOp::Gt, vb, two);
        let not_above = b.unary(UnaryOp::Not, above);
        let both = b.binary(BinaryOp::And, below, not_above);
        let va = b.reduction_value(a);
        let truncated = b.cast(ScalarType::I32, va);
        let seven = b.lit(Constant::Int(7));
        let is_seven = b.binary(BinaryOp::Eq, truncated, seven);
        let condition = b.binary(BinaryOp::Or, both, is_seven);
        b.until(condition);
        let checked = tessera_analysis::check(&b.finish()).expect("checks");
        tessera_analysis::bind(Arc::new(checked), &[]).expect("binds")
    }

    #[test]
    fn the_stop_condition_is_evaluated_in_the_elaborated_types_once_every_value_exists() {
        let bound = program();
        let holds = |a: Option<f64>, b: Option<f64>| until_holds(&bound, &[a, b]).unwrap();
        assert!(!holds(Some(1.0), None), "`b` has no value yet");
        assert!(holds(Some(1.0), Some(2.0)));
        assert!(!holds(Some(1.0), Some(2.5)));
        assert!(!holds(Some(1.5), Some(0.0)), "1.5 < 1.5 is false");
        assert!(holds(Some(7.9), Some(9.0)), "i32(7.9) truncates to 7");
        assert!(
            !holds(Some(f64::NAN), Some(9.0)),
            "NaN compares false and casts to 0"
        );
    }
}
