//! Reduction kernels in THE fixed order (`tessera_runtime::reduce`): one thread per row (the
//! points sharing every index but x), accumulating in `f64` in ascending x from the identity
//! and writing the row's partial; the host folds the partials in row order.

use tessera_analysis::{Domain, Footprint, stage_tables};
use tessera_ir::{Constant, Field, Id, ReduceOp, Reduction, ReductionPlacement, ScalarType, Table};

use super::super::{
    Expr, Kernel, KernelOp, KernelParam, ParamKind, ProgramEnv, ReductionEval, StageEval, Stmt,
};
use super::common::{Ctx, StageIo, field_ident, ident, reduction_value_params, table_params};
use super::naive::blocks;

/// Threads per block of reduction kernels.
const THREADS: u32 = 64;

/// A lowered reduction: its kernel, launch grid, row count and the fields it reads (the
/// kernel's buffer parameters before `partials` and `t`).
pub struct Lowered {
    /// The kernel.
    pub kernel: Kernel,
    /// Blocks along x, y, z.
    pub grid: [u64; 3],
    /// Number of rows (partials).
    pub rows: usize,
    /// Fields read, in parameter order.
    pub fields: Vec<Id<Field>>,
    /// The reduction values read (the kernel's `f64` parameters after `t`), in order.
    pub values: Vec<Id<Reduction>>,
    /// Input tables read (an in-stage reduction's), the parameters after `t`.
    pub tables: Vec<Id<Table>>,
}

/// The kernel computing the row partials of `reduction`; `stage` is its stage's I/O for an
/// in-stage reduction (evaluated with the stage's `let`s and borders).
pub fn kernel(ctx: &Ctx, reduction: Id<Reduction>, stage: Option<&StageIo>) -> Lowered {
    let program = ctx.bound.program();
    let r = &program.reductions[reduction];
    let domain = &ctx.bound.reduction_domains[reduction.index()];
    let d = ctx.dims();
    let reads = match stage {
        Some(io) => io.reads.clone(),
        None => ctx.bound.checked().reduction_footprints(reduction).to_vec(),
    };
    let values = match stage {
        Some(io) => reduction_value_params(ctx, io.stage),
        None => Vec::new(),
    };
    let tables = match r.placement {
        ReductionPlacement::InStage(stage) => stage_tables(program, stage),
        ReductionPlacement::AfterStep { .. } => Vec::new(),
    };
    let counts: Vec<i64> = (0..d).map(|a| Ctx::count(domain, a)).collect();
    let rows: i64 = counts[..d - 1].iter().product::<i64>() * i64::from(counts[d - 1] > 0);
    let mut in_row = row_coords(ctx, domain, &counts[..d - 1]);
    in_row.extend(fold_row(
        ctx,
        r.op,
        domain,
        point(ctx, reduction, stage, &reads),
    ));
    let body = vec![
        Stmt::Declare {
            var: "row".into(),
            ty: ctx.ity,
            value: Some(
                Expr::BlockIdx(0)
                    .times(ctx.lit(i64::from(THREADS)))
                    .plus(Expr::ThreadIdx(0)),
            ),
        },
        Stmt::when(Expr::var("row").op(KernelOp::Lt, ctx.lit(rows)), in_row),
    ];
    let kernel = Kernel {
        name: format!(
            "ts_{}_r{}_{}_rows",
            ident(&program.name),
            reduction.index(),
            ident(&r.name)
        ),
        strategy: "reduction",
        doc: format!(
            "reduction `{}`: {} of each row, in ascending x, as f64",
            r.name,
            r.op.name()
        ),
        params: [params(ctx, &reads, &values), table_params(ctx, &tables)].concat(),
        shared: Vec::new(),
        block: [THREADS, 1, 1],
        min_resident_blocks: None,
        body,
    };
    Lowered {
        kernel,
        grid: [blocks(rows, u64::from(THREADS)), 1, 1],
        rows: rows as usize,
        fields: reads.iter().map(|(f, _)| *f).collect(),
        values: values.into_iter().map(|(_, r)| r).collect(),
        tables,
    }
}

/// The kernel's parameters: the fields read (read-only), `partials`, the step `t` and the
/// reduction values its stage reads.
fn params(
    ctx: &Ctx,
    reads: &[(Id<Field>, Footprint)],
    values: &[(KernelParam, Id<Reduction>)],
) -> Vec<KernelParam> {
    let program = ctx.bound.program();
    let mut params: Vec<KernelParam> = reads
        .iter()
        .map(|(f, _)| KernelParam {
            name: field_ident(ctx, *f),
            kind: ParamKind::Buffer {
                ty: program.fields[*f].ty,
                read_only: true,
            },
        })
        .collect();
    params.push(KernelParam {
        name: "partials".into(),
        kind: ParamKind::Buffer {
            ty: ScalarType::F64,
            read_only: false,
        },
    });
    params.push(KernelParam {
        name: "t".into(),
        kind: ParamKind::Scalar(ScalarType::I64),
    });
    params.extend(values.iter().map(|(param, _)| param.clone()));
    params
}

