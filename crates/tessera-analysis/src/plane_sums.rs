//! Plane sums: a stage whose output is a function of one float sum, each of whose terms reads
//! one plane along an axis (`0.5 * A[-1, 0, 1]` reads plane -1 along axis 0).
//!
//! A plane sweep can then reorder the sum (associative reordering, Rawat et al.): when a plane
//! arrives, it adds the terms that read it into the partial sums of every output it feeds, so
//! each plane's neighbours are read once, where the written order reads each plane once per
//! output that needs it (three times in a 27-point box). The value changes with the order of
//! the additions, so only non-exact mode may reorder.

use tessera_ir::{BinaryOp, ExprId, ExprKind, Field, Id, ScalarType, Stage, Statement, UnaryOp};

use crate::CheckedProgram;
use crate::chains::children;

/// A stage's output as `finish(sum)`, the sum's terms grouped by the plane they read.
#[derive(Clone, Debug, PartialEq)]
pub struct PlaneSums {
    /// The field the stage writes.
    pub output: Id<Field>,
    /// The one field its terms read.
    pub field: Id<Field>,
    /// The sum (an `+`/`-` chain) the output's value is a function of: every read of the
    /// stage lies in it.
    pub sum: ExprId,
    /// The sum's type (f32 or f64).
    pub ty: ScalarType,
    /// The terms by the plane they read, in ascending plane order (read-free terms join the
    /// first plane's).
    pub planes: Vec<PlaneTerms>,
}

/// The terms of a plane sum that read one plane.
#[derive(Clone, Debug, PartialEq)]
pub struct PlaneTerms {
    /// The plane's offset along the axis.
    pub offset: i32,
    /// The terms, in written order.
    pub terms: Vec<SumTerm>,
    /// Whether some term reads a neighbour off the axis (a point other than its own column).
    pub off_axis: bool,
    /// Whether another plane's terms are the same but for the plane they read (a Gaussian's
    /// rows 2 apart, every row of a box): summed apart, both sums are one expression at an
    /// arriving plane, which a compiler computes once.
    pub repeated: bool,
}

/// One term of a sum: an expression, added or (after a `-`) subtracted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SumTerm {
    /// The term's expression.
    pub expr: ExprId,
    /// Whether the sum subtracts it.
    pub negated: bool,
}

impl PlaneSums {
    /// The lowest and highest plane offsets the terms read.
    pub fn span(&self) -> (i32, i32) {
        let first = self.planes.first().map_or(0, |p| p.offset);
        let last = self.planes.last().map_or(0, |p| p.offset);
        (first, last)
    }

    /// Planes whose terms read neighbours off the axis: reordering reads each such plane's
    /// neighbours once instead of once per plane offset.
    pub fn off_axis_planes(&self) -> usize {
        self.planes.iter().filter(|p| p.off_axis).count()
    }
}

/// The plane sums of `stage` along `axis`, when its one statement assigns (without a scan) a
/// float field a value whose reads all lie in one `+`/`-` chain; whose terms each read one
/// field, the same for all, at one offset along `axis`, and neither a coordinate nor a `let`;
/// and where the stage has no in-stage reductions.
pub fn plane_sums(checked: &CheckedProgram, stage: Id<Stage>, axis: usize) -> Option<PlaneSums> {
    let program = checked.program();
    let [
        Statement::Assign {
            field: output,
            value,
            scan: None,
            ..
        },
    ] = program.stages[stage].body.as_slice()
    else {
        return None;
    };
    if !checked.stage_reductions(stage).is_empty() {
        return None;
    }
    let sum = sum_root(checked, *value)?;
    let ty = checked.ty(sum);
    let mut terms = Vec::new();
    chain_terms(checked, sum, ty, false, &mut terms);
    if terms.len() < 2 {
        return None;
    }
    let mut field = None;
    let mut planes: Vec<PlaneTerms> = Vec::new();
    let mut read_free = Vec::new();
    for term in terms {
        let Some(read) = term_plane(checked, term.expr, axis)? else {
            read_free.push(term);
            continue;
        };
        if *field.get_or_insert(read.field) != read.field {
            return None;
        }
        match planes.iter_mut().find(|p| p.offset == read.offset) {
            Some(plane) => {
                plane.terms.push(term);
                plane.off_axis |= read.off_axis;
            }
            None => planes.push(PlaneTerms {
                offset: read.offset,
                terms: vec![term],
                off_axis: read.off_axis,
                repeated: false,
            }),
        }
    }
    planes.sort_by_key(|p| p.offset);
    planes.first_mut()?.terms.extend(read_free);
    for k in 0..planes.len() {
        planes[k].repeated = (0..planes.len())
            .any(|j| j != k && same_but_plane(checked, &planes[k].terms, &planes[j].terms, axis));
    }
    Some(PlaneSums {
        output: *output,
        field: field?,
        sum,
        ty,
        planes,
    })
}

/// Whether terms `a` and `b` are the same but for the plane they read along `axis`.
fn same_but_plane(checked: &CheckedProgram, a: &[SumTerm], b: &[SumTerm], axis: usize) -> bool {
    a.len() == b.len()
        && (a.iter().zip(b))
            .all(|(x, y)| x.negated == y.negated && same_expr(checked, x.expr, y.expr, axis))
}

