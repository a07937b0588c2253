//! THE conversions of the 16-bit storage types `f16` (IEEE binary16) and `bf16` (bfloat16) to
//! and from `f32`, on bit patterns. Widening is exact (an `f16` NaN becomes a quiet NaN);
//! narrowing rounds to nearest, ties to
//! even, overflows to ±infinity, keeps subnormals exact and turns a NaN into a quiet NaN with the
//! sign and the leading payload bits of the input. Integer operations only, so that the C twin
//! (`tessera_codegen::half`) computes the same bits on every target, flush-to-zero or not.

use crate::ScalarType;

/// The `f32` with the value of the `f16` bit pattern `h` (exact).
pub fn f32_from_f16_bits(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exponent = u32::from((h >> 10) & 0x1f);
    let mantissa = u32::from(h & 0x3ff);
    let bits = match exponent {
        0 if mantissa == 0 => sign,
        0 => {
            // A subnormal m * 2^-24: normalise the mantissa into an f32 normal.
            let shift = mantissa.leading_zeros() - 21;
            sign | ((113 - shift) << 23) | (((mantissa << shift) & 0x3ff) << 13)
        }
        31 if mantissa == 0 => sign | 0x7f80_0000,
        // A NaN stays a NaN with its payload, made quiet (as IEEE-754 and the hardware
        // conversions, F16C's `vcvtph2ps` and AArch64's `fcvt`, do).
        31 => sign | 0x7fc0_0000 | (mantissa << 13),
        _ => sign | ((exponent + 112) << 23) | (mantissa << 13),
    };
    f32::from_bits(bits)
}

/// The `f16` bit pattern nearest to `x` (ties to even; see the module documentation).
pub fn f16_bits_from_f32(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let magnitude = bits & 0x7fff_ffff;
    if magnitude > 0x7f80_0000 {
        return sign | 0x7e00 | ((magnitude >> 13) & 0x3ff) as u16;
    }
    if magnitude >= 0x477f_f000 {
        // 65520 and above (infinity included) round to infinity.
        return sign | 0x7c00;
    }
    let exponent = magnitude >> 23;
    if exponent < 113 {
        // Below 2^-14: a subnormal (or zero) f16, round(x / 2^-24). f32 subnormals and
        // anything below 2^-25 round to zero.
        if exponent < 102 {
            return sign;
        }
        let mantissa = (magnitude & 0x7f_ffff) | 0x80_0000;
        return sign | round_shift(mantissa, 126 - exponent) as u16;
    }
    // A normal: rebias the exponent, round the mantissa; a carry moves into the exponent.
    let rebased = magnitude - (112 << 23);
    sign | round_shift(rebased, 13) as u16
}

/// The `f32` with the value of the `bf16` bit pattern `b` (exact).
pub fn f32_from_bf16_bits(b: u16) -> f32 {
    f32::from_bits(u32::from(b) << 16)
}

/// The `bf16` bit pattern nearest to `x` (ties to even; see the module documentation).
pub fn bf16_bits_from_f32(x: f32) -> u16 {
    let bits = x.to_bits();
    if bits & 0x7fff_ffff > 0x7f80_0000 {
        return ((bits >> 16) | 0x0040) as u16;
    }
    round_shift(bits, 16) as u16
}

/// The `f32` value of the bit pattern `bits` of the storage type `ty` (`f16` or `bf16`).
pub fn f32_from_storage_bits(ty: ScalarType, bits: u16) -> f32 {
    match ty {
        ScalarType::Bf16 => f32_from_bf16_bits(bits),
        _ => f32_from_f16_bits(bits),
    }
}

/// The bit pattern of `x` rounded to the storage type `ty` (`f16` or `bf16`).
pub fn storage_bits_from_f32(ty: ScalarType, x: f32) -> u16 {
    match ty {
        ScalarType::Bf16 => bf16_bits_from_f32(x),
        _ => f16_bits_from_f32(x),
    }
}

/// `x` rounded to the storage type `ty` (`f16` or `bf16`) and widened back: the value a field
/// of that type holds after `x` is written to it.
pub fn round_to_storage(ty: ScalarType, x: f32) -> f32 {
    f32_from_storage_bits(ty, storage_bits_from_f32(ty, x))
}

