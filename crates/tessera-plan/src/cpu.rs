//! CPU plans: strategies and tile parameters for the generated-C backend.
//!
//! A [`CpuPlan`] is plain data: the strategy, the spatial tile, the time-tile depth, the thread
//! count and whether floating point is exact. [`plan_cpu`] validates what the user asked for and
//! fills in the rest from a small model of the machine ([`CpuMachine`]):
//!
//! - programs whose reads wrap around periodic borders, and grids that fit in the last-level
//!   cache, run `parallel` (time tiling gains nothing there, or would need whole-axis tiles);
//! - grids larger than half the L3 run `wavefront` when it applies (one stage, every used field
//!   updated by it and read at neighbours, dense domain) and the stencil is memory-bound (fewer
//!   than 20 reads per point): in 1D/2D 16 fused steps (fewer if the rings do not fit) over
//!   bands 512 points wide (narrower if needed), in 3D 4 fused steps over bands of full rows
//!   (32 deep or fewer), so that the hot window of the per-step ring buffers fits in 60% of L2;
//!   in 3D only while the bands' ghost work stays within 25% (radius-1 stencils);
//! - other 3D programs run `parallel` (narrow 3D bands with wide ghost zones cost more than the
//!   traffic they save);
//! - other 1D/2D programs, and compute-bound ones (20 or more values moved per point; a
//!   non-exact box-shaped linear stage counts its column-sum loads and stores, see
//!   [`crate::reuse`], so a separable 5x5 Gaussian counts 11 and streams), run `overlapped`
//!   with 8 fused steps:
//!   per-thread tiles sized so that
//!   the tile's scratch buffers (all fields, with the ghost zone of the fused steps) fit in half
//!   the L2 cache; except compute-bound programs whose ghost zone would grow a tile by more
//!   than 60% (radius 3 and up), which run `parallel`.

use std::fmt;

use serde::{Deserialize, Serialize};
use tessera_analysis::chains::{MIN_CHAIN_TERMS, chain_terms, sum_chains};
use tessera_analysis::tiling::{TileRegions, tile_regions};
use tessera_analysis::{BoundProgram, FieldRole, Rect};
use tessera_ir::{Border, Id, Stage};

use crate::error::PlanError;
use crate::isa::TargetIsa;
use crate::plan::fusion_refusal;
use crate::request::{Arithmetic, DeviceSelection, PlanRequest, Strategy};
use crate::reuse::{ColumnSums, column_form, column_sums, lane_type};

/// How the generated C code walks the grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CpuStrategy {
    /// One thread, plain loops over each stage's domain (the baseline).
    Naive,
    /// OpenMP over the slowest axis, vectorized innermost loops.
    Parallel,
    /// Spatial blocks of `tile` points, distributed over threads, one stage at a time.
    Blocked,
    /// Overlapped (ghost-zone) time tiling: each tile computes `time_tile` fused steps in
    /// thread-private scratch buffers, then writes its core to the other global buffer.
    Overlapped,
    /// Pipelined wavefront: bands overlapped (ghost zones) across the faster axes stream the
    /// slowest axis once per `time_tile` fused steps, keeping a window of rows (planes) of every
    /// fused step in thread-private ring buffers; no redundant work along the streamed axis.
    Wavefront,
}

impl CpuStrategy {
    /// Every strategy, in the order of `--strategy` help texts.
    pub const ALL: [CpuStrategy; 5] = [
        CpuStrategy::Naive,
        CpuStrategy::Parallel,
        CpuStrategy::Blocked,
        CpuStrategy::Overlapped,
        CpuStrategy::Wavefront,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        self.strategy().name()
    }

    /// The same strategy among every backend's.
    pub fn strategy(self) -> Strategy {
        match self {
            CpuStrategy::Naive => Strategy::Naive,
            CpuStrategy::Parallel => Strategy::Parallel,
            CpuStrategy::Blocked => Strategy::Blocked,
            CpuStrategy::Overlapped => Strategy::Overlapped,
            CpuStrategy::Wavefront => Strategy::Wavefront,
        }
    }

    /// The CPU strategy `strategy` names, or an error listing the CPU strategies.
    pub fn from_strategy(strategy: Strategy) -> Result<CpuStrategy, PlanError> {
        CpuStrategy::ALL
            .into_iter()
            .find(|s| s.strategy() == strategy)
            .ok_or_else(|| PlanError::UnknownStrategy {
                backend: "cpu",
                strategy: strategy.name().to_string(),
                choices: CpuStrategy::ALL.iter().map(|s| s.name()).collect(),
            })
    }

    /// Whether a pass computes several fused steps (time tiling); the others compute one step
    /// at a time, any number of steps per call.
    pub fn fuses_steps(self) -> bool {
        matches!(self, CpuStrategy::Overlapped | CpuStrategy::Wavefront)
    }
}

/// The facts about the machine that planning uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuMachine {
    /// Threads to use by default.
    pub threads: usize,
    /// L2 cache per core, in bytes.
    pub l2_bytes: u64,
    /// Last-level cache (shared), in bytes.
    pub l3_bytes: u64,
    /// The best instruction set the host runs (the default target).
    pub isa: TargetIsa,
}

/// A complete CPU plan: every decision the C generator and the executable follow. Code
/// generation is a pure function of (program, plan); what follows from the decisions (buffer
/// extents, index width) is the plan's [`CpuLayout`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuPlan {
    /// The strategy.
    pub strategy: CpuStrategy,
    /// Spatial tile per axis, slowest first (for `parallel`: one slowest-axis index per task).
    pub tile: Vec<usize>,
    /// Fused steps per pass (1 unless the strategy fuses steps).
    pub time_tile: u32,
    /// OpenMP threads.
    pub threads: usize,
    /// Bitwise-exact floating point (no contraction, no reassociation).
    pub exact: bool,
    /// The instruction set the code is written for: vector width and registers.
    pub isa: TargetIsa,
    /// How each stage's interior rows are computed, in program order.
    pub stages: Vec<CpuStagePlan>,
    /// `wavefront` in 3D only: shifted-lanes rows (not column sums) compute two planes at a
    /// time (unroll-and-jam of the streamed axis), so that the plane between them is loaded
    /// once for both; every fused step then advances an even number of planes.
    pub plane_pairs: bool,
}

/// How one stage's interior rows are computed (its border rows always run the plain loop).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuStagePlan {
    /// The box-shaped linear stage runs as column sums ([`crate::reuse`]): non-exact plans
    /// other than `naive` (the plain per-point loop every strategy is compared with), where
    /// the form pays ([`column_sums`]).
    pub column_sums: bool,
    /// The rows run on whole vectors with in-register shifts
    /// ([`shifted_lanes`](crate::lanes::shifted_lanes)): every plan other than `naive`, exact
    /// ones included (each lane computes what the scalar loop computes, in the same order);
    /// column-sum stages only where their rows are long enough ([`lane_type`]). With
    /// `column_sums`, the sums run on lanes; without, through a buffer.
    pub lanes: bool,
    /// Column sums bound by their arithmetic
    /// ([`ColumnSums::bound_by_arithmetic`]) prefer 512-bit vectors on AVX-512 targets: twice
    /// the operations per instruction. Elsewhere the compiler's default width (256 bits under
    /// `-march=native` on x86) stays, because wider vectors slowed the load-bound loops.
    /// (Shifted lanes are 512-bit vectors and prefer them always.)
    pub wide_vectors: bool,
    /// Column sums keep their columns in registers where that loads less
    /// ([`ColumnSums::keeps_columns_in_registers`] buffered,
    /// [`ColumnSums::keeps_lane_columns_in_registers`] on lanes).
    pub columns_in_registers: bool,
    /// The stage's long sums ([`sum_chains`]) run as loops over tables of their coefficients
    /// and offsets, in written order, instead of written out term by term: the generated code
    /// then stays small however many points the stencil has, and the C compiler fast. Border
    /// nests run them per point; interiors over row chunks, a vectorised pass per group of
    /// terms, unless column sums run the interior.
    ///
    /// Planned where the stage has at least [`TERM_LOOP_MIN_TERMS`] terms in chains: in
    /// written order (exact and naive plans) they are 1.6-3.5x faster than written-out sums
    /// on shifted lanes; where the plan may reorder sums, column sums stay in the interior
    /// below [`REORDERED_TERM_LOOP_MIN_TERMS`] terms (faster there), and term loops replace
    /// them above it (2x faster on the 729-point box). Measured on an AVX2 machine.
    #[serde(default)]
    pub term_loops: bool,
}

/// The fewest chain terms ([`sum_chains`]) a stage needs to run term loops
/// ([`CpuStagePlan::term_loops`]), and at which plans summing in written order choose them.
pub const TERM_LOOP_MIN_TERMS: usize = 32;

/// The fewest chain terms at which plans that may reorder sums run their interiors as term
/// loops instead of column sums.
pub const REORDERED_TERM_LOOP_MIN_TERMS: usize = 256;

/// The number of terms in `stage`'s sum chains.
fn stage_chain_terms(bound: &BoundProgram, stage: Id<Stage>) -> usize {
    chain_terms(&sum_chains(bound.checked(), stage, MIN_CHAIN_TERMS))
}

/// What follows from a [`CpuPlan`]'s decisions for one program: buffer extents and the index
/// width. Derived, never stored, so that a plan read from a file cannot disagree with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuLayout {
    /// Linear indices need 64 bits (some index of a grid or scratch buffer reaches 2^31).
    pub index64: bool,
    /// `overlapped`: extents of the per-thread scratch buffers (the largest tile hull).
    /// `wavefront`: extents of one ring buffer (ring rows along the slowest axis, then the
    /// largest band hull along the others). Empty for other strategies.
    pub scratch_extents: Vec<usize>,
    /// `wavefront` only: slowest-axis indices every fused step advances per pipeline iteration
    /// (0 for other strategies).
    pub stream_rows: usize,
    /// `wavefront` only: points of padding in front of every ring row, so that the first point
    /// a band of whole rows computes starts a 64-byte line (0 for other strategies).
    pub ring_front: usize,
}

impl CpuPlan {
    /// Some stage runs as column sums.
    pub fn column_sums(&self) -> bool {
        self.stages.iter().any(|s| s.column_sums)
    }

