//! Analytic checks: finite differences exact on polynomials, conservation under periodic
//! diffusion, linear inputs.

mod common;

use common::*;
use tessera_ir::builder::ProgramBuilder;
use tessera_ir::{BinaryOp, Border, Constant, ReduceOp, ScalarType};

/// `out = sum(coefficient * u[offset]) / divisor` over the interior of a 1D f64 grid of `n`.
fn stencil_1d(n: i64, taps: &[(i32, f64)], divisor: f64, input: &[f64]) -> Vec<f64> {
    let radius = taps.iter().map(|t| t.0.abs()).max().unwrap_or(0);
    let mut b = ProgramBuilder::new("fd");
    b.grid(extents(&[n]));
    let u = b.field("u", ScalarType::F64);
    let out = b.field("out", ScalarType::F64);
    let mut s = b.stage("s");
    s.over(region(&[(i64::from(radius), n - i64::from(radius), 1)]));
    let mut acc = float(&mut b, 0.0);
    for &(offset, c) in taps {
        let r = b.read(u, &[offset]);
        let k = float(&mut b, c);
        let term = b.binary(BinaryOp::Mul, k, r);
        acc = b.binary(BinaryOp::Add, acc, term);
    }
    let d = float(&mut b, divisor);
    let e = b.binary(BinaryOp::Div, acc, d);
    s.assign(out, e);
    b.finish_stage(s);
    let p = bound(b.finish());
    let mut f = init(&p);
    set(&mut f, u, input);
    run(&p, &mut f, 1);
    values(&f, out)[radius as usize..(n - i64::from(radius)) as usize].to_vec()
}

#[test]
fn fourth_order_first_derivative_is_exact_on_quartics() {
    // p(x) = 3x^4 - 2x^3 + x - 5 on x = 0..17, h = 1: p'(x) = 12x^3 - 6x^2 + 1.
    let p = |x: f64| 3.0 * x.powi(4) - 2.0 * x.powi(3) + x - 5.0;
    let input: Vec<f64> = (0..17).map(|x| p(f64::from(x))).collect();
    let taps = [(-2, 1.0), (-1, -8.0), (1, 8.0), (2, -1.0)];
    let got = stencil_1d(17, &taps, 12.0, &input);
    let want: Vec<f64> = (2..15)
        .map(|x| 12.0 * f64::from(x).powi(3) - 6.0 * f64::from(x).powi(2) + 1.0)
        .collect();
    assert_eq!(got, want);
}

#[test]
fn second_order_second_derivative_is_exact_on_quadratics() {
    let input: Vec<f64> = (0..11)
        .map(|x| 7.0 * f64::from(x * x) - 3.0 * f64::from(x) + 2.0)
        .collect();
    let got = stencil_1d(11, &[(-1, 1.0), (0, -2.0), (1, 1.0)], 1.0, &input);
    assert_eq!(got, vec![14.0; 9]);
}

#[test]
fn the_5_point_laplacian_of_a_2d_quadratic_is_constant() {
    let (ny, nx) = (9usize, 12usize);
    let mut b = ProgramBuilder::new("lap");
    b.grid(extents(&[ny as i64, nx as i64]));
    let u = b.field("u", ScalarType::F64);
    let out = b.field("out", ScalarType::F64);
    let mut s = b.stage("s");
    s.over(region(&[(1, ny as i64 - 1, 1), (1, nx as i64 - 1, 1)]));
    let c = b.read(u, &[0, 0]);
    let mut acc = b.read(u, &[-1, 0]);
    for off in [[1, 0], [0, -1], [0, 1]] {
        let r = b.read(u, &off);
        acc = b.binary(BinaryOp::Add, acc, r);
    }
    let four = float(&mut b, 4.0);
    let c4 = b.binary(BinaryOp::Mul, four, c);
    let e = b.binary(BinaryOp::Sub, acc, c4);
    s.assign(out, e);
    b.finish_stage(s);
    let p = bound(b.finish());
    let mut f = init(&p);
    let q = |y: f64, x: f64| 2.0 * x * x + 3.0 * y * y - x * y + 5.0 * x;
    set(
        &mut f,
        u,
        &(0..ny * nx)
            .map(|i| q((i / nx) as f64, (i % nx) as f64))
            .collect::<Vec<_>>(),
    );
    poison(&mut f, out);
    run(&p, &mut f, 1);
    let got = values(&f, out);
    for y in 1..ny - 1 {
        for x in 1..nx - 1 {
            assert_eq!(got[y * nx + x], 10.0, "({y}, {x})");
        }
    }
    assert!(
        got[0].is_nan(),
        "points outside the region keep their (poisoned) values"
    );
}

