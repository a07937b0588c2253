//! 2.5D streaming (Micikevicius; Schäfer's cached plane sweep; Rawat's streaming with
//! registers at T = 1): a block owns a tile of the plane axes and sweeps the streaming axis
//! (the slowest of the three fastest axes: z in 3D, y in 2D), serially or in concurrent
//! chunks. For every field read at neighbouring planes only straight along the streaming axis
//! ("diagonal-access free"), each thread keeps a register queue of the planes it reads; the
//! current plane is staged in shared memory (own points from the queue, halo from global
//! memory) when the field is also read at in-plane neighbours. Other fields are read from
//! global memory through the read-only cache.

use tessera_ir::{Border, Field, Id, Stage, UnaryOp};

use super::super::{Expr, Kernel, KernelOp, SharedArray, Stmt};
use super::common::{Ctx, StageIo, field_ident, kernel_name};
use super::naive::blocks;

/// A field streamed through registers.
struct Streamed {
    field: Id<Field>,
    /// Lowest and highest plane read, relative to the current one (`lo <= 0 <= hi`).
    lo: i64,
    hi: i64,
    /// In-plane footprint box of the current plane, per plane axis.
    min: Vec<i64>,
    max: Vec<i64>,
    /// The shared array holding the current plane with its halo, when read at in-plane
    /// neighbours.
    shared: Option<String>,
}