    /// Some stage runs its rows on shifted lanes.
    pub fn lane_shifts(&self) -> bool {
        self.stages.iter().any(|s| s.lanes)
    }

    /// Some stage runs its long sums as term loops.
    pub fn term_loops(&self) -> bool {
        self.stages.iter().any(|s| s.term_loops)
    }

    /// Some stage's column sums prefer 512-bit vectors.
    pub fn wide_vectors(&self) -> bool {
        self.stages.iter().any(|s| s.wide_vectors)
    }

    /// Buffer extents and index width for `bound` under this plan.
    pub fn layout(&self, bound: &BoundProgram) -> CpuLayout {
        let dims = bound.extents.len();
        let depth = self.time_tile as usize;
        let (scratch_extents, stream_rows, ring_front) = match self.strategy {
            CpuStrategy::Overlapped => (
                scratch_extents(bound, depth, &tile_cores(&bound.extents, &self.tile)),
                0,
                0,
            ),
            CpuStrategy::Wavefront => {
                let mut extents =
                    scratch_extents(bound, depth, &tile_cores(&bound.extents, &self.tile));
                // A buffered column-sum row starts loading at its smallest x offset; on
                // shifted lanes it loads whole vectors from the row's first point.
                let lead = (bound.program().stages.ids().zip(&self.stages))
                    .find(|(_, s)| s.column_sums && !s.lanes)
                    .and_then(|(stage, _)| column_form(bound, stage))
                    .map_or(0, |sums| sums.reach.0);
                let front = ring_front(bound, depth, &self.tile, lead);
                extents[dims - 1] += front;
                pad_rows(bound, &mut extents);
                let mut rows = wavefront_rows(bound.extents[0], &extents[1..]);
                if self.plane_pairs {
                    rows = rows.next_multiple_of(2);
                }
                extents[0] = ring_rows(rows, stream_skew(bound));
                pad_ring_slices(bound, &mut extents);
                (extents, rows, front)
            }
            _ => (Vec::new(), 0, 0),
        };
        let scratch_cells: u128 = scratch_extents.iter().map(|&e| e as u128).product();
        let reach = max_reach(bound) as u128;
        let largest = (bound.cell_count() as u128).max(scratch_cells) + reach * 2 + 1;
        CpuLayout {
            index64: largest >= 1 << 31,
            scratch_extents,
            stream_rows,
            ring_front,
        }
    }

    /// Checks that this plan (read from a file, say) can run `bound`: every field in range for
    /// the program's grid and stages, and every stage form one the stage has. Errors name the
    /// plan field, its value and the limit.
    pub fn check(&self, bound: &BoundProgram) -> Result<(), PlanError> {
        self.check_shape(bound)?;
        let program = bound.program();
        if self.stages.len() != program.stages.len() {
            return Err(PlanError::field(
                "cpu.stages",
                format!("a list of {}", self.stages.len()),
                format!(
                    "program `{}` has {} stages: give one entry per stage, in program order",
                    program.name,
                    program.stages.len()
                ),
            ));
        }
        for ((stage, body), form) in program.stages.iter().zip(&self.stages) {
            self.check_stage(bound, stage, &body.name, form)?;
        }
        let pairs_apply = self.strategy == CpuStrategy::Wavefront
            && bound.extents.len() == 3
            && self.stages.iter().any(|s| s.lanes && !s.column_sums);
        if self.plane_pairs && !pairs_apply {
            return Err(PlanError::field(
                "cpu.plane_pairs",
                true,
                "plane pairs need the 3D wavefront and a stage on shifted lanes without column sums",
            ));
        }
        Ok(())
    }

    /// The strategy, tile, time tile and thread count against the grid.
    fn check_shape(&self, bound: &BoundProgram) -> Result<(), PlanError> {
        let dims = bound.extents.len();
        if self.tile.len() != dims {
            return Err(PlanError::field(
                "cpu.tile",
                format!("{:?}", self.tile),
                format!("the grid has {dims} axes: give one size per axis, slowest first"),
            ));
        }
        for (axis, (&size, &extent)) in self.tile.iter().zip(&bound.extents).enumerate() {
            if size == 0 || size > extent {
                return Err(PlanError::field(
                    format!("cpu.tile[{axis}]"),
                    size,
                    format!(
                        "a tile holds 1 to {extent} points along axis {axis} (the grid's extent)"
                    ),
                ));
            }
        }
        if self.time_tile == 0 {
            return Err(PlanError::field(
                "cpu.time_tile",
                0,
                "a pass fuses at least 1 step",
            ));
        }
        if self.time_tile != 1 && !self.strategy.fuses_steps() {
            return Err(PlanError::field(
                "cpu.time_tile",
                self.time_tile,
                format!(
                    "the {} strategy computes one step at a time: it must be 1 (overlapped and wavefront fuse steps)",
                    self.strategy.name()
                ),
            ));
        }
        if self.threads == 0 || (self.strategy == CpuStrategy::Naive && self.threads != 1) {
            return Err(PlanError::field(
                "cpu.threads",
                self.threads,
                match self.strategy {
                    CpuStrategy::Naive => "the naive strategy runs on 1 thread".to_string(),
                    _ => "a plan runs on at least 1 thread".to_string(),
                },
            ));
        }
        if self.strategy == CpuStrategy::Wavefront
            && let Some(reason) = wavefront_unsupported(bound)
        {
            return Err(PlanError::field(
                "cpu.strategy",
                "wavefront",
                format!("the wavefront strategy cannot run this program: {reason}"),
            ));
        }
        if self.strategy.fuses_steps()
            && let Some(reason) = fusion_refusal(bound)
        {
            return Err(PlanError::field(
                "cpu.strategy",
                self.strategy.name(),
                format!("{reason}; use `parallel` or `blocked`"),
            ));
        }
        Ok(())
    }

    /// One stage's form against what the stage has with this plan's tiles.
    fn check_stage(
        &self,
        bound: &BoundProgram,
        stage: Id<Stage>,
        name: &str,
        form: &CpuStagePlan,
    ) -> Result<(), PlanError> {
        let field = |what: &str| format!("cpu.stages[{}].{what}", stage.index());
        let relaxed = !self.exact && self.strategy != CpuStrategy::Naive;
        if form.column_sums && !relaxed {
            return Err(PlanError::field(
                field("column_sums"),
                true,
                "column sums reorder additions: exact and naive plans do not use them",
            ));
        }
        if form.column_sums && column_sums(bound, stage, &self.tile, self.isa).is_none() {
            return Err(PlanError::field(
                field("column_sums"),
                true,
                format!("stage `{name}` has no column-sum form with these tiles"),
            ));
        }
        let lanes_apply = self.strategy != CpuStrategy::Naive
            && lane_type(bound, stage, form.column_sums, &self.tile, self.isa).is_some();
        if form.term_loops && stage_chain_terms(bound, stage) < TERM_LOOP_MIN_TERMS {
            return Err(PlanError::field(
                field("term_loops"),
                true,
                format!("stage `{name}` has fewer than {TERM_LOOP_MIN_TERMS} terms in long sums"),
            ));
        }
        if form.lanes && form.term_loops && !form.column_sums {
            return Err(PlanError::field(
                field("lanes"),
                true,
                format!("stage `{name}` runs term loops, which do not run on shifted lanes"),
            ));
        }
        if form.lanes && !lanes_apply {
            return Err(PlanError::field(
                field("lanes"),
                true,
                format!("stage `{name}` cannot run on shifted lanes in this plan"),
            ));
        }
        for (what, set) in [
            ("wide_vectors", form.wide_vectors),
            ("columns_in_registers", form.columns_in_registers),
        ] {
            if set && !form.column_sums {
                return Err(PlanError::field(
                    field(what),
                    true,
                    format!("it applies to column sums, and stage `{name}` runs none"),
                ));
            }
        }
        Ok(())
    }
}

impl CpuPlan {
    /// The plan in one line, with the wavefront's rows and ring slots from `layout` when
    /// given: `wavefront tile=256x64x256 T=8 rows=2 ring=4 threads=2 lane-shifts`.
    pub fn summary(&self, layout: Option<&CpuLayout>) -> String {
        let tile: Vec<String> = self.tile.iter().map(usize::to_string).collect();
        let mut text = self.strategy.name().to_string();
        if matches!(
            self.strategy,
            CpuStrategy::Blocked | CpuStrategy::Overlapped | CpuStrategy::Wavefront
        ) {
            text.push_str(&format!(" tile={}", tile.join("x")));
        }
        if self.strategy.fuses_steps() {
            text.push_str(&format!(" T={}", self.time_tile));
        }
        if let (CpuStrategy::Wavefront, Some(layout)) = (self.strategy, layout) {
            text.push_str(&format!(
                " rows={} ring={}",
                layout.stream_rows, layout.scratch_extents[0]
            ));
        }
        let flags = [
            (self.exact, " exact"),
            (self.column_sums(), " column-sums"),
            (self.wide_vectors(), " wide-vectors"),
            (self.lane_shifts(), " lane-shifts"),
            (self.term_loops(), " term-loops"),
            (self.plane_pairs, " plane-pairs"),
        ];
        text.push_str(&format!(
            " threads={} isa={}",
            self.threads,
            self.isa.name()
        ));
        for (set, flag) in flags {
            if set {
                text.push_str(flag);
            }
        }
        text
    }
}

impl fmt::Display for CpuPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary(None))
    }
}

