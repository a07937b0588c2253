//! Shifted lanes: interior rows computed on whole vectors of the target ISA
//! ([`TargetIsa::vector_bytes`]: 64 bytes on AVX-512, 32 on AVX2, 16 on SSE2 and NEON), where
//! a read at `x + dx`
//! is not loaded again but formed in registers from the aligned vectors of its row (one
//! shuffle of two neighbouring vectors).
//!
//! Every load of the vector loop is then aligned to the row it reads, and each array row is
//! loaded once per vector however many `dx` the stage reads along it. The compiler's own
//! vectorization of the plain loop issues one unaligned load per read, and on this machine a
//! 5-point star stalled on them: about 8 cycles per 8 points in L1 (docs/performance.md,
//! "Shifted lanes"), 2-3x slower than the shuffled form.
//!
//! The form applies to stages whose values are all one float type and built from reads,
//! literals, parameters, lets and `+ - * /` (what generic vector arithmetic in C expresses;
//! math calls, selects and integer work stay with the compiler's vectorizer), with unit
//! stride along the fastest axis and every `|dx|` at most one vector.

use tessera_analysis::BoundProgram;
use tessera_ir::{BinaryOp, ExprId, ExprKind, Id, ScalarType, Stage, Statement, UnaryOp};

use crate::isa::TargetIsa;

/// The element type of `stage`'s shifted-lanes form on `isa`, when it has one (see the module
/// docs): a float type, every read at `|dx| <= lanes`, and some read with `dx != 0` (otherwise
/// the plain loop's loads are aligned already).
pub fn shifted_lanes(bound: &BoundProgram, stage: Id<Stage>, isa: TargetIsa) -> Option<ScalarType> {
    let dims = bound.extents.len();
    if bound.stage_domain(stage).stride[dims - 1] != 1 {
        return None;
    }
    let checked = bound.checked();
    let program = checked.program();
    let outputs = program.stages[stage].outputs();
    let ty = program.fields[*outputs.first()?].ty;
    if !ty.is_float() || outputs.iter().any(|f| program.fields[*f].ty != ty) {
        return None;
    }
    let reach = isa.lanes(ty) as i32;
    let mut shifted = false;
    for (field, footprint) in checked.stage_footprints(stage) {
        if program.fields[*field].ty != ty {
            return None;
        }
        for offset in &footprint.offsets {
            let dx = offset[dims - 1];
            if dx.abs() > reach {
                return None;
            }
            shifted |= dx != 0;
        }
    }
    let vector_arithmetic = |expr| only_vector_arithmetic(bound, stage, ty, expr);
    let body_ok = program.stages[stage].body.iter().all(|s| match s {
        Statement::Let { value, .. } | Statement::Assign { value, .. } => vector_arithmetic(*value),
    });
    (shifted && body_ok).then_some(ty)
}

/// Whether `expr` and its operands are all of type `ty` and built only from what generic C
/// vectors compute: reads, literals, parameters, lets, negation and `+ - * /`.
fn only_vector_arithmetic(
    bound: &BoundProgram,
    stage: Id<Stage>,
    ty: ScalarType,
    expr: ExprId,
) -> bool {
    let checked = bound.checked();
    if checked.ty(expr) != ty {
        return false;
    }
    let operand = |e: ExprId| only_vector_arithmetic(bound, stage, ty, e);
    match &checked.program().exprs[expr].kind {
        ExprKind::Literal(_) | ExprKind::Read { .. } | ExprKind::Param(_) => true,
        ExprKind::Local(local) => checked.local_ty(stage, *local) == ty,
        ExprKind::Unary(UnaryOp::Neg, a) | ExprKind::Cast(_, a) => operand(*a),
        ExprKind::Binary(BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div, a, b) => {
            operand(*a) && operand(*b)
        }
        _ => false,
    }
}
