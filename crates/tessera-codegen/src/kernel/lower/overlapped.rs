//! Overlapped time tiling (Overtile; Holewinski et al., ICS'12): one kernel runs a whole pass
//! of up to T steps of every stage. A block loads its tile of every updated field plus the
//! halo T steps need into shared memory, runs the steps' stages on the shrinking regions of
//! [`local_tile_regions`] with a barrier after each, and writes its tile once.
//!
//! The kernel is written for T steps and takes the pass's depth `steps` (1 to T) as an
//! argument: it runs its first `steps` steps, whose regions hold those a shallower pass needs,
//! and writes its tile after the last of them.
//!
//! A point of a region outside the grid stands for its periodic image: it is computed with the
//! image's coordinates, so a periodic read across the edge is a plain neighbour read in shared
//! memory, and a clamped or mirrored read lands on the in-grid point the border names, which
//! lies between the point and the read (or as far on the other side). Blocks whose whole halo
//! is inside the grid take a branch without any of that arithmetic. Stage domains (sub-domains,
//! strides) are checked point by point; a point outside keeps its value.
//!
//! A stage that reads an output only at its own point updates it in place; other outputs go
//! to the field's second array (ping-pong in shared memory), which then holds the field. The
//! steps are unrolled, so which array holds a field is known at every statement.

use tessera_analysis::{FieldRole, Rect, TileRegions, step_work};
use tessera_ir::{Field, Id, ScalarType, Stage};

use super::super::{Expr, Kernel, KernelOp, KernelTraffic, SharedArray, Stmt};
use super::common::{Ctx, StageIo, field_ident};
use super::fused::{
    BlockFrame, Frame, Fused, FusedKernel, Place, Staging, by_frame, grid_domain, runs_step,
    step_counter, tile_regions,
};
use super::tile::{Tile, point_work, run_only_when};

/// The overlapped kernel of `ctx`'s program, or why the program cannot run it.
pub fn kernel(ctx: &Ctx) -> Result<Fused, String> {
    let overlap = Overlap::new(ctx)?;
    let mut body = vec![overlap.tile.thread_index(ctx)];
    body.extend(overlap.tile.origins(ctx, &grid_domain(ctx), 0..ctx.dims()));
    body.extend(by_frame(ctx, &overlap.reach, |frame| overlap.pass(frame)));
    let extent: Vec<String> = overlap.extent.iter().map(|e| e.to_string()).collect();
    let kernel = FusedKernel {
        strategy: "overlapped",
        doc: format!(
            "up to {} steps of every stage on {} tiles with their halos in shared memory",
            overlap.depth,
            extent.join("x")
        ),
        updated: overlap.staged.iter().map(|s| s.field).collect(),
        constant: &overlap.constant_fields,
        shared: (overlap.staged.iter())
            .flat_map(|s| s.arrays.iter().cloned())
            .collect(),
        block: overlap.tile.block,
        min_resident_blocks: None,
        grid: overlap.tile.grid(&grid_domain(ctx), 0..ctx.dims()),
    };
    Ok(kernel.with_body(ctx, body))
}

/// The traffic model of a fused kernel `kernel` whose blocks own `target` and compute
/// `regions` (overlapped tiles, streaming time tiles), per grid point and step: each updated
/// field's input region loaded and its tile stored once per pass of T steps; every read of a
/// field that is never updated loaded directly at every point computed; the redundant work of
/// the halos' regions.
pub fn traffic(
    ctx: &Ctx,
    kernel: &Kernel,
    (target, regions): (Rect, TileRegions),
) -> KernelTraffic {
    let checked = ctx.bound.checked();
    let program = ctx.bound.program();
    let per_point = target.volume() as f64 * regions.compute.len() as f64;
    let (mut load_bytes, mut once_bytes, mut store_bytes) = (0.0, 0.0, 0.0);
    for (field, decl) in program.fields.iter() {
        let size = decl.ty.size_bytes() as f64;
        let input = regions.inputs[field.index()].volume() as f64;
        match checked.role(field) {
            FieldRole::Unused => continue,
            FieldRole::Updated => {
                load_bytes += input * size;
                store_bytes += target.volume() as f64 * size;
            }
            _ => {
                let direct: f64 = (regions.compute.iter())
                    .flat_map(|step| program.stages.ids().zip(step))
                    .filter_map(|(stage, region)| {
                        let fp = checked.footprint(stage, field)?;
                        Some(region.volume() as f64 * fp.offsets.len() as f64)
                    })
                    .sum();
                load_bytes += direct * size;
            }
        }
        if input > 0.0 {
            once_bytes += target.volume() as f64 * size;
        }
    }
    KernelTraffic {
        kernel: kernel.name.clone(),
        points: ctx.cells() as u128,
        load_bytes: load_bytes / per_point,
        reload_bytes: (load_bytes - once_bytes).max(0.0) / per_point,
        store_bytes: store_bytes / per_point,
        redundant_fraction: regions.redundancy(&target),
        instructions: f64::from(step_work(program).instructions())
            * (1.0 + regions.redundancy(&target)),
    }
}

