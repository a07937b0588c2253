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
use tessera_ir::{Border, Field, Id, Program, ScalarType, Stage, UnaryOp};

use super::super::{Expr, KernelOp, PartialSum, ProgramEnv, ReadBinding, SharedArray, Stmt};
use super::common::{Ctx, StageIo, field_ident};
use super::fused::{
    BlockFrame, Frame, Fused, FusedKernel, Place, RegisterPlanes, Staging, interior_test,
    runs_step, step_counter, tile_regions,
};
use super::hazards::{accesses, conflict};
use super::naive::blocks;
use super::tile::{
    MOST_UNROLLED_ITERATIONS, Tile, div_ceil, lcm, point_work, run_only_when, segmented_loop,
    shared_loop,
};

mod registers;
mod reordered;
mod sweep;

use registers::{Registers, prefetched};
use reordered::Reordered;
pub(super) use sweep::Checks;

/// The streaming time-tiled kernel of `ctx`'s program, or why the program cannot run it.
pub fn kernel(ctx: &Ctx) -> Result<Fused, String> {
    let tile = Tile::of_planes(ctx);
    let extent = tile_extent(ctx, &tile);
    let pipeline = Pipeline::new(ctx, extent, tile, false)?;
    let mut body = vec![pipeline.tile.thread_index(ctx)];
    body.extend(pipeline.origins());
    body.extend(pipeline.register_declarations());
    body.extend(pipeline.sweeps());
    let extent: Vec<String> = pipeline.extent.iter().map(|e| e.to_string()).collect();
    let kernel = FusedKernel {
        strategy: "streaming-time",
        doc: format!(
            "up to {} steps of every stage in flight along {}, {} tiles, planes in shared rings{}{}{}",
            pipeline.depth,
            pipeline.names[SWEPT],
            extent.join("x"),
            if pipeline.registers.is_some() {
                " and each thread's own columns in registers"
            } else {
                ""
            },
            match pipeline.prefetch() {
                0 => String::new(),
                ahead => format!(", input planes loaded {ahead} iteration(s) ahead"),
            },
            if pipeline.reordered.iter().any(Option::is_some) {
                ", box sums reordered plane by plane in interior blocks"
            } else {
                ""
            }
        ),
        updated: pipeline.updated.clone(),
        constant: &pipeline.constant_fields,
        shared: (pipeline.versions.iter())
            .filter(|v| v.ring)
            .map(|v| v.array.clone())
            .collect(),
        block: pipeline.tile.block,
        // One block per SM is enough: without it ptxas caps small blocks' registers for an
        // occupancy that shared rings rule out, and spills.
        min_resident_blocks: Some(1),
        grid: pipeline.grid(),
    };
    Ok(kernel.with_body(ctx, body))
}

/// The tile a block of `ctx`'s plan owns (the streaming axis first: its chunk) and its
/// regions over the plan's depth, for the kernel and its traffic model.
pub fn block_regions(ctx: &Ctx) -> (Rect, TileRegions) {
    tile_regions(ctx, &tile_extent(ctx, &Tile::of_planes(ctx)))
}

