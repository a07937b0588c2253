//! Scans: `F = scan(op, e, axis);` and `F = scan(op, e, axis, exclusive);` as the whole
//! right-hand side of an assignment.

use tessera_ir::{Diagnostic, ReduceOp, Scan, Span};

use super::Lowerer;
use crate::ast::{Expr, ExprKind, Ident};

/// The name of the scan form.
pub(super) const SCAN: &str = "scan";

/// How a scan is written, for help texts.
const USAGE: &str = "F = scan(sum, EXPR, x);";

impl Lowerer<'_> {
    /// The arguments of `value` when it is a call of `scan` (a function cannot take that name).
    pub(super) fn scan_arguments(value: &Expr) -> Option<&[Expr]> {
        match &value.kind {
            ExprKind::Call { function, args } if function.name == SCAN => Some(args),
            _ => None,
        }
    }

    /// The scan written with `args` (`op, operand, axis [, exclusive]`) and its operand.
    pub(super) fn scan<'e>(&mut self, args: &'e [Expr], span: Span) -> Option<(Scan, &'e Expr)> {
        if !(3..=4).contains(&args.len()) {
            self.argument_count(SCAN, 3, args.len(), span, USAGE);
            return None;
        }
        let op = self.scan_op(&args[0]);
        let axis = self.scan_axis(&args[2]);
        let exclusive = match args.get(3) {
            None => Some(false),
            Some(arg) => match bare_name(arg) {
                Some(name) if name.name == "exclusive" => Some(true),
                _ => {
                    self.error(
                        Diagnostic::error("E0082", "a scan's fourth argument must be `exclusive`")
                            .with_primary(arg.span, "not `exclusive`")
                            .with_help("write `scan(sum, e, x, exclusive)` to leave each point's own value out, or give three arguments"),
                    );
                    None
                }
            },
        };
        Some((
            Scan {
                op: op?,
                axis: axis?,
                exclusive: exclusive?,
            },
            &args[1],
        ))
    }

    /// The combining operation of a scan: `sum`, `max` or `min`.
    fn scan_op(&mut self, arg: &Expr) -> Option<ReduceOp> {
        let Some(name) = bare_name(arg) else {
            self.error(
                Diagnostic::error(
                    "E0014",
                    "a scan's first argument must be `sum`, `max` or `min`",
                )
                .with_primary(arg.span, "not an operation")
                .with_help(format!("e.g. `{USAGE}`")),
            );
            return None;
        };
        self.reduce_op(name)
    }

    /// The grid axis a scan runs along, named by its coordinate (`x`, `y`, `z`, `w`).
    fn scan_axis(&mut self, arg: &Expr) -> Option<usize> {
        let names = tessera_ir::axis_names(self.dims.unwrap_or(0));
        let name = bare_name(arg);
        if let Some(axis) = name.and_then(|n| names.iter().position(|a| *a == n.name)) {
            return Some(axis);
        }
        let written = name.map_or_else(|| "this".to_string(), |n| format!("`{}`", n.name));
        let help = format!(
            "the grid's axes are {}, named by their coordinates",
            quoted(&names)
        );
        self.error(
            Diagnostic::error(
                "E0081",
                format!("{written} is not an axis of the grid: a scan runs along an axis"),
            )
            .with_primary(arg.span, "not a grid axis")
            .with_help(help),
        );
        None
    }

    /// Reports a scan written anywhere but as the whole value of `F = ...;`.
    pub(super) fn misplaced_scan(&mut self, span: Span) {
        self.error(
            Diagnostic::error("E0080", "a scan must be the whole right-hand side of an assignment")
                .with_primary(span, "a scan inside an expression")
                .with_help(format!(
                    "assign the scan to a field of its own (`{USAGE}`) and use that field in a later stage"
                )),
        );
    }
}

/// The name `arg` is, when it is a plain name.
fn bare_name(arg: &Expr) -> Option<&Ident> {
    match &arg.kind {
        ExprKind::Name(path) if path.member.is_none() && path.indices.is_empty() => {
            Some(&path.head)
        }
        _ => None,
    }
}

/// `` `z`, `y` and `x` ``.
fn quoted(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => "none".to_string(),
    }
}
