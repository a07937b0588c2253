//! Scalar element types and constant values.

use std::fmt;

/// The element type of a field, parameter, local or expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScalarType {
    /// Result of comparisons and logic; never stored in a field.
    Bool,
    /// Unsigned 8-bit integer (images, cellular automata); arithmetic wraps.
    U8,
    /// Signed 32-bit integer; arithmetic wraps.
    I32,
    /// Signed 64-bit integer: coordinates, the step counter and size parameters.
    I64,
    /// IEEE binary16, a storage type: fields hold it, reads widen it to `f32` and writes
    /// round to it (see [`crate::half`]).
    F16,
    /// bfloat16 (the upper half of an `f32`), a storage type like [`ScalarType::F16`].
    Bf16,
    /// IEEE binary32.
    F32,
    /// IEEE binary64.
    F64,
}

impl ScalarType {
    /// Every type, in promotion order.
    pub const ALL: [ScalarType; 8] = [
        ScalarType::Bool,
        ScalarType::U8,
        ScalarType::I32,
        ScalarType::I64,
        ScalarType::F16,
        ScalarType::Bf16,
        ScalarType::F32,
        ScalarType::F64,
    ];

    /// The keyword used in the language (`f32`, `u8`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ScalarType::Bool => "bool",
            ScalarType::U8 => "u8",
            ScalarType::I32 => "i32",
            ScalarType::I64 => "i64",
            ScalarType::F16 => "f16",
            ScalarType::Bf16 => "bf16",
            ScalarType::F32 => "f32",
            ScalarType::F64 => "f64",
        }
    }

    /// Parses a type keyword.
    pub fn from_name(name: &str) -> Option<ScalarType> {
        ScalarType::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Whether this is `f32` or `f64`.
    pub fn is_float(self) -> bool {
        matches!(self, ScalarType::F32 | ScalarType::F64)
    }

    /// Whether this is `u8`, `i32` or `i64`.
    pub fn is_integer(self) -> bool {
        matches!(self, ScalarType::U8 | ScalarType::I32 | ScalarType::I64)
    }

    /// Whether a field may have this element type.
    pub fn is_storable(self) -> bool {
        self != ScalarType::Bool
    }

    /// Whether this is `f16` or `bf16`: a type only fields have, never computed in.
    pub fn is_storage_only(self) -> bool {
        matches!(self, ScalarType::F16 | ScalarType::Bf16)
    }

    /// The type a stored value is computed in: `f32` for `f16` and `bf16`, else the type itself.
    pub fn arithmetic_type(self) -> ScalarType {
        if self.is_storage_only() {
            ScalarType::F32
        } else {
            self
        }
    }

    /// Size of one element in bytes.
    pub fn size_bytes(self) -> usize {
        match self {
            ScalarType::Bool | ScalarType::U8 => 1,
            ScalarType::F16 | ScalarType::Bf16 => 2,
            ScalarType::I32 | ScalarType::F32 => 4,
            ScalarType::I64 | ScalarType::F64 => 8,
        }
    }

    /// The NumPy dtype descriptor (`<f4`, `|u1`, ...) of a stored element; `bf16`, which
    /// NumPy lacks, is its bit patterns as `<u2`.
    pub fn numpy_descr(self) -> &'static str {
        match self {
            ScalarType::Bool => "|b1",
            ScalarType::U8 => "|u1",
            ScalarType::I32 => "<i4",
            ScalarType::I64 => "<i8",
            ScalarType::F16 => "<f2",
            ScalarType::Bf16 => "<u2",
            ScalarType::F32 => "<f4",
            ScalarType::F64 => "<f8",
        }
    }
}

impl fmt::Display for ScalarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A literal value as written; its type comes from type checking (see `tessera-analysis`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Constant {
    /// An integer literal.
    Int(i64),
    /// A floating-point literal.
    Float(f64),
    /// `true` or `false`.
    Bool(bool),
}

impl Constant {
    /// The value as f64 (booleans as 0/1).
    pub fn as_f64(self) -> f64 {
        match self {
            Constant::Int(v) => v as f64,
            Constant::Float(v) => v,
            Constant::Bool(b) => f64::from(u8::from(b)),
        }
    }
}

impl fmt::Display for Constant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Constant::Int(v) => write!(f, "{v}"),
            Constant::Float(v) => {
                if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15 {
                    write!(f, "{v:.1}")
                } else {
                    // `{:?}` prints the shortest representation that round-trips.
                    write!(f, "{v:?}")
                }
            }
            Constant::Bool(b) => write!(f, "{b}"),
        }
    }
}
