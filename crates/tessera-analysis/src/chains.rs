//! Sum chains: long left-nested float sums of `coefficient * read` terms, such as the
//! hundreds of weighted neighbours of a 3D box stencil.
//!
//! Written out, such a sum is one expression per term, and the C compiler's time grows faster
//! than the expression (minutes for 729 terms). A chain instead runs as a loop over a table of
//! coefficients and offsets, which keeps the generated code's size independent of the number of
//! terms. The loop adds the terms one by one in their written order, so the value is exactly
//! the written expression's: chains serve exact mode as well.

use tessera_ir::{
    BinaryOp, ExprId, ExprKind, Field, Id, Local, ScalarType, Stage, Statement, UnaryOp,
};

use crate::CheckedProgram;

/// The fewest terms a sum needs to run as a chain: shorter sums stay written out.
pub const MIN_CHAIN_TERMS: usize = 8;

/// A float sum `start + t1 + t2 + ... + tn` (left-nested as parsed) whose terms are all
/// `coefficient * field[offset]` (or all `field[offset] * coefficient`) of one field, with
/// coefficients that are compile-time constants.
#[derive(Clone, Debug, PartialEq)]
pub struct SumChain {
    /// The expression the chain computes: the outermost `+`.
    pub root: ExprId,
    /// The index of the stage statement whose value contains the root.
    pub statement: usize,
    /// The type of the sum, its terms and the field (f32 or f64).
    pub ty: ScalarType,
    /// The field every term reads.
    pub field: Id<Field>,
    /// What the sum starts from before its terms are added.
    pub start: ChainStart,
    /// The terms in written order.
    pub terms: Vec<ChainTerm>,
    /// Terms are written `field[offset] * coefficient` (else `coefficient * field[offset]`);
    /// the product keeps its written operand order.
    pub read_first: bool,
}

/// The first value of a chain.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ChainStart {
    /// The first term itself (not `0 + term`, which differs for `-0.0`).
    FirstTerm,
    /// Another expression, evaluated at the point first.
    Head(ExprId),
}

/// One `coefficient * read` term of a chain.
#[derive(Clone, Debug, PartialEq)]
pub struct ChainTerm {
    /// The coefficient: a constant expression of the chain's type (literals, parameters,
    /// negations, float casts and arithmetic of those).
    pub coefficient: ExprId,
    /// The neighbour offset read, slowest axis first.
    pub offset: Vec<i32>,
}

impl SumChain {
    /// The head expression, when the chain starts from one.
    pub fn head(&self) -> Option<ExprId> {
        match self.start {
            ChainStart::Head(head) => Some(head),
            ChainStart::FirstTerm => None,
        }
    }
}

/// The sum chains of `stage` with at least `min_terms` terms, in statement order (a chain
/// nested in another chain's head comes before it); none in a stage with a scan, which runs
/// its lines point by point as written.
pub fn sum_chains(checked: &CheckedProgram, stage: Id<Stage>, min_terms: usize) -> Vec<SumChain> {
    let finder = ChainFinder { checked, min_terms };
    let mut chains = Vec::new();
    if checked.program().stages[stage].scan_axis().is_some() {
        return chains;
    }
    for (statement, s) in checked.program().stages[stage].body.iter().enumerate() {
        let value = match s {
            Statement::Let { value, .. } | Statement::Assign { value, .. } => *value,
        };
        finder.collect(value, statement, &mut chains);
    }
    chains
}

/// The total number of terms in `chains`.
pub fn chain_terms(chains: &[SumChain]) -> usize {
    chains.iter().map(|c| c.terms.len()).sum()
}

/// Whether every local `expr` refers to is bound (in `stage`) to the root of one of `chains`.
pub fn uses_only_chain_locals(
    checked: &CheckedProgram,
    stage: Id<Stage>,
    expr: ExprId,
    chains: &[SumChain],
) -> bool {
    let program = checked.program();
    let mut pending = vec![expr];
    while let Some(id) = pending.pop() {
        match &program.exprs[id].kind {
            ExprKind::Local(local) => {
                let bound_to_chain = local_value(checked, stage, *local)
                    .is_some_and(|value| chains.iter().any(|c| c.root == value));
                if !bound_to_chain {
                    return false;
                }
            }
            kind => pending.extend(children(kind)),
        }
    }
    true
}

/// The value a stage's `let` binds.
pub fn local_value(checked: &CheckedProgram, stage: Id<Stage>, local: Id<Local>) -> Option<ExprId> {
    checked.program().stages[stage]
        .body
        .iter()
        .find_map(|s| match s {
            Statement::Let { local: l, value } if *l == local => Some(*value),
            _ => None,
        })
}

