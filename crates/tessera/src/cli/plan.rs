//! `tessera plan`: the plan a run with these flags would use — one line, or (`--json`) a
//! plan file that `tessera run --plan` replays exactly.

use tessera::Error;

use super::args::PlanArgs;
use super::planning;

/// Prints the plan.
pub fn plan(args: &PlanArgs) -> Result<i32, Error> {
    let session = args.program.load()?;
    let planned = planning::plan_run(&session, &args.exec)?;
    if args.json {
        println!("{}", planned.plan.to_json());
    } else {
        println!(
            "{}: {} on {}: {}/{}{}",
            session.name(),
            session.updated_types_text(),
            session.grid_text(),
            planned.name,
            planned.plan.describe(),
            if planned.tuned.is_some() {
                " (tuned)"
            } else {
                ""
            }
        );
    }
    Ok(0)
}
