//! The exact math library: `exp`, `log`, `pow`, `sin`, `cos` and `atan2` (and `min`, `max` with
//! `-0 < +0`, which C's `fmin`/`fmax` leave open) written with IEEE-754
//! basic operations only (`+ - * /`, `floor`, `%` (fmod), comparisons and bit reinterpretation),
//! so that every conforming machine computes the same bits. This is the Rust twin of the C
//! source the code generator emits in exact mode (`tessera-codegen/src/exact_math.c`); the two
//! perform the same operations in the same order, and a test checks that they agree bitwise.
//!
//! The `f64` functions are the algorithms; each `f32` function converts its arguments to `f64`,
//! calls the `f64` function and rounds the result once to `f32`.
//!
//! Algorithms:
//!
//! - `exp`: `x = k ln2 + r`, `|r| <= ln2/2` (Cody-Waite, `ln2` in two parts), the Taylor
//!   polynomial of degree 13 for `e^r`, the rounding error of `r` added back, `2^k` by exponent
//!   bits (two steps for subnormal results).
//! - `log`: `x = 2^e m`, `m` in `[sqrt(2)/2, sqrt(2))`, `log m = 2 atanh(f / (2 + f))` with
//!   `f = m - 1` (series to `s^25`), written as `f - f^2/2 + s (f^2/2 + R)`.
//! - `pow`: C99 Annex F special cases, then `exp(y log|x|)` with `log|x|` (relative error
//!   below 2^-62, `s^3` and `s` in double-double) and the product in double-double (Dekker's
//!   exact product, no FMA), the low part fed to `exp`'s reduction.
//! - `sin`, `cos`: `x = k pi/2 + r` with `pi/2` in three parts (33, 33 and 53 bits) so that the
//!   reduction is exact to about 2^-100 for `|x| <= 2^20 pi/2`; beyond, Payne and Hanek's
//!   reduction (the mantissa times 192 bits of `2/pi` in exact 32-bit limb arithmetic); `r`
//!   kept as a double-double; Taylor polynomials of degree 19 (sin) and 18 (cos) on
//!   `|r| <= pi/4`.
//! - `atan2`: Annex F special cases; `t = min(|x|,|y|) / max(|x|,|y|)`, `atan t` as
//!   `atan c + atan((t - c) / (1 + t c))` with `c` in `{0, 1/4, 1/2, 3/4, 1}` (`|u| <= 1/8`,
//!   series to `u^19`), then the octant and quadrant with `pi/2` and `pi` in two parts.
//!
//! Accuracy, measured against Rust's std (glibc) on 400k-600k seeded arguments per function
//! (`tests/exact_math.rs`): at most 1 ulp in `f64` for `exp`, `log`, `pow` (`|y log x|` up to
//! 709), `sin` and `cos` (`|x| <= 2^20 pi/2`, near multiples of `pi/2` included), 2 ulp for
//! `atan2`; every `f32` result equal to std's `f64` result rounded to `f32` (0 ulp) on those
//! arguments. Special values follow C99 Annex F exactly.
//!
//! NaN arguments are returned as they are; a NaN made here (`log` of a negative number,
//! `sin(inf)`, ...) is the canonical quiet NaN.

