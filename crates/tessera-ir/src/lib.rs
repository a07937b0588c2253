//! Tessera's stencil IR: a grid, parameters, fields, an ordered sequence of stages per time step,
//! reductions and a stop condition — plain data addressed by typed handles.
//!
//! Invariants: the IR does no I/O; it holds what the user wrote (or built) and nothing derived.
//! Types, footprints and regions are computed by `tessera-analysis`; a program is only handed to
//! backends once that crate has checked it.

pub mod arena;
pub mod builder;
pub mod diagnostic;
pub mod escape;
pub mod exact_math;
pub mod expr;
pub mod half;
pub mod printer;
pub mod program;
pub mod span;
pub mod types;

pub use arena::{Arena, Id};
pub use diagnostic::{Diagnostic, Label, Severity};
pub use expr::{BinaryOp, Expr, ExprId, ExprKind, MathFn, UnaryOp};
pub use printer::{print_expr, print_program};
pub use program::{
    Border, Field, FieldGroup, Local, Param, Program, Range, Receiver, ReceiverPoints, ReduceOp,
    Reduction, ReductionPlacement, Region, Scan, SizeExpr, SizeOp, Stage, Statement, StopCondition,
    Table, axis_names,
};
pub use span::Span;
pub use types::{Constant, ScalarType};
