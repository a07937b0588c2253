//! A Rust API that builds the same IR as the text front end.
//!
//! ```
//! use tessera_ir::{builder::ProgramBuilder, ScalarType, Constant, SizeExpr, BinaryOp, Range, Region, Span};
//! let mut b = ProgramBuilder::new("scale");
//! let n = b.param("N", ScalarType::I64, Constant::Int(16));
//! b.grid(vec![SizeExpr::Param(n)]);
//! let a = b.field("A", ScalarType::F32);
//! let mut stage = b.stage("double");
//! let two = b.lit(Constant::Float(2.0));
//! let here = b.read(a, &[0]);
//! let value = b.binary(BinaryOp::Mul, two, here);
//! stage.assign(a, value);
//! b.finish_stage(stage);
//! let program = b.finish();
//! assert_eq!(program.stages.len(), 1);
//! ```

use crate::arena::Id;
use crate::expr::{BinaryOp, Expr, ExprId, ExprKind, MathFn, UnaryOp};
use crate::program::{
    Border, Field, FieldGroup, Local, Param, Program, Receiver, ReceiverPoints, ReduceOp,
    Reduction, ReductionPlacement, Region, Scan, SizeExpr, Stage, Statement, StopCondition, Table,
};
use crate::span::Span;
use crate::types::{Constant, ScalarType};

/// Builds a [`Program`] step by step; expressions are allocated through it.
pub struct ProgramBuilder {
    program: Program,
}

/// A stage under construction; hand it back with [`ProgramBuilder::finish_stage`].
pub struct StageBuilder {
    stage: Stage,
    reductions: Vec<(String, ReduceOp, ExprId, u64)>,
}

impl ProgramBuilder {
    /// Starts a program with no grid yet.
    pub fn new(name: impl Into<String>) -> Self {
        ProgramBuilder {
            program: Program::new(name, Vec::new()),
        }
    }

    /// Declares a scalar parameter.
    pub fn param(
        &mut self,
        name: impl Into<String>,
        ty: ScalarType,
        default: Constant,
    ) -> Id<Param> {
        self.program.params.alloc(Param {
            name: name.into(),
            ty,
            default,
            accepts_non_finite: false,
            span: Span::NONE,
        })
    }

    /// Sets the grid extents, slowest axis first.
    pub fn grid(&mut self, extents: Vec<SizeExpr>) {
        self.program.extents = extents;
    }

    /// Sets the default step count.
    pub fn default_steps(&mut self, steps: u64) {
        self.program.default_steps = Some(steps);
    }

    /// Declares a scalar field with no border handling and zero initial value.
    pub fn field(&mut self, name: impl Into<String>, ty: ScalarType) -> Id<Field> {
        self.program.fields.alloc(Field {
            name: name.into(),
            ty,
            border: None,
            init: None,
            group: None,
            readonly: false,
            span: Span::NONE,
        })
    }

    /// Declares an input table of `ty` elements.
    pub fn table(&mut self, name: impl Into<String>, ty: ScalarType) -> Id<Table> {
        self.program.tables.alloc(Table {
            name: name.into(),
            ty,
            span: Span::NONE,
        })
    }

    /// Declares a struct/vector field; returns its component fields in order.
    pub fn group(&mut self, name: &str, components: &[(&str, ScalarType)]) -> Vec<Id<Field>> {
        let group_id = self.program.groups.alloc(FieldGroup {
            name: name.to_string(),
            component_names: components.iter().map(|(c, _)| c.to_string()).collect(),
            components: Vec::new(),
            span: Span::NONE,
        });
        let ids: Vec<Id<Field>> = components
            .iter()
            .enumerate()
            .map(|(i, (component, ty))| {
                let id = self.field(format!("{name}.{component}"), *ty);
                self.program.fields[id].group = Some((group_id, i));
                id
            })
            .collect();
        self.program.groups[group_id].components = ids.clone();
        ids
    }

    /// Sets a field's border handling.
    pub fn set_border(&mut self, field: Id<Field>, border: Border) {
        self.program.fields[field].border = Some(border);
    }

    /// Sets a field's initial value expression.
    pub fn set_init(&mut self, field: Id<Field>, init: ExprId) {
        self.program.fields[field].init = Some(init);
    }

    /// Marks a field read-only.
    pub fn set_readonly(&mut self, field: Id<Field>) {
        self.program.fields[field].readonly = true;
    }

    /// Allocates an expression node.
    pub fn expr(&mut self, kind: ExprKind) -> ExprId {
        self.program.exprs.alloc(Expr {
            kind,
            span: Span::NONE,
        })
    }

    /// A literal.
    pub fn lit(&mut self, value: Constant) -> ExprId {
        self.expr(ExprKind::Literal(value))
    }

    /// A field read at an offset (slowest axis first).
    pub fn read(&mut self, field: Id<Field>, offset: &[i32]) -> ExprId {
        self.expr(ExprKind::Read {
            field,
            offset: offset.to_vec(),
        })
    }

    /// A parameter's value.
    pub fn param_value(&mut self, param: Id<Param>) -> ExprId {
        self.expr(ExprKind::Param(param))
    }

    /// The coordinate along `axis` (0 = slowest).
    pub fn coord(&mut self, axis: usize) -> ExprId {
        self.expr(ExprKind::Coord(axis))
    }

    /// The step counter `t`.
    pub fn step(&mut self) -> ExprId {
        self.expr(ExprKind::Step)
    }

    /// `table[t + offset]`: a table's element at the step counter plus a constant.
    pub fn table_read(&mut self, table: Id<Table>, offset: i64) -> ExprId {
        self.expr(ExprKind::TableRead { table, offset })
    }

