//! Without a GPU, CI still checks the CUDA code: every module the generator produces for the
//! example programs x plans compiles with NVRTC for `sm_90`, assembles with `ptxas -v`, and
//! spills nothing. The per-kernel registers and shared memory are printed as a table and
//! written to `target/tmp/ptxas-resources.txt`.

use std::fmt::Write;

use tessera_codegen::kernel::{example_programs, generate, test_plans};
use tessera_cuda::{compile_ptx, ptxas_report};
use tessera_gpu_tests::availability::require_nvrtc_and_ptxas;
use tessera_gpu_tests::cases::bind_program;
use tessera_gpu_tests::programs::extra_programs;

const ARCH: &str = "sm_90";

#[test]
fn every_cuda_module_compiles_for_sm_90_without_spills() {
    if !require_nvrtc_and_ptxas("NVRTC/ptxas module check") {
        return;
    }
    let mut table = String::from(
        "program               plan                              kernel                                    regs  smem(B)  stack(B)  spill st/ld\n",
    );
    let mut problems = Vec::new();
    let mut kernels = 0;
    for example in example_programs().into_iter().chain(extra_programs()) {
        let bound = bind_program(&example.program, &example.sizes[0]);
        for plan in test_plans() {
            let what = format!("{} {}", example.name, plan.describe());
            let (program, cuda, _) = match generate(&bound, &plan) {
                Ok(generated) => generated,
                Err(e) => {
                    problems.push(format!("{what}: does not lower: {e}"));
                    continue;
                }
            };
            for exact in [true, false] {
                let report =
                    compile_ptx(&cuda, ARCH, exact).and_then(|ptx| ptxas_report(&ptx, ARCH));
                let resources = match report {
                    Ok(r) => r,
                    Err(e) => {
                        problems.push(format!("{what} (exact: {exact}): {e}"));
                        continue;
                    }
                };
                let names: Vec<&str> = program.kernels.iter().map(|k| k.name.as_str()).collect();
                if resources.len() != names.len()
                    || !resources.iter().all(|r| names.contains(&r.name.as_str()))
                {
                    problems.push(format!(
                        "{what}: ptxas reports kernels {:?}, the program has {names:?}",
                        resources.iter().map(|r| &r.name).collect::<Vec<_>>()
                    ));
                }
                for r in &resources {
                    if r.spill_stores != 0 || r.spill_loads != 0 {
                        problems.push(format!(
                            "{what}: kernel `{}` spills ({} bytes stored, {} loaded)",
                            r.name, r.spill_stores, r.spill_loads
                        ));
                    }
                    if exact {
                        kernels += 1;
                        writeln!(
                            table,
                            "{:<21} {:<33} {:<41} {:>4} {:>8} {:>9} {:>6}/{}",
                            example.name,
                            plan.describe(),
                            r.name,
                            r.registers,
                            r.shared_bytes,
                            r.stack_bytes,
                            r.spill_stores,
                            r.spill_loads
                        )
                        .expect("writing to a string");
                    }
                }
            }
        }
    }
    println!("{table}");
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("ptxas-resources.txt");
    std::fs::write(&path, &table).expect("writing the resource table");
    println!(
        "{kernels} kernels (exact mode); table written to {}",
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
