//! `tessera bench`: prepare (timed separately), one warm-up run, then timed runs on fresh
//! copies of seeded random inputs; median time of the time loop (on the device for GPU
//! backends), GCells/s from it, host<->device transfer time apart, and the roofline bound.

use std::time::Instant;

use tessera::inputs::random_inputs;
use tessera::metrics::{gcells_per_s, roofline_gcells_per_s};
use tessera::{DeviceSelection, Error};
use tessera_runtime::{Backend, Bandwidth};

use super::args::BenchArgs;
use super::planning;

/// Benchmarks the program and prints a report (text or one JSON object).
pub fn bench(args: &BenchArgs) -> Result<i32, Error> {
    let session = args.program.load()?;
    let planned = planning::plan_run(&session, &args.exec)?;
    let backend_name = planned.name;
    let steps = args.steps.unwrap_or_else(|| session.default_steps());
    let start = Instant::now();
    let mut executable =
        session.prepare(planned.backend.as_ref(), &planned.plan, &planned.device)?;
    let prepare_seconds = start.elapsed().as_secs_f64();
    let compile_seconds = executable.compile_time().as_secs_f64();
    let (inputs, randomised) = random_inputs(&session, args.seed);

    executable.run(&mut inputs.clone(), 0, steps, &mut ())?;
    let mut seconds = Vec::with_capacity(args.reps);
    let mut transfer_seconds = Vec::with_capacity(args.reps);
    let mut steps_run = steps;
    for _ in 0..args.reps {
        let mut fields = inputs.clone();
        let report = executable.run(&mut fields, 0, steps, &mut ())?;
        seconds.push(report.compute_time.as_secs_f64());
        transfer_seconds.push(report.transfer_time.as_secs_f64());
        steps_run = report.steps;
    }
    let described = executable.describe();
    let plan = described
        .strip_prefix(backend_name)
        .map_or(described.as_str(), str::trim_start);
    seconds.sort_by(f64::total_cmp);
    transfer_seconds.sort_by(f64::total_cmp);
    let median = seconds[seconds.len() / 2];
    let transfer_median = transfer_seconds[transfer_seconds.len() / 2];
    let gcells = if median > 0.0 {
        gcells_per_s(session.bound(), steps_run, median)
    } else {
        0.0
    };
    let bytes = session.bound().traffic_bytes_per_point();
    let bandwidth = bandwidth_gb_s(
        planned.backend.as_ref(),
        args.bandwidth,
        &planned.device,
        args.exec.threads,
    );
    let roofline = bandwidth
        .as_ref()
        .ok()
        .map(|(b, _)| roofline_gcells_per_s(*b, bytes as f64));
    let fraction = roofline.filter(|r| *r > 0.0).map(|r| gcells / r);

    if args.json {
        let report = serde_json::json!({
            "program": session.name(),
            "backend": backend_name,
            "strategy": plan,
            "size": session.grid_text(),
            "types": session.updated_types_text(),
            "steps": steps_run,
            "reps": args.reps,
            "seconds": median,
            "seconds_all": seconds,
            "transfer_seconds": transfer_median,
            "transfer_seconds_all": transfer_seconds,
            "gcells_per_s": gcells,
            "compile_seconds": compile_seconds,
            "prepare_seconds": prepare_seconds,
            "bytes_per_point": bytes,
            "bandwidth_gb_s": bandwidth.as_ref().ok().map(|(b, _)| *b),
            "bandwidth_source": bandwidth.as_ref().ok().map(|(_, how)| how.clone()),
            "roofline_gcells_per_s": roofline,
            "fraction_of_roofline": fraction,
            "random_inputs": randomised,
            "exact": args.exec.exact,
        });
        println!("{report}");
        return Ok(0);
    }
    println!(
        "{}: {} ({}), {steps_run} steps, {backend_name}/{plan}",
        session.name(),
        session.grid_text(),
        session.updated_types_text()
    );
    println!(
        "  prepare: {prepare_seconds:.3} s (compilation {compile_seconds:.3} s; 0 on a cache hit)"
    );
    println!(
        "  time loop: median {median:.6} s of {} runs (min {:.6} s, max {:.6} s)",
        args.reps,
        seconds[0],
        seconds[seconds.len() - 1]
    );
    println!(
        "  transfers: median {transfer_median:.6} s per run (host<->device fields, not in the time loop)"
    );
    println!("  speed: {gcells:.3} GCells/s (from the time loop)");
    println!(
        "  traffic model: {bytes} bytes per point per step (fields read once + fields written once)"
    );
    match &bandwidth {
        Ok((b, how)) => println!("  bandwidth: {b:.1} GB/s ({how})"),
        Err(why) => println!("  bandwidth: unknown ({why}; give --bandwidth GB/s)"),
    }
    if let (Some(r), Some(f)) = (roofline, fraction) {
        println!(
            "  roofline: {r:.3} GCells/s; reached {:.1}% (time tiling can exceed 100%)",
            f * 100.0
        );
    }
    Ok(0)
}

/// The memory bandwidth in GB/s and where it came from: `given`, else the backend's
/// measurement (STREAM triad on the host, a copy on the device), or why there is none.
pub fn bandwidth_gb_s(
    backend: &dyn Backend,
    given: Option<f64>,
    device: &DeviceSelection,
    threads: Option<usize>,
) -> Result<(f64, String), String> {
    if let Some(b) = given {
        return Ok((b, "given".to_string()));
    }
    match backend.bandwidth(device, threads) {
        Ok(Bandwidth { gb_s, how }) => Ok((gb_s, how)),
        Err(e) => {
            tracing::warn!("cannot measure the memory bandwidth: {e}");
            Err(e.to_string())
        }
    }
}
