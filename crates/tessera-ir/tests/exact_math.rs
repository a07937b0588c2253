//! The exact math library against Rust's std (the platform's libm): a bounded error in ulps on
//! random arguments over the ranges where the accuracy is documented, and the special values
//! of C99 Annex F exactly.

use tessera_ir::exact_math::{
    TRIG_REDUCTION_LIMIT, atan2_f32, atan2_f64, cos_f32, cos_f64, exp_f32, exp_f64, log_f32,
    log_f64, max_f64, min_f32, min_f64, pow_f32, pow_f64, sin_f32, sin_f64,
};

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `[lo, hi)`.
    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next() >> 11) as f64 / (1u64 << 53) as f64)
    }

    /// `±2^e` times a random mantissa, `e` uniform in `[lo, hi)`.
    fn log_uniform(&mut self, lo: f64, hi: f64) -> f64 {
        let magnitude = self.uniform(lo, hi).exp2();
        if self.next() & 1 == 0 {
            magnitude
        } else {
            -magnitude
        }
    }
}

/// Distance in units in the last place between two floats given as sign-extended bits, where
/// `min` is the type's most negative bit pattern (equal NaNs are at distance 0).
fn ulps(a: i64, b: i64, min: i64) -> u64 {
    let key = |bits: i64| if bits < 0 { min - bits } else { bits };
    key(a).abs_diff(key(b))
}

/// Distance in ulps between two f64 values.
fn ulps64(a: f64, b: f64) -> u64 {
    if a.is_nan() && b.is_nan() {
        return 0;
    }
    ulps(a.to_bits() as i64, b.to_bits() as i64, i64::MIN)
}

/// Distance in ulps between two f32 values.
fn ulps32(a: f32, b: f32) -> u64 {
    if a.is_nan() && b.is_nan() {
        return 0;
    }
    let bits = |v: f32| i64::from(v.to_bits() as i32);
    ulps(bits(a), bits(b), i64::from(i32::MIN))
}

/// The largest `error` over `args`, with its arguments.
fn max_error(args: &[(f64, f64)], error: &dyn Fn(f64, f64) -> u64) -> (u64, (f64, f64)) {
    args.iter()
        .map(|&(x, y)| (error(x, y), (x, y)))
        .max_by_key(|e| e.0)
        .unwrap_or((0, (0.0, 0.0)))
}

/// `n` random arguments from `draw`.
fn arguments(n: usize, seed: u64, draw: &dyn Fn(&mut Rng) -> (f64, f64)) -> Vec<(f64, f64)> {
    let mut rng = Rng(seed);
    (0..n).map(|_| draw(&mut rng)).collect()
}

/// A function's f64 and f32 versions and std's f64 one (two arguments; unary ones ignore `y`).
type Twins<'a> = (
    &'a dyn Fn(f64, f64) -> f64,
    &'a dyn Fn(f32, f32) -> f32,
    &'a dyn Fn(f64, f64) -> f64,
);

/// Asserts the f64 and f32 bounds of one function over `args`.
fn check(
    name: &str,
    args: &[(f64, f64)],
    (ours64, ours32, std): Twins,
    (bound64, bound32): (u64, u64),
) {
    let (e64, at64) = max_error(args, &|x, y| ulps64(ours64(x, y), std(x, y)));
    // f32 arguments; the expected value is std's f64 result rounded once.
    let (e32, at32) = max_error(args, &|x, y| {
        let (x, y) = (x as f32, y as f32);
        ulps32(ours32(x, y), std(f64::from(x), f64::from(y)) as f32)
    });
    println!("{name}: max {e64} ulp (f64) at {at64:?}, {e32} ulp (f32) at {at32:?}");
    assert!(e64 <= bound64, "{name} f64: {e64} ulp at {at64:?}");
    assert!(e32 <= bound32, "{name} f32: {e32} ulp at {at32:?}");
}

const N: usize = 200_000;

#[test]
fn exp_within_bounds() {
    let args = arguments(N, 1, &|r| (r.uniform(-745.0, 709.7), 0.0));
    let small = arguments(N, 2, &|r| (r.log_uniform(-60.0, 3.0), 0.0));
    for args in [args, small] {
        check(
            "exp",
            &args,
            (&|x, _| exp_f64(x), &|x, _| exp_f32(x), &|x, _| x.exp()),
            (1, 1),
        );
    }
}

#[test]
fn log_within_bounds() {
    let args = arguments(N, 3, &|r| (r.log_uniform(-1074.0, 1024.0).abs(), 0.0));
    let near_one = arguments(N, 4, &|r| (r.uniform(0.5, 2.0), 0.0));
    for args in [args, near_one] {
        check(
            "log",
            &args,
            (&|x, _| log_f64(x), &|x, _| log_f32(x), &|x, _| x.ln()),
            (1, 1),
        );
    }
}