/// Validates `request` against `bound` and completes it into a plan.
pub fn plan_cpu(
    bound: &BoundProgram,
    request: &PlanRequest,
    machine: &CpuMachine,
) -> Result<CpuPlan, PlanError> {
    // The machine as the target sees it: the host's caches, the target's vectors.
    let target = CpuMachine {
        isa: request.isa.unwrap_or(machine.isa),
        ..machine.clone()
    };
    let machine = &target;
    let exact = request_exactness(request)?;
    let strategy = request_strategy(bound, request, machine, exact)?;
    let tile = request_tile(bound, request)?;
    if request.threads == Some(0) {
        return Err(PlanError::Invalid(
            "the thread count is 0; use at least 1 thread".into(),
        ));
    }
    let threads = if strategy == CpuStrategy::Naive {
        1
    } else {
        request.threads.unwrap_or(machine.threads).max(1)
    };
    let requested_depth = request.time_tile.map(|t| t as usize);
    let wave = (strategy == CpuStrategy::Wavefront)
        .then(|| wavefront_shape(bound, machine, requested_depth, tile.as_deref()));
    let dims = bound.extents.len();
    let time_tile = match (strategy, &wave) {
        (CpuStrategy::Overlapped, _) => requested_depth.unwrap_or_else(|| auto_time_tile(dims)),
        (_, Some((depth, _))) => *depth,
        _ => 1,
    };
    let tile = match (tile, strategy) {
        (Some(tile), _) => tile,
        (None, CpuStrategy::Naive) => bound.extents.clone(),
        (None, CpuStrategy::Parallel) => {
            let mut tile = bound.extents.clone();
            tile[0] = if dims == 1 {
                4096.min(bound.extents[0])
            } else {
                1
            };
            tile
        }
        (None, CpuStrategy::Blocked) => auto_spatial_tile(bound, machine),
        (None, CpuStrategy::Overlapped) => auto_overlapped_tile(bound, machine, time_tile),
        (None, CpuStrategy::Wavefront) => wave.map(|(_, bands)| bands).unwrap_or_default(),
    };
    let isa = machine.isa;
    let stages = stage_plans(bound, strategy, exact, &tile, isa);
    let plane_pairs = strategy == CpuStrategy::Wavefront
        && dims == 3
        && stages.iter().any(|s| s.lanes && !s.column_sums);
    Ok(CpuPlan {
        strategy,
        tile,
        time_tile: u32::try_from(time_tile).map_err(|_| {
            PlanError::Invalid(format!("a time tile of {time_tile} steps is too deep"))
        })?,
        threads,
        exact,
        isa,
        stages,
        plane_pairs,
    })
}

/// Whether the request asks for exact arithmetic (the CPU has no f64 accuracy mode and no
/// devices).
fn request_exactness(request: &PlanRequest) -> Result<bool, PlanError> {
    if request.plane_reads.is_some() {
        return Err(PlanError::Invalid(
            "the cpu backend has no GPU planes to read; drop `--plane-reads`".into(),
        ));
    }
    if let DeviceSelection::Named(_) = request.device {
        return Err(PlanError::Invalid(
            "the cpu backend has no devices; drop `--device` or choose a GPU backend".into(),
        ));
    }
    match request.arithmetic {
        Arithmetic::Relaxed => Ok(false),
        Arithmetic::Exact => Ok(true),
        Arithmetic::F64 => Err(PlanError::Unsupported(
            "the cpu backend has no f64 accuracy mode; use `--backend reference` for it".into(),
        )),
    }
}

/// The strategy asked for, or the automatic choice: among the time-tiling strategies when the
/// request fixes a time tile deeper than 1.
fn request_strategy(
    bound: &BoundProgram,
    request: &PlanRequest,
    machine: &CpuMachine,
    exact: bool,
) -> Result<CpuStrategy, PlanError> {
    let fused_depth = request.time_tile.filter(|&t| t > 1);
    let strategy = match request.strategy {
        Some(strategy) => CpuStrategy::from_strategy(strategy)?,
        None if fused_depth.is_some() => match wavefront_unsupported(bound) {
            None => CpuStrategy::Wavefront,
            Some(_) => CpuStrategy::Overlapped,
        },
        None => auto_strategy(bound, machine, exact),
    };
    if strategy.fuses_steps()
        && let Some(reason) = fusion_refusal(bound)
    {
        return Err(PlanError::Unsupported(format!(
            "the {} strategy fuses steps: {reason}; use `parallel` or `blocked`",
            strategy.name()
        )));
    }
    if strategy == CpuStrategy::Wavefront
        && let Some(reason) = wavefront_unsupported(bound)
    {
        return Err(PlanError::Invalid(format!(
            "the wavefront strategy cannot run this program: {reason}; use `overlapped` or `parallel`"
        )));
    }
    match request.time_tile {
        Some(0) => Err(PlanError::Invalid(
            "the time tile is 0; fuse at least 1 step per tile".into(),
        )),
        Some(t) if t > 1 && !strategy.fuses_steps() => Err(PlanError::Invalid(format!(
            "the {} strategy computes one step at a time; a time tile of {t} needs `overlapped` or `wavefront`",
            strategy.name()
        ))),
        _ => Ok(strategy),
    }
}

/// The requested tile, checked against the grid's rank and clamped to its extents.
fn request_tile(
    bound: &BoundProgram,
    request: &PlanRequest,
) -> Result<Option<Vec<usize>>, PlanError> {
    let dims = bound.extents.len();
    let Some(tile) = &request.tile else {
        return Ok(None);
    };
    if tile.len() != dims {
        return Err(PlanError::Invalid(format!(
            "the tile has {} sizes but the grid has {dims} axes; give one size per axis, slowest first (e.g. {})",
            tile.len(),
            vec!["64"; dims].join("x")
        )));
    }
    if tile.contains(&0) {
        return Err(PlanError::Invalid(
            "a tile size is 0; every tile size must be at least 1".into(),
        ));
    }
    Ok(Some(
        tile.iter()
            .zip(&bound.extents)
            .map(|(&t, &e)| t.min(e))
            .collect(),
    ))
}

/// Each stage's form under `strategy`: column sums where the plan may reorder additions and
/// the form pays, shifted lanes where the stage has them (see [`CpuStagePlan`]).
fn stage_plans(
    bound: &BoundProgram,
    strategy: CpuStrategy,
    exact: bool,
    tile: &[usize],
    isa: TargetIsa,
) -> Vec<CpuStagePlan> {
    let relaxed = !exact && strategy != CpuStrategy::Naive;
    bound
        .program()
        .stages
        .ids()
        .map(|stage| {
            let terms = stage_chain_terms(bound, stage);
            let term_loops = terms >= TERM_LOOP_MIN_TERMS;
            let sums: Option<ColumnSums> = (relaxed && terms < REORDERED_TERM_LOOP_MIN_TERMS)
                .then(|| column_sums(bound, stage, tile, isa))
                .flatten();
            let lanes = strategy != CpuStrategy::Naive
                && !(term_loops && sums.is_none())
                && lane_type(bound, stage, sums.is_some(), tile, isa).is_some();
            let registers = |s: &ColumnSums| match lanes {
                true => s.keeps_lane_columns_in_registers(isa),
                false => s.keeps_columns_in_registers(isa),
            };
            // Only AVX-512 has wider vectors than the compiler's default width to prefer.
            let wide = |s: &ColumnSums| isa == TargetIsa::Avx512 && s.bound_by_arithmetic();
            CpuStagePlan {
                column_sums: sums.is_some(),
                lanes,
                wide_vectors: sums.as_ref().is_some_and(wide),
                columns_in_registers: sums.as_ref().is_some_and(registers),
                term_loops,
            }
        })
        .collect()
}

/// The largest absolute read offset of any stage or reduction, as a linear distance bound.
fn max_reach(bound: &BoundProgram) -> u64 {
    let checked = bound.checked();
    let mut reach = 0u64;
    for stage in checked.program().stages.ids() {
        for (_, fp) in checked.stage_footprints(stage) {
            reach = reach.max(u64::from(fp.radius()));
        }
    }
    let row: u64 = bound.extents.iter().skip(1).map(|&e| e as u64).product();
    reach.saturating_mul(row.max(1)).saturating_mul(2)
}

/// Whether some stage reads a field with a periodic border (its reads may wrap around).
fn reads_periodic(bound: &BoundProgram) -> bool {
    let program = bound.program();
    program.stages.iter().any(|(id, stage)| {
        bound
            .checked()
            .stage_footprints(id)
            .iter()
            .any(|(f, _)| stage.border_of(*f, program) == Some(Border::Periodic))
    })
}

fn auto_strategy(bound: &BoundProgram, machine: &CpuMachine, exact: bool) -> CpuStrategy {
    let grid_bytes = bound.cell_count() as u64 * bound.storage_bytes_per_point().max(1) as u64 * 2;
    // Periodic reads need whole-axis tiles, and grids within the last-level cache gain nothing
    // from time tiling. Memory-bound stencils (fewer than 20 reads per point) stream with the
    // wavefront, in 3D too (measured on j3d7pt 256^3: bands of full rows 32 deep, T=4, ran
    // 1.2x (f32) and 1.3x (f64) `parallel`, interleaved in one run). Stencils of 20 reads or
    // more per point are compute-bound: in 2D they run `overlapped`, whose L2-sized tiles with
    // short rows keep their many neighbour rows in L1 (measured on gaussian2d in exact mode);
    // in 3D `parallel`. Column sums cut the work of box stencils in non-exact plans (gaussian2d
    // 11 values per point: wavefront 3.0 GCells/s against overlapped 2.3; j3d27pt 15: wavefront
    // 1.33 against parallel 1.16).
    let dims = bound.extents.len();
    let compute_bound = work_per_point(bound, exact) >= 20;
    if reads_periodic(bound)
        || grid_bytes <= machine.l3_bytes / 2
        || fusion_refusal(bound).is_some()
    {
        CpuStrategy::Parallel
    } else if !compute_bound
        && wavefront_unsupported(bound).is_none()
        && (dims < 3 || wavefront_ghost_work(bound, machine) <= MAX_3D_GHOST_WORK)
    {
        CpuStrategy::Wavefront
    } else if dims >= 3 || (compute_bound && overlapped_ghost_work(bound, machine) > 0.6) {
        CpuStrategy::Parallel
    } else {
        CpuStrategy::Overlapped
    }
}

