//! What every strategy shares: the index type, linear indices, border-index functions,
//! a stage's kernel parameters, and the code evaluating a stage at one point.

use tessera_analysis::{BoundProgram, Domain, Footprint, stage_reads_step, stage_tables};
use tessera_ir::{Border, ExprId, Field, Id, Reduction, ScalarType, Stage, Table};
use tessera_plan::gpu::GpuPlan;

use super::super::{
    Expr, KernelOp, KernelParam, ParamKind, ProgramEnv, ReadBinding, StageEval, Stmt,
};
use crate::cfamily::table_pointer;

/// The lowering context: the program, the plan and the index type.
pub struct Ctx<'a> {
    /// The program.
    pub bound: &'a BoundProgram,
    /// The plan.
    pub plan: &'a GpuPlan,
    /// Type of coordinates and linear indices.
    pub ity: ScalarType,
}

impl<'a> Ctx<'a> {
    /// The context of `bound` under `plan`; 64-bit indices once a linear index (or a
    /// coordinate of a tile overhanging the grid) can reach 2^31.
    pub fn new(bound: &'a BoundProgram, plan: &'a GpuPlan) -> Ctx<'a> {
        let cells = bound.cell_count() as u128;
        let ity = if cells * 2 >= 1u128 << 31 {
            ScalarType::I64
        } else {
            ScalarType::I32
        };
        Ctx { bound, plan, ity }
    }

    /// Number of grid axes.
    pub fn dims(&self) -> usize {
        self.bound.extents.len()
    }

    /// Number of grid points.
    pub fn cells(&self) -> usize {
        self.bound.cell_count()
    }

    /// Extent of `axis`.
    pub fn extent(&self, axis: usize) -> i64 {
        self.bound.extents[axis] as i64
    }

    /// An index literal.
    pub fn lit(&self, value: i64) -> Expr {
        Expr::int(value, self.ity)
    }

    /// The domain of a stage.
    pub fn domain(&self, stage: Id<Stage>) -> &Domain {
        self.bound.stage_domain(stage)
    }

    /// `Ok` when `domain` is dense along `axes`, else why a strategy (whose `support` is "tiles
    /// do") cannot run it.
    pub fn require_dense(
        &self,
        domain: &Domain,
        axes: std::ops::Range<usize>,
        support: &str,
    ) -> Result<(), String> {
        match axes.into_iter().find(|&a| domain.stride[a] != 1) {
            Some(axis) => Err(format!(
                "its domain is strided along {}, which {support} not support",
                self.axis_names()[axis]
            )),
            None => Ok(()),
        }
    }

    /// Whether a stage updates every grid point.
    pub fn covers_grid(&self, stage: Id<Stage>) -> bool {
        let d = self.domain(stage);
        d.is_dense() && d.rect == tessera_analysis::Rect::grid(&self.bound.extents)
    }

    /// Whether every stage writing `field` covers the same points.
    pub fn written_on_one_domain(&self, field: Id<Field>) -> bool {
        let program = self.bound.program();
        let mut writers = (program.stages.iter())
            .filter(|(_, stage)| stage.outputs().contains(&field))
            .map(|(id, _)| self.domain(id));
        let first = writers.next();
        writers.all(|d| Some(d) == first)
    }

    /// Points of `domain` along `axis`.
    pub fn count(domain: &Domain, axis: usize) -> i64 {
        if domain.rect.is_empty() {
            0
        } else {
            (domain.rect.hi[axis] - 1 - domain.rect.lo[axis]) / domain.stride[axis] + 1
        }
    }

    /// `c + offset` (a subtraction for negative offsets, `c` itself for 0).
    pub fn offset(&self, c: Expr, offset: i64) -> Expr {
        match offset {
            0 => c,
            o if o < 0 => c.op(KernelOp::Sub, self.lit(-o)),
            o => c.op(KernelOp::Add, self.lit(o)),
        }
    }

    /// `coords + offset`, per axis.
    pub fn shifted(&self, coords: &[Expr], offset: &[i32]) -> Vec<Expr> {
        coords
            .iter()
            .zip(offset)
            .map(|(c, o)| self.offset(c.clone(), i64::from(*o)))
            .collect()
    }

    /// The row-major linear index of in-grid coordinates (slowest first).
    pub fn linear(&self, coords: &[Expr]) -> Expr {
        let mut index = coords[0].clone();
        for (axis, c) in coords.iter().enumerate().skip(1) {
            index = index.times(self.lit(self.extent(axis))).plus(c.clone());
        }
        index
    }

    /// The digits of the linear index `index` in the mixed radix `radices` (slowest first):
    /// `index / stride % radix`, without a division by 1 or the slowest digit's remainder.
    pub fn digits(&self, index: &str, radices: &[i64]) -> Vec<Expr> {
        let mut digits = vec![Expr::var(index); radices.len()];
        let mut stride = 1i64;
        for (j, &radix) in radices.iter().enumerate().rev() {
            if stride > 1 {
                digits[j] = digits[j].clone().op(KernelOp::Div, self.lit(stride));
            }
            if j > 0 {
                digits[j] = digits[j].clone().op(KernelOp::Rem, self.lit(radix));
            }
            stride *= radix;
        }
        digits
    }

    /// The border that answers `field`'s out-of-grid reads in `stage` (a field's own border for
    /// after-step reductions).
    pub fn border(&self, stage: Option<Id<Stage>>, field: Id<Field>) -> Option<Border> {
        let program = self.bound.program();
        match stage {
            Some(s) => program.stages[s].border_of(field, program),
            None => program.fields[field].border,
        }
    }

    /// Maps a coordinate along `axis` into the grid by a (non-constant) border mode. Mirror
    /// and periodic results are exact for any reach the binder accepts; positions further out
    /// (tile overhang, whose values are never used) are clamped to stay in bounds.
    pub fn resolve_axis(&self, c: Expr, axis: usize, border: Border) -> Expr {
        let n = self.extent(axis);
        let clamp = |e: Expr| {
            e.op(KernelOp::Min, self.lit(n - 1))
                .op(KernelOp::Max, self.lit(0))
        };
        match border {
            // Two's complement: the low bits of any position are its image's.
            Border::Periodic if n > 0 && n & (n - 1) == 0 => {
                c.op(KernelOp::BitAnd, self.lit(n - 1))
            }
            Border::Periodic => c
                .op(KernelOp::Rem, self.lit(n))
                .plus(self.lit(n))
                .op(KernelOp::Rem, self.lit(n)),
            Border::Mirror => {
                let below = c.clone().op(KernelOp::Lt, self.lit(0));
                let above = self.lit(n - 1).op(KernelOp::Lt, c.clone());
                let reflected = Expr::Select(
                    Box::new(below),
                    Box::new(Expr::Unary(tessera_ir::UnaryOp::Neg, Box::new(c.clone()))),
                    Box::new(Expr::Select(
                        Box::new(above),
                        Box::new(self.lit(2 * (n - 1)).op(KernelOp::Sub, c.clone())),
                        Box::new(c),
                    )),
                );
                clamp(reflected)
            }
            Border::Clamp | Border::Constant(_) => clamp(c),
        }
    }

    /// The value of `field` at grid position `coords` (possibly outside the grid along the
    /// axes flagged in `resolve`), answered by `border` there; `None` means the position is
    /// known to be inside.
    pub fn load(
        &self,
        buffer: &str,
        cached: bool,
        field: Id<Field>,
        coords: &[Expr],
        resolve: &[bool],
        border: Option<Border>,
    ) -> Expr {
        let load = |coords: &[Expr]| Expr::Load {
            buffer: buffer.to_string(),
            index: Box::new(self.linear(coords)),
            cached,
        };
        let Some(border) = border.filter(|_| resolve.iter().any(|&r| r)) else {
            return load(coords);
        };
        let resolved: Vec<Expr> = coords
            .iter()
            .enumerate()
            .map(|(axis, c)| {
                if resolve[axis] {
                    self.resolve_axis(c.clone(), axis, border)
                } else {
                    c.clone()
                }
            })
            .collect();
        match border {
            Border::Constant(value) => {
                let inside = coords
                    .iter()
                    .enumerate()
                    .filter(|(axis, _)| resolve[*axis])
                    .map(|(axis, c)| {
                        self.lit(0).op(KernelOp::Le, c.clone()).op(
                            KernelOp::And,
                            c.clone().op(KernelOp::Lt, self.lit(self.extent(axis))),
                        )
                    })
                    .reduce(|a, b| a.op(KernelOp::And, b))
                    .expect("some axis is resolved");
                let ty = self.bound.program().fields[field].ty;
                Expr::Select(
                    Box::new(inside),
                    Box::new(load(&resolved)),
                    Box::new(Expr::Literal(value, ty)),
                )
            }
            _ => load(&resolved),
        }
    }

    /// `lo[a] <= coords[a] < hi[a]` over the axes where the bound is not implied (`None`).
    pub fn within(&self, coords: &[Expr], lo: &[Option<i64>], hi: &[Option<i64>]) -> Option<Expr> {
        let mut terms = Vec::new();
        for (axis, c) in coords.iter().enumerate() {
            if let Some(l) = lo[axis] {
                terms.push(self.lit(l).op(KernelOp::Le, c.clone()));
            }
            if let Some(h) = hi[axis] {
                terms.push(c.clone().op(KernelOp::Lt, self.lit(h)));
            }
        }
        terms.into_iter().reduce(|a, b| a.op(KernelOp::And, b))
    }

    /// `body` inside serial loops over `domain` along `axes` (the outermost first), each loop
    /// variable named by `names[axis]`.
    pub fn serial_loops(
        &self,
        domain: &Domain,
        names: &[&str],
        axes: std::ops::Range<usize>,
        mut body: Vec<Stmt>,
    ) -> Vec<Stmt> {
        for axis in axes.rev() {
            body = vec![Stmt::For {
                var: names[axis].to_string(),
                ty: self.ity,
                start: self.lit(domain.rect.lo[axis]),
                end: self.lit(domain.rect.hi[axis]),
                step: self.lit(domain.stride[axis]),
                body,
            }];
        }
        body
    }

    /// The names of the coordinate variables, slowest first.
    pub fn axis_names(&self) -> Vec<&'static str> {
        tessera_ir::axis_names(self.dims())
    }

    /// `r<n>`: the declarations of every read of `reads` (each offset of each footprint, in
    /// order), their values spelled by `read`, and the bindings of the reads to them.
    pub fn bind_reads(
        &self,
        reads: &[(Id<Field>, Footprint)],
        read: &mut dyn FnMut(Id<Field>, &[i32]) -> Expr,
    ) -> (Vec<Stmt>, Vec<ReadBinding>) {
        let program = self.bound.program();
        let mut declarations = Vec::new();
        let mut bindings = Vec::new();
        for (field, fp) in reads {
            for offset in &fp.offsets {
                let var = format!("r{}", bindings.len());
                declarations.push(Stmt::Declare {
                    var: var.clone(),
                    ty: program.fields[*field].ty,
                    value: Some(read(*field, offset)),
                });
                bindings.push(ReadBinding {
                    field: *field,
                    offset: offset.clone(),
                    value: Expr::var(var),
                });
            }
        }
        (declarations, bindings)
    }

    /// `o<k>`: the declarations of variables for the outputs of `io`'s stage, and which
    /// output each holds.
    pub fn output_vars(&self, io: &StageIo) -> (Vec<Stmt>, Vec<(Id<Field>, String)>) {
        let program = self.bound.program();
        (io.outputs.iter().enumerate())
            .map(|(k, (field, _))| {
                let var = format!("o{k}");
                let declaration = Stmt::Declare {
                    var: var.clone(),
                    ty: program.fields[*field].ty,
                    value: None,
                };
                (declaration, (*field, var))
            })
            .unzip()
    }

    /// Code evaluating `stage` at `coords` and storing its outputs there: reads are loaded into
    /// variables by `read` first, then the stage is evaluated, then outputs are stored.
    pub fn point(
        &self,
        io: &StageIo,
        coords: &[Expr],
        read: &mut dyn FnMut(Id<Field>, &[i32]) -> Expr,
    ) -> Stmt {
        let (body, reads) = self.bind_reads(&io.reads, read);
        self.evaluated_point(io, coords, body, reads, Vec::new())
    }

    /// The point at `coords` of `io`'s stage, stored to its outputs, where the kernel has
    /// computed its sum (`sum`: a reordered sum's expression and value) and the stage reads
    /// nothing outside it.
    pub fn finished_point(&self, io: &StageIo, coords: &[Expr], sum: (ExprId, Expr)) -> Stmt {
        self.evaluated_point(io, coords, Vec::new(), Vec::new(), vec![sum])
    }

    /// The point at `coords` of `io`'s stage after `body` (its reads' declarations), its
    /// reads bound by `reads` and the expressions `computed` already known, stored to its
    /// outputs.
    fn evaluated_point(
        &self,
        io: &StageIo,
        coords: &[Expr],
        mut body: Vec<Stmt>,
        reads: Vec<ReadBinding>,
        computed: Vec<(ExprId, Expr)>,
    ) -> Stmt {
        let (declarations, outputs) = self.output_vars(io);
        body.extend(declarations);
        let env = ProgramEnv {
            reads,
            coords: coords.to_vec(),
            step: Expr::var("t"),
            computed,
        };
        body.push(Stmt::Stage(StageEval {
            stage: io.stage,
            env,
            outputs: outputs.clone(),
            reductions: Vec::new(),
        }));
        for (field, var) in outputs {
            body.push(Stmt::Store {
                buffer: io.output(field).to_string(),
                index: self.linear(coords),
                value: Expr::var(var),
            });
        }
        Stmt::Block(body)
    }
}

