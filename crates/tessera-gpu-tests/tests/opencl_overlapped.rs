//! Overlapped time tiling on OpenCL (PoCL on CI): every program of the test kit's corpus under
//! each overlapped test plan (T = 1 to 4), in exact mode, against the reference backend —
//! fields and reductions bitwise equal, through the test kit's harness.
//!
//! Each plan runs at one of the program's sizes (rotating, so that a program with several sizes
//! meets several), for at least 2T + 1 steps: passes of T and of fewer steps (the schedule cuts
//! passes as evenly as it can), and the single-step passes of reduction steps in between.

use tessera_gpu_tests::availability::require_opencl;
use tessera_opencl::OpenClBackend;
use tessera_plan::{BackendPlan, Plan};
use tessera_testkit::plans::overlapped_test_plans;
use tessera_testkit::{Failures, Subject, case};

/// The overlapped plans of the corpus program `name`, each at one size.
fn overlapped(name: &str) {
    if !require_opencl(&format!("opencl overlapped time tiling ({name})")) {
        return;
    }
    let case = case(name);
    let backend = OpenClBackend::default();
    let mut failures = Failures::new();
    let plans = overlapped_test_plans(&case.bind(0));
    if plans.is_empty() {
        return;
    }
    for (k, gpu) in plans.into_iter().enumerate() {
        let index = k % case.sets.len();
        let steps = case.steps.max(2 * u64::from(gpu.time_tile) + 1);
        let bound = case.bind(index);
        let label = format!("{} {:?}", case.name, bound.extents);
        let subject = Subject::new(label, bound, 2000 + k as u64, steps);
        let plan = Plan::new(&subject.bound, BackendPlan::Opencl(gpu));
        failures.record(subject.check_exact(&backend, &plan));
    }
    failures.assert_none(name);
}

tessera_testkit::test_every_program!(overlapped);