const INV_LN2: f64 = std::f64::consts::LOG2_E;
const LN2_HI: f64 = 0.6931471803691238;
const LN2_LO: f64 = 1.9082149292705877e-10;
const EXP_OVERFLOW: f64 = 709.782712893384;
const EXP_UNDERFLOW: f64 = -745.1332191019412;
const TWO_OVER_PI: f64 = std::f64::consts::FRAC_2_PI;
const PIO2_1: f64 = 1.5707963267341256;
const PIO2_2: f64 = 6.077100506303966e-11;
const PIO2_3: f64 = 2.0222662487959506e-21;
const PIO2_HI: f64 = std::f64::consts::FRAC_PI_2;
const PIO2_LO: f64 = 6.123233995736766e-17;
const PIO4: f64 = std::f64::consts::FRAC_PI_4;
const PIO4_LO: f64 = 3.061616997868383e-17;
const PI3O4: f64 = 2.356194490192345;
const PI_HI: f64 = std::f64::consts::PI;
const PI_LO: f64 = 1.2246467991473532e-16;
const ATAN_QUARTER_HI: f64 = 0.24497866312686414;
const ATAN_QUARTER_LO: f64 = 1.0698755618734451e-17;
const ATAN_HALF_HI: f64 = 0.4636476090008061;
const ATAN_HALF_LO: f64 = 2.2698777452961687e-17;
const ATAN_THREE_QUARTERS_HI: f64 = 0.6435011087932844;
const ATAN_THREE_QUARTERS_LO: f64 = 1.5834785051444286e-17;
/// `2^20 pi/2`: below it the sine and cosine reduction is exact to about 2^-100.
pub const TRIG_REDUCTION_LIMIT: f64 = 1647099.3291652855;
const TWO_M30: f64 = 9.313225746154785e-10;
const TWO_M62: f64 = 2.168404344971009e-19;
const TWO_M94: f64 = 5.048709793414476e-29;
const TWO_M126: f64 = 1.1754943508222875e-38;
const SIN_TINY: f64 = 7.450580596923828e-9;
const SQRT2: f64 = std::f64::consts::SQRT_2;
const MIN_NORMAL: f64 = 2.2250738585072014e-308;
const TWO_54: f64 = 18014398509481984.0;
const TWO_64: f64 = 18446744073709551616.0;
const TWO_53: f64 = 9007199254740992.0;
const TWO_THIRDS: f64 = 0.6666666666666666;
const TWO_THIRDS_LO: f64 = 3.700743415417188e-17;
const SPLITTER: f64 = 134217729.0;

/// Every named constant of the algorithms, for the C twin (`{NAME}` there).
pub const CONSTANTS: [(&str, f64); 38] = [
    ("INV_LN2", INV_LN2),
    ("LN2_HI", LN2_HI),
    ("LN2_LO", LN2_LO),
    ("EXP_OVERFLOW", EXP_OVERFLOW),
    ("EXP_UNDERFLOW", EXP_UNDERFLOW),
    ("TWO_OVER_PI", TWO_OVER_PI),
    ("PIO2_1", PIO2_1),
    ("PIO2_2", PIO2_2),
    ("PIO2_3", PIO2_3),
    ("PIO2_HI", PIO2_HI),
    ("PIO2_LO", PIO2_LO),
    ("PIO4", PIO4),
    ("PIO4_LO", PIO4_LO),
    ("PI3O4", PI3O4),
    ("PI_HI", PI_HI),
    ("PI_LO", PI_LO),
    ("TWO_M30", TWO_M30),
    ("TWO_M62", TWO_M62),
    ("TWO_M94", TWO_M94),
    ("TWO_M126", TWO_M126),
    ("ATAN_QUARTER_HI", ATAN_QUARTER_HI),
    ("ATAN_QUARTER_LO", ATAN_QUARTER_LO),
    ("ATAN_HALF_HI", ATAN_HALF_HI),
    ("ATAN_HALF_LO", ATAN_HALF_LO),
    ("ATAN_THREE_QUARTERS_HI", ATAN_THREE_QUARTERS_HI),
    ("ATAN_THREE_QUARTERS_LO", ATAN_THREE_QUARTERS_LO),
    ("TRIG_REDUCTION_LIMIT", TRIG_REDUCTION_LIMIT),
    ("SIN_TINY", SIN_TINY),
    ("SQRT2", SQRT2),
    ("MIN_NORMAL", MIN_NORMAL),
    ("TWO_54", TWO_54),
    ("TWO_64", TWO_64),
    ("TWO_53", TWO_53),
    ("TWO_THIRDS", TWO_THIRDS),
    ("TWO_THIRDS_LO", TWO_THIRDS_LO),
    ("SPLITTER", SPLITTER),
    ("INF", f64::INFINITY),
    ("NAN", f64::NAN),
];

/// Every polynomial (coefficients from the constant term up), for the C twin, where
/// `ts_em_NAME(z)` evaluates it by Horner's rule as [`horner`] does.
pub const POLYNOMIALS: [(&str, &[f64]); 5] = [
    ("exp_taylor", &EXP_TAYLOR),
    ("log_tail", &LOG_TAIL),
    ("sin_taylor", &SIN_TAYLOR),
    ("cos_taylor", &COS_TAYLOR),
    ("atan_series", &ATAN_SERIES),
];

