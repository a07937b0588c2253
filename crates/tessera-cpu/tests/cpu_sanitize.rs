//! The small matrix under AddressSanitizer + UndefinedBehaviorSanitizer.
//!
//! Run with `cargo test -p tessera-cpu --test cpu_sanitize -- --ignored`: the test re-runs
//! itself in a child process with the ASan runtime preloaded (`LD_PRELOAD=$(cc
//! -print-file-name=libasan.so)`, `ASAN_OPTIONS=detect_leaks=0`), where kernels are built
//! with `tessera_jit::SANITIZER_FLAGS`; any report aborts the child and fails the test.

mod common;

use std::process::Command;

use common::*;
use tessera_testkit::{Failures, Subject, case};

const CHILD: &str = "TESSERA_CPU_SANITIZE_CHILD";

fn sanitized_matrix() {
    let mut backend = backend();
    let flags = tessera_jit::SANITIZER_FLAGS.iter().map(|f| f.to_string());
    backend.compile.extra_flags.extend(flags);
    backend
        .compile
        .extra_flags
        .push("-fno-sanitize-recover=all".into());
    let mut failures = Failures::new();
    let exact_cases: [(&str, &[usize]); 9] = [
        ("star2d2r", &[13, 8]),
        ("box3d1r", &[4, 5, 6]),
        ("periodic2d", &[9, 10]),
        ("mirror2d", &[5, 4]),
        ("constant3d", &[5, 4, 7]),
        ("fdtd2d", &[9, 11]),
        ("rician", &[8, 9]),
        ("strided", &[12, 17]),
        ("star1d2r", &[23]),
    ];
    for (name, size) in exact_cases {
        let subject = Subject::new(name, case(name).bind_extents(size, &[]), 5, 5);
        let dims = size.len();
        let mut requests = vec![
            exact("naive", None, None, 1),
            exact("parallel", None, None, 2),
            exact("blocked", Some(vec![3; dims]), None, 2),
            exact("overlapped", Some(vec![4; dims]), Some(2), 2),
            exact("overlapped", Some(vec![3; dims]), Some(7), 3),
        ];
        if tessera_plan::cpu::wavefront_unsupported(&subject.bound).is_none() {
            requests.push(exact("wavefront", Some(vec![3; dims]), Some(3), 2));
            requests.push(exact("wavefront", None, Some(7), 3));
        }
        for request in requests {
            failures.record(
                subject
                    .plan(&backend, &request)
                    .and_then(|plan| subject.check_exact(&backend, &plan)),
            );
        }
    }
    // Non-exact code: the column sums of box-shaped stages read whole row chunks, or whole
    // vectors on shifted lanes when the rows are long enough.
    // Boxes of reach 1 on the f32 lanes of the target.
    let f32_lanes = test_isa().lanes(tessera_ir::ScalarType::F32);
    let lane_row = tessera_plan::reuse::MIN_LANE_ROW_VECTORS_PER_REACH * f32_lanes + 3;
    let relaxed_cases: Vec<(&str, Vec<usize>, f64)> = vec![
        ("box3d1r", vec![4, 5, 6], 1e-5),
        ("box3d1r", vec![3, 4, lane_row], 1e-5),
        ("box2d1r", vec![5, lane_row], 1e-5),
        ("benchmarks/gaussian2d", vec![9], 1e-5),
        ("periodic2d", vec![9, 10], 1e-13),
    ];
    for (name, size, tolerance) in relaxed_cases {
        let bound = case(name).bind_extents(&size, &[]);
        let dims = bound.extents.len();
        let subject = Subject::new(name, bound, 5, 5);
        let mut requests = vec![
            exact("parallel", None, None, 2),
            exact("overlapped", Some(vec![3; dims]), Some(2), 2),
        ];
        if tessera_plan::cpu::wavefront_unsupported(&subject.bound).is_none() {
            requests.push(exact("wavefront", Some(vec![3; dims]), Some(3), 2));
        }
        for request in requests {
            failures.record(
                subject
                    .plan(&backend, &relaxed(request))
                    .and_then(|plan| subject.check_close(&backend, &plan, tolerance)),
            );
        }
    }
    failures.assert_none("the sanitized matrix");
}

#[test]
#[ignore = "needs the ASan runtime preloaded; run with --ignored (it starts its own child process)"]
fn small_matrix_under_address_and_undefined_behaviour_sanitizers() {
    if std::env::var_os(CHILD).is_some() {
        sanitized_matrix();
        return;
    }
    let asan =
        tessera_jit::asan_runtime_path(&backend().compile).expect("the compiler ships libasan.so");
    let output = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--ignored",
            "--exact",
            "small_matrix_under_address_and_undefined_behaviour_sanitizers",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .env("LD_PRELOAD", asan)
        .env("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=1")
        .env("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")
        .output()
        .expect("the child starts");
    let log = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "sanitized run failed:\n{log}");
    assert!(
        log.contains("1 passed"),
        "the child did not run the matrix:\n{log}"
    );
}
