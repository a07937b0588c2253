//! Scalar values and typed columns (the values of one expression along one grid row), and the
//! [`Element`] trait that ties Rust element types to [`ScalarType`], [`Column`] and [`Buffer`].

use tessera_ir::half::round_to_storage;
use tessera_ir::{Constant, ScalarType};
use tessera_runtime::{BackendError, Buffer};

/// Runs `$body` with the type alias `$T` set to the Rust type of the storable `ScalarType`
/// `$ty`; `$bool` is evaluated for `ScalarType::Bool`, and for `f16`/`bf16`, which no column
/// holds (their values are computed as `f32`; their buffers are read and written apart).
macro_rules! with_element_type {
    ($ty:expr, $T:ident => $body:expr, bool => $bool:expr) => {
        match $ty {
            tessera_ir::ScalarType::Bool
            | tessera_ir::ScalarType::F16
            | tessera_ir::ScalarType::Bf16 => $bool,
            tessera_ir::ScalarType::U8 => {
                type $T = u8;
                $body
            }
            tessera_ir::ScalarType::I32 => {
                type $T = i32;
                $body
            }
            tessera_ir::ScalarType::I64 => {
                type $T = i64;
                $body
            }
            tessera_ir::ScalarType::F32 => {
                type $T = f32;
                $body
            }
            tessera_ir::ScalarType::F64 => {
                type $T = f64;
                $body
            }
        }
    };
}
pub(crate) use with_element_type;

/// An error for a broken interpreter invariant (a checked, bound program never triggers one).
pub(crate) fn internal(what: impl std::fmt::Display) -> BackendError {
    BackendError::Runtime(format!(
        "reference interpreter invariant broken: {what}; this is a bug in Tessera, please report it"
    ))
}

/// One scalar of any type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Value {
    /// A `bool`.
    Bool(bool),
    /// A `u8`.
    U8(u8),
    /// An `i32`.
    I32(i32),
    /// An `i64`.
    I64(i64),
    /// An `f32`.
    F32(f32),
    /// An `f64`.
    F64(f64),
}

impl Value {
    /// A typed constant (literal, parameter value, border value) as a value of `ty`; for
    /// `f16`/`bf16`, the `f32` value the field holds once the `f32` constant is stored.
    pub(crate) fn from_constant(constant: Constant, ty: ScalarType) -> Value {
        let source = match constant {
            Constant::Int(v) => Value::I64(v),
            Constant::Float(v) => Value::F64(v),
            Constant::Bool(b) => Value::Bool(b),
        };
        if ty.is_storage_only() {
            return Value::F32(round_to_storage(ty, f32::from_value(source)));
        }
        with_element_type!(ty, T => T::from_value(source).value(), bool => bool::from_value(source).value())
    }
}

/// The values of one expression at every point of a row, all of one type.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Column {
    /// `bool` values.
    Bool(Vec<bool>),
    /// `u8` values.
    U8(Vec<u8>),
    /// `i32` values.
    I32(Vec<i32>),
    /// `i64` values.
    I64(Vec<i64>),
    /// `f32` values.
    F32(Vec<f32>),
    /// `f64` values.
    F64(Vec<f64>),
}

impl Column {
    /// The element type.
    pub(crate) fn ty(&self) -> ScalarType {
        match self {
            Column::Bool(_) => ScalarType::Bool,
            Column::U8(_) => ScalarType::U8,
            Column::I32(_) => ScalarType::I32,
            Column::I64(_) => ScalarType::I64,
            Column::F32(_) => ScalarType::F32,
            Column::F64(_) => ScalarType::F64,
        }
    }

    /// Number of elements.
    pub(crate) fn len(&self) -> usize {
        match self {
            Column::Bool(v) => v.len(),
            Column::U8(v) => v.len(),
            Column::I32(v) => v.len(),
            Column::I64(v) => v.len(),
            Column::F32(v) => v.len(),
            Column::F64(v) => v.len(),
        }
    }

    /// Element `k` as a column of one.
    pub(crate) fn element(&self, k: usize) -> Column {
        match self {
            Column::Bool(v) => Column::Bool(vec![v[k]]),
            Column::U8(v) => Column::U8(vec![v[k]]),
            Column::I32(v) => Column::I32(vec![v[k]]),
            Column::I64(v) => Column::I64(vec![v[k]]),
            Column::F32(v) => Column::F32(vec![v[k]]),
            Column::F64(v) => Column::F64(vec![v[k]]),
        }
    }

    /// `parts` (columns of `ty`) one after the other.
    pub(crate) fn concat(parts: &[Column], ty: ScalarType) -> Result<Column, BackendError> {
        with_element_type!(ty, T => {
            let mut values: Vec<T> = Vec::new();
            for part in parts {
                values.extend_from_slice(part.slice::<T>()?);
            }
            Ok(T::column(values))
        }, bool => Err(internal("a scan of `bool` values")))
    }

    /// `len` copies of `value`.
    pub(crate) fn splat(value: Value, len: usize) -> Column {
        match value {
            Value::Bool(v) => Column::Bool(vec![v; len]),
            Value::U8(v) => Column::U8(vec![v; len]),
            Value::I32(v) => Column::I32(vec![v; len]),
            Value::I64(v) => Column::I64(vec![v; len]),
            Value::F32(v) => Column::F32(vec![v; len]),
            Value::F64(v) => Column::F64(vec![v; len]),
        }
    }

