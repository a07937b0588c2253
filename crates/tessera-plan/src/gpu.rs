//! GPU plans and the resource model (Rawat §2): block shapes, elements per thread, streaming,
//! and the occupancy a kernel reaches under a device's limits.
//!
//! A [`GpuPlan`] is plain data chosen by a user, a default or a tuner; the kernel generator
//! (`tessera-codegen`) lowers a program under it and reports what each kernel needs
//! ([`KernelResources`]); [`check_kernel`] refuses a kernel over the device's
//! [`DeviceLimits`] with a suggestion, and computes its [`Occupancy`] otherwise.

use serde::{Deserialize, Serialize};

use tessera_analysis::BoundProgram;

use crate::error::PlanError;
use crate::request::{Arithmetic, PlanRequest, Strategy};

/// A GPU code generation strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GpuStrategy {
    /// One thread per point of the two fastest axes; slower axes are looped by each thread;
    /// loads through the read-only cache.
    Naive,
    /// Spatial tiles in shared memory: halos loaded cooperatively, barrier, compute.
    Tiled,
    /// 2.5D streaming (cached plane sweep): a block sweeps the slowest tiled axis, keeping the
    /// streamed planes in registers and the current plane in shared memory.
    Streaming,
    /// Overlapped time tiling (Overtile): one launch runs up to T steps of every stage on a
    /// tile with its halo in shared memory, recomputing the halo's shrinking regions.
    Overlapped,
    /// The pipelined wavefront (LibGeoDecomp): a pass of T steps sweeps the slowest axis,
    /// each launch advancing every step and stage by one whole plane; the planes in flight
    /// live in small rings in global memory (L2-sized), so nothing is recomputed.
    Wavefront,
}

/// The most steps one GPU launch fuses (the overlapped kernel unrolls its steps).
pub const MAX_GPU_TIME_TILE: u32 = 16;

impl GpuStrategy {
    /// Every strategy, in the order of [`GpuStrategy::name`]s listed to users.
    pub const ALL: [GpuStrategy; 5] = [
        GpuStrategy::Naive,
        GpuStrategy::Tiled,
        GpuStrategy::Streaming,
        GpuStrategy::Overlapped,
        GpuStrategy::Wavefront,
    ];

    /// The name used on the command line (`--strategy NAME`).
    pub fn name(self) -> &'static str {
        self.strategy().name()
    }

    /// Whether the strategy runs grids of `dims` axes (overlapped tiles tile up to 3, the
    /// wavefront sweeps the planes of 2D and 3D grids).
    pub fn runs_dims(self, dims: usize) -> bool {
        match self {
            GpuStrategy::Overlapped => dims <= 3,
            GpuStrategy::Wavefront => (2..=3).contains(&dims),
            _ => true,
        }
    }

    /// The same strategy among every backend's.
    pub fn strategy(self) -> Strategy {
        match self {
            GpuStrategy::Naive => Strategy::Naive,
            GpuStrategy::Tiled => Strategy::Tiled,
            GpuStrategy::Streaming => Strategy::Streaming,
            GpuStrategy::Overlapped => Strategy::Overlapped,
            GpuStrategy::Wavefront => Strategy::Wavefront,
        }
    }

    /// The GPU strategy `strategy` names, or an error listing the GPU strategies of
    /// `backend`.
    pub fn from_strategy(
        strategy: Strategy,
        backend: &'static str,
    ) -> Result<GpuStrategy, PlanError> {
        GpuStrategy::ALL
            .into_iter()
            .find(|s| s.strategy() == strategy)
            .ok_or_else(|| PlanError::UnknownStrategy {
                backend,
                strategy: strategy.name().to_string(),
                choices: GpuStrategy::ALL.iter().map(|s| s.name()).collect(),
            })
    }
}

/// Where a `streaming` kernel reads a streamed field's in-plane neighbours from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PlaneReads {
    /// The current plane staged in shared memory (own points from the register queue, halo
    /// from memory), between two barriers per plane.
    #[default]
    Shared,
    /// Straight from memory through the read-only (L1) cache: no staging, no barriers.
    Cache,
}

impl PlaneReads {
    /// Both, in the order of their names.
    pub const ALL: [PlaneReads; 2] = [PlaneReads::Shared, PlaneReads::Cache];

    /// Its name in plans and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            PlaneReads::Shared => "shared",
            PlaneReads::Cache => "cache",
        }
    }

    /// The plane reads `name` names.
    pub fn from_name(name: &str) -> Option<PlaneReads> {
        PlaneReads::ALL.into_iter().find(|r| r.name() == name)
    }
}

/// How a program is lowered to GPU kernels: plain data, hashed into cache keys.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuPlan {
    /// The strategy.
    pub strategy: GpuStrategy,
    /// Threads per block along x (the fastest grid axis), y and z.
    pub block: [u32; 3],
    /// Points computed by each thread along the block's y axis (Holewinski's E); tiles are
    /// `block.y * elements_per_thread` points high.
    pub elements_per_thread: u32,
    /// Streaming only: points of the streamed axis swept by one block. `None` = the whole
    /// axis (serial streaming); `Some(n)` = blocks sweep `n`-point chunks concurrently.
    pub stream_chunk: Option<u32>,
    /// Steps computed per launch (Holewinski's T): more than 1 under the overlapped strategy
    /// only, at most [`MAX_GPU_TIME_TILE`].
    pub time_tile: u32,
    /// Bitwise-reproducible mode: no FMA contraction (OpenCL `FP_CONTRACT OFF`, NVRTC
    /// `--fmad=false`).
    pub exact: bool,
    /// Streaming only: where in-plane neighbours are read from (plans written before it
    /// existed read `shared`).
    #[serde(default, skip_serializing_if = "is_shared")]
    pub plane_reads: PlaneReads,
    /// Streaming time tiles with register planes: how many sweep iterations ahead each thread
    /// loads the input plane it owns before storing it to the shared ring, so that the load's
    /// latency overlaps that many iterations' compute (0: none; rounded down to a divisor of
    /// the sweep's unrolling; plans written before it existed read 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub prefetch: u32,
    /// Single-step `streaming` reading planes through the cache: outside exact mode, add a box
    /// sum up plane by plane as its planes arrive (associative reordering), each column
    /// keeping only the arriving plane in a register (exact mode keeps the written order;
    /// plans written before it existed read `false`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub reordered_sums: bool,
}

/// Whether `flag` is false, left out of a plan's JSON.
fn is_false(flag: &bool) -> bool {
    !*flag
}

/// Whether `planes` is 0, left out of a plan's JSON.
fn is_zero(planes: &u32) -> bool {
    *planes == 0
}

/// Whether `reads` is the default, left out of a plan's JSON.
fn is_shared(reads: &PlaneReads) -> bool {
    *reads == PlaneReads::Shared
}

