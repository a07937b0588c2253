//! [`GpuBackend`]: the [`Backend`] of every GPU runtime, over its [`GpuDevice`]: plans for
//! the selected device (or a typical one), emits the device's dialect, explains a plan kernel
//! by kernel, measures the device's copy bandwidth, and prepares [`GpuExecutable`]s.

use std::marker::PhantomData;

use tessera_analysis::BoundProgram;
use tessera_codegen::kernel::{
    BufferRole, DeviceLimits, GpuPlan, HostOp, KernelProgram, Limiter, kernel_resources,
    kernel_traffic, occupancy,
};
use tessera_plan::gpu::known_gpu;
use tessera_plan::{Arithmetic, DeviceSelection, Plan, PlanError, PlanRequest};
use tessera_runtime::{
    Backend, BackendError, Bandwidth, Executable, Explanation, MemoryEstimate, MemoryPart,
    Prediction, Source,
};

use tessera_plan::gpu_cost::{
    self, Bound, Efficiency, GpuThroughput, StepCost, UNMEASURED_MARGIN, kernel_class, predict,
};

use crate::cost::{Weighed, candidates, step_cost, step_cost_with_registers};
use crate::device::{GpuDevice, KernelRegisters, copy_bandwidth_gb_s};
use crate::executable::GpuExecutable;
use crate::plan::{lower_for_device, plan_for};
use crate::replay::replay_summary;

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
    throughput: GpuThroughput,
}

impl<D> Target<D> {
    /// The typical GPU, no device open; `source` says why.
    fn typical(source: String) -> Target<D> {
        let limits = DeviceLimits::typical_gpu();
        Target {
            throughput: GpuThroughput::of(&limits, None),
            limits,
            source,
            device: None,
        }
    }
}

