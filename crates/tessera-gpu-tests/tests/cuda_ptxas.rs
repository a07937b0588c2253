//! Without a GPU, CI still checks the CUDA code: every module the generator produces for the
//! test programs x plans (overlapped at every test depth included) compiles with NVRTC for
//! `sm_90`, assembles with `ptxas -v`, and spills nothing; each kernel's static shared memory
//! is what the resource model says (none for kernels past 48 KiB, which carve their arrays from
//! dynamic shared memory, up to what an H100's block may opt into). The per-kernel
//! registers (ptxas beside the model's estimate) and shared memory are printed as a table and
//! written to `target/tmp/ptxas-resources.txt`.

use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use tessera_codegen::kernel::{KernelProgram, generate, kernel_resources, validate};
use tessera_cuda::{compile_ptx, ptxas_report};
use tessera_gpu_tests::availability::require_nvrtc_and_ptxas;
use tessera_plan::gpu::known_gpu;
use tessera_testkit::plans::{fused_test_plans, gpu_test_plans};
use tessera_testkit::test_programs;

const ARCH: &str = "sm_90";

/// One module to check: its program, plan, printed CUDA source, and each kernel's name with
/// the resource model's registers and static shared bytes.
struct Module {
    what: String,
    program: String,
    plan: String,
    source: String,
    kernels: Vec<(String, u32, usize)>,
}

/// Each kernel of `program` (receivers' gathers included) with the resource model's
/// registers per thread and the shared bytes it declares statically.
fn modelled(program: &KernelProgram) -> Vec<(String, u32, usize)> {
    let gathers = program.host.receivers.iter().map(|g| &g.launch);
    let mut kernels: Vec<(String, u32, usize)> = (program.host.launches().chain(gathers))
        .filter_map(|launch| {
            let kernel = program.kernel(&launch.kernel)?;
            let model = kernel_resources(kernel, launch);
            let dynamic = kernel.dynamic_shared_bytes() > 0;
            Some((
                kernel.name.clone(),
                model.registers_per_thread,
                if dynamic { 0 } else { model.shared_bytes },
            ))
        })
        .collect();
    kernels.sort();
    kernels.dedup();
    kernels
}

/// What checking one module gives: table rows, problems, and the model's registers over
/// ptxas's per kernel (exact mode).
type Checked = (Vec<String>, Vec<String>, Vec<f64>);

