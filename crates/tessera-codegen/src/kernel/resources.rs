//! What a lowered program needs from a device, checked against its limits (Rawat §2).

use tessera_plan::PlanError;
use tessera_plan::gpu::{DeviceLimits, KernelResources, Occupancy, check_kernel, check_memory};

use super::{Kernel, KernelProgram, Launch, ScalarType, Stmt};

/// The resources of one launch of `kernel`: block, grid, shared memory and an estimate of
/// its registers per thread (a base of 16 plus one per 32-bit variable, two per 64-bit one,
/// counting the variables of a scope while it is open: sibling scopes share registers).
pub fn kernel_resources(kernel: &Kernel, launch: &Launch) -> KernelResources {
    fn registers(body: &[Stmt]) -> u32 {
        let mut declared = 0;
        let mut nested = 0;
        for stmt in body {
            match stmt {
                Stmt::Declare { ty, .. } => declared += if ty.size_bytes() == 8 { 2 } else { 1 },
                Stmt::If {
                    then, otherwise, ..
                }
                | Stmt::UniformIf {
                    then, otherwise, ..
                } => nested = nested.max(registers(then)).max(registers(otherwise)),
                Stmt::UniformCases(cases) => {
                    nested = (cases.iter()).fold(nested, |n, (_, body)| n.max(registers(body)))
                }
                Stmt::For { body, .. } => nested = nested.max(1 + registers(body)),
                Stmt::Block(body) => nested = nested.max(registers(body)),
                _ => {}
            }
        }
        declared + nested
    }
    let index_registers = if kernel
        .params
        .iter()
        .any(|p| p.kind == super::ParamKind::Scalar(ScalarType::I64))
    {
        2
    } else {
        0
    };
    KernelResources {
        kernel: kernel.name.clone(),
        block: launch.block,
        grid: launch.grid,
        shared_bytes: kernel.shared_bytes(),
        registers_per_thread: 16 + index_registers + registers(&kernel.body),
    }
}

/// Checks a lowered program against a device: its buffers must fit in device memory, every
/// launch within the thread, block, grid and shared-memory limits. Returns each kernel's
/// occupancy, in launch order.
pub fn validate(
    program: &KernelProgram,
    limits: &DeviceLimits,
) -> Result<Vec<(String, Occupancy)>, PlanError> {
    check_memory(limits, program.host.bytes())?;
    let mut report = Vec::new();
    for launch in program.host.launches() {
        let kernel = program.kernel(&launch.kernel).ok_or_else(|| {
            PlanError::Unsupported(format!(
                "the host program launches an unknown kernel `{}`",
                launch.kernel
            ))
        })?;
        report.push((
            kernel.name.clone(),
            check_kernel(limits, &kernel_resources(kernel, launch))?,
        ));
    }
    Ok(report)
}