/// A stage's reads, outputs and kernel parameters.
pub struct StageIo {
    /// The stage.
    pub stage: Id<Stage>,
    /// Fields read (body and in-stage reductions) with their footprints.
    pub reads: Vec<(Id<Field>, Footprint)>,
    /// Output fields and whether each is written in place.
    pub outputs: Vec<(Id<Field>, bool)>,
    params: Vec<IoParam>,
}

/// One kernel parameter of a stage kernel and what is bound to it.
pub struct IoParam {
    /// The parameter.
    pub param: KernelParam,
    /// What is bound to it.
    pub arg: IoArg,
}

/// What a stage kernel's parameter is bound to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoArg {
    /// A field, and whether its ping-pong partner (`true`) or its own buffer is bound.
    Field(Id<Field>, bool),
    /// The step counter.
    Step,
    /// The value of a reduction an earlier stage of the step computed.
    ReductionValue(Id<Reduction>),
    /// An input table's buffer.
    Table(Id<Table>),
}

/// The kernel parameters (`rv<r>`, `f64`) of the reduction values `stage` reads.
pub fn reduction_value_params(ctx: &Ctx, stage: Id<Stage>) -> Vec<(KernelParam, Id<Reduction>)> {
    (ctx.bound.checked().stage_reduction_reads(stage).into_iter())
        .map(|r| {
            let param = KernelParam {
                name: reduction_value_name(r),
                kind: ParamKind::Scalar(ScalarType::F64),
            };
            (param, r)
        })
        .collect()
}

