//! Evaluating a program's `until` condition from reduction values, with THE semantics
//! (evaluation in each node's elaborated type, wrapping integers, `x / 0 == 0`, saturating
//! float-to-int casts, `fmin`/`fmax`).

use tessera_analysis::BoundProgram;
use tessera_ir::{BinaryOp, Constant, ExprId, ExprKind, MathFn, ScalarType, UnaryOp};
use tessera_runtime::BackendError;

/// A scalar of one of the language's types (`u8`/`i32` are kept wrapped to their width).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Value {
    Bool(bool),
    Int(i64),
    Float(f64),
}

/// Whether `program`'s `until` condition holds, given the latest value of each reduction (by
/// reduction index). False without a condition, and while a reduction it names has no value.
pub fn stop_condition_holds(
    bound: &BoundProgram,
    latest: &[Option<f64>],
) -> Result<bool, BackendError> {
    let Some(until) = &bound.program().until else {
        return Ok(false);
    };
    let evaluator = Evaluator { bound, latest };
    match evaluator.eval(until.condition)? {
        Some(Value::Bool(holds)) => Ok(holds),
        Some(_) => Err(BackendError::Runtime(
            "the stop condition is not a boolean".into(),
        )),
        None => Ok(false),
    }
}

struct Evaluator<'a> {
    bound: &'a BoundProgram,
    latest: &'a [Option<f64>],
}

impl Evaluator<'_> {
    /// The value of `id` in its elaborated type; `None` while a reduction has no value yet.
    fn eval(&self, id: ExprId) -> Result<Option<Value>, BackendError> {
        let program = self.bound.program();
        let ty = self.bound.checked().ty(id);
        let value = match &program.expr(id).kind {
            ExprKind::Literal(c) => constant(*c, ty),
            ExprKind::Param(p) => constant(self.bound.param(*p), ty),
            ExprKind::ReductionValue(r) => match self.latest.get(r.index()).copied().flatten() {
                Some(v) => Value::Float(v),
                None => return Ok(None),
            },
            ExprKind::Unary(op, a) => {
                let Some(a) = self.eval(*a)? else {
                    return Ok(None);
                };
                match (op, a) {
                    (UnaryOp::Not, Value::Bool(b)) => Value::Bool(!b),
                    (UnaryOp::Neg, Value::Int(v)) => wrap(v.wrapping_neg(), ty),
                    (UnaryOp::Neg, Value::Float(v)) => round(-v, ty),
                    _ => return Err(unexpected(id)),
                }
            }
            ExprKind::Binary(op, a, b) => {
                let (Some(a), Some(b)) = (self.eval(*a)?, self.eval(*b)?) else {
                    return Ok(None);
                };
                binary(*op, a, b, ty).ok_or_else(|| unexpected(id))?
            }
            ExprKind::Select {
                cond,
                then,
                otherwise,
            } => {
                let (Some(c), Some(t), Some(o)) =
                    (self.eval(*cond)?, self.eval(*then)?, self.eval(*otherwise)?)
                else {
                    return Ok(None);
                };
                if c == Value::Bool(true) { t } else { o }
            }
            ExprKind::Cast(to, a) => {
                let Some(a) = self.eval(*a)? else {
                    return Ok(None);
                };
                cast(a, *to)
            }
            ExprKind::Call(function, args) => {
                let mut values = Vec::with_capacity(args.len());
                for arg in args {
                    let Some(v) = self.eval(*arg)? else {
                        return Ok(None);
                    };
                    values.push(v);
                }
                call(*function, &values, ty).ok_or_else(|| unexpected(id))?
            }
            ExprKind::Read { .. } | ExprKind::Coord(_) | ExprKind::Step | ExprKind::Local(_) => {
                return Err(BackendError::Unsupported(
                    "a stop condition may use only reduction values, parameters and literals"
                        .into(),
                ));
            }
        };
        Ok(Some(value))
    }
}

fn unexpected(id: ExprId) -> BackendError {
    BackendError::Runtime(format!(
        "the stop condition has operands of unexpected types at expression {}",
        id.index()
    ))
}

