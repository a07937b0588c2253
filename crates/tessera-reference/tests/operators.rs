//! Operators, conversions, math functions and the built-in names (coordinates, `t`,
//! parameters), each against hand-computed values or the definition in Rust.

mod common;

use common::*;
use tessera_ir::builder::ProgramBuilder;
use tessera_ir::exact_math::{
    atan2_f32, atan2_f64, cos_f32, cos_f64, exp_f32, exp_f64, log_f32, log_f64, max_f32, max_f64,
    min_f32, min_f64, pow_f32, pow_f64, sin_f32, sin_f64,
};
use tessera_ir::{BinaryOp, Constant, ExprId, MathFn, ScalarType, UnaryOp};

/// `out[i] = build(a[i], b[i])` with `a`, `b` of type `ty` and `out` of type `out_ty`.
fn apply(
    ty: ScalarType,
    out_ty: ScalarType,
    pairs: &[(f64, f64)],
    build: impl Fn(&mut ProgramBuilder, ExprId, ExprId) -> ExprId,
) -> Vec<f64> {
    let mut b = ProgramBuilder::new("op");
    b.grid(extents(&[pairs.len() as i64]));
    let fa = b.field("a", ty);
    let fb = b.field("b", ty);
    let out = b.field("out", out_ty);
    let mut s = b.stage("s");
    let ra = b.read(fa, &[0]);
    let rb = b.read(fb, &[0]);
    let e = build(&mut b, ra, rb);
    s.assign(out, e);
    b.finish_stage(s);
    let p = bound(b.finish());
    let mut f = init(&p);
    set(&mut f, fa, &pairs.iter().map(|p| p.0).collect::<Vec<_>>());
    set(&mut f, fb, &pairs.iter().map(|p| p.1).collect::<Vec<_>>());
    poison(&mut f, out);
    run(&p, &mut f, 1);
    values(&f, out)
}

fn op(ty: ScalarType, operator: BinaryOp, pairs: &[(f64, f64)]) -> Vec<f64> {
    apply(ty, ty, pairs, |b, x, y| b.binary(operator, x, y))
}

const I32_MAX: f64 = i32::MAX as f64;
const I32_MIN: f64 = i32::MIN as f64;

#[test]
fn i32_arithmetic_wraps() {
    assert_eq!(
        op(
            ScalarType::I32,
            BinaryOp::Add,
            &[(I32_MAX, 1.0), (-5.0, 3.0)]
        ),
        vec![I32_MIN, -2.0]
    );
    assert_eq!(
        op(
            ScalarType::I32,
            BinaryOp::Sub,
            &[(I32_MIN, 1.0), (3.0, 5.0)]
        ),
        vec![I32_MAX, -2.0]
    );
    assert_eq!(
        op(
            ScalarType::I32,
            BinaryOp::Mul,
            &[(65536.0, 65536.0), (-3.0, 7.0)]
        ),
        vec![0.0, -21.0]
    );
    assert_eq!(
        op(
            ScalarType::I32,
            BinaryOp::Div,
            &[(7.0, -2.0), (-7.0, 2.0), (I32_MIN, -1.0)]
        ),
        vec![-3.0, -3.0, I32_MIN]
    );
    assert_eq!(
        op(
            ScalarType::I32,
            BinaryOp::Rem,
            &[(7.0, -2.0), (-7.0, 2.0), (I32_MIN, -1.0)]
        ),
        vec![1.0, -1.0, 0.0]
    );
}

#[test]
fn i64_arithmetic_wraps() {
    let max = i64::MAX as f64; // saturates to i64::MAX when stored
    let got = op(ScalarType::I64, BinaryOp::Add, &[(max, 1.0), (1e12, 1e12)]);
    assert_eq!(got, vec![i64::MIN as f64, 2e12]);
    assert_eq!(
        op(
            ScalarType::I64,
            BinaryOp::Mul,
            &[(4294967296.0, 4294967296.0)]
        ),
        vec![0.0]
    );
}

#[test]
fn u8_arithmetic_wraps() {
    assert_eq!(
        op(ScalarType::U8, BinaryOp::Add, &[(200.0, 100.0)]),
        vec![44.0]
    );
    assert_eq!(
        op(ScalarType::U8, BinaryOp::Sub, &[(1.0, 2.0)]),
        vec![255.0]
    );
    assert_eq!(
        op(ScalarType::U8, BinaryOp::Mul, &[(16.0, 17.0)]),
        vec![16.0]
    );
    assert_eq!(
        op(ScalarType::U8, BinaryOp::Div, &[(255.0, 16.0)]),
        vec![15.0]
    );
    assert_eq!(
        op(ScalarType::U8, BinaryOp::Rem, &[(255.0, 16.0)]),
        vec![15.0]
    );
    let neg = apply(
        ScalarType::U8,
        ScalarType::U8,
        &[(1.0, 0.0), (0.0, 0.0)],
        |b, x, _| b.unary(UnaryOp::Neg, x),
    );
    assert_eq!(neg, vec![255.0, 0.0]);
}

