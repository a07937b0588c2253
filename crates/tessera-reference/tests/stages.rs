//! Stage semantics: domains (sub-domains, strides, single indices), stage sequences, multiple
//! outputs, Jacobi reads, lets, select and statement order.

mod common;

use common::*;
use tessera_ir::builder::ProgramBuilder;
use tessera_ir::{BinaryOp, Border, Range, Region, ScalarType, SizeExpr, Span};

#[test]
fn a_sub_domain_stage_leaves_other_points_unchanged() {
    let mut b = ProgramBuilder::new("sub");
    let n = b.param("N", ScalarType::I64, tessera_ir::Constant::Int(5));
    b.grid(vec![SizeExpr::Param(n), SizeExpr::Const(4)]);
    let u = b.field("u", ScalarType::F64);
    let mut s = b.stage("s");
    let lo = SizeExpr::Const(1);
    let hi = SizeExpr::Binary(
        tessera_ir::SizeOp::Sub,
        Box::new(SizeExpr::Param(n)),
        Box::new(SizeExpr::Const(1)),
    );
    s.over(Region {
        ranges: vec![
            Range::Span {
                lo: Some(lo),
                hi: Some(hi),
                stride: 1,
            },
            Range::Span {
                lo: Some(SizeExpr::Const(2)),
                hi: None,
                stride: 1,
            },
        ],
        span: Span::NONE,
    });
    let here = b.read(u, &[0, 0]);
    let hundred = float(&mut b, 100.0);
    let v = bin(&mut b, BinaryOp::Add, here, hundred);
    s.assign(u, v);
    b.finish_stage(s);
    let p = bound(b.finish());
    let mut f = init(&p);
    set(&mut f, u, &(0..20).map(f64::from).collect::<Vec<_>>());
    run(&p, &mut f, 1);
    let want: Vec<f64> = (0..20)
        .map(|i| {
            let (y, x) = (i / 4, i % 4);
            f64::from(i)
                + if (1..4).contains(&y) && x >= 2 {
                    100.0
                } else {
                    0.0
                }
        })
        .collect();
    assert_eq!(values(&f, u), want);
}

#[test]
fn a_strided_region_updates_every_sth_index_only() {
    let mut b = ProgramBuilder::new("red_black");
    b.grid(extents(&[7, 8]));
    let u = b.field("u", ScalarType::I32);
    let mut s = b.stage("s");
    s.over(region(&[(1, 7, 2), (0, 7, 3)]));
    let one = int(&mut b, 1);
    s.assign(u, one);
    b.finish_stage(s);
    let p = bound(b.finish());
    let mut f = init(&p);
    run(&p, &mut f, 1);
    let got = values(&f, u);
    for y in 0..7 {
        for x in 0..8 {
            let want = if y % 2 == 1 && x % 3 == 0 && x < 7 {
                1.0
            } else {
                0.0
            };
            assert_eq!(got[y * 8 + x], want, "({y}, {x})");
        }
    }
}

#[test]
fn a_single_index_region_updates_one_row() {
    let mut b = ProgramBuilder::new("row");
    b.grid(extents(&[3, 4]));
    let u = b.field("u", ScalarType::F32);
    let mut s = b.stage("s");
    s.over(Region {
        ranges: vec![Range::Index(SizeExpr::Const(2)), Range::all()],
        span: Span::NONE,
    });
    let x = b.coord(1);
    let xf = b.cast(ScalarType::F32, x);
    s.assign(u, xf);
    b.finish_stage(s);
    let p = bound(b.finish());
    let mut f = init(&p);
    set(&mut f, u, &[-1.0; 12]);
    run(&p, &mut f, 1);
    let mut want = vec![-1.0; 8];
    want.extend([0.0, 1.0, 2.0, 3.0]);
    assert_eq!(values(&f, u), want);
}

#[test]
fn a_later_stage_sees_the_earlier_stages_output() {
    let mut b = ProgramBuilder::new("two");
    b.grid(extents(&[4]));
    let u = b.field("u", ScalarType::F64);
    b.set_border(u, Border::Periodic);
    let v = b.field("v", ScalarType::F64);
    let mut s1 = b.stage("first");
    let here = b.read(u, &[0]);
    let one = float(&mut b, 1.0);
    let e = bin(&mut b, BinaryOp::Add, here, one);
    s1.assign(u, e);
    b.finish_stage(s1);
    let mut s2 = b.stage("second");
    let right = b.read(u, &[1]);
    let two = float(&mut b, 2.0);
    let e = bin(&mut b, BinaryOp::Mul, right, two);
    s2.assign(v, e);
    b.finish_stage(s2);
    let p = bound(b.finish());
    let mut f = init(&p);
    set(&mut f, u, &[1.0, 2.0, 3.0, 4.0]);
    poison(&mut f, v);
    run(&p, &mut f, 1);
    assert_eq!(values(&f, u), vec![2.0, 3.0, 4.0, 5.0]);
    assert_eq!(values(&f, v), vec![6.0, 8.0, 10.0, 4.0]);
}

