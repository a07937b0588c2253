//! `tessera emit`: the code a backend generates for its plan — the printed IR (`reference`),
//! the generated C (`cpu`), the CUDA / OpenCL kernels (`cuda`, `opencl`, with those features;
//! planned for a typical GPU unless `--device` names one, so no device is needed), or with
//! `--ir` the program's checked IR whatever the backend.

use tessera::runtime::Source;
use tessera::{DeviceSelection, Error};

use super::args::EmitArgs;
use super::planning::{self, DefaultBackend};

/// Prints (or writes into `-o DIR`, created when missing) the code the backend would run.
pub fn emit(args: &EmitArgs) -> Result<i32, Error> {
    let session = args.program.load()?;
    let source = if args.ir {
        Source {
            text: tessera::ir::print_program(session.bound().program()),
            extension: "tess",
        }
    } else {
        let planned = planning::plan(
            &session,
            &args.exec,
            DefaultBackend::Named("reference"),
            DeviceSelection::Typical,
        )?;
        planned
            .backend
            .emit(session.bound(), &planned.plan, &planned.device)?
    };
    match &args.out_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|source| tessera_io::IoError::Write {
                path: dir.clone(),
                source,
            })?;
            let path = dir.join(format!("{}.{}", session.name(), source.extension));
            tessera_io::write_text(&path, &source.text)?;
            println!("wrote {}", path.display());
        }
        None => print!("{}", source.text),
    }
    Ok(0)
}
