//! Borders at the grid's edges inside a rank's box. Where some field wraps around the grid,
//! the boxes of the ranks at a cut axis's ends reach past the grid's edge and hold the images
//! of the points beyond it; the reads of the other fields past that edge must not see those
//! images but the field's own border (clamp, mirror or a constant) at the global edge. Each
//! such read becomes a choice on the point's global coordinate: the plain read where it stays
//! in the grid, else the read (or constant) its border gives there. Coordinates are then
//! rewritten as the global ones of the points' images, like every coordinate of the program.

use std::collections::HashMap;

use tessera_ir::{
    Arena, BinaryOp, Border, Constant, Expr, ExprId, ExprKind, Field, Id, Program,
    ReductionPlacement, ScalarType, Span, Statement,
};

use crate::DistributeError;

/// Rewrites every read of a field whose border is not periodic, at an offset along an axis
/// where the box reaches past the grid's edge (`reaches_past[a]`), to take its border at the
/// global edge (`extents`: the grid's).
pub(crate) fn borders_at_global_edges(
    program: &mut Program,
    reaches_past: &[bool],
    extents: &[usize],
) -> Result<(), DistributeError> {
    if !reaches_past.iter().any(|&r| r) {
        return Ok(());
    }
    for (read, border) in bordered_reads(program)? {
        let ExprKind::Read { field, offset } = program.exprs[read].kind.clone() else {
            continue;
        };
        let axes: Vec<usize> = (0..offset.len())
            .filter(|&a| reaches_past[a] && offset[a] != 0)
            .collect();
        if matches!(border, Border::Periodic) || axes.is_empty() {
            continue;
        }
        let edge = EdgeRead {
            field,
            ty: program.fields[field].ty,
            border,
            extents,
            span: program.exprs[read].span,
        };
        program.exprs[read].kind = edge.choice(&mut program.exprs, offset, &axes);
    }
    Ok(())
}

/// Every read of a field and the border it reads through (a stage's override, else the
/// field's own); refused when one read node serves stages with different borders.
fn bordered_reads(program: &Program) -> Result<Vec<(ExprId, Border)>, DistributeError> {
    let mut found: HashMap<ExprId, Border> = HashMap::new();
    let mut note = |root: ExprId, border_of: &dyn Fn(Id<Field>) -> Option<Border>| {
        for read in reads_under(program, root) {
            let ExprKind::Read { field, .. } = program.exprs[read].kind else {
                continue;
            };
            let Some(border) = border_of(field) else {
                continue;
            };
            if found.insert(read, border).is_some_and(|b| b != border) {
                return Err(DistributeError::Unsupported(format!(
                    "a read of `{}` shared by stages with different borders, on a grid cut \
                     into ranks",
                    program.fields[field].name
                )));
            }
        }
        Ok(())
    };
    for stage in program.stages.values() {
        let border_of = |field| stage.border_of(field, program);
        for statement in &stage.body {
            let (Statement::Let { value, .. } | Statement::Assign { value, .. }) = statement;
            note(*value, &border_of)?;
        }
    }
    for reduction in program.reductions.values() {
        match reduction.placement {
            ReductionPlacement::InStage(stage) => {
                let stage = &program.stages[stage];
                note(reduction.value, &|field| stage.border_of(field, program))?;
            }
            ReductionPlacement::AfterStep { .. } => {
                note(reduction.value, &|field| program.fields[field].border)?;
            }
        }
    }
    let mut reads: Vec<(ExprId, Border)> = found.into_iter().collect();
    reads.sort_by_key(|(read, _)| read.index());
    Ok(reads)
}

/// The field reads in the expression tree under `root`.
fn reads_under(program: &Program, root: ExprId) -> Vec<ExprId> {
    let mut reads = Vec::new();
    let mut pending = vec![root];
    while let Some(id) = pending.pop() {
        match &program.exprs[id].kind {
            ExprKind::Read { .. } => reads.push(id),
            ExprKind::Unary(_, e) | ExprKind::Cast(_, e) => pending.push(*e),
            ExprKind::Binary(_, a, b) => pending.extend([*a, *b]),
            ExprKind::Select {
                cond,
                then,
                otherwise,
            } => pending.extend([*cond, *then, *otherwise]),
            ExprKind::Call(_, args) => pending.extend(args.iter().copied()),
            _ => {}
        }
    }
    reads
}