#[test]
fn pow_within_bounds() {
    let args = arguments(N, 5, &|r| (r.uniform(0.0, 100.0), r.uniform(-150.0, 150.0)));
    let wide = arguments(N, 6, &|r| {
        let x = r.log_uniform(-30.0, 30.0).abs();
        (x, r.uniform(-700.0, 700.0) / x.ln())
    });
    let negative = arguments(N, 7, &|r| {
        (-r.uniform(0.0, 10.0), (r.uniform(-40.0, 40.0)).floor())
    });
    for args in [args, wide, negative] {
        check("pow", &args, (&pow_f64, &pow_f32, &f64::powf), (1, 1));
    }
}

#[test]
fn sin_cos_within_bounds() {
    let args = arguments(N, 8, &|r| {
        (r.uniform(-TRIG_REDUCTION_LIMIT, TRIG_REDUCTION_LIMIT), 0.0)
    });
    let small = arguments(N, 9, &|r| (r.log_uniform(-40.0, 4.0), 0.0));
    let near_multiples = arguments(N, 10, &|r| {
        let k = r.uniform(-1000.0, 1000.0).floor();
        (
            k * std::f64::consts::FRAC_PI_2 + r.log_uniform(-40.0, -10.0),
            0.0,
        )
    });
    let large = arguments(N, 13, &|r| (r.log_uniform(20.0, 1023.9), 0.0));
    let f32_range = arguments(N, 14, &|r| (r.log_uniform(20.0, 127.9), 0.0));
    for args in [args, small, near_multiples, large, f32_range] {
        check(
            "sin",
            &args,
            (&|x, _| sin_f64(x), &|x, _| sin_f32(x), &|x, _| x.sin()),
            (1, 1),
        );
        check(
            "cos",
            &args,
            (&|x, _| cos_f64(x), &|x, _| cos_f32(x), &|x, _| x.cos()),
            (1, 1),
        );
    }
}

#[test]
fn atan2_within_bounds() {
    let args = arguments(N, 11, &|r| (r.uniform(-10.0, 10.0), r.uniform(-10.0, 10.0)));
    let wide = arguments(N, 12, &|r| {
        (r.log_uniform(-300.0, 300.0), r.log_uniform(-300.0, 300.0))
    });
    for args in [args, wide] {
        check(
            "atan2",
            &args,
            (&atan2_f64, &atan2_f32, &f64::atan2),
            (2, 1),
        );
    }
}

/// Arguments every function must map exactly as std does.
const SPECIALS: [f64; 9] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
    5e-324,
    f64::MAX,
];

/// `ours` and `std` agree bitwise (any NaN for NaN) on every pair of special values.
fn same_on_specials(name: &str, ours: &dyn Fn(f64, f64) -> f64, std: &dyn Fn(f64, f64) -> f64) {
    for &x in &SPECIALS {
        for &y in &SPECIALS {
            let (a, b) = (ours(x, y), std(x, y));
            assert!(
                a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                "{name}({x:e}, {y:e}): {a:e}, std {b:e}"
            );
        }
    }
}

#[test]
fn special_values_are_those_of_annex_f() {
    same_on_specials("exp", &|x, _| exp_f64(x), &|x, _| x.exp());
    same_on_specials("log", &|x, _| log_f64(x), &|x, _| x.ln());
    same_on_specials("pow", &pow_f64, &f64::powf);
    same_on_specials("atan2", &atan2_f64, &f64::atan2);
    same_on_specials("sin", &|x, _| sin_f64(x), &|x, _| x.sin());
    same_on_specials("cos", &|x, _| cos_f64(x), &|x, _| x.cos());
    assert_eq!(exp_f64(709.8), f64::INFINITY);
    assert_eq!(exp_f64(-746.0).to_bits(), 0);
    assert_eq!(exp_f64(-745.0), 5e-324);
    assert!(pow_f64(-8.0, 1.0 / 3.0).is_nan());
    assert_eq!(pow_f64(-2.0, 3.0), -8.0);
    assert_eq!(pow_f64(-0.0, -3.0), f64::NEG_INFINITY);
    assert_eq!(pow_f64(2.0, -1074.0), 5e-324);
    assert_eq!(pow_f32(-2.0, 3.0), -8.0);
    assert!(sin_f64(f64::INFINITY).is_nan() && cos_f32(f32::NEG_INFINITY).is_nan());
    for (a, b) in [(0.0, -0.0), (-0.0, 0.0)] {
        assert_eq!(
            min_f64(a, b).to_bits(),
            (-0.0f64).to_bits(),
            "min({a}, {b})"
        );
        assert_eq!(max_f64(a, b).to_bits(), 0, "max({a}, {b})");
        assert_eq!(min_f32(a as f32, b as f32).to_bits(), (-0.0f32).to_bits());
    }
    assert_eq!((min_f64(f64::NAN, 1.0), max_f64(2.0, f64::NAN)), (1.0, 2.0));
    assert!(min_f32(f32::NAN, f32::NAN).is_nan());
}
