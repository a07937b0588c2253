//! The work one point of a stage costs: the field reads and the arithmetic a GPU's cost model
//! weighs against the bytes it moves (each `let` counted once, where it is bound).

use tessera_ir::{ExprKind, Id, MathFn, Program, Stage, Statement};

use crate::check::visit;

/// Operations a transcendental math function costs, in simple arithmetic operations (a
/// correctly rounded `exp` or `sin` is a range reduction plus a polynomial of about this many
/// multiply-adds).
const TRANSCENDENTAL_OPERATIONS: u32 = 24;

/// Operations a square root (or its reciprocal) costs, correctly rounded.
const ROOT_OPERATIONS: u32 = 8;

/// What evaluating a stage at one point costs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StageWork {
    /// Field reads (each neighbour offset once per occurrence).
    pub reads: u32,
    /// Arithmetic, comparison, selection and conversion operations, math functions weighted
    /// by their cost.
    pub operations: u32,
}

impl StageWork {
    /// Reads and operations together: the instructions a point issues, roughly.
    pub fn instructions(&self) -> u32 {
        self.reads + self.operations
    }
}

impl std::ops::Add for StageWork {
    type Output = StageWork;

    fn add(self, other: StageWork) -> StageWork {
        StageWork {
            reads: self.reads + other.reads,
            operations: self.operations + other.operations,
        }
    }
}

/// The work of one point of `stage` of `program`.
pub fn stage_work(program: &Program, stage: Id<Stage>) -> StageWork {
    let mut work = StageWork::default();
    for statement in &program.stages[stage].body {
        let value = match statement {
            Statement::Let { value, .. } | Statement::Assign { value, .. } => *value,
        };
        // A `let` is counted where it is bound: reading it costs nothing.
        visit(program, value, &mut |expr| match &expr.kind {
            ExprKind::Read { .. } => work.reads += 1,
            ExprKind::Unary(..)
            | ExprKind::Cast(..)
            | ExprKind::Binary(..)
            | ExprKind::Select { .. } => work.operations += 1,
            ExprKind::Call(function, _) => work.operations += call_operations(*function),
            _ => {}
        });
    }
    work
}

/// The work of one point of every stage of `program`, in order: one step's work per point.
pub fn step_work(program: &Program) -> StageWork {
    (program.stages.ids())
        .map(|stage| stage_work(program, stage))
        .fold(StageWork::default(), |a, b| a + b)
}

/// The operations one call of `function` costs.
fn call_operations(function: MathFn) -> u32 {
    match function {
        MathFn::Exp | MathFn::Log | MathFn::Pow | MathFn::Sin | MathFn::Cos | MathFn::Atan2 => {
            TRANSCENDENTAL_OPERATIONS
        }
        MathFn::Sqrt | MathFn::Rsqrt => ROOT_OPERATIONS,
        MathFn::Abs | MathFn::Min | MathFn::Max | MathFn::Floor => 1,
    }
}

#[cfg(test)]
mod tests {
    use tessera_ir::builder::ProgramBuilder;
    use tessera_ir::{BinaryOp, Constant, ScalarType, SizeExpr};

    use super::*;

    #[test]
    fn a_five_point_stencil_reads_five_points_and_a_let_counts_once() {
        let mut b = ProgramBuilder::new("p");
        b.grid(vec![SizeExpr::Const(8), SizeExpr::Const(8)]);
        let u = b.field("u", ScalarType::F32);
        let mut stage = b.stage("s");
        let taps: Vec<_> = [[0, 0], [-1, 0], [1, 0], [0, -1], [0, 1]]
            .iter()
            .map(|o| b.read(u, o))
            .collect();
        let sum = (taps[1..].iter()).fold(taps[0], |acc, &t| b.binary(BinaryOp::Add, acc, t));
        let quarter = b.lit(Constant::Float(0.25));
        let scaled = b.binary(BinaryOp::Mul, sum, quarter);
        let local = b.bind(&mut stage, "s", scaled);
        let twice = b.binary(BinaryOp::Add, local, local);
        stage.assign(u, twice);
        b.finish_stage(stage);
        let program = b.finish();
        let stage = program.stages.ids().next().unwrap();
        assert_eq!(
            stage_work(&program, stage),
            StageWork {
                reads: 5,
                operations: 6
            }
        );
        assert_eq!(step_work(&program).instructions(), 11);
    }
}