impl<D: GpuDevice> GpuBackend<D> {
    /// The device `selection` names, opened; the typical device for
    /// [`DeviceSelection::Typical`].
    fn target(selection: &DeviceSelection) -> Result<Target<D>, BackendError> {
        match selection {
            DeviceSelection::Typical => Ok(Target::typical("no device".into())),
            other => match (D::open(other.name()), other.name().and_then(known_gpu)) {
                (Ok(device), known) => Ok(Target {
                    limits: device.limits(),
                    source: "the device's limits".into(),
                    throughput: GpuThroughput::of(
                        &device.limits(),
                        device.peak_gb_s().or(known.map(|k| k.peak_gb_s)),
                    ),
                    device: Some(device),
                }),
                // A name of the built-in tables plans for that GPU when none is here.
                (Err(_), Some(known)) => Ok(Target {
                    throughput: GpuThroughput::of(&known.limits, Some(known.peak_gb_s)),
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
        let gpu = plan_for(
            program,
            request,
            D::BACKEND,
            &target.limits,
            &target.throughput,
        )?;
        Ok(Plan::new(program, D::backend_plan(gpu)))
    }

    fn emit(
        &self,
        program: &BoundProgram,
        plan: &Plan,
        device: &DeviceSelection,
    ) -> Result<Source, BackendError> {
        let gpu = Self::gpu_plan_of(program, plan)?;
        let kernels = lower_for_device(program, gpu, &Self::target(device)?.limits)?;
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
        let target =
            Self::target(device).unwrap_or_else(|e| Target::typical(format!("no device: {e}")));
        let kernels = lower_for_device(program, gpu, &target.limits)?;
        let registers = D::kernel_registers(&kernels, target.device.as_ref());
        let mut lines: Vec<String> = kernels.notes.iter().map(|n| format!("note: {n}")).collect();
        if let Err(why) = &registers {
            lines.push(format!("registers: resource-model estimates ({why})"));
        }
        lines.push(replay_summary(&kernels));
        let registers = registers.ok();
        let bytes_per_step = kernel_lines(
            program,
            &kernels,
            &target.limits,
            registers.as_ref(),
            &mut lines,
        );
        let cost = step_cost(program, gpu, &kernels, &target.limits);
        if target.limits.warp_size > 1 {
            let prediction = predict(&cost, &target.throughput);
            lines.push(prediction_line(
                program,
                &cost,
                &prediction,
                &target.throughput,
            ));
            if let Some((counts, arch)) = &registers {
                let counted =
                    step_cost_with_registers(program, gpu, &kernels, &target.limits, |k| {
                        counts.get(k).map(|&(count, _)| count)
                    });
                if counted != cost {
                    lines.push(counted_registers_line(
                        &counted,
                        &predict(&counted, &target.throughput),
                        arch,
                    ));
                }
            }
            lines.extend(candidate_lines(
                program,
                gpu,
                &target,
                prediction.gcells(&cost),
            ));
        } else {
            lines.push(
                "prediction: none (the cost model is a GPU's; on a device with warps of one the default plan is `naive`)"
                    .into(),
            );
        }
        Ok(Explanation {
            target: format!(" for {} ({})", target.limits.name, target.source),
            lines,
            bytes_per_point: bytes_per_step / cost.updated_points.max(1.0),
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

    fn predict(
        &self,
        program: &BoundProgram,
        plan: &Plan,
        device: &DeviceSelection,
    ) -> Result<Option<Prediction>, BackendError> {
        let gpu = Self::gpu_plan_of(program, plan)?;
        let target = Self::target(device)?;
        if target.limits.warp_size <= 1 {
            return Ok(None);
        }
        let kernels = lower_for_device(program, gpu, &target.limits)?;
        let cost = step_cost(program, gpu, &kernels, &target.limits);
        let prediction = predict(&cost, &target.throughput);
        let (efficiency, measured) = match prediction.efficiency {
            Efficiency::Measured(f, _) => (f, true),
            Efficiency::Assumed(f) => (f, false),
        };
        Ok(Some(Prediction {
            gcells_per_s: prediction.gcells(&cost),
            bound: bound_text(&prediction, &cost),
            kernel_class: kernel_class(gpu.strategy, gpu.time_tile).into(),
            dims: cost.dims,
            efficiency,
            measured,
        }))
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
            format!("  form: {}", kernel.doc),
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
            format!(
                "  work: {:.1} reads and operations per point, recomputed points included",
                traffic.instructions
            ),
        ]);
    }
    bytes_per_step
}

/// The model's prediction for the plan explained: its rate, its fraction of the copy
/// roofline (each field read and written once per step), what bounds it and the efficiency
/// applied.
fn prediction_line(
    program: &BoundProgram,
    cost: &StepCost,
    prediction: &gpu_cost::Prediction,
    throughput: &GpuThroughput,
) -> String {
    let gcells = prediction.gcells(cost);
    let copy_bytes = program.traffic_bytes_per_point().max(1) as f64;
    let roofline = throughput.memory_gb_s / copy_bytes;
    format!(
        "prediction (cost model): {gcells:.1} GCells/s, {:.2}x the copy roofline ({roofline:.1} GCells/s at {:.0} GB/s, {copy_bytes:.0} B per point), bound by {}; {}",
        gcells / roofline,
        throughput.memory_gb_s,
        bound_text(prediction, cost),
        efficiency_text(prediction.efficiency),
    )
}

/// The prediction again with ptxas's registers (on `arch`), where their occupancy differs from
/// the estimates' the default plan is chosen with.
fn counted_registers_line(
    cost: &StepCost,
    prediction: &gpu_cost::Prediction,
    arch: &str,
) -> String {
    format!(
        "  with ptxas's registers ({arch}): {:.1} GCells/s at {:.0}% occupancy, bound by {} (plans are chosen with the resource model's estimates)",
        prediction.gcells(cost),
        cost.lowest_occupancy() * 100.0,
        bound_text(prediction, cost)
    )
}

/// The bound of a prediction in words (with the launches per step where they bind).
fn bound_text(prediction: &gpu_cost::Prediction, cost: &StepCost) -> String {
    match prediction.bound {
        Bound::Launches if cost.launches >= 1.0 => {
            format!("kernel launches ({:.0} per step)", cost.launches)
        }
        Bound::Launches => format!(
            "kernel launches (one per {:.0} steps)",
            1.0 / cost.launches.max(f64::MIN_POSITIVE)
        ),
        bound => bound.name().into(),
    }
}

/// The efficiency of a prediction and where it comes from.
fn efficiency_text(efficiency: Efficiency) -> String {
    match efficiency {
        Efficiency::Measured(f, gpu) => format!("efficiency {f:.2}, measured on an {gpu}"),
        Efficiency::Assumed(f) => format!(
            "efficiency {f:.2}, assumed (the lowest measured: this strategy has not run on a GPU yet)"
        ),
    }
}

/// The plans the cost model weighs when the strategy is left open (each strategy's default
/// plan at a few time tiles), best first, with their traffic per updated point and step,
/// recomputed work, worst occupancy, predicted rate, bound and speed relative to the plan
/// explained (predicted at `gcells`) — or why the planner or the device refuses them.
fn candidate_lines<D>(
    program: &BoundProgram,
    plan: &GpuPlan,
    target: &Target<D>,
    gcells: f64,
) -> Vec<String> {
    let request = PlanRequest {
        arithmetic: if plan.exact {
            Arithmetic::Exact
        } else {
            Arithmetic::Relaxed
        },
        ..PlanRequest::default()
    };
    let mut weighed = candidates(program, &request, "gpu", &target.limits, &target.throughput);
    weighed.sort_by(|a, b| match (&a.outcome, &b.outcome) {
        (Ok(a), Ok(b)) => b.score().total_cmp(&a.score()),
        (a, b) => b.is_ok().cmp(&a.is_ok()),
    });
    let mut lines = vec![format!(
        "candidates the cost model weighs when the strategy is left open, best first (an unmeasured strategy is ranked at its prediction / {UNMEASURED_MARGIN}):"
    )];
    for candidate in weighed {
        lines.push(match candidate.outcome {
            Ok(w) => candidate_line(&w, gcells, *plan == w.plan),
            Err(why) => format!(
                "  {} T={}: refused: {why}",
                candidate.strategy.name(),
                candidate.time_tile
            ),
        });
    }
    lines
}

/// One line of [`candidate_lines`] for a plan the model weighed.
fn candidate_line(weighed: &Weighed, gcells: f64, this: bool) -> String {
    let cost = &weighed.cost;
    let predicted = weighed.gcells();
    let versus = if this {
        "this plan".to_string()
    } else {
        format!(
            "{:.2}x this plan",
            predicted / gcells.max(f64::MIN_POSITIVE)
        )
    };
    format!(
        "  {}: {:.2} B per point per step, {:.1}% recomputed, occupancy {:.0}%, predicted {predicted:.1} GCells/s ({versus}), bound by {}, {}",
        weighed.plan.describe(),
        cost.bytes_per_point(),
        cost.recomputed() * 100.0,
        cost.lowest_occupancy() * 100.0,
        bound_text(&weighed.prediction, cost),
        efficiency_text(weighed.prediction.efficiency),
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
