//! `tessera emit`: the printed IR (`reference`), the generated C (`cpu`), or the CUDA / OpenCL
//! kernels (`cuda`, `opencl`, with those features) planned for a typical GPU
//! (`DeviceLimits::typical_gpu`), so no device is needed.

use tessera::{Error, Session};
use tessera_runtime::RunOptions;

use super::args::EmitArgs;
use super::usage;

/// Prints (or writes into `-o DIR`, created when missing) the code `args.backend` would run.
pub fn emit(args: &EmitArgs) -> Result<i32, Error> {
    let session = args.program.load()?;
    let options = RunOptions {
        exact: args.exact,
        strategy: args.strategy.clone(),
        tile: args.tile.as_ref().map(|t| t.0.clone()),
        time_tile: args.time_tile,
        ..RunOptions::default()
    };
    let (code, extension) = generated_code(&session, &args.backend, &options)?;
    match &args.out_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|source| tessera_io::IoError::Write {
                path: dir.clone(),
                source,
            })?;
            let path = dir.join(format!("{}.{extension}", session.name()));
            tessera_io::write_text(&path, &code)?;
            println!("wrote {}", path.display());
        }
        None => print!("{code}"),
    }
    Ok(0)
}

/// The code and its file extension.
fn generated_code(
    session: &Session,
    backend: &str,
    options: &RunOptions,
) -> Result<(String, &'static str), Error> {
    match backend {
        "reference" => Ok((tessera_ir::print_program(session.program()), "tess")),
        "cpu" => {
            let cpu = tessera_cpu::CpuBackend::default();
            let plan = cpu.plan(session.bound(), options)?;
            Ok((tessera_cpu::emit_c(session.bound(), &plan), "c"))
        }
        #[cfg(any(feature = "opencl", feature = "cuda"))]
        "cuda" | "opencl" => {
            use tessera_codegen::kernel::{DeviceLimits, print_cuda, print_opencl};
            let limits = DeviceLimits::typical_gpu();
            let plan = tessera_gpu_host::plan_for(session.bound(), options, &limits)?;
            let kernels = tessera_gpu_host::lower_for_device(session.bound(), &plan, &limits)?;
            Ok(if backend == "cuda" {
                (print_cuda(&kernels), "cu")
            } else {
                (print_opencl(&kernels), "cl")
            })
        }
        other => {
            tessera::backend(other)?;
            Err(usage(format!(
                "`tessera emit --backend {other}` needs a build with `--features {other}`"
            )))
        }
    }
}
