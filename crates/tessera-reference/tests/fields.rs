//! Initial values and struct/vector fields.

mod common;

use common::*;
use tessera_ir::builder::ProgramBuilder;
use tessera_ir::{BinaryOp, Border, Constant, MathFn, ScalarType};
use tessera_reference::{initial_fields, initialize};

/// A 3x4 program whose `u: f32` starts at `exp(-0.5 * f32(y * N + x))` and `w: i32` at `t0 + x`.
fn program_with_inits() -> (
    tessera_analysis::BoundProgram,
    [tessera_ir::Id<tessera_ir::Field>; 3],
) {
    let mut b = ProgramBuilder::new("inits");
    let n = b.param("N", ScalarType::I64, Constant::Int(4));
    let t0 = b.param("t0", ScalarType::I32, Constant::Int(7));
    b.grid(vec![
        tessera_ir::SizeExpr::Const(3),
        tessera_ir::SizeExpr::Param(n),
    ]);
    let u = b.field("u", ScalarType::F32);
    let w = b.field("w", ScalarType::I32);
    let z = b.field("z", ScalarType::F64);
    let (y, x) = (b.coord(0), b.coord(1));
    let np = b.param_value(n);
    let yn = b.binary(BinaryOp::Mul, y, np);
    let lin = b.binary(BinaryOp::Add, yn, x);
    let linf = b.cast(ScalarType::F32, lin);
    let half = b.lit(Constant::Float(-0.5));
    let arg = b.binary(BinaryOp::Mul, half, linf);
    let e = b.call(MathFn::Exp, vec![arg]);
    b.set_init(u, e);
    let t0v = b.param_value(t0);
    let x2 = b.coord(1);
    let wi = b.binary(BinaryOp::Add, t0v, x2); // i64, converted to i32 by the assignment
    b.set_init(w, wi);
    (bound(b.finish()), [u, w, z])
}

#[test]
fn initial_values_are_evaluated_at_every_point() {
    let (p, [u, w, z]) = program_with_inits();
    let f = initial_fields(&p, &[]).unwrap();
    let want_u: Vec<f64> = (0..12)
        .map(|i| f64::from((-0.5f32 * i as f32).exp()))
        .collect();
    assert_eq!(values(&f, u), want_u);
    assert_eq!(
        values(&f, w),
        (0..12).map(|i| f64::from(7 + i % 4)).collect::<Vec<_>>()
    );
    assert_eq!(values(&f, z), vec![0.0; 12]);
}

#[test]
fn given_fields_are_zero_filled_and_initialize_fills_one_field() {
    let (p, [u, w, _]) = program_with_inits();
    let mut f = initial_fields(&p, &[true, false, false]).unwrap();
    assert_eq!(values(&f, u), vec![0.0; 12]);
    assert_eq!(values(&f, w)[1], 8.0);
    initialize(&p, &mut f, u.index());
    assert_eq!(values(&f, u)[0], 1.0);
}

#[test]
fn struct_and_vector_components_are_separate_fields() {
    let mut b = ProgramBuilder::new("groups");
    b.grid(extents(&[4]));
    let e = b.group("E", &[("ex", ScalarType::F64), ("ey", ScalarType::F64)]);
    let v = b.group(
        "V",
        &[
            ("x", ScalarType::F32),
            ("y", ScalarType::F32),
            ("z", ScalarType::F32),
        ],
    );
    for &c in e.iter().chain(&v) {
        b.set_border(c, Border::Periodic);
    }
    let mut s = b.stage("rotate");
    // E.ex = E.ey[1]; E.ey = E.ex[-1]; V.x = V.y + V.z; V.y = V.z; V.z = V.x
    let r = b.read(e[1], &[1]);
    s.assign(e[0], r);
    let r = b.read(e[0], &[-1]);
    s.assign(e[1], r);
    let (vy, vz) = (b.read(v[1], &[0]), b.read(v[2], &[0]));
    let sum = b.binary(BinaryOp::Add, vy, vz);
    s.assign(v[0], sum);
    s.assign(v[1], vz);
    let vx = b.read(v[0], &[0]);
    s.assign(v[2], vx);
    b.finish_stage(s);
    let p = bound(b.finish());
    let mut f = init(&p);
    set(&mut f, e[0], &[1.0, 2.0, 3.0, 4.0]);
    set(&mut f, e[1], &[10.0, 20.0, 30.0, 40.0]);
    set(&mut f, v[0], &[1.0; 4]);
    set(&mut f, v[1], &[2.0; 4]);
    set(&mut f, v[2], &[3.0; 4]);
    run(&p, &mut f, 1);
    assert_eq!(values(&f, e[0]), vec![20.0, 30.0, 40.0, 10.0]);
    assert_eq!(values(&f, e[1]), vec![4.0, 1.0, 2.0, 3.0]);
    assert_eq!(values(&f, v[0]), vec![5.0; 4]);
    assert_eq!(values(&f, v[1]), vec![3.0; 4]);
    assert_eq!(values(&f, v[2]), vec![1.0; 4]);
    assert_eq!(p.program().fields[v[2]].name, "V.z");
}