/// The direct operands of an expression node.
pub(crate) fn children(kind: &ExprKind) -> Vec<ExprId> {
    match kind {
        ExprKind::Unary(_, a) | ExprKind::Cast(_, a) => vec![*a],
        ExprKind::Binary(_, a, b) => vec![*a, *b],
        ExprKind::Select {
            cond,
            then,
            otherwise,
        } => vec![*cond, *then, *otherwise],
        ExprKind::Call(_, args) => args.clone(),
        _ => Vec::new(),
    }
}

struct ChainFinder<'a> {
    checked: &'a CheckedProgram,
    min_terms: usize,
}

impl ChainFinder<'_> {
    /// Records the chains in `expr` (inner ones first).
    fn collect(&self, expr: ExprId, statement: usize, chains: &mut Vec<SumChain>) {
        match self.chain_at(expr, statement) {
            Some(chain) => {
                if let Some(head) = chain.head() {
                    self.collect(head, statement, chains);
                }
                chains.push(chain);
            }
            None => {
                for child in children(&self.checked.program().exprs[expr].kind) {
                    self.collect(child, statement, chains);
                }
            }
        }
    }

    /// The chain rooted at `root`, if it is a long enough one.
    fn chain_at(&self, root: ExprId, statement: usize) -> Option<SumChain> {
        let exprs = &self.checked.program().exprs;
        let ty = self.checked.ty(root);
        if !ty.is_float() {
            return None;
        }
        let mut terms = Vec::new();
        let mut shape: Option<(Id<Field>, bool)> = None;
        let mut node = root;
        let start = loop {
            let term = self
                .term(node, ty)
                .filter(|t| shape.is_none_or(|s| s == t.0));
            match (&exprs[node].kind, term) {
                (_, Some(((field, read_first), term))) => {
                    shape = Some((field, read_first));
                    terms.push(term);
                    break ChainStart::FirstTerm;
                }
                (ExprKind::Binary(BinaryOp::Add, left, right), None)
                    if self.checked.ty(node) == ty =>
                {
                    let Some((s, term)) = self
                        .term(*right, ty)
                        .filter(|t| shape.is_none_or(|s| s == t.0))
                    else {
                        break ChainStart::Head(node);
                    };
                    shape = Some(s);
                    terms.push(term);
                    node = *left;
                }
                _ => break ChainStart::Head(node),
            }
        };
        if terms.len() < self.min_terms || start == ChainStart::Head(root) {
            return None;
        }
        terms.reverse();
        let (field, read_first) = shape?;
        Some(SumChain {
            root,
            statement,
            ty,
            field,
            start,
            terms,
            read_first,
        })
    }

    /// `expr` as a term of a chain of type `ty`: its field and operand order, and the term.
    fn term(&self, expr: ExprId, ty: ScalarType) -> Option<((Id<Field>, bool), ChainTerm)> {
        let exprs = &self.checked.program().exprs;
        let ExprKind::Binary(BinaryOp::Mul, a, b) = exprs[expr].kind else {
            return None;
        };
        if self.checked.ty(expr) != ty {
            return None;
        }
        let read = |id: ExprId| match &exprs[id].kind {
            ExprKind::Read { field, offset } if self.checked.ty(id) == ty => {
                Some((*field, offset.clone()))
            }
            _ => None,
        };
        let constant =
            |id: ExprId| (self.checked.ty(id) == ty && self.is_constant(id)).then_some(id);
        if let (Some(coefficient), Some((field, offset))) = (constant(a), read(b)) {
            return Some((
                (field, false),
                ChainTerm {
                    coefficient,
                    offset,
                },
            ));
        }
        let ((field, offset), coefficient) = (read(a)?, constant(b)?);
        Some((
            (field, true),
            ChainTerm {
                coefficient,
                offset,
            },
        ))
    }

    /// Whether `expr` is a float constant expression C and the GPU languages fold exactly as
    /// written (literals, parameters, negation, float casts and `+ - * /` of those).
    fn is_constant(&self, expr: ExprId) -> bool {
        let exprs = &self.checked.program().exprs;
        match &exprs[expr].kind {
            ExprKind::Literal(_) | ExprKind::Param(_) => true,
            ExprKind::Unary(UnaryOp::Neg, a) => self.is_constant(*a),
            ExprKind::Cast(to, a) => to.is_float() && self.is_constant(*a),
            ExprKind::Binary(
                BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div,
                a,
                b,
            ) => self.checked.ty(expr).is_float() && self.is_constant(*a) && self.is_constant(*b),
            _ => false,
        }
    }
}
