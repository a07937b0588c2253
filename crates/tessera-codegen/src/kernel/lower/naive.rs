//! The naive strategy (Physis, Schäfer's baseline): one thread per point of the three fastest
//! axes (the launch grid's x, y and z), each thread looping over any slower axes; loads
//! through the read-only cache, border handling only off the interior fast path.

use tessera_ir::{Id, Stage};

use super::super::{Expr, Kernel, KernelOp, Stmt};
use super::common::{Ctx, StageIo, kernel_name};

/// The naive kernel of `stage` and its launch grid.
pub fn kernel(ctx: &Ctx, stage: Id<Stage>, io: &StageIo) -> (Kernel, [u64; 3]) {
    let d = ctx.dims();
    let domain = ctx.domain(stage).clone();
    let names = ctx.axis_names();
    let ity = ctx.ity;
    let bx = ctx.plan.block[0];
    let (by, elements) = if d >= 2 {
        (ctx.plan.block[1], ctx.plan.elements_per_thread)
    } else {
        (1, 1)
    };
    let coords: Vec<Expr> = names.iter().map(|n| Expr::var(*n)).collect();
    let thread_coord = |axis: usize, k: &str| Stmt::Declare {
        var: names[axis].to_string(),
        ty: ity,
        value: Some(ctx.offset(
            Expr::var(k).times(ctx.lit(domain.stride[axis])),
            domain.rect.lo[axis],
        )),
    };
    // The third fastest axis takes the grid's z where its blocks fit the launch limit.
    let bz = ctx.plan.block[2];
    let z = (d >= 3)
        .then(|| d - 3)
        .filter(|&z| blocks(Ctx::count(&domain, z), u64::from(bz)) <= MAX_GRID_Z_BLOCKS);
    let looped = z.unwrap_or(d.saturating_sub(2));
    let mut point = ctx.serial_loops(
        &domain,
        &names,
        0..looped,
        point_with_borders(ctx, stage, io, &coords),
    );
    if let Some(z) = z {
        let kz = Expr::BlockIdx(2)
            .times(ctx.lit(i64::from(bz)))
            .plus(Expr::ThreadIdx(2));
        point = vec![
            Stmt::Declare {
                var: "kz".into(),
                ty: ity,
                value: Some(kz),
            },
            thread_coord(z, "kz"),
            Stmt::when(
                Expr::var("kz").op(KernelOp::Lt, ctx.lit(Ctx::count(&domain, z))),
                point,
            ),
        ];
    }
    let x = d - 1;
    let count_x = Ctx::count(&domain, x);
    let mut inner = Vec::new();
    if d >= 2 {
        let y = d - 2;
        let count_y = Ctx::count(&domain, y);
        for e in 0..elements {
            let ky = Expr::BlockIdx(1)
                .times(ctx.lit(i64::from(by) * i64::from(elements)))
                .plus(ctx.lit(i64::from(e) * i64::from(by)))
                .plus(Expr::ThreadIdx(1));
            inner.push(Stmt::Block(vec![
                Stmt::Declare {
                    var: "ky".into(),
                    ty: ity,
                    value: Some(ky),
                },
                thread_coord(y, "ky"),
                Stmt::when(
                    Expr::var("ky").op(KernelOp::Lt, ctx.lit(count_y)),
                    point.clone(),
                ),
            ]));
        }
    } else {
        inner = point;
    }
    let kx = Expr::BlockIdx(0)
        .times(ctx.lit(i64::from(bx)))
        .plus(Expr::ThreadIdx(0));
    let body = vec![
        Stmt::Declare {
            var: "kx".into(),
            ty: ity,
            value: Some(kx),
        },
        thread_coord(x, "kx"),
        Stmt::when(Expr::var("kx").op(KernelOp::Lt, ctx.lit(count_x)), inner),
    ];
    let grid_y = if d >= 2 {
        blocks(
            Ctx::count(&domain, d - 2),
            u64::from(by) * u64::from(elements),
        )
    } else {
        1
    };
    let grid_z = z.map_or(1, |z| blocks(Ctx::count(&domain, z), u64::from(bz)));
    let program = ctx.bound.program();
    let kernel = Kernel {
        name: kernel_name(ctx, stage, "naive"),
        strategy: "naive",
        doc: format!(
            "stage `{}`: one thread per point{}",
            program.stages[stage].name,
            if looped > 0 {
                ", slower axes looped"
            } else {
                ""
            }
        ),
        params: io.kernel_params(),
        shared: Vec::new(),
        block: [bx, by, if z.is_some() { bz } else { 1 }],
        min_resident_blocks: None,
        body,
    };
    (kernel, [blocks(count_x, u64::from(bx)), grid_y, grid_z])
}

/// The most blocks a launch grid has along z (CUDA's limit; OpenCL devices allow at least
/// as many work-groups).
const MAX_GRID_Z_BLOCKS: u64 = 65535;

/// Blocks of `per_block` covering `count` points.
pub fn blocks(count: i64, per_block: u64) -> u64 {
    (count.max(0) as u64).div_ceil(per_block.max(1))
}

/// The point code of `stage` at `coords` (in the grid): plain loads where no read can leave
/// the grid, border-resolved loads elsewhere.
fn point_with_borders(ctx: &Ctx, stage: Id<Stage>, io: &StageIo, coords: &[Expr]) -> Vec<Stmt> {
    let d = ctx.dims();
    let domain = ctx.domain(stage);
    let last = domain.last();
    let (mut lo, mut hi) = (vec![None; d], vec![None; d]);
    for (field, fp) in &io.reads {
        if ctx.border(Some(stage), *field).is_none() {
            continue;
        }
        for axis in 0..d {
            let need_lo = -i64::from(fp.min[axis]);
            if need_lo > domain.rect.lo[axis] {
                lo[axis] = Some(lo[axis].unwrap_or(0).max(need_lo));
            }
            let need_hi = ctx.extent(axis) - i64::from(fp.max[axis]);
            if need_hi <= last[axis] {
                hi[axis] = Some(hi[axis].unwrap_or(i64::MAX).min(need_hi));
            }
        }
    }
    let mut direct = |field, offset: &[i32]| {
        io.load(
            ctx,
            field,
            &ctx.shifted(coords, offset),
            &vec![false; d],
            None,
        )
    };
    let interior = ctx.point(io, coords, &mut direct);
    match ctx.within(coords, &lo, &hi) {
        None => vec![interior],
        Some(cond) => {
            let mut bordered = |field, offset: &[i32]| io.load_offset(ctx, field, coords, offset);
            let boundary = ctx.point(io, coords, &mut bordered);
            vec![Stmt::If {
                cond,
                then: vec![interior],
                otherwise: vec![boundary],
            }]
        }
    }
}
