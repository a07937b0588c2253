//! `tessera explain`: the plan, footprints, memory traffic and roofline of a program.

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