/// The bits of `2/pi`, 32 to a word, most significant first, after 64 zero bits (so that the
/// window of [`reduce_large`] may start before the binary point): enough for every `f64`.
pub const TWO_OVER_PI_BITS: [u64; 40] = [
    0x0000_0000,
    0x0000_0000,
    0xa2f9_836e,
    0x4e44_1529,
    0xfc27_57d1,
    0xf534_ddc0,
    0xdb62_9599,
    0x3c43_9041,
    0xfe51_63ab,
    0xdebb_c561,
    0xb724_6e3a,
    0x424d_d2e0,
    0x0649_2eea,
    0x09d1_921c,
    0xfe1d_eb1c,
    0xb129_a73e,
    0xe882_35f5,
    0x2ebb_4484,
    0xe99c_7026,
    0xb45f_7e41,
    0x3991_d639,
    0x8353_39f4,
    0x9c84_5f8b,
    0xbdf9_283b,
    0x1ff8_97ff,
    0xde05_980f,
    0xef2f_118b,
    0x5a0a_6d1f,
    0x6d36_7ecf,
    0x27cb_09b7,
    0x4f46_3f66,
    0x9e5f_ea2d,
    0x7527_bac7,
    0xebe5_f17b,
    0x3d07_39f7,
    0x8a52_92ea,
    0x6bfb_5fb1,
    0x1f8d_5d08,
    0x5603_3046,
    0xfc7b_6bab,
];

/// `e^r - 1 - r` over `r^2`: `1/2!, 1/3!, ..., 1/13!`.
const EXP_TAYLOR: [f64; 12] = [
    0.5,
    0.16666666666666666,
    0.041666666666666664,
    0.008333333333333333,
    0.001388888888888889,
    0.0001984126984126984,
    2.48015873015873e-05,
    2.7557319223985893e-06,
    2.755731922398589e-07,
    2.505210838544172e-08,
    2.08767569878681e-09,
    1.6059043836821613e-10,
];
/// `2 atanh(s) - 2s - 2/3 s^3` over `s z^2` (`z = s^2`): `2/5, 2/7, ..., 2/25`.
const LOG_TAIL: [f64; 11] = [
    0.4,
    0.2857142857142857,
    0.2222222222222222,
    0.18181818181818182,
    0.15384615384615385,
    0.13333333333333333,
    0.11764705882352941,
    0.10526315789473684,
    0.09523809523809523,
    0.08695652173913043,
    0.08,
];
/// `(sin r - r) / r^3` in `z = r^2`: `-1/3!, 1/5!, ..., -1/19!`.
const SIN_TAYLOR: [f64; 9] = [
    -0.16666666666666666,
    0.008333333333333333,
    -0.0001984126984126984,
    2.7557319223985893e-06,
    -2.505210838544172e-08,
    1.6059043836821613e-10,
    -7.647163731819816e-13,
    2.8114572543455206e-15,
    -8.22063524662433e-18,
];
/// `(cos r - 1 + r^2/2) / r^4` in `z = r^2`: `1/4!, -1/6!, ..., -1/18!`.
const COS_TAYLOR: [f64; 8] = [
    0.041666666666666664,
    -0.001388888888888889,
    2.48015873015873e-05,
    -2.755731922398589e-07,
    2.08767569878681e-09,
    -1.1470745597729725e-11,
    4.779477332387385e-14,
    -1.5619206968586225e-16,
];
/// `(atan u - u) / u^3` in `z = u^2`: `-1/3, 1/5, ..., -1/19`.
const ATAN_SERIES: [f64; 9] = [
    -0.3333333333333333,
    0.2,
    -0.14285714285714285,
    0.1111111111111111,
    -0.09090909090909091,
    0.07692307692307693,
    -0.06666666666666667,
    0.058823529411764705,
    -0.05263157894736842,
];

/// `c[0] + z (c[1] + z (c[2] + ...))`, innermost first.
pub fn horner(z: f64, c: &[f64]) -> f64 {
    let (&last, rest) = c.split_last().unwrap_or((&0.0, &[]));
    rest.iter().rev().fold(last, |acc, &ci| ci + z * acc)
}

/// `2^n` for `n` in `[-1022, 1023]`, from its exponent bits.
fn pow2(n: i32) -> f64 {
    f64::from_bits(((n + 1023) as u64) << 52)
}