/// Compiles and assembles one module in both modes.
fn check_module(module: &Module) -> Checked {
    let (mut rows, mut problems, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for exact in [true, false] {
        let resources = match compile_ptx(&module.source, ARCH, exact)
            .and_then(|ptx| ptxas_report(&ptx, ARCH))
        {
            Ok(r) => r,
            Err(e) => {
                problems.push(format!("{} (exact: {exact}): {e}", module.what));
                continue;
            }
        };
        let mut names: Vec<&str> = resources.iter().map(|r| r.name.as_str()).collect();
        let mut expected: Vec<&str> = module.kernels.iter().map(|k| k.0.as_str()).collect();
        names.sort_unstable();
        expected.sort_unstable();
        if names != expected {
            problems.push(format!(
                "{}: ptxas reports kernels {names:?}, the program has {expected:?}",
                module.what
            ));
        }
        for r in &resources {
            if r.spill_stores != 0 || r.spill_loads != 0 {
                problems.push(format!(
                    "{}: kernel `{}` spills ({} bytes stored, {} loaded)",
                    module.what, r.name, r.spill_stores, r.spill_loads
                ));
            }
            let Some(&(_, model_registers, model_shared)) =
                module.kernels.iter().find(|k| k.0 == r.name)
            else {
                continue;
            };
            if r.shared_bytes != model_shared as u64 {
                problems.push(format!(
                    "{}: kernel `{}` uses {} bytes of shared memory, the model says {model_shared}",
                    module.what, r.name, r.shared_bytes
                ));
            }
            if exact {
                ratios.push(f64::from(model_registers) / f64::from(r.registers.max(1)));
                rows.push(format!(
                    "{:<21} {:<36} {:<41} {:>4} {:>5} {:>8} {:>9} {:>6}/{}",
                    module.program,
                    module.plan,
                    r.name,
                    r.registers,
                    model_registers,
                    r.shared_bytes,
                    r.stack_bytes,
                    r.spill_stores,
                    r.spill_loads
                ));
            }
        }
    }
    (rows, problems, ratios)
}

#[test]
fn every_cuda_module_compiles_for_sm_90_without_spills() {
    if !require_nvrtc_and_ptxas("NVRTC/ptxas module check") {
        return;
    }
    let h100 = known_gpu("h100").expect("built in").limits;
    let mut modules = Vec::new();
    let mut problems = Vec::new();
    let mut skipped = Vec::new();
    for case in test_programs() {
        let bound = case.bind(0);
        let plans = gpu_test_plans().into_iter();
        for plan in plans.chain(fused_test_plans(&bound)) {
            let what = format!("{} {}", case.name, plan.describe());
            match generate(&bound, &plan) {
                // Deep 3D time tiles that outgrow an H100 block's shared memory are refused
                // before any compiler sees them (the code generator's tests check the refusal).
                Ok((program, ..)) if validate(&program, &h100).is_err() => {
                    skipped.push(what);
                }
                Ok((program, source, _)) => modules.push(Module {
                    what,
                    program: case.name.clone(),
                    plan: plan.describe(),
                    source,
                    kernels: modelled(&program),
                }),
                Err(e) => problems.push(format!("{what}: does not lower: {e}")),
            }
        }
    }
    // NVRTC and ptxas run for independent modules in parallel; rows keep the module order.
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let next = AtomicUsize::new(0);
    let results: Vec<Mutex<Checked>> = modules.iter().map(|_| Mutex::default()).collect();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(module) = modules.get(index) else {
                        break;
                    };
                    *results[index].lock().unwrap() = check_module(module);
                }
            });
        }
    });
    let mut table = format!(
        "{:<21} {:<36} {:<41} {:>4} {:>5} {:>8} {:>9} {:>6}\n",
        "program", "plan", "kernel", "regs", "model", "smem(B)", "stack(B)", "spill st/ld"
    );
    let mut kernels = 0;
    let mut ratios = Vec::new();
    for result in results {
        let (rows, module_problems, module_ratios) = result.into_inner().unwrap();
        kernels += rows.len();
        rows.iter()
            .for_each(|row| writeln!(table, "{row}").expect("writing to a string"));
        problems.extend(module_problems);
        ratios.extend(module_ratios);
    }
    ratios.sort_by(f64::total_cmp);
    if let (Some(low), Some(high)) = (ratios.first(), ratios.last()) {
        writeln!(
            table,
            "registers, model estimate / ptxas: median {:.2}, {low:.2} to {high:.2}; static shared memory: as the model says for every kernel",
            ratios[ratios.len() / 2]
        )
        .expect("writing to a string");
    }
    println!("{table}");
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("ptxas-resources.txt");
    std::fs::write(&path, &table).expect("writing the resource table");
    println!(
        "{kernels} kernels in {} modules (exact mode shown; fast mode checked too); table written to {}; refused as too large for a block: {skipped:?}",
        modules.len(),
        path.display()
    );
    assert!(kernels > 0, "no kernel was compiled");
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn nvrtc_compile_errors_name_the_saved_source_and_the_log() {
    if !require_nvrtc_and_ptxas("NVRTC error reporting") {
        return;
    }
    let error = compile_ptx(
        "extern \"C\" __global__ void k(float* a) { a[0] = undefined_name; }",
        ARCH,
        true,
    )
    .unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("undefined_name"),
        "the log is missing: {message}"
    );
    assert!(
        message.contains("--fmad=false"),
        "the options are missing: {message}"
    );
    let tessera_cuda::CudaError::Compile { source_path, .. } = error else {
        panic!("not a compile error: {message}")
    };
    assert!(
        std::fs::read_to_string(&source_path).is_ok_and(|s| s.contains("undefined_name")),
        "source not saved at {}",
        source_path.display()
    );
    let _ = std::fs::remove_file(source_path);
}

#[test]
fn the_cuda_backend_reports_a_missing_driver_without_panicking() {
    // On machines with a driver this checks the probe agrees with device discovery.
    let available = tessera_cuda::cuda_available();
    match tessera_cuda::select_device(None) {
        Ok(device) => assert!(
            available,
            "found {} but the probe says no CUDA",
            device.name
        ),
        Err(e) => {
            assert!(!available);
            let message = e.to_string();
            assert!(
                message.contains("no CUDA driver") || message.contains("no device"),
                "unclear message: {message}"
            );
        }
    }
}
