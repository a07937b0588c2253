//! Streaming time tiling (Rawat et al., GPGPU'16; AN5D, CGO'20): one kernel runs a pass of
//! up to T steps of every stage. A block owns a tile of the plane axes and a chunk of the
//! streaming axis (z in 3D, y in 2D) and sweeps the chunk plane by plane with every step and
//! stage of the pass in flight.
//!
//! Each value an updated field takes in the pass (its input, then each stage's output in each
//! step: a *version*) has a ring of planes in shared memory. At sweep iteration `i` the input
//! plane `i` is loaded, and each stage of each step computes the plane its *lag* behind: the
//! lag is the furthest its reads reach ahead along the streaming axis into the versions it
//! reads, added to theirs, so everything a plane needs is computed by then. A ring holds as many
//! planes as its readers lag behind it plus their reach backwards. The plane axes carry the
//! overlapped halo of Holewinski's regions ([`local_tile_regions`]); the streaming axis
//! recomputes a halo only at the ends of a chunk. Each iteration writes the tile's plane of the
//! last version of every field, one iteration after that plane's last stage.
//!
//! Like the overlapped kernel, the kernel is written for T steps and takes the pass's depth
//! `steps`: stages of later steps run their loops zero times (their barriers stay), and the
//! tiles are written from the versions of step `steps`. Positions outside the grid stand for
//! their periodic images ([`super::fused`]), blocks whose whole reach is in the grid take a
//! branch without the wrapping, and stage domains are checked point by point.
//!
//! The analysis ([`Pipeline`]) serves the GPU wavefront too ([`super::wavefront`]), whose
//! rings are in global memory and whose launches are the sweep's iterations.

use tessera_analysis::{FieldRole, Rect, TileRegions};
use tessera_ir::{Border, Field, Id, ScalarType, Stage};

use super::super::{Expr, Kernel, KernelOp, SharedArray, Stmt};
use super::common::{Ctx, StageIo, field_ident, ident};
use super::fused::{
    BlockFrame, Frame, Fused, Place, Staging, fused_params, grid_domain, interior_test, runs_step,
    step_counter, tile_regions,
};
use super::naive::blocks;
use super::tile::{Tile, point_work, run_only_when, segmented_loop, shared_loop};

/// The streaming time-tiled kernel of `ctx`'s program, or why the program cannot run it.
pub fn kernel(ctx: &Ctx) -> Result<Fused, String> {
    let tile = Tile::of_planes(ctx);
    let extent = tile_extent(ctx, &tile);
    let pipeline = Pipeline::new(ctx, extent, tile, false)?;
    let mut body = vec![pipeline.tile.thread_index(ctx)];
    body.extend(pipeline.origins());
    let edge = pipeline.sweep(Frame::Edge);
    match interior_test(ctx, &pipeline.reach) {
        Some(cond) => body.push(Stmt::UniformIf {
            cond,
            then: pipeline.sweep(Frame::Interior),
            otherwise: edge,
        }),
        None => body.extend(edge),
    }
    let updated = pipeline.updated.clone();
    let (params, args) = fused_params(ctx, &updated, &pipeline.constant_fields);
    let extent: Vec<String> = pipeline.extent.iter().map(|e| e.to_string()).collect();
    let kernel = Kernel {
        name: format!("ts_{}_streaming_time", ident(&ctx.bound.program().name)),
        strategy: "streaming-time",
        doc: format!(
            "up to {} steps of every stage in flight along {}, {} tiles, planes in shared rings",
            pipeline.depth,
            pipeline.names[SWEPT],
            extent.join("x")
        ),
        params,
        shared: pipeline.versions.iter().map(|v| v.array.clone()).collect(),
        block: pipeline.tile.block,
        // One block per SM is enough: without it ptxas caps small blocks' registers for an
        // occupancy that shared rings rule out, and spills.
        min_resident_blocks: Some(1),
        body,
    };
    Ok(Fused {
        kernel,
        grid: pipeline.grid(),
        args,
        updated,
        sweep: None,
        scratch: Vec::new(),
    })
}

