//! THE element semantics of every operator and math function, applied element-wise to columns.
//!
//! Integers wrap; integer `/` and `%` by zero give 0; float `%` is C's `fmod`; `min`/`max` on
//! floats ignore a NaN operand (C's `fmin`/`fmax`); `rsqrt(x)` is `1 / sqrt(x)`; conversions are
//! Rust's `as` (see [`Element::from_value`]); `exp log pow sin cos atan2` and float `min max`
//! are the exact math library ([`tessera_ir::exact_math`]), which every backend computes
//! bitwise in exact mode.

use tessera_ir::{BinaryOp, MathFn, ScalarType, UnaryOp, exact_math, half};
use tessera_runtime::BackendError;

use crate::value::{Column, Element, internal, with_element_type};

/// Arithmetic shared by integers and floats.
pub(crate) trait Number: Element {
    /// `a + b`.
    fn add(a: Self, b: Self) -> Self;
    /// `a - b`.
    fn sub(a: Self, b: Self) -> Self;
    /// `a * b`.
    fn mul(a: Self, b: Self) -> Self;
    /// `a / b`.
    fn div(a: Self, b: Self) -> Self;
    /// `a % b`.
    fn rem(a: Self, b: Self) -> Self;
    /// `-a`.
    fn neg(a: Self) -> Self;
    /// `abs(a)`.
    fn abs(a: Self) -> Self;
    /// `min(a, b)`.
    fn min(a: Self, b: Self) -> Self;
    /// `max(a, b)`.
    fn max(a: Self, b: Self) -> Self;
}

/// Implements [`Number`] for a wrapping integer type; `$abs` is its absolute value.
macro_rules! integer_number {
    ($t:ty, $abs:expr) => {
        impl Number for $t {
            fn add(a: Self, b: Self) -> Self {
                a.wrapping_add(b)
            }
            fn sub(a: Self, b: Self) -> Self {
                a.wrapping_sub(b)
            }
            fn mul(a: Self, b: Self) -> Self {
                a.wrapping_mul(b)
            }
            fn div(a: Self, b: Self) -> Self {
                if b == 0 { 0 } else { a.wrapping_div(b) }
            }
            fn rem(a: Self, b: Self) -> Self {
                if b == 0 { 0 } else { a.wrapping_rem(b) }
            }
            fn neg(a: Self) -> Self {
                a.wrapping_neg()
            }
            fn abs(a: Self) -> Self {
                let abs: fn(Self) -> Self = $abs;
                abs(a)
            }
            fn min(a: Self, b: Self) -> Self {
                Ord::min(a, b)
            }
            fn max(a: Self, b: Self) -> Self {
                Ord::max(a, b)
            }
        }
    };
}

integer_number!(u8, |a| a);
integer_number!(i32, i32::wrapping_abs);
integer_number!(i64, i64::wrapping_abs);

/// Floating-point types: arithmetic plus the math functions.
pub(crate) trait Real: Number {
    /// `sqrt(a)`.
    fn sqrt(a: Self) -> Self;
    /// `1 / sqrt(a)`.
    fn rsqrt(a: Self) -> Self;
    /// `exp(a)`.
    fn exp(a: Self) -> Self;
    /// `log(a)` (natural).
    fn log(a: Self) -> Self;
    /// `pow(a, b)`.
    fn pow(a: Self, b: Self) -> Self;
    /// `sin(a)`.
    fn sin(a: Self) -> Self;
    /// `cos(a)`.
    fn cos(a: Self) -> Self;
    /// `atan2(y, x)`.
    fn atan2(y: Self, x: Self) -> Self;
    /// `floor(a)`.
    fn floor(a: Self) -> Self;
}

/// Implements [`Number`] and [`Real`] for a float type with the C library's semantics and the
/// exact math library's functions `$exp`, `$log`, `$pow`, `$sin`, `$cos`, `$atan2`, `$min` and
/// `$max`.
macro_rules! float_number {
    ($t:ident, $exp:ident, $log:ident, $pow:ident, $sin:ident, $cos:ident, $atan2:ident, $min:ident, $max:ident) => {
        impl Number for $t {
            fn add(a: Self, b: Self) -> Self {
                a + b
            }
            fn sub(a: Self, b: Self) -> Self {
                a - b
            }
            fn mul(a: Self, b: Self) -> Self {
                a * b
            }
            fn div(a: Self, b: Self) -> Self {
                a / b
            }
            fn rem(a: Self, b: Self) -> Self {
                // Rust's float `%` is C's `fmod`.
                a % b
            }
            fn neg(a: Self) -> Self {
                -a
            }
            fn abs(a: Self) -> Self {
                a.abs()
            }
            fn min(a: Self, b: Self) -> Self {
                // NaN-ignoring, like C's `fmin`; -0 below +0.
                exact_math::$min(a, b)
            }
            fn max(a: Self, b: Self) -> Self {
                exact_math::$max(a, b)
            }
        }

        impl Real for $t {
            fn sqrt(a: Self) -> Self {
                a.sqrt()
            }
            fn rsqrt(a: Self) -> Self {
                1.0 / a.sqrt()
            }
            fn exp(a: Self) -> Self {
                exact_math::$exp(a)
            }
            fn log(a: Self) -> Self {
                exact_math::$log(a)
            }
            fn pow(a: Self, b: Self) -> Self {
                exact_math::$pow(a, b)
            }
            fn sin(a: Self) -> Self {
                exact_math::$sin(a)
            }
            fn cos(a: Self) -> Self {
                exact_math::$cos(a)
            }
            fn atan2(y: Self, x: Self) -> Self {
                exact_math::$atan2(y, x)
            }
            fn floor(a: Self) -> Self {
                a.floor()
            }
        }
    };
}

