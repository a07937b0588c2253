//! Expressions: the right-hand sides of stages, initial values, reductions and stop conditions.

use crate::arena::Id;
use crate::program::{Field, Local, Param, Reduction, Table};
use crate::span::Span;
use crate::types::{Constant, ScalarType};

/// Handle of an expression in [`crate::Program::exprs`].
pub type ExprId = Id<Expr>;

/// One expression node and where it was written.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// What the node computes.
    pub kind: ExprKind,
    /// Source location (`Span::NONE` for built programs).
    pub span: Span,
}

/// The operation of an expression node; children are handles into the same arena.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// A literal.
    Literal(Constant),
    /// A field read at a constant offset from the current point, one entry per axis (slowest first).
    Read {
        /// The field read.
        field: Id<Field>,
        /// Offset per axis, slowest axis first; all zero for `A` alone.
        offset: Vec<i32>,
    },
    /// A scalar parameter's run-time value.
    Param(Id<Param>),
    /// The current point's index along an axis (0 = slowest), as `i64`.
    Coord(usize),
    /// The step counter `t` (0 in the first step), as `i64`.
    Step,
    /// An input table's element at the step counter plus a constant, `table[t + offset]`.
    TableRead {
        /// The table read.
        table: Id<Table>,
        /// The constant added to the step counter.
        offset: i64,
    },
    /// A `let` binding of the enclosing stage.
    Local(Id<Local>),
    /// The running value of the scan assigning this field in the enclosing stage: the
    /// combination of the points of the line before the current one (the scan's identity at
    /// the first). Only checking creates it, in the value of a scan's assignment.
    ScanAccumulator(Id<Field>),
    /// The latest value of a reduction (only in stop conditions), as `f64`.
    ReductionValue(Id<Reduction>),
    /// A unary operation.
    Unary(UnaryOp, ExprId),
    /// A binary operation.
    Binary(BinaryOp, ExprId, ExprId),
    /// `cond ? then : otherwise`; both branches are evaluated, one is chosen.
    Select {
        /// The condition (bool).
        cond: ExprId,
        /// Value when the condition holds.
        then: ExprId,
        /// Value otherwise.
        otherwise: ExprId,
    },
    /// A math function call.
    Call(MathFn, Vec<ExprId>),
    /// An explicit conversion (`f32(x)`); type checking also inserts these for implicit ones.
    Cast(ScalarType, ExprId),
}

/// Unary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// Arithmetic negation `-x`.
    Neg,
    /// Logical not `!x`.
    Not,
}

impl UnaryOp {
    /// The operator's symbol.
    pub fn symbol(self) -> &'static str {
        match self {
            UnaryOp::Neg => "-",
            UnaryOp::Not => "!",
        }
    }
}

/// Binary operators, from arithmetic to logic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/` (integer division truncates; division by zero gives 0 for integers)
    Div,
    /// `%` (remainder with the sign of the dividend, as C's `%` and `fmod`)
    Rem,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `&&` (both sides are evaluated)
    And,
    /// `||` (both sides are evaluated)
    Or,
}

impl BinaryOp {
    /// The operator's symbol.
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Rem => "%",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::And => "&&",
            BinaryOp::Or => "||",
        }
    }

    /// Binding strength: higher binds tighter (`||` = 1 ... `*` = 5).
    pub fn precedence(self) -> u8 {
        match self {
            BinaryOp::Or => 1,
            BinaryOp::And => 2,
            BinaryOp::Eq
            | BinaryOp::Ne
            | BinaryOp::Lt
            | BinaryOp::Le
            | BinaryOp::Gt
            | BinaryOp::Ge => 3,
            BinaryOp::Add | BinaryOp::Sub => 4,
            BinaryOp::Mul | BinaryOp::Div | BinaryOp::Rem => 5,
        }
    }

    /// Whether the result is a `bool` comparison of the operands.
    pub fn is_comparison(self) -> bool {
        self.precedence() == 3
    }

    /// Whether this is `&&` or `||`.
    pub fn is_logical(self) -> bool {
        matches!(self, BinaryOp::And | BinaryOp::Or)
    }
}

/// Built-in math functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MathFn {
    /// Square root.
    Sqrt,
    /// Reciprocal square root, `1 / sqrt(x)` (computed exactly so in exact mode).
    Rsqrt,
    /// Natural exponential.
    Exp,
    /// Natural logarithm.
    Log,
    /// `pow(x, y)`.
    Pow,
    /// Sine (radians).
    Sin,
    /// Cosine (radians).
    Cos,
    /// `atan2(y, x)` in radians.
    Atan2,
    /// Absolute value.
    Abs,
    /// Minimum of two values (for floats, a NaN operand is ignored, as C's `fmin`).
    Min,
    /// Maximum of two values (for floats, a NaN operand is ignored, as C's `fmax`).
    Max,
    /// Round towards negative infinity.
    Floor,
}

impl MathFn {
    /// Every function, for name lookup and "did you mean" suggestions.
    pub const ALL: [MathFn; 12] = [
        MathFn::Sqrt,
        MathFn::Rsqrt,
        MathFn::Exp,
        MathFn::Log,
        MathFn::Pow,
        MathFn::Sin,
        MathFn::Cos,
        MathFn::Atan2,
        MathFn::Abs,
        MathFn::Min,
        MathFn::Max,
        MathFn::Floor,
    ];

    /// The name used in the language.
    pub fn name(self) -> &'static str {
        match self {
            MathFn::Sqrt => "sqrt",
            MathFn::Rsqrt => "rsqrt",
            MathFn::Exp => "exp",
            MathFn::Log => "log",
            MathFn::Pow => "pow",
            MathFn::Sin => "sin",
            MathFn::Cos => "cos",
            MathFn::Atan2 => "atan2",
            MathFn::Abs => "abs",
            MathFn::Min => "min",
            MathFn::Max => "max",
            MathFn::Floor => "floor",
        }
    }

    /// Looks a function up by name.
    pub fn from_name(name: &str) -> Option<MathFn> {
        MathFn::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Number of arguments.
    pub fn arity(self) -> usize {
        match self {
            MathFn::Pow | MathFn::Atan2 | MathFn::Min | MathFn::Max => 2,
            _ => 1,
        }
    }

    /// Whether exact mode computes it on floats with the exact math library
    /// ([`crate::exact_math`]): `exp log pow sin cos atan2`, and `min max` (whose result for
    /// `+0` and `-0` C leaves open); the others are correctly rounded IEEE-754 operations.
    pub fn in_exact_library(self) -> bool {
        !matches!(
            self,
            MathFn::Sqrt | MathFn::Rsqrt | MathFn::Abs | MathFn::Floor
        )
    }

    /// Whether the function is defined only on floating-point values (`abs`, `min`, `max` also take integers).
    pub fn is_float_only(self) -> bool {
        !matches!(self, MathFn::Abs | MathFn::Min | MathFn::Max)
    }
}