/// The name of the parameter holding reduction `r`'s value in a kernel.
pub fn reduction_value_name(r: Id<Reduction>) -> String {
    format!("rv{}", r.index())
}

/// The read-only buffer parameters of input tables (`tb<i>`, as the expression printer
/// spells table reads).
pub fn table_params(ctx: &Ctx, tables: &[Id<Table>]) -> Vec<KernelParam> {
    (tables.iter())
        .map(|&table| KernelParam {
            name: table_pointer(table),
            kind: ParamKind::Buffer {
                ty: ctx.bound.program().tables[table].ty,
                read_only: true,
            },
        })
        .collect()
}

/// A C identifier for a field: `f3_E_ex` for field 3 named `E.ex`.
pub fn field_ident(ctx: &Ctx, field: Id<Field>) -> String {
    format!(
        "f{}_{}",
        field.index(),
        ident(&ctx.bound.program().fields[field].name)
    )
}

impl StageIo {
    /// The reads, outputs and parameters of `stage`.
    pub fn new(ctx: &Ctx, stage: Id<Stage>) -> StageIo {
        let checked = ctx.bound.checked();
        let reads = checked.stage_footprints(stage).to_vec();
        let outputs: Vec<(Id<Field>, bool)> = ctx.bound.program().stages[stage]
            .outputs()
            .into_iter()
            .map(|f| {
                let own_point_only = checked
                    .footprint(stage, f)
                    .is_none_or(|fp| fp.offsets.iter().all(|o| o.iter().all(|&v| v == 0)));
                (f, own_point_only)
            })
            .collect();
        let mut fields: Vec<Id<Field>> = reads
            .iter()
            .map(|(f, _)| *f)
            .chain(outputs.iter().map(|(f, _)| *f))
            .collect();
        fields.sort();
        fields.dedup();
        let mut params = Vec::new();
        for field in fields {
            let ty = ctx.bound.program().fields[field].ty;
            let name = field_ident(ctx, field);
            let is_read = reads.iter().any(|(f, _)| *f == field);
            let buffer = |name: String, read_only: bool, next: bool| IoParam {
                param: KernelParam {
                    name,
                    kind: ParamKind::Buffer { ty, read_only },
                },
                arg: IoArg::Field(field, next),
            };
            match outputs.iter().find(|(f, _)| *f == field) {
                Some((_, true)) => params.push(buffer(name, false, false)),
                Some((_, false)) => {
                    if is_read {
                        params.push(buffer(name.clone(), true, false));
                    }
                    params.push(buffer(format!("{name}_next"), false, true));
                }
                None => params.push(buffer(name, true, false)),
            }
        }
        // Only a stage that reads the step counter takes it, so that every launch of a stage
        // that does not is the same from step to step (and can be recorded and replayed).
        if stage_reads_step(ctx.bound.program(), stage) {
            params.push(IoParam {
                param: KernelParam {
                    name: "t".into(),
                    kind: ParamKind::Scalar(ScalarType::I64),
                },
                arg: IoArg::Step,
            });
        }
        for (param, r) in reduction_value_params(ctx, stage) {
            params.push(IoParam {
                param,
                arg: IoArg::ReductionValue(r),
            });
        }
        let tables = stage_tables(ctx.bound.program(), stage);
        for (param, table) in table_params(ctx, &tables).into_iter().zip(tables) {
            params.push(IoParam {
                param,
                arg: IoArg::Table(table),
            });
        }
        StageIo {
            stage,
            reads,
            outputs,
            params,
        }
    }

