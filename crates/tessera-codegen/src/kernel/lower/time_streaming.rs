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
//! Where they fit ([`Registers`]), each thread owns fixed positions of the plane and keeps
//! every version's planes there in registers: a point reads its own column (the planes
//! above and below it, and itself) from them and only its in-plane neighbours from the rings,
//! and a barrier is needed only before a stage that reads a neighbour on a plane written in
//! the same iteration (j2d5pt: none but the one ending each iteration).
//!
//! Outside exact mode, a stage whose output is a sum of terms that each read one plane (a
//! box stencil: [`plane_sums`]) is reordered in blocks of the interior frame ([`Reordered`],
//! Rawat et al.'s associative reordering): each iteration reads one plane of its input at the
//! neighbours once and adds its terms into the partial sums of every output plane they feed,
//! where the written order reads each plane's neighbours once per output (three times in a
//! 27-point box).
//!
//! Like the overlapped kernel, the kernel is written for T steps and takes the pass's depth
//! `steps`: stages of later steps run their loops zero times (their barriers stay), and the
//! tiles are written from the versions of step `steps`. Positions outside the grid stand for
//! their periodic images ([`super::fused`]), blocks whose whole reach is in the grid take a
//! branch without the wrapping, and stage domains are checked point by point.
//!
//! The analysis ([`Pipeline`]) serves the GPU wavefront too ([`super::wavefront`]), whose
//! rings are in global memory and whose launches are the sweep's iterations.

use tessera_analysis::{FieldRole, PlaneSums, Rect, TileRegions, plane_sums};
use tessera_ir::{Border, Field, Id, Program, ScalarType, Stage};

use super::super::{
    Expr, Kernel, KernelOp, PartialSum, ProgramEnv, ReadBinding, SharedArray, Stmt,
};
use super::common::{Ctx, StageIo, field_ident, ident};
use super::fused::{
    BlockFrame, Frame, Fused, Place, RegisterPlanes, Staging, fused_params, interior_test,
    runs_step, step_counter, tile_regions,
};
use super::hazards::{accesses, conflict};
use super::naive::blocks;
use super::tile::{
    MOST_UNROLLED_ITERATIONS, Tile, div_ceil, lcm, point_work, run_only_when, segmented_loop,
    shared_loop,
};

/// The streaming time-tiled kernel of `ctx`'s program, or why the program cannot run it.
pub fn kernel(ctx: &Ctx) -> Result<Fused, String> {
    let tile = Tile::of_planes(ctx);
    let extent = tile_extent(ctx, &tile);
    let pipeline = Pipeline::new(ctx, extent, tile, false)?;
    let mut body = vec![pipeline.tile.thread_index(ctx)];
    body.extend(pipeline.origins());
    body.extend(pipeline.register_declarations());
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
            "up to {} steps of every stage in flight along {}, {} tiles, planes in shared rings{}{}",
            pipeline.depth,
            pipeline.names[SWEPT],
            extent.join("x"),
            if pipeline.registers.is_some() {
                " and each thread's own columns in registers"
            } else {
                ""
            },
            if pipeline.reordered.iter().any(Option::is_some) {
                ", box sums reordered plane by plane in interior blocks"
            } else {
                ""
            }
        ),
        params,
        shared: (pipeline.versions.iter())
            .filter(|v| v.ring)
            .map(|v| v.array.clone())
            .collect(),
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
///
/// In 2D the block's threads cover the row the tile reaches, halo included, where the halo
/// takes at most half the threads: a 256-thread block running 4 steps of a 5-point stencil
/// owns 248 points of each row. Rows of the block's width would reach 8 positions past its
/// threads, and the first warp would run every level twice, once for 8 lanes, while the
/// other warps wait at the iteration's barrier.
fn tile_extent(ctx: &Ctx, tile: &Tile) -> Vec<i64> {
    let sweep = ctx.extent(SWEPT);
    let chunk = ctx.plan.stream_chunk.map_or(sweep, i64::from).min(sweep);
    let mut extent: Vec<i64> = std::iter::once(chunk)
        .chain((1..ctx.dims()).map(|a| tile.size(a)))
        .collect();
    if ctx.dims() == 2 {
        let (target, regions) = tile_regions(ctx, &extent);
        let reach = (regions.inputs.iter())
            .chain(regions.compute.iter().flatten())
            .filter(|r| !r.is_empty())
            .fold(target, |hull, r| hull.hull(r));
        let halo = reach.len(1) - extent[1];
        let fitted = extent[1] - halo;
        if halo > 0 && 2 * fitted >= extent[1] {
            extent[1] = fitted;
        }
    }
    extent
}

/// The axis a pipeline sweeps: the slowest (it runs on 2D and 3D grids).
pub(super) const SWEPT: usize = 0;

/// The most 32-bit registers a thread's register planes may take (see [`Registers`]); past
/// it, points read their own column from the shared rings too.
const REGISTER_PLANES_BUDGET: i64 = 64;

/// The most positions of a plane a thread may own for register planes: each one multiplies
/// its registers (j3d7pt's 32x32 tiles at T = 2 give 6 per thread and took 122 registers,
/// against 64 with the rings alone, halving the blocks a multiprocessor holds).
const MOST_OWNED_POSITIONS: i64 = 2;