/// `y 2^k` for `y` in `[1/2, 2]` and `k` in `[-1075, 1024]`, rounded once.
fn scale(y: f64, k: i32) -> f64 {
    if k > 1023 {
        (y * pow2(1023)) * pow2(k - 1023)
    } else if k < -1021 {
        (y * pow2(k + 54)) * pow2(-54)
    } else {
        y * pow2(k)
    }
}

/// `a + b` as an unevaluated sum `(s, e)`, exactly (Knuth's TwoSum).
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// `a + b` as `(s, e)` exactly when `|a| >= |b|` (Dekker's Fast2Sum).
fn fast_two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    (s, b - (s - a))
}

/// `a` as `hi + lo` with 26-bit `hi` (Veltkamp's split).
fn split(a: f64) -> (f64, f64) {
    let c = SPLITTER * a;
    let hi = c - (c - a);
    (hi, a - hi)
}

/// `a b` as `(p, e)` exactly, without FMA (Dekker's product).
fn two_prod(a: f64, b: f64) -> (f64, f64) {
    let p = a * b;
    let (ah, al) = split(a);
    let (bh, bl) = split(b);
    (p, (((ah * bh - p) + ah * bl) + al * bh) + al * bl)
}

/// `e^(x + tail)` for `x` in `[EXP_UNDERFLOW, EXP_OVERFLOW]` and a small `tail`.
fn exp_core(x: f64, tail: f64) -> f64 {
    let k = (x * INV_LN2 + 0.5).floor();
    let hi = x - k * LN2_HI;
    let lo = k * LN2_LO;
    let r = hi - lo;
    let c = ((hi - r) - lo) + tail;
    let p = (r * r) * horner(r, &EXP_TAYLOR);
    let y = 1.0 + (r + (p + c * (1.0 + (r + p))));
    scale(y, k as i32)
}

/// `e^x`.
pub fn exp_f64(x: f64) -> f64 {
    if x.is_nan() {
        x
    } else if x > EXP_OVERFLOW {
        f64::INFINITY
    } else if x < EXP_UNDERFLOW {
        0.0
    } else {
        exp_core(x, 0.0)
    }
}

/// `x = 2^e m` for finite `x > 0`: `(e, m)` with `m` in `[sqrt(2)/2, sqrt(2)]`.
fn split_exponent(x: f64) -> (f64, f64) {
    let (x, bias) = if x < MIN_NORMAL {
        (x * TWO_54, 54)
    } else {
        (x, 0)
    };
    let bits = x.to_bits();
    let e = ((bits >> 52) as i32) - 1023 - bias;
    let m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    if m > SQRT2 {
        (f64::from(e + 1), m * 0.5)
    } else {
        (f64::from(e), m)
    }
}

/// The special values of `log`: `Some` for NaN, negative, zero and infinite arguments.
fn log_special(x: f64) -> Option<f64> {
    if x.is_nan() {
        Some(x)
    } else if x < 0.0 {
        Some(f64::NAN)
    } else if x == 0.0 {
        Some(f64::NEG_INFINITY)
    } else if x == f64::INFINITY {
        Some(x)
    } else {
        None
    }
}

/// The natural logarithm.
pub fn log_f64(x: f64) -> f64 {
    if let Some(special) = log_special(x) {
        return special;
    }
    let (e, m) = split_exponent(x);
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let r = z * (TWO_THIRDS + z * horner(z, &LOG_TAIL));
    let hfsq = (0.5 * f) * f;
    e * LN2_HI + (f - (hfsq - (s * (hfsq + r) + e * LN2_LO)))
}

/// `log m` as a double-double for `m` in `[sqrt(2)/2, sqrt(2)]`: `2s + 2/3 s^3 + s z^2 Q(z)`
/// with `s = (m - 1) / (m + 1)` and `s^3` in double-double.
fn log_mantissa_dd(m: f64) -> (f64, f64) {
    let f = m - 1.0;
    let (den_hi, den_lo) = two_sum(m, 1.0);
    let s_hi = f / den_hi;
    let (p_hi, p_lo) = two_prod(s_hi, den_hi);
    let s_lo = (((f - p_hi) - p_lo) - s_hi * den_lo) / den_hi;
    let (z_hi, z_lo) = two_prod(s_hi, s_hi);
    let (c_hi, c_lo) = two_prod(z_hi, s_hi);
    let c_lo = c_lo + (z_lo * s_hi + (3.0 * z_hi) * s_lo);
    let (t_hi, t_lo) = two_prod(c_hi, TWO_THIRDS);
    let t_lo = t_lo + (c_lo * TWO_THIRDS + c_hi * TWO_THIRDS_LO);
    let rest = (s_hi * (z_hi * z_hi)) * horner(z_hi, &LOG_TAIL);
    let (l_hi, l_lo) = fast_two_sum(2.0 * s_hi, t_hi);
    (l_hi, l_lo + (2.0 * s_lo + (t_lo + rest)))
}

