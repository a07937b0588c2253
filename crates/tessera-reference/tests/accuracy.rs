//! f64 accuracy mode against exact-order mode on f32 programs.

mod common;

use common::*;
use tessera_ir::builder::ProgramBuilder;
use tessera_ir::{BinaryOp, Border, Constant, Field, Id, MathFn, ReduceOp, ScalarType};
use tessera_plan::{Arithmetic, PlanRequest};
use tessera_reference::{ReferenceBackend, run_f64};
use tessera_runtime::Backend;

/// 1D f32 diffusion with a nonlinear term, 61 points, clamp borders.
fn program() -> (tessera_analysis::BoundProgram, Id<Field>) {
    let mut b = ProgramBuilder::new("f32_diffusion");
    b.grid(extents(&[61]));
    let u = b.field("u", ScalarType::F32);
    b.set_border(u, Border::Clamp);
    let mut s = b.stage("s");
    let (l, c, r) = (b.read(u, &[-1]), b.read(u, &[0]), b.read(u, &[1]));
    let lr = b.binary(BinaryOp::Add, l, r);
    let two = b.lit(Constant::Float(2.0));
    let c2 = b.binary(BinaryOp::Mul, two, c);
    let lap = b.binary(BinaryOp::Sub, lr, c2);
    let alpha = b.lit(Constant::Float(0.1));
    let d = b.binary(BinaryOp::Mul, alpha, lap);
    let wave = b.call(MathFn::Sin, vec![c]);
    let small = b.lit(Constant::Float(0.01));
    let w = b.binary(BinaryOp::Mul, small, wave);
    let cd = b.binary(BinaryOp::Add, c, d);
    let e = b.binary(BinaryOp::Add, cd, w);
    s.assign(u, e);
    b.finish_stage(s);
    let r = b.read(u, &[0]);
    b.reduce_after_step("total", ReduceOp::Sum, r, None, 50);
    (bound(b.finish()), u)
}

#[test]
fn f64_accuracy_is_close_to_exact_but_not_equal() {
    let (p, u) = program();
    let mut exact = init(&p);
    set(&mut exact, u, &random(21, 61));
    let mut accurate = exact.clone();
    let inputs = exact.clone();
    let exact_report = run(&p, &mut exact, 200);
    let request = PlanRequest {
        arithmetic: Arithmetic::F64,
        ..PlanRequest::default()
    };
    let mut exe = ReferenceBackend.plan_and_prepare(&p, &request).unwrap();
    let accurate_report = exe.run(&mut accurate, 0, 200, &mut ()).unwrap();
    assert_eq!(exe.describe(), "reference f64-accuracy");
    let (e, a) = (values(&exact, u), values(&accurate, u));
    let max_diff = e
        .iter()
        .zip(&a)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max);
    assert!(
        max_diff > 0.0,
        "f64 evaluation should differ from f32 somewhere"
    );
    assert!(max_diff < 1e-4, "max difference {max_diff}");
    let (te, ta) = (
        exact_report.reductions[0].value,
        accurate_report.reductions[0].value,
    );
    assert!(te != ta && (te - ta).abs() < 1e-3, "{te} vs {ta}");

    // run_f64 gives the unrounded values of the same computation.
    let (unrounded, report) = run_f64(&p, &inputs, 0, 200).unwrap();
    assert_eq!(report.reductions, accurate_report.reductions);
    let rounded: Vec<f64> = unrounded[u.index()]
        .iter()
        .map(|&v| f64::from(v as f32))
        .collect();
    assert_eq!(rounded, a);
    assert!(unrounded[u.index()].iter().zip(&a).any(|(x, y)| x != y));
}

#[test]
fn f64_accuracy_changes_nothing_for_f64_and_integer_programs() {
    let mut b = ProgramBuilder::new("ints");
    b.grid(extents(&[9]));
    let u = b.field("u", ScalarType::I32);
    let v = b.field("v", ScalarType::F64);
    b.set_border(u, Border::Periodic);
    b.set_border(v, Border::Periodic);
    let mut s = b.stage("s");
    let (l, r) = (b.read(u, &[-1]), b.read(u, &[1]));
    let e = b.binary(BinaryOp::Mul, l, r);
    let (vl, vr) = (b.read(v, &[-1]), b.read(v, &[1]));
    let third = b.lit(Constant::Float(1.0 / 3.0));
    let vs = b.binary(BinaryOp::Add, vl, vr);
    let ve = b.binary(BinaryOp::Mul, vs, third);
    s.assign(u, e).assign(v, ve);
    b.finish_stage(s);
    let p = bound(b.finish());
    let mut exact = init(&p);
    set(
        &mut exact,
        u,
        &[3.0, -7.0, 11.0, 1000.0, 5.0, 2.0, -1.0, 9.0, 4.0],
    );
    set(&mut exact, v, &random(2, 9));
    let inputs = exact.clone();
    run(&p, &mut exact, 6);
    let (unrounded, _) = run_f64(&p, &inputs, 0, 6).unwrap();
    assert_eq!(unrounded[u.index()], values(&exact, u));
    assert_eq!(unrounded[v.index()], values(&exact, v));
}
