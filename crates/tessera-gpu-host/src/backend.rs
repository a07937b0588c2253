//! [`GpuBackend`]: the [`Backend`] of every GPU runtime, over its [`GpuDevice`]: plans for
//! the selected device (or a typical one), emits the device's dialect, explains a plan kernel
//! by kernel, measures the device's copy bandwidth, and prepares [`GpuExecutable`]s.

use std::marker::PhantomData;

use tessera_analysis::BoundProgram;
use tessera_codegen::kernel::{
    BufferRole, DeviceLimits, GpuPlan, GpuStrategy, HostOp, KernelProgram, Limiter,
    kernel_resources, kernel_traffic, occupancy,
};
use tessera_plan::gpu::known_gpu;
use tessera_plan::{Arithmetic, DeviceSelection, Plan, PlanError, PlanRequest};
use tessera_runtime::{
    Backend, BackendError, Bandwidth, Executable, Explanation, MemoryEstimate, MemoryPart, Source,
};

use crate::device::{GpuDevice, KernelRegisters, copy_bandwidth_gb_s};
use crate::executable::GpuExecutable;
use crate::plan::{lower_for_device, plan_for};

/// The backend of GPU runtime `D` (`opencl`, `cuda`).
pub struct GpuBackend<D> {
    device: PhantomData<fn() -> D>,
}

impl<D> Default for GpuBackend<D> {
    fn default() -> Self {
        GpuBackend {
            device: PhantomData,
        }
    }
}

/// The device a plan is made for: its limits, where they come from, and the open device
/// (none for the typical device).
struct Target<D> {
    limits: DeviceLimits,
    source: String,
    device: Option<D>,
}

impl<D: GpuDevice> GpuBackend<D> {
    /// The device `selection` names, opened; the typical device for
    /// [`DeviceSelection::Typical`].
    fn target(selection: &DeviceSelection) -> Result<Target<D>, BackendError> {
        match selection {
            DeviceSelection::Typical => Ok(Target {
                limits: DeviceLimits::typical_gpu(),
                source: "no device".into(),
                device: None,
            }),
            other => match (D::open(other.name()), other.name().and_then(known_gpu)) {
                (Ok(device), _) => Ok(Target {
                    limits: device.limits(),
                    source: "the device's limits".into(),
                    device: Some(device),
                }),
                // A name of the built-in tables plans for that GPU when none is here.
                (Err(_), Some(known)) => Ok(Target {
                    limits: known.limits,
                    source: "no such device here: its built-in table".into(),
                    device: None,
                }),
                (Err(e), None) => Err(e),
            },
        }
    }

    /// The GPU part of `plan`, checked against `program`.
    fn gpu_plan_of<'p>(
        program: &BoundProgram,
        plan: &'p Plan,
    ) -> Result<&'p GpuPlan, BackendError> {
        plan.check_program(program)?;
        match plan.backend.gpu() {
            Some(gpu) if plan.backend_name() == D::BACKEND => Ok(gpu),
            _ => Err(PlanError::field(
                "backend",
                plan.backend_name(),
                format!(
                    "this is the {} backend; run the plan with `--backend` of its own",
                    D::BACKEND
                ),
            )
            .into()),
        }
    }
}