#[test]
fn a_stage_with_two_outputs_swaps_them() {
    let mut b = ProgramBuilder::new("swap");
    b.grid(extents(&[3]));
    let a = b.field("a", ScalarType::I64);
    let c = b.field("c", ScalarType::I64);
    let mut s = b.stage("s");
    let ra = b.read(a, &[0]);
    let rc = b.read(c, &[0]);
    s.assign(a, rc).assign(c, ra);
    b.finish_stage(s);
    let p = bound(b.finish());
    let mut f = init(&p);
    set(&mut f, a, &[1.0, 2.0, 3.0]);
    set(&mut f, c, &[7.0, 8.0, 9.0]);
    run(&p, &mut f, 1);
    assert_eq!(values(&f, a), vec![7.0, 8.0, 9.0]);
    assert_eq!(values(&f, c), vec![1.0, 2.0, 3.0]);
}

#[test]
fn reads_within_a_stage_see_pre_stage_values() {
    // u = u[-1] + u[1] with periodic borders: a Gauss-Seidel sweep would give other values.
    let mut b = ProgramBuilder::new("jacobi");
    b.grid(extents(&[5]));
    let u = b.field("u", ScalarType::I32);
    b.set_border(u, Border::Periodic);
    let mut s = b.stage("s");
    let l = b.read(u, &[-1]);
    let r = b.read(u, &[1]);
    let e = bin(&mut b, BinaryOp::Add, l, r);
    s.assign(u, e);
    b.finish_stage(s);
    let p = bound(b.finish());
    let mut f = init(&p);
    set(&mut f, u, &[1.0, 2.0, 3.0, 4.0, 5.0]);
    run(&p, &mut f, 1);
    assert_eq!(values(&f, u), vec![7.0, 4.0, 6.0, 8.0, 5.0]);
    run(&p, &mut f, 1);
    assert_eq!(values(&f, u), vec![9.0, 13.0, 12.0, 11.0, 15.0]);
}

#[test]
fn lets_bind_values_used_by_later_statements() {
    let mut b = ProgramBuilder::new("lets");
    b.grid(extents(&[3]));
    let u = b.field("u", ScalarType::F64);
    b.set_border(u, Border::Clamp);
    let mut s = b.stage("s");
    let l = b.read(u, &[-1]);
    let r = b.read(u, &[1]);
    let sum = bin(&mut b, BinaryOp::Add, l, r);
    let local = b.bind(&mut s, "sum", sum);
    let one = float(&mut b, 1.0);
    let plus = bin(&mut b, BinaryOp::Add, local, one);
    let second = b.bind(&mut s, "plus", plus);
    let e = bin(&mut b, BinaryOp::Mul, local, second);
    s.assign(u, e);
    b.finish_stage(s);
    let p = bound(b.finish());
    let mut f = init(&p);
    set(&mut f, u, &[1.0, 2.0, 4.0]);
    run(&p, &mut f, 1);
    // sums: 1+2, 1+4, 2+4
    assert_eq!(values(&f, u), vec![12.0, 30.0, 42.0]);
}

#[test]
fn select_chooses_per_point_and_evaluates_both_sides() {
    let mut b = ProgramBuilder::new("select");
    b.grid(extents(&[4]));
    let u = b.field("u", ScalarType::I32);
    let out = b.field("out", ScalarType::I32);
    let mut s = b.stage("s");
    let here = b.read(u, &[0]);
    let two = int(&mut b, 2);
    let cond = bin(&mut b, BinaryOp::Gt, here, two);
    let here2 = b.read(u, &[0]);
    let zero = int(&mut b, 0);
    // The other side divides by zero, which is defined (0) and must not disturb the result.
    let div = bin(&mut b, BinaryOp::Div, here2, zero);
    let neg = b.unary(tessera_ir::UnaryOp::Neg, here2);
    let other = bin(&mut b, BinaryOp::Add, neg, div);
    let e = b.select(cond, here, other);
    s.assign(out, e);
    b.finish_stage(s);
    let p = bound(b.finish());
    let mut f = init(&p);
    set(&mut f, u, &[1.0, 2.0, 3.0, 4.0]);
    poison(&mut f, out);
    run(&p, &mut f, 1);
    assert_eq!(values(&f, out), vec![-1.0, -2.0, 3.0, 4.0]);
}

#[test]
fn the_last_assignment_to_a_field_wins_and_reads_stay_pre_stage() {
    let mut b = ProgramBuilder::new("twice");
    b.grid(extents(&[2]));
    let u = b.field("u", ScalarType::F64);
    let mut s = b.stage("s");
    let here = b.read(u, &[0]);
    let one = float(&mut b, 1.0);
    let e1 = bin(&mut b, BinaryOp::Add, here, one);
    let here2 = b.read(u, &[0]);
    let ten = float(&mut b, 10.0);
    let e2 = bin(&mut b, BinaryOp::Mul, here2, ten);
    s.assign(u, e1).assign(u, e2);
    b.finish_stage(s);
    let p = bound(b.finish());
    let mut f = init(&p);
    set(&mut f, u, &[1.0, 2.0]);
    run(&p, &mut f, 1);
    assert_eq!(values(&f, u), vec![10.0, 20.0]);
}