#[test]
fn integer_division_and_remainder_by_zero_give_zero() {
    for ty in [ScalarType::U8, ScalarType::I32, ScalarType::I64] {
        assert_eq!(
            op(ty, BinaryOp::Div, &[(7.0, 0.0), (0.0, 0.0)]),
            vec![0.0, 0.0],
            "{ty}"
        );
        assert_eq!(
            op(ty, BinaryOp::Rem, &[(7.0, 0.0), (0.0, 0.0)]),
            vec![0.0, 0.0],
            "{ty}"
        );
    }
}

#[test]
fn float_arithmetic_is_ieee_in_the_elaborated_type() {
    let f32_sum = op(ScalarType::F32, BinaryOp::Add, &[(0.1, 0.2)]);
    assert_eq!(f32_sum, vec![f64::from(0.1f32 + 0.2f32)]);
    assert_eq!(
        op(ScalarType::F64, BinaryOp::Add, &[(0.1, 0.2)]),
        vec![0.1 + 0.2]
    );
    assert_eq!(
        op(ScalarType::F64, BinaryOp::Div, &[(1.0, 0.0), (-1.0, 0.0)]),
        vec![f64::INFINITY, f64::NEG_INFINITY]
    );
    // `%` is fmod: the sign of the dividend.
    assert_eq!(
        op(ScalarType::F32, BinaryOp::Rem, &[(-7.5, 2.0), (7.5, -2.0)]),
        vec![-1.5, 1.5]
    );
    assert_eq!(
        op(ScalarType::F64, BinaryOp::Sub, &[(1.0, 3.0)]),
        vec![-2.0]
    );
    assert_eq!(
        op(ScalarType::F32, BinaryOp::Mul, &[(1e30, 1e30)]),
        vec![f64::INFINITY]
    );
    let neg = apply(
        ScalarType::F64,
        ScalarType::F64,
        &[(0.0, 0.0)],
        |b, x, _| b.unary(UnaryOp::Neg, x),
    );
    assert!(neg[0] == 0.0 && neg[0].is_sign_negative());
}

#[test]
fn comparisons_follow_ieee_with_nan() {
    let pairs = [(1.0, 2.0), (2.0, 2.0), (3.0, 2.0), (f64::NAN, 1.0)];
    let table = |operator| {
        apply(ScalarType::F64, ScalarType::U8, &pairs, |b, x, y| {
            let c = b.binary(operator, x, y);
            b.cast(ScalarType::U8, c)
        })
    };
    assert_eq!(table(BinaryOp::Lt), vec![1.0, 0.0, 0.0, 0.0]);
    assert_eq!(table(BinaryOp::Le), vec![1.0, 1.0, 0.0, 0.0]);
    assert_eq!(table(BinaryOp::Gt), vec![0.0, 0.0, 1.0, 0.0]);
    assert_eq!(table(BinaryOp::Ge), vec![0.0, 1.0, 1.0, 0.0]);
    assert_eq!(table(BinaryOp::Eq), vec![0.0, 1.0, 0.0, 0.0]);
    assert_eq!(table(BinaryOp::Ne), vec![1.0, 0.0, 1.0, 1.0]);
}

#[test]
fn logic_operators_and_not() {
    let pairs = [(0.0, 0.0), (0.0, 1.0), (1.0, 0.0), (1.0, 1.0)];
    let logic = |operator| {
        apply(ScalarType::I32, ScalarType::I32, &pairs, |b, x, y| {
            let zero = b.lit(Constant::Int(0));
            let cx = b.binary(BinaryOp::Ne, x, zero);
            let cy = b.binary(BinaryOp::Ne, y, zero);
            let c = b.binary(operator, cx, cy);
            let one = b.lit(Constant::Int(1));
            let zero = b.lit(Constant::Int(0));
            b.select(c, one, zero)
        })
    };
    assert_eq!(logic(BinaryOp::And), vec![0.0, 0.0, 0.0, 1.0]);
    assert_eq!(logic(BinaryOp::Or), vec![0.0, 1.0, 1.0, 1.0]);
    let not = apply(ScalarType::I32, ScalarType::I32, &pairs, |b, x, y| {
        let c = b.binary(BinaryOp::Lt, x, y);
        let n = b.unary(UnaryOp::Not, c);
        b.cast(ScalarType::I32, n)
    });
    assert_eq!(not, vec![1.0, 0.0, 1.0, 1.0]);
}