/// The overlapped strategy's extra work with its automatic tiles: the cells a tile's scratch
/// hull covers (the tile and the ghost zone of its fused steps) over the tile's own, less 1.
///
/// Compute-bound stencils gain from overlapped tiles only the L1 reuse of their short rows, so
/// a wide ghost zone costs more than it brings. Measured on 4096² grids, GCells/s, overlapped
/// against `parallel`: gaussian2d exact f32, hull +41%: 0.92 / 0.85; f64, +56%: 0.45 / 0.42;
/// box2d2r exact f64, +56%: 0.38 / 0.32; box2d3r exact f32, +63%: 0.28 / 0.34; box2d3r f32
/// with column sums: 0.72 / 0.88, f64 (+89%): 0.38 / 0.45; box2d4r f32 (+84%): 0.46 / 0.58.
fn overlapped_ghost_work(bound: &BoundProgram, machine: &CpuMachine) -> f64 {
    let time_tile = auto_time_tile(bound.extents.len());
    let tile = auto_overlapped_tile(bound, machine, time_tile);
    let cores = representative_cores(&bound.extents, &tile);
    let hull: f64 = scratch_extents(bound, time_tile, &cores)
        .iter()
        .map(|&e| e as f64)
        .product();
    let core: f64 = tile.iter().map(|&t| t as f64).product();
    hull / core - 1.0
}

/// The wavefront's redundant work with its automatic bands, as a fraction of the useful work:
/// fused step `s` of `T` recomputes `r (T - s)` ghost indices on each side of a band along
/// every split axis (`r` = the read radius along it), `r (T - 1)` per band on average.
///
/// 3D bands are narrow, so wide stencils pay heavily (measured, star3d3r 256^3 f32: 16-row
/// bands at T=4, 56% ghost work, ran at 0.68 GCells/s against `parallel`'s 0.92).
fn wavefront_ghost_work(bound: &BoundProgram, machine: &CpuMachine) -> f64 {
    let (depth, tile) = wavefront_shape(bound, machine, None, None);
    ghost_work(bound, depth, &tile)
}

/// The redundant work of `depth` fused steps on bands of `tile` (see [`wavefront_ghost_work`]).
fn ghost_work(bound: &BoundProgram, depth: usize, tile: &[usize]) -> f64 {
    let work: f64 = (1..bound.extents.len())
        .filter(|&a| tile[a] < bound.extents[a])
        .map(|a| (tile[a] + read_radius(bound, a) * (depth - 1)) as f64 / tile[a] as f64)
        .product();
    work - 1.0
}

/// The most redundant work a 3D wavefront may do (more runs `parallel`, and the automatic
/// bands take a shallower depth rather than narrower bands past it).
const MAX_3D_GHOST_WORK: f64 = 0.25;

/// Values moved per point over all stages, a proxy for the work: distinct reads (field and
/// offset), or a column-sum stage's loads and stores where its buffered form pays (non-exact
/// plans).
fn work_per_point(bound: &BoundProgram, exact: bool) -> usize {
    let checked = bound.checked();
    checked
        .program()
        .stages
        .ids()
        .map(
            |s| match column_form(bound, s).filter(|sums| !exact && sums.pays_buffered()) {
                Some(sums) => sums.moves_per_point(),
                None => checked
                    .stage_footprints(s)
                    .iter()
                    .map(|(_, fp)| fp.offsets.len())
                    .sum(),
            },
        )
        .sum()
}

/// Fused steps per time tile by default: deeper in 1D/2D, where the ghost zone is cheap.
fn auto_time_tile(dims: usize) -> usize {
    match dims {
        1 | 2 => 8,
        _ => 4,
    }
}

/// Spatial blocks of about 256 KiB, full rows along the fastest axis.
fn auto_spatial_tile(bound: &BoundProgram, _machine: &CpuMachine) -> Vec<usize> {
    let dims = bound.extents.len();
    let mut tile = bound.extents.clone();
    let bytes = bound.storage_bytes_per_point().max(1) as u64;
    let fast = bound.extents[dims - 1];
    if dims >= 2 {
        let rows = ((256 * 1024) / (bytes * fast as u64).max(1)).max(1) as usize;
        tile[dims - 2] = rows.min(bound.extents[dims - 2]);
        for t in tile.iter_mut().take(dims.saturating_sub(2)) {
            *t = 1;
        }
    } else {
        tile[0] = 4096.min(fast);
    }
    tile
}

/// The most tiles an automatic overlapped tiling makes: the host computes every tile's regions
/// before the run (about 2 µs a tile), so that tiny tiles on a huge grid cost seconds there.
const MAX_OVERLAPPED_TILES: u64 = 1 << 16;

/// The largest tile (fastest axis kept whole up to 512 points) whose scratch fits in half of L2.
/// Halving stops early where it would not shrink the scratch (a periodic border makes the
/// hulls of edge tiles span the whole axis, whatever the tile) or would make more than
/// [`MAX_OVERLAPPED_TILES`] tiles; on grids too large for that many 512-point tiles, the
/// slow axes grow instead.
fn auto_overlapped_tile(
    bound: &BoundProgram,
    machine: &CpuMachine,
    time_tile: usize,
) -> Vec<usize> {
    let budget = machine.l2_bytes / 2;
    let scratch_bytes = |tile: &[usize]| -> u64 {
        let cores = representative_cores(&bound.extents, tile);
        let extents = scratch_extents(bound, time_tile, &cores);
        extents.iter().map(|&e| e as u64).product::<u64>() * scratch_bytes_per_point(bound)
    };
    let tile_count = |tile: &[usize]| -> u64 {
        (bound.extents.iter().zip(tile))
            .map(|(&e, &t)| e.div_ceil(t) as u64)
            .product()
    };
    let mut tile: Vec<usize> = bound.extents.iter().map(|&e| e.min(512)).collect();
    // On huge grids, grow the slowest axis that can grow until the tiles are few enough.
    while tile_count(&tile) > MAX_OVERLAPPED_TILES {
        let Some(axis) = (0..tile.len()).find(|&a| tile[a] < bound.extents[a]) else {
            break;
        };
        tile[axis] = (tile[axis] * 2).min(bound.extents[axis]);
    }
    let mut bytes = scratch_bytes(&tile);
    while bytes > budget && tile.iter().any(|&t| t > 8) {
        // Halve the slowest axis that is still the largest.
        let largest = tile.iter().copied().max().unwrap_or(1);
        let axis = tile.iter().position(|&t| t == largest).unwrap_or(0);
        let mut smaller = tile.clone();
        smaller[axis] = smaller[axis].div_ceil(2);
        let smaller_bytes = scratch_bytes(&smaller);
        if smaller_bytes >= bytes || tile_count(&smaller) > MAX_OVERLAPPED_TILES {
            break;
        }
        (tile, bytes) = (smaller, smaller_bytes);
    }
    tile
}

/// Why the `wavefront` strategy cannot run `bound` (`None` when it can): it streams programs
/// of one stage over a dense domain whose every used field is updated by that stage and read at
/// neighbours (so that each fused step has its own ring buffer), with no periodic reads.
pub fn wavefront_unsupported(bound: &BoundProgram) -> Option<String> {
    let checked = bound.checked();
    let program = checked.program();
    let Some(stage) = program
        .stages
        .ids()
        .next()
        .filter(|_| program.stages.len() == 1)
    else {
        return Some("it streams programs of exactly one stage".into());
    };
    if !bound.stage_domain(stage).is_dense() {
        return Some("the stage's domain has a stride".into());
    }
    if reads_periodic(bound) {
        return Some("a read wraps around a periodic border".into());
    }
    let outputs = program.stages[stage].outputs();
    for (field, f) in program.fields.iter() {
        let neighbours = checked
            .footprint(stage, field)
            .is_some_and(|fp| fp.offsets.iter().any(|o| o.iter().any(|&v| v != 0)));
        match checked.role(field) {
            FieldRole::Unused => {}
            FieldRole::ReadOnly => {
                return Some(format!("field `{}` is read-only", f.name));
            }
            FieldRole::Updated if !(outputs.contains(&field) && neighbours) => {
                return Some(format!(
                    "field `{}` is updated in place (not read at neighbours)",
                    f.name
                ));
            }
            FieldRole::Updated => {}
        }
    }
    None
}

/// The rows (slowest-axis indices) a fused step lags behind the previous one in the wavefront:
/// the largest slowest-axis read distance of the (single) stage.
pub fn stream_skew(bound: &BoundProgram) -> usize {
    read_radius(bound, 0)
}

/// The largest read distance along `axis` over every stage and field.
fn read_radius(bound: &BoundProgram, axis: usize) -> usize {
    let checked = bound.checked();
    checked
        .program()
        .stages
        .ids()
        .flat_map(|s| checked.stage_footprints(s))
        .map(|(_, fp)| {
            (-i64::from(fp.min[axis]))
                .max(i64::from(fp.max[axis]))
                .max(0) as usize
        })
        .max()
        .unwrap_or(0)
}

/// Pads the fastest extent of ring buffers (2D and up) to whole 64-byte lines, plus one line
/// when a row would be a multiple of 512 bytes: the rows (planes) a stencil reads together then
/// do not all map to the same L1 sets (4 KiB aliasing).
fn pad_rows(bound: &BoundProgram, extents: &mut [usize]) {
    let dims = extents.len();
    let (_, widest) = field_sizes(bound);
    if dims < 2 {
        return;
    }
    let line = (64 / widest).max(1);
    let row = &mut extents[dims - 1];
    *row = row.div_ceil(line) * line;
    if (*row * widest).is_multiple_of(512) {
        *row += line;
    }
}

/// Points of padding in front of every ring row when the bands span whole rows: enough that
/// the first point the stage computes in a row, moved by `lead` (where its row loop starts
/// loading), starts a 64-byte line, so that its stores and its loads at `dx = 0` do not split
/// cache lines. 0 in 1D and when the bands split the rows (then the first computed point moves
/// with every fused step).
fn ring_front(bound: &BoundProgram, time_tile: usize, tile: &[usize], lead: i32) -> usize {
    let dims = bound.extents.len();
    let x = dims - 1;
    let Some(stage) = bound.program().stages.ids().next() else {
        return 0;
    };
    if dims < 2 || tile[x] < bound.extents[x] {
        return 0;
    }
    let Some(core) = tile_cores(&bound.extents, tile).into_iter().next() else {
        return 0;
    };
    let hull = tile_hull(&tile_regions(bound, &core, time_tile), &core);
    let first = bound.stage_domain(stage).rect.lo[x].max(bound.stage_interior(stage)[x].0)
        + i64::from(lead);
    let line = (64 / field_sizes(bound).0).max(1) as i64;
    (hull.lo[x] - first).rem_euclid(line) as usize
}