impl<D: GpuDevice + 'static> Backend for GpuBackend<D> {
    fn name(&self) -> &'static str {
        D::BACKEND
    }

    fn plan(&self, program: &BoundProgram, request: &PlanRequest) -> Result<Plan, BackendError> {
        let target = Self::target(&request.device)?;
        let gpu = plan_for(program, request, D::BACKEND, &target.limits)?;
        Ok(Plan::new(program, D::backend_plan(gpu)))
    }

    fn emit(&self, program: &BoundProgram, plan: &Plan) -> Result<Source, BackendError> {
        let gpu = Self::gpu_plan_of(program, plan)?;
        let kernels = lower_for_device(program, gpu, &DeviceLimits::typical_gpu())?;
        Ok(Source {
            text: D::source(&kernels),
            extension: if D::BACKEND == "cuda" { "cu" } else { "cl" },
        })
    }

    fn explain(
        &self,
        program: &BoundProgram,
        plan: &Plan,
        device: &DeviceSelection,
    ) -> Result<Explanation, BackendError> {
        let gpu = Self::gpu_plan_of(program, plan)?;
        // A device that cannot be opened is explained as the typical one, and said so.
        let target = Self::target(device).unwrap_or_else(|e| Target {
            limits: DeviceLimits::typical_gpu(),
            source: format!("no device: {e}"),
            device: None,
        });
        let kernels = lower_for_device(program, gpu, &target.limits)?;
        let registers = D::kernel_registers(&kernels, target.device.as_ref());
        let mut lines: Vec<String> = kernels.notes.iter().map(|n| format!("note: {n}")).collect();
        if let Err(why) = &registers {
            lines.push(format!("registers: resource-model estimates ({why})"));
        }
        let registers = registers.ok();
        let bytes_per_step = kernel_lines(
            program,
            &kernels,
            &target.limits,
            registers.as_ref(),
            &mut lines,
        );
        let updated = program.updated_points().max(1) as f64;
        lines.extend(alternative_lines(
            program,
            gpu,
            &target.limits,
            bytes_per_step / updated,
        ));
        Ok(Explanation {
            target: format!(" for {} ({})", target.limits.name, target.source),
            lines,
            bytes_per_point: bytes_per_step / updated,
            traffic_model: "per updated point, over all kernels: every global load and store counted, caches ignored".into(),
            roofline_note: match &kernels.host.fused {
                Some(fused) => format!(
                    "at the traffic of passes of {} steps in one launch",
                    fused.depth
                ),
                None => "at one step per launch".into(),
            },
        })
    }

    fn bandwidth(
        &self,
        device: &DeviceSelection,
        _threads: Option<usize>,
    ) -> Result<Bandwidth, BackendError> {
        let target = Self::target(device)?;
        let Some(mut device) = target.device else {
            return match device.name().and_then(known_gpu) {
                Some(known) => Ok(Bandwidth {
                    gb_s: known.peak_gb_s,
                    how: format!("{}'s data-sheet peak", known.limits.name),
                }),
                None => Err(BackendError::Unavailable("no device to measure".into())),
            };
        };
        let bytes = measurement_bytes(&device.limits());
        Ok(Bandwidth {
            gb_s: copy_bandwidth_gb_s(&mut device, bytes, 10)?,
            how: "device-to-device copy".into(),
        })
    }

    fn memory(
        &self,
        program: &BoundProgram,
        plan: &Plan,
        device: &DeviceSelection,
    ) -> Result<MemoryEstimate, BackendError> {
        let gpu = Self::gpu_plan_of(program, plan)?;
        let target = Self::target(device)?;
        let kernels = lower_for_device(program, gpu, &target.limits)?;
        let mut estimate = MemoryEstimate::fields(program);
        for buffer in &kernels.host.buffers {
            let what = match buffer.role {
                BufferRole::Field { .. } => "fields",
                BufferRole::Next { .. } => "spare buffers",
                BufferRole::Scratch => "wavefront rings",
                BufferRole::Partials { .. } => "reduction partials",
                BufferRole::Table { .. } => "input tables",
                BufferRole::ReceiverPoints { .. } | BufferRole::ReceiverValues { .. } => {
                    "receivers"
                }
            };
            let bytes = (buffer.len * buffer.ty.size_bytes()) as u64;
            match estimate.device.iter_mut().find(|p| p.what == what) {
                Some(part) => part.bytes += bytes,
                None => estimate.device.push(MemoryPart {
                    what: what.into(),
                    bytes,
                }),
            }
        }
        estimate.device_memory = (*device != DeviceSelection::Typical)
            .then(|| (target.limits.name.clone(), target.limits.global_bytes));
        Ok(estimate)
    }

    fn prepare(
        &self,
        program: &BoundProgram,
        plan: &Plan,
        device: &DeviceSelection,
    ) -> Result<Box<dyn Executable>, BackendError> {
        let gpu = Self::gpu_plan_of(program, plan)?;
        if *device == DeviceSelection::Typical {
            return Err(BackendError::InvalidOptions(
                "a run needs a device, not the typical one".into(),
            ));
        }
        Ok(Box::new(GpuExecutable::<D>::new(
            program,
            plan,
            gpu,
            device.name(),
        )?))
    }
}

