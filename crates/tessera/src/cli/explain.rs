//! `tessera explain`: the program, the plan the backend would run, what the backend says of
//! it (per stage or per kernel), the traffic model and the roofline.

use tessera::Session;
use tessera::metrics::roofline_gcells_per_s;
use tessera::{DeviceSelection, Error};
use tessera_runtime::BackendError;
use tessera_runtime::memory::{available_host_bytes, bytes_text};

use super::args::ExplainArgs;
use super::bench::bandwidth_gb_s;
use super::describe::{details, headline};
use super::planning::{self, DefaultBackend, Planned};

/// Prints the description of the plan the backend would run.
pub fn explain(args: &ExplainArgs) -> Result<i32, Error> {
    let session = args.program.load()?;
    // Resolved at most once, so that a fallback is reported once.
    let default_backend = match (&args.exec.backend, &args.exec.plan) {
        (None, None) => DefaultBackend::Named(DefaultBackend::Host.resolve()),
        _ => DefaultBackend::Host,
    };
    let (planned, no_device) = match planning::plan(
        &session,
        &args.exec,
        default_backend,
        DeviceSelection::Default,
    ) {
        // Without a device at hand, explain the plan for a typical one, and say why.
        Err(Error::Backend(why @ BackendError::Unavailable(_)))
            if args.exec.device.is_none() && args.exec.plan.is_none() =>
        {
            let typical = DeviceSelection::Typical;
            let planned = planning::plan(&session, &args.exec, default_backend, typical)?;
            (planned, Some(why))
        }
        other => (other?, None),
    };
    let backend = planned.backend.as_ref();
    let explanation = backend.explain(session.bound(), &planned.plan, &planned.device)?;
    println!("{}", headline(&session));
    for line in details(&session) {
        println!("  {line}");
    }
    println!(
        "plan: {}/{}{}",
        planned.name,
        planned.plan.describe(),
        explanation.target
    );
    println!("  {}", plan_source(&planned, args.exec.uses_tuned()));
    if let Some(why) = no_device {
        println!("  note: no device: {why}");
    }
    for line in &explanation.lines {
        println!("  {line}");
    }
    println!("{}", memory_line(&session, &planned)?);
    let bytes = explanation.bytes_per_point;
    println!(
        "traffic model: {bytes:.2} bytes per point per step ({})",
        explanation.traffic_model
    );
    match bandwidth_gb_s(backend, args.bandwidth, &planned.device, args.exec.threads) {
        Ok((bandwidth, how)) => println!(
            "bandwidth: {bandwidth:.1} GB/s ({how}); roofline: {:.3} GCells/s {}",
            roofline_gcells_per_s(bandwidth, bytes),
            explanation.roofline_note
        ),
        Err(why) => println!("bandwidth: unknown ({why}; give --bandwidth GB/s)"),
    }
    Ok(0)
}

/// `memory: 1.60 GB on the host (fields ..., scratch ...), of 21.3 GB available` and whether
/// the run would be refused.
fn memory_line(session: &Session, planned: &Planned) -> Result<String, Error> {
    let estimate = planned.memory(session)?;
    let available = available_host_bytes();
    let mut line = format!("memory: {}", estimate.describe());
    if let Some(available) = available {
        line.push_str(&format!(
            "; {} available on the host",
            bytes_text(available)
        ));
    }
    if let Err(refused) = estimate.check(planned.max_memory, available) {
        line.push_str(&format!("\n  a run is refused: {refused}"));
    }
    Ok(line)
}

/// Where the plan came from: the tuning database (with what was measured: the best and the
/// runner-up against the model's plan, the backends giving no predicted speed), or the model.
fn plan_source(planned: &Planned, uses_tuned: bool) -> String {
    let Some(entry) = &planned.tuned else {
        return if uses_tuned {
            "from: the backend's model (no tuned plan for this program, size, device and arithmetic; `tessera tune` makes one)".into()
        } else {
            "from: the backend's model and the flags (flags that fix the plan, or `--no-tuned`, leave the tuning database out)".into()
        };
    };
    let grid: Vec<String> = entry.timed_grid.iter().map(usize::to_string).collect();
    let baseline = entry.baseline.gcells_per_s;
    let ratio = if baseline > 0.0 {
        entry.best.gcells_per_s / baseline
    } else {
        0.0
    };
    let runner_up = entry.runner_up.as_ref().map_or("none".to_string(), |r| {
        format!("{:.3} GCells/s ({})", r.gcells_per_s, r.plan)
    });
    format!(
        "from: the tuning database ({} candidates timed at {}, {} steps per run): best {:.3} GCells/s; runner-up {runner_up}; the model's plan {:.3} GCells/s ({}; no predicted speed, measured as the baseline); tuned/model {ratio:.2}x",
        entry.candidates,
        grid.join("x"),
        entry.steps,
        entry.best.gcells_per_s,
        baseline,
        entry.baseline.plan,
    )
}