/// The tile a block of `ctx`'s plan owns (the streaming axis first: its chunk) and its
/// regions over the plan's depth, for the kernel and its traffic model.
pub fn block_regions(ctx: &Ctx) -> (Rect, TileRegions) {
    tile_regions(ctx, &tile_extent(ctx, &Tile::of_planes(ctx)))
}

/// Points of the block's tile along each axis: the chunk along the streaming axis (axis 0),
/// the plane tile along the others.
fn tile_extent(ctx: &Ctx, tile: &Tile) -> Vec<i64> {
    let sweep = ctx.extent(SWEPT);
    let chunk = ctx.plan.stream_chunk.map_or(sweep, i64::from).min(sweep);
    std::iter::once(chunk)
        .chain((1..ctx.dims()).map(|a| tile.size(a)))
        .collect()
}

/// The axis a pipeline sweeps: the slowest (it runs on 2D and 3D grids).
pub(super) const SWEPT: usize = 0;

/// One value an updated field takes in a pass, with its ring of planes.
pub(super) struct Version {
    pub(super) field: Id<Field>,
    /// The block positions it is loaded or computed at.
    pub(super) bounds: Rect,
    /// Planes it runs behind the loaded input plane.
    pub(super) lag: i64,
    /// Its ring: as many planes as its readers need, each the size of its in-plane bounds.
    pub(super) array: SharedArray,
}

/// One stage in one step of the pass.
pub(super) struct Level {
    pub(super) step: usize,
    pub(super) stage: Id<Stage>,
    pub(super) region: Rect,
    pub(super) lag: i64,
    /// The version each field has when it runs (by field index; `None`: not staged).
    reads: Vec<Option<usize>>,
    /// The versions it reads: at neighbours, or at its point to keep the values outside its
    /// domain.
    uses: Vec<usize>,
    /// The versions it writes.
    writes: Vec<(Id<Field>, usize)>,
}

/// A reader of a version: its lag and how far behind its own plane it reads (for the rings'
/// depths).
struct Reader {
    version: usize,
    lag: i64,
    /// The furthest plane read behind the reader's own (0 or negative).
    behind: i64,
}

/// A pass swept plane by plane along the slowest axis with every step and stage in flight:
/// the versions of the fields, the stages in order with their lags, and the rings' depths.
/// Its planes live in shared rings (streaming time tiles, one block per tile), or in rings in
/// global memory that each launch of the sweep advances by one plane (the GPU wavefront).
pub(super) struct Pipeline<'a> {
    ctx: &'a Ctx<'a>,
    pub(super) depth: usize,
    /// The plane axes' tile.
    pub(super) tile: Tile,
    /// Points of the tile per axis (along the streaming axis: the chunk, or the whole axis).
    pub(super) extent: Vec<i64>,
    /// Whether the rings are in global memory, each launch reading only the planes earlier
    /// launches wrote (so every lag is a plane more).
    pub(super) global: bool,
    pub(super) names: Vec<&'static str>,
    pub(super) versions: Vec<Version>,
    /// Versions loaded from memory before the first step.
    pub(super) inputs: Vec<usize>,
    pub(super) levels: Vec<Level>,
    /// After each step, the version of every updated field and the lag of its write.
    pub(super) finals: Vec<(Vec<usize>, i64)>,
    /// The updated fields, in parameter order.
    pub(super) updated: Vec<Id<Field>>,
    /// Fields read but never updated, loaded from memory where read.
    pub(super) constant_fields: Vec<Id<Field>>,
    /// The lowest plane position of any version: ring slots count from it.
    pub(super) base: i64,
    /// Sweep iterations of a pass.
    pub(super) iterations: i64,
    /// Every position a block touches.
    reach: Rect,
    /// The threads sharing each plane's points: a block's, or (global rings) the launch's.
    pub(super) loop_threads: i64,
}