/// Slowest-axis indices per pipeline iteration: about 4096 points per stage call (at most 8
/// rows, so that narrow bands do not need deeper rings; 1024 points in 1D), at most a quarter
/// of the streamed axis.
fn wavefront_rows(streamed: usize, rest_extents: &[usize]) -> usize {
    let cells: usize = rest_extents.iter().product::<usize>().max(1);
    let cap = if rest_extents.is_empty() { 1024 } else { 8 };
    4096usize
        .div_ceil(cells)
        .min(cap)
        .min(streamed.div_ceil(4))
        .max(1)
}

/// Rows of each ring buffer: the window a fused step needs (`rows + 2 skew`), rounded up to a
/// power of two so that a ring can be a whole number of pages (see [`pad_ring_slices`]). Row
/// `r` of a step lives in ring slot `r mod R`; no row is ever moved.
fn ring_rows(rows: usize, skew: usize) -> usize {
    (rows + 2 * skew).next_power_of_two()
}

/// Pads a ring's slices (the points of one streamed-axis index: a row in 2D, a plane in 3D)
/// along the second axis so that the `R` slices of a ring are a whole number of 4 KiB pages
/// for every field; 1D rings grow to a page instead. The generated code maps such a ring twice
/// back to back, so that every window of rows is contiguous without copying. The padded slice
/// is an odd multiple of `4096 / R` bytes (of the smallest field), so the slices of one ring
/// start at distinct offsets within a page (no 4 KiB aliasing between the planes a point
/// reads). The padding is never touched, so it costs address space, not cache.
fn pad_ring_slices(bound: &BoundProgram, extents: &mut [usize]) {
    const PAGE: usize = 4096;
    let (smallest, widest) = field_sizes(bound);
    if extents.len() < 2 {
        extents[0] = extents[0].max(PAGE.div_ceil(smallest).next_power_of_two());
        return;
    }
    let ring_bytes = extents[0] * smallest;
    if ring_bytes.is_multiple_of(PAGE) {
        return;
    }
    // Slice length (in points) that makes a ring of the smallest field one page.
    let quantum = PAGE / ring_bytes;
    // The second axis grows: by whole lines in 2D (it is the row), by whole rows in 3D.
    let (unit, rest) = match extents.len() {
        2 => ((64 / widest).max(1), 1),
        _ => (1, extents[2..].iter().product::<usize>()),
    };
    let whole = |n: usize| (n * rest).is_multiple_of(quantum);
    let odd = |n: usize| whole(n) && (n * rest / quantum) % 2 == 1;
    let candidates = || (0..=2 * quantum).map(|k| extents[1] + k * unit);
    extents[1] = candidates()
        .find(|&n| odd(n))
        .or_else(|| candidates().find(|&n| whole(n)))
        .unwrap_or(extents[1]);
}

/// The smallest and the widest element size of the program's fields, in bytes.
fn field_sizes(bound: &BoundProgram) -> (usize, usize) {
    let sizes = || {
        bound
            .program()
            .fields
            .values()
            .map(|f| f.ty.size_bytes().max(1))
    };
    (sizes().min().unwrap_or(1), sizes().max().unwrap_or(1))
}

/// Bytes one thread keeps hot for bands of `tile` fusing `time_tile` steps: the window of
/// `rows + 2 skew` rows (planes in 3D) that each of the `time_tile - 1` ring buffers and the
/// input stream are read through. The rest of a ring (at most as much again: its slots are a
/// power of two) is touched once per pass around the ring and is not counted. Paired planes
/// (`plane_pairs`) count as single ones: a 3D step's ring has the same 4 slots either way.
fn wavefront_bytes(bound: &BoundProgram, time_tile: usize, tile: &[usize]) -> u64 {
    let hull = scratch_extents(
        bound,
        time_tile,
        &representative_cores(&bound.extents, tile),
    );
    let rest: u64 = hull[1..].iter().map(|&e| e as u64).product();
    let window = (wavefront_rows(bound.extents[0], &hull[1..]) + 2 * stream_skew(bound)) as u64;
    let per_cell: u64 = bound
        .checked()
        .program()
        .fields
        .iter()
        .filter(|(id, _)| bound.checked().role(*id) != FieldRole::Unused)
        .map(|(_, f)| f.ty.size_bytes() as u64)
        .sum();
    per_cell * time_tile as u64 * window * rest
}

/// Values moved per point below which a 3D stencil is light enough for deeper fusion.
const LIGHT_3D_WORK: usize = 10;

/// 2D bands fusing [`DEEP_2D_STEPS`] steps: this many points along the fastest axis, never
/// narrowed (deeper fusion on narrower bands gained nothing: measured in docs/performance.md,
/// "Deeper 2D and 1D wavefront").
const DEEP_2D_WIDTH: usize = 1024;

/// The fused steps of the deep 2D candidates tried before the others.
const DEEP_2D_STEPS: usize = 24;

/// Whether 2D bands of whole rows, and 3D bands of [`HEAVY_3D_ROWS`] rows for stencils that
/// are not light, whose rings live in L3 ([`deep_wavefront`]), are tried (2D: where the L2
/// candidate does not fit). On the AVX2 EPYC machine (512 KiB of L2 per core)
/// j2d5pt went from 5.3 (the L2 ladder's 256-point bands at T=16) to 8.7 GCells/s in f32 and
/// from 2.7 to 4.4 in f64, j2d9pt-box from 4.4 to 6.7, gaussian2d from 3.0 to 4.7
/// (docs/performance.md, "AVX2"). AVX-512 plans keep the L2 ladder measured on their machines.
fn rows_in_l3(isa: TargetIsa) -> bool {
    isa != TargetIsa::Avx512
}

/// Rows (middle-axis points) of the deep 3D candidate's bands, whose rings live in L3.
///
/// A light 3D stencil's fused steps run about as fast from L3 as from L2 (the ring-to-ring
/// loop is not bound by the cache's bandwidth), while its first and last steps, which read
/// and write memory, cost 2-3 middle steps each: fusing more steps on wider bands amortizes
/// them better than fitting the rings in L2 does. j3d7pt 256³x50, 2 threads, against the L2
/// ladder's 16-row bands at T=5 (f32) and T=4 (f64): f64 +11-15%, f32 +0-10% (even where
/// the two alternated; docs/performance.md, "Rings in L3 for light 3D stencils").
const DEEP_3D_ROWS: usize = 64;

/// The fused steps of the deep 3D candidate.
const DEEP_3D_STEPS: usize = 8;

/// Rows of the bands of 3D stencils that are not light, whose rings live in L3 where
/// [`rows_in_l3`]: j3d27pt 256³x20 on the AVX2 EPYC machine ran 2.45-2.54 GCells/s at T=4
/// against 1.89-2.07 on the L2 ladder's 16-row bands (64 rows: 2.19-2.42; whole planes at T=3:
/// 2.27-2.53).
const HEAVY_3D_ROWS: usize = 128;

/// The fused steps of the heavy 3D candidate.
const HEAVY_3D_STEPS: usize = 4;

/// The deep candidate tried before the ladder, where the request leaves both the depth and the
/// bands to the planner: in 2D, [`DEEP_2D_STEPS`] over bands of [`DEEP_2D_WIDTH`] points whose
/// rings fit in 60% of L2, else (where [`rows_in_l3`]) over bands of whole rows whose rings
/// fit in half of each thread's share of L3; for light 3D stencils, [`DEEP_3D_STEPS`] over
/// bands of [`DEEP_3D_ROWS`] rows of up to 512 points, and for the others (where
/// [`rows_in_l3`]) [`HEAVY_3D_STEPS`] over [`HEAVY_3D_ROWS`] rows, whose rings fit in half of
/// each thread's share of L3, with ghost work within [`MAX_3D_GHOST_WORK`].
fn deep_wavefront(bound: &BoundProgram, machine: &CpuMachine) -> Option<(usize, Vec<usize>)> {
    let mut bands = bound.extents.clone();
    let l3_share = machine.l3_bytes / machine.threads.max(1) as u64;
    let (depth, budget) = match bands.len() {
        2 => {
            bands[1] = bands[1].min(DEEP_2D_WIDTH);
            let l2 = machine.l2_bytes * 3 / 5;
            if !wavefront_fits(bound, DEEP_2D_STEPS, &bands, l2) && rows_in_l3(machine.isa) {
                bands = bound.extents.clone();
                (DEEP_2D_STEPS, l3_share / 2)
            } else {
                (DEEP_2D_STEPS, l2)
            }
        }
        3 if work_per_point(bound, false) < LIGHT_3D_WORK => {
            bands[1] = bands[1].min(DEEP_3D_ROWS);
            bands[2] = bands[2].min(512);
            (DEEP_3D_STEPS, l3_share / 2)
        }
        3 if rows_in_l3(machine.isa) => {
            bands[1] = bands[1].min(HEAVY_3D_ROWS);
            bands[2] = bands[2].min(512);
            (HEAVY_3D_STEPS, l3_share / 2)
        }
        _ => return None,
    };
    wavefront_fits(bound, depth, &bands, budget).then_some((depth, bands))
}

/// Whether `depth` fused steps on `bands` keep their rings within `budget` bytes and, in 3D,
/// their ghost work within [`MAX_3D_GHOST_WORK`].
fn wavefront_fits(bound: &BoundProgram, depth: usize, bands: &[usize], budget: u64) -> bool {
    wavefront_bytes(bound, depth, bands) <= budget
        && (bands.len() < 3 || ghost_work(bound, depth, bands) <= MAX_3D_GHOST_WORK)
}

