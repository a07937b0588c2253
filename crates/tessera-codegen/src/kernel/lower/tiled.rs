//! Spatial tiling in shared memory (Holewinski with T = 1): a block owns a tile of the (up to
//! three) fastest axes; it loads the tile plus the stage's halo of every field read at
//! neighbouring points cooperatively, border-resolved, waits at a barrier, then computes from
//! shared memory. Slower axes (4D) are looped, with a barrier before the tile is reloaded.

use tessera_analysis::{Domain, Footprint};
use tessera_ir::{Border, Field, Id, Stage};

use super::super::{Expr, Kernel, SharedArray, Stmt};
use super::common::{Ctx, StageIo, field_ident, kernel_name};
use super::tile::Tile;

/// A field staged in shared memory.
struct Staged {
    field: Id<Field>,
    /// The smallest offset read per axis (the halo's low corner).
    min: Vec<i32>,
    /// The shared array holding the tile with its halo.
    array: SharedArray,
}

/// The tiled kernel of `stage` and its grid, or why the stage cannot be tiled.
pub fn kernel(ctx: &Ctx, stage: Id<Stage>, io: &StageIo) -> Result<(Kernel, [u64; 3]), String> {
    let tiling = Tiling::new(ctx, stage, io)?;
    let d = ctx.dims();
    let mut step = tiling.load_tiles();
    step.extend(tiling.points());
    let mut body = vec![tiling.tile.thread_index(ctx)];
    body.extend(tiling.tile.origins(ctx, &tiling.domain, tiling.first..d));
    body.extend(tiling.loops(step));
    let kernel = Kernel {
        name: kernel_name(ctx, stage, "tiled"),
        strategy: "tiled",
        doc: format!(
            "stage `{}`: shared-memory tiles with halos",
            ctx.bound.program().stages[stage].name
        ),
        params: io.kernel_params(),
        shared: tiling.staged.iter().map(|s| s.array.clone()).collect(),
        block: tiling.tile.block,
        min_resident_blocks: None,
        body,
    };
    Ok((kernel, tiling.tile.grid(&tiling.domain, tiling.first..d)))
}

/// A stage's tiling: its tiled axes, its block tile and the fields it stages.
struct Tiling<'a> {
    ctx: &'a Ctx<'a>,
    stage: Id<Stage>,
    io: &'a StageIo,
    domain: Domain,
    names: Vec<&'static str>,
    /// The first tiled axis (the slower ones are looped).
    first: usize,
    tile: Tile,
    /// The fields staged in shared memory.
    staged: Vec<Staged>,
}