fn constant(c: Constant, ty: ScalarType) -> Value {
    match c {
        Constant::Bool(b) => Value::Bool(b),
        Constant::Int(v) if ty.is_float() => round(v as f64, ty),
        Constant::Int(v) => wrap(v, ty),
        Constant::Float(v) => round(v, ty),
    }
}

/// An integer wrapped to the width of `ty`.
fn wrap(v: i64, ty: ScalarType) -> Value {
    Value::Int(match ty {
        ScalarType::U8 => i64::from(v as u8),
        ScalarType::I32 => i64::from(v as i32),
        _ => v,
    })
}

/// A float rounded to `ty` (f32 values are kept exactly in f64).
fn round(v: f64, ty: ScalarType) -> Value {
    Value::Float(if ty == ScalarType::F32 {
        f64::from(v as f32)
    } else {
        v
    })
}

fn cast(value: Value, to: ScalarType) -> Value {
    match (value, to) {
        (Value::Bool(b), ScalarType::Bool) => Value::Bool(b),
        (Value::Bool(b), t) if t.is_float() => Value::Float(f64::from(u8::from(b))),
        (Value::Bool(b), t) => wrap(i64::from(b), t),
        (Value::Int(v), ScalarType::Bool) => Value::Bool(v != 0),
        (Value::Int(v), t) if t.is_float() => round(v as f64, t),
        (Value::Int(v), t) => wrap(v, t),
        (Value::Float(v), ScalarType::Bool) => Value::Bool(v != 0.0),
        (Value::Float(v), t) if t.is_float() => round(v, t),
        (Value::Float(v), ScalarType::U8) => Value::Int(i64::from(v as u8)),
        (Value::Float(v), ScalarType::I32) => Value::Int(i64::from(v as i32)),
        (Value::Float(v), _) => Value::Int(v as i64),
    }
}

fn binary(op: BinaryOp, a: Value, b: Value, ty: ScalarType) -> Option<Value> {
    use BinaryOp::*;
    Some(match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => Value::Bool(match op {
            And => x && y,
            Or => x || y,
            Eq => x == y,
            Ne => x != y,
            _ => return None,
        }),
        (Value::Int(x), Value::Int(y)) => match op {
            Add => wrap(x.wrapping_add(y), ty),
            Sub => wrap(x.wrapping_sub(y), ty),
            Mul => wrap(x.wrapping_mul(y), ty),
            Div => wrap(if y == 0 { 0 } else { x.wrapping_div(y) }, ty),
            Rem => wrap(if y == 0 { 0 } else { x.wrapping_rem(y) }, ty),
            Eq | Ne | Lt | Le | Gt | Ge => Value::Bool(compare(op, x.cmp(&y) as i8)),
            And | Or => return None,
        },
        (Value::Float(x), Value::Float(y)) => match op {
            Add => round(x + y, ty),
            Sub => round(x - y, ty),
            Mul => round(x * y, ty),
            Div => round(x / y, ty),
            Rem => round(x % y, ty),
            Eq => Value::Bool(x == y),
            Ne => Value::Bool(x != y),
            Lt => Value::Bool(x < y),
            Le => Value::Bool(x <= y),
            Gt => Value::Bool(x > y),
            Ge => Value::Bool(x >= y),
            And | Or => return None,
        },
        _ => return None,
    })
}

fn compare(op: BinaryOp, ordering: i8) -> bool {
    match op {
        BinaryOp::Eq => ordering == 0,
        BinaryOp::Ne => ordering != 0,
        BinaryOp::Lt => ordering < 0,
        BinaryOp::Le => ordering <= 0,
        BinaryOp::Gt => ordering > 0,
        _ => ordering >= 0,
    }
}

/// Math functions; f32 results are computed in f32 as the generated code does.
fn call(function: MathFn, args: &[Value], ty: ScalarType) -> Option<Value> {
    match (function, args) {
        (MathFn::Abs, [Value::Int(v)]) => Some(wrap(v.wrapping_abs(), ty)),
        (MathFn::Min, [Value::Int(x), Value::Int(y)]) => Some(Value::Int(*x.min(y))),
        (MathFn::Max, [Value::Int(x), Value::Int(y)]) => Some(Value::Int(*x.max(y))),
        (_, [Value::Float(x)]) if ty == ScalarType::F32 => {
            unary_f32(function, *x as f32).map(|v| Value::Float(f64::from(v)))
        }
        (_, [Value::Float(x)]) => unary_f64(function, *x).map(Value::Float),
        (_, [Value::Float(x), Value::Float(y)]) if ty == ScalarType::F32 => {
            binary_f32(function, *x as f32, *y as f32).map(|v| Value::Float(f64::from(v)))
        }
        (_, [Value::Float(x), Value::Float(y)]) => binary_f64(function, *x, *y).map(Value::Float),
        _ => None,
    }
}

