//! `tessera verify`: run a program on a backend and on the reference from the same initial
//! fields, print the comparison table and one verdict line; exit 1 when the check fails
//! (exact plans must match bitwise, other plans must agree within a tolerance).

use tessera::verify::{Comparison, Tolerance, verify_executable};
use tessera::{Error, Session};

use super::args::VerifyArgs;
use super::distributed::{self, Role};
use super::planning;
use super::run::{read_inputs, resolve_inputs};

/// What the comparison must show.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Criterion {
    /// Every value bit-identical.
    Bitwise,
    /// Every value within the tolerance.
    Within(Tolerance),
}

/// Verifies the program; returns the exit code (1 when the comparison fails its criterion).
/// With `--ranks` the run under test is distributed, every rank in this process.
pub fn verify(args: &VerifyArgs) -> Result<i32, Error> {
    let role = Role::Alone;
    distributed::check_flags(&args.exec, &args.ranks, &role)?;
    let session = args.program.load()?;
    let planned = planning::plan_run(&session, &args.exec)?;
    let inputs = resolve_inputs(&session, &args.start.inputs)?;
    let criterion = criterion(args, &session, planned.plan.is_exact());
    let mut executable =
        match distributed::prepare(&session, &planned, &args.exec, &args.ranks, &role)? {
            Some(executable) => executable,
            None => planned.prepare(&session)?,
        };
    let fields = read_inputs(&session, &inputs)?;
    let steps = args.start.steps(&session);
    let comparison = verify_executable(&session, executable.as_mut(), &fields, steps)?;
    print!("{}", comparison.describe());
    let under_test = executable.describe();
    let (line, code) = verdict(&comparison, criterion, &under_test);
    println!("{line}");
    Ok(code)
}

/// Bitwise agreement for exact plans unless `--rtol` or `--atol` is given; else the tolerance
/// of those flags, each defaulting to the program's default ([`Tolerance::default_for`]).
fn criterion(args: &VerifyArgs, session: &Session, exact: bool) -> Criterion {
    if exact && args.rtol.is_none() && args.atol.is_none() {
        return Criterion::Bitwise;
    }
    let default = Tolerance::default_for(session);
    Criterion::Within(Tolerance {
        rtol: args.rtol.unwrap_or(default.rtol),
        atol: args.atol.unwrap_or(default.atol),
    })
}

/// The verdict line for `comparison` of the plan `under_test` and the exit code: 0 when it
/// meets `criterion`, else 1 with the worst field or reduction named.
fn verdict(comparison: &Comparison, criterion: Criterion, under_test: &str) -> (String, i32) {
    let (tolerance, passed, wanted) = match criterion {
        Criterion::Bitwise => (None, comparison.is_bitwise(), "bitwise".to_string()),
        Criterion::Within(t) => (Some(t), comparison.within(t), format!("within {t}")),
    };
    if passed {
        let bitwise = if tolerance.is_some() && comparison.is_bitwise() {
            " (bitwise)"
        } else {
            ""
        };
        let line = format!(
            "{wanted}: {under_test} agrees with the reference on every field and reduction \
             after {} steps{bitwise}",
            comparison.actual_steps
        );
        return (line, 0);
    }
    let worst = comparison.worst_failure(tolerance).unwrap_or_default();
    (
        format!("FAILED {wanted}: {under_test} differs from the reference; worst: {worst}"),
        1,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdict_names_the_criterion_and_the_worst_field() {
        let text = "grid [2];\nfield u: f64 = 1.0;\nstage s { u = u * 3.0; }\n";
        let session = Session::from_text(text, "t.tess", "t", &[]).unwrap();
        let report = tessera::RunReport {
            steps: 1,
            ..Default::default()
        };
        let fields = |u: Vec<f64>| tessera::FieldSet {
            shape: vec![2],
            buffers: vec![tessera_runtime::Buffer::from(u)],
            tables: Vec::new(),
            receiver_points: Vec::new(),
        };
        let (e, a) = (fields(vec![3.0, 3.0]), fields(vec![3.0, 3.0 + 1e-9]));
        let comparison = Comparison::compare(&session, (&e, &report), (&a, &report));
        let (line, code) = verdict(&comparison, Criterion::Bitwise, "cpu naive exact");
        assert_eq!(code, 1);
        assert!(
            line.starts_with("FAILED bitwise: cpu naive exact differs from the reference; worst: field `u`: 1 of 2 cells differ"),
            "{line}"
        );
        let (line, code) = verdict(&comparison, Criterion::Within(Tolerance::F64), "cpu naive");
        assert_eq!(code, 0, "{line}");
        assert!(
            line.starts_with("within rtol=1e-6 atol=1e-12: cpu naive agrees"),
            "{line}"
        );
    }
}
