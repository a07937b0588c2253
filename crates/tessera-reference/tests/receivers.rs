//! Receivers: a field's values at fixed points after the steps `t` with `(t + 1) % every == 0`,
//! in the field's type; points given with the run; points outside the grid refused.

mod common;

use common::*;
use tessera_ir::builder::ProgramBuilder;
use tessera_ir::{BinaryOp, ReceiverPoints, ScalarType};
use tessera_plan::PlanRequest;
use tessera_reference::ReferenceBackend;
use tessera_runtime::{Backend, Buffer};

/// `u = u + x + 10 y + 1` (i64) on a 3x4 grid, with receivers `a` (two fixed points, every 2
/// steps) and `b` (points given with the run, every step).
fn counting() -> (
    tessera_analysis::BoundProgram,
    tessera_ir::Id<tessera_ir::Field>,
) {
    let mut b = ProgramBuilder::new("count");
    b.grid(extents(&[3, 4]));
    let u = b.field("u", ScalarType::I64);
    let mut s = b.stage("s");
    let here = b.read(u, &[0, 0]);
    let (x, y) = (b.coord(1), b.coord(0));
    let ten = int(&mut b, 10);
    let one = int(&mut b, 1);
    let ten_y = bin(&mut b, BinaryOp::Mul, ten, y);
    let sum = bin(&mut b, BinaryOp::Add, here, x);
    let sum = bin(&mut b, BinaryOp::Add, sum, ten_y);
    let sum = bin(&mut b, BinaryOp::Add, sum, one);
    s.assign(u, sum);
    b.finish_stage(s);
    b.receiver(
        "a",
        u,
        ReceiverPoints::Fixed(vec![vec![0, 0], vec![2, 3]]),
        2,
    );
    b.receiver("b", u, ReceiverPoints::Input, 1);
    (bound(b.finish()), u)
}

#[test]
fn receivers_record_the_fields_values_at_their_points_after_their_steps() {
    let (p, _) = counting();
    let mut f = init(&p);
    f.receiver_points = vec![None, Some(vec![vec![1, 2]])];
    let report = run(&p, &mut f, 5);
    let a: Vec<(u64, Buffer)> = (report.receivers.iter())
        .filter(|r| r.name == "a")
        .map(|r| (r.step, r.values.clone()))
        .collect();
    // After step t, u = (t + 1) * (x + 10 y + 1): point [2, 3] gains 24 per step.
    assert_eq!(
        a,
        vec![
            (1, Buffer::from(vec![2i64, 48])),
            (3, Buffer::from(vec![4i64, 96]))
        ]
    );
    let b: Vec<Buffer> = (report.receivers.iter())
        .filter(|r| r.name == "b")
        .map(|r| r.values.clone())
        .collect();
    let expected: Vec<Buffer> = (1..=5i64).map(|k| Buffer::from(vec![13 * k])).collect();
    assert_eq!(b, expected);
    // Recordings come by step, then in declaration order.
    let order: Vec<(u64, &str)> = (report.receivers.iter())
        .map(|r| (r.step, r.name.as_str()))
        .collect();
    assert_eq!(
        order,
        [
            (0, "b"),
            (1, "a"),
            (1, "b"),
            (2, "b"),
            (3, "a"),
            (3, "b"),
            (4, "b")
        ]
    );
}

#[test]
fn a_restarted_run_records_the_steps_after_its_first() {
    let (p, _) = counting();
    let mut f = init(&p);
    f.receiver_points = vec![None, Some(vec![vec![0, 1]])];
    let report = run_from(&p, &mut f, 2, 3);
    let steps: Vec<u64> = (report.receivers.iter())
        .filter(|r| r.name == "a")
        .map(|r| r.step)
        .collect();
    assert_eq!(steps, [3]);
}

#[test]
fn missing_points_and_points_outside_the_grid_are_refused_naming_the_receiver() {
    let (p, _) = counting();
    let mut exe = ReferenceBackend
        .plan_and_prepare(&p, &PlanRequest::default())
        .unwrap();
    let mut f = init(&p);
    let error = exe.run(&mut f, 0, 1, &mut ()).unwrap_err().to_string();
    assert!(
        error.contains("receiver `b`") && error.contains("--input b=points.npy"),
        "{error}"
    );
    f.receiver_points = vec![None, Some(vec![vec![1, 2], vec![3, 0]])];
    let error = exe.run(&mut f, 0, 1, &mut ()).unwrap_err().to_string();
    assert!(
        error.contains("receiver `b` has point 1 at [3, 0] outside the grid [3, 4]"),
        "{error}"
    );
}

#[test]
fn a_written_point_outside_the_grid_is_a_bind_error() {
    let mut b = ProgramBuilder::new("outside");
    b.grid(extents(&[5]));
    let u = b.field("u", ScalarType::F32);
    b.receiver("r", u, ReceiverPoints::Fixed(vec![vec![4], vec![-1]]), 1);
    let checked = tessera_analysis::check(&b.finish()).unwrap();
    let errors = tessera_analysis::bind(std::sync::Arc::new(checked), &[]).unwrap_err();
    assert_eq!(errors[0].code, "E0270");
    assert!(
        errors[0]
            .message
            .contains("`r` has point 1 at [-1] outside the grid [5]"),
        "{}",
        errors[0].message
    );
}

#[test]
fn f64_accuracy_mode_records_in_the_fields_type() {
    let mut b = ProgramBuilder::new("third");
    b.grid(extents(&[2]));
    let u = b.field("u", ScalarType::F32);
    let mut s = b.stage("s");
    let here = b.read(u, &[0]);
    let three = float(&mut b, 3.0);
    let value = bin(&mut b, BinaryOp::Div, here, three);
    s.assign(u, value);
    b.finish_stage(s);
    b.receiver("r", u, ReceiverPoints::Fixed(vec![vec![1]]), 1);
    let p = bound(b.finish());
    let mut f = init(&p);
    set(&mut f, u, &[1.0, 1.0]);
    let request = PlanRequest {
        arithmetic: tessera_plan::Arithmetic::F64,
        ..PlanRequest::default()
    };
    let mut exe = ReferenceBackend.plan_and_prepare(&p, &request).unwrap();
    let report = exe.run(&mut f, 0, 2, &mut ()).unwrap();
    assert_eq!(
        report.receivers[1].values,
        Buffer::from(vec![(1.0f64 / 9.0) as f32])
    );
}