impl GpuPlan {
    /// A plan of `strategy` with a 32x8 block, one point per thread, serial streaming, no
    /// time tiling, exact mode.
    pub fn new(strategy: GpuStrategy) -> GpuPlan {
        GpuPlan {
            strategy,
            block: [32, 8, 1],
            elements_per_thread: 1,
            stream_chunk: None,
            time_tile: 1,
            exact: true,
            plane_reads: PlaneReads::Shared,
            prefetch: 0,
            reordered_sums: false,
        }
    }

    /// Whether a pass runs its steps in one fused kernel: overlapped tiles at any depth,
    /// streaming time tiles beyond one step.
    pub fn fuses_steps(&self) -> bool {
        match self.strategy {
            GpuStrategy::Overlapped | GpuStrategy::Wavefront => true,
            GpuStrategy::Streaming => self.time_tile > 1,
            GpuStrategy::Naive | GpuStrategy::Tiled => false,
        }
    }

    /// Threads per block.
    pub fn threads_per_block(&self) -> u64 {
        self.block.iter().map(|&b| u64::from(b)).product()
    }

    /// A one-line summary: `tiled block=32x8x1 E=1`.
    pub fn describe(&self) -> String {
        let [x, y, z] = self.block;
        let mut text = format!(
            "{} block={x}x{y}x{z} E={}",
            self.strategy.name(),
            self.elements_per_thread
        );
        if self.strategy == GpuStrategy::Streaming {
            match self.stream_chunk {
                Some(n) => text.push_str(&format!(" chunk={n}")),
                None => text.push_str(" chunk=all"),
            }
            if self.plane_reads == PlaneReads::Cache {
                text.push_str(" plane=cache");
            }
            if self.prefetch > 0 {
                text.push_str(&format!(" prefetch={}", self.prefetch));
            }
            if self.reordered_sums {
                text.push_str(" sums=reordered");
            }
        }
        if self.time_tile != 1 {
            text.push_str(&format!(" T={}", self.time_tile));
        }
        text
    }

    /// Checks the parameters that make no sense on any device (zeros, unsupported depths).
    pub fn check(&self) -> Result<(), PlanError> {
        for (axis, &b) in ["x", "y", "z"].iter().zip(&self.block) {
            if b == 0 {
                return Err(PlanError::Zero {
                    what: format!("the block size along {axis}"),
                });
            }
        }
        if self.elements_per_thread == 0 {
            return Err(PlanError::Zero {
                what: "the number of elements per thread".into(),
            });
        }
        if self.stream_chunk == Some(0) {
            return Err(PlanError::Zero {
                what: "the streaming chunk".into(),
            });
        }
        if self.time_tile == 0 {
            return Err(PlanError::Zero {
                what: "the time tile".into(),
            });
        }
        let fusing = matches!(
            self.strategy,
            GpuStrategy::Overlapped | GpuStrategy::Streaming | GpuStrategy::Wavefront
        );
        if self.time_tile != 1 && !fusing {
            return Err(PlanError::Unsupported(format!(
                "strategy `{}` computes one step per launch; a time tile of {} needs the `overlapped`, `streaming` or `wavefront` strategy (or use a time tile of 1)",
                self.strategy.name(),
                self.time_tile
            )));
        }
        if self.prefetch > 0 && !(self.strategy == GpuStrategy::Streaming && self.time_tile > 1) {
            return Err(PlanError::Unsupported(format!(
                "prefetching {} plane(s) ahead needs streaming time tiles (`--strategy streaming --time-tile 2` or deeper); this plan is `{}` at a time tile of {}",
                self.prefetch,
                self.strategy.name(),
                self.time_tile
            )));
        }
        let single_cached_sweep = self.strategy == GpuStrategy::Streaming
            && self.time_tile == 1
            && self.plane_reads == PlaneReads::Cache;
        if self.reordered_sums && !single_cached_sweep {
            return Err(PlanError::Unsupported(format!(
                "reordered sums belong to single-step streaming reading its planes through the cache (`--strategy streaming --plane-reads cache`; time tiles reorder box sums themselves); this plan is `{}` at a time tile of {}, reading planes from {}",
                self.strategy.name(),
                self.time_tile,
                self.plane_reads.name()
            )));
        }
        if self.time_tile > MAX_GPU_TIME_TILE {
            return Err(PlanError::Invalid(format!(
                "a time tile of {} exceeds the limit of {MAX_GPU_TIME_TILE} steps per launch",
                self.time_tile
            )));
        }
        Ok(())
    }
}

/// What the GPU planner reads of a program: its grid and reach.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramTraits {
    /// The grid's extents, slowest axis first.
    pub extents: Vec<usize>,
    /// The largest offset at which any stage reads a field (along any axis).
    pub radius: u32,
}

impl ProgramTraits {
    /// The traits of `bound`.
    pub fn of(bound: &BoundProgram) -> ProgramTraits {
        let checked = bound.checked();
        let radius = (checked.program().stages.ids())
            .flat_map(|stage| checked.stage_footprints(stage))
            .map(|(_, footprint)| footprint.radius())
            .max()
            .unwrap_or(0);
        ProgramTraits {
            extents: bound.extents.clone(),
            radius,
        }
    }

    /// A radius-1 stencil on a grid of `extents` (for tests and examples).
    pub fn stencil(extents: &[usize]) -> ProgramTraits {
        ProgramTraits {
            extents: extents.to_vec(),
            radius: 1,
        }
    }
}