/// Bytes copied per bandwidth measurement: 256 MiB, or an eighth of a smaller device.
fn measurement_bytes(limits: &DeviceLimits) -> usize {
    usize::try_from((limits.global_bytes / 8).min(256 << 20)).unwrap_or(256 << 20)
}

/// Appends a block of lines per kernel launch (block, grid, shared memory, registers,
/// occupancy, traffic, redundant work); returns the bytes the launches of a pass without
/// reductions (the fused pass's, when there is one) move per step.
fn kernel_lines(
    bound: &BoundProgram,
    program: &KernelProgram,
    limits: &DeviceLimits,
    registers: Option<&(KernelRegisters, String)>,
    lines: &mut Vec<String>,
) -> f64 {
    let mut bytes_per_step = 0.0;
    let fused = program.host.fused.as_ref();
    for launch in program.host.launches() {
        let Some(kernel) = program.kernel(&launch.kernel) else {
            continue;
        };
        let mut resources = kernel_resources(kernel, launch);
        let estimated = resources.registers_per_thread;
        let registers = match registers.and_then(|(r, arch)| Some((r.get(&kernel.name)?, arch))) {
            Some((&(real, spilled), arch)) => {
                resources.registers_per_thread = real;
                format!(
                    "{real} per thread (ptxas {arch}, {spilled} B spilled; model estimate {estimated})"
                )
            }
            None => format!("{estimated} per thread (resource-model estimate)"),
        };
        let occupancy = occupancy(limits, &resources);
        let traffic = kernel_traffic(bound, program, kernel);
        let every = launch.every.max(1);
        let in_plain_pass = program.host.in_plain_pass(launch);
        if in_plain_pass {
            bytes_per_step += traffic.bytes() * traffic.points as f64 / every as f64;
        }
        let [bx, by, bz] = resources.block;
        let [gx, gy, gz] = resources.grid;
        let every_text = match (every, fused) {
            (_, Some(f)) if in_plain_pass => {
                let launches = (f.ops.iter())
                    .filter(|op| matches!(op, HostOp::Launch(l) if l.kernel == kernel.name))
                    .count();
                match launches {
                    1 => format!(", once per pass of up to {} steps", f.depth),
                    n => format!(
                        ", {n} launches per pass of up to {} steps, a plane each",
                        f.depth
                    ),
                }
            }
            (_, Some(_)) => ", in the passes that compute reductions".to_string(),
            (1, None) => String::new(),
            (k, None) => format!(", every {k} steps"),
        };
        lines.extend([
            format!("kernel {} ({}{every_text}):", kernel.name, kernel.strategy),
            format!(
                "  block {bx}x{by}x{bz} ({} threads), grid {gx}x{gy}x{gz} blocks, shared memory {} B per block",
                resources.threads(),
                resources.shared_bytes
            ),
            format!("  registers: {registers}"),
            format!(
                "  occupancy: {:.0}% ({} blocks per multiprocessor, limited by {})",
                occupancy.occupancy * 100.0,
                occupancy.blocks_per_sm,
                limiter_name(occupancy.limited_by)
            ),
            format!(
                "  traffic: {:.2} B loaded per point ({:.2} B of them neighbours and halos loaded again), {:.2} B stored, over {} points",
                traffic.load_bytes, traffic.reload_bytes, traffic.store_bytes, traffic.points
            ),
            format!(
                "  redundant work: {:.1}% of the points recomputed (halo recomputation)",
                traffic.redundant_fraction * 100.0
            ),
        ]);
    }
    bytes_per_step
}

