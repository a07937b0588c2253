//! Reads of input tables: `wavelet[t]`, `wavelet[t + k]`, `wavelet[t - k]` (constant `k`).

use tessera_ir::{BinaryOp, Diagnostic, ExprKind as Ir, Id, Span, Table};

use super::Lowerer;
use super::array::IntUse;
use super::inline::parameter;
use super::scope::{Resolved, Use};
use crate::ast::{Expr, ExprKind, Path};

impl Lowerer<'_> {
    /// `table[index]`: the step counter plus a constant, or an error (E0060).
    pub(super) fn table_read(
        &mut self,
        table: Id<Table>,
        path: &Path,
        index: &[Expr],
        brackets: Span,
        at: Use,
    ) -> Option<Ir> {
        let offset = match index {
            [one] => self.step_offset(one, at),
            _ => None,
        };
        if offset.is_none() {
            self.table_index_error(path, brackets);
        }
        Some(Ir::TableRead {
            table,
            offset: offset?,
        })
    }

    /// The error for a table used other than as `table[t + k]`.
    pub(super) fn table_index_error(&mut self, path: &Path, at: Span) {
        let name = path.text();
        self.error(
            Diagnostic::error(
                "E0060",
                format!("the table `{name}` is read only at the step counter plus a constant"),
            )
            .with_primary(at, "not `[t]`, `[t + k]` or `[t - k]`")
            .with_help(format!(
                "write `{name}[t]`, or `{name}[t + 1]` with a constant integer offset, so that the table's length can be checked before the run"
            )),
        );
    }

    /// `k` where `expr` is `t`, `t + k`, `t - k` or `k + t` with a constant integer `k`.
    fn step_offset(&mut self, expr: &Expr, at: Use) -> Option<i64> {
        match &expr.kind {
            ExprKind::Name(path) if self.is_step(path, at) => Some(0),
            ExprKind::Binary(op @ (BinaryOp::Add | BinaryOp::Sub), a, b) => {
                if let ExprKind::Name(path) = &a.kind
                    && self.is_step(path, at)
                {
                    let k = self.compile_time(b, at, IntUse::Offset)?;
                    return if *op == BinaryOp::Add {
                        Some(k)
                    } else {
                        k.checked_neg()
                    };
                }
                match &b.kind {
                    ExprKind::Name(path) if *op == BinaryOp::Add && self.is_step(path, at) => {
                        self.compile_time(a, at, IntUse::Offset)
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// Whether `path` names the step counter `t` at `at` (a built-in name: `t` alone resolves
    /// without error).
    fn is_step(&mut self, path: &Path, at: Use) -> bool {
        path.member.is_none()
            && path.head.name == "t"
            && parameter(path, at).is_none()
            && matches!(self.resolve(path, at), Some(Resolved::Step))
    }
}
