//! Loops unrolled in the front end: `for i in lo..hi { ... }` statements and
//! `sum(i in lo..hi, e)` expressions. The IR has no node for either.

use std::ops::Range;

use tessera_ir::{BinaryOp, Diagnostic, Expr as IrExpr, ExprId, ExprKind as Ir, Span};

use super::Lowerer;
use super::array::{IntUse, MAX_UNROLLED};
use super::scope::{LoopVar, Use};
use crate::ast::{Expr, Ident};

impl Lowerer<'_> {
    /// The values of the loop variable `var` over `lo..hi`, counted against the program's
    /// limit on unrolled iterations; reports a variable that hides another loop's.
    pub(super) fn loop_values(
        &mut self,
        var: &Ident,
        (lo, hi): (&Expr, &Expr),
        span: Span,
        at: Use,
    ) -> Option<Range<i64>> {
        let (lo, hi) = (
            self.compile_time(lo, at, IntUse::Bound),
            self.compile_time(hi, at, IntUse::Bound),
        );
        if !self.allowed_name(var) {
            return None;
        }
        if let Some(outer) = LoopVar::find(at.loops, &var.name) {
            let help = "give each nested loop its own variable";
            self.duplicate(var, outer.span, "loop variable", help);
            return None;
        }
        let values = lo?..hi?;
        let count = values.end.saturating_sub(values.start).max(0);
        self.unrolled = self.unrolled.saturating_add(count);
        if self.unrolled > MAX_UNROLLED {
            if !std::mem::replace(&mut self.unroll_reported, true) {
                self.error(
                    Diagnostic::error("E0051", format!("the program unrolls more than {MAX_UNROLLED} loop iterations"))
                        .with_primary(span, format!("{count} iterations here"))
                        .with_help("`for` loops and `sum` are unrolled when compiling, every iteration a copy of the body; loop over fewer values, or use fewer nested loops"),
                );
            }
            return None;
        }
        Some(values)
    }

    /// `sum(var in lo..hi, body)`: the body for each value, added left to right.
    pub(super) fn unrolled_sum(
        &mut self,
        var: &Ident,
        bounds: (&Expr, &Expr),
        body: &Expr,
        span: Span,
        at: Use,
    ) -> Option<ExprId> {
        let values = self.loop_values(var, bounds, span, at)?;
        if values.is_empty() {
            self.error(
                Diagnostic::error("E0046", format!("the sum over `{}` has no terms", var.name))
                    .with_primary(span, format!("{}..{} is empty", values.start, values.end))
                    .with_help(
                        "a `sum` adds at least one term: its upper bound is above its lower bound",
                    ),
            );
            return None;
        }
        let mut total: Option<Option<ExprId>> = None;
        for value in values {
            let iteration = LoopVar {
                name: &var.name,
                value,
                span: var.span,
                outer: at.loops,
            };
            let term = self.value(body, at.in_loop(&iteration));
            total = Some(match total {
                None => term,
                Some(sum) => sum.zip(term).map(|(sum, term)| {
                    self.program.exprs.alloc(IrExpr {
                        kind: Ir::Binary(BinaryOp::Add, sum, term),
                        span,
                    })
                }),
            });
        }
        total.flatten()
    }
}
