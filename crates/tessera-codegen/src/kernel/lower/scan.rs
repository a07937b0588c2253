//! Stages with a scan, under every strategy: one thread per line of the stage's domain along
//! the scan axis, walking it from its low end and carrying the scans' running values from
//! point to point (THE order of the reference); every read resolved by its border mode.

use tessera_ir::{Id, Stage};

use super::super::{Expr, Kernel, KernelOp, Stmt};
use super::common::{Ctx, StageIo, kernel_name};
use super::naive::blocks;
use crate::cfamily::scan_accumulator;

/// The line kernel of `stage`, which scans along `axis`, and its launch grid.
pub fn kernel(ctx: &Ctx, stage: Id<Stage>, io: &StageIo, axis: usize) -> (Kernel, [u64; 3]) {
    let program = ctx.bound.program();
    let domain = ctx.domain(stage).clone();
    let names = ctx.axis_names();
    let others: Vec<usize> = (0..ctx.dims()).filter(|&a| a != axis).collect();
    let counts: Vec<i64> = others.iter().map(|&a| Ctx::count(&domain, a)).collect();
    let lines: i64 = counts.iter().product();
    let threads = ctx.plan.block[0].max(1);
    let mut line = Vec::new();
    for (&a, digit) in others.iter().zip(ctx.digits("kn", &counts)) {
        line.push(Stmt::Declare {
            var: names[a].to_string(),
            ty: ctx.ity,
            value: Some(ctx.offset(digit.times(ctx.lit(domain.stride[a])), domain.rect.lo[a])),
        });
    }
    for (field, scan) in program.stages[stage].scans() {
        let ty = program.fields[field].ty.arithmetic_type();
        line.push(Stmt::Declare {
            var: scan_accumulator(field),
            ty,
            value: Some(Expr::Literal(scan.identity(ty), ty)),
        });
    }
    let coords: Vec<Expr> = names.iter().map(|n| Expr::var(*n)).collect();
    let mut bordered = |field, offset: &[i32]| io.load_offset(ctx, field, &coords, offset);
    let point = ctx.point(io, &coords, &mut bordered);
    line.extend(ctx.serial_loops(&domain, &names, axis..axis + 1, vec![point]));
    let kn = Expr::BlockIdx(0)
        .times(ctx.lit(i64::from(threads)))
        .plus(Expr::ThreadIdx(0));
    let body = vec![
        Stmt::Declare {
            var: "kn".into(),
            ty: ctx.ity,
            value: Some(kn),
        },
        Stmt::when(Expr::var("kn").op(KernelOp::Lt, ctx.lit(lines)), line),
    ];
    let kernel = Kernel {
        name: kernel_name(ctx, stage, "lines"),
        strategy: "lines",
        doc: format!(
            "stage `{}`: one thread per line along {}, its points in ascending order (a scan)",
            program.stages[stage].name, names[axis]
        ),
        params: io.kernel_params(),
        shared: Vec::new(),
        block: [threads, 1, 1],
        min_resident_blocks: None,
        body,
    };
    (kernel, [blocks(lines, u64::from(threads)), 1, 1])
}