impl<'a> Tiling<'a> {
    /// The tiling of `stage`, or why it cannot be tiled.
    fn new(ctx: &'a Ctx<'a>, stage: Id<Stage>, io: &'a StageIo) -> Result<Tiling<'a>, String> {
        let d = ctx.dims();
        let m = d.min(3);
        let first = d - m;
        let domain = ctx.domain(stage).clone();
        ctx.require_dense(&domain, first..d, "tiles do")?;
        let plan = ctx.plan;
        let elements = if m >= 2 { plan.elements_per_thread } else { 1 };
        let block = [
            plan.block[0],
            if m >= 2 { plan.block[1] } else { 1 },
            if m >= 3 { plan.block[2] } else { 1 },
        ];
        let mut tiling = Tiling {
            ctx,
            stage,
            io,
            domain,
            names: ctx.axis_names(),
            first,
            tile: Tile::new(d, block, elements),
            staged: Vec::new(),
        };
        tiling.staged = (io.reads.iter())
            .filter_map(|(field, fp)| tiling.staged(*field, fp))
            .collect();
        Ok(tiling)
    }

    /// How `field`, read at `fp`, is staged: fields read at neighbouring points of the tiled
    /// axes (and only at the point itself along looped axes) are staged in shared memory.
    fn staged(&self, field: Id<Field>, fp: &Footprint) -> Option<Staged> {
        let (d, first) = (self.ctx.dims(), self.first);
        let neighbours = (first..d).any(|a| fp.min[a] != 0 || fp.max[a] != 0);
        let flat_loops = (0..first).all(|a| fp.min[a] == 0 && fp.max[a] == 0);
        (neighbours && flat_loops).then(|| Staged {
            field,
            min: fp.min.clone(),
            array: SharedArray {
                name: format!("s_{}", field_ident(self.ctx, field)),
                ty: self.ctx.bound.program().fields[field].ty,
                dims: (first..d)
                    .map(|a| (self.tile.size(a) + i64::from(fp.max[a] - fp.min[a])) as usize)
                    .collect(),
            },
        })
    }

    /// Each staged field's tile loaded with its halo, then a barrier.
    fn load_tiles(&self) -> Vec<Stmt> {
        let program = self.ctx.bound.program();
        let mut step = Vec::new();
        for staged in &self.staged {
            step.push(Stmt::Comment(format!(
                "tile of `{}` with its halo",
                program.fields[staged.field].name
            )));
            step.push(self.load_tile(staged));
        }
        if !self.staged.is_empty() {
            step.push(Stmt::Barrier);
        }
        step
    }

    /// The block's loop loading `staged`'s tile with its halo from memory, border-resolved.
    fn load_tile(&self, staged: &Staged) -> Stmt {
        let ctx = self.ctx;
        let (d, first) = (ctx.dims(), self.first);
        let dims: Vec<i64> = staged.array.dims.iter().map(|&n| n as i64).collect();
        self.tile
            .cooperative_loop(ctx, &dims, &self.names[first..], |local| {
                let mut coords: Vec<Expr> = (0..first).map(|a| Expr::var(self.names[a])).collect();
                for (j, axis) in (first..d).enumerate() {
                    let origin = Expr::var(format!("o_{}", self.names[axis]));
                    let origin = ctx.offset(origin, i64::from(staged.min[axis]));
                    coords.push(origin.plus(local[j].clone()));
                }
                let resolve: Vec<bool> = (0..d).map(|a| a >= first).collect();
                let border = ctx
                    .border(Some(self.stage), staged.field)
                    .unwrap_or(Border::Clamp);
                let value = self
                    .io
                    .load(ctx, staged.field, &coords, &resolve, Some(border));
                vec![Stmt::SharedStore {
                    array: staged.array.name.clone(),
                    index: local,
                    value,
                }]
            })
    }

    /// Each of the thread's elements: its coordinates, then its point computed (where inside
    /// the domain).
    fn points(&self) -> Vec<Stmt> {
        let ctx = self.ctx;
        let (d, first) = (ctx.dims(), self.first);
        let coords: Vec<Expr> = self.names.iter().map(|n| Expr::var(*n)).collect();
        let hi = self.tile.overhang(&self.domain, first..d);
        (0..self.tile.elements)
            .map(|e| {
                let mut point = Vec::new();
                for axis in first..d {
                    let name = self.names[axis];
                    point.push(Stmt::Declare {
                        var: format!("t_{name}"),
                        ty: ctx.ity,
                        value: Some(self.tile.thread_offset(ctx, axis, e)),
                    });
                    let global =
                        Expr::var(format!("o_{name}")).plus(Expr::var(format!("t_{name}")));
                    point.push(Stmt::Declare {
                        var: name.to_string(),
                        ty: ctx.ity,
                        value: Some(global),
                    });
                }
                let compute = ctx.point(self.io, &coords, &mut |field, offset| {
                    self.read(&coords, field, offset)
                });
                point.push(Stmt::guarded(
                    ctx.within(&coords, &vec![None; d], &hi),
                    compute,
                ));
                Stmt::Block(point)
            })
            .collect()
    }

    /// The read of `field` at `offset` from the point at `coords`: from the shared tile when
    /// staged, else from memory.
    fn read(&self, coords: &[Expr], field: Id<Field>, offset: &[i32]) -> Expr {
        let ctx = self.ctx;
        let Some(staged) = self.staged.iter().find(|s| s.field == field) else {
            return self.io.load_offset(ctx, field, coords, offset);
        };
        let index = (self.first..ctx.dims())
            .map(|a| {
                let local = Expr::var(format!("t_{}", self.names[a]));
                ctx.offset(local, i64::from(offset[a] - staged.min[a]))
            })
            .collect();
        Expr::SharedLoad {
            array: staged.array.name.clone(),
            index,
        }
    }

    /// `step` inside the serial loops over the slower axes (4D), with a barrier before the
    /// tiles are reloaded.
    fn loops(&self, mut step: Vec<Stmt>) -> Vec<Stmt> {
        if self.first == 0 {
            return step;
        }
        if !self.staged.is_empty() {
            step.push(Stmt::Barrier);
        }
        (self.ctx).serial_loops(&self.domain, &self.names, 0..self.first, step)
    }
}