/// The plan `request` asks for on a device with `limits` for a program with `traits`: the
/// request's strategy (`naive` when it names none, `overlapped` when it also asks to fuse
/// steps; GPU backends let their cost model choose instead), block (`tile`, slowest axis
/// first: `[.., y, x]`), time tile and exactness, with each strategy's default knobs. `fits` says whether a plan's kernels fit the
/// device (the lowering's resource check); `backend` names the backend in messages.
pub fn plan_gpu(
    traits: &ProgramTraits,
    request: &PlanRequest,
    backend: &'static str,
    limits: &DeviceLimits,
    fits: impl Fn(&GpuPlan) -> bool,
) -> Result<GpuPlan, PlanError> {
    check_gpu_request(request, backend)?;
    let extents = &traits.extents;
    let dims = extents.len();
    let mut plan = initial_gpu_plan(dims, limits);
    let fusing = request.time_tile.is_some_and(|depth| depth > 1);
    plan.strategy = match request.strategy {
        Some(strategy) => GpuStrategy::from_strategy(strategy, backend)?,
        None if fusing => GpuStrategy::Overlapped,
        None => GpuStrategy::Naive,
    };
    if !plan.strategy.runs_dims(dims) {
        return Err(PlanError::Unsupported(format!(
            "the `{}` strategy {} and this grid has {dims}: choose `tiled` or `naive`",
            plan.strategy.name(),
            if plan.strategy == GpuStrategy::Wavefront {
                "sweeps the planes of 2 or 3 axes"
            } else {
                "tiles up to 3 axes"
            }
        )));
    }
    match plan.strategy {
        GpuStrategy::Overlapped => overlapped_defaults(&mut plan, traits),
        GpuStrategy::Streaming => {
            streaming_defaults(&mut plan, dims, request.time_tile.unwrap_or(1))
        }
        GpuStrategy::Wavefront => wavefront_defaults(&mut plan),
        GpuStrategy::Naive | GpuStrategy::Tiled => {}
    }
    if let Some(depth) = request.time_tile {
        plan.time_tile = depth;
    }
    if let Some(reads) = request.plane_reads {
        if plan.strategy != GpuStrategy::Streaming {
            return Err(PlanError::Invalid(format!(
                "`--plane-reads` chooses how the `streaming` strategy reads its planes; this plan's strategy is `{}`",
                plan.strategy.name()
            )));
        }
        plan.plane_reads = reads;
    }
    if let Some(ahead) = request.prefetch {
        plan.prefetch = ahead;
    }
    plan.exact = request.arithmetic == Arithmetic::Exact;
    // A block the user gives is checked as given; the default one shrinks until the requested
    // strategy's kernels fit the device.
    match &request.tile {
        Some(tile) => {
            plan.block = block_of_tile(tile)?;
            check_sweep_block(&plan, dims, tile)?;
        }
        None => shrink_to_fit(&mut plan, fits),
    }
    if plan.strategy == GpuStrategy::Streaming {
        plan.stream_chunk = stream_chunk(extents, plan.time_tile);
    }
    plan.check()?;
    Ok(plan)
}

/// Refuses the parts of a request that GPU backends do not take.
fn check_gpu_request(request: &PlanRequest, backend: &str) -> Result<(), PlanError> {
    if request.arithmetic == Arithmetic::F64 {
        return Err(PlanError::Unsupported(
            "GPU backends have no f64 accuracy mode; use `--backend reference` for it".into(),
        ));
    }
    if request.isa.is_some() {
        return Err(PlanError::Invalid(format!(
            "the {backend} backend has no CPU target; drop `--target-isa`"
        )));
    }
    if request.threads.is_some() {
        return Err(PlanError::Invalid(format!(
            "the {backend} backend does not take a thread count; drop `--threads`"
        )));
    }
    Ok(())
}

/// The points of the streaming axis one block of the default plan sweeps. Each chunk reloads
/// the planes its stencil reaches beyond it (2 of 16 for a radius-1 stencil, mostly from L2),
/// but the many blocks keep more loads in flight: on an H100, j3d7pt 512^3 ran 189, 188 and
/// 184 GCells/s (f32) with chunks of 16, 32 and 64 planes, and 236, 219 and 201 with a 64x4
/// block reading its plane through the cache.
pub const STREAM_CHUNK: u32 = 16;

/// The default streaming chunk: [`STREAM_CHUNK`] points per step of a pass (a time-tiled
/// chunk recomputes the planes its T steps reach beyond each end), in 2D at most two steps'
/// worth, or `None` (one sweep of the whole axis) where the streaming axis (the slowest of the
/// three fastest: y in 2D, z in 3D) is no longer than that. A 2D pass of 4 steps ran fastest
/// in chunks of 32 rows on an H200 (j2d5pt f32 933, 888 and 889 GCells/s with 32, 64 and 128;
/// f64 498, 467 and 462): the more blocks hide more of a plane's load latency than the rows
/// recomputed at the chunks' ends cost.
fn stream_chunk(extents: &[usize], time_tile: u32) -> Option<u32> {
    let sweep = extents
        .len()
        .checked_sub(3)
        .map_or(extents.first(), |s| extents.get(s))?;
    let steps = match extents.len() {
        2 => time_tile.clamp(1, 2),
        _ => time_tile.max(1),
    };
    let chunk = STREAM_CHUNK * steps;
    (*sweep > chunk as usize).then_some(chunk)
}

/// The streaming strategy's starting block and plane reads: 64x4 blocks in 3D (rows of two
/// warps), rows of 256 in 2D, and in-plane neighbours read through the cache, which beat the
/// shared current plane on an H100 (j3d7pt f32 236 against 194 GCells/s, f64 149 against
/// 138; fdtd2d 54 against 27). Time-tiled (T > 1) in 3D, whose plane tiles carry a halo of
/// T·r on every side: one thread per position of the tile's reach, so that each keeps its
/// own columns in registers (the tile shrinks by the halo: 28x28 points of 32x32 threads at
/// T = 2 of a 7-point stencil): 32x32 threads at T = 2, 32x16 at T = 3. A 1024-thread block
/// leaves a thread 64 registers, which f64 register planes of 3 steps outgrow (ptxas spills
/// 40-48 bytes for j3d7pt and j3d27pt on an H100). Deeper, where one position a thread
/// spills even at 512 threads (f64 at T = 4: 108 bytes), 32x8 threads of 4 rows each, their
/// planes in shared rings only. Time-tiled in 2D: rows of 128 threads, where a thread's
/// register planes leave more blocks resident (j2d5pt f32 at T = 4 on an H200: 7 blocks of
/// 128 threads, 44% occupancy, 1070 GCells/s; 3 of 256, 38%, 933; 2 of 512, 50%, 1020;
/// gaussian2d, fdtd2d and j2d9pt-box at T = 2 and 4 3-15% faster than at 256).
fn streaming_defaults(plan: &mut GpuPlan, dims: usize, time_tile: u32) {
    match (dims, time_tile) {
        (3.., 2) => plan.block = [32, 32, 1],
        (3.., 3) => plan.block = [32, 16, 1],
        (3.., 4..) => {
            plan.block = [32, 8, 1];
            plan.elements_per_thread = 4;
        }
        (3.., _) => plan.block = [64, 4, 1],
        (_, 2..) => plan.block = [128, 1, 1],
        // A 2D sweep's block is a row (`Tile::of_planes`): 256 threads, not the 32 of a
        // 32x8 block's first axis, which left half the multiprocessor's threads idle (its
        // 32 resident blocks of 32 threads).
        _ => plan.block = [256, 1, 1],
    }
    plan.plane_reads = PlaneReads::Cache;
}

/// The wavefront's starting block and depth: 256 threads sharing each plane's points, T = 4
/// (each pass reads and writes every field once for 4 steps; its rings hold about 3 planes
/// per stage and step).
fn wavefront_defaults(plan: &mut GpuPlan) {
    plan.block = [256, 1, 1];
    plan.time_tile = 4;
}