    /// The elements as typed slice `T`, or an invariant error when the column has another type.
    pub(crate) fn slice<T: Element>(&self) -> Result<&[T], BackendError> {
        T::of_column(self).ok_or_else(|| {
            internal(format!(
                "expected `{}` values, found `{}`",
                T::TY,
                self.ty()
            ))
        })
    }

    /// Every element converted to `f64` (Rust `as`), for reductions; `bool` columns are refused.
    pub(crate) fn to_f64(&self) -> Result<Vec<f64>, BackendError> {
        with_element_type!(self.ty(), T => Ok(self.slice::<T>()?.iter().map(|v| f64::from_value(v.value())).collect()),
            bool => Err(internal("a reduction of `bool` values")))
    }
}

/// A Rust element type of a column: `bool`, `u8`, `i32`, `i64`, `f32` or `f64`.
pub(crate) trait Element: Copy + Send + Sync + PartialEq + PartialOrd + 'static {
    /// The IR type it represents.
    const TY: ScalarType;
    /// As a [`Value`].
    fn value(self) -> Value;
    /// Converts any value to this type as Rust's `as` does (integers wrap, float to integer
    /// truncates and saturates with NaN giving 0; `bool` is 0/1, and a number is `true` when
    /// nonzero).
    fn from_value(value: Value) -> Self;
    /// Wraps values as a column.
    fn column(values: Vec<Self>) -> Column;
    /// The column's values, if it has this type.
    fn of_column(column: &Column) -> Option<&[Self]>;
    /// The buffer's values, if it has this type.
    fn of_buffer(buffer: &Buffer) -> Option<&[Self]>;
    /// The buffer's values, writable, if it has this type.
    fn of_buffer_mut(buffer: &mut Buffer) -> Option<&mut [Self]>;
}

impl Element for bool {
    const TY: ScalarType = ScalarType::Bool;
    fn value(self) -> Value {
        Value::Bool(self)
    }
    fn from_value(value: Value) -> Self {
        match value {
            Value::Bool(b) => b,
            Value::U8(x) => x != 0,
            Value::I32(x) => x != 0,
            Value::I64(x) => x != 0,
            Value::F32(x) => x != 0.0,
            Value::F64(x) => x != 0.0,
        }
    }
    fn column(values: Vec<Self>) -> Column {
        Column::Bool(values)
    }
    fn of_column(column: &Column) -> Option<&[Self]> {
        match column {
            Column::Bool(v) => Some(v),
            _ => None,
        }
    }
    fn of_buffer(_: &Buffer) -> Option<&[Self]> {
        None
    }
    fn of_buffer_mut(_: &mut Buffer) -> Option<&mut [Self]> {
        None
    }
}

/// Implements [`Element`] for a storable number type named like its `ScalarType` variant.
macro_rules! storable_element {
    ($t:ident, $variant:ident) => {
        impl Element for $t {
            const TY: ScalarType = ScalarType::$variant;
            fn value(self) -> Value {
                Value::$variant(self)
            }
            #[allow(clippy::unnecessary_cast)]
            fn from_value(value: Value) -> Self {
                match value {
                    Value::Bool(b) => u8::from(b) as $t,
                    Value::U8(x) => x as $t,
                    Value::I32(x) => x as $t,
                    Value::I64(x) => x as $t,
                    Value::F32(x) => x as $t,
                    Value::F64(x) => x as $t,
                }
            }
            fn column(values: Vec<Self>) -> Column {
                Column::$variant(values)
            }
            fn of_column(column: &Column) -> Option<&[Self]> {
                match column {
                    Column::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn of_buffer(buffer: &Buffer) -> Option<&[Self]> {
                match buffer {
                    Buffer::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn of_buffer_mut(buffer: &mut Buffer) -> Option<&mut [Self]> {
                match buffer {
                    Buffer::$variant(v) => Some(v),
                    _ => None,
                }
            }
        }
    };
}

storable_element!(u8, U8);
storable_element!(i32, I32);
storable_element!(i64, I64);
storable_element!(f32, F32);
storable_element!(f64, F64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_follow_rust_as() {
        assert_eq!(i32::from_value(Value::F64(1e20)), i32::MAX);
        assert_eq!(i32::from_value(Value::F32(f32::NAN)), 0);
        assert_eq!(u8::from_value(Value::I32(-1)), 255);
        assert_eq!(u8::from_value(Value::F64(-3.7)), 0);
        assert_eq!(i64::from_value(Value::F64(-3.7)), -3);
        assert_eq!(f32::from_value(Value::Bool(true)), 1.0);
        assert!(bool::from_value(Value::F64(f64::NAN)));
        assert_eq!(
            Value::from_constant(Constant::Float(0.1), ScalarType::F32),
            Value::F32(0.1)
        );
        assert_eq!(
            Value::from_constant(Constant::Int(200), ScalarType::U8),
            Value::U8(200)
        );
    }
}
