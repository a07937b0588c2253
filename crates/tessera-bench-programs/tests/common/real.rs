//! The element types the formulas are written over: `f32` and `f64`, with exactly the
//! conversions the checker elaborates (a literal is its `f64` value rounded to the type, an
//! integer is converted with `as`).

use std::fmt::Debug;
use std::ops::{Add, Div, Mul, Neg, Rem, Sub};

use tessera_runtime::Buffer;

/// A float element type of a benchmark program (`real = f32` or `real = f64`).
pub trait Real:
    Copy
    + Debug
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Rem<Output = Self>
    + Neg<Output = Self>
    + 'static
{
    /// The type's name in the language, the value given to `--set real=...`.
    const NAME: &'static str;
    /// A literal as the checker types it: its `f64` value converted to this type.
    fn lit(value: f64) -> Self;
    /// An integer converted as the language's conversions do (`real(i)`, assignment of `t`).
    fn from_i64(value: i64) -> Self;
    /// Square root (correctly rounded).
    fn sqrt(self) -> Self;
    /// Two-argument arc tangent.
    fn atan2(self, x: Self) -> Self;
    /// Round towards minus infinity.
    fn floor(self) -> Self;
    /// The value widened to `f64` (exact).
    fn to_f64(self) -> f64;
    /// Whether the two values are the same bits (any NaN equals any NaN).
    fn same(self, other: Self) -> bool;
    /// A value in [0, 1) from 64 random bits.
    fn unit(bits: u64) -> Self;
    /// The elements of a buffer of this type (panics on another type: the program is wrong).
    fn slice(buffer: &Buffer) -> &[Self];
    /// A buffer holding `values`.
    fn buffer(values: Vec<Self>) -> Buffer;
}

impl Real for f32 {
    const NAME: &'static str = "f32";
    fn lit(value: f64) -> Self {
        value as f32
    }
    fn from_i64(value: i64) -> Self {
        value as f32
    }
    fn sqrt(self) -> Self {
        f32::sqrt(self)
    }
    fn atan2(self, x: Self) -> Self {
        f32::atan2(self, x)
    }
    fn floor(self) -> Self {
        f32::floor(self)
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn same(self, other: Self) -> bool {
        self.to_bits() == other.to_bits() || (self.is_nan() && other.is_nan())
    }
    fn unit(bits: u64) -> Self {
        (bits >> 40) as f32 / (1u64 << 24) as f32
    }
    fn slice(buffer: &Buffer) -> &[Self] {
        match buffer {
            Buffer::F32(v) => v,
            other => panic!("expected an f32 field, found {}", other.ty()),
        }
    }
    fn buffer(values: Vec<Self>) -> Buffer {
        Buffer::F32(values.into())
    }
}

impl Real for f64 {
    const NAME: &'static str = "f64";
    fn lit(value: f64) -> Self {
        value
    }
    fn from_i64(value: i64) -> Self {
        value as f64
    }
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
    fn atan2(self, x: Self) -> Self {
        f64::atan2(self, x)
    }
    fn floor(self) -> Self {
        f64::floor(self)
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn same(self, other: Self) -> bool {
        self.to_bits() == other.to_bits() || (self.is_nan() && other.is_nan())
    }
    fn unit(bits: u64) -> Self {
        (bits >> 11) as f64 / (1u64 << 53) as f64
    }
    fn slice(buffer: &Buffer) -> &[Self] {
        match buffer {
            Buffer::F64(v) => v,
            other => panic!("expected an f64 field, found {}", other.ty()),
        }
    }
    fn buffer(values: Vec<Self>) -> Buffer {
        Buffer::F64(values.into())
    }
}