    /// Output fields and whether each is written in place.
    pub fn outputs(&self) -> Vec<(Id<Field>, bool)> {
        self.outputs.clone()
    }

    /// The kernel parameters with their buffers, in order.
    pub fn params(&self) -> &[IoParam] {
        &self.params
    }

    /// The kernel parameters.
    pub fn kernel_params(&self) -> Vec<KernelParam> {
        self.params.iter().map(|p| p.param.clone()).collect()
    }

    /// The value of input `field` at `coords`, loaded from its parameter (through the read-only
    /// cache when it is read-only): [`Ctx::load`] on this stage's buffers.
    pub fn load(
        &self,
        ctx: &Ctx,
        field: Id<Field>,
        coords: &[Expr],
        resolve: &[bool],
        border: Option<Border>,
    ) -> Expr {
        ctx.load(
            self.input(field),
            self.cached(field),
            field,
            coords,
            resolve,
            border,
        )
    }

    /// The value of input `field` at `offset` from `coords`, answered by the stage's border
    /// along the axes where the offset is not 0.
    pub fn load_offset(
        &self,
        ctx: &Ctx,
        field: Id<Field>,
        coords: &[Expr],
        offset: &[i32],
    ) -> Expr {
        let resolve: Vec<bool> = offset.iter().map(|&o| o != 0).collect();
        let border = ctx.border(Some(self.stage), field);
        self.load(ctx, field, &ctx.shifted(coords, offset), &resolve, border)
    }

