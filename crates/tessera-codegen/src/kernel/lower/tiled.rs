//! Spatial tiling in shared memory (Holewinski with T = 1): a block owns a tile of the (up to
//! three) fastest axes; it loads the tile plus the stage's halo of every field read at
//! neighbouring points cooperatively, border-resolved, waits at a barrier, then computes from
//! shared memory. Slower axes (4D) are looped, with a barrier before the tile is reloaded.

use tessera_ir::{Border, Id, Stage};

use super::super::{Expr, Kernel, KernelOp, SharedArray, Stmt};
use super::common::{Ctx, StageIo, field_ident, kernel_name};
use super::naive::blocks;

/// The tiled kernel of `stage` and its grid, or why the stage cannot be tiled.
pub fn kernel(ctx: &Ctx, stage: Id<Stage>, io: &StageIo) -> Result<(Kernel, [u64; 3]), String> {
    let d = ctx.dims();
    let m = d.min(3);
    let first_tiled = d - m;
    let domain = ctx.domain(stage).clone();
    let names = ctx.axis_names();
    if let Some(axis) = (first_tiled..d).find(|&a| domain.stride[a] != 1) {
        return Err(format!(
            "its domain is strided along {}, which tiles do not support",
            names[axis]
        ));
    }
    let plan = ctx.plan;
    let elements = if m >= 2 { plan.elements_per_thread } else { 1 };
    let block = [
        plan.block[0],
        if m >= 2 { plan.block[1] } else { 1 },
        if m >= 3 { plan.block[2] } else { 1 },
    ];
    // Block axis of each tiled grid axis (x = 0 for the fastest) and the tile size along it.
    let block_axis = |axis: usize| d - 1 - axis;
    let tile = |axis: usize| {
        let b = block_axis(axis);
        i64::from(block[b]) * if b == 1 { i64::from(elements) } else { 1 }
    };
    let threads = i64::from(block[0]) * i64::from(block[1]) * i64::from(block[2]);
    let ity = ctx.ity;
    let mut body = vec![Stmt::Declare {
        var: "tid".into(),
        ty: ity,
        value: Some(
            Expr::ThreadIdx(2)
                .times(ctx.lit(i64::from(block[1])))
                .plus(Expr::ThreadIdx(1))
                .times(ctx.lit(i64::from(block[0])))
                .plus(Expr::ThreadIdx(0)),
        ),
    }];
    for (axis, name) in names.iter().enumerate().skip(first_tiled) {
        let origin = Expr::BlockIdx(block_axis(axis)).times(ctx.lit(tile(axis)));
        body.push(Stmt::Declare {
            var: format!("o_{name}"),
            ty: ity,
            value: Some(ctx.offset(origin, domain.rect.lo[axis])),
        });
    }
    // Fields read at neighbouring points of the tiled axes (and only at the point itself along
    // looped axes) are staged in shared memory.
    let mut shared = Vec::new();
    let mut staged = Vec::new();
    for (field, fp) in &io.reads {
        let neighbours = (first_tiled..d).any(|a| fp.min[a] != 0 || fp.max[a] != 0);
        let flat_loops = (0..first_tiled).all(|a| fp.min[a] == 0 && fp.max[a] == 0);
        if neighbours && flat_loops {
            let dims: Vec<usize> = (first_tiled..d)
                .map(|a| (tile(a) + i64::from(fp.max[a] - fp.min[a])) as usize)
                .collect();
            let name = format!("s_{}", field_ident(ctx, *field));
            shared.push(SharedArray {
                name: name.clone(),
                ty: ctx.bound.program().fields[*field].ty,
                dims,
            });
            staged.push((*field, fp.clone(), name));
        }
    }
    let mut step = Vec::new();
    for ((field, fp, name), array) in staged.iter().zip(&shared) {
        let total: usize = array.dims.iter().product();
        let mut load = Vec::new();
        let mut coords: Vec<Expr> = (0..first_tiled).map(|a| Expr::var(names[a])).collect();
        let mut local = Vec::new();
        let mut stride = 1i64;
        for (j, axis) in (first_tiled..d).enumerate().rev() {
            let dim = array.dims[j] as i64;
            let mut l = Expr::var("i");
            if stride > 1 {
                l = l.op(KernelOp::Div, ctx.lit(stride));
            }
            if j > 0 {
                l = l.op(KernelOp::Rem, ctx.lit(dim));
            }
            stride *= dim;
            load.push(Stmt::Declare {
                var: format!("l_{}", names[axis]),
                ty: ity,
                value: Some(l),
            });
            local.push(Expr::var(format!("l_{}", names[axis])));
        }
        local.reverse();
        for (j, axis) in (first_tiled..d).enumerate() {
            let origin = ctx.offset(
                Expr::var(format!("o_{}", names[axis])),
                i64::from(fp.min[axis]),
            );
            coords.push(origin.plus(local[j].clone()));
        }
        let resolve: Vec<bool> = (0..d).map(|a| a >= first_tiled).collect();
        let border = ctx.border(Some(stage), *field).unwrap_or(Border::Clamp);
        let value = io.load(ctx, *field, &coords, &resolve, Some(border));
        load.push(Stmt::SharedStore {
            array: name.clone(),
            index: local,
            value,
        });
        step.push(Stmt::Comment(format!(
            "tile of `{}` with its halo",
            ctx.bound.program().fields[*field].name
        )));
        step.push(Stmt::For {
            var: "i".into(),
            ty: ity,
            start: Expr::var("tid"),
            end: ctx.lit(total as i64),
            step: ctx.lit(threads),
            body: load,
        });
    }
    if !staged.is_empty() {
        step.push(Stmt::Barrier);
    }
    let coords: Vec<Expr> = names.iter().map(|n| Expr::var(*n)).collect();
    for e in 0..elements {
        let mut point = Vec::new();
        let mut hi = vec![None; d];
        for axis in first_tiled..d {
            let b = block_axis(axis);
            let mut l = Expr::ThreadIdx(b);
            if b == 1 && e > 0 {
                l = l.plus(ctx.lit(i64::from(e) * i64::from(block[1])));
            }
            point.push(Stmt::Declare {
                var: format!("t_{}", names[axis]),
                ty: ity,
                value: Some(l),
            });
            let global = Expr::var(format!("o_{}", names[axis]))
                .plus(Expr::var(format!("t_{}", names[axis])));
            point.push(Stmt::Declare {
                var: names[axis].to_string(),
                ty: ity,
                value: Some(global),
            });
            if domain.rect.lo[axis]
                + blocks(Ctx::count(&domain, axis), tile(axis) as u64) as i64 * tile(axis)
                > domain.rect.hi[axis]
            {
                hi[axis] = Some(domain.rect.hi[axis]);
            }
        }
        let mut read = |field, offset: &[i32]| {
            if let Some((_, fp, name)) = staged.iter().find(|(f, _, _)| *f == field) {
                let index = (first_tiled..d)
                    .map(|a| {
                        ctx.offset(
                            Expr::var(format!("t_{}", names[a])),
                            i64::from(offset[a] - fp.min[a]),
                        )
                    })
                    .collect();
                Expr::SharedLoad {
                    array: name.clone(),
                    index,
                }
            } else {
                let resolve: Vec<bool> = offset.iter().map(|&o| o != 0).collect();
                let border = ctx.border(Some(stage), field);
                io.load(ctx, field, &ctx.shifted(&coords, offset), &resolve, border)
            }
        };
        let compute = ctx.point(io, &coords, &mut read);
        point.push(Stmt::guarded(
            ctx.within(&coords, &vec![None; d], &hi),
            compute,
        ));
        step.push(Stmt::Block(point));
    }
    if first_tiled > 0 {
        if !staged.is_empty() {
            step.push(Stmt::Barrier);
        }
        step = ctx.serial_loops(&domain, &names, 0..first_tiled, step);
    }
    body.extend(step);
    let mut grid = [1u64; 3];
    for axis in first_tiled..d {
        grid[block_axis(axis)] = blocks(Ctx::count(&domain, axis), tile(axis) as u64);
    }
    let kernel = Kernel {
        name: kernel_name(ctx, stage, "tiled"),
        strategy: "tiled",
        doc: format!(
            "stage `{}`: shared-memory tiles with halos",
            ctx.bound.program().stages[stage].name
        ),
        params: io.kernel_params(),
        shared,
        block,
        body,
    };
    Ok((kernel, grid))
}
