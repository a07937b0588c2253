//! One step (or one fused pass) of a lowered program's host program on a [`HostDevice`]: launches due in the
//! step, copies, ping-pong swaps, and the reductions' row partials read back.

use tessera_codegen::kernel::{FusedPass, HostOp, KernelProgram, LaunchArg};
use tessera_ir::{Id, Reduction};
use tessera_runtime::BackendError;
use tessera_runtime::reduce::{RowPartials, due};

use crate::device::{BoundArg, HostDevice};

/// Runs step `t` of `program`'s host program on `device`, with `bindings` the allocation
/// bound to each buffer id (swaps exchange entries). Returns each reduction read back in the
/// step, with its row partials.
pub fn run_host_step(
    program: &KernelProgram,
    device: &mut dyn HostDevice,
    bindings: &mut [usize],
    t: u64,
) -> Result<Vec<(Id<Reduction>, RowPartials)>, BackendError> {
    run_ops(&program.host.step, device, bindings, t, 1)
}

/// Runs `program`'s start operations on `device` once the fields are uploaded (see
/// [`run_host_step`]).
pub fn run_host_start(
    program: &KernelProgram,
    device: &mut dyn HostDevice,
    bindings: &mut [usize],
) -> Result<(), BackendError> {
    run_ops(&program.host.start, device, bindings, 0, 1).map(|_| ())
}

/// Runs the step operations `ops` of step `t` (no reduction is read back in them): for
/// recording steps.
pub(crate) fn run_step_ops(
    ops: &[HostOp],
    device: &mut dyn HostDevice,
    bindings: &mut [usize],
    t: u64,
) -> Result<(), BackendError> {
    run_ops(ops, device, bindings, t, 1).map(|_| ())
}

/// Runs `program`'s fused pass of `steps` steps from step `t` on `device` (see
/// [`run_host_step`]).
pub fn run_fused_pass(
    fused: &FusedPass,
    device: &mut dyn HostDevice,
    bindings: &mut [usize],
    t: u64,
    steps: u64,
) -> Result<(), BackendError> {
    if steps == 0 || steps > u64::from(fused.depth) {
        return Err(BackendError::Runtime(format!(
            "internal error: a fused pass of {steps} steps; the kernel fuses 1 to {}",
            fused.depth
        )));
    }
    run_ops(&fused.ops, device, bindings, t, steps).map(|_| ())
}

/// Runs `ops` for the pass of `steps` steps starting at step `t`.
fn run_ops(
    ops: &[HostOp],
    device: &mut dyn HostDevice,
    bindings: &mut [usize],
    t: u64,
    steps: u64,
) -> Result<Vec<(Id<Reduction>, RowPartials)>, BackendError> {
    let int = |v: u64| {
        i64::try_from(v).map_err(|_| BackendError::InvalidOptions(format!("step {v} exceeds i64")))
    };
    let (step, count) = (int(t)?, int(steps)?);
    let mut values: Vec<(Id<Reduction>, RowPartials)> = Vec::new();
    for op in ops {
        match op {
            HostOp::Launch(launch) if due(launch.every, t) => {
                let args = (launch.args.iter())
                    .map(|arg| match arg {
                        LaunchArg::Buffer(id) => Ok(BoundArg::Allocation(bindings[id.0])),
                        LaunchArg::Step => Ok(BoundArg::Int(step)),
                        LaunchArg::Steps => Ok(BoundArg::Int(count)),
                        LaunchArg::Int(value) => Ok(BoundArg::Int(*value)),
                        LaunchArg::ReductionValue(r) => step_value(&values, *r, t),
                        LaunchArg::Count => Err(BackendError::Runtime(format!(
                            "internal error: the launch of `{}` in a step takes a count",
                            launch.kernel
                        ))),
                    })
                    .collect::<Result<Vec<BoundArg>, BackendError>>()?;
                device.launch(launch, &args)?;
            }
            HostOp::Launch(_) => {}
            HostOp::Copy { from, to } => device.copy(bindings[from.0], bindings[to.0])?,
            HostOp::Swap(a, b) => bindings.swap(a.0, b.0),
            HostOp::Reduce(readback) if due(readback.every, t) => {
                let rows = read_f64(device, bindings[readback.partials.0], readback.rows)?;
                let partials = RowPartials {
                    op: readback.op,
                    rows,
                };
                values.push((readback.reduction, partials));
            }
            HostOp::Reduce(_) => {}
        }
    }
    Ok(values)
}

/// The value of reduction `r` read back earlier in step `t`, as a launch argument.
fn step_value(
    values: &[(Id<Reduction>, RowPartials)],
    r: Id<Reduction>,
    t: u64,
) -> Result<BoundArg, BackendError> {
    (values.iter().find(|(id, _)| *id == r))
        .map(|(_, partials)| BoundArg::Float(partials.value()))
        .ok_or_else(|| {
            BackendError::Runtime(format!(
                "internal error: a launch reads reduction {} before it is read back in step {t}",
                r.index()
            ))
        })
}

/// The first `count` f64 values of an allocation.
fn read_f64(
    device: &mut dyn HostDevice,
    allocation: usize,
    count: usize,
) -> Result<Vec<f64>, BackendError> {
    let mut raw = vec![0u8; count * 8];
    if count > 0 {
        device.download(allocation, 0, &mut raw)?;
    }
    Ok(raw
        .chunks_exact(8)
        .map(|c| f64::from_ne_bytes(c.try_into().expect("8-byte chunk")))
        .collect())
}