    /// The parameter `field` is read from.
    pub fn input(&self, field: Id<Field>) -> &str {
        self.params
            .iter()
            .find(|p| p.arg == IoArg::Field(field, false))
            .map_or("", |p| p.param.name.as_str())
    }

    /// Whether reads of `field` may use the read-only cache (the kernel never writes it).
    pub fn cached(&self, field: Id<Field>) -> bool {
        self.params
            .iter()
            .find(|p| p.arg == IoArg::Field(field, false))
            .is_some_and(|p| {
                matches!(
                    p.param.kind,
                    ParamKind::Buffer {
                        read_only: true,
                        ..
                    }
                )
            })
    }

    /// The parameter `field`'s new values are written to.
    pub fn output(&self, field: Id<Field>) -> &str {
        let in_place = self.outputs.iter().any(|(f, p)| *f == field && *p);
        self.params
            .iter()
            .find(|p| p.arg == IoArg::Field(field, !in_place))
            .map_or("", |p| p.param.name.as_str())
    }
}

/// A C identifier made of `name`'s letters and digits (others become `_`).
pub fn ident(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// The name of `stage`'s kernel under a strategy: `ts_heat_s0_diffuse_tiled`.
pub fn kernel_name(ctx: &Ctx, stage: Id<Stage>, strategy: &str) -> String {
    let program = ctx.bound.program();
    format!(
        "ts_{}_s{}_{}_{strategy}",
        ident(&program.name),
        stage.index(),
        ident(&program.stages[stage].name)
    )
}
