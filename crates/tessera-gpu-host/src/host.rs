//! One step of a lowered program's host program on a [`HostDevice`]: launches due in the
//! step, copies, ping-pong swaps, and the reductions' read-backs folded in THE fixed order.

use tessera_codegen::kernel::{HostOp, KernelProgram, LaunchArg};
use tessera_ir::{Id, Reduction};
use tessera_runtime::BackendError;
use tessera_runtime::reduce::{due, fold};

use crate::device::{BoundArg, HostDevice};

/// Runs step `t` of `program`'s host program on `device`, with `bindings` the allocation
/// bound to each buffer id (swaps exchange entries). Returns each reduction read back in the
/// step, with its value.
pub fn run_host_step(
    program: &KernelProgram,
    device: &mut dyn HostDevice,
    bindings: &mut [usize],
    t: u64,
) -> Result<Vec<(Id<Reduction>, f64)>, BackendError> {
    let step = i64::try_from(t)
        .map_err(|_| BackendError::InvalidOptions(format!("step {t} exceeds i64")))?;
    let mut values = Vec::new();
    for op in &program.host.step {
        match op {
            HostOp::Launch(launch) if due(launch.every, t) => {
                let args: Vec<BoundArg> = launch
                    .args
                    .iter()
                    .map(|arg| match arg {
                        LaunchArg::Buffer(id) => BoundArg::Allocation(bindings[id.0]),
                        LaunchArg::Step => BoundArg::Step(step),
                    })
                    .collect();
                device.launch(launch, &args)?;
            }
            HostOp::Launch(_) => {}
            HostOp::Copy { from, to } => device.copy(bindings[from.0], bindings[to.0])?,
            HostOp::Swap(a, b) => bindings.swap(a.0, b.0),
            HostOp::Reduce(readback) if due(readback.every, t) => {
                let partials = read_f64(device, bindings[readback.partials.0], readback.rows)?;
                values.push((readback.reduction, fold(readback.op, partials)));
            }
            HostOp::Reduce(_) => {}
        }
    }
    Ok(values)
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