float_number!(
    f32, exp_f32, log_f32, pow_f32, sin_f32, cos_f32, atan2_f32, min_f32, max_f32
);
float_number!(
    f64, exp_f64, log_f64, pow_f64, sin_f64, cos_f64, atan2_f64, min_f64, max_f64
);

/// `f` applied to every element.
fn map<T: Element, U: Element>(a: &[T], f: impl Fn(T) -> U) -> Column {
    U::column(a.iter().map(|&x| f(x)).collect())
}

/// `f` applied to every pair of elements.
fn zip<T: Element, U: Element>(
    a: &[T],
    b: &[T],
    f: impl Fn(T, T) -> U,
) -> Result<Column, BackendError> {
    if a.len() != b.len() {
        return Err(internal(format!(
            "operands of {} and {} elements",
            a.len(),
            b.len()
        )));
    }
    Ok(U::column(a.iter().zip(b).map(|(&x, &y)| f(x, y)).collect()))
}

/// A unary operation on a column of the node's type.
pub(crate) fn unary(op: UnaryOp, a: &Column) -> Result<Column, BackendError> {
    match op {
        UnaryOp::Not => Ok(map(a.slice::<bool>()?, |x: bool| !x)),
        UnaryOp::Neg => {
            with_element_type!(a.ty(), T => Ok(map(a.slice::<T>()?, <T as Number>::neg)),
            bool => Err(internal("negation of a `bool`")))
        }
    }
}

/// A binary operation; both operands have the same (operand) type.
pub(crate) fn binary(op: BinaryOp, a: &Column, b: &Column) -> Result<Column, BackendError> {
    if a.ty() != b.ty() {
        return Err(internal(format!(
            "`{}` between `{}` and `{}`",
            op.symbol(),
            a.ty(),
            b.ty()
        )));
    }
    match op {
        BinaryOp::And => zip(a.slice::<bool>()?, b.slice::<bool>()?, |x, y| x && y),
        BinaryOp::Or => zip(a.slice::<bool>()?, b.slice::<bool>()?, |x, y| x || y),
        _ if op.is_comparison() => {
            with_element_type!(a.ty(), T => compare(op, a.slice::<T>()?, b.slice::<T>()?),
                bool => compare(op, a.slice::<bool>()?, b.slice::<bool>()?))
        }
        _ => with_element_type!(a.ty(), T => arithmetic(op, a.slice::<T>()?, b.slice::<T>()?),
            bool => Err(internal(format!("`{}` on `bool`s", op.symbol())))),
    }
}

/// A comparison, giving `bool`s (IEEE: every comparison with NaN is false except `!=`).
fn compare<T: Element>(op: BinaryOp, a: &[T], b: &[T]) -> Result<Column, BackendError> {
    let f: fn(&T, &T) -> bool = match op {
        BinaryOp::Eq => T::eq,
        BinaryOp::Ne => T::ne,
        BinaryOp::Lt => T::lt,
        BinaryOp::Le => T::le,
        BinaryOp::Gt => T::gt,
        BinaryOp::Ge => T::ge,
        _ => return Err(internal(format!("`{}` is not a comparison", op.symbol()))),
    };
    zip(a, b, |x, y| f(&x, &y))
}

/// An arithmetic operation in the operands' type.
fn arithmetic<T: Number>(op: BinaryOp, a: &[T], b: &[T]) -> Result<Column, BackendError> {
    let f: fn(T, T) -> T = match op {
        BinaryOp::Add => T::add,
        BinaryOp::Sub => T::sub,
        BinaryOp::Mul => T::mul,
        BinaryOp::Div => T::div,
        BinaryOp::Rem => T::rem,
        _ => return Err(internal(format!("`{}` is not arithmetic", op.symbol()))),
    };
    zip(a, b, f)
}