/// The regions one block of `ctx`'s plan computes (for the traffic model), with its tile.
pub fn block_regions(ctx: &Ctx) -> (Rect, TileRegions) {
    let tile = block_tile(ctx);
    let extent: Vec<i64> = (0..ctx.dims()).map(|a| tile.size(a)).collect();
    tile_regions(ctx, &extent)
}

/// The block tile of the plan over the grid's axes.
fn block_tile(ctx: &Ctx) -> Tile {
    let d = ctx.dims();
    let plan = ctx.plan;
    let block = [
        plan.block[0],
        if d >= 2 { plan.block[1] } else { 1 },
        if d >= 3 { plan.block[2] } else { 1 },
    ];
    let elements = if d >= 2 { plan.elements_per_thread } else { 1 };
    Tile::new(d, block, elements)
}

/// An updated field kept in shared memory for the whole pass.
struct Staged {
    field: Id<Field>,
    /// The positions (in the tile's frame) its arrays hold.
    bounds: Rect,
    /// The positions loaded from memory before the first step (may be empty).
    input: Rect,
    /// Its array, and a second one when some stage writes it out of place.
    arrays: Vec<SharedArray>,
}

/// Which array of each staged field (by position in `Overlap::staged`) holds its values.
type Holders = Vec<usize>;

/// The overlapped lowering of one program.
struct Overlap<'a> {
    ctx: &'a Ctx<'a>,
    depth: usize,
    tile: Tile,
    /// Points of the tile per axis.
    extent: Vec<i64>,
    regions: TileRegions,
    staged: Vec<Staged>,
    /// Fields read but never updated, loaded from memory where read.
    constant_fields: Vec<Id<Field>>,
    /// Every position a block touches, in its frame.
    reach: Rect,
    names: Vec<&'static str>,
}