/// The other plans the resource model weighs: each strategy (overlapped at T = 2, 4 and 8) as
/// its default plan for this device, with its traffic per updated point and step, recomputed
/// work, worst occupancy and speed at the memory roofline relative to `plan` (which moves
/// `bytes` per point and step) — or why it does not fit.
fn alternative_lines(
    program: &BoundProgram,
    plan: &GpuPlan,
    limits: &DeviceLimits,
    bytes: f64,
) -> Vec<String> {
    let mut requests: Vec<(GpuStrategy, u32)> = (GpuStrategy::ALL.into_iter())
        .filter(|s| !matches!(s, GpuStrategy::Overlapped | GpuStrategy::Wavefront))
        .map(|s| (s, 1))
        .collect();
    requests.extend([2, 4, 8].map(|t| (GpuStrategy::Overlapped, t)));
    requests.extend([2, 4].map(|t| (GpuStrategy::Streaming, t)));
    requests.extend([2, 4].map(|t| (GpuStrategy::Wavefront, t)));
    let mut lines = vec!["alternatives (each strategy's default plan for this device):".into()];
    for (strategy, time_tile) in requests {
        if strategy == plan.strategy && time_tile == plan.time_tile {
            continue;
        }
        let request = PlanRequest {
            strategy: Some(strategy.strategy()),
            time_tile: Some(time_tile),
            arithmetic: if plan.exact {
                Arithmetic::Exact
            } else {
                Arithmetic::Relaxed
            },
            ..PlanRequest::default()
        };
        let planned = plan_for(program, &request, "gpu", limits)
            .and_then(|p| Ok((lower_for_device(program, &p, limits)?, p)));
        lines.push(match planned {
            Ok((lowered, alternative)) => {
                alternative_line(program, &lowered, &alternative, limits, bytes)
            }
            Err(why) => format!("  {} T={time_tile}: rejected: {why}", strategy.name()),
        });
    }
    lines
}

/// One line of [`alternative_lines`] for a plan that fits.
fn alternative_line(
    program: &BoundProgram,
    lowered: &KernelProgram,
    alternative: &GpuPlan,
    limits: &DeviceLimits,
    bytes: f64,
) -> String {
    let mut moved = 0.0;
    let mut redundant: f64 = 0.0;
    let mut occupancy_low: f64 = 1.0;
    for launch in lowered.host.launches() {
        let Some(kernel) = lowered.kernel(&launch.kernel) else {
            continue;
        };
        if !lowered.host.in_plain_pass(launch) {
            continue;
        }
        let traffic = kernel_traffic(program, lowered, kernel);
        moved += traffic.bytes() * traffic.points as f64 / launch.every.max(1) as f64;
        redundant = redundant.max(traffic.redundant_fraction);
        let resources = kernel_resources(kernel, launch);
        occupancy_low = occupancy_low.min(occupancy(limits, &resources).occupancy);
    }
    let per_point = moved / program.updated_points().max(1) as f64;
    format!(
        "  {}: {per_point:.2} B per point per step, {:.1}% recomputed, occupancy {:.0}%, {:.2}x this plan's speed at the memory roofline",
        alternative.describe(),
        redundant * 100.0,
        occupancy_low * 100.0,
        bytes / per_point.max(f64::MIN_POSITIVE)
    )
}

fn limiter_name(limiter: Limiter) -> &'static str {
    match limiter {
        Limiter::Blocks => "the blocks per multiprocessor",
        Limiter::Threads => "the threads per multiprocessor",
        Limiter::SharedMemory => "shared memory",
        Limiter::Registers => "registers",
    }
}