/// Register planes (Rawat et al.: a point's own column in registers, its neighbours through
/// shared memory). Thread `tid` owns the positions `tid + k * threads` (`k < owned`) of the
/// reach's plane, numbered row-major, in every plane and every level, so that a value it
/// computes or loads at a position is the one it reads there later. It keeps each version's
/// values at each of them in `planes` registers, `v<version>_<k>_s<slot>`, the slot of plane
/// position `q` being `(q - base) mod planes`; the sweep is unrolled by `planes` iterations,
/// a multiple of every ring's planes, which makes every register and every ring slot a
/// constant. The shared rings are still written: neighbours read them.
pub(super) struct Registers {
    /// Slots per version: the most planes any version is read across.
    planes: i64,
    /// Positions each thread owns.
    owned: i64,
    /// The reach's first position along each plane axis.
    lo: Vec<i64>,
    /// The reach's extent along each plane axis.
    dims: Vec<i64>,
}

/// A level whose stage's sum is reordered along the sweep in the interior frame (see the
/// module's documentation). At the iteration where the level computes plane `p`, each
/// position the thread owns reads plane `p + last` of `version` (its neighbours through the
/// ring, its own column from registers), adds the terms reading plane offset `dz` into the
/// partial sum of output plane `p + last - dz` (starting it at the lowest offset), and
/// finishes output `p`, whose terms have all arrived. Partial sums live in registers
/// `a<level>_<k>_s<slot>`, slotted as the register planes are: the sweep is unrolled by at
/// least the outputs in flight.
pub(super) struct Reordered {
    sums: PlaneSums,
    /// Neighbours read through the ring per point in the written order that reordering does
    /// not read.
    saved_reads: i64,
}

impl Reordered {
    /// The lowest and highest plane offsets the terms read.
    fn span(&self) -> (i64, i64) {
        let (first, last) = self.sums.span();
        (i64::from(first), i64::from(last))
    }

    /// Outputs whose partial sums are in flight at once.
    fn in_flight(&self) -> i64 {
        let (first, last) = self.span();
        last - first + 1
    }

    /// 32-bit registers its partial sums take per position a thread owns.
    fn registers(&self) -> i64 {
        self.in_flight() * self.sums.ty.size_bytes().div_ceil(4) as i64
    }
}