/// `log x` as a double-double `(hi, lo)` for finite `x > 0`.
fn log_dd(x: f64) -> (f64, f64) {
    let (e, m) = split_exponent(x);
    let (l_hi, l_lo) = log_mantissa_dd(m);
    let (a_hi, a_lo) = two_sum(e * LN2_HI, l_hi);
    fast_two_sum(a_hi, a_lo + (l_lo + e * LN2_LO))
}

/// Whether `y` is an odd integer.
fn is_odd(y: f64) -> bool {
    let y_half = 0.5 * y;
    y == y.floor() && y.abs() < TWO_53 && y_half != y_half.floor()
}

/// `1` when `|x| = 1`, `+inf` when `|x| > 1` and `y > 0` or `|x| < 1` and `y < 0`, else
/// `+0`: `|x|^y` for `|y|` beyond every finite result (an even integer when finite).
fn pow_limit(ax: f64, y: f64) -> f64 {
    if ax == 1.0 {
        1.0
    } else if (ax > 1.0) == (y > 0.0) {
        f64::INFINITY
    } else {
        0.0
    }
}

/// The special cases of `pow` (C99 F.9.4.4), `Some` when `(x, y)` is one.
fn pow_special(x: f64, y: f64) -> Option<f64> {
    let (ax, ay) = (x.abs(), y.abs());
    if y == 0.0 || x == 1.0 {
        return Some(1.0);
    }
    if x.is_nan() {
        return Some(x);
    }
    if y.is_nan() {
        return Some(y);
    }
    if ay == f64::INFINITY {
        return Some(pow_limit(ax, y));
    }
    let sign = if x.is_sign_negative() && is_odd(y) {
        -1.0
    } else {
        1.0
    };
    if x < 0.0 && ax != f64::INFINITY && y != y.floor() {
        Some(f64::NAN)
    } else if ax == 0.0 {
        Some(sign * if y < 0.0 { f64::INFINITY } else { 0.0 })
    } else if ax == f64::INFINITY {
        Some(sign * if y < 0.0 { 0.0 } else { f64::INFINITY })
    } else if ay > TWO_64 {
        Some(pow_limit(ax, y))
    } else {
        None
    }
}

/// `x^y` with the special cases of C99 Annex F.
pub fn pow_f64(x: f64, y: f64) -> f64 {
    if let Some(special) = pow_special(x, y) {
        return special;
    }
    let sign = if x < 0.0 && is_odd(y) { -1.0 } else { 1.0 };
    let (l_hi, l_lo) = log_dd(x.abs());
    let (p_hi, p_lo) = two_prod(y, l_hi);
    let (w, w_lo) = fast_two_sum(p_hi, p_lo + y * l_lo);
    sign * if w > EXP_OVERFLOW {
        f64::INFINITY
    } else if w < EXP_UNDERFLOW {
        0.0
    } else {
        exp_core(w, w_lo)
    }
}

/// The 192 bits of [`TWO_OVER_PI_BITS`] from bit `start` (counting its 64 leading zeros) as
/// six 32-bit limbs, least significant first.
fn two_over_pi_window(start: usize) -> [u64; 6] {
    let (word, shift) = (start / 32, start % 32);
    let mut w = [0u64; 6];
    for (i, limb) in w.iter_mut().enumerate() {
        let (hi, lo) = (
            TWO_OVER_PI_BITS[word + 5 - i],
            TWO_OVER_PI_BITS[word + 6 - i],
        );
        *limb = ((hi << shift) | (lo >> (32 - shift))) & 0xffff_ffff;
    }
    w
}

