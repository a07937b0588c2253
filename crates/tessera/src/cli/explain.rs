//! `tessera explain`: the plan, footprints, memory traffic and roofline of a program; for the
//! GPU backends, per kernel: block, threads, shared memory, registers, occupancy (Rawat §2),
//! bytes moved per point and redundant work.

use tessera::metrics::{bytes_per_point, roofline_gcells_per_s};
use tessera::{Error, Session};

use super::args::ExplainArgs;
use super::bench::bandwidth_gb_s;
use super::describe::{details, headline};

/// Prints the description of the plan the backend would run.
pub fn explain(args: &ExplainArgs) -> Result<i32, Error> {
    let session = args.program.load()?;
    let backend_name = args.exec.backend_name();
    let options = args.exec.options();
    if matches!(backend_name.as_str(), "cuda" | "opencl") {
        tessera::backend(&backend_name)?;
        #[cfg(any(feature = "opencl", feature = "cuda"))]
        return gpu::explain(&session, &backend_name, &options, args.bandwidth);
    }
    let plan = plan_text(&session, &backend_name, &options)?;
    println!("{}", headline(&session));
    for line in details(&session) {
        println!("  {line}");
    }
    println!("plan: {backend_name}/{plan}");
    let bytes = bytes_per_point(session.bound());
    println!(
        "traffic model: {bytes} bytes per point per step (each field a stage reads counted once, each field a stage writes once; cache reuse assumed perfect)"
    );
    match bandwidth_gb_s(args.bandwidth, args.exec.threads) {
        Some((bandwidth, how)) => {
            let roof = roofline_gcells_per_s(bandwidth, bytes);
            println!(
                "bandwidth: {bandwidth:.1} GB/s ({how}); roofline: {roof:.3} GCells/s without temporal blocking, up to T times that with time tiles of T steps"
            );
        }
        None => println!(
            "bandwidth: unknown (no working C compiler to measure it; give --bandwidth GB/s)"
        ),
    }
    Ok(0)
}

/// The plan's description: from the planner for `cpu` (no compilation), else from the prepared
/// executable.
fn plan_text(
    session: &Session,
    backend: &str,
    options: &tessera_runtime::RunOptions,
) -> Result<String, Error> {
    if backend == "cpu" {
        return Ok(tessera_cpu::CpuBackend::default()
            .plan(session.bound(), options)?
            .to_string());
    }
    let backend = tessera::backend(backend)?;
    Ok(session.prepare(backend.as_ref(), options)?.describe())
}

/// The GPU backends' explanation, planned for the selected device when one is present, else
/// for `DeviceLimits::typical_gpu()`.
#[cfg(any(feature = "opencl", feature = "cuda"))]
mod gpu {
    use std::collections::HashMap;

    use tessera::{Error, Session};
    use tessera_codegen::kernel::{
        DeviceLimits, HostOp, KernelProgram, Limiter, kernel_resources, kernel_traffic, occupancy,
    };
    use tessera_gpu_host::{GpuDevice, copy_bandwidth_gb_s, lower_for_device, plan_for};
    use tessera_runtime::RunOptions;

    use super::super::describe::{details, headline};

    /// The device planned for: its limits, where they come from, and (CUDA) its architecture.
    struct Target {
        limits: DeviceLimits,
        source: String,
        arch: String,
        /// The measured copy bandwidth in GB/s, or why there is none.
        bandwidth: Result<f64, String>,
    }

    /// Registers and spills per kernel as ptxas reports them.
    type PtxasRegisters = HashMap<String, (u32, u64)>;