/// The streaming kernel of `stage` and its grid, or why the stage cannot be streamed.
pub fn kernel(ctx: &Ctx, stage: Id<Stage>, io: &StageIo) -> Result<(Kernel, [u64; 3]), String> {
    let d = ctx.dims();
    if d < 2 {
        return Err("the grid has one axis, so there is no plane to stream".into());
    }
    let s = if d >= 3 { d - 3 } else { d - 2 };
    let plane: Vec<usize> = (s + 1..d).collect();
    let domain = ctx.domain(stage).clone();
    let names = ctx.axis_names();
    if let Some(axis) = (s..d).find(|&a| domain.stride[a] != 1) {
        return Err(format!(
            "its domain is strided along {}, which streaming does not support",
            names[axis]
        ));
    }
    let plan = ctx.plan;
    let two_plane_axes = plane.len() == 2;
    let elements = if two_plane_axes {
        plan.elements_per_thread
    } else {
        1
    };
    let block = [
        plan.block[0],
        if two_plane_axes { plan.block[1] } else { 1 },
        1,
    ];
    let block_axis = |axis: usize| d - 1 - axis;
    let tile = |axis: usize| {
        let b = block_axis(axis);
        i64::from(block[b]) * if b == 1 { i64::from(elements) } else { 1 }
    };
    let threads = i64::from(block[0]) * i64::from(block[1]);
    let ity = ctx.ity;
    let program = ctx.bound.program();

    let mut streamed = Vec::new();
    let mut shared = Vec::new();
    for (field, fp) in &io.reads {
        let at_point_only = fp.offsets.iter().all(|o| o.iter().all(|&v| v == 0));
        let flat_loops = (0..s).all(|a| fp.min[a] == 0 && fp.max[a] == 0);
        let straight = fp
            .offsets
            .iter()
            .all(|o| o[s] == 0 || plane.iter().all(|&a| o[a] == 0));
        if at_point_only || !flat_loops || !straight {
            continue;
        }
        let in_plane: Vec<&Vec<i32>> = fp.offsets.iter().filter(|o| o[s] == 0).collect();
        let min: Vec<i64> = plane
            .iter()
            .map(|&a| {
                in_plane
                    .iter()
                    .map(|o| i64::from(o[a]))
                    .min()
                    .unwrap_or(0)
                    .min(0)
            })
            .collect();
        let max: Vec<i64> = plane
            .iter()
            .map(|&a| {
                in_plane
                    .iter()
                    .map(|o| i64::from(o[a]))
                    .max()
                    .unwrap_or(0)
                    .max(0)
            })
            .collect();
        let neighbours = min.iter().chain(&max).any(|&v| v != 0);
        let shared_name = neighbours.then(|| {
            let name = format!("s_{}", field_ident(ctx, *field));
            let dims = plane
                .iter()
                .enumerate()
                .map(|(j, &a)| (tile(a) + max[j] - min[j]) as usize)
                .collect();
            shared.push(SharedArray {
                name: name.clone(),
                ty: program.fields[*field].ty,
                dims,
            });
            name
        });
        streamed.push(Streamed {
            field: *field,
            lo: i64::from(fp.min[s]).min(0),
            hi: i64::from(fp.max[s]).max(0),
            min,
            max,
            shared: shared_name,
        });
    }

    let queue = |f: &Streamed, e: u32, k: i64| {
        let k = if k < 0 {
            format!("m{}", -k)
        } else {
            format!("p{k}")
        };
        format!("q{}_{e}_{k}", f.field.index())
    };
    // Plane coordinates of element `e`: the thread's local and global positions.
    let local_name = |axis: usize, e: u32| {
        if block_axis(axis) == 1 {
            format!("t_{}{e}", names[axis])
        } else {
            format!("t_{}", names[axis])
        }
    };
    let global_name = |axis: usize, e: u32| {
        if block_axis(axis) == 1 {
            format!("{}{e}", names[axis])
        } else {
            names[axis].to_string()
        }
    };
    let coords_of = |e: u32, stream: Expr| -> Vec<Expr> {
        (0..d)
            .map(|a| match a {
                a if a < s => Expr::var(names[a]),
                a if a == s => stream.clone(),
                a => Expr::var(global_name(a, e)),
            })
            .collect()
    };
    let all_but_loops: Vec<bool> = (0..d).map(|a| a >= s).collect();
    let border_of = |field: Id<Field>| ctx.border(Some(stage), field).unwrap_or(Border::Clamp);

    let mut body = Vec::new();
    if !shared.is_empty() {
        body.push(Stmt::Declare {
            var: "tid".into(),
            ty: ity,
            value: Some(
                Expr::ThreadIdx(1)
                    .times(ctx.lit(i64::from(block[0])))
                    .plus(Expr::ThreadIdx(0)),
            ),
        });
    }
    for &axis in &plane {
        let origin = Expr::BlockIdx(block_axis(axis)).times(ctx.lit(tile(axis)));
        body.push(Stmt::Declare {
            var: format!("o_{}", names[axis]),
            ty: ity,
            value: Some(ctx.offset(origin, domain.rect.lo[axis])),
        });
    }
    let mut hi = vec![None; d];
    for e in 0..elements {
        for &axis in &plane {
            let b = block_axis(axis);
            let mut l = Expr::ThreadIdx(b);
            if b == 1 && e > 0 {
                l = l.plus(ctx.lit(i64::from(e) * i64::from(block[1])));
            }
            if b == 1 || e == 0 {
                body.push(Stmt::Declare {
                    var: local_name(axis, e),
                    ty: ity,
                    value: Some(l),
                });
                let global =
                    Expr::var(format!("o_{}", names[axis])).plus(Expr::var(local_name(axis, e)));
                body.push(Stmt::Declare {
                    var: global_name(axis, e),
                    ty: ity,
                    value: Some(global),
                });
            }
        }
    }
    for &axis in &plane {
        if domain.rect.lo[axis]
            + blocks(Ctx::count(&domain, axis), tile(axis) as u64) as i64 * tile(axis)
            > domain.rect.hi[axis]
        {
            hi[axis] = Some(domain.rect.hi[axis]);
        }
    }
    let count_s = Ctx::count(&domain, s);
    let chunk = plan.stream_chunk.map_or(count_s, i64::from).max(1);
    let chunk_axis = plane.len();
    let begin = ctx.offset(
        Expr::BlockIdx(chunk_axis).times(ctx.lit(chunk)),
        domain.rect.lo[s],
    );
    body.push(Stmt::Declare {
        var: "s_begin".into(),
        ty: ity,
        value: Some(begin),
    });
    body.push(Stmt::Declare {
        var: "s_end".into(),
        ty: ity,
        value: Some(
            ctx.offset(Expr::var("s_begin"), chunk)
                .op(KernelOp::Min, ctx.lit(domain.rect.hi[s])),
        ),
    });

    let mut sweep = Vec::new();
    for f in &streamed {
        for e in 0..elements {
            for k in f.lo..=f.hi {
                let value = (k > f.lo).then(|| {
                    let position = ctx.offset(Expr::var("s_begin"), k - 1);
                    io.load(
                        ctx,
                        f.field,
                        &coords_of(e, position),
                        &all_but_loops,
                        Some(border_of(f.field)),
                    )
                });
                sweep.push(Stmt::Declare {
                    var: queue(f, e, k),
                    ty: program.fields[f.field].ty,
                    value,
                });
            }
        }
    }
    let z = names[s];
    let mut step = Vec::new();
    for f in &streamed {
        step.push(Stmt::Comment(format!(
            "advance the register queue of `{}`",
            program.fields[f.field].name
        )));
        for e in 0..elements {
            for k in f.lo..f.hi {
                step.push(Stmt::Assign {
                    var: queue(f, e, k),
                    value: Expr::var(queue(f, e, k + 1)),
                });
            }
            let position = ctx.offset(Expr::var(z), f.hi);
            let value = io.load(
                ctx,
                f.field,
                &coords_of(e, position),
                &all_but_loops,
                Some(border_of(f.field)),
            );
            step.push(Stmt::Assign {
                var: queue(f, e, f.hi),
                value,
            });
        }
    }
    if !shared.is_empty() {
        step.push(Stmt::Barrier);
        for f in &streamed {
            let Some(name) = &f.shared else { continue };
            step.push(Stmt::Comment(format!(
                "current plane of `{}`: own points from registers, halo from memory",
                program.fields[f.field].name
            )));
            for e in 0..elements {
                let index = plane
                    .iter()
                    .enumerate()
                    .map(|(j, &a)| ctx.offset(Expr::var(local_name(a, e)), -f.min[j]))
                    .collect();
                step.push(Stmt::SharedStore {
                    array: name.clone(),
                    index,
                    value: Expr::var(queue(f, e, 0)),
                });
            }
            let dims: Vec<i64> = plane
                .iter()
                .enumerate()
                .map(|(j, &a)| tile(a) + f.max[j] - f.min[j])
                .collect();
            let mut load = Vec::new();
            let mut stride = 1i64;
            let mut local = vec![Expr::var("i"); plane.len()];
            for j in (0..plane.len()).rev() {
                let mut l = Expr::var("i");
                if stride > 1 {
                    l = l.op(KernelOp::Div, ctx.lit(stride));
                }
                if j > 0 {
                    l = l.op(KernelOp::Rem, ctx.lit(dims[j]));
                }
                stride *= dims[j];
                let var = format!("l_{}", names[plane[j]]);
                load.push(Stmt::Declare {
                    var: var.clone(),
                    ty: ity,
                    value: Some(l),
                });
                local[j] = Expr::var(var);
            }
            let own = plane
                .iter()
                .enumerate()
                .map(|(j, &a)| {
                    ctx.lit(-f.min[j]).op(KernelOp::Le, local[j].clone()).op(
                        KernelOp::And,
                        local[j]
                            .clone()
                            .op(KernelOp::Lt, ctx.lit(-f.min[j] + tile(a))),
                    )
                })
                .reduce(|a, b| a.op(KernelOp::And, b))
                .expect("a plane axis");
            let mut coords: Vec<Expr> = (0..=s).map(|a| Expr::var(names[a])).collect();
            for (j, &a) in plane.iter().enumerate() {
                coords.push(
                    ctx.offset(Expr::var(format!("o_{}", names[a])), f.min[j])
                        .plus(local[j].clone()),
                );
            }
            let resolve: Vec<bool> = (0..d).map(|a| a > s).collect();
            let value = io.load(ctx, f.field, &coords, &resolve, Some(border_of(f.field)));
            load.push(Stmt::when(
                Expr::Unary(UnaryOp::Not, Box::new(own)),
                vec![Stmt::SharedStore {
                    array: name.clone(),
                    index: local,
                    value,
                }],
            ));
            step.push(Stmt::For {
                var: "i".into(),
                ty: ity,
                start: Expr::var("tid"),
                end: ctx.lit(stride),
                step: ctx.lit(threads),
                body: load,
            });
        }
        step.push(Stmt::Barrier);
    }
    for e in 0..elements {
        let coords = coords_of(e, Expr::var(z));
        let mut read = |field: Id<Field>, offset: &[i32]| {
            if let Some(f) = streamed.iter().find(|f| f.field == field) {
                let k = i64::from(offset[s]);
                let in_plane = plane.iter().any(|&a| offset[a] != 0);
                match (&f.shared, in_plane) {
                    (Some(name), true) => {
                        let index = plane
                            .iter()
                            .enumerate()
                            .map(|(j, &a)| {
                                ctx.offset(
                                    Expr::var(local_name(a, e)),
                                    i64::from(offset[a]) - f.min[j],
                                )
                            })
                            .collect();
                        Expr::SharedLoad {
                            array: name.clone(),
                            index,
                        }
                    }
                    _ => Expr::var(queue(f, e, k)),
                }
            } else {
                let resolve: Vec<bool> = offset.iter().map(|&o| o != 0).collect();
                io.load(
                    ctx,
                    field,
                    &ctx.shifted(&coords, offset),
                    &resolve,
                    ctx.border(Some(stage), field),
                )
            }
        };
        let compute = ctx.point(io, &coords, &mut read);
        step.push(Stmt::guarded(
            ctx.within(&coords, &vec![None; d], &hi),
            compute,
        ));
    }
    sweep.push(Stmt::For {
        var: z.to_string(),
        ty: ity,
        start: Expr::var("s_begin"),
        end: Expr::var("s_end"),
        step: ctx.lit(1),
        body: step,
    });
    body.extend(ctx.serial_loops(&domain, &names, 0..s, sweep));
    let mut grid = [1u64; 3];
    for &axis in &plane {
        grid[block_axis(axis)] = blocks(Ctx::count(&domain, axis), tile(axis) as u64);
    }
    grid[chunk_axis] = blocks(count_s, chunk as u64);
    let kernel = Kernel {
        name: kernel_name(ctx, stage, "streaming"),
        strategy: "streaming",
        doc: format!(
            "stage `{}`: plane sweep along {}, register queues and a shared current plane",
            program.stages[stage].name, names[s]
        ),
        params: io.kernel_params(),
        shared,
        block,
        body,
    };
    Ok((kernel, grid))
}
