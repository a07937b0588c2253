//! `tessera explain`: the program, the plan the backend would run, what the backend says of
//! it (per stage or per kernel), the traffic model and the roofline.

use tessera::metrics::roofline_gcells_per_s;
use tessera::{DeviceSelection, Error};
use tessera_runtime::BackendError;

use super::args::ExplainArgs;
use super::bench::bandwidth_gb_s;
use super::describe::{details, headline};
use super::planning;

/// Prints the description of the plan the backend would run.
pub fn explain(args: &ExplainArgs) -> Result<i32, Error> {
    let session = args.program.load()?;
    let default_backend = tessera::default_backend_name();
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
    if let Some(why) = no_device {
        println!("  note: no device: {why}");
    }
    for line in &explanation.lines {
        println!("  {line}");
    }
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