    /// Prints the plan, one block per kernel launch, the traffic total and the roofline.
    pub fn explain(
        session: &Session,
        backend: &str,
        options: &RunOptions,
        bandwidth: Option<f64>,
    ) -> Result<i32, Error> {
        let bound = session.bound();
        let target = target(backend, options, bandwidth.is_none());
        let plan = plan_for(bound, options, &target.limits)?;
        let program = lower_for_device(bound, &plan, &target.limits)?;
        println!("{}", headline(session));
        for line in details(session) {
            println!("  {line}");
        }
        println!(
            "plan: {backend}/{} for {} ({})",
            plan.describe(),
            target.limits.name,
            target.source
        );
        for note in &program.notes {
            println!("  note: {note}");
        }
        let ptxas = real_registers(backend, &program, &target.arch);
        if let Err(why) = &ptxas {
            println!("registers: resource-model estimates ({why})");
        }
        let mut bytes_per_step = 0.0;
        for op in &program.host.step {
            let HostOp::Launch(launch) = op else { continue };
            let Some(kernel) = program.kernel(&launch.kernel) else {
                continue;
            };
            let mut resources = kernel_resources(kernel, launch);
            let estimated = resources.registers_per_thread;
            let registers = match ptxas.as_ref().ok().and_then(|r| r.get(&kernel.name)) {
                Some(&(real, spilled)) => {
                    resources.registers_per_thread = real;
                    format!(
                        "{real} per thread (ptxas {}, {spilled} B spilled; model estimate {estimated})",
                        target.arch
                    )
                }
                None => format!("{estimated} per thread (resource-model estimate)"),
            };
            let occupancy = occupancy(&target.limits, &resources);
            let traffic = kernel_traffic(bound, &program, kernel);
            let every = launch.every.max(1);
            bytes_per_step += traffic.bytes() * traffic.points as f64 / every as f64;
            let [bx, by, bz] = resources.block;
            let [gx, gy, gz] = resources.grid;
            println!(
                "kernel {} ({}{}):",
                kernel.name,
                kernel.strategy,
                if every > 1 {
                    format!(", every {every} steps")
                } else {
                    String::new()
                }
            );
            println!(
                "  block {bx}x{by}x{bz} ({} threads), grid {gx}x{gy}x{gz} blocks, shared memory {} B per block",
                resources.threads(),
                resources.shared_bytes
            );
            println!("  registers: {registers}");
            println!(
                "  occupancy: {:.0}% ({} blocks per multiprocessor, limited by {})",
                occupancy.occupancy * 100.0,
                occupancy.blocks_per_sm,
                limiter_name(occupancy.limited_by)
            );
            println!(
                "  traffic: {:.2} B loaded per point ({:.2} B of them neighbours and halos loaded again), {:.2} B stored, over {} points",
                traffic.load_bytes, traffic.reload_bytes, traffic.store_bytes, traffic.points
            );
            println!(
                "  redundant work: {:.1}% of the points recomputed (halo recomputation)",
                traffic.redundant_fraction * 100.0
            );
        }
        let updated = bound.updated_points().max(1) as f64;
        let bytes = bytes_per_step / updated;
        println!(
            "traffic model: {bytes:.2} bytes per updated point per step over all kernels (every global load and store counted, caches ignored)"
        );
        let measured = match bandwidth {
            Some(given) => Ok((given, "given".to_string())),
            None => target
                .bandwidth
                .map(|b| (b, "device-to-device copy".to_string())),
        };
        match measured {
            Ok((bandwidth, how)) => println!(
                "bandwidth: {bandwidth:.1} GB/s ({how}); roofline: {:.3} GCells/s",
                if bytes > 0.0 { bandwidth / bytes } else { 0.0 }
            ),
            Err(why) => println!("bandwidth: unknown ({why}; give --bandwidth GB/s)"),
        }
        Ok(0)
    }

    fn limiter_name(limiter: Limiter) -> &'static str {
        match limiter {
            Limiter::Blocks => "the blocks per multiprocessor",
            Limiter::Threads => "the threads per multiprocessor",
            Limiter::SharedMemory => "shared memory",
            Limiter::Registers => "registers",
        }
    }

    fn typical(why: String) -> Target {
        Target {
            limits: DeviceLimits::typical_gpu(),
            source: format!("no device: {why}"),
            arch: "sm_90".into(),
            bandwidth: Err("no device to measure".into()),
        }
    }

    /// Bytes copied per bandwidth measurement: 256 MiB, or an eighth of a smaller device.
    fn measurement_bytes(limits: &DeviceLimits) -> usize {
        usize::try_from((limits.global_bytes / 8).min(256 << 20)).unwrap_or(256 << 20)
    }

    fn target(backend: &str, options: &RunOptions, measure: bool) -> Target {
        let selection = options.device.as_deref();
        match backend {
            #[cfg(feature = "cuda")]
            "cuda" => device_target::<tessera_cuda::CudaStreamDevice>(selection, measure, |d| {
                d.device().arch.clone()
            }),
            #[cfg(feature = "opencl")]
            "opencl" => {
                device_target::<tessera_opencl::OpenClDevice>(selection, measure, |_| String::new())
            }
            other => typical(format!("this build has no {other} runtime")),
        }
    }

    /// The device `selection` names (`arch` reads its architecture), with its copy bandwidth
    /// when `measure` is set; the typical GPU when it cannot be opened.
    fn device_target<D: GpuDevice>(
        selection: Option<&str>,
        measure: bool,
        arch: fn(&D) -> String,
    ) -> Target {
        match D::open(selection) {
            Ok(mut device) => {
                let limits = device.limits();
                let bytes = measurement_bytes(&limits);
                let bandwidth = if measure {
                    copy_bandwidth_gb_s(&mut device, bytes, 10).map_err(|e| e.to_string())
                } else {
                    Err("not measured".into())
                };
                Target {
                    arch: arch(&device),
                    limits,
                    source: "the device's limits".into(),
                    bandwidth,
                }
            }
            Err(e) => typical(e.to_string()),
        }
    }

    /// Registers and spills per kernel from NVRTC + ptxas (CUDA builds only).
    fn real_registers(
        backend: &str,
        program: &KernelProgram,
        arch: &str,
    ) -> Result<PtxasRegisters, String> {
        if backend != "cuda" {
            return Err("OpenCL reports no registers".into());
        }
        #[cfg(feature = "cuda")]
        {
            let source = tessera_codegen::kernel::print_cuda(program);
            let ptx = tessera_cuda::compile_ptx(&source, arch, program.plan.exact)
                .map_err(|e| format!("ptxas numbers unavailable: {e}"))?;
            let report = tessera_cuda::ptxas_report(&ptx, arch)
                .map_err(|e| format!("ptxas numbers unavailable: {e}"))?;
            Ok(report
                .into_iter()
                .map(|k| (k.name, (k.registers, k.spill_stores)))
                .collect())
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (program, arch);
            Err("this build has no CUDA toolchain support".into())
        }
    }
}