/// `coordinate(axis) + shift OP value` (no addition for a shift of 0), as new nodes at `span`.
pub(crate) fn coordinate_test(
    exprs: &mut Arena<Expr>,
    span: Span,
    axis: usize,
    shift: i64,
    op: BinaryOp,
    value: i64,
) -> ExprId {
    let mut node = |kind| exprs.alloc(Expr { kind, span });
    let mut coordinate = node(ExprKind::Coord(axis));
    if shift != 0 {
        let shift = node(ExprKind::Literal(Constant::Int(shift)));
        coordinate = node(ExprKind::Binary(BinaryOp::Add, coordinate, shift));
    }
    let value = node(ExprKind::Literal(Constant::Int(value)));
    node(ExprKind::Binary(op, coordinate, value))
}

/// A read of `field` through `border` at the global edges.
struct EdgeRead<'a> {
    field: Id<Field>,
    ty: ScalarType,
    border: Border,
    extents: &'a [usize],
    span: Span,
}

impl EdgeRead<'_> {
    /// The read at `offset`, choosing along each of `axes` between the plain read and the
    /// border's value where the offset leaves the grid.
    fn choice(&self, exprs: &mut Arena<Expr>, offset: Vec<i32>, axes: &[usize]) -> ExprKind {
        let Some((&a, rest)) = axes.split_first() else {
            return ExprKind::Read {
                field: self.field,
                offset,
            };
        };
        let (n, d) = (self.extents[a] as i64, i64::from(offset[a]));
        let inside = match d < 0 {
            true => coordinate_test(exprs, self.span, a, d, BinaryOp::Ge, 0),
            false => coordinate_test(exprs, self.span, a, d, BinaryOp::Lt, n),
        };
        let plain = self.choice(exprs, offset.clone(), rest);
        let plain = self.node(exprs, plain);
        let outside = match self.border {
            Border::Constant(value) => {
                let literal = self.node(exprs, ExprKind::Literal(value));
                self.node(exprs, ExprKind::Cast(self.ty, literal))
            }
            _ => self.beyond(exprs, &offset, a, rest),
        };
        ExprKind::Select {
            cond: inside,
            then: plain,
            otherwise: outside,
        }
    }

    /// Clamp or mirror along axis `a`: for each global coordinate whose read at `offset`
    /// leaves the grid, the read of the point the border gives (the one at the edge as the
    /// default).
    fn beyond(&self, exprs: &mut Arena<Expr>, offset: &[i32], a: usize, rest: &[usize]) -> ExprId {
        let (n, d) = (self.extents[a] as i64, i64::from(offset[a]));
        let (edge, others) = match d < 0 {
            true => (0, (1..(-d).min(n)).collect::<Vec<i64>>()),
            false => (n - 1, ((n - d).max(0)..n - 1).collect()),
        };
        let read_from = |exprs: &mut Arena<Expr>, g: i64| {
            let target = match (self.border, g + d < 0) {
                (Border::Mirror, true) => -(g + d),
                (Border::Mirror, false) => 2 * (n - 1) - (g + d),
                (_, true) => 0,
                (_, false) => n - 1,
            };
            let mut moved = offset.to_vec();
            moved[a] = (target - g) as i32;
            let kind = self.choice(exprs, moved, rest);
            self.node(exprs, kind)
        };
        let mut chosen = read_from(exprs, edge);
        for &g in others.iter().rev() {
            let at_g = coordinate_test(exprs, self.span, a, 0, BinaryOp::Eq, g);
            let read = read_from(exprs, g);
            chosen = self.node(
                exprs,
                ExprKind::Select {
                    cond: at_g,
                    then: read,
                    otherwise: chosen,
                },
            );
        }
        chosen
    }

    /// A new node.
    fn node(&self, exprs: &mut Arena<Expr>, kind: ExprKind) -> ExprId {
        exprs.alloc(Expr {
            kind,
            span: self.span,
        })
    }
}