/// `m w` for a 53-bit `m` and six 32-bit limbs `w`: eight 32-bit limbs, least significant
/// first, exactly.
fn mul_limbs(m: u64, w: &[u64; 6]) -> [u64; 8] {
    let mut p = [0u64; 8];
    for (j, mj) in [m & 0xffff_ffff, m >> 32].into_iter().enumerate() {
        let mut carry = 0;
        for (i, wi) in w.iter().enumerate() {
            let t = wi * mj + p[i + j] + carry;
            p[i + j] = t & 0xffff_ffff;
            carry = t >> 32;
        }
        p[j + 6] = carry;
    }
    p
}

/// `|x| = k pi/2 + r` for finite `|x| > TRIG_REDUCTION_LIMIT` (Payne and Hanek): the 53-bit
/// mantissa times the 192 bits of `2/pi` that reach below `2^2` in the product, in exact
/// integer arithmetic; `(k mod 4, r_hi, r_lo)` of `x`.
fn reduce_large(x: f64) -> (i32, f64, f64) {
    let bits = x.to_bits() & 0x7fff_ffff_ffff_ffff;
    let e = ((bits >> 52) as i32) - 1075;
    let m = (bits & 0x000f_ffff_ffff_ffff) | 0x0010_0000_0000_0000;
    let p = mul_limbs(m, &two_over_pi_window((e + 62) as usize));
    let mut quadrant = ((p[5] >> 30) & 3) as i32;
    let (h, l) = two_sum(
        ((p[5] & 0x3fff_ffff) as f64) * TWO_M30,
        (p[4] as f64) * TWO_M62,
    );
    let l = l + ((p[3] as f64) * TWO_M94 + (p[2] as f64) * TWO_M126);
    let (mut h, mut l) = fast_two_sum(h, l);
    if h >= 0.5 {
        quadrant += 1;
        (h, l) = fast_two_sum(h - 1.0, l);
    }
    let (r, r_err) = two_prod(h, PIO2_HI);
    let (r_hi, r_lo) = fast_two_sum(r, r_err + (h * PIO2_LO + l * PIO2_HI));
    if x < 0.0 {
        ((4 - quadrant) & 3, -r_hi, -r_lo)
    } else {
        (quadrant & 3, r_hi, r_lo)
    }
}

/// `x = k pi/2 + r`: `(k mod 4, r_hi, r_lo)` for finite `x`.
fn reduce_quadrant(x: f64) -> (i32, f64, f64) {
    if x.abs() > TRIG_REDUCTION_LIMIT {
        return reduce_large(x);
    }
    let k = (x * TWO_OVER_PI + 0.5).floor();
    let y0 = x - k * PIO2_1;
    let (y1, e1) = two_sum(y0, -(k * PIO2_2));
    let (r_hi, r_lo) = two_sum(y1, e1 - k * PIO2_3);
    let quadrant = k - 4.0 * (k * 0.25).floor();
    (quadrant as i32, r_hi, r_lo)
}

/// `sin(r_hi + r_lo)` for `|r_hi| <= pi/4`.
fn sin_kernel(r: f64, r_lo: f64) -> f64 {
    let z = r * r;
    r + (r_lo + (r * z) * horner(z, &SIN_TAYLOR))
}

/// `cos(r_hi + r_lo)` for `|r_hi| <= pi/4`.
fn cos_kernel(r: f64, r_lo: f64) -> f64 {
    let z = r * r;
    let hz = 0.5 * z;
    let w = 1.0 - hz;
    w + (((1.0 - w) - hz) + ((z * z) * horner(z, &COS_TAYLOR) - r * r_lo))
}

/// `sin x` (`quarter` 0) or `cos x` (`quarter` 1): the sine of `x + quarter pi/2`.
fn sin_quarters(x: f64, quarter: i32) -> f64 {
    if !x.is_finite() {
        return if x.is_nan() { x } else { f64::NAN };
    }
    let (k, r, r_lo) = reduce_quadrant(x);
    match (k + quarter) & 3 {
        0 => sin_kernel(r, r_lo),
        1 => cos_kernel(r, r_lo),
        2 => -sin_kernel(r, r_lo),
        _ => -cos_kernel(r, r_lo),
    }
}

/// The sine (radians).
pub fn sin_f64(x: f64) -> f64 {
    if x.abs() < SIN_TINY {
        return x;
    }
    sin_quarters(x, 0)
}