    /// A unary operation.
    pub fn unary(&mut self, op: UnaryOp, operand: ExprId) -> ExprId {
        self.expr(ExprKind::Unary(op, operand))
    }

    /// A binary operation.
    pub fn binary(&mut self, op: BinaryOp, a: ExprId, b: ExprId) -> ExprId {
        self.expr(ExprKind::Binary(op, a, b))
    }

    /// `w0 * field[o0] + w1 * field[o1] + ...`, left-nested as the parser builds it (float
    /// weights); `None` without terms.
    pub fn weighted_reads<'a>(
        &mut self,
        field: Id<Field>,
        terms: impl IntoIterator<Item = (&'a [i32], f64)>,
    ) -> Option<ExprId> {
        let mut sum = None;
        for (offset, weight) in terms {
            let w = self.lit(Constant::Float(weight));
            let read = self.read(field, offset);
            let term = self.binary(BinaryOp::Mul, w, read);
            sum = Some(match sum {
                None => term,
                Some(s) => self.binary(BinaryOp::Add, s, term),
            });
        }
        sum
    }

    /// `cond ? then : otherwise`.
    pub fn select(&mut self, cond: ExprId, then: ExprId, otherwise: ExprId) -> ExprId {
        self.expr(ExprKind::Select {
            cond,
            then,
            otherwise,
        })
    }

    /// A math function call.
    pub fn call(&mut self, function: MathFn, args: Vec<ExprId>) -> ExprId {
        self.expr(ExprKind::Call(function, args))
    }

    /// A conversion.
    pub fn cast(&mut self, ty: ScalarType, value: ExprId) -> ExprId {
        self.expr(ExprKind::Cast(ty, value))
    }

    /// A reduction's latest value (for stop conditions).
    pub fn reduction_value(&mut self, reduction: Id<Reduction>) -> ExprId {
        self.expr(ExprKind::ReductionValue(reduction))
    }

    /// Starts a stage over the whole grid.
    pub fn stage(&mut self, name: impl Into<String>) -> StageBuilder {
        StageBuilder {
            stage: Stage {
                name: name.into(),
                region: None,
                borders: Vec::new(),
                locals: Default::default(),
                body: Vec::new(),
                span: Span::NONE,
            },
            reductions: Vec::new(),
        }
    }

    /// Binds `value` to a new local of `stage` and returns an expression reading it.
    pub fn bind(
        &mut self,
        stage: &mut StageBuilder,
        name: impl Into<String>,
        value: ExprId,
    ) -> ExprId {
        let local = stage.stage.locals.alloc(Local {
            name: name.into(),
            span: Span::NONE,
        });
        stage.stage.body.push(Statement::Let { local, value });
        self.expr(ExprKind::Local(local))
    }

    /// Appends a finished stage to the step sequence.
    pub fn finish_stage(&mut self, builder: StageBuilder) -> Id<Stage> {
        let id = self.program.stages.alloc(builder.stage);
        for (name, op, value, every) in builder.reductions {
            self.program.reductions.alloc(Reduction {
                name,
                op,
                value,
                placement: ReductionPlacement::InStage(id),
                every,
                span: Span::NONE,
            });
        }
        id
    }

    /// Adds a reduction over fields after each `every`-th step.
    pub fn reduce_after_step(
        &mut self,
        name: impl Into<String>,
        op: ReduceOp,
        value: ExprId,
        region: Option<Region>,
        every: u64,
    ) -> Id<Reduction> {
        self.program.reductions.alloc(Reduction {
            name: name.into(),
            op,
            value,
            placement: ReductionPlacement::AfterStep { region },
            every,
            span: Span::NONE,
        })
    }

    /// Declares a receiver: `field`'s values at `points`, recorded every `every` steps.
    pub fn receiver(
        &mut self,
        name: impl Into<String>,
        field: Id<Field>,
        points: ReceiverPoints,
        every: u64,
    ) -> Id<Receiver> {
        self.program.receivers.alloc(Receiver {
            name: name.into(),
            field,
            points,
            every,
            span: Span::NONE,
        })
    }

    /// Sets the stop condition.
    pub fn until(&mut self, condition: ExprId) {
        self.program.until = Some(StopCondition {
            condition,
            span: Span::NONE,
        });
    }

    /// The finished program (not yet checked: see `tessera-analysis`).
    pub fn finish(self) -> Program {
        self.program
    }
}

impl StageBuilder {
    /// Restricts the stage to a region.
    pub fn over(&mut self, region: Region) -> &mut Self {
        self.stage.region = Some(region);
        self
    }

    /// Overrides a field's border handling in this stage.
    pub fn border(&mut self, field: Id<Field>, border: Border) -> &mut Self {
        self.stage.borders.push((field, border));
        self
    }

    /// Assigns `value` to `field` at the current point.
    pub fn assign(&mut self, field: Id<Field>, value: ExprId) -> &mut Self {
        self.stage.body.push(Statement::Assign {
            field,
            value,
            span: Span::NONE,
            scan: None,
        });
        self
    }

    /// Assigns to `field` the scan of `value` (see [`Scan`]).
    pub fn scan(&mut self, field: Id<Field>, scan: Scan, value: ExprId) -> &mut Self {
        self.stage.body.push(Statement::Assign {
            field,
            value,
            span: Span::NONE,
            scan: Some(scan),
        });
        self
    }

    /// Adds a reduction over this stage's points (may read its locals).
    pub fn reduce(
        &mut self,
        name: impl Into<String>,
        op: ReduceOp,
        value: ExprId,
        every: u64,
    ) -> &mut Self {
        self.reductions.push((name.into(), op, value, every));
        self
    }
}