/// `value / 2^shift` rounded to nearest, ties to even (`1 <= shift < 32`).
fn round_shift(value: u32, shift: u32) -> u32 {
    let quotient = value >> shift;
    let remainder = value & ((1 << shift) - 1);
    let midpoint = 1 << (shift - 1);
    if remainder > midpoint || (remainder == midpoint && quotient & 1 == 1) {
        quotient + 1
    } else {
        quotient
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The nearest of the finite f16 values (ties to the even pattern) by exhaustive search in
    /// f64, or infinity past the largest finite value's rounding boundary.
    fn slow_f16(x: f32) -> u16 {
        let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
        if x.is_nan() {
            return sign | 0x7e00 | ((x.to_bits() >> 13) & 0x3ff) as u16;
        }
        let target = f64::from(x).abs();
        if target >= 65520.0 {
            return sign | 0x7c00;
        }
        let mut best = 0u16;
        let mut best_error = f64::INFINITY;
        for h in 0..0x7c00u16 {
            let error = (f64::from(f32_from_f16_bits(h)) - target).abs();
            if error < best_error || (error == best_error && h & 1 == 0) {
                best = h;
                best_error = error;
            }
        }
        sign | best
    }

    /// The nearest bf16 (ties to even) computed in f64 from the two candidate neighbours;
    /// infinity counts as 2^128 (IEEE overflow rounding).
    fn slow_bf16(x: f32) -> u16 {
        if x.is_nan() {
            return ((x.to_bits() >> 16) | 0x40) as u16;
        }
        let down = (x.to_bits() >> 16) as u16;
        let up = down.wrapping_add(1);
        let value = |b: u16| {
            let v = f64::from(f32_from_bf16_bits(b));
            if v.is_infinite() {
                v.signum() * 2f64.powi(128)
            } else {
                v
            }
        };
        let (lo, hi) = (value(down), value(up));
        let v = f64::from(x);
        let (d_lo, d_hi) = ((v - lo).abs(), (hi - v).abs());
        if x.is_infinite() || d_lo < d_hi || (d_lo == d_hi && down & 1 == 0) {
            down
        } else {
            up
        }
    }

    fn samples() -> Vec<f32> {
        let mut values = vec![
            0.0,
            -0.0,
            1.0,
            65504.0,
            65519.99,
            65520.0,
            -65520.0,
            f32::MAX,
            f32::MIN_POSITIVE,
            f32::from_bits(1),
            f32::INFINITY,
            f32::NEG_INFINITY,
            2f32.powi(-24),
            2f32.powi(-25),
            -(2f32.powi(-25)),
            2f32.powi(-25) * 1.000_001,
            3.0 * 2f32.powi(-25),
            2f32.powi(-14),
            2f32.powi(-14) * (1.0 - 2f32.powi(-12)),
        ];
        // Every f16 value and the midpoints between neighbours (ties), both signs.
        for h in 0..0x7c00u16 {
            let a = f32_from_f16_bits(h);
            let b = f32_from_f16_bits(h + 1);
            let mid = ((f64::from(a) + f64::from(b)) / 2.0) as f32;
            values.extend([a, -a, mid, -mid, f32::from_bits(mid.to_bits() + 1)]);
            values.push(f32::from_bits(mid.to_bits().wrapping_sub(1)));
        }
        // Pseudo-random bit patterns (xorshift), all exponents.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..1_000_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let bits = state as u32;
            // Half of them in the f16 range, where the rounding is interesting.
            let bits = if state & (1 << 40) == 0 {
                (bits & 0x8fff_ffff) | 0x3000_0000
            } else {
                bits
            };
            values.push(f32::from_bits(bits));
        }
        values
    }

    #[test]
    fn every_f16_pattern_round_trips_through_f32() {
        for h in 0..=u16::MAX {
            let x = f32_from_f16_bits(h);
            let back = f16_bits_from_f32(x);
            if x.is_nan() {
                assert!(f32_from_f16_bits(back).is_nan(), "{h:#06x}");
                assert_eq!(
                    back,
                    h | 0x0200,
                    "{h:#06x}: NaNs become quiet, payload kept"
                );
            } else {
                assert_eq!(back, h, "{h:#06x} -> {x:e}");
            }
        }
    }

    #[test]
    fn f16_widening_is_the_value_of_the_pattern() {
        for h in 0..0x7c00u16 {
            let exponent = i32::from(h >> 10);
            let mantissa = f64::from(h & 0x3ff);
            let value = if exponent == 0 {
                mantissa * 2f64.powi(-24)
            } else {
                (1024.0 + mantissa) * 2f64.powi(exponent - 25)
            };
            assert_eq!(f64::from(f32_from_f16_bits(h)), value, "{h:#06x}");
            assert_eq!(f64::from(f32_from_f16_bits(h | 0x8000)), -value);
        }
        assert_eq!(f32_from_f16_bits(0x7c00), f32::INFINITY);
        assert_eq!(f32_from_f16_bits(0xfc00), f32::NEG_INFINITY);
    }

    #[test]
    fn f16_narrowing_rounds_to_nearest_even() {
        let samples = samples();
        // The slow search is quadratic: check it on a spread-out subset, the rest against the
        // closed-form neighbour test below.
        for x in samples.iter().step_by(997) {
            assert_eq!(
                f16_bits_from_f32(*x),
                slow_f16(*x),
                "{x:e} ({:#010x})",
                x.to_bits()
            );
        }
        for &x in &samples {
            let h = f16_bits_from_f32(x);
            if x.is_nan() {
                assert!(f32_from_f16_bits(h).is_nan());
                continue;
            }
            let got = f64::from(f32_from_f16_bits(h));
            let v = f64::from(x);
            if got.is_infinite() {
                assert!(v.abs() >= 65520.0, "{x:e}");
                continue;
            }
            // No f16 value is nearer; at equal distance the chosen pattern is even.
            let magnitude = h & 0x7fff;
            for neighbour in [magnitude.wrapping_sub(1), magnitude + 1] {
                if neighbour >= 0x7c00 {
                    continue;
                }
                let other = f64::from(f32_from_f16_bits(neighbour | (h & 0x8000)));
                let (d_got, d_other) = ((got - v).abs(), (other - v).abs());
                assert!(
                    d_got < d_other || (d_got == d_other && h & 1 == 0),
                    "{x:e}: {h:#06x} vs {neighbour:#06x}"
                );
            }
            assert_eq!(got.is_sign_negative(), x.is_sign_negative(), "{x:e}");
        }
    }

    #[test]
    fn f16_edges() {
        assert_eq!(f16_bits_from_f32(65504.0), 0x7bff);
        assert_eq!(f16_bits_from_f32(65519.996), 0x7bff);
        assert_eq!(f16_bits_from_f32(65520.0), 0x7c00);
        assert_eq!(f16_bits_from_f32(-1e10), 0xfc00);
        assert_eq!(f16_bits_from_f32(2f32.powi(-24)), 0x0001);
        assert_eq!(
            f16_bits_from_f32(2f32.powi(-25)),
            0x0000,
            "tie to even zero"
        );
        assert_eq!(
            f16_bits_from_f32(3.0 * 2f32.powi(-25)),
            0x0002,
            "tie to even 2"
        );
        assert_eq!(f16_bits_from_f32(-(2f32.powi(-26))), 0x8000);
        assert_eq!(f16_bits_from_f32(f32::from_bits(1)), 0);
        assert_eq!(
            f16_bits_from_f32(1.0 + 2f32.powi(-11)),
            0x3c00,
            "tie to even"
        );
        assert_eq!(f16_bits_from_f32(1.0 + 3.0 * 2f32.powi(-11)), 0x3c02);
        assert_eq!(f16_bits_from_f32(f32::NAN) & 0x7e00, 0x7e00);
        assert_eq!(f16_bits_from_f32(f32::from_bits(0xff80_0001)), 0xfe00);
    }

    #[test]
    fn bf16_widening_and_narrowing() {
        for b in 0..=u16::MAX {
            let x = f32_from_bf16_bits(b);
            assert_eq!(x.to_bits() >> 16, u32::from(b));
            let back = bf16_bits_from_f32(x);
            if x.is_nan() {
                assert_eq!(back, b | 0x40);
            } else {
                assert_eq!(back, b);
            }
        }
        for x in samples() {
            assert_eq!(bf16_bits_from_f32(x), slow_bf16(x), "{x:e}");
        }
        assert_eq!(bf16_bits_from_f32(f32::MAX), 0x7f80, "overflow to infinity");
        assert_eq!(
            bf16_bits_from_f32(f32::from_bits(0x3f80_8000)),
            0x3f80,
            "tie to even"
        );
        assert_eq!(bf16_bits_from_f32(f32::from_bits(0x3f81_8000)), 0x3f82);
        assert_eq!(
            bf16_bits_from_f32(f32::from_bits(0x0000_8001)),
            0x0001,
            "subnormal"
        );
    }
}
