//! The OpenCL backend through the `Backend` interface: options, device selection, errors that
//! say what to do, resource refusals before allocation, and split runs.

use tessera_codegen::kernel::{GpuPlan, GpuStrategy, lower, print_opencl};
use tessera_gpu_tests::availability::require_opencl;
use tessera_opencl::{OpenClBackend, OpenClExecutable};
use tessera_plan::{Arithmetic, DeviceSelection, PlanError, PlanRequest, Strategy};
use tessera_runtime::{Backend, BackendError};
use tessera_testkit::compare::{first_difference, report_difference};
use tessera_testkit::{Subject, case};

/// The corpus program `name` with its size parameters set to `extents`.
fn bind(name: &str, extents: &[usize]) -> tessera_analysis::BoundProgram {
    case(name).bind_extents(extents, &[])
}

fn prepare_error(bound: &tessera_analysis::BoundProgram, options: &PlanRequest) -> BackendError {
    match OpenClBackend::default().plan_and_prepare(bound, options) {
        Ok(_) => panic!("prepare should fail with {options:?}"),
        Err(e) => e,
    }
}

#[test]
fn default_plan_and_named_strategies_match_the_reference() {
    if !require_opencl("opencl backend options") {
        return;
    }
    let subject = Subject::new("reductions2d", bind("reductions2d", &[17, 23]), 3, 4);
    let (bound, inputs) = (&subject.bound, &subject.inputs);
    let (expected, expected_report) = (&subject.expected, &subject.expected_report);
    for strategy in [
        None,
        Some(Strategy::Naive),
        Some(Strategy::Tiled),
        Some(Strategy::Streaming),
    ] {
        // A 2D sweep's block is a row: `streaming` takes no threads along y.
        let tile = match strategy {
            Some(Strategy::Streaming) => vec![1, 16],
            _ => vec![4, 16],
        };
        let options = PlanRequest {
            arithmetic: Arithmetic::Exact,
            strategy,
            tile: Some(tile),
            ..PlanRequest::default()
        };
        let mut executable = OpenClBackend::default()
            .plan_and_prepare(bound, &options)
            .expect("prepares");
        let mut fields = inputs.clone();
        let report = executable.run(&mut fields, 0, 4, &mut ()).expect("runs");
        assert_eq!(
            first_difference(&subject.field_names(), expected, &fields),
            None,
            "{strategy:?}"
        );
        assert_eq!(
            report_difference(expected_report, &report),
            None,
            "{strategy:?}"
        );
        assert!(report.plan.starts_with("opencl"), "{}", report.plan);
    }
}

#[test]
fn steps_in_one_call_equal_steps_in_several_calls() {
    if !require_opencl("opencl split runs") {
        return;
    }
    let bound = bind("reductions2d", &[9, 33]);
    let inputs = tessera_testkit::inputs::random_fields(&bound, 11);
    let options = PlanRequest::exact();
    let mut whole = inputs.clone();
    let report = OpenClBackend::default()
        .plan_and_prepare(&bound, &options)
        .unwrap()
        .run(&mut whole, 0, 5, &mut ())
        .unwrap();
    let mut split = inputs.clone();
    let mut executable = OpenClBackend::default()
        .plan_and_prepare(&bound, &options)
        .unwrap();
    let mut reductions = Vec::new();
    for (first, steps) in [(0, 2), (2, 1), (3, 2)] {
        reductions.extend(
            executable
                .run(&mut split, first, steps, &mut ())
                .unwrap()
                .reductions,
        );
    }
    let names: Vec<String> = bound
        .program()
        .fields
        .values()
        .map(|f| f.name.clone())
        .collect();
    assert_eq!(first_difference(&names, &whole, &split), None);
    assert_eq!(report.reductions, reductions);
}

#[test]
fn bad_options_and_devices_are_refused_with_what_to_do() {
    if !require_opencl("opencl option errors") {
        return;
    }
    let bound = bind("j2d5pt", &[9, 9]);
    let unknown = prepare_error(
        &bound,
        &PlanRequest {
            strategy: Some(Strategy::Blocked),
            ..PlanRequest::default()
        },
    );
    assert!(
        matches!(
            unknown,
            BackendError::Plan(PlanError::UnknownStrategy { .. })
        ) && unknown
            .to_string()
            .contains("naive, tiled, streaming, overlapped, wavefront"),
        "{unknown}"
    );
    let zero = prepare_error(
        &bound,
        &PlanRequest {
            tile: Some(vec![0, 32]),
            ..PlanRequest::default()
        },
    );
    assert!(zero.to_string().contains("at least 1"), "{zero}");
    let device = prepare_error(
        &bound,
        &PlanRequest {
            device: DeviceSelection::Named("no such accelerator".into()),
            ..PlanRequest::default()
        },
    );
    assert!(matches!(device, BackendError::Unavailable(_)), "{device}");
    assert!(
        device.to_string().contains("0:0 "),
        "the message lists the devices: {device}"
    );
    let threads = prepare_error(
        &bound,
        &PlanRequest {
            threads: Some(2),
            ..PlanRequest::default()
        },
    );
    assert!(threads.to_string().contains("--threads"), "{threads}");
    for selection in ["0:0", "0", "pthread", ""] {
        let options = PlanRequest {
            device: DeviceSelection::Named(selection.into()),
            ..PlanRequest::default()
        };
        assert!(
            OpenClBackend::default()
                .plan_and_prepare(&bound, &options)
                .is_ok(),
            "device `{selection}` should select PoCL's device"
        );
    }
}

#[test]
fn a_grid_larger_than_device_memory_is_refused_before_allocation() {
    if !require_opencl("opencl memory refusal") {
        return;
    }
    let bound = bind("box3d_constant", &[8192, 8192, 8192]);
    let error = prepare_error(&bound, &PlanRequest::default());
    let message = error.to_string();
    assert!(
        message.contains("needs") && message.contains("GiB") && message.contains("has"),
        "{message}"
    );
}

#[test]
fn a_failed_build_shows_the_log_and_saves_the_source() {
    if !require_opencl("opencl build errors") {
        return;
    }
    let bound = bind("j2d5pt", &[9, 9]);
    let program = lower(&bound, &GpuPlan::new(GpuStrategy::Naive)).unwrap();
    let broken = print_opencl(&program).replacen("__kernel", "__kernel not_a_type", 1);
    let Err(error) = OpenClExecutable::from_source(&bound, program, &broken, None) else {
        panic!("a broken source built")
    };
    let message = error.to_string();
    assert!(matches!(error, BackendError::Compile(_)), "{message}");
    let path = message
        .split("source saved to ")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .expect("a saved path");
    assert!(
        std::fs::read_to_string(path).is_ok_and(|s| s.contains("not_a_type")),
        "no source at {path}"
    );
    assert!(
        message.contains("not_a_type"),
        "the log is missing: {message}"
    );
    let _ = std::fs::remove_file(path);
}