impl<'a> Pipeline<'a> {
    /// The pipeline of a tile of `extent` points (the streaming axis first) whose plane axes
    /// `tile` covers, its rings in shared or (`global`) global memory.
    pub(super) fn new(
        ctx: &'a Ctx<'a>,
        extent: Vec<i64>,
        tile: Tile,
        global: bool,
    ) -> Result<Pipeline<'a>, String> {
        let d = ctx.dims();
        if !(2..=3).contains(&d) {
            return Err(format!(
                "a plane sweep through time runs on 2D and 3D grids; this grid has {d} axes"
            ));
        }
        let (target, regions) = tile_regions(ctx, &extent);
        let depth = ctx.plan.time_tile.max(1) as usize;
        let checked = ctx.bound.checked();
        let program = ctx.bound.program();
        let mut pipeline = Pipeline {
            ctx,
            depth,
            extent,
            global,
            names: ctx.axis_names(),
            versions: Vec::new(),
            inputs: Vec::new(),
            levels: Vec::new(),
            finals: Vec::new(),
            updated: Vec::new(),
            constant_fields: Vec::new(),
            base: 0,
            iterations: 0,
            reach: target.clone(),
            loop_threads: tile.threads(),
            tile,
        };
        let mut current: Vec<Option<usize>> = vec![None; program.fields.len()];
        for field in program.fields.ids() {
            let input = &regions.inputs[field.index()];
            match checked.role(field) {
                FieldRole::Updated => {
                    pipeline.updated.push(field);
                    if !input.is_empty() {
                        current[field.index()] = Some(pipeline.add_version(field, input, 0));
                        pipeline.inputs.push(pipeline.versions.len() - 1);
                    }
                }
                FieldRole::Unused => {}
                _ if !input.is_empty() => pipeline.constant_fields.push(field),
                _ => {}
            }
        }
        let mut readers = Vec::new();
        for step in 0..pipeline.depth {
            for stage in program.stages.ids() {
                let region = &regions.compute[step][stage.index()];
                if !region.is_empty() {
                    let level = pipeline.level(step, stage, region, &mut current, &mut readers)?;
                    pipeline.levels.push(level);
                }
            }
            let finals: Vec<usize> = (pipeline.updated.iter())
                .map(|f| current[f.index()].ok_or("an updated field has no value in the pass"))
                .collect::<Result<_, _>>()?;
            if let Some(&v) = finals
                .iter()
                .find(|&&v| !pipeline.versions[v].bounds.contains_rect(&target))
            {
                let name = &program.fields[pipeline.versions[v].field].name;
                return Err(format!(
                    "after step {step} of a pass, `{name}` is not computed on the whole tile"
                ));
            }
            let lag = 1
                + (finals.iter())
                    .map(|&v| pipeline.versions[v].lag)
                    .max()
                    .unwrap_or(0);
            readers.extend(finals.iter().map(|&version| Reader {
                version,
                lag,
                behind: 0,
            }));
            pipeline.finals.push((finals, lag));
        }
        pipeline.size_rings(&readers, &target);
        Ok(pipeline)
    }

    /// Adds a version of `field` at `bounds` running `lag` planes behind; its ring is sized
    /// later.
    fn add_version(&mut self, field: Id<Field>, bounds: &Rect, lag: i64) -> usize {
        let ctx = self.ctx;
        let array = SharedArray {
            name: format!("r{}_{}", self.versions.len(), field_ident(ctx, field)),
            ty: ctx.bound.program().fields[field].ty,
            dims: (0..ctx.dims()).map(|a| bounds.len(a) as usize).collect(),
        };
        self.reach = self.reach.hull(bounds);
        self.versions.push(Version {
            field,
            bounds: bounds.clone(),
            lag,
            array,
        });
        self.versions.len() - 1
    }

    /// `stage` in step `step` over `region`: the versions it reads (`current`), its lag, its
    /// readers' records, and the versions it writes (made current).
    fn level(
        &mut self,
        step: usize,
        stage: Id<Stage>,
        region: &Rect,
        current: &mut [Option<usize>],
        readers: &mut Vec<Reader>,
    ) -> Result<Level, String> {
        let ctx = self.ctx;
        let program = ctx.bound.program();
        let mut reads: Vec<(usize, i64, i64)> = Vec::new();
        for (field, fp) in ctx.bound.checked().stage_footprints(stage) {
            if let Some(version) = current[field.index()] {
                let (behind, ahead) = (
                    i64::from(fp.min[SWEPT].min(0)),
                    i64::from(fp.max[SWEPT].max(0)),
                );
                let (behind, ahead) =
                    if program.stages[stage].border_of(*field, program) == Some(Border::Mirror) {
                        let reach = ahead.max(-behind);
                        (-reach, reach)
                    } else {
                        (behind, ahead)
                    };
                reads.push((version, behind, ahead));
            }
        }
        let outputs = program.stages[stage].outputs();
        if !ctx.covers_grid(stage) {
            for field in &outputs {
                let version = current[field.index()].ok_or(
                    "a stage over part of the grid writes a field with no value before it",
                )?;
                reads.push((version, 0, 0));
            }
        }
        let handoff = i64::from(self.global);
        let lag = (reads.iter())
            .map(|&(v, _, ahead)| self.versions[v].lag + ahead + handoff)
            .max()
            .unwrap_or(0);
        readers.extend(reads.iter().map(|&(version, behind, _)| Reader {
            version,
            lag,
            behind,
        }));
        let level_reads = current.to_vec();
        let writes = (outputs.iter())
            .map(|&field| {
                let version = self.add_version(field, region, lag);
                current[field.index()] = Some(version);
                (field, version)
            })
            .collect();
        Ok(Level {
            step,
            stage,
            region: region.clone(),
            lag,
            reads: level_reads,
            uses: reads.iter().map(|&(version, _, _)| version).collect(),
            writes,
        })
    }

    /// Sizes each version's ring for its readers, the base plane and the sweep's iterations.
    fn size_rings(&mut self, readers: &[Reader], target: &Rect) {
        for (k, version) in self.versions.iter_mut().enumerate() {
            let planes = (readers.iter())
                .filter(|r| r.version == k)
                .map(|r| r.lag - version.lag - r.behind + 1)
                .max()
                .unwrap_or(1)
                .clamp(1, version.bounds.len(SWEPT));
            version.array.dims[SWEPT] = planes as usize;
        }
        self.base = (self.versions.iter())
            .map(|v| v.bounds.lo[SWEPT])
            .fold(0, i64::min);
        let computed = (self.versions.iter()).map(|v| v.bounds.hi[SWEPT] + v.lag);
        let written = (self.finals.iter()).map(|(_, lag)| target.hi[SWEPT] + lag);
        self.iterations = computed.chain(written).max().unwrap_or(0) - self.base;
    }

    /// The place of `version`'s ring.
    pub(super) fn place(&self, version: usize) -> Place<'_> {
        let v = &self.versions[version];
        Place {
            array: &v.array,
            global: self.global,
            lo: &v.bounds.lo,
            ring: Some((SWEPT, self.base, v.array.dims[SWEPT] as i64)),
        }
    }

    /// Blocks per block axis: the plane tiles, and the chunks along the streaming axis.
    fn grid(&self) -> [u64; 3] {
        let plane = 1..self.ctx.dims();
        let mut grid = self.tile.grid(&grid_domain(self.ctx), plane);
        let sweep = self.ctx.extent(SWEPT);
        grid[self.tile.block_axis(SWEPT)] = blocks(sweep, self.extent[SWEPT] as u64);
        grid
    }

    /// `o_<axis>`: the block's origin along each axis.
    fn origins(&self) -> Vec<Stmt> {
        let ctx = self.ctx;
        let mut origins = vec![Stmt::Declare {
            var: format!("o_{}", self.names[SWEPT]),
            ty: ctx.ity,
            value: Some(
                Expr::BlockIdx(self.tile.block_axis(SWEPT)).times(ctx.lit(self.extent[SWEPT])),
            ),
        }];
        origins.extend(
            self.tile
                .origins(ctx, &grid_domain(self.ctx), 1..ctx.dims()),
        );
        origins
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

    /// The sweep in a frame: per iteration, the planes finished one iteration ago written,
    /// the input planes loaded, then every level's plane, and a barrier ending the iteration.
    ///
    /// A level reads what it needs of this iteration's planes after a barrier: one precedes
    /// each level that reads a version written since the last one. Nothing else needs one
    /// within an iteration: each level writes a version of its own, and rings are deep enough
    /// that no slot a reader still needs is overwritten before the barrier that ends the
    /// iteration.
    fn sweep(&self, frame: Frame) -> Vec<Stmt> {
        let ctx = self.ctx;
        vec![Stmt::For {
            var: "it".into(),
            ty: ctx.ity,
            start: ctx.lit(0),
            end: ctx.lit(self.iterations),
            step: ctx.lit(1),
            body: self.iteration(frame),
        }]
    }

    /// Iteration `it` of the sweep (see [`Pipeline::sweep`]); with rings in global memory,
    /// whose launch is an iteration, without barriers.
    pub(super) fn iteration(&self, frame: Frame) -> Vec<Stmt> {
        let mut iteration = self.writes();
        iteration.extend(self.inputs.iter().map(|&v| self.load(v, frame)));
        let mut unsynced: Vec<usize> = self.inputs.clone();
        for level in &self.levels {
            if !self.global && level.uses.iter().any(|v| unsynced.contains(v)) {
                iteration.push(Stmt::Barrier);
                unsynced.clear();
            }
            iteration.push(self.level_plane(level, frame));
            unsynced.extend(level.writes.iter().map(|&(_, version)| version));
        }
        if !self.global {
            iteration.push(Stmt::Barrier);
        }
        iteration
    }

    /// `p`: the plane position a version of lag `lag` handles in this iteration.
    pub(super) fn plane(&self, lag: i64) -> Stmt {
        Stmt::Declare {
            var: "p".into(),
            ty: self.ctx.ity,
            value: Some(self.ctx.offset(Expr::var("it"), self.base - lag)),
        }
    }

    /// Whether plane `p` lies in `[lo, hi)`.
    pub(super) fn plane_in(&self, lo: i64, hi: i64) -> Expr {
        let ctx = self.ctx;
        (ctx.lit(lo).op(KernelOp::Le, Expr::var("p")))
            .op(KernelOp::And, Expr::var("p").op(KernelOp::Lt, ctx.lit(hi)))
    }

    /// The loop in which the block's threads share the points of plane `p` of `rect`, each
    /// point's block position passed to `body`; in column segments (see [`segmented_loop`])
    /// for loops that compute a stage's points (`segmented` names it).
    fn plane_loop(
        &self,
        rect: &Rect,
        segmented: Option<Id<Stage>>,
        mut body: impl FnMut(Vec<Expr>) -> Vec<Stmt>,
    ) -> Stmt {
        let ctx = self.ctx;
        let d = ctx.dims();
        let dims: Vec<i64> = (1..d).map(|a| rect.len(a)).collect();
        let position = |local: Vec<Expr>| -> Vec<Expr> {
            std::iter::once(Expr::var("p"))
                .chain((local.into_iter().enumerate()).map(|(k, l)| ctx.offset(l, rect.lo[k + 1])))
                .collect()
        };
        let names = &self.names[1..];
        if let Some(stage) = segmented {
            let work = point_work(ctx, stage);
            segmented_loop(ctx, &dims, names, self.loop_threads, work, |local| {
                body(position(local))
            })
        } else {
            shared_loop(ctx, &dims, names, self.loop_threads, |local| {
                body(position(local))
            })
        }
    }

    /// Loads the input plane of `version` (each position's periodic image) into its ring.
    fn load(&self, version: usize, frame: Frame) -> Stmt {
        let ctx = self.ctx;
        let v = &self.versions[version];
        let place = self.place(version);
        let lp = self.plane_loop(&v.bounds, None, |position| {
            let coords = self.frame(frame).grid_coords(&position);
            let value = Expr::Load {
                buffer: field_ident(ctx, v.field),
                index: Box::new(ctx.linear(&coords)),
                cached: true,
            };
            vec![place.store(ctx, &position, value)]
        });
        Stmt::Block(vec![
            self.plane(v.lag),
            Stmt::when(
                self.plane_in(v.bounds.lo[SWEPT], v.bounds.hi[SWEPT]),
                vec![lp],
            ),
        ])
    }

    /// `level`'s plane of this iteration, when it has one and the pass has its step (the loop
    /// runs zero times otherwise; the barrier after it stays unconditional).
    fn level_plane(&self, level: &Level, frame: Frame) -> Stmt {
        let ctx = self.ctx;
        let io = StageIo::new(ctx, level.stage);
        let staging = Rings {
            pipeline: self,
            level,
        };
        let mut lp = self.plane_loop(&level.region, Some(level.stage), |position| {
            self.frame(frame)
                .point(&io, &position, &level.region, &staging)
        });
        let mut active = self.plane_in(level.region.lo[SWEPT], level.region.hi[SWEPT]);
        if level.step > 0 {
            active = active.op(KernelOp::And, runs_step(level.step));
        }
        run_only_when(ctx, &mut lp, active);
        let mut body = vec![
            Stmt::Comment(format!(
                "stage `{}` of step {}",
                ctx.bound.program().stages[level.stage].name,
                level.step
            )),
            self.plane(level.lag),
        ];
        body.extend(step_counter(ctx, level.step));
        body.push(lp);
        Stmt::Block(body)
    }

    /// For each depth a pass may have, the tile's plane of every updated field written to
    /// its partner from the field's last version, when the pass has that depth.
    fn writes(&self) -> Vec<Stmt> {
        let ctx = self.ctx;
        let d = ctx.dims();
        let target = Rect::new(vec![0; d], self.extent.clone());
        let hi: Vec<Option<i64>> = (0..d)
            .map(|a| {
                let covered = blocks(ctx.extent(a), self.extent[a] as u64) as i64;
                (covered * self.extent[a] > ctx.extent(a)).then_some(ctx.extent(a))
            })
            .collect();
        (self.finals.iter().enumerate())
            .map(|(step, (finals, lag))| {
                let lp = self.plane_loop(&target, None, |position| {
                    let coords = self.frame(Frame::Interior).grid_coords(&position);
                    let stores = (self.updated.iter().zip(finals))
                        .map(|(&field, &version)| Stmt::Store {
                            buffer: format!("{}_next", field_ident(ctx, field)),
                            index: ctx.linear(&coords),
                            value: self.place(version).load_at(ctx, &position),
                        })
                        .collect();
                    vec![Stmt::guarded(
                        ctx.within(&coords, &vec![None; d], &hi),
                        Stmt::Block(stores),
                    )]
                });
                let depth = Expr::var("steps")
                    .op(KernelOp::Eq, Expr::int(step as i64 + 1, ScalarType::I64));
                let cond = depth.op(KernelOp::And, self.plane_in(0, self.extent[SWEPT]));
                Stmt::Block(vec![self.plane(*lag), Stmt::when(cond, vec![lp])])
            })
            .collect()
    }
}

/// A level's staging: the versions it reads in their rings, its outputs into new versions.
struct Rings<'p> {
    pipeline: &'p Pipeline<'p>,
    level: &'p Level,
}

impl Staging for Rings<'_> {
    fn current(&self, field: Id<Field>) -> Option<Place<'_>> {
        let version = self.level.reads[field.index()]?;
        Some(self.pipeline.place(version))
    }

    fn next(&self, field: Id<Field>, _in_place: bool) -> (Place<'_>, bool) {
        let (_, version) = (self.level.writes.iter())
            .find(|(f, _)| *f == field)
            .expect("a level writes its stage's outputs");
        (self.pipeline.place(*version), false)
    }
}
