//! The small matrix under AddressSanitizer + UndefinedBehaviorSanitizer.
//!
//! Run with `cargo test -p tessera-cpu --test cpu_sanitize -- --ignored`: the test re-runs
//! itself in a child process with the ASan runtime preloaded (`LD_PRELOAD=$(cc
//! -print-file-name=libasan.so)`, `ASAN_OPTIONS=detect_leaks=0`), where kernels are built
//! with `tessera_jit::SANITIZER_FLAGS`; any report aborts the child and fails the test.

mod common;

use std::process::Command;

use common::*;

const CHILD: &str = "TESSERA_CPU_SANITIZE_CHILD";

fn sanitized_matrix() {
    let mut backend = backend();
    backend
        .compile
        .extra_flags
        .extend(tessera_jit::SANITIZER_FLAGS.iter().map(|f| f.to_string()));
    backend
        .compile
        .extra_flags
        .push("-fno-sanitize-recover=all".into());
    let cases: Vec<(tessera_ir::Program, Vec<usize>)> = vec![
        (star2d_r2_f64(), vec![13, 8]),
        (box3d_r1_f32(), vec![4, 5, 6]),
        (periodic2d(), vec![9, 10]),
        (mirror2d(), vec![5, 4]),
        (constant3d(), vec![5, 4, 7]),
        (fdtd2d(), vec![9, 11]),
        (rician(2), vec![8, 9]),
        (strided_i32(), vec![12, 17]),
        (star1d2(), vec![23]),
    ];
    for (program, size) in cases {
        let bound = bind_sizes(&program, &size);
        let fields = inputs(&bound, 5);
        let expected = reference(&bound, &fields, 5);
        let dims = size.len();
        let mut configurations = vec![
            exact("naive", None, None, 1),
            exact("parallel", None, None, 2),
            exact("blocked", Some(vec![3; dims]), None, 2),
            exact("overlapped", Some(vec![4; dims]), Some(2), 2),
            exact("overlapped", Some(vec![3; dims]), Some(7), 3),
        ];
        if tessera_plan::cpu::wavefront_unsupported(&bound).is_none() {
            configurations.push(exact("wavefront", Some(vec![3; dims]), Some(3), 2));
            configurations.push(exact("wavefront", None, Some(7), 3));
        }
        for options in configurations {
            let actual = run_cpu(&backend, &bound, &fields, 5, &options);
            assert_same(
                &format!("{} {options:?}", program.name),
                &bound,
                &expected,
                &actual,
            );
        }
    }
    // Non-exact code: the column sums of box-shaped stages read whole row chunks, or whole
    // vectors on shifted lanes when the rows are long enough.
    // Boxes of reach 1 on 16 f32 lanes.
    let lane_row = tessera_plan::reuse::MIN_LANE_ROW_VECTORS_PER_REACH * 16 + 3;
    let relaxed: Vec<(tessera_ir::Program, Vec<usize>, f64)> = vec![
        (box3d_r1_f32(), vec![4, 5, 6], 1e-5),
        (box3d_r1_f32(), vec![3, 4, lane_row], 1e-5),
        (box2d_r1_f32(), vec![5, lane_row], 1e-5),
        (gaussian2d_f32(), vec![7, 9], 1e-5),
        (periodic2d(), vec![9, 10], 1e-13),
    ];
    for (program, size, tolerance) in relaxed {
        let bound = bind_sizes(&program, &size);
        let fields = inputs(&bound, 5);
        let expected = reference(&bound, &fields, 5);
        let dims = size.len();
        let mut configurations = vec![
            exact("parallel", None, None, 2),
            exact("overlapped", Some(vec![3; dims]), Some(2), 2),
        ];
        if tessera_plan::cpu::wavefront_unsupported(&bound).is_none() {
            configurations.push(exact("wavefront", Some(vec![3; dims]), Some(3), 2));
        }
        for mut options in configurations {
            options.arithmetic = tessera_plan::Arithmetic::Relaxed;
            let actual = run_cpu(&backend, &bound, &fields, 5, &options);
            assert_close(
                &format!("{} {options:?}", program.name),
                &expected,
                &actual,
                tolerance,
            );
        }
    }
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
