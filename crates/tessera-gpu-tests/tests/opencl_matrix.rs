//! The differential matrix on OpenCL (PoCL on CI): every program of the test kit's corpus x
//! plan x awkward size, in exact mode, against the reference backend — fields and reductions
//! bitwise equal (through `tessera_testkit`'s harness, which also replays every plan from its
//! JSON form).
//!
//! PoCL builds every kernel source with LLVM (about a second each) and sizes are compiled into
//! the sources, so by default each size runs two of the plans, rotating so that every size and
//! every plan of a program is covered; `TESSERA_GPU_MATRIX=full` runs every plan at every size.

use tessera_gpu_tests::availability::require_opencl;
use tessera_opencl::OpenClBackend;
use tessera_plan::gpu::GpuPlan;
use tessera_plan::{BackendPlan, Plan};
use tessera_testkit::plans::gpu_test_plans;
use tessera_testkit::{Case, Failures, Subject, case, repository_programs};

/// The plans run at size number `size`: all with `TESSERA_GPU_MATRIX=full`, else two,
/// rotating with the size (and with `offset`, so that programs of one size differ).
fn plans_at(size: usize, offset: usize) -> Vec<GpuPlan> {
    let plans = gpu_test_plans();
    if std::env::var("TESSERA_GPU_MATRIX").is_ok_and(|v| v == "full") {
        return plans;
    }
    let n = plans.len();
    (0..2)
        .map(|k| plans[(2 * (size + offset) + k) % n].clone())
        .collect()
}

/// Runs the sizes x plans of `case` on OpenCL, recording each comparison with the reference.
fn check_case(case: &Case, offset: usize, failures: &mut Failures) {
    let backend = OpenClBackend::default();
    for index in 0..case.sets.len() {
        let subject = Subject::of_case(case, index, 1000 + index as u64);
        for gpu in plans_at(index, offset) {
            let plan = Plan::new(&subject.bound, BackendPlan::Opencl(gpu));
            failures.record(subject.check_exact(&backend, &plan));
        }
    }
}

/// The matrix of the corpus program `name`.
fn matrix(name: &str) {
    if !require_opencl(&format!("opencl differential matrix ({name})")) {
        return;
    }
    let mut failures = Failures::new();
    check_case(&case(name), 0, &mut failures);
    failures.assert_none(name);
}

tessera_testkit::test_every_program!(matrix);

/// The repository's benchmarks and examples at a small size, two plans each (rotating).
#[test]
fn every_benchmark_and_example() {
    if !require_opencl("opencl differential matrix (benchmarks and examples)") {
        return;
    }
    let mut failures = Failures::new();
    for (k, case) in repository_programs().iter().enumerate() {
        check_case(case, k, &mut failures);
    }
    failures.assert_none("the repository's programs");
}