/// One value an updated field takes in a pass, with its ring of planes.
pub(super) struct Version {
    pub(super) field: Id<Field>,
    /// The block positions it is loaded or computed at.
    pub(super) bounds: Rect,
    /// Planes it runs behind the loaded input plane.
    pub(super) lag: i64,
    /// Its ring: as many planes as its readers need, each the size of its in-plane bounds.
    pub(super) array: SharedArray,
    /// Whether the ring exists: with register planes, a version whose readers all read their
    /// own column (from registers) has none.
    pub(super) ring: bool,
    /// The block position of the ring's first element along each axis (along the streaming
    /// axis the ring's slots count from the pipeline's base instead).
    ring_lo: Vec<i64>,
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
    /// The threads' register planes, when they fit ([`REGISTER_PLANES_BUDGET`],
    /// [`MOST_OWNED_POSITIONS`]).
    pub(super) registers: Option<Registers>,
    /// Per level, its reordering in the interior frame, where it has one (only with register
    /// planes, outside exact mode).
    reordered: Vec<Option<Reordered>>,
    /// Whether steady trips compute every position a thread owns at every level, untested
    /// (see [`Pipeline::span_rings_over_reach`]).
    whole_planes: bool,
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
            registers: None,
            reordered: Vec::new(),
            whole_planes: false,
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
        pipeline.reordered = pipeline.levels.iter().map(|_| None).collect();
        if !global {
            pipeline.keep_registers(&readers);
        }
        if pipeline.registers.is_some() {
            for k in 0..pipeline.versions.len() {
                pipeline.versions[k].ring = pipeline.read_through_ring(k);
            }
            if pipeline.constant_fields.is_empty() {
                pipeline.span_rings_over_reach();
            }
        }
        Ok(pipeline)
    }

    /// Whether some level reads version `k` through its ring when the threads keep register
    /// planes: at an in-plane neighbour (its own column comes from registers, even where a
    /// border picks the plane).
    fn read_through_ring(&self, k: usize) -> bool {
        let ctx = self.ctx;
        (self.levels.iter()).any(|level| {
            (ctx.bound.checked().stage_footprints(level.stage).iter()).any(|(field, fp)| {
                level.reads[field.index()] == Some(k)
                    && (fp.offsets.iter()).any(|o| o[1..].iter().any(|&c| c != 0))
            })
        })
    }

    /// Gives the threads register planes where they fit, with the reordered levels' partial
    /// sums where those fit too.
    fn keep_registers(&mut self, readers: &[Reader]) {
        let candidates: Vec<Option<Reordered>> = (self.levels.iter())
            .map(|level| self.reorderable(level))
            .collect();
        let sums: i64 = candidates.iter().flatten().map(Reordered::registers).sum();
        if let Some(registers) = self.register_planes(readers, sums) {
            // A level is reordered where its slots suffice and it saves at least as many
            // shared loads per point as its partial sums take registers per thread (a 9-point
            // box saves 4 loads for 6 registers at 2 positions a thread, and is left as
            // written: the registers cost occupancy).
            let worth = |r: &Reordered| {
                r.in_flight() <= registers.planes
                    && r.saved_reads >= r.registers() * registers.owned
            };
            self.reordered = (candidates.into_iter()).map(|r| r.filter(worth)).collect();
            self.registers = Some(registers);
        } else {
            self.registers = self.register_planes(readers, 0);
        }
        self.grow_rings();
    }

    /// Lets steady trips leave out the test of each position a thread owns against a level's
    /// region: every ring spans the reach's plane and the furthest in-plane read past it, so
    /// that a level computing a position outside its region reads and writes inside its
    /// rings. What it computes there is never read by a point of the region (regions shrink by
    /// the reads' reach), nor written out. Only for pipelines whose stages read staged fields
    /// alone: a field read from memory might be read outside the grid there.
    fn span_rings_over_reach(&mut self) {
        let ctx = self.ctx;
        let d = ctx.dims();
        let mut pad = vec![0i64; d];
        for level in &self.levels {
            for (_, fp) in ctx.bound.checked().stage_footprints(level.stage) {
                for (a, pad) in pad.iter_mut().enumerate().skip(1) {
                    *pad = (*pad).max(-i64::from(fp.min[a])).max(i64::from(fp.max[a]));
                }
            }
        }
        for version in &mut self.versions {
            for (a, pad) in pad.iter().enumerate().skip(1) {
                version.ring_lo[a] = self.reach.lo[a] - pad;
                version.array.dims[a] = (self.reach.len(a) + 2 * pad) as usize;
            }
        }
        self.whole_planes = true;
    }

    /// Grows each ring whose planes do not divide the register planes' slots to as many
    /// planes as there are slots, so that every ring slot is a constant in the unrolled sweep.
    fn grow_rings(&mut self) {
        let Some(planes) = self.registers.as_ref().map(|r| r.planes) else {
            return;
        };
        for version in &mut self.versions {
            if planes % version.array.dims[SWEPT] as i64 != 0 {
                version.array.dims[SWEPT] = planes as usize;
            }
        }
    }

    /// How `level` is reordered, when it can be: outside exact mode, a stage whose output is
    /// a function of a sum of terms that each read one plane of one staged field, where more
    /// than one plane's terms read neighbours off the sweep's axis (else reordering reads no
    /// neighbour fewer times).
    fn reorderable(&self, level: &Level) -> Option<Reordered> {
        if self.ctx.plan.exact {
            return None;
        }
        let checked = self.ctx.bound.checked();
        let sums = plane_sums(checked, level.stage, SWEPT)?;
        let staged = level.reads[sums.field.index()].is_some();
        if !staged || sums.off_axis_planes() < 2 {
            return None;
        }
        let footprints = checked.stage_footprints(level.stage);
        let (_, footprint) = footprints.iter().find(|(f, _)| *f == sums.field)?;
        let neighbours: Vec<&[i32]> = (footprint.offsets.iter())
            .map(|o| &o[1..])
            .filter(|o| o.iter().any(|&c| c != 0))
            .collect();
        let mut distinct = neighbours.clone();
        distinct.sort();
        distinct.dedup();
        let saved_reads = (neighbours.len() - distinct.len()) as i64;
        Some(Reordered { sums, saved_reads })
    }

    /// The register planes a block's threads need for `readers`, when they fit in
    /// [`REGISTER_PLANES_BUDGET`] beside `extra` more registers per owned position, and in
    /// [`MOST_OWNED_POSITIONS`].
    fn register_planes(&self, readers: &[Reader], extra: i64) -> Option<Registers> {
        let d = self.ctx.dims();
        let program = self.ctx.bound.program();
        let live = |k: usize| self.live_planes(readers, k);
        // Slots: a multiple of every ring's planes (so that ring slots are constants too)
        // holding every version's live planes; or, where that multiple is too many to unroll
        // (rings of 5 and 2 planes: 10), the most live planes, rings that do not divide them
        // grown to them (see `grow_rings`).
        let rings = (self.versions.iter()).fold(1, |acc, v| lcm(acc, v.array.dims[SWEPT] as i64));
        let longest = (0..self.versions.len()).map(live).fold(1, i64::max);
        let planes = match div_ceil(longest, rings) * rings {
            multiple if multiple > MOST_UNROLLED_ITERATIONS => longest,
            multiple => multiple,
        };
        let dims: Vec<i64> = (1..d).map(|a| self.reach.len(a)).collect();
        let owned = div_ceil(dims.iter().product::<i64>(), self.loop_threads);
        let registers: i64 = ((self.versions.iter().enumerate())
            .map(|(k, v)| live(k) * program.fields[v.field].ty.size_bytes().div_ceil(4) as i64)
            .sum::<i64>()
            + extra)
            * owned;
        let fits = owned <= MOST_OWNED_POSITIONS
            && planes <= MOST_UNROLLED_ITERATIONS
            && registers <= REGISTER_PLANES_BUDGET;
        fits.then(|| Registers {
            planes,
            owned,
            lo: (1..d).map(|a| self.reach.lo[a]).collect(),
            dims,
        })
    }

    /// The declarations of the threads' owned positions (`m<k>`, the flat number, and
    /// `m<k>_<axis>`) and of their register planes, when the pipeline has them.
    fn register_declarations(&self) -> Vec<Stmt> {
        let Some(registers) = &self.registers else {
            return Vec::new();
        };
        let (ctx, ity) = (self.ctx, self.ctx.ity);
        let mut body = Vec::new();
        for k in 0..registers.owned {
            let flat = format!("m{k}");
            body.push(Stmt::Declare {
                var: flat.clone(),
                ty: ity,
                value: Some(ctx.offset(Expr::var("tid"), k * self.loop_threads)),
            });
            let digits = ctx.digits(&flat, &registers.dims);
            for ((name, digit), lo) in self.names[1..].iter().zip(digits).zip(&registers.lo) {
                body.push(Stmt::Declare {
                    var: format!("m{k}_{name}"),
                    ty: ity,
                    value: Some(ctx.offset(digit, *lo)),
                });
            }
        }
        let program = ctx.bound.program();
        for (v, version) in self.versions.iter().enumerate() {
            for k in 0..registers.owned {
                for slot in 0..registers.planes {
                    body.push(Stmt::Declare {
                        var: format!("v{v}_{k}_s{slot}"),
                        ty: program.fields[version.field].ty,
                        value: None,
                    });
                }
            }
        }
        // Partial sums start at zero: the first iterations add into outputs below the
        // region's, never finished.
        for (l, reordered) in self.reordered.iter().enumerate() {
            let Some(reordered) = reordered else { continue };
            let ty = reordered.sums.ty;
            for k in 0..registers.owned {
                for slot in 0..registers.planes {
                    body.push(Stmt::Declare {
                        var: partial_sum(l, k, slot, registers),
                        ty,
                        value: Some(Expr::Literal(tessera_ir::Constant::Float(0.0), ty)),
                    });
                }
            }
        }
        body
    }

    /// For each position a thread owns that lies in `rect`'s plane (every one it owns without
    /// `rect`), `body` of its number and block position (at plane `p`), under a test of the
    /// position where it may fall outside.
    fn owned_points(
        &self,
        registers: &Registers,
        rect: Option<&Rect>,
        mut body: impl FnMut(i64, Vec<Expr>) -> Vec<Stmt>,
    ) -> Vec<Stmt> {
        let ctx = self.ctx;
        let area: i64 = registers.dims.iter().product();
        (0..registers.owned)
            .map(|k| {
                let coords: Vec<Expr> = (self.names[1..].iter())
                    .map(|name| Expr::var(format!("m{k}_{name}")))
                    .collect();
                let mut tests = Vec::new();
                if (k + 1) * self.loop_threads > area {
                    tests.push(Expr::var(format!("m{k}")).op(KernelOp::Lt, ctx.lit(area)));
                }
                let bounds = rect.map(|rect| (&rect.lo[1..], &rect.hi[1..]));
                for (j, (c, (&lo, &hi))) in (coords.iter())
                    .zip(bounds.into_iter().flat_map(|(lo, hi)| lo.iter().zip(hi)))
                    .enumerate()
                {
                    if lo > registers.lo[j] {
                        tests.push(ctx.lit(lo).op(KernelOp::Le, c.clone()));
                    }
                    if hi < registers.lo[j] + registers.dims[j] {
                        tests.push(c.clone().op(KernelOp::Lt, ctx.lit(hi)));
                    }
                }
                let position = std::iter::once(Expr::var("p")).chain(coords).collect();
                let point = Stmt::Block(body(k, position));
                Stmt::guarded(
                    tests.into_iter().reduce(|a, b| a.op(KernelOp::And, b)),
                    point,
                )
            })
            .collect()
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
            ring: true,
            ring_lo: bounds.lo.clone(),
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

    /// The planes of version `k` its `readers` read across (at least 1): how long a plane's
    /// values stay needed.
    fn live_planes(&self, readers: &[Reader], k: usize) -> i64 {
        (readers.iter())
            .filter(|r| r.version == k)
            .map(|r| r.lag - self.versions[k].lag - r.behind + 1)
            .fold(1, i64::max)
    }

    /// Sizes each version's ring for its readers, the base plane and the sweep's iterations.
    fn size_rings(&mut self, readers: &[Reader], target: &Rect) {
        for k in 0..self.versions.len() {
            let planes = self.live_planes(readers, k);
            let version = &mut self.versions[k];
            version.array.dims[SWEPT] = planes.min(version.bounds.len(SWEPT)).max(1) as usize;
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
            lo: &v.ring_lo,
            ring: Some((SWEPT, self.base, v.array.dims[SWEPT] as i64)),
            registers: None,
        }
    }

    /// The place of `version`'s ring as read by a level of lag `reader_lag` in unrolled
    /// iteration `j`, at the position numbered `k` that the thread owns (`owner`: `(k, j)`),
    /// with the thread's registers of it when it keeps them.
    fn place_at(&self, version: usize, owner: Option<(i64, i64)>, reader_lag: i64) -> Place<'_> {
        let mut place = self.place(version);
        if let (Some(registers), Some((k, j))) = (&self.registers, owner) {
            place.registers = Some(RegisterPlanes {
                prefix: format!("v{version}_{k}"),
                ring: self.versions[version].ring,
                planes: registers.planes,
                read: j - reader_lag,
                write: j - self.versions[version].lag,
            });
        }
        place
    }

    /// Blocks per block axis: the plane tiles, and the chunks along the streaming axis.
    fn grid(&self) -> [u64; 3] {
        let mut grid = [1; 3];
        for (a, &extent) in self.extent.iter().enumerate() {
            grid[self.tile.block_axis(a)] = blocks(self.ctx.extent(a), extent as u64);
        }
        grid
    }

    /// `o_<axis>`: the block's origin along each axis.
    fn origins(&self) -> Vec<Stmt> {
        let ctx = self.ctx;
        (self.extent.iter().enumerate())
            .map(|(a, &extent)| Stmt::Declare {
                var: format!("o_{}", self.names[a]),
                ty: ctx.ity,
                value: Some(Expr::BlockIdx(self.tile.block_axis(a)).times(ctx.lit(extent))),
            })
            .collect()
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
    ///
    /// With register planes the loop is unrolled by their slots (see [`Registers`]), its
    /// iterations rounded up to a multiple of them: the extra ones find no plane to load,
    /// compute or write. Interior blocks then run their steady trips in a loop of their own,
    /// between the trips before and after them (see [`Pipeline::steady_trips`]).
    fn sweep(&self, frame: Frame) -> Vec<Stmt> {
        let ctx = self.ctx;
        let unroll = self.registers.as_ref().map_or(1, |r| r.planes);
        let end = ctx.lit(div_ceil(self.iterations, unroll) * unroll);
        let trips = |start: Expr, end: Expr, body: Vec<Stmt>| Stmt::For {
            var: "it".into(),
            ty: ctx.ity,
            start,
            end,
            step: ctx.lit(unroll),
            body,
        };
        let checked = self.unrolled(frame, unroll, Checks::All);
        let Some((first, steady_end)) = self.steady_trips(frame, unroll) else {
            return vec![trips(ctx.lit(0), end, checked)];
        };
        // A pass of every step runs the trips before the steady ones, the steady ones and
        // those after them in three loops; a shorter pass runs one loop of the checked body.
        // The choice is made once, outside the loops: PoCL 3.1 loses values a thread carries
        // from one loop or branch holding barriers to the next when the loops' bounds or the
        // branch change from trip to trip (even with the same code in both).
        let mut full = Vec::new();
        if first > 0 {
            full.push(trips(ctx.lit(0), ctx.lit(first), checked.clone()));
        }
        full.push(Stmt::Comment(
            "steady trips: every plane in range, a pass of every step".into(),
        ));
        full.push(trips(
            ctx.lit(first),
            ctx.lit(steady_end),
            self.unrolled(frame, unroll, Checks::Steady),
        ));
        if ctx.lit(steady_end) != end {
            full.push(trips(ctx.lit(steady_end), end.clone(), checked.clone()));
        }
        let depth = Expr::int(self.depth as i64, ScalarType::I64);
        vec![Stmt::UniformIf {
            cond: Expr::var("steps").op(KernelOp::Eq, depth),
            then: full,
            otherwise: vec![trips(ctx.lit(0), end, checked)],
        }]
    }

    /// One trip of the sweep's loop: `unroll` iterations, with `checks`.
    fn unrolled(&self, frame: Frame, unroll: i64, checks: Checks) -> Vec<Stmt> {
        if unroll == 1 {
            return self.iteration(frame, 0, checks);
        }
        let mut iterations: Vec<Vec<Stmt>> = (0..unroll)
            .map(|j| self.iteration(frame, j, checks))
            .collect();
        leave_out_idle_barriers(&mut iterations);
        iterations.into_iter().map(Stmt::Block).collect()
    }

    /// The steady trips of `unroll` iterations (see [`Checks::Steady`]), from the first
    /// one's start to the last one's end, where a pass has every step: those whose loads,
    /// levels and writes all have their planes. Only interior blocks with register planes run
    /// them: there the tests cost a few instructions per point, where a plane shared by a
    /// loop pays them once per plane.
    fn steady_trips(&self, frame: Frame, unroll: i64) -> Option<(i64, i64)> {
        if frame != Frame::Interior || self.registers.is_none() {
            return None;
        }
        let loads = (self.inputs.iter()).map(|&v| {
            let v = &self.versions[v];
            (v.bounds.lo[SWEPT], v.bounds.hi[SWEPT], v.lag)
        });
        // A reordered level finishes outputs from its region's start.
        let levels = (self.levels.iter())
            .map(|level| (level.region.lo[SWEPT], level.region.hi[SWEPT], level.lag));
        let (_, write_lag) = self.finals.last()?;
        let write = (0, self.extent[SWEPT], *write_lag);
        let spans: Vec<(i64, i64, i64)> = loads.chain(levels).chain([write]).collect();
        // Iteration `it + j` handles plane `it + j + base - lag` of each.
        let first = (spans.iter())
            .map(|&(lo, _, lag)| lo - self.base + lag)
            .max()?;
        let first = div_ceil(first.max(0), unroll) * unroll;
        let last = (spans.iter())
            .map(|&(_, hi, lag)| hi - 1 - self.base + lag - (unroll - 1))
            .min()?;
        let end = (last.div_euclid(unroll) + 1) * unroll;
        (first < end).then_some((first, end))
    }

    /// Whether levels compute every position a thread owns, untested, in trips with `checks`.
    fn untested_positions(&self, checks: Checks) -> bool {
        checks == Checks::Steady && self.whole_planes
    }

    /// The first plane level `l` handles in `frame`: a reordered level starts adding partial
    /// sums the planes its terms span before its region.
    fn level_start(&self, l: usize, frame: Frame) -> i64 {
        let lo = self.levels[l].region.lo[SWEPT];
        match self.reordered_in(l, frame) {
            Some(reordered) => {
                let (first, last) = reordered.span();
                lo - (last - first)
            }
            None => lo,
        }
    }

    /// Iteration `it + j` of the sweep (see [`Pipeline::sweep`]), with `checks`; with rings
    /// in global memory, whose launch is an iteration, without barriers.
    pub(super) fn iteration(&self, frame: Frame, j: i64, checks: Checks) -> Vec<Stmt> {
        let mut iteration = self.writes(frame, j, checks);
        iteration.extend((self.inputs.iter()).map(|&v| self.load(v, frame, j, checks)));
        let mut unsynced: Vec<usize> = self.inputs.clone();
        for (l, level) in self.levels.iter().enumerate() {
            let reordered = self.reordered_in(l, frame);
            if !self.global && self.reads_unsynced(level, frame, reordered, &unsynced) {
                iteration.push(Stmt::Barrier);
                unsynced.clear();
            }
            iteration.push(match reordered {
                Some(reordered) => self.reordered_plane(l, reordered, j, checks),
                None => self.level_plane(l, frame, j, checks),
            });
            unsynced.extend(level.writes.iter().map(|&(_, version)| version));
        }
        if !self.global {
            iteration.push(Stmt::Barrier);
        }
        iteration
    }

    /// Level `l`'s reordering, when it is reordered in `frame`.
    fn reordered_in(&self, l: usize, frame: Frame) -> Option<&Reordered> {
        self.reordered[l]
            .as_ref()
            .filter(|_| frame == Frame::Interior)
    }

    /// Whether `level`, in `frame` (`reordered` there or not), reads from a shared ring a
    /// plane written since the last barrier (to a version of `unsynced`). Without register
    /// planes that is any read of such a version. With them a thread reads its own positions'
    /// values from registers, and only a read at an in-plane neighbour of the plane written
    /// in this iteration needs one (in the edge frame, of any plane a clamped or mirrored
    /// border may pick); a reordered level reads every neighbour on its last plane.
    fn reads_unsynced(
        &self,
        level: &Level,
        frame: Frame,
        reordered: Option<&Reordered>,
        unsynced: &[usize],
    ) -> bool {
        if self.registers.is_none() {
            return level.uses.iter().any(|v| unsynced.contains(v));
        }
        let ctx = self.ctx;
        let program = ctx.bound.program();
        (ctx.bound.checked().stage_footprints(level.stage).iter()).any(|(field, fp)| {
            let Some(version) = level.reads[field.index()].filter(|v| unsynced.contains(v)) else {
                return false;
            };
            let fresh = level.lag - self.versions[version].lag;
            let picked = frame == Frame::Edge && picks_plane(program, level.stage, *field);
            (fp.offsets.iter()).any(|o| {
                let along = reordered.map_or(i64::from(o[SWEPT]), |r| r.span().1);
                o[1..].iter().any(|&c| c != 0) && (along == fresh || (picked && along != 0))
            })
        })
    }

    /// `p`: the plane position a version of lag `lag` handles in iteration `it + j`.
    pub(super) fn plane(&self, lag: i64, j: i64) -> Stmt {
        Stmt::Declare {
            var: "p".into(),
            ty: self.ctx.ity,
            value: Some(self.ctx.offset(Expr::var("it"), j + self.base - lag)),
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

    /// The points of plane `p` of `rect`, each made by `body` from the owner of the position
    /// (`(k, j)`: the thread's position number and the unrolled iteration, with register
    /// planes) and its block position: the positions the thread owns, or a loop in which the
    /// block's threads share the plane (in column segments when it computes `segmented`'s
    /// points).
    fn plane_points(
        &self,
        rect: &Rect,
        j: i64,
        segmented: Option<Id<Stage>>,
        mut body: impl FnMut(Option<(i64, i64)>, Vec<Expr>) -> Vec<Stmt>,
    ) -> Vec<Stmt> {
        match &self.registers {
            Some(registers) => self.owned_points(registers, Some(rect), |k, position| {
                body(Some((k, j)), position)
            }),
            None => vec![self.plane_loop(rect, segmented, |position| body(None, position))],
        }
    }

    /// Loads the input plane of `version` (each position's periodic image) into its ring.
    fn load(&self, version: usize, frame: Frame, j: i64, checks: Checks) -> Stmt {
        let ctx = self.ctx;
        let v = &self.versions[version];
        let points = self.plane_points(&v.bounds, j, None, |owner, position| {
            let coords = self.frame(frame).grid_coords(&position);
            let value = Expr::Load {
                buffer: field_ident(ctx, v.field),
                index: Box::new(ctx.linear(&coords)),
                cached: true,
            };
            let place = self.place_at(version, owner, v.lag);
            vec![place.store(ctx, &position, value)]
        });
        let within = self.plane_in(v.bounds.lo[SWEPT], v.bounds.hi[SWEPT]);
        Stmt::Block(vec![self.plane(v.lag, j), checks.when(within, points)])
    }

    /// Level `l`'s plane of this iteration, when it has one and the pass has its step (a shared
    /// loop runs zero times otherwise; the barrier after it stays unconditional).
    fn level_plane(&self, l: usize, frame: Frame, j: i64, checks: Checks) -> Stmt {
        let ctx = self.ctx;
        let level = &self.levels[l];
        let io = StageIo::new(ctx, level.stage);
        let point = |owner: Option<(i64, i64)>, position: Vec<Expr>| {
            let staging = Rings {
                pipeline: self,
                level,
                owner,
                lag: level.lag,
            };
            self.frame(frame)
                .point(&io, &position, &level.region, &staging)
        };
        let mut points = match &self.registers {
            Some(registers) if self.untested_positions(checks) => {
                self.owned_points(registers, None, |k, position| point(Some((k, j)), position))
            }
            _ => self.plane_points(&level.region, j, Some(level.stage), point),
        };
        let (mut body, active) = self.level_opening(l, frame, "", j);
        if self.registers.is_some() {
            body.push(checks.when(active, points));
        } else {
            // Steady trips need register planes: a shared loop's plane is always tested.
            run_only_when(ctx, &mut points[0], active);
            body.extend(points);
        }
        Stmt::Block(body)
    }

    /// Level `l`'s plane of this iteration with its sum reordered (see [`Reordered`]; the
    /// interior frame, with register planes), when the pass has its step and the plane feeds
    /// an output of its region.
    fn reordered_plane(&self, l: usize, reordered: &Reordered, j: i64, checks: Checks) -> Stmt {
        let ctx = self.ctx;
        let level = &self.levels[l];
        let registers = (self.registers.as_ref()).expect("reordered levels keep register planes");
        let (first, last) = reordered.span();
        let io = StageIo::new(ctx, level.stage);
        let region = &level.region;
        let frame = self.frame(Frame::Interior);
        let tested = (!self.untested_positions(checks)).then_some(region);
        let points = self.owned_points(registers, tested, |k, position| {
            let arriving: Vec<Expr> = std::iter::once(ctx.offset(Expr::var("p"), last))
                .chain(position[1..].iter().cloned())
                .collect();
            let reads = Rings {
                pipeline: self,
                level,
                owner: Some((k, j)),
                lag: level.lag - last,
            };
            let (mut body, env) = self.arriving_plane(&frame, &io, &arriving, &reads);
            let output = |offset: i64| partial_sum(l, k, j - level.lag + offset, registers);
            body.extend(reordered.sums.planes.iter().map(|plane| {
                let dz = i64::from(plane.offset);
                Stmt::PartialSum(PartialSum {
                    stage: level.stage,
                    env: env.clone(),
                    terms: plane.terms.clone(),
                    var: output(last - dz),
                    accumulate: dz != first,
                    apart: plane.repeated,
                })
            }));
            let finished = Rings {
                pipeline: self,
                level,
                owner: Some((k, j)),
                lag: level.lag,
            };
            let sum = (reordered.sums.sum, Expr::var(output(0)));
            let point = frame.finished_point(&io, &position, region, &finished, sum);
            let lowest = ctx.lit(region.lo[SWEPT]).op(KernelOp::Le, Expr::var("p"));
            body.push(checks.when(lowest, point));
            body
        });
        let note = ", its sum reordered plane by plane";
        let (mut body, active) = self.level_opening(l, Frame::Interior, note, j);
        body.push(checks.when(active, points));
        Stmt::Block(body)
    }

    /// The opening of level `l`'s plane in iteration `it + j` (a comment, with `note`; `p`;
    /// the step counter), and when it runs: plane `p` from its start in `frame` (see
    /// [`Pipeline::level_start`]) to its region's end, in a pass that has its step.
    fn level_opening(&self, l: usize, frame: Frame, note: &str, j: i64) -> (Vec<Stmt>, Expr) {
        let ctx = self.ctx;
        let level = &self.levels[l];
        let mut active = self.plane_in(self.level_start(l, frame), level.region.hi[SWEPT]);
        if level.step > 0 {
            active = active.op(KernelOp::And, runs_step(level.step));
        }
        let stage = &ctx.bound.program().stages[level.stage].name;
        let mut opening = vec![
            Stmt::Comment(format!("stage `{stage}` of step {}{note}", level.step)),
            self.plane(level.lag, j),
        ];
        opening.extend(step_counter(ctx, level.step));
        (opening, active)
    }

    /// The values a reordered level reads on its arriving plane (block position `arriving`,
    /// through `reads`): one variable per in-plane offset, `z<n>`, bound to every read of the
    /// stage at that offset whatever its plane; and the leaves that bind them.
    fn arriving_plane(
        &self,
        frame: &BlockFrame,
        io: &StageIo,
        arriving: &[Expr],
        reads: &Rings,
    ) -> (Vec<Stmt>, ProgramEnv) {
        let program = self.ctx.bound.program();
        let coords = frame.grid_coords(arriving);
        let mut declarations = Vec::new();
        let mut loaded: Vec<(Id<Field>, Vec<i32>, String)> = Vec::new();
        let mut bindings = Vec::new();
        for (field, fp) in &io.reads {
            for offset in &fp.offsets {
                let mut in_plane = offset.clone();
                in_plane[SWEPT] = 0;
                let found = (loaded.iter()).find(|(f, o, _)| f == field && *o == in_plane);
                let var = match found {
                    Some((_, _, var)) => var.clone(),
                    None => {
                        let var = format!("z{}", loaded.len());
                        let value =
                            frame.read(io.stage, *field, &in_plane, arriving, &coords, reads);
                        declarations.push(Stmt::Declare {
                            var: var.clone(),
                            ty: program.fields[*field].ty,
                            value: Some(value),
                        });
                        loaded.push((*field, in_plane, var.clone()));
                        var
                    }
                };
                bindings.push(ReadBinding {
                    field: *field,
                    offset: offset.clone(),
                    value: Expr::var(var),
                });
            }
        }
        let env = ProgramEnv {
            reads: bindings,
            coords,
            step: Expr::var("t_s"),
            computed: Vec::new(),
        };
        (declarations, env)
    }

    /// For each depth a pass may have, the tile's plane of every updated field written to
    /// its partner from the field's last version, when the pass has that depth; in a steady
    /// trip, the full depth's only. Edge blocks test each point against the grid's end where
    /// the last tile overhangs it (an interior block's tile is inside).
    fn writes(&self, frame: Frame, j: i64, checks: Checks) -> Vec<Stmt> {
        let ctx = self.ctx;
        let d = ctx.dims();
        let target = Rect::new(vec![0; d], self.extent.clone());
        let hi: Vec<Option<i64>> = (0..d)
            .map(|a| {
                let covered = blocks(ctx.extent(a), self.extent[a] as u64) as i64;
                let overhangs = covered * self.extent[a] > ctx.extent(a);
                (overhangs && frame == Frame::Edge).then_some(ctx.extent(a))
            })
            .collect();
        let depths = match checks {
            Checks::All => 0..self.finals.len(),
            Checks::Steady => self.finals.len() - 1..self.finals.len(),
        };
        (depths.map(|step| (step, &self.finals[step])))
            .map(|(step, (finals, lag))| {
                let points = self.plane_points(&target, j, None, |owner, position| {
                    let coords = self.frame(Frame::Interior).grid_coords(&position);
                    let stores = (self.updated.iter().zip(finals))
                        .map(|(&field, &version)| Stmt::Store {
                            buffer: format!("{}_next", field_ident(ctx, field)),
                            index: ctx.linear(&coords),
                            value: self.place_at(version, owner, *lag).load_at(ctx, &position),
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
                Stmt::Block(vec![self.plane(*lag, j), checks.when(cond, points)])
            })
            .collect()
    }
}

/// Which tests an iteration of the sweep makes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Checks {
    /// Every load, level and write tests that its plane is in range and the pass has its
    /// step or depth.
    All,
    /// None does: the loop trip is steady, every plane in range in a pass of full depth (see
    /// [`Pipeline::steady_trips`]). Levels test the positions of a plane they compute
    /// only where rings do not span the reach (see [`Pipeline::span_rings_over_reach`]).
    Steady,
}

impl Checks {
    /// `then` under `cond` where this checks it, else `then` as it is.
    fn when(self, cond: Expr, then: Vec<Stmt>) -> Stmt {
        match self {
            Checks::All => Stmt::when(cond, then),
            Checks::Steady => Stmt::Block(then),
        }
    }
}

/// Leaves out the barrier ending an unrolled iteration where it separates nothing: where
/// both it and the next iteration have barriers of their own, and what the iteration does
/// after its last own barrier shares no ring slot with what the next does before its first
/// (rings grown past their readers' planes, see `grow_rings`, often make it so). The last
/// iteration keeps its barrier: the next one is the loop's next trip, which starts over.
fn leave_out_idle_barriers(iterations: &mut [Vec<Stmt>]) {
    let barriers = |body: &[Stmt]| -> Vec<usize> {
        (body.iter().enumerate())
            .filter(|(_, s)| matches!(s, Stmt::Barrier))
            .map(|(k, _)| k)
            .collect()
    };
    for j in 0..iterations.len().saturating_sub(1) {
        let (own, next) = (barriers(&iterations[j]), barriers(&iterations[j + 1]));
        let [.., last_own, ending] = own[..] else {
            continue;
        };
        let [first_next, _, ..] = next[..] else {
            continue;
        };
        let after = accesses(&iterations[j][last_own + 1..ending]);
        let before = accesses(&iterations[j + 1][..first_next]);
        if !conflict(&after, &before) {
            iterations[j].remove(ending);
        }
    }
}

/// Whether `stage` reads `field` through a clamped or mirrored border, whose reads across the
/// grid's edge land on a plane picked at run time (in the edge frame).
fn picks_plane(program: &Program, stage: Id<Stage>, field: Id<Field>) -> bool {
    matches!(
        program.stages[stage].border_of(field, program),
        Some(Border::Clamp | Border::Mirror)
    )
}

/// The register of level `l`'s partial sum in slot `slot` (taken modulo the slots) at the
/// position numbered `k` a thread owns (see [`Reordered`]).
fn partial_sum(l: usize, k: i64, slot: i64, registers: &Registers) -> String {
    format!("a{l}_{k}_s{}", slot.rem_euclid(registers.planes))
}

/// A level's staging: the versions it reads in their rings, its outputs into new versions;
/// with register planes, at the position `owner` names (see [`Pipeline::place_at`]), read as
/// by a level of lag `lag` (the level's own, or less for a reordered level reading a later
/// plane).
struct Rings<'p> {
    pipeline: &'p Pipeline<'p>,
    level: &'p Level,
    owner: Option<(i64, i64)>,
    lag: i64,
}

impl Staging for Rings<'_> {
    fn current(&self, field: Id<Field>) -> Option<Place<'_>> {
        let version = self.level.reads[field.index()]?;
        Some(self.pipeline.place_at(version, self.owner, self.lag))
    }

    fn next(&self, field: Id<Field>, _in_place: bool) -> (Place<'_>, bool) {
        let (_, version) = (self.level.writes.iter())
            .find(|(f, _)| *f == field)
            .expect("a level writes its stage's outputs");
        let place = self.pipeline.place_at(*version, self.owner, self.level.lag);
        (place, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `r[slot] = 0;`
    fn store(slot: i64) -> Stmt {
        Stmt::SharedStore {
            array: "r".into(),
            index: vec![Expr::int(slot, ScalarType::I32), Expr::var("x")],
            value: Expr::int(0, ScalarType::I32),
        }
    }

    /// `int v = r[slot];`
    fn load(slot: i64) -> Stmt {
        Stmt::Declare {
            var: "v".into(),
            ty: ScalarType::I32,
            value: Some(Expr::SharedLoad {
                array: "r".into(),
                index: vec![Expr::int(slot, ScalarType::I32), Expr::var("x")],
            }),
        }
    }

    /// An iteration that stores `head` before its own barrier and loads `tail` after it.
    fn iteration(head: i64, tail: i64) -> Vec<Stmt> {
        vec![store(head), Stmt::Barrier, load(tail), Stmt::Barrier]
    }

    fn barriers(iterations: &[Vec<Stmt>]) -> Vec<usize> {
        (iterations.iter())
            .map(|body| body.iter().filter(|s| matches!(s, Stmt::Barrier)).count())
            .collect()
    }

    #[test]
    fn an_iteration_ending_barrier_stays_only_where_the_next_head_touches_the_tail() {
        // Each next iteration stores the slot this one reads after its own barrier: kept.
        let mut overlapping = vec![iteration(0, 1), iteration(1, 2), iteration(2, 0)];
        leave_out_idle_barriers(&mut overlapping);
        assert_eq!(barriers(&overlapping), [2, 2, 2]);
        // Distinct slots: left out, but at the loop's last iteration.
        let mut distinct = vec![iteration(0, 2), iteration(1, 0), iteration(2, 1)];
        leave_out_idle_barriers(&mut distinct);
        assert_eq!(barriers(&distinct), [1, 1, 2]);
        // A slot that is not a literal may be any: kept.
        let mut dynamic = vec![iteration(0, 2), iteration(1, 0)];
        dynamic[1][0] = Stmt::SharedStore {
            array: "r".into(),
            index: vec![Expr::var("s"), Expr::var("x")],
            value: Expr::int(0, ScalarType::I32),
        };
        leave_out_idle_barriers(&mut dynamic);
        assert_eq!(barriers(&dynamic), [2, 2]);
        // An iteration without a barrier of its own keeps its ending one.
        let mut bare = vec![vec![store(0), Stmt::Barrier], iteration(1, 2)];
        leave_out_idle_barriers(&mut bare);
        assert_eq!(barriers(&bare), [1, 2]);
    }
}