/// The wavefront's time tile and bands: the deep candidate ([`deep_wavefront`]: in 2D, 24 fused
/// steps over 1024-point bands in L2, radius-1 f32 stencils; light 3D stencils, 8 over 64-row
/// bands in L3) where it fits; otherwise the deepest of a few depths (32, 16, 8, 4, 2 fused
/// steps in 1D; 16, 8, 4, 2 in 2D; 5, 4, 3, 2 in 3D and up, 4, 3, 2 for stencils moving
/// [`LIGHT_3D_WORK`] values per point or more) that fits ([`wavefront_fits`]) with bands no
/// narrower than a floor (128 points along the fastest axis in 2D, else 32; 8 along middle
/// axes). The streamed axis is then split so that every thread gets at least two bands. What
/// the request gives is kept.
fn wavefront_shape(
    bound: &BoundProgram,
    machine: &CpuMachine,
    time_tile: Option<usize>,
    tile: Option<&[usize]>,
) -> (usize, Vec<usize>) {
    let dims = bound.extents.len();
    let depths: Vec<usize> = match (time_tile, dims) {
        (Some(t), _) => vec![t],
        (None, 1) => vec![32, 16, 8, 4, 2],
        (None, 2) => vec![16, 8, 4, 2],
        // Light 3D stencils go one step deeper than those with more work per point: paired
        // planes made j3d7pt fast enough that T=5 beat T=4 by 5-10%, while j3d27pt (column
        // sums, compute-bound) gained nothing from the extra ghost work.
        (None, _) if work_per_point(bound, false) < LIGHT_3D_WORK => vec![5, 4, 3, 2],
        (None, _) => vec![4, 3, 2],
    };
    let budget = machine.l2_bytes * 3 / 5;
    let deep = (time_tile.is_none() && tile.is_none())
        .then(|| deep_wavefront(bound, machine))
        .flatten();
    let ladder = || {
        let mut shape = (depths[0], bound.extents.clone());
        for &depth in &depths {
            let bands = match tile {
                Some(t) => t.to_vec(),
                None => narrow_bands(bound, depth, budget),
            };
            let fits = wavefront_fits(bound, depth, &bands, budget);
            shape = (depth, bands);
            if fits {
                break;
            }
        }
        shape
    };
    let mut shape = deep.unwrap_or_else(ladder);
    if tile.is_none() {
        let bands: usize = (1..dims)
            .map(|a| bound.extents[a].div_ceil(shape.1[a]))
            .product();
        let wanted = 2 * machine.threads.max(1);
        if bands < wanted {
            shape.1[0] = bound.extents[0].div_ceil(wanted.div_ceil(bands)).max(1);
        }
    }
    shape
}

/// Bands for `depth` fused steps: start wide (512 points along the fastest axis in 2D; 32 rows
/// of up to 512 points in 3D), then halve the widest axis above its floor until the rings fit
/// (in 3D the middle axis goes first: full rows stream better than deep bands).
fn narrow_bands(bound: &BoundProgram, depth: usize, budget: u64) -> Vec<usize> {
    let dims = bound.extents.len();
    let mut tile = bound.extents.clone();
    if dims == 1 {
        return tile;
    }
    let fast = dims - 1;
    let widths = |a: usize| match (dims, a == fast) {
        (2, _) => (512, 128),
        (_, true) => (512, 32),
        (_, false) => (32, 8),
    };
    for (a, t) in tile.iter_mut().enumerate().skip(1) {
        *t = (*t).min(widths(a).0);
    }
    while wavefront_bytes(bound, depth, &tile) > budget {
        // Contiguous rows are worth more: the fastest axis counts 1/16 when choosing.
        let weight = |a: usize| {
            if a == fast && dims > 2 {
                tile[a] / 16
            } else {
                tile[a]
            }
        };
        let Some(axis) = (1..dims)
            .filter(|&a| tile[a] > widths(a).1)
            .max_by_key(|&a| weight(a))
        else {
            break;
        };
        tile[axis] = tile[axis].div_ceil(2);
    }
    tile
}

/// Scratch bytes per hull point: two buffers per updated field, one per read-only field.
fn scratch_bytes_per_point(bound: &BoundProgram) -> u64 {
    let checked = bound.checked();
    checked
        .program()
        .fields
        .iter()
        .map(|(id, f)| match checked.role(id) {
            FieldRole::Updated => 2 * f.ty.size_bytes() as u64,
            FieldRole::ReadOnly => f.ty.size_bytes() as u64,
            FieldRole::Unused => 0,
        })
        .sum::<u64>()
        .max(1)
}

/// The tiles of the grid: cores of `tile` points, slowest axis first, in row-major order.
pub fn tile_cores(extents: &[usize], tile: &[usize]) -> Vec<Rect> {
    let counts: Vec<usize> = extents
        .iter()
        .zip(tile)
        .map(|(&e, &t)| e.div_ceil(t.max(1)))
        .collect();
    let total: usize = counts.iter().product();
    (0..total)
        .map(|mut index| {
            let mut lo = vec![0i64; extents.len()];
            let mut hi = vec![0i64; extents.len()];
            for axis in (0..extents.len()).rev() {
                let k = index % counts[axis];
                index /= counts[axis];
                lo[axis] = (k * tile[axis]) as i64;
                hi[axis] = (((k + 1) * tile[axis]).min(extents[axis])) as i64;
            }
            Rect::new(lo, hi)
        })
        .collect()
}

/// The scratch hull of a tile fusing `steps` steps: every region it loads or computes, and
/// its core.
pub fn tile_hull(regions: &TileRegions, core: &Rect) -> Rect {
    regions
        .compute
        .iter()
        .flatten()
        .chain(&regions.inputs)
        .fold(core.clone(), |acc, r| acc.hull(r))
}

/// The extents of the scratch buffers: the largest hull over the given tile cores.
fn scratch_extents(bound: &BoundProgram, time_tile: usize, cores: &[Rect]) -> Vec<usize> {
    let mut extents = vec![0usize; bound.extents.len()];
    for core in cores {
        let regions = tile_regions(bound, core, time_tile);
        let hull = tile_hull(&regions, core);
        for (axis, e) in extents.iter_mut().enumerate() {
            *e = (*e).max(hull.len(axis) as usize);
        }
    }
    extents
}

