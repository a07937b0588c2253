//! Reduction kernels in THE fixed order (`tessera_runtime::reduce`): one thread per row (the
//! points sharing every index but x), accumulating in `f64` in ascending x from the identity
//! and writing the row's partial; the host folds the partials in row order.

use tessera_ir::{Constant, Field, Id, ReduceOp, Reduction, ReductionPlacement, ScalarType};

use super::super::{
    Expr, Kernel, KernelOp, KernelParam, ParamKind, ProgramEnv, ReadBinding, ReductionEval,
    StageEval, Stmt,
};
use super::common::{Ctx, StageIo, field_ident, ident};
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
}

/// The kernel computing the row partials of `reduction`; `stage` is its stage's I/O for an
/// in-stage reduction (evaluated with the stage's `let`s and borders).
pub fn kernel(ctx: &Ctx, reduction: Id<Reduction>, stage: Option<&StageIo>) -> Lowered {
    let program = ctx.bound.program();
    let r = &program.reductions[reduction];
    let domain = ctx.bound.reduction_domains[reduction.index()].clone();
    let d = ctx.dims();
    let names = ctx.axis_names();
    let ity = ctx.ity;
    let reads = match stage {
        Some(io) => io.reads.clone(),
        None => ctx.bound.checked().reduction_footprints(reduction).to_vec(),
    };
    let stage_id = match r.placement {
        ReductionPlacement::InStage(s) => Some(s),
        ReductionPlacement::AfterStep { .. } => None,
    };
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

    let counts: Vec<i64> = (0..d).map(|a| Ctx::count(&domain, a)).collect();
    let rows: i64 = counts[..d - 1].iter().product::<i64>() * i64::from(counts[d - 1] > 0);
    let mut in_row = Vec::new();
    let mut stride = 1i64;
    for axis in (0..d - 1).rev() {
        let mut k = Expr::var("row");
        if stride > 1 {
            k = k.op(KernelOp::Div, ctx.lit(stride));
        }
        if axis > 0 {
            k = k.op(KernelOp::Rem, ctx.lit(counts[axis]));
        }
        stride *= counts[axis];
        let coord = ctx.offset(k.times(ctx.lit(domain.stride[axis])), domain.rect.lo[axis]);
        in_row.push(Stmt::Declare {
            var: names[axis].to_string(),
            ty: ity,
            value: Some(coord),
        });
    }
    let coords: Vec<Expr> = names.iter().map(|n| Expr::var(*n)).collect();
    let mut point = Vec::new();
    let mut bindings = Vec::new();
    for (field, fp) in &reads {
        for offset in &fp.offsets {
            let var = format!("r{}", bindings.len());
            let resolve: Vec<bool> = offset.iter().map(|&o| o != 0).collect();
            let value = ctx.load(
                &field_ident(ctx, *field),
                true,
                *field,
                &ctx.shifted(&coords, offset),
                &resolve,
                ctx.border(stage_id, *field),
            );
            point.push(Stmt::Declare {
                var: var.clone(),
                ty: program.fields[*field].ty,
                value: Some(value),
            });
            bindings.push(ReadBinding {
                field: *field,
                offset: offset.clone(),
                value: Expr::var(var),
            });
        }
    }
    let env = ProgramEnv {
        reads: bindings,
        coords: coords.clone(),
        step: Expr::var("t"),
    };
    point.push(Stmt::Declare {
        var: "v".into(),
        ty: ScalarType::F64,
        value: None,
    });
    match (stage, stage_id) {
        (Some(io), Some(s)) => {
            let mut outputs = Vec::new();
            for (k, (field, _)) in io.outputs.iter().enumerate() {
                let var = format!("o{k}");
                point.push(Stmt::Declare {
                    var: var.clone(),
                    ty: program.fields[*field].ty,
                    value: None,
                });
                outputs.push((*field, var));
            }
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
    let x = d - 1;
    in_row.push(Stmt::Declare {
        var: "acc".into(),
        ty: ScalarType::F64,
        value: Some(Expr::Literal(
            Constant::Float(identity(r.op)),
            ScalarType::F64,
        )),
    });
    in_row.push(Stmt::For {
        var: names[x].to_string(),
        ty: ity,
        start: ctx.lit(domain.rect.lo[x]),
        end: ctx.lit(domain.rect.hi[x]),
        step: ctx.lit(domain.stride[x]),
        body: vec![Stmt::Block(point)],
    });
    in_row.push(Stmt::Store {
        buffer: "partials".into(),
        index: Expr::var("row"),
        value: Expr::var("acc"),
    });
    let body = vec![
        Stmt::Declare {
            var: "row".into(),
            ty: ity,
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
        params,
        shared: Vec::new(),
        block: [THREADS, 1, 1],
        body,
    };
    Lowered {
        kernel,
        grid: [blocks(rows, u64::from(THREADS)), 1, 1],
        rows: rows as usize,
        fields: reads.iter().map(|(f, _)| *f).collect(),
    }
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
