//! The autotuner against the reference: every plan it times, and the plan it stores, runs the
//! program bitwise like the reference backend in exact mode (tuning never changes results),
//! through the test kit's differential harness.

use std::time::Duration;

use tessera::tuning::{TuneOptions, entry_for, tune, tuning_key};
use tessera::{PlanRequest, Session};
use tessera_testkit::harness::{Failures, Subject};

/// Tunes corpus program `name` on `backend` (at its first test size, exact mode, a few
/// candidates) and checks every ranked plan and the stored one against the reference.
fn tuned_plans_are_exact(backend: &str, name: &str, failures: &mut Failures) {
    let case = tessera_testkit::corpus::case(name);
    let session = Session::load(&case.file, &case.sets[0]).unwrap();
    let tuned_backend = tessera::backend(backend).unwrap();
    let base = PlanRequest::exact();
    let options = TuneOptions {
        budget: Duration::from_secs(600),
        steps: case.steps,
        reps: 1,
        max_candidates: 5,
        seed: 3,
        stop: || false,
    };
    let outcome = tune(
        &session,
        tuned_backend.as_ref(),
        &base,
        &options,
        &mut |_| {},
    )
    .unwrap();
    let key = tuning_key(&session, backend, &base).unwrap();
    let entry = entry_for(
        &session,
        &session,
        tuned_backend.as_ref(),
        &base,
        key,
        &outcome,
        1,
    )
    .unwrap();
    let subject = Subject::new(name, session.bound().clone(), 11, case.steps);
    let plans = (outcome.ranked.iter().map(|c| &c.plan)).chain([&entry.plan]);
    for plan in plans {
        failures.record(subject.check_exact(tuned_backend.as_ref(), plan));
    }
}

#[test]
fn tuning_never_changes_results() {
    let mut failures = Failures::new();
    for name in ["star2d2r", "fdtd2d", "reductions2d", "j3d7pt"] {
        tuned_plans_are_exact("cpu", name, &mut failures);
    }
    failures.assert_none("tuned plans against the reference");
}

/// The same on OpenCL (PoCL without a GPU): every timed block shape and strategy the tuner
/// kept runs bitwise like the reference.
#[cfg(feature = "opencl")]
#[test]
fn tuning_never_changes_results_on_opencl() {
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
    if !tessera_opencl::opencl_available() && !ci {
        eprintln!("skipped: no OpenCL device");
        return;
    }
    let mut failures = Failures::new();
    for name in ["star2d2r", "j3d7pt"] {
        tuned_plans_are_exact("opencl", name, &mut failures);
    }
    failures.assert_none("tuned OpenCL plans against the reference");
}