/// Refuses a `streaming` block with threads along the axis it sweeps (y in 2D, z in 3D), which
/// the sweep would leave idle: its block covers the plane axes only.
fn check_sweep_block(plan: &GpuPlan, dims: usize, tile: &[usize]) -> Result<(), PlanError> {
    let plane_axes = dims.saturating_sub(1).clamp(1, 2);
    let swept = plan.block[plane_axes..].iter().any(|&b| b > 1);
    if plan.strategy != GpuStrategy::Streaming || !swept {
        return Ok(());
    }
    let given: Vec<String> = tile.iter().map(|t| t.to_string()).collect();
    let example = match plane_axes {
        1 => "`--tile 256`",
        _ => "`--tile 4x64`",
    };
    Err(PlanError::Invalid(format!(
        "`streaming` sweeps the {} axis with a block over the {} only, so `--tile {}` would leave threads idle: give {} size{} (e.g. {example})",
        if dims >= 3 { "z" } else { "y" },
        if plane_axes == 1 {
            "row (x)"
        } else {
            "plane (y and x)"
        },
        given.join("x"),
        plane_axes,
        if plane_axes == 1 { "" } else { "s" },
    )))
}

/// The block `[x, y, z]` a `--tile` value (slowest axis first, 1 to 3 sizes) gives.
fn block_of_tile(tile: &[usize]) -> Result<[u32; 3], PlanError> {
    if tile.is_empty() || tile.len() > 3 {
        return Err(PlanError::Invalid(format!(
            "a GPU block has 1 to 3 sizes (slowest axis first, e.g. `--tile 8x32`), not {}",
            tile.len()
        )));
    }
    let mut block = [1; 3];
    for (axis, &size) in tile.iter().rev().enumerate() {
        block[axis] = u32::try_from(size)
            .map_err(|_| PlanError::Invalid(format!("block size {size} is too large")))?;
    }
    Ok(block)
}

/// The default plan's block before fitting, within the device's per-axis limits (256 threads
/// in a row in 1D, 32x8 otherwise); the caller sets the strategy.
fn initial_gpu_plan(dims: usize, limits: &DeviceLimits) -> GpuPlan {
    let mut plan = GpuPlan::new(GpuStrategy::Naive);
    if dims == 1 {
        plan.block = [256, 1, 1];
    }
    for axis in 0..3 {
        plan.block[axis] = plan.block[axis].min(limits.max_block_dims[axis].max(1));
    }
    plan
}

/// The overlapped strategy's starting tile and depth: 32x32 tiles of 256 threads in 1D and 2D
/// with T = 4 for radius-1 stencils and T = 1 from radius 2 on (on an H100 a 5x5 Gaussian ran
/// fastest at T = 1: each extra step's halo recomputes 4r rows and columns of a (2r+1)^2
/// stencil), 2x8x32 tiles and T = 2 in 3D, where every step's halo costs far more.
fn overlapped_defaults(plan: &mut GpuPlan, traits: &ProgramTraits) {
    let dims = traits.extents.len();
    if dims == 2 {
        plan.elements_per_thread = 4;
    }
    if dims >= 3 {
        plan.block = [32, 4, 2];
        plan.elements_per_thread = 2;
    }
    plan.time_tile = match (dims, traits.radius) {
        (3.., _) => 2,
        (_, 0 | 1) => 4,
        _ => 1,
    };
}

/// Halves the block's larger axis (x or y; z once both are 1) until `fits` accepts the plan
/// (or one thread is left).
fn shrink_to_fit(plan: &mut GpuPlan, fits: impl Fn(&GpuPlan) -> bool) {
    while !fits(plan) && plan.threads_per_block() > 1 {
        let axis = if plan.block[1] > 1 && plan.block[1] * 4 >= plan.block[0] {
            1
        } else if plan.block[0] > 1 {
            0
        } else {
            2
        };
        plan.block[axis] = (plan.block[axis] / 2).max(1);
    }
}

/// What a device allows, as reported by its runtime (CUDA device attributes, OpenCL device
/// info). Rawat's `T_sm`, `T_b`, `M_sm`, `B_sm`, `R_sm`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DeviceLimits {
    /// Device name, for messages.
    pub name: String,
    /// Most threads in one block (`T_b`).
    pub max_threads_per_block: u32,
    /// Most threads per block along x, y, z.
    pub max_block_dims: [u32; 3],
    /// Most blocks along x, y, z of a launch grid.
    pub max_grid_dims: [u64; 3],
    /// Shared (local) memory one block may use, in bytes.
    pub shared_bytes_per_block: usize,
    /// Shared memory of one multiprocessor, in bytes (`M_sm`).
    pub shared_bytes_per_sm: usize,
    /// Most resident threads per multiprocessor (`T_sm`).
    pub max_threads_per_sm: u32,
    /// Most resident blocks per multiprocessor (`B_sm`).
    pub max_blocks_per_sm: u32,
    /// 32-bit registers of one multiprocessor (`R_sm`).
    pub registers_per_sm: u32,
    /// Most registers one thread may use.
    pub max_registers_per_thread: u32,
    /// Threads per warp (wavefront); 1 for CPU devices.
    pub warp_size: u32,
    /// Number of multiprocessors (compute units).
    pub multiprocessors: u32,
    /// Global memory, in bytes.
    pub global_bytes: u64,
}

impl DeviceLimits {
    /// Limits of a typical current NVIDIA GPU (compute capability 8.x/9.x, 48 KiB of static
    /// shared memory per block), for planning without a device at hand.
    pub fn typical_gpu() -> DeviceLimits {
        DeviceLimits {
            name: "typical GPU".into(),
            max_threads_per_block: 1024,
            max_block_dims: [1024, 1024, 64],
            max_grid_dims: [(1 << 31) - 1, 65535, 65535],
            shared_bytes_per_block: 48 * 1024,
            shared_bytes_per_sm: 100 * 1024,
            max_threads_per_sm: 2048,
            max_blocks_per_sm: 32,
            registers_per_sm: 65536,
            max_registers_per_thread: 255,
            warp_size: 32,
            multiprocessors: 80,
            global_bytes: 16 << 30,
        }
    }
}

/// A GPU the planner knows without opening it (`--device h100` on a machine without one):
/// its limits and its memory's peak bandwidth, for `plan`, `emit` and `explain`.
#[derive(Clone, Debug, PartialEq)]
pub struct KnownGpu {
    /// Its limits as the CUDA driver reports them, with the shared memory a block may opt into
    /// (227 KiB on Hopper: kernels past 48 KiB carve their arrays from dynamic shared memory).
    pub limits: DeviceLimits,
    /// Peak memory bandwidth from the data sheet, GB/s (a device-to-device copy reaches
    /// about 90% of it).
    pub peak_gb_s: f64,
}