#[test]
fn periodic_diffusion_conserves_the_sum() {
    let mut b = ProgramBuilder::new("diffuse");
    b.grid(extents(&[17, 23]));
    let u = b.field("u", ScalarType::F64);
    b.set_border(u, Border::Periodic);
    let mut s = b.stage("s");
    let c = b.read(u, &[0, 0]);
    let mut acc = b.read(u, &[-1, 0]);
    for off in [[1, 0], [0, -1], [0, 1]] {
        let r = b.read(u, &off);
        acc = b.binary(BinaryOp::Add, acc, r);
    }
    let four = float(&mut b, 4.0);
    let c4 = b.binary(BinaryOp::Mul, four, c);
    let lap = b.binary(BinaryOp::Sub, acc, c4);
    let alpha = b.lit(Constant::Float(0.2));
    let d = b.binary(BinaryOp::Mul, alpha, lap);
    let e = b.binary(BinaryOp::Add, c, d);
    s.assign(u, e);
    b.finish_stage(s);
    let r = b.read(u, &[0, 0]);
    b.reduce_after_step("total", ReduceOp::Sum, r, None, 10);
    let p = bound(b.finish());
    let mut f = init(&p);
    let data: Vec<f64> = random(5, 17 * 23).iter().map(|v| v + 1.0).collect();
    let before: f64 = data.iter().sum();
    set(&mut f, u, &data);
    let report = run(&p, &mut f, 50);
    assert_eq!(report.reductions.len(), 5);
    for r in &report.reductions {
        assert!(
            (r.value - before).abs() <= 1e-11 * before.abs(),
            "{} vs {before}",
            r.value
        );
    }
    // It did diffuse: the spread shrank.
    let spread = |v: &[f64]| {
        v.iter().cloned().fold(f64::MIN, f64::max) - v.iter().cloned().fold(f64::MAX, f64::min)
    };
    assert!(spread(&values(&f, u)) < 0.5 * spread(&data));
}

#[test]
fn averaging_a_linear_input_leaves_the_interior_unchanged() {
    // (u[-1] + u + u[1]) / 3 of u = 0.5 x + 2 is u itself inside; clamp changes the edges.
    let mut b = ProgramBuilder::new("avg");
    b.grid(extents(&[8]));
    let u = b.field("u", ScalarType::F64);
    b.set_border(u, Border::Clamp);
    let mut s = b.stage("s");
    let (l, c, r) = (b.read(u, &[-1]), b.read(u, &[0]), b.read(u, &[1]));
    let lc = b.binary(BinaryOp::Add, l, c);
    let sum = b.binary(BinaryOp::Add, lc, r);
    let three = float(&mut b, 3.0);
    let e = b.binary(BinaryOp::Div, sum, three);
    s.assign(u, e);
    b.finish_stage(s);
    let p = bound(b.finish());
    let mut f = init(&p);
    let input: Vec<f64> = (0..8).map(|x| 0.5 * f64::from(x) + 2.0).collect();
    set(&mut f, u, &input);
    run(&p, &mut f, 1);
    let got = values(&f, u);
    for x in 1..7 {
        assert!((got[x] - input[x]).abs() < 1e-15, "{x}");
    }
    assert_eq!(got[0], (2.0 + 2.0 + 2.5) / 3.0);
    assert_eq!(got[7], (5.0 + 5.5 + 5.5) / 3.0);
}