/// Points of the block's tile along each axis: the chunk along the streaming axis (axis 0),
/// the plane tile along the others.
///
/// Along each plane axis, the tile either keeps the plan's size or shrinks by the halo its
/// depth reaches, so that the block's threads cover its reach once, one position a thread:
/// whichever choice gives every thread's positions the most points of the tile. A
/// 256-thread 2D block running 4 steps of a 5-point stencil owns 248 points of each row: rows
/// of the block's width would reach 8 positions past its threads, and the first warp would
/// run every level twice, once for 8 lanes, while the other warps wait at the iteration's
/// barrier. A 32x32-thread 3D block at 2 steps of a 7-point stencil owns 28x28 points: one
/// position a thread, where 32x32 points reach 36x36 positions, two a thread for the 1024
/// threads, and no register planes.
fn tile_extent(ctx: &Ctx, tile: &Tile) -> Vec<i64> {
    let sweep = ctx.extent(SWEPT);
    let chunk = ctx.plan.stream_chunk.map_or(sweep, i64::from).min(sweep);
    let extent: Vec<i64> = std::iter::once(chunk)
        .chain((1..ctx.dims()).map(|a| tile.size(a)))
        .collect();
    let halo = plane_halo(ctx, &extent);
    let threads = tile.threads();
    // Points of the tile per position the threads take on (`fitted` names the axes shrunk),
    // where the threads cover the reach once or nothing is shrunk.
    let use_of_threads = |fitted: &[bool]| {
        let (mut points, mut area) = (1, 1);
        for a in 1..extent.len() {
            let (tile, reach) = if fitted[a] {
                (extent[a] - halo[a], extent[a])
            } else {
                (extent[a], extent[a] + halo[a])
            };
            points *= tile;
            area *= reach;
        }
        let covered = area <= threads || !fitted.contains(&true);
        covered.then(|| points as f64 / (threads * div_ceil(area, threads)) as f64)
    };
    // Bit `a - 1` of a mask shrinks plane axis `a` (where its halo leaves points).
    let choices = (0..1usize << (extent.len() - 1)).rev().map(|mask| {
        (0..extent.len())
            .map(|a| a != SWEPT && mask & (1 << (a - 1)) != 0 && halo[a] > 0 && extent[a] > halo[a])
            .collect::<Vec<bool>>()
    });
    // Ties go to shrinking more axes: fewer positions past the threads' first.
    let best = choices
        .fold(None::<(f64, Vec<bool>)>, |best, fitted| {
            match (use_of_threads(&fitted), &best) {
                (None, _) => best,
                (Some(score), Some((top, _))) if *top >= score => best,
                (Some(score), _) => Some((score, fitted)),
            }
        })
        .map(|(_, fitted)| fitted)
        .unwrap_or_default();
    (extent.iter().zip(&halo).zip(best))
        .map(|((&e, &h), fit)| if fit { e - h } else { e })
        .collect()
}

/// Positions past a tile of `extent` that its depth's reach takes along each axis (0 along
/// the streaming axis).
fn plane_halo(ctx: &Ctx, extent: &[i64]) -> Vec<i64> {
    let (target, regions) = tile_regions(ctx, extent);
    let reach = (regions.inputs.iter())
        .chain(regions.compute.iter().flatten())
        .filter(|r| !r.is_empty())
        .fold(target, |hull, r| hull.hull(r));
    (0..extent.len())
        .map(|a| {
            if a == SWEPT {
                0
            } else {
                reach.len(a) - extent[a]
            }
        })
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
    /// Whether the ring exists: with register planes, a version whose readers all read their
    /// own column (from registers) has none; nor has a version nothing reads.
    pub(super) ring: bool,
    /// Whether some level reads it, or the tile is written from it (a sub-domain stage's
    /// output that a later stage overwrites before any read is not).
    read: bool,
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
    /// Every position of a block's versions (its rings and register planes).
    reach: Rect,
    /// Every position a block touches: its versions' and those of the fields it reads from
    /// memory (a block is interior where all are inside the grid).
    touched: Rect,
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
            touched: target.clone(),
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
        for (k, version) in pipeline.versions.iter_mut().enumerate() {
            version.read = readers.iter().any(|r| r.version == k);
            version.ring &= version.read;
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
        pipeline.touched = (pipeline.constant_fields.iter())
            .fold(pipeline.reach.clone(), |touched, f| {
                touched.hull(&regions.inputs[f.index()])
            });
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
            ring: true,
            read: true,
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
            // Points outside the stage's domain keep the value before it; an output without
            // one is needed nowhere outside the domain (no reader reaches it before a later
            // stage overwrites it).
            for field in &outputs {
                if let Some(version) = current[field.index()] {
                    reads.push((version, 0, 0));
                }
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
            unread: !v.read,
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
            reach: &self.touched,
        }
    }
}