/// The names `--device` accepts for [`known_gpu`].
pub const KNOWN_GPUS: [&str; 2] = ["h100", "h200"];

/// The built-in table of the GPU `name` names (`h100`: H100 SXM5 80 GB; `h200`: H200 SXM
/// 141 GB; either case), if any.
pub fn known_gpu(name: &str) -> Option<KnownGpu> {
    let hopper = |name: &str, global_bytes: u64| DeviceLimits {
        name: name.into(),
        multiprocessors: 132,
        shared_bytes_per_block: 227 * 1024,
        shared_bytes_per_sm: 228 * 1024,
        global_bytes,
        ..DeviceLimits::typical_gpu()
    };
    match name.to_ascii_lowercase().as_str() {
        "h100" => Some(KnownGpu {
            limits: hopper("NVIDIA H100 SXM5 80GB (built-in table)", 85_031_714_816),
            peak_gb_s: 3350.0,
        }),
        "h200" => Some(KnownGpu {
            limits: hopper("NVIDIA H200 SXM 141GB (built-in table)", 150_754_820_096),
            peak_gb_s: 4800.0,
        }),
        _ => None,
    }
}

/// What one kernel of a lowered program needs per block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelResources {
    /// Kernel name, for messages.
    pub kernel: String,
    /// Threads per block along x, y, z.
    pub block: [u32; 3],
    /// Blocks along x, y, z.
    pub grid: [u64; 3],
    /// Shared memory per block, in bytes (static, or dynamic past 48 KiB on CUDA).
    pub shared_bytes: usize,
    /// Estimated registers per thread.
    pub registers_per_thread: u32,
}

impl KernelResources {
    /// Threads per block.
    pub fn threads(&self) -> u64 {
        self.block.iter().map(|&b| u64::from(b)).product()
    }
}

/// Which limit bounds the number of resident blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limiter {
    /// The per-multiprocessor block limit `B_sm`.
    Blocks,
    /// The per-multiprocessor thread limit `T_sm`.
    Threads,
    /// Shared memory `M_sm`.
    SharedMemory,
    /// The register file `R_sm`.
    Registers,
}

/// Rawat §2: resident blocks per multiprocessor and the resulting occupancy.
#[derive(Clone, Debug, PartialEq)]
pub struct Occupancy {
    /// `min(B_sm, T_sm / sz_b, M_sm / (c sz_b), R_sm / (t_reg sz_b))`.
    pub blocks_per_sm: u32,
    /// Active warps over the most warps a multiprocessor holds (0..=1).
    pub occupancy: f64,
    /// The binding limit.
    pub limited_by: Limiter,
}

/// The registers per thread a kernel gets: its estimate, but no more than a thread may have or
/// than lets one block of it reside. Every kernel declares its block size
/// (`__launch_bounds__`, `reqd_work_group_size`), so the compiler keeps within that and spills
/// the rest to local memory; the estimate alone (one register per variable) would refuse
/// kernels that compile and run, such as a 9x9x9 box stencil's 729 loads.
pub fn bounded_registers(limits: &DeviceLimits, kernel: &KernelResources) -> u32 {
    let warp = u64::from(limits.warp_size.max(1));
    let block_threads = kernel.threads().max(1).div_ceil(warp) * warp;
    let per_block = u64::from(limits.registers_per_sm) / block_threads;
    let cap = u32::try_from(per_block).unwrap_or(u32::MAX);
    kernel
        .registers_per_thread
        .min(limits.max_registers_per_thread)
        .min(cap)
}

/// Computes the occupancy of a kernel (Rawat's `min_b`); a kernel that fits no block at all
/// gets 0 blocks.
pub fn occupancy(limits: &DeviceLimits, kernel: &KernelResources) -> Occupancy {
    let threads = kernel.threads().max(1);
    let warp = u64::from(limits.warp_size.max(1));
    let warps_per_block = threads.div_ceil(warp);
    let candidates = [
        (u64::from(limits.max_blocks_per_sm), Limiter::Blocks),
        (
            u64::from(limits.max_threads_per_sm) / (warps_per_block * warp),
            Limiter::Threads,
        ),
        (
            limits
                .shared_bytes_per_sm
                .checked_div(kernel.shared_bytes)
                .map_or(u64::MAX, |b| b as u64),
            Limiter::SharedMemory,
        ),
        (
            u64::from(limits.registers_per_sm)
                / (u64::from(bounded_registers(limits, kernel).max(1)) * warps_per_block * warp),
            Limiter::Registers,
        ),
    ];
    let (blocks, limited_by) = candidates
        .into_iter()
        .min_by_key(|(b, _)| *b)
        .unwrap_or((0, Limiter::Blocks));
    let max_warps = (u64::from(limits.max_threads_per_sm) / warp).max(1);
    let occupancy = (blocks * warps_per_block) as f64 / max_warps as f64;
    Occupancy {
        blocks_per_sm: u32::try_from(blocks).unwrap_or(u32::MAX),
        occupancy: occupancy.min(1.0),
        limited_by,
    }
}

/// Refuses a kernel over the device's thread, block-shape, grid or shared-memory limits (with
/// a suggestion), else returns its occupancy.
pub fn check_kernel(
    limits: &DeviceLimits,
    kernel: &KernelResources,
) -> Result<Occupancy, PlanError> {
    let threads = kernel.threads();
    if threads > u64::from(limits.max_threads_per_block) {
        return Err(PlanError::Threads {
            kernel: kernel.kernel.clone(),
            block: kernel.block,
            max: limits.max_threads_per_block,
            device: limits.name.clone(),
        });
    }
    for axis in 0..3 {
        if kernel.block[axis] > limits.max_block_dims[axis] {
            return Err(PlanError::BlockShape {
                kernel: kernel.kernel.clone(),
                axis,
                size: kernel.block[axis],
                max: limits.max_block_dims[axis],
                device: limits.name.clone(),
            });
        }
        if kernel.grid[axis] > limits.max_grid_dims[axis] {
            return Err(PlanError::Grid {
                kernel: kernel.kernel.clone(),
                axis,
                blocks: kernel.grid[axis],
                max: limits.max_grid_dims[axis],
            });
        }
    }
    if kernel.shared_bytes > limits.shared_bytes_per_block {
        return Err(PlanError::SharedMemory {
            kernel: kernel.kernel.clone(),
            needs: kernel.shared_bytes,
            has: limits.shared_bytes_per_block,
            device: limits.name.clone(),
        });
    }
    let occupancy = occupancy(limits, kernel);
    if occupancy.blocks_per_sm == 0 {
        return Err(PlanError::Registers {
            kernel: kernel.kernel.clone(),
            registers: kernel.registers_per_thread,
            threads,
            available: limits.registers_per_sm,
        });
    }
    Ok(occupancy)
}