#[test]
fn float_to_integer_casts_truncate_and_saturate() {
    let inputs = [
        (1e10, 0.0),
        (-1e10, 0.0),
        (f64::NAN, 0.0),
        (3.9, 0.0),
        (-3.9, 0.0),
        (f64::INFINITY, 0.0),
    ];
    let to = |from, target| apply(from, target, &inputs, |b, x, _| b.cast(target, x));
    assert_eq!(
        to(ScalarType::F32, ScalarType::I32),
        vec![I32_MAX, I32_MIN, 0.0, 3.0, -3.0, I32_MAX]
    );
    assert_eq!(
        to(ScalarType::F64, ScalarType::U8),
        vec![255.0, 0.0, 0.0, 3.0, 0.0, 255.0]
    );
    assert_eq!(
        to(ScalarType::F64, ScalarType::I64),
        vec![1e10, -1e10, 0.0, 3.0, -3.0, i64::MAX as f64]
    );
}

#[test]
fn integer_narrowing_wraps_and_bool_converts_to_one_or_zero() {
    let narrow = apply(
        ScalarType::I64,
        ScalarType::I32,
        &[(4294967297.0, 0.0), (-1.0, 0.0)],
        |b, x, _| b.cast(ScalarType::I32, x),
    );
    assert_eq!(narrow, vec![1.0, -1.0]);
    let to_u8 = apply(
        ScalarType::I32,
        ScalarType::U8,
        &[(257.0, 0.0), (-1.0, 0.0)],
        |b, x, _| b.cast(ScalarType::U8, x),
    );
    assert_eq!(to_u8, vec![1.0, 255.0]);
    let from_bool = apply(
        ScalarType::I32,
        ScalarType::U8,
        &[(1.0, 2.0), (2.0, 1.0)],
        |b, x, y| {
            let c = b.binary(BinaryOp::Lt, x, y);
            b.cast(ScalarType::U8, c)
        },
    );
    assert_eq!(from_bool, vec![1.0, 0.0]);
    let to_f32 = apply(
        ScalarType::F64,
        ScalarType::F32,
        &[(0.1, 0.0)],
        |b, x, _| b.cast(ScalarType::F32, x),
    );
    assert_eq!(to_f32, vec![f64::from(0.1f32)]);
}

/// Every math function on f32 and f64 against its definition (an IEEE-754 operation, or the
/// exact math library for `exp log pow sin cos atan2`).
#[test]
fn every_math_function_matches_its_definition() {
    let xs = random(7, 24);
    let ys = random(8, 24);
    let pairs: Vec<(f64, f64)> = xs
        .iter()
        .zip(&ys)
        .map(|(&x, &y)| (x * 4.0, y * 3.0))
        .collect();
    type Def64 = fn(f64, f64) -> f64;
    type Def32 = fn(f32, f32) -> f32;
    let cases: [(MathFn, Def64, Def32); 12] = [
        (MathFn::Sqrt, |a, _| a.sqrt(), |a, _| a.sqrt()),
        (MathFn::Rsqrt, |a, _| 1.0 / a.sqrt(), |a, _| 1.0 / a.sqrt()),
        (MathFn::Exp, |a, _| exp_f64(a), |a, _| exp_f32(a)),
        (MathFn::Log, |a, _| log_f64(a), |a, _| log_f32(a)),
        (MathFn::Pow, pow_f64, pow_f32),
        (MathFn::Sin, |a, _| sin_f64(a), |a, _| sin_f32(a)),
        (MathFn::Cos, |a, _| cos_f64(a), |a, _| cos_f32(a)),
        (MathFn::Atan2, atan2_f64, atan2_f32),
        (MathFn::Abs, |a, _| a.abs(), |a, _| a.abs()),
        (MathFn::Min, min_f64, min_f32),
        (MathFn::Max, max_f64, max_f32),
        (MathFn::Floor, |a, _| a.floor(), |a, _| a.floor()),
    ];
    for (function, def64, def32) in cases {
        let call = |b: &mut ProgramBuilder, x, y| {
            let args = if function.arity() == 2 {
                vec![x, y]
            } else {
                vec![x]
            };
            b.call(function, args)
        };
        let got64 = apply(ScalarType::F64, ScalarType::F64, &pairs, call);
        let got32 = apply(ScalarType::F32, ScalarType::F32, &pairs, call);
        for (k, &(x, y)) in pairs.iter().enumerate() {
            let (w64, w32) = (def64(x, y), f64::from(def32(x as f32, y as f32)));
            assert!(
                got64[k].to_bits() == w64.to_bits() || (got64[k].is_nan() && w64.is_nan()),
                "{function:?} f64 {x} {y}"
            );
            assert!(
                got32[k].to_bits() == w32.to_bits() || (got32[k].is_nan() && w32.is_nan()),
                "{function:?} f32 {x} {y}"
            );
        }
    }
}