impl<'a> Overlap<'a> {
    fn new(ctx: &'a Ctx<'a>) -> Result<Overlap<'a>, String> {
        let d = ctx.dims();
        if d > 3 {
            return Err(format!(
                "overlapped time tiling tiles up to 3 axes; this grid has {d}: use `tiled`"
            ));
        }
        let (target, regions) = block_regions(ctx);
        let tile = block_tile(ctx);
        let extent = target.hi.clone();
        let checked = ctx.bound.checked();
        let program = ctx.bound.program();
        let mut staged = Vec::new();
        let mut constant_fields = Vec::new();
        let mut reach = target.clone();
        for (field, decl) in program.fields.iter() {
            let input = regions.inputs[field.index()].clone();
            reach = reach.hull(&input);
            match checked.role(field) {
                FieldRole::Updated => {
                    let bounds = (regions.compute.iter())
                        .flat_map(|step| program.stages.iter().zip(step))
                        .filter(|((_, stage), _)| stage.outputs().contains(&field))
                        .fold(target.hull(&input), |acc, (_, r)| acc.hull(r));
                    reach = reach.hull(&bounds);
                    let copies = if written_out_of_place(ctx, field) {
                        2
                    } else {
                        1
                    };
                    let arrays = (0..copies)
                        .map(|k| SharedArray {
                            name: format!("s{k}_{}", field_ident(ctx, field)),
                            ty: decl.ty,
                            dims: (0..d).map(|a| bounds.len(a) as usize).collect(),
                        })
                        .collect();
                    staged.push(Staged {
                        field,
                        arrays,
                        bounds,
                        input,
                    });
                }
                FieldRole::Unused => {}
                _ if !input.is_empty() => constant_fields.push(field),
                _ => {}
            }
        }
        Ok(Overlap {
            ctx,
            depth: ctx.plan.time_tile.max(1) as usize,
            tile,
            extent,
            regions,
            staged,
            constant_fields,
            reach,
            names: ctx.axis_names(),
        })
    }

    /// The pass in a frame: the tiles loaded, then each step, the tiles written after the
    /// pass's last one.
    fn pass(&self, frame: Frame) -> Vec<Stmt> {
        let mut body: Vec<Stmt> = (self.staged.iter())
            .filter(|s| !s.input.is_empty())
            .map(|s| self.load(s, frame))
            .collect();
        if !body.is_empty() {
            body.push(Stmt::Barrier);
        }
        let mut holders: Holders = vec![0; self.staged.len()];
        for step in 0..self.depth {
            body.push(self.step(step, frame, &mut holders));
        }
        body
    }

    /// Loads `staged`'s input positions from memory (each position's periodic image) into its
    /// first array.
    fn load(&self, staged: &Staged, frame: Frame) -> Stmt {
        let ctx = self.ctx;
        let dims: Vec<i64> = (0..ctx.dims()).map(|a| staged.input.len(a)).collect();
        self.tile
            .cooperative_loop(ctx, &dims, &self.names, |local| {
                let position: Vec<Expr> = (local.into_iter().enumerate())
                    .map(|(a, l)| ctx.offset(l, staged.input.lo[a]))
                    .collect();
                let coords = self.frame(frame).grid_coords(&position);
                vec![Stmt::SharedStore {
                    array: staged.arrays[0].name.clone(),
                    index: self.array_index(staged, &position),
                    value: Expr::Load {
                        buffer: field_ident(ctx, staged.field),
                        index: Box::new(ctx.linear(&coords)),
                        cached: true,
                    },
                }]
            })
    }

    /// The block evaluating stages in `frame`.
    fn frame(&self, frame: Frame) -> BlockFrame<'_> {
        BlockFrame {
            ctx: self.ctx,
            names: &self.names,
            frame,
            reach: &self.reach,
        }
    }

    /// The index of block position `position` in `staged`'s arrays.
    fn array_index(&self, staged: &Staged, position: &[Expr]) -> Vec<Expr> {
        (position.iter().enumerate())
            .map(|(a, p)| self.ctx.offset(p.clone(), -staged.bounds.lo[a]))
            .collect()
    }

    /// Step `step` (`t_s` its step counter): every stage with work in it, then, when it is
    /// the pass's last step, the tiles written. A step beyond the pass's depth runs its
    /// loops zero times but keeps its barriers, so that no barrier is under a condition.
    fn step(&self, step: usize, frame: Frame, holders: &mut Holders) -> Stmt {
        let mut body = vec![Stmt::Comment(format!(
            "step {step} of up to {}",
            self.depth
        ))];
        body.extend(step_counter(self.ctx, step));
        for (stage, _) in self.ctx.bound.program().stages.iter() {
            let region = &self.regions.compute[step][stage.index()];
            if !region.is_empty() {
                body.extend(self.stage(stage, step, region, frame, holders));
            }
        }
        let write = self.write_tiles(holders);
        body.push(Stmt::when(
            Expr::var("steps").op(KernelOp::Eq, Expr::int(step as i64 + 1, ScalarType::I64)),
            vec![write],
        ));
        Stmt::Block(body)
    }

    /// One stage over `region` in step `step`: a loop over its points shared by the block's
    /// threads (run when the pass has the step), then a barrier; outputs written out of place
    /// change array.
    fn stage(
        &self,
        stage: Id<Stage>,
        step: usize,
        region: &Rect,
        frame: Frame,
        holders: &mut Holders,
    ) -> Vec<Stmt> {
        let ctx = self.ctx;
        let io = StageIo::new(ctx, stage);
        let name = &ctx.bound.program().stages[stage].name;
        let dims: Vec<i64> = (0..ctx.dims()).map(|a| region.len(a)).collect();
        let work = point_work(ctx, stage);
        let mut sweep = self
            .tile
            .segmented_loop(ctx, &dims, &self.names, work, |local| {
                let position = self.positions(region, local);
                let staging = PingPong {
                    overlap: self,
                    holders,
                };
                self.frame(frame).point(&io, &position, region, &staging)
            });
        if step > 0 {
            run_only_when(ctx, &mut sweep, runs_step(step));
        }
        for (field, in_place) in io.outputs() {
            if !in_place {
                let k = self.staged_index(field);
                holders[k] = 1 - holders[k];
            }
        }
        vec![
            Stmt::Comment(format!("stage `{name}`")),
            sweep,
            Stmt::Barrier,
        ]
    }

    /// The block positions of a region's local coordinates.
    fn positions(&self, region: &Rect, local: Vec<Expr>) -> Vec<Expr> {
        (local.into_iter().enumerate())
            .map(|(a, l)| self.ctx.offset(l, region.lo[a]))
            .collect()
    }

    /// The position of `field` among the staged fields.
    fn staged_index(&self, field: Id<Field>) -> usize {
        (self.staged.iter())
            .position(|s| s.field == field)
            .expect("outputs are staged")
    }

    fn staged_field(&self, field: Id<Field>) -> Option<&Staged> {
        self.staged.iter().find(|s| s.field == field)
    }

    /// The array of staged field `k` that holds its values, or (`next`) that receives them.
    fn array(&self, k: usize, holders: &Holders, next: bool) -> &SharedArray {
        let arrays = &self.staged[k].arrays;
        &arrays[(holders[k] + usize::from(next)) % arrays.len()]
    }

    /// Every block's tile of every updated field written to the field's partner, from the
    /// arrays `holders` names.
    fn write_tiles(&self, holders: &Holders) -> Stmt {
        let ctx = self.ctx;
        let d = ctx.dims();
        let hi = self.tile.overhang(&grid_domain(self.ctx), 0..d);
        self.tile
            .cooperative_loop(ctx, &self.extent, &self.names, |local| {
                let coords = self.frame(Frame::Interior).grid_coords(&local);
                let stores = (self.staged.iter().enumerate())
                    .map(|(k, staged)| Stmt::Store {
                        buffer: format!("{}_next", field_ident(ctx, staged.field)),
                        index: ctx.linear(&coords),
                        value: Expr::SharedLoad {
                            array: self.array(k, holders, false).name.clone(),
                            index: self.array_index(staged, &local),
                        },
                    })
                    .collect();
                vec![Stmt::guarded(
                    ctx.within(&coords, &vec![None; d], &hi),
                    Stmt::Block(stores),
                )]
            })
    }
}