/// The coordinates of row `row` along the slower axes, whose point counts are `counts`
/// (declared fastest first).
fn row_coords(ctx: &Ctx, domain: &Domain, counts: &[i64]) -> Vec<Stmt> {
    let names = ctx.axis_names();
    let digits = ctx.digits("row", counts);
    (digits.into_iter().enumerate().rev())
        .map(|(axis, k)| {
            let coord = ctx.offset(k.times(ctx.lit(domain.stride[axis])), domain.rect.lo[axis]);
            Stmt::Declare {
                var: names[axis].to_string(),
                ty: ctx.ity,
                value: Some(coord),
            }
        })
        .collect()
}

/// The value of the reduction at the point of the coordinate variables folded into `acc`:
/// its reads loaded (border-resolved), then the stage evaluated with it (in-stage) or the
/// reduction's value alone (after-step).
fn point(
    ctx: &Ctx,
    reduction: Id<Reduction>,
    stage: Option<&StageIo>,
    reads: &[(Id<Field>, Footprint)],
) -> Vec<Stmt> {
    let r = &ctx.bound.program().reductions[reduction];
    let stage_id = match r.placement {
        ReductionPlacement::InStage(s) => Some(s),
        ReductionPlacement::AfterStep { .. } => None,
    };
    let coords: Vec<Expr> = ctx.axis_names().iter().map(|n| Expr::var(*n)).collect();
    let (mut point, bindings) = ctx.bind_reads(reads, &mut |field, offset| {
        let resolve: Vec<bool> = offset.iter().map(|&o| o != 0).collect();
        ctx.load(
            &field_ident(ctx, field),
            true,
            field,
            &ctx.shifted(&coords, offset),
            &resolve,
            ctx.border(stage_id, field),
        )
    });
    let env = ProgramEnv {
        reads: bindings,
        coords: coords.clone(),
        step: Expr::var("t"),
        computed: Vec::new(),
    };
    point.push(Stmt::Declare {
        var: "v".into(),
        ty: ScalarType::F64,
        value: None,
    });
    match (stage, stage_id) {
        (Some(io), Some(s)) => {
            let (declarations, outputs) = ctx.output_vars(io);
            point.extend(declarations);
            point.push(Stmt::Stage(StageEval {
                stage: s,
                env,
                outputs,
                reductions: vec![(reduction, "v".into())],
            }));
        }
        _ => point.push(Stmt::Reduce(ReductionEval {
            reduction,
            env,
            var: "v".into(),
        })),
    }
    point.push(Stmt::Assign {
        var: "acc".into(),
        value: combine(r.op),
    });
    point
}

/// `point` over the row in ascending x, folded into `acc` from the identity of `op`, and
/// the row's partial stored.
fn fold_row(ctx: &Ctx, op: ReduceOp, domain: &Domain, point: Vec<Stmt>) -> Vec<Stmt> {
    let x = ctx.dims() - 1;
    vec![
        Stmt::Declare {
            var: "acc".into(),
            ty: ScalarType::F64,
            value: Some(Expr::Literal(
                Constant::Float(identity(op)),
                ScalarType::F64,
            )),
        },
        Stmt::For {
            var: ctx.axis_names()[x].to_string(),
            ty: ctx.ity,
            start: ctx.lit(domain.rect.lo[x]),
            end: ctx.lit(domain.rect.hi[x]),
            step: ctx.lit(domain.stride[x]),
            body: vec![Stmt::Block(point)],
        },
        Stmt::Store {
            buffer: "partials".into(),
            index: Expr::var("row"),
            value: Expr::var("acc"),
        },
    ]
}

/// The identity of `op`, as `tessera_runtime::reduce::identity` defines it.
fn identity(op: ReduceOp) -> f64 {
    match op {
        ReduceOp::Sum => 0.0,
        ReduceOp::Min => f64::INFINITY,
        ReduceOp::Max => f64::NEG_INFINITY,
    }
}

/// `acc` combined with `v` as `tessera_runtime::reduce::combine` does (NaN propagates through
/// min and max).
fn combine(op: ReduceOp) -> Expr {
    let (acc, v) = (Expr::var("acc"), Expr::var("v"));
    let nan = |e: Expr| e.clone().op(KernelOp::Ne, e);
    let pick =
        |better: Expr| Expr::Select(Box::new(better), Box::new(v.clone()), Box::new(acc.clone()));
    match op {
        ReduceOp::Sum => acc.clone().op(KernelOp::Add, v.clone()),
        ReduceOp::Min | ReduceOp::Max => {
            let better = if op == ReduceOp::Min {
                v.clone().op(KernelOp::Lt, acc.clone())
            } else {
                acc.clone().op(KernelOp::Lt, v.clone())
            };
            Expr::Select(
                Box::new(nan(acc.clone()).op(KernelOp::Or, nan(v.clone()))),
                Box::new(acc.clone().op(KernelOp::Add, v.clone())),
                Box::new(pick(better)),
            )
        }
    }
}