#[test]
fn math_functions_at_hand_computed_points() {
    let f = |function: MathFn, pairs: &[(f64, f64)]| {
        apply(ScalarType::F64, ScalarType::F64, pairs, |b, x, y| {
            let args = if function.arity() == 2 {
                vec![x, y]
            } else {
                vec![x]
            };
            b.call(function, args)
        })
    };
    assert_eq!(f(MathFn::Sqrt, &[(4.0, 0.0)]), vec![2.0]);
    assert_eq!(f(MathFn::Rsqrt, &[(4.0, 0.0)]), vec![0.5]);
    assert_eq!(f(MathFn::Exp, &[(0.0, 0.0)]), vec![1.0]);
    assert_eq!(f(MathFn::Log, &[(1.0, 0.0)]), vec![0.0]);
    assert_eq!(f(MathFn::Pow, &[(2.0, 10.0)]), vec![1024.0]);
    assert_eq!(f(MathFn::Sin, &[(0.0, 0.0)]), vec![0.0]);
    assert_eq!(f(MathFn::Cos, &[(0.0, 0.0)]), vec![1.0]);
    assert_eq!(
        f(MathFn::Atan2, &[(1.0, 1.0)]),
        vec![std::f64::consts::FRAC_PI_4]
    );
    assert_eq!(f(MathFn::Abs, &[(-3.5, 0.0)]), vec![3.5]);
    assert_eq!(f(MathFn::Floor, &[(-1.5, 0.0)]), vec![-2.0]);
    // min/max ignore a NaN operand, like C's fmin/fmax.
    assert_eq!(
        f(
            MathFn::Min,
            &[(f64::NAN, 1.0), (2.0, f64::NAN), (2.0, -1.0)]
        ),
        vec![1.0, 2.0, -1.0]
    );
    assert_eq!(
        f(
            MathFn::Max,
            &[(f64::NAN, 1.0), (2.0, f64::NAN), (2.0, -1.0)]
        ),
        vec![1.0, 2.0, 2.0]
    );
}

#[test]
fn integer_abs_min_max() {
    let call = |function: MathFn, ty, pairs: &[(f64, f64)]| {
        apply(ty, ty, pairs, |b, x, y| {
            let args = if function.arity() == 2 {
                vec![x, y]
            } else {
                vec![x]
            };
            b.call(function, args)
        })
    };
    assert_eq!(
        call(MathFn::Abs, ScalarType::I32, &[(-5.0, 0.0), (I32_MIN, 0.0)]),
        vec![5.0, I32_MIN]
    );
    assert_eq!(
        call(MathFn::Min, ScalarType::I64, &[(-5.0, 3.0)]),
        vec![-5.0]
    );
    assert_eq!(
        call(MathFn::Max, ScalarType::U8, &[(200.0, 3.0)]),
        vec![200.0]
    );
}

#[test]
fn untyped_constants_take_their_context_type() {
    // u8 + 250 stays u8 and wraps.
    let wrapped = apply(ScalarType::U8, ScalarType::U8, &[(10.0, 0.0)], |b, x, _| {
        let c = b.lit(Constant::Int(250));
        b.binary(BinaryOp::Add, x, c)
    });
    assert_eq!(wrapped, vec![4.0]);
    // A float constant next to an i32 makes the operation f64.
    let half = apply(
        ScalarType::I32,
        ScalarType::F64,
        &[(3.0, 0.0)],
        |b, x, _| {
            let c = b.lit(Constant::Float(0.5));
            b.binary(BinaryOp::Mul, x, c)
        },
    );
    assert_eq!(half, vec![1.5]);
    // A float constant next to an f32 stays f32: 0.1 is rounded to f32 first.
    let f32_tenth = apply(
        ScalarType::F32,
        ScalarType::F64,
        &[(1.0, 0.0)],
        |b, x, _| {
            let c = b.lit(Constant::Float(0.1));
            b.binary(BinaryOp::Mul, x, c)
        },
    );
    assert_eq!(f32_tenth, vec![f64::from(0.1f32)]);
}

