//! Linear stages: a stage whose single output is a constant-coefficient linear combination of
//! floating-point neighbour reads (plus a constant), such as a Jacobi or Gaussian update.
//!
//! The form is exact in real arithmetic, not in floating point: coefficients are folded in f64
//! (`(a + b) / 4` becomes `0.25 a + 0.25 b`), so only code generators that may reassociate (the
//! non-exact mode) use it.

use std::collections::BTreeMap;

use tessera_ir::{BinaryOp, ExprId, ExprKind, Field, Id, Local, Stage, Statement, UnaryOp};

use crate::BoundProgram;

/// `output = constant + Σ coefficient · field[offset]`, one term per distinct read.
#[derive(Clone, Debug, PartialEq)]
pub struct LinearForm {
    /// The field the stage writes.
    pub output: Id<Field>,
    /// The terms, ordered by field then offset, with their coefficients merged.
    pub terms: Vec<LinearTerm>,
    /// The constant addend.
    pub constant: f64,
}

/// One read of a linear form.
#[derive(Clone, Debug, PartialEq)]
pub struct LinearTerm {
    /// The field read.
    pub field: Id<Field>,
    /// The neighbour offset, one entry per axis.
    pub offset: Vec<i32>,
    /// Its coefficient.
    pub coefficient: f64,
}

/// The linear form of `stage`, if it writes one field with a linear floating-point expression
/// of reads, literals and parameters (through `let`s, `+`, `-`, `*` and `/` by constants);
/// never for a stage with a scan.
pub fn linear_form(bound: &BoundProgram, stage: Id<Stage>) -> Option<LinearForm> {
    let program = bound.program();
    let body = &program.stages[stage].body;
    let outputs = program.stages[stage].outputs();
    // A scan's value at a point depends on its whole line before it.
    if program.stages[stage].scan_axis().is_some() {
        return None;
    }
    let [output] = outputs.as_slice() else {
        return None;
    };
    let value = body.iter().rev().find_map(|s| match s {
        Statement::Assign { field, value, .. } if field == output => Some(*value),
        _ => None,
    })?;
    let walker = Walker { bound, stage };
    let affine = walker.affine(value)?;
    let terms = affine
        .terms
        .into_iter()
        .map(|((field, offset), coefficient)| LinearTerm {
            field,
            offset,
            coefficient,
        })
        .collect::<Vec<_>>();
    (!terms.is_empty()).then_some(LinearForm {
        output: *output,
        terms,
        constant: affine.constant,
    })
}

/// `constant + Σ coefficient · read` while folding an expression.
#[derive(Default)]
struct Affine {
    terms: BTreeMap<(Id<Field>, Vec<i32>), f64>,
    constant: f64,
}

impl Affine {
    fn constant(value: f64) -> Affine {
        Affine {
            terms: BTreeMap::new(),
            constant: value,
        }
    }

    fn as_constant(&self) -> Option<f64> {
        self.terms.is_empty().then_some(self.constant)
    }

    fn scaled(mut self, factor: f64) -> Affine {
        self.constant *= factor;
        for c in self.terms.values_mut() {
            *c *= factor;
        }
        self
    }

    fn plus(mut self, other: Affine, sign: f64) -> Affine {
        self.constant += sign * other.constant;
        for (key, c) in other.terms {
            *self.terms.entry(key).or_insert(0.0) += sign * c;
        }
        self
    }
}

struct Walker<'a> {
    bound: &'a BoundProgram,
    stage: Id<Stage>,
}

impl Walker<'_> {
    fn affine(&self, id: ExprId) -> Option<Affine> {
        let checked = self.bound.checked();
        let ty = checked.ty(id);
        let kind = &checked.program().exprs[id].kind;
        match kind {
            ExprKind::Literal(c) => Some(Affine::constant(c.as_f64())),
            ExprKind::Param(p) => Some(Affine::constant(self.bound.param(*p).as_f64())),
            // Integer arithmetic wraps and truncates: only its leaves are constants here.
            _ if !ty.is_float() => None,
            ExprKind::Read { field, offset } => {
                let mut terms = BTreeMap::new();
                terms.insert((*field, offset.clone()), 1.0);
                Some(Affine {
                    terms,
                    constant: 0.0,
                })
            }
            ExprKind::Local(local) => self.affine(self.let_value(*local)?),
            ExprKind::Unary(UnaryOp::Neg, a) => Some(self.affine(*a)?.scaled(-1.0)),
            ExprKind::Binary(op @ (BinaryOp::Add | BinaryOp::Sub), a, b) => {
                let sign = if *op == BinaryOp::Add { 1.0 } else { -1.0 };
                Some(self.affine(*a)?.plus(self.affine(*b)?, sign))
            }
            ExprKind::Binary(BinaryOp::Mul, a, b) => {
                let (a, b) = (self.affine(*a)?, self.affine(*b)?);
                match (a.as_constant(), b.as_constant()) {
                    (Some(c), _) => Some(b.scaled(c)),
                    (_, Some(c)) => Some(a.scaled(c)),
                    _ => None,
                }
            }
            ExprKind::Binary(BinaryOp::Div, a, b) => {
                let reciprocal = 1.0 / self.affine(*b)?.as_constant()?;
                if !reciprocal.is_normal() {
                    return None;
                }
                Some(self.affine(*a)?.scaled(reciprocal))
            }
            ExprKind::Cast(_, a) => {
                let inner = self.affine(*a)?;
                // A conversion between float types of a non-constant changes rounding in a way
                // the form cannot carry.
                (inner.as_constant().is_some() || checked.ty(*a) == ty).then_some(inner)
            }
            _ => None,
        }
    }

    fn let_value(&self, local: Id<Local>) -> Option<ExprId> {
        self.bound.program().stages[self.stage]
            .body
            .iter()
            .find_map(|s| match s {
                Statement::Let { local: l, value } if *l == local => Some(*value),
                _ => None,
            })
    }
}
