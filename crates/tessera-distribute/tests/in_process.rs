//! Every program of the corpus run on a grid cut into ranks, all ranks in one process, against
//! the single-process reference run: bitwise, for 2, 3 and 4 ranks, 1D and 2D cuts, 1 or 3
//! steps between exchanges, and 3 with the exchange overlapped (boundary strips first).

mod common;

use common::{Exchange, layout, layouts, subject_for};
use tessera_distribute::InProcessExecutable;
use tessera_plan::PlanRequest;
use tessera_reference::ReferenceBackend;
use tessera_runtime::Backend;
use tessera_testkit::{Failures, Subject, case};

/// Runs `name` under every layout and exchange depth with `backend`, against the reference.
fn matrix_on(name: &str, backend: &dyn Backend) {
    let case = case(name);
    let mut failures = Failures::new();
    let mut ran = 0;
    for ranks in layouts(case.bind(0).extents.len()) {
        for (every, overlap) in [(1, false), (3, false), (3, true)] {
            let exchange = Exchange { every, overlap };
            let subject = subject_for(&case, &ranks, every);
            let outcome = check(&subject, backend, &ranks, exchange);
            ran += usize::from(matches!(outcome, Ok(true)));
            failures.record(outcome.map(|_| ()));
        }
    }
    failures.assert_none(format!("{name} distributed"));
    let program = case.bind(0);
    let cut = layouts(program.extents.len());
    let scans_cut_axis = (program.program().stages.values())
        .any(|s| s.scan_axis().is_some_and(|a| cut.iter().any(|r| r[a] > 1)));
    let refusable = !program.checked().stage_read_reductions().is_empty() || scans_cut_axis;
    assert!(ran > 0 || refusable, "{name}: no layout ran");
}

/// One layout: `Ok(true)` when the run matches bitwise, `Ok(false)` when the layout is refused
/// for a feature this layer does not have yet.
fn check(
    subject: &Subject,
    backend: &dyn Backend,
    ranks: &[usize],
    exchange: Exchange,
) -> Result<bool, String> {
    let label = format!("{} ranks {ranks:?} {}", subject.label, exchange.label());
    let Some(distribution) = layout(subject, ranks, exchange, &label)? else {
        return Ok(false);
    };
    let mut executable =
        InProcessExecutable::prepare(distribution, &subject.bound, backend, &PlanRequest::exact())
            .map_err(|e| format!("{label}: {e}"))?;
    subject.check_executable(&mut executable, &label)?;
    Ok(true)
}

/// The reference backend on every rank.
fn reference_matrix(name: &str) {
    matrix_on(name, &ReferenceBackend);
}

mod reference {
    use super::reference_matrix;
    tessera_testkit::test_every_program!(reference_matrix);
}

/// The cpu backend on every rank (its default exact plan, with its own temporal blocking
/// between exchanges): one layout per program, three steps between exchanges.
fn cpu_matrix(name: &str) {
    let case = case(name);
    let dims = case.bind(0).extents.len();
    let ranks = match dims {
        1 | 2 => layouts(dims)[1].clone(),
        _ => layouts(dims)[3].clone(),
    };
    let subject = subject_for(&case, &ranks, 3);
    let backend = tessera_cpu::CpuBackend::default();
    let exchange = Exchange {
        every: 3,
        overlap: false,
    };
    check(&subject, &backend, &ranks, exchange).unwrap_or_else(|e| panic!("{e}"));
}

mod cpu {
    use super::cpu_matrix;
    tessera_testkit::test_every_program!(cpu_matrix);
}

/// Scans along the axes a decomposition leaves whole, on a grid cut along another: a rank's
/// program is checked again from the checked global one, which must keep each scan's running
/// value (checking twice once applied the scan twice).
#[test]
fn scans_along_uncut_axes_give_the_single_process_answer() {
    let text = "grid [12, 10, 9];\n\
        field u: f64 border clamp = f64((x + 2 * y + 3 * z) % 5);\n\
        field s: f64;\n\
        field m: f16 border mirror = f32((x * y + z) % 7) * 0.25;\n\
        stage a { u = 0.5 * (u[-1, 0, 0] + u[1, 0, 0]) + 0.1 * u[0, 1, 0]; }\n\
        stage b { s = scan(sum, u, z); }\n\
        stage c { m = scan(max, m + f32(s) * 0.01, x, exclusive); }\n";
    let parsed = tessera_lang::parse(text, "scans", &[]).expect("parses");
    let checked = tessera_analysis::check(&parsed.program).expect("checks");
    let bound = tessera_analysis::bind(std::sync::Arc::new(checked), &[]).expect("binds");
    let subject = Subject::new("scans [12, 10, 9]", bound, 5, 4);
    let cpu = tessera_cpu::CpuBackend::default();
    let mut failures = Failures::new();
    for backend in [&ReferenceBackend as &dyn Backend, &cpu] {
        for (every, overlap) in [(1, false), (3, true)] {
            let exchange = Exchange { every, overlap };
            let outcome = check(&subject, backend, &[1, 3, 1], exchange);
            failures.record(outcome.and_then(|ran| match ran {
                true => Ok(()),
                false => Err(format!("{}: refused", exchange.label())),
            }));
        }
    }
    failures.assert_none("scans along uncut axes");
}