/// A few tiles that together come close to the largest hull extents (for the tile-size search):
/// per axis the first three and last two tile positions.
fn representative_cores(extents: &[usize], tile: &[usize]) -> Vec<Rect> {
    let positions: Vec<Vec<usize>> = extents
        .iter()
        .zip(tile)
        .map(|(&e, &t)| {
            let count = e.div_ceil(t.max(1));
            let mut p = vec![
                0,
                1.min(count - 1),
                2.min(count - 1),
                count.saturating_sub(2),
                count - 1,
            ];
            p.sort_unstable();
            p.dedup();
            p
        })
        .collect();
    let mut cores = vec![(Vec::new(), Vec::new())];
    for (axis, ps) in positions.iter().enumerate() {
        let mut next = Vec::new();
        for (lo, hi) in &cores {
            for &k in ps {
                let (mut lo, mut hi): (Vec<i64>, Vec<i64>) = (lo.clone(), hi.clone());
                lo.push((k * tile[axis]) as i64);
                hi.push((((k + 1) * tile[axis]).min(extents[axis])) as i64);
                next.push((lo, hi));
            }
        }
        cores = next;
    }
    cores
        .into_iter()
        .map(|(lo, hi)| Rect::new(lo, hi))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tessera_analysis::{bind, check};
    use tessera_ir::builder::ProgramBuilder;
    use tessera_ir::{BinaryOp, Constant, Range, Region, ScalarType, SizeExpr, SizeOp, Span};

    use super::*;
    use crate::request::{Arithmetic, PlanRequest, Strategy};

    /// A star Jacobi of radius 1 on the interior of an `n`^dims grid of `ty`, optionally with a
    /// periodic border and a second (read-only) field.
    fn jacobi(
        dims: usize,
        n: usize,
        ty: ScalarType,
        periodic: bool,
        read_only: bool,
    ) -> BoundProgram {
        let mut b = ProgramBuilder::new("j");
        let p = b.param("N", ScalarType::I64, Constant::Int(n as i64));
        b.grid(vec![SizeExpr::Param(p); dims]);
        let a = b.field("A", ty);
        if periodic {
            b.set_border(a, Border::Periodic);
        }
        let mut sum = b.read(a, &vec![0; dims]);
        for axis in 0..dims {
            for d in [-1, 1] {
                let mut o = vec![0; dims];
                o[axis] = d;
                let r = b.read(a, &o);
                sum = b.binary(BinaryOp::Add, sum, r);
            }
        }
        if read_only {
            let k = b.field("K", ty);
            let r = b.read(k, &vec![0; dims]);
            sum = b.binary(BinaryOp::Mul, sum, r);
        }
        let mut s = b.stage("s");
        if !periodic {
            let inner = Range::Span {
                lo: Some(SizeExpr::Const(1)),
                hi: Some(SizeExpr::Binary(
                    SizeOp::Sub,
                    Box::new(SizeExpr::Param(p)),
                    Box::new(SizeExpr::Const(1)),
                )),
                stride: 1,
            };
            s.over(Region {
                ranges: vec![inner; dims],
                span: Span::NONE,
            });
        }
        s.assign(a, sum);
        b.finish_stage(s);
        bind(Arc::new(check(&b.finish()).expect("checks")), &[]).expect("binds")
    }

    fn machine() -> CpuMachine {
        CpuMachine {
            isa: TargetIsa::Avx512,
            threads: 2,
            l2_bytes: 1280 << 10,
            l3_bytes: 48 << 20,
        }
    }

    fn auto(bound: &BoundProgram) -> CpuPlan {
        plan_cpu(bound, &PlanRequest::default(), &machine()).expect("plans")
    }

    #[test]
    fn programs_reading_reductions_of_the_step_never_fuse_steps() {
        // 2048 x 4096 f32 and f64 fields: beyond half the L3, where the model would fuse.
        let bound = tessera_testkit::case("normalise2d").bind_extents(&[2048, 4096], &[]);
        assert_eq!(auto(&bound).strategy, CpuStrategy::Parallel);
        let fused = PlanRequest {
            time_tile: Some(4),
            ..PlanRequest::default()
        };
        for request in [
            fused,
            PlanRequest {
                strategy: Some(Strategy::Overlapped),
                ..PlanRequest::default()
            },
        ] {
            let error = plan_cpu(&bound, &request, &machine()).unwrap_err();
            assert!(
                error
                    .to_string()
                    .contains("stage `normalise` reads the reduction `mass`"),
                "{error}"
            );
        }
        let mut plan = auto(&bound);
        plan.strategy = CpuStrategy::Overlapped;
        let error = plan.check(&bound).unwrap_err().to_string();
        assert!(error.contains("cpu.strategy"), "{error}");
    }

    #[test]
    fn large_1d_grids_fuse_32_steps() {
        for ty in [ScalarType::F32, ScalarType::F64] {
            let plan = auto(&jacobi(1, 1 << 22, ty, false, false));
            assert_eq!(plan.strategy, CpuStrategy::Wavefront);
            assert_eq!(plan.time_tile, 32);
        }
    }

    #[test]
    fn large_2d_grids_stream_with_the_wavefront() {
        let bound = jacobi(2, 4096, ScalarType::F32, false, false);
        let plan = auto(&bound);
        assert_eq!(plan.strategy, CpuStrategy::Wavefront);
        assert_eq!((plan.time_tile, plan.tile.clone()), (24, vec![4096, 1024]));
        // Rows padded to whole lines, at distinct offsets within a page (an odd multiple of
        // 4096 / R bytes); at least K + 2 skew rows.
        let layout = plan.layout(&bound);
        let (slots, row) = (layout.scratch_extents[0], layout.scratch_extents[1]);
        assert!(row >= 1024 + 2 * 23 && row.is_multiple_of(16));
        assert_eq!((row * 4 * slots) % 4096, 0);
        assert_eq!(row * 4 / (4096 / slots) % 2, 1);
        assert!(slots >= layout.stream_rows + 2);
        // The deep bands' rings do not fit in f64, nor with a radius-2 stencil: 16 steps.
        let f64 = auto(&jacobi(2, 4096, ScalarType::F64, false, false));
        assert_eq!((f64.time_tile, f64.tile.clone()), (16, vec![4096, 512]));
        let wide = auto(&square_box(4096, 2, false));
        assert_eq!(wide.strategy, CpuStrategy::Wavefront);
        assert_eq!((wide.time_tile, wide.tile.clone()), (16, vec![4096, 512]));
        // A requested depth keeps the 512-point bands.
        let request = PlanRequest {
            strategy: Some(Strategy::Wavefront),
            time_tile: Some(24),
            ..PlanRequest::default()
        };
        let bound = jacobi(2, 4096, ScalarType::F32, false, false);
        let plan = plan_cpu(&bound, &request, &machine()).expect("plans");
        assert_eq!(plan.tile, vec![4096, 512]);
    }

    #[test]
    fn without_avx512_large_2d_grids_stream_whole_rows_through_l3() {
        // A 512 KiB L2 cannot hold the 1024-point bands of 24 steps: whole rows, rings in L3.
        let avx2 = CpuMachine {
            isa: TargetIsa::Avx2,
            l2_bytes: 512 << 10,
            ..machine()
        };
        for ty in [ScalarType::F32, ScalarType::F64] {
            let bound = jacobi(2, 4096, ty, false, false);
            let plan = plan_cpu(&bound, &PlanRequest::default(), &avx2).expect("plans");
            assert_eq!(plan.strategy, CpuStrategy::Wavefront);
            assert_eq!((plan.time_tile, plan.tile.clone()), (24, vec![1024, 4096]));
            assert_eq!(plan.isa, TargetIsa::Avx2);
        }
        // AVX-512 plans keep the L2 ladder they were measured with.
        let avx512 = CpuMachine {
            l2_bytes: 512 << 10,
            ..machine()
        };
        let bound = jacobi(2, 4096, ScalarType::F32, false, false);
        let plan = plan_cpu(&bound, &PlanRequest::default(), &avx512).expect("plans");
        assert!(plan.tile[1] < 4096, "{plan}");
        // A request for another target plans with that target's rules on this machine.
        let request = PlanRequest {
            isa: Some(TargetIsa::Sse2),
            ..PlanRequest::default()
        };
        let plan = plan_cpu(&bound, &request, &avx512).expect("plans");
        assert_eq!(
            (plan.isa, plan.tile.clone()),
            (TargetIsa::Sse2, vec![1024, 4096])
        );
    }

    #[test]
    fn full_row_rings_align_the_first_computed_point() {
        // Whole rows: x = 1 (the domain's first point) lands on a 64-byte line.
        for (ty, front) in [(ScalarType::F32, 15), (ScalarType::F64, 7)] {
            let bound = jacobi(3, 256, ty, false, false);
            let layout = auto(&bound).layout(&bound);
            assert_eq!(layout.ring_front, front);
            let row = layout.scratch_extents[2];
            assert!(row >= 256 + front && (row * ty.size_bytes()).is_multiple_of(64));
        }
        // Bands that split the rows, and other strategies, keep no front.
        let bound = jacobi(2, 4096, ScalarType::F32, false, false);
        assert_eq!(auto(&bound).layout(&bound).ring_front, 0);
        let parallel = PlanRequest {
            strategy: Some(Strategy::Parallel),
            ..PlanRequest::default()
        };
        let bound = jacobi(3, 256, ScalarType::F32, false, false);
        let plan = plan_cpu(&bound, &parallel, &machine()).unwrap();
        assert_eq!(plan.layout(&bound).ring_front, 0);
        // A buffered column-sum row starts loading at x = first - 2 (a 5x5 box on 2..N-2, rows
        // too short for lanes): aligned as is.
        let whole_rows = PlanRequest {
            strategy: Some(Strategy::Wavefront),
            tile: Some(vec![64, 1000]),
            ..PlanRequest::default()
        };
        let bound = square_box(200, 2, false);
        let plan = plan_cpu(&bound, &whole_rows, &machine()).unwrap();
        assert!(plan.column_sums());
        assert_eq!(plan.layout(&bound).ring_front, 0);
    }

    #[test]
    fn large_3d_grids_stream_full_rows() {
        // Light stencils fuse 8 steps on 64-row bands whose rings live in L3.
        for ty in [ScalarType::F32, ScalarType::F64] {
            let bound = jacobi(3, 256, ty, false, false);
            let plan = auto(&bound);
            assert_eq!(plan.strategy, CpuStrategy::Wavefront);
            assert_eq!((plan.time_tile, plan.tile.clone()), (8, vec![256, 64, 256]));
            assert!(plan.plane_pairs && plan.layout(&bound).stream_rows == 2);
        }
        let bound = jacobi(3, 256, ScalarType::F32, false, false);
        assert!((wavefront_ghost_work(&bound, &machine()) - 7.0 / 64.0).abs() < 1e-9);
        // Where half a thread's share of L3 cannot hold those rings, the L2 ladder decides: in
        // f32 five steps on 32 rows; in f64 five steps would need bands of 8 rows (50% ghost
        // work), so four on 16 rows.
        let small_l3 = CpuMachine {
            l3_bytes: 4 << 20,
            ..machine()
        };
        let plan = |ty| {
            let bound = jacobi(3, 256, ty, false, false);
            plan_cpu(&bound, &PlanRequest::default(), &small_l3).expect("plans")
        };
        let f32 = plan(ScalarType::F32);
        assert_eq!((f32.time_tile, f32.tile.clone()), (5, vec![256, 32, 256]));
        let f64 = plan(ScalarType::F64);
        assert_eq!((f64.time_tile, f64.tile.clone()), (4, vec![256, 16, 256]));
    }

    #[test]
    fn wavefront_rings_fit_in_their_cache_budget() {
        for ty in [ScalarType::F32, ScalarType::F64] {
            for dims in [1, 2, 3] {
                let n = [1 << 22, 4096, 256][dims - 1];
                let bound = jacobi(dims, n, ty, false, false);
                let request = PlanRequest {
                    strategy: Some(Strategy::Wavefront),
                    ..PlanRequest::default()
                };
                let plan = plan_cpu(&bound, &request, &machine()).expect("plans");
                // The band's hull (the ring slices' padding is never touched): the ring slots
                // of the intermediate steps fit in L2 (the model's budget is 60% of it), those
                // of the deep 3D bands in half of a thread's share of L3.
                let budget = match dims {
                    3 => machine().l3_bytes / machine().threads as u64 / 2,
                    _ => machine().l2_bytes,
                };
                let depth = plan.time_tile as usize;
                let hull: usize = (1..dims)
                    .map(|a| (plan.tile[a] + 2 * depth).min(n))
                    .product();
                let cells = hull * plan.layout(&bound).scratch_extents[0];
                let bytes = cells * ty.size_bytes() * (depth - 1);
                assert!(
                    bytes as u64 <= budget,
                    "{dims}D {ty}: {plan} needs {bytes} bytes of rings"
                );
                let bands: usize = (0..dims)
                    .map(|a| bound.extents[a].div_ceil(plan.tile[a]))
                    .product();
                assert!(bands >= 4, "{dims}D {ty}: {plan} has {bands} bands");
            }
        }
    }

    #[test]
    fn wavefront_rings_are_whole_pages_with_slots_at_distinct_page_offsets() {
        let request = PlanRequest {
            strategy: Some(Strategy::Wavefront),
            ..PlanRequest::default()
        };
        for ty in [ScalarType::F32, ScalarType::F64] {
            for (dims, n) in [(1, 1 << 22), (2, 4096), (2, 1000), (3, 256), (3, 97)] {
                let bound = jacobi(dims, n, ty, false, false);
                let plan = plan_cpu(&bound, &request, &machine()).expect("plans");
                let layout = plan.layout(&bound);
                let ring = layout.scratch_extents[0];
                let slot: usize = layout.scratch_extents[1..].iter().product::<usize>();
                let bytes = slot * ty.size_bytes();
                assert!(
                    ring.is_power_of_two() && ring >= layout.stream_rows + 2,
                    "{plan}"
                );
                assert!(
                    (ring * bytes).is_multiple_of(4096),
                    "{dims}D {n} {ty}: {plan}"
                );
                if dims > 1 {
                    let offsets: std::collections::HashSet<usize> =
                        (0..ring.min(4096 / 64)).map(|j| j * bytes % 4096).collect();
                    assert_eq!(
                        offsets.len(),
                        ring.min(4096 / 64),
                        "{dims}D {n} {ty}: {plan}"
                    );
                }
            }
        }
    }

    #[test]
    fn periodic_and_small_grids_run_parallel() {
        assert_eq!(
            auto(&jacobi(2, 4096, ScalarType::F32, true, false)).strategy,
            CpuStrategy::Parallel
        );
        assert_eq!(
            auto(&jacobi(2, 512, ScalarType::F32, false, false)).strategy,
            CpuStrategy::Parallel
        );
        assert_eq!(
            work_per_point(&jacobi(2, 8, ScalarType::F32, false, false), false),
            5
        );
    }

    /// `A = Σ w · A[o]` over the box of radius 2 in 2D with clamped borders; separable weights
    /// (a Gaussian) or all distinct.
    /// A square box of radius `r` on an `n`x`n` grid: separable (tent) or general weights.
    fn square_box(n: usize, r: i32, separable: bool) -> BoundProgram {
        let mut b = ProgramBuilder::new("box");
        let p = b.param("N", ScalarType::I64, Constant::Int(n as i64));
        b.grid(vec![SizeExpr::Param(p); 2]);
        let a = b.field("A", ScalarType::F32);
        b.set_border(a, Border::Clamp);
        let offsets: Vec<[i32; 2]> = (-r..=r)
            .flat_map(|y| (-r..=r).map(move |x| [y, x]))
            .collect();
        let sum = b.weighted_reads(
            a,
            offsets.iter().map(|o| {
                let (y, x) = (o[0] + r, o[1] + r);
                let w = if separable {
                    f64::from((r + 1 - (y - r).abs()) * (r + 1 - (x - r).abs())) / 100.0
                } else {
                    1.0 + f64::from(5 * y + x) / 100.0
                };
                (o.as_slice(), w)
            }),
        );
        let mut s = b.stage("s");
        s.assign(a, sum.expect("terms"));
        b.finish_stage(s);
        bind(Arc::new(check(&b.finish()).expect("checks")), &[]).expect("binds")
    }

    #[test]
    fn column_sums_make_box_stencils_memory_bound() {
        let gaussian = square_box(4096, 2, true);
        // Rank one: 5 column loads, 1 sum stored, 5 sums read back.
        assert_eq!(work_per_point(&gaussian, false), 11);
        assert_eq!(work_per_point(&gaussian, true), 25);
        assert_eq!(auto(&gaussian).strategy, CpuStrategy::Wavefront);
        assert!(auto(&gaussian).column_sums());
        let exact = PlanRequest {
            arithmetic: Arithmetic::Exact,
            ..PlanRequest::default()
        };
        let plan = plan_cpu(&gaussian, &exact, &machine()).expect("plans");
        assert_eq!(plan.strategy, CpuStrategy::Overlapped);
        assert!(!plan.column_sums());
        // General weights: one sum per x offset, 5 + 5 + 5 values moved.
        assert_eq!(work_per_point(&square_box(64, 2, false), false), 15);
        let naive = PlanRequest {
            strategy: Some(Strategy::Naive),
            ..PlanRequest::default()
        };
        assert!(
            !plan_cpu(&gaussian, &naive, &machine())
                .unwrap()
                .column_sums()
        );
    }

    #[test]
    fn wide_compute_bound_stencils_skip_time_tiles() {
        // 7x7 box, general weights: 7 + 7 + 7 values moved per point, so compute-bound; the
        // overlapped tiles' hull of 8 fused steps (radius 3) is 63% larger than the tile.
        let wide = square_box(4096, 3, false);
        assert!(work_per_point(&wide, false) >= 20);
        assert!(overlapped_ghost_work(&wide, &machine()) > 0.6);
        assert_eq!(auto(&wide).strategy, CpuStrategy::Parallel);
        // The 5x5 box in exact mode (25 reads): a 41% hull still pays for the L1 reuse.
        let narrow = square_box(4096, 2, false);
        let exact = PlanRequest {
            arithmetic: Arithmetic::Exact,
            ..PlanRequest::default()
        };
        assert!(overlapped_ghost_work(&narrow, &machine()) < 0.6);
        let plan = plan_cpu(&narrow, &exact, &machine()).expect("plans");
        assert_eq!(plan.strategy, CpuStrategy::Overlapped);
    }

    #[test]
    fn only_column_sums_bound_by_arithmetic_get_wide_vectors() {
        // Rank one: 5 + 5 multiply-adds against 11 values moved.
        let gaussian = square_box(4096, 2, true);
        assert!(!auto(&gaussian).wide_vectors());
        // General weights: 25 + 5 multiply-adds against 15 values moved.
        let general = square_box(4096, 2, false);
        let plan = auto(&general);
        assert!(plan.column_sums() && plan.wide_vectors());
        assert!(
            plan.to_string()
                .ends_with(" column-sums wide-vectors lane-shifts")
        );
        for strategy in ["naive", "parallel"] {
            let request = PlanRequest {
                strategy: Strategy::from_name(strategy),
                arithmetic: if strategy == "parallel" {
                    Arithmetic::Exact
                } else {
                    Arithmetic::Relaxed
                },
                ..PlanRequest::default()
            };
            assert!(
                !plan_cpu(&general, &request, &machine())
                    .unwrap()
                    .wide_vectors()
            );
        }
        // Plain loops (no column form) keep the default width.
        assert!(!auto(&jacobi(2, 4096, ScalarType::F32, false, false)).wide_vectors());
    }

    #[test]
    fn float_stages_shifting_along_x_run_shifted_lanes() {
        // A star and a general 3x3 box read along x: shifted lanes, exact plans included.
        let star = jacobi(2, 4096, ScalarType::F32, false, false);
        let box3x3 = square_box(4096, 1, false);
        let exact = PlanRequest {
            arithmetic: Arithmetic::Exact,
            ..PlanRequest::default()
        };
        for bound in [&star, &box3x3] {
            let plan = auto(bound);
            assert!(plan.lane_shifts() && plan.to_string().ends_with(" lane-shifts"));
            assert!(plan_cpu(bound, &exact, &machine()).unwrap().lane_shifts());
        }
        // The 3x3 box's column sums pay on lanes only (fewer shuffles; buffered they move as
        // many values as the plain loop): on rows of at least 128 points (the wavefront's
        // 1024-point bands, the overlapped strategy's 256-point tiles), not on narrower tiles
        // nor in exact mode.
        assert!(auto(&box3x3).column_sums() && !auto(&star).column_sums());
        let overlapped = |tile: Vec<usize>| PlanRequest {
            strategy: Some(Strategy::Overlapped),
            tile: Some(tile),
            ..PlanRequest::default()
        };
        let plan = plan_cpu(&box3x3, &overlapped(vec![256, 256]), &machine()).unwrap();
        assert!(plan.lane_shifts() && plan.column_sums(), "{plan}");
        let plan = plan_cpu(&box3x3, &overlapped(vec![256, 64]), &machine()).unwrap();
        assert!(plan.lane_shifts() && !plan.column_sums(), "{plan}");
        assert!(!plan_cpu(&box3x3, &exact, &machine()).unwrap().column_sums());
        // Column sums run on lanes where rows hold `min_lane_row` points (256 for a 5x5 box:
        // the wavefront's bands of 512 points), buffered otherwise; naive is the plain loop.
        assert!(auto(&square_box(4096, 2, true)).lane_shifts());
        let narrow = PlanRequest {
            strategy: Some(Strategy::Wavefront),
            tile: Some(vec![4096, 128]),
            ..PlanRequest::default()
        };
        let buffered = plan_cpu(&square_box(4096, 2, true), &narrow, &machine()).unwrap();
        assert!(buffered.column_sums() && !buffered.lane_shifts());
        let naive = PlanRequest {
            strategy: Some(Strategy::Naive),
            ..PlanRequest::default()
        };
        assert!(!plan_cpu(&star, &naive, &machine()).unwrap().lane_shifts());
    }

    #[test]
    fn programs_the_wavefront_cannot_stream_run_overlapped() {
        let bound = jacobi(2, 4096, ScalarType::F32, false, true);
        assert_eq!(
            wavefront_unsupported(&bound).as_deref(),
            Some("field `K` is read-only")
        );
        assert_eq!(auto(&bound).strategy, CpuStrategy::Overlapped);
        let request = PlanRequest {
            strategy: Some(Strategy::Wavefront),
            ..PlanRequest::default()
        };
        let periodic = jacobi(2, 64, ScalarType::F32, true, false);
        assert_eq!(
            plan_cpu(&periodic, &request, &machine())
                .unwrap_err()
                .to_string(),
            "the wavefront strategy cannot run this program: a read wraps around a periodic border; use `overlapped` or `parallel`"
        );
    }

    #[test]
    fn overlapped_tiles_stop_shrinking_where_it_does_not_pay() {
        let overlapped = |bound: &BoundProgram| {
            let request = PlanRequest {
                strategy: Some(Strategy::Overlapped),
                ..PlanRequest::default()
            };
            plan_cpu(bound, &request, &machine()).expect("plans").tile
        };
        // Periodic edges make whole-axis hulls whatever the tile: halving never helps.
        let periodic = jacobi(2, 20000, ScalarType::U8, true, false);
        assert_eq!(overlapped(&periodic), vec![512, 512]);
        // Without wrapping the scratch shrinks, but no tiling makes more than 2^16 tiles.
        let one_d = jacobi(1, 1 << 30, ScalarType::F64, false, false);
        let tile = overlapped(&one_d)[0];
        assert!(
            (1u64 << 30).div_ceil(tile as u64) <= MAX_OVERLAPPED_TILES,
            "{tile}"
        );
    }

    #[test]
    fn requested_tiles_and_depths_are_kept() {
        let request = PlanRequest {
            strategy: Some(Strategy::Wavefront),
            tile: Some(vec![100, 64]),
            time_tile: Some(3),
            ..PlanRequest::default()
        };
        let plan = plan_cpu(
            &jacobi(2, 300, ScalarType::F64, false, false),
            &request,
            &machine(),
        )
        .expect("plans");
        assert_eq!((plan.tile, plan.time_tile), (vec![100, 64], 3));
        assert_eq!(stream_skew(&jacobi(2, 8, ScalarType::F64, false, false)), 1);
    }
}
