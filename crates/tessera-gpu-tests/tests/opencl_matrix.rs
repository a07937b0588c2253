//! The differential matrix on OpenCL (PoCL on CI): every example program x plan x awkward
//! size, in exact mode, against the reference backend — fields and reductions bitwise equal.
//!
//! PoCL builds every kernel source with LLVM (about a second each) and sizes are compiled into
//! the sources, so by default each size runs two of the plans, rotating so that every size and
//! every plan of a program is covered; `TESSERA_GPU_MATRIX=full` runs every plan at every size.

use tessera_codegen::kernel::{ExampleProgram, GpuPlan, example_programs, test_plans};
use tessera_gpu_tests::availability::require_opencl;
use tessera_gpu_tests::cases::{bind_program, field_names, random_fields, reference_run};
use tessera_gpu_tests::compare::{first_difference, report_difference};
use tessera_gpu_tests::programs::extra_programs;
use tessera_opencl::OpenClBackend;
use tessera_plan::{BackendPlan, DeviceSelection, Plan};
use tessera_runtime::Backend;

fn find(name: &str) -> ExampleProgram {
    example_programs()
        .into_iter()
        .chain(extra_programs())
        .find(|e| e.name == name)
        .expect("a known example")
}

/// The plans run at size number `size`: all with `TESSERA_GPU_MATRIX=full`, else two,
/// rotating with the size.
fn plans_at(size: usize) -> Vec<GpuPlan> {
    let plans = test_plans();
    if std::env::var("TESSERA_GPU_MATRIX").is_ok_and(|v| v == "full") {
        return plans;
    }
    let n = plans.len();
    (0..2).map(|k| plans[(2 * size + k) % n].clone()).collect()
}

/// Runs the sizes x plans of example `name` on OpenCL and the reference; panics listing
/// every mismatch.
fn check_program(name: &str) {
    if !require_opencl(&format!("opencl differential matrix ({name})")) {
        return;
    }
    let example = find(name);
    let mut failures = Vec::new();
    let mut cases = 0;
    for (s, params) in example.sizes.iter().enumerate() {
        let bound = bind_program(&example.program, params);
        let inputs = random_fields(&bound, 1000 + s as u64);
        let (expected, expected_report) = reference_run(&bound, &inputs, example.steps);
        for plan in plans_at(s) {
            cases += 1;
            let what = format!("{name} {params:?} {}", plan.describe());
            let plan = Plan::new(&bound, BackendPlan::Opencl(plan));
            let prepared =
                OpenClBackend::default().prepare(&bound, &plan, &DeviceSelection::Default);
            let mut executable = match prepared {
                Ok(e) => e,
                Err(e) => {
                    failures.push(format!("{what}: prepare failed: {e}"));
                    continue;
                }
            };
            let mut actual = inputs.clone();
            match executable.run(&mut actual, 0, example.steps, &mut ()) {
                Err(e) => failures.push(format!("{what}: run failed: {e}")),
                Ok(report) => {
                    let difference = first_difference(&field_names(&bound), &expected, &actual)
                        .or_else(|| report_difference(&expected_report, &report));
                    if let Some(d) = difference {
                        failures.push(format!("{what}: {d}"));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {cases} cases of `{name}` differ from the reference:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

macro_rules! matrix {
    ($($test:ident => $name:literal),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                check_program($name);
            }
        )*
    };
}

matrix! {
    j2d5pt_matches_reference => "j2d5pt",
    heat2d_periodic_matches_reference => "heat2d_periodic",
    j3d7pt_matches_reference => "j3d7pt",
    box3d_constant_matches_reference => "box3d_constant",
    fdtd2d_matches_reference => "fdtd2d",
    reductions2d_matches_reference => "reductions2d",
    life_matches_reference => "life",
    strided1d_matches_reference => "strided1d",
    star4d_matches_reference => "star4d",
    star1d_r2_constant_matches_reference => "star1d_r2_constant",
    box2d_r2_clamp_matches_reference => "box2d_r2_clamp",
    star3d_r2_periodic_matches_reference => "star3d_r2_periodic",
    rician2d_matches_reference => "rician2d",
    tv2d_matches_reference => "tv2d",
    decay_until_matches_reference => "decay_until",
}

#[test]
fn every_example_program_is_in_the_matrix() {
    let source = include_str!("opencl_matrix.rs");
    for example in example_programs().into_iter().chain(extra_programs()) {
        assert!(
            source.contains(&format!("=> \"{}\"", example.name)),
            "`{}` has no matrix test",
            example.name
        );
    }
}