#[test]
fn mixed_types_promote_to_the_wider() {
    let mut b = ProgramBuilder::new("promote");
    b.grid(extents(&[1]));
    let a = b.field("a", ScalarType::F32);
    let c = b.field("c", ScalarType::I64);
    let out = b.field("out", ScalarType::F64);
    let mut s = b.stage("s");
    let ra = b.read(a, &[0]);
    let rc = b.read(c, &[0]);
    let e = b.binary(BinaryOp::Add, ra, rc); // f32
    s.assign(out, e);
    b.finish_stage(s);
    let p = bound(b.finish());
    let mut f = init(&p);
    set(&mut f, a, &[0.5]);
    set(&mut f, c, &[16777217.0]);
    run(&p, &mut f, 1);
    // i64 -> f32 rounds 2^24 + 1 to 2^24 before the f32 addition.
    assert_eq!(values(&f, out), vec![f64::from(16777216.0f32 + 0.5f32)]);
}

#[test]
fn coordinates_name_the_current_point() {
    let mut b = ProgramBuilder::new("coords");
    b.grid(extents(&[2, 3, 4]));
    let out = b.field("out", ScalarType::I64);
    let mut s = b.stage("s");
    let (z, y, x) = (b.coord(0), b.coord(1), b.coord(2));
    let hundred = b.lit(Constant::Int(100));
    let ten = b.lit(Constant::Int(10));
    let zz = b.binary(BinaryOp::Mul, z, hundred);
    let yy = b.binary(BinaryOp::Mul, y, ten);
    let zy = b.binary(BinaryOp::Add, zz, yy);
    let e = b.binary(BinaryOp::Add, zy, x);
    s.assign(out, e);
    b.finish_stage(s);
    let p = bound(b.finish());
    let mut f = init(&p);
    poison(&mut f, out);
    run(&p, &mut f, 1);
    let want: Vec<f64> = (0..24)
        .map(|i| f64::from((i / 12) * 100 + (i / 4 % 3) * 10 + i % 4))
        .collect();
    assert_eq!(values(&f, out), want);
}

#[test]
fn the_step_counter_counts_from_first_step() {
    let mut b = ProgramBuilder::new("steps");
    b.grid(extents(&[2]));
    let last = b.field("last", ScalarType::I64);
    let total = b.field("total", ScalarType::I64);
    let mut s = b.stage("s");
    let t = b.step();
    let here = b.read(total, &[0]);
    let sum = b.binary(BinaryOp::Add, here, t);
    s.assign(last, t).assign(total, sum);
    b.finish_stage(s);
    let p = bound(b.finish());
    let mut f = init(&p);
    run(&p, &mut f, 3);
    assert_eq!(values(&f, last), vec![2.0, 2.0]);
    assert_eq!(values(&f, total), vec![3.0, 3.0]);
    run_from(&p, &mut f, 10, 2);
    assert_eq!(values(&f, last), vec![11.0, 11.0]);
    assert_eq!(values(&f, total), vec![24.0, 24.0]);
}

#[test]
fn parameters_take_their_default_or_bound_value() {
    let build = || {
        let mut b = ProgramBuilder::new("params");
        b.grid(extents(&[1]));
        let alpha = b.param("alpha", ScalarType::F32, Constant::Float(0.1));
        let k = b.param("k", ScalarType::I32, Constant::Int(3));
        let out = b.field("out", ScalarType::F64);
        let mut s = b.stage("s");
        let a = b.param_value(alpha);
        let kk = b.param_value(k);
        let e = b.binary(BinaryOp::Mul, a, kk); // f32
        s.assign(out, e);
        b.finish_stage(s);
        (b.finish(), out)
    };
    let (program, out) = build();
    let p = bound(program);
    let mut f = init(&p);
    run(&p, &mut f, 1);
    assert_eq!(values(&f, out), vec![f64::from(0.1f32 * 3.0f32)]);
    let (program, out) = build();
    let p = bound_with(
        program,
        &[("alpha", Constant::Float(0.25)), ("k", Constant::Int(-4))],
    );
    let mut f = init(&p);
    run(&p, &mut f, 1);
    assert_eq!(values(&f, out), vec![-1.0]);
}