/// Refuses a program whose buffers exceed the device's global memory, before allocation.
pub fn check_memory(limits: &DeviceLimits, bytes: u64) -> Result<(), PlanError> {
    if bytes > limits.global_bytes {
        return Err(PlanError::DeviceMemory {
            needs: bytes,
            has: limits.global_bytes,
            device: limits.name.clone(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan `request` gives a fusable radius-1 stencil on a 64x64 grid, typical device.
    fn plan_square(request: &PlanRequest, backend: &'static str) -> Result<GpuPlan, PlanError> {
        let limits = DeviceLimits::typical_gpu();
        plan_gpu(
            &ProgramTraits::stencil(&[64, 64]),
            request,
            backend,
            &limits,
            |_| true,
        )
    }

    /// The CUDA plan `request` gives a radius-1 stencil on `extents`, every plan fitting.
    fn plan_stencil(
        extents: &[usize],
        request: &PlanRequest,
        limits: &DeviceLimits,
    ) -> Result<GpuPlan, PlanError> {
        plan_gpu(
            &ProgramTraits::stencil(extents),
            request,
            "cuda",
            limits,
            |_| true,
        )
    }

    fn kernel(block: [u32; 3], shared_bytes: usize, registers_per_thread: u32) -> KernelResources {
        KernelResources {
            kernel: "k".into(),
            block,
            grid: [1, 1, 1],
            shared_bytes,
            registers_per_thread,
        }
    }

    #[test]
    fn occupancy_follows_rawat_min_b() {
        // Rawat's K20c example: 32x16 blocks with 8 KiB of shared memory -> 4 blocks, all threads.
        let k20 = DeviceLimits {
            max_threads_per_sm: 2048,
            max_blocks_per_sm: 16,
            shared_bytes_per_sm: 48 * 1024,
            registers_per_sm: 65536,
            ..DeviceLimits::typical_gpu()
        };
        let o = occupancy(&k20, &kernel([32, 16, 1], 8192, 32));
        assert_eq!(o.blocks_per_sm, 4);
        assert_eq!(o.occupancy, 1.0);
        // 128 threads, 2 KiB: 16 blocks, bounded by B_sm.
        let o = occupancy(&k20, &kernel([128, 1, 1], 2048, 16));
        assert_eq!((o.blocks_per_sm, o.limited_by), (16, Limiter::Blocks));
        // Shared memory bound: 40 KiB per block leaves one block of 256 threads.
        let o = occupancy(&k20, &kernel([32, 8, 1], 40 * 1024, 16));
        assert_eq!((o.blocks_per_sm, o.limited_by), (1, Limiter::SharedMemory));
        assert_eq!(o.occupancy, 0.125);
        // An estimate beyond what the launch bounds allow: the compiler spills, one block runs.
        let loads = kernel([32, 8, 1], 0, 753);
        assert_eq!(bounded_registers(&k20, &loads), 255);
        let o = occupancy(&k20, &loads);
        assert_eq!((o.blocks_per_sm, o.limited_by), (1, Limiter::Registers));
        assert!(check_kernel(&k20, &loads).is_ok());
        assert_eq!(bounded_registers(&k20, &kernel([32, 32, 1], 0, 100)), 64);
    }

    #[test]
    fn refusals_name_the_limit_and_suggest_a_fix() {
        let limits = DeviceLimits::typical_gpu();
        let e = check_kernel(&limits, &kernel([64, 32, 1], 0, 32)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "kernel `k`: a block of 64x32x1 = 2048 threads exceeds the 1024 threads per block of typical GPU; use a smaller block, e.g. --tile 32x32"
        );
        let e = check_kernel(&limits, &kernel([32, 8, 1], 64 * 1024, 32)).unwrap_err();
        assert!(e.to_string().contains("needs 65536 bytes of shared memory per block, but typical GPU gives a block 49152 bytes; use a smaller block"), "{e}");
        let e = check_kernel(&limits, &kernel([32, 8, 128], 0, 32)).unwrap_err();
        assert!(matches!(e, PlanError::Threads { .. }), "{e}");
        let e = check_kernel(&limits, &kernel([1, 1, 128], 0, 32)).unwrap_err();
        assert!(
            e.to_string()
                .contains("128 threads along z exceeds the limit of 64"),
            "{e}"
        );
        let e = check_memory(&limits, 40 << 30).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the program needs 40.00 GiB of device memory, typical GPU has 16.00 GiB; use a smaller grid or another device"
        );
        assert!(check_kernel(&limits, &kernel([32, 8, 1], 4096, 32)).is_ok());
    }

    #[test]
    fn plan_checks_zeros_and_time_tiles() {
        let mut plan = GpuPlan::new(GpuStrategy::Tiled);
        assert!(plan.check().is_ok());
        plan.block[1] = 0;
        assert_eq!(
            plan.check().unwrap_err().to_string(),
            "the block size along y is 0; it must be at least 1"
        );
        plan.block[1] = 8;
        plan.time_tile = 0;
        assert_eq!(
            plan.check().unwrap_err().to_string(),
            "the time tile is 0; it must be at least 1"
        );
        plan.time_tile = 3;
        assert!(
            plan.check()
                .unwrap_err()
                .to_string()
                .contains("use a time tile of 1")
        );
        assert_eq!(
            GpuStrategy::from_strategy(Strategy::Streaming, "cuda"),
            Ok(GpuStrategy::Streaming)
        );
        plan.strategy = GpuStrategy::Overlapped;
        assert!(plan.check().is_ok());
        plan.time_tile = 17;
        assert!(
            plan.check()
                .unwrap_err()
                .to_string()
                .contains("exceeds the limit of 16")
        );
        // Prefetching belongs to streaming time tiles only.
        plan.time_tile = 2;
        plan.prefetch = 3;
        assert!(
            plan.check()
                .unwrap_err()
                .to_string()
                .contains("prefetching 3 plane(s) ahead needs streaming time tiles")
        );
        plan.strategy = GpuStrategy::Streaming;
        assert!(plan.check().is_ok());
        plan.time_tile = 1;
        assert!(plan.check().is_err());
        // Reordered sums belong to single-step streaming through the cache.
        plan.prefetch = 0;
        plan.reordered_sums = true;
        assert!(
            plan.check()
                .unwrap_err()
                .to_string()
                .contains("reordered sums belong to single-step streaming")
        );
        plan.plane_reads = PlaneReads::Cache;
        assert!(plan.check().is_ok());
        plan.time_tile = 2;
        assert!(plan.check().is_err());
        assert_eq!(
            GpuStrategy::from_strategy(Strategy::Blocked, "opencl")
                .unwrap_err()
                .to_string(),
            "the opencl backend has no strategy `blocked`; choose one of: naive, tiled, streaming, overlapped, wavefront"
        );
        assert_eq!(
            GpuPlan::new(GpuStrategy::Streaming).describe(),
            "streaming block=32x8x1 E=1 chunk=all"
        );
    }

    #[test]
    fn requests_override_the_default_plan() {
        let request = PlanRequest {
            arithmetic: Arithmetic::Exact,
            strategy: Some(Strategy::Naive),
            tile: Some(vec![4, 16]),
            time_tile: Some(1),
            ..PlanRequest::default()
        };
        let plan = plan_square(&request, "opencl").unwrap();
        assert_eq!(
            (plan.strategy, plan.block, plan.exact),
            (GpuStrategy::Naive, [16, 4, 1], true)
        );
        let default = plan_square(&PlanRequest::default(), "opencl");
        assert!(!default.unwrap().exact);
    }

    #[test]
    fn bad_requests_are_refused_with_the_alternatives() {
        let refuse = |request: PlanRequest| plan_square(&request, "cuda").unwrap_err().to_string();
        let cases = [
            (
                PlanRequest {
                    strategy: Some(Strategy::Parallel),
                    ..PlanRequest::default()
                },
                "choose one of: naive, tiled, streaming, overlapped, wavefront",
            ),
            (
                PlanRequest {
                    tile: Some(vec![1, 2, 3, 4]),
                    ..PlanRequest::default()
                },
                "1 to 3 sizes",
            ),
            (
                PlanRequest {
                    tile: Some(vec![8, 0]),
                    ..PlanRequest::default()
                },
                "at least 1",
            ),
            (
                PlanRequest {
                    strategy: Some(Strategy::Tiled),
                    time_tile: Some(4),
                    ..PlanRequest::default()
                },
                "needs the `overlapped`, `streaming` or `wavefront` strategy",
            ),
            (
                PlanRequest {
                    arithmetic: Arithmetic::F64,
                    ..PlanRequest::default()
                },
                "reference",
            ),
            (
                PlanRequest {
                    threads: Some(2),
                    ..PlanRequest::default()
                },
                "drop `--threads`",
            ),
        ];
        for (request, expected) in cases {
            let message = refuse(request);
            assert!(message.contains(expected), "{message}");
        }
    }

    #[test]
    fn a_requested_strategy_gets_a_block_that_fits_it() {
        let limits = DeviceLimits::typical_gpu();
        let request = PlanRequest {
            strategy: Some(Strategy::Naive),
            ..PlanRequest::default()
        };
        // Naive kernels of this program fit only 64 threads; the default (streaming) all 256.
        let fits = |p: &GpuPlan| p.strategy != GpuStrategy::Naive || p.threads_per_block() <= 64;
        let plan = plan_gpu(
            &ProgramTraits::stencil(&[16, 16, 16]),
            &request,
            "cuda",
            &limits,
            fits,
        )
        .expect("plans");
        assert_eq!(plan.strategy, GpuStrategy::Naive);
        assert_eq!(plan.threads_per_block(), 64, "{plan:?}");
        let tiled = PlanRequest {
            tile: Some(vec![8, 32]),
            ..request
        };
        let given = plan_gpu(
            &ProgramTraits::stencil(&[16, 16, 16]),
            &tiled,
            "cuda",
            &limits,
            fits,
        )
        .expect("plans");
        assert_eq!(
            given.threads_per_block(),
            256,
            "a given block is kept as given"
        );
    }

    #[test]
    fn plane_reads_are_asked_of_streaming_plans_only() {
        let ask = |strategy, reads| {
            let request = PlanRequest {
                strategy: Some(strategy),
                plane_reads: Some(reads),
                ..PlanRequest::default()
            };
            plan_square(&request, "cuda")
        };
        let shared = ask(Strategy::Streaming, PlaneReads::Shared).expect("plans");
        assert_eq!(shared.plane_reads, PlaneReads::Shared);
        assert!(!shared.describe().contains("plane="));
        let error = ask(Strategy::Naive, PlaneReads::Cache)
            .unwrap_err()
            .to_string();
        assert!(error.contains("this plan's strategy is `naive`"), "{error}");
        assert_eq!(PlaneReads::from_name("cache"), Some(PlaneReads::Cache));
        assert_eq!(PlaneReads::from_name("l1"), None);
    }

    #[test]
    fn streaming_sweeps_chunks_of_sixteen_planes_and_reads_its_plane_through_the_cache() {
        let h100 = known_gpu("H100").unwrap().limits;
        let streaming = PlanRequest {
            strategy: Some(Strategy::Streaming),
            ..PlanRequest::default()
        };
        let plan = |extents: &[usize]| plan_stencil(extents, &streaming, &h100).expect("plans");
        let cube = plan(&[512, 512, 512]);
        assert_eq!(
            (cube.block, cube.stream_chunk, cube.plane_reads),
            ([64, 4, 1], Some(16), PlaneReads::Cache)
        );
        assert_eq!(
            cube.describe(),
            "streaming block=64x4x1 E=1 chunk=16 plane=cache"
        );
        // A 2D sweep's block is a row of 256 threads.
        let square = plan(&[8192, 8192]);
        assert_eq!((square.block, square.stream_chunk), ([256, 1, 1], Some(16)));
        // No longer than one chunk: one sweep.
        assert_eq!(plan(&[16, 8, 64]).stream_chunk, None);
        assert_eq!(plan(&[17, 8, 64]).stream_chunk, Some(16));
        let tiled = plan_gpu(
            &ProgramTraits::stencil(&[8192, 8192]),
            &PlanRequest {
                strategy: Some(Strategy::Tiled),
                ..PlanRequest::default()
            },
            "cuda",
            &h100,
            |_| true,
        );
        assert_eq!(
            tiled.expect("plans").stream_chunk,
            None,
            "tiled does not stream"
        );
    }

    #[test]
    fn the_built_in_hopper_tables_differ_in_memory_only() {
        let (h100, h200) = (known_gpu("H100").unwrap(), known_gpu("h200").unwrap());
        assert_eq!(h100.limits.multiprocessors, 132);
        assert_eq!(h100.limits.shared_bytes_per_block, 227 * 1024);
        assert!(h200.limits.global_bytes > h100.limits.global_bytes);
        assert!(h200.peak_gb_s > h100.peak_gb_s);
        assert!(KNOWN_GPUS.iter().all(|name| known_gpu(name).is_some()));
        assert!(known_gpu("a100").is_none());
    }

    #[test]
    fn streaming_with_a_time_tile_plans_streaming_time_tiles() {
        let limits = DeviceLimits::typical_gpu();
        let request = PlanRequest {
            strategy: Some(Strategy::Streaming),
            time_tile: Some(4),
            ..PlanRequest::default()
        };
        let plan = |extents: &[usize]| plan_stencil(extents, &request, &limits).expect("plans");
        let volume = plan(&[512, 512, 512]);
        assert!(volume.fuses_steps());
        assert_eq!(
            (
                volume.block,
                volume.elements_per_thread,
                volume.stream_chunk
            ),
            ([32, 8, 1], 4, Some(64)),
            "32x8 threads of 4 rows at T = 4, chunks of 16 points per step"
        );
        let plane = plan(&[8192, 8192]);
        assert_eq!(
            (plane.block, plane.stream_chunk),
            ([128, 1, 1], Some(32)),
            "rows of 128 threads in 2D, chunks of 32 rows at T = 4"
        );
        assert_eq!(
            plan(&[32, 64]).stream_chunk,
            None,
            "a short axis is swept whole"
        );
        let single = GpuPlan::new(GpuStrategy::Streaming);
        assert!(!single.fuses_steps() && GpuPlan::new(GpuStrategy::Overlapped).fuses_steps());
    }

    #[test]
    fn the_wavefront_sweeps_2d_and_3d_grids_four_steps_a_pass() {
        let limits = DeviceLimits::typical_gpu();
        let request = PlanRequest {
            strategy: Some(Strategy::Wavefront),
            ..PlanRequest::default()
        };
        let plan = |extents: &[usize]| plan_stencil(extents, &request, &limits);
        let volume = plan(&[512, 512, 512]).expect("plans");
        assert_eq!((volume.block, volume.time_tile), ([256, 1, 1], 4));
        assert!(volume.fuses_steps());
        for extents in [&[64][..], &[4, 4, 4, 4]] {
            let refused = plan(extents).unwrap_err().to_string();
            assert!(refused.contains("the `wavefront` strategy"), "{refused}");
        }
    }

    #[test]
    fn a_time_tile_asks_for_overlapped_tiling() {
        let limits = DeviceLimits::typical_gpu();
        let request = PlanRequest {
            time_tile: Some(3),
            ..PlanRequest::default()
        };
        let plan = plan_square(&request, "opencl").expect("plans");
        assert_eq!(
            (plan.strategy, plan.time_tile, plan.elements_per_thread),
            (GpuStrategy::Overlapped, 3, 4)
        );
        let request = PlanRequest {
            strategy: Some(Strategy::Overlapped),
            ..PlanRequest::default()
        };
        let plan = plan_gpu(
            &ProgramTraits::stencil(&[16, 16, 16]),
            &request,
            "cuda",
            &limits,
            |_| true,
        )
        .expect("plans");
        assert_eq!((plan.block, plan.time_tile), ([32, 4, 2], 2));
        // A 3D block that never fits shrinks along z too, down to one thread.
        let never = plan_gpu(
            &ProgramTraits::stencil(&[16, 16, 16]),
            &request,
            "cuda",
            &limits,
            |_| false,
        )
        .expect("plans");
        assert_eq!(never.block, [1, 1, 1]);
        let four = plan_gpu(
            &ProgramTraits::stencil(&[4, 4, 4, 4]),
            &request,
            "cuda",
            &limits,
            |_| true,
        )
        .unwrap_err();
        assert!(
            four.to_string()
                .contains("tiles up to 3 axes and this grid has 4")
        );
    }

    #[test]
    fn an_open_strategy_plans_naive_or_overlapped_and_shrinks_until_it_fits() {
        let limits = DeviceLimits::typical_gpu();
        let plan =
            |traits: &ProgramTraits, request: &PlanRequest, fits: &dyn Fn(&GpuPlan) -> bool| {
                plan_gpu(traits, request, "cuda", &limits, fits).expect("plans")
            };
        let all = |_: &GpuPlan| true;
        let square = ProgramTraits::stencil(&[64, 64]);
        let open = plan(&square, &PlanRequest::default(), &all);
        assert_eq!(
            (open.strategy, open.block),
            (GpuStrategy::Naive, [32, 8, 1])
        );
        let fused = PlanRequest {
            time_tile: Some(4),
            ..PlanRequest::default()
        };
        let overlapped = plan(&square, &fused, &all);
        assert_eq!(
            (
                overlapped.strategy,
                overlapped.block,
                overlapped.elements_per_thread,
                overlapped.time_tile
            ),
            (GpuStrategy::Overlapped, [32, 8, 1], 4, 4)
        );
        let wide = ProgramTraits {
            radius: 2,
            ..square.clone()
        };
        let overlapped_default = PlanRequest {
            strategy: Some(Strategy::Overlapped),
            ..PlanRequest::default()
        };
        assert_eq!(
            plan(&wide, &overlapped_default, &all).time_tile,
            1,
            "radius 2: T = 1"
        );
        let small = plan(&square, &PlanRequest::default(), &|p| {
            p.threads_per_block() <= 64
        });
        assert_eq!(small.block, [16, 4, 1]);
        let line = plan(
            &ProgramTraits::stencil(&[64]),
            &PlanRequest::default(),
            &all,
        );
        assert_eq!(line.block, [256, 1, 1]);
        let four = plan(
            &ProgramTraits::stencil(&[4, 4, 4, 4]),
            &PlanRequest::default(),
            &|_| false,
        );
        assert_eq!(
            (four.strategy, four.threads_per_block()),
            (GpuStrategy::Naive, 1)
        );
    }

    #[test]
    fn a_streaming_block_with_threads_along_the_swept_axis_is_refused() {
        let limits = DeviceLimits::typical_gpu();
        let streaming = |tile: Vec<usize>| PlanRequest {
            strategy: Some(Strategy::Streaming),
            tile: Some(tile),
            ..PlanRequest::default()
        };
        let square = [64, 64];
        let refused = plan_stencil(&square, &streaming(vec![8, 32]), &limits).unwrap_err();
        let message = refused.to_string();
        assert!(
            message.contains("sweeps the y axis") && message.contains("`--tile 8x32`"),
            "{message}"
        );
        let row = plan_stencil(&square, &streaming(vec![1, 128]), &limits).expect("a row");
        assert_eq!(row.block, [128, 1, 1]);
        let cube = [16, 16, 16];
        let refused = plan_stencil(&cube, &streaming(vec![2, 4, 32]), &limits).unwrap_err();
        assert!(
            refused.to_string().contains("sweeps the z axis"),
            "{refused}"
        );
        let plane = plan_stencil(&cube, &streaming(vec![4, 32]), &limits).expect("a plane");
        assert_eq!(plane.block, [32, 4, 1]);
        // Other strategies take a block along every axis.
        let tiled = PlanRequest {
            strategy: Some(Strategy::Tiled),
            ..streaming(vec![8, 32])
        };
        assert!(plan_stencil(&square, &tiled, &limits).is_ok());
    }
}