macro_rules! float_functions {
    ($unary:ident, $binary:ident, $t:ty) => {
        fn $unary(function: MathFn, x: $t) -> Option<$t> {
            Some(match function {
                MathFn::Sqrt => x.sqrt(),
                MathFn::Rsqrt => 1.0 / x.sqrt(),
                MathFn::Exp => x.exp(),
                MathFn::Log => x.ln(),
                MathFn::Sin => x.sin(),
                MathFn::Cos => x.cos(),
                MathFn::Abs => x.abs(),
                MathFn::Floor => x.floor(),
                _ => return None,
            })
        }

        fn $binary(function: MathFn, x: $t, y: $t) -> Option<$t> {
            Some(match function {
                MathFn::Pow => x.powf(y),
                MathFn::Atan2 => x.atan2(y),
                MathFn::Min => x.min(y),
                MathFn::Max => x.max(y),
                _ => return None,
            })
        }
    };
}

float_functions!(unary_f32, binary_f32, f32);
float_functions!(unary_f64, binary_f64, f64);

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tessera_ir::builder::ProgramBuilder;
    use tessera_ir::{SizeExpr, UnaryOp};

    use super::*;

    /// A program with two reductions and `until (a < limit && !(b > 2)) || i32(a) == 7`.
    fn program() -> BoundProgram {
        let mut b = ProgramBuilder::new("stop");
        let n = b.param("N", ScalarType::I64, Constant::Int(4));
        let limit = b.param("limit", ScalarType::F64, Constant::Float(1.5));
        b.grid(vec![SizeExpr::Param(n)]);
        let u = b.field("u", ScalarType::F64);
        let mut stage = b.stage("copy");
        let here = b.read(u, &[0]);
        stage.assign(u, here);
        b.finish_stage(stage);
        let (ra, rb) = (b.read(u, &[0]), b.read(u, &[0]));
        let a = b.reduce_after_step("a", tessera_ir::ReduceOp::Sum, ra, None, 1);
        let c = b.reduce_after_step("b", tessera_ir::ReduceOp::Max, rb, None, 2);
        let (va, vb, limit) = (
            b.reduction_value(a),
            b.reduction_value(c),
            b.param_value(limit),
        );
        let below = b.binary(BinaryOp::Lt, va, limit);
        let two = b.lit(Constant::Int(2));
        let above = b.binary(BinaryOp::Gt, vb, two);
        let not_above = b.unary(UnaryOp::Not, above);
        let both = b.binary(BinaryOp::And, below, not_above);
        let va = b.reduction_value(a);
        let truncated = b.cast(ScalarType::I32, va);
        let seven = b.lit(Constant::Int(7));
        let is_seven = b.binary(BinaryOp::Eq, truncated, seven);
        let condition = b.binary(BinaryOp::Or, both, is_seven);
        b.until(condition);
        let checked = tessera_analysis::check(&b.finish()).expect("checks");
        tessera_analysis::bind(Arc::new(checked), &[]).expect("binds")
    }

    #[test]
    fn evaluates_in_the_elaborated_types_once_every_value_exists() {
        let bound = program();
        let holds = |a: Option<f64>, b: Option<f64>| stop_condition_holds(&bound, &[a, b]).unwrap();
        assert!(!holds(Some(1.0), None), "`b` has no value yet");
        assert!(holds(Some(1.0), Some(2.0)));
        assert!(!holds(Some(1.0), Some(2.5)));
        assert!(!holds(Some(1.5), Some(0.0)), "1.5 < 1.5 is false");
        assert!(holds(Some(7.9), Some(9.0)), "i32(7.9) truncates to 7");
        assert!(
            !holds(Some(f64::NAN), Some(9.0)),
            "NaN compares false and casts to 0"
        );
    }
}