/// Whether expressions `a` and `b` are the same but for the offsets of their reads along
/// `axis`.
fn same_expr(checked: &CheckedProgram, a: ExprId, b: ExprId, axis: usize) -> bool {
    let exprs = &checked.program().exprs;
    let same = |x: &ExprId, y: &ExprId| same_expr(checked, *x, *y, axis);
    checked.ty(a) == checked.ty(b)
        && match (&exprs[a].kind, &exprs[b].kind) {
            (
                ExprKind::Read { field, offset },
                ExprKind::Read {
                    field: other,
                    offset: at,
                },
            ) => {
                field == other
                    && offset.len() == at.len()
                    && (offset.iter().zip(at).enumerate()).all(|(k, (o, p))| k == axis || o == p)
            }
            (ExprKind::Unary(op, x), ExprKind::Unary(other, y)) => op == other && same(x, y),
            (ExprKind::Binary(op, x, u), ExprKind::Binary(other, y, v)) => {
                op == other && same(x, y) && same(u, v)
            }
            (ExprKind::Call(f, xs), ExprKind::Call(g, ys)) => {
                f == g && xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| same(x, y))
            }
            (ExprKind::Cast(t, x), ExprKind::Cast(u, y)) => t == u && same(x, y),
            (kind @ (ExprKind::Literal(_) | ExprKind::Param(_) | ExprKind::Step), other) => {
                kind == other
            }
            _ => false,
        }
}

/// The float `+`/`-` chain holding every read of `value`: `value` itself, or the one operand
/// with reads of each enclosing operation (`(chain) / 21.57`, `-(chain)`, `sqrt(chain)`).
fn sum_root(checked: &CheckedProgram, value: ExprId) -> Option<ExprId> {
    let exprs = &checked.program().exprs;
    let mut node = value;
    loop {
        let kind = &exprs[node].kind;
        if matches!(kind, ExprKind::Binary(BinaryOp::Add | BinaryOp::Sub, ..))
            && checked.ty(node).is_float()
        {
            return Some(node);
        }
        let mut reading = children(kind)
            .into_iter()
            .filter(|&c| reads_anything(checked, c));
        let (Some(only), None) = (reading.next(), reading.next()) else {
            return None;
        };
        node = only;
    }
}

/// Appends the terms of the float chain at `node` (of type `ty`) to `out`, each negated when
/// `negated` says the chain is subtracted.
fn chain_terms(
    checked: &CheckedProgram,
    node: ExprId,
    ty: ScalarType,
    negated: bool,
    out: &mut Vec<SumTerm>,
) {
    match &checked.program().exprs[node].kind {
        ExprKind::Binary(op @ (BinaryOp::Add | BinaryOp::Sub), a, b) if checked.ty(node) == ty => {
            chain_terms(checked, *a, ty, negated, out);
            let right = negated != (*op == BinaryOp::Sub);
            match &checked.program().exprs[*b].kind {
                // `a - (b + c)` subtracts `b` and `c`; `a + (b - c)` adds `b`, subtracts `c`.
                ExprKind::Binary(BinaryOp::Add | BinaryOp::Sub, ..) if checked.ty(*b) == ty => {
                    chain_terms(checked, *b, ty, right, out)
                }
                _ => out.push(SumTerm {
                    expr: *b,
                    negated: right,
                }),
            }
        }
        ExprKind::Unary(UnaryOp::Neg, a) if checked.ty(node) == ty => {
            chain_terms(checked, *a, ty, !negated, out)
        }
        _ => out.push(SumTerm {
            expr: node,
            negated,
        }),
    }
}

/// The plane a term reads: its field, its offset along the axis, and whether some read is
/// off the axis.
struct PlaneRead {
    field: Id<Field>,
    offset: i32,
    off_axis: bool,
}

/// The plane `term` reads along `axis`: `Some(None)` when it reads nothing, `None` when it
/// reads two fields or planes, a coordinate, a `let` or a scan's running value.
fn term_plane(checked: &CheckedProgram, term: ExprId, axis: usize) -> Option<Option<PlaneRead>> {
    let exprs = &checked.program().exprs;
    let mut found: Option<PlaneRead> = None;
    let mut pending = vec![term];
    while let Some(id) = pending.pop() {
        match &exprs[id].kind {
            ExprKind::Read { field, offset } => {
                let along = offset[axis];
                let off_axis = (offset.iter().enumerate()).any(|(a, &o)| a != axis && o != 0);
                match &mut found {
                    None => {
                        found = Some(PlaneRead {
                            field: *field,
                            offset: along,
                            off_axis,
                        })
                    }
                    Some(read) if read.field == *field && read.offset == along => {
                        read.off_axis |= off_axis
                    }
                    Some(_) => return None,
                }
            }
            ExprKind::Coord(_)
            | ExprKind::Local(_)
            | ExprKind::ScanAccumulator(_)
            | ExprKind::ReductionValue(_) => return None,
            kind => pending.extend(children(kind)),
        }
    }
    Some(found)
}

/// Whether `expr` reads a field, a coordinate, a `let` or a scan's running value (something
/// that differs from point to point).
fn reads_anything(checked: &CheckedProgram, expr: ExprId) -> bool {
    let exprs = &checked.program().exprs;
    let mut pending = vec![expr];
    while let Some(id) = pending.pop() {
        match &exprs[id].kind {
            ExprKind::Read { .. }
            | ExprKind::Coord(_)
            | ExprKind::Local(_)
            | ExprKind::ScanAccumulator(_) => return true,
            kind => pending.extend(children(kind)),
        }
    }
    false
}