/// A math function call; every argument has the node's type.
pub(crate) fn call(function: MathFn, args: &[Column]) -> Result<Column, BackendError> {
    let (first, rest) = args
        .split_first()
        .ok_or_else(|| internal(format!("`{}` without arguments", function.name())))?;
    if rest.len() + 1 != function.arity() || rest.iter().any(|c| c.ty() != first.ty()) {
        return Err(internal(format!(
            "`{}` with mismatched arguments",
            function.name()
        )));
    }
    match function {
        MathFn::Abs => {
            with_element_type!(first.ty(), T => Ok(map(first.slice::<T>()?, <T as Number>::abs)),
            bool => Err(internal("`abs` of a `bool`")))
        }
        MathFn::Min | MathFn::Max => {
            let second = &rest[0];
            with_element_type!(first.ty(), T => {
                let f: fn(T, T) -> T = if function == MathFn::Min { <T as Number>::min } else { <T as Number>::max };
                zip(first.slice::<T>()?, second.slice::<T>()?, f)
            }, bool => Err(internal(format!("`{}` of `bool`s", function.name()))))
        }
        _ => match first.ty() {
            ScalarType::F32 => real_call::<f32>(function, first, rest),
            ScalarType::F64 => real_call::<f64>(function, first, rest),
            other => Err(internal(format!(
                "`{}` of `{other}` values",
                function.name()
            ))),
        },
    }
}

/// A float-only math function.
fn real_call<T: Real>(
    function: MathFn,
    first: &Column,
    rest: &[Column],
) -> Result<Column, BackendError> {
    let a = first.slice::<T>()?;
    let unary: fn(T) -> T = match function {
        MathFn::Sqrt => T::sqrt,
        MathFn::Rsqrt => T::rsqrt,
        MathFn::Exp => T::exp,
        MathFn::Log => T::log,
        MathFn::Sin => T::sin,
        MathFn::Cos => T::cos,
        MathFn::Floor => T::floor,
        MathFn::Pow | MathFn::Atan2 => {
            let f: fn(T, T) -> T = if function == MathFn::Pow {
                T::pow
            } else {
                T::atan2
            };
            return zip(a, rest[0].slice::<T>()?, f);
        }
        MathFn::Abs | MathFn::Min | MathFn::Max => {
            return Err(internal("not a float-only function"));
        }
    };
    Ok(map(a, unary))
}

/// `cond ? then : otherwise`, element-wise (both sides were evaluated).
pub(crate) fn select(
    cond: &Column,
    then: &Column,
    otherwise: &Column,
) -> Result<Column, BackendError> {
    let cond = cond.slice::<bool>()?;
    if then.ty() != otherwise.ty() {
        return Err(internal(format!(
            "select between `{}` and `{}`",
            then.ty(),
            otherwise.ty()
        )));
    }
    with_element_type!(then.ty(), T => pick(cond, then.slice::<T>()?, otherwise.slice::<T>()?),
        bool => pick(cond, then.slice::<bool>()?, otherwise.slice::<bool>()?))
}

/// Element-wise choice between two slices.
fn pick<T: Element>(cond: &[bool], then: &[T], otherwise: &[T]) -> Result<Column, BackendError> {
    if cond.len() != then.len() || then.len() != otherwise.len() {
        return Err(internal("select operands of different lengths"));
    }
    Ok(T::column(
        cond.iter()
            .zip(then.iter().zip(otherwise))
            .map(|(&c, (&t, &o))| if c { t } else { o })
            .collect(),
    ))
}

/// Converts every element to `to` (Rust `as` semantics).
pub(crate) fn cast(a: &Column, to: ScalarType) -> Result<Column, BackendError> {
    with_element_type!(a.ty(), T => Ok(convert_all(a.slice::<T>()?, to)),
        bool => Ok(convert_all(a.slice::<bool>()?, to)))
}

/// Every `f32` element rounded to the storage type `ty` and widened back (a `Cast` to
/// `f16`/`bf16`, whose values the interpreter holds as `f32`).
pub(crate) fn round_to_storage(a: Column, ty: ScalarType) -> Result<Column, BackendError> {
    let values = a.slice::<f32>()?;
    Ok(Column::F32(
        values
            .iter()
            .map(|&x| half::round_to_storage(ty, x))
            .collect(),
    ))
}

/// Converts a slice of `T` to a column of `to`.
fn convert_all<T: Element>(values: &[T], to: ScalarType) -> Column {
    with_element_type!(to, U => map(values, |x| U::from_value(x.value())),
        bool => map(values, |x| bool::from_value(x.value())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_edge_cases() {
        assert_eq!(<i32 as Number>::div(i32::MIN, -1), i32::MIN);
        assert_eq!(<i32 as Number>::rem(i32::MIN, -1), 0);
        assert_eq!(<u8 as Number>::div(7, 0), 0);
        assert_eq!(<i64 as Number>::rem(7, 0), 0);
        assert_eq!(<u8 as Number>::sub(1, 2), 255);
        assert_eq!(<i32 as Number>::abs(i32::MIN), i32::MIN);
        assert_eq!(<i32 as Number>::rem(-7, 2), -1);
    }

    #[test]
    fn float_edge_cases() {
        assert_eq!(<f64 as Number>::min(f64::NAN, 1.0), 1.0);
        assert_eq!(<f32 as Number>::max(2.0, f32::NAN), 2.0);
        assert_eq!(<f64 as Number>::rem(-7.5, 2.0), -1.5);
        assert_eq!(<f32 as Real>::rsqrt(4.0), 0.5);
    }
}