/// The overlapped kernel's staging: each updated field in the array of its pair that
/// `holders` names, new values out of place into the other one.
struct PingPong<'o> {
    overlap: &'o Overlap<'o>,
    holders: &'o Holders,
}

impl Staging for PingPong<'_> {
    fn current(&self, field: Id<Field>) -> Option<Place<'_>> {
        let overlap = self.overlap;
        let staged = overlap.staged_field(field)?;
        Some(Place {
            array: overlap.array(overlap.staged_index(field), self.holders, false),
            global: false,
            lo: &staged.bounds.lo,
            ring: None,
            registers: None,
            unread: false,
        })
    }

    fn next(&self, field: Id<Field>, in_place: bool) -> (Place<'_>, bool) {
        let overlap = self.overlap;
        let k = overlap.staged_index(field);
        let place = Place {
            array: overlap.array(k, self.holders, !in_place),
            global: false,
            lo: &overlap.staged[k].bounds.lo,
            ring: None,
            registers: None,
            unread: false,
        };
        (place, in_place)
    }
}

/// Whether some stage writes `field` and reads it at another point (so that the stage's new
/// values go to a second array).
fn written_out_of_place(ctx: &Ctx, field: Id<Field>) -> bool {
    (ctx.bound.program().stages.ids())
        .any(|stage| StageIo::new(ctx, stage).outputs().contains(&(field, false)))
}