/// The cosine (radians).
pub fn cos_f64(x: f64) -> f64 {
    sin_quarters(x, 1)
}

/// `atan t` for `t` in `[0, 1]`.
fn atan_unit(t: f64) -> f64 {
    let (c, atan_hi, atan_lo) = if t < 0.125 {
        (0.0, 0.0, 0.0)
    } else if t < 0.375 {
        (0.25, ATAN_QUARTER_HI, ATAN_QUARTER_LO)
    } else if t < 0.625 {
        (0.5, ATAN_HALF_HI, ATAN_HALF_LO)
    } else if t < 0.875 {
        (0.75, ATAN_THREE_QUARTERS_HI, ATAN_THREE_QUARTERS_LO)
    } else {
        (1.0, PIO4, PIO4_LO)
    };
    let u = (t - c) / (1.0 + t * c);
    let z = u * u;
    atan_hi + (atan_lo + (u + (u * z) * horner(z, &ATAN_SERIES)))
}

/// The angle of `(x, y)` in `[0, pi]` for finite `x` and `y`, not both zero, from `|y|` and
/// the sign of `x`.
fn atan2_upper(ay: f64, x: f64) -> f64 {
    let ax = x.abs();
    let first_octant = ay <= ax;
    let t = if first_octant { ay / ax } else { ax / ay };
    let a = atan_unit(t);
    let (hi, lo) = if first_octant {
        (a, 0.0)
    } else {
        let (hi, e) = fast_two_sum(PIO2_HI, -a);
        (hi, PIO2_LO + e)
    };
    if x.is_sign_negative() {
        (PI_HI - hi) + (PI_LO - lo)
    } else {
        hi + lo
    }
}

/// The angle of `(x, y)` in `[0, pi]` when `|x|` or `|y|` is infinite or `y` is zero.
fn atan2_upper_special(ay: f64, x: f64) -> Option<f64> {
    let ax = x.abs();
    let left = x.is_sign_negative();
    if ay == f64::INFINITY {
        Some(if ax != f64::INFINITY {
            PIO2_HI
        } else if left {
            PI3O4
        } else {
            PIO4
        })
    } else if ax == f64::INFINITY || ay == 0.0 {
        Some(if left { PI_HI } else { 0.0 })
    } else if ax == 0.0 {
        Some(PIO2_HI)
    } else {
        None
    }
}

/// `atan2(y, x)` in radians, with the special cases of C99 Annex F.
pub fn atan2_f64(y: f64, x: f64) -> f64 {
    if y.is_nan() {
        return y;
    }
    if x.is_nan() {
        return x;
    }
    let ay = y.abs();
    let angle = atan2_upper_special(ay, x).unwrap_or_else(|| atan2_upper(ay, x));
    if y.is_sign_negative() { -angle } else { angle }
}

/// The smaller of `a` and `b`, a NaN operand ignored (C's `fmin`), `-0` below `+0`.
pub fn min_f64(a: f64, b: f64) -> f64 {
    if a.is_nan() || b < a || (b == a && b.is_sign_negative()) {
        b
    } else {
        a
    }
}

/// The larger of `a` and `b`, a NaN operand ignored (C's `fmax`), `+0` above `-0`.
pub fn max_f64(a: f64, b: f64) -> f64 {
    if a.is_nan() || b > a || (b == a && a.is_sign_negative()) {
        b
    } else {
        a
    }
}

/// `f32` functions that convert their arguments to `f64`, call the `f64` function of the same
/// name and round the result once to `f32`.
macro_rules! via_f64 {
    ($($name:ident => $f64_name:ident ($($arg:ident),+);)+) => {$(
        #[doc = concat!("`", stringify!($name), "`: `", stringify!($f64_name), "` rounded once to `f32`.")]
        pub fn $name($($arg: f32),+) -> f32 {
            $f64_name($(f64::from($arg)),+) as f32
        }
    )+};
}

via_f64! {
    exp_f32 => exp_f64(x);
    log_f32 => log_f64(x);
    pow_f32 => pow_f64(x, y);
    sin_f32 => sin_f64(x);
    cos_f32 => cos_f64(x);
    atan2_f32 => atan2_f64(y, x);
    min_f32 => min_f64(a, b);
    max_f32 => max_f64(a, b);
}
