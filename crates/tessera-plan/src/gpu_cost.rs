//! The GPU cost model: the time one step of a plan takes on a device, predicted from what its
//! kernels move and issue, so that the planner can choose a strategy, block and time tile per
//! program and device, and `explain` can say why it rejected the others.
//!
//! A kernel's time per point is the largest of three bounds (Rawat et al., the roofline of
//! Williams et al.):
//! - **memory**: the bytes it must move to and from device memory (each field once per pass),
//!   at the device's bandwidth, scaled by the warps it keeps resident (its occupancy times the
//!   share of the device's block slots its launch fills; bandwidth saturates at
//!   `MEMORY_SATURATION_OCCUPANCY`) and by the bytes each thread keeps in flight (one f32
//!   point per thread moves half what one f64 point does);
//! - **cache**: the bytes loaded again (neighbours read directly hit L1 at a high rate; tile
//!   halos come from L2 at a much lower one);
//! - **instructions**: the reads and operations of each point, recomputed halo points included,
//!   issued by the multiprocessors that have a block, at full rate only with enough warps to
//!   hide latency.
//!
//! A step adds each launch's fixed host cost. The result is scaled by the efficiency measured
//! for the kind of kernel on a GPU ([`MEASURED_EFFICIENCY`]): the fraction of its analytic
//! bound it reached in practice (index arithmetic, barriers, tails). A kind never measured
//! gets the lowest efficiency measured on its grid's dimension, and must be predicted
//! [`UNMEASURED_MARGIN`] times faster than a measured one to be chosen ([`Prediction::score`]):
//! the model is a guide, and a guess should not displace a measurement on a close call.
//!
//! Fitted on the H200 measurements of docs/performance.md (56 plans of 7 cases at the paper
//! sizes, every kind of kernel, with an efficiency per kind, dimension, element size and time
//! tile), the model predicts each plan's GCells/s within a factor 1.26 on average over those
//! (root mean square of the log ratio 0.231, in sample: most rows are fitted on one to four
//! plans) and within 1.29 (0.254) with the held-out checks added: j2d9pt-box, and tiny grids
//! testing launch costs and partly filled devices. Its default plan was measured within 5%
//! of the fastest plan measured in 8 of the 10 cases; fdtd2d takes `overlapped` T=4 at 0.86
//! of streaming T=4's rate, j2d9pt-box streaming T=2 at 0.88 of T=4's.

use crate::gpu::{DeviceLimits, GpuStrategy};

/// Multiprocessors of the GPUs the constants below were fitted on (H100 SXM5, H200 SXM).
const FITTED_MULTIPROCESSORS: f64 = 132.0;

/// A device-to-device copy on that H100, GB/s (2977-2990 in the runs of docs/performance.md).
const FITTED_MEMORY_GB_S: f64 = 2983.0;

/// What a copy reaches of the data-sheet peak on that H100.
const COPY_FRACTION_OF_PEAK: f64 = 2983.0 / 3350.0;

/// How fast a GPU moves bytes and issues work: the constants of [`predict`].
#[derive(Clone, Debug, PartialEq)]
pub struct GpuThroughput {
    /// Device-memory bandwidth a kernel reaches at full occupancy, GB/s (a copy's).
    pub memory_gb_s: f64,
    /// Bandwidth at which neighbours loaded again by direct reads hit the caches (L1), GB/s.
    pub direct_reload_gb_s: f64,
    /// Bandwidth at which a shared tile's halo is loaded again (from L2), GB/s.
    pub halo_reload_gb_s: f64,
    /// Reads and operations of stencil points the device issues per nanosecond.
    pub instructions_per_ns: f64,
    /// The host's cost of one kernel launch in the time loop, microseconds.
    pub launch_us: f64,
}

impl GpuThroughput {
    /// The throughput of a device with `limits`: constants fitted on Hopper GPUs of 132
    /// multiprocessors (the memory and cache rates on the H100, the issue rate on the H200,
    /// where 24 per ns fitted the 56 plans best among 12, 16, 20 and 24) scaled by its
    /// multiprocessors, or by `peak_gb_s` (a data-sheet peak) for its memory when known.
    pub fn of(limits: &DeviceLimits, peak_gb_s: Option<f64>) -> GpuThroughput {
        let scale = f64::from(limits.multiprocessors.max(1)) / FITTED_MULTIPROCESSORS;
        GpuThroughput {
            memory_gb_s: peak_gb_s.map_or(FITTED_MEMORY_GB_S * scale, |peak| {
                peak * COPY_FRACTION_OF_PEAK
            }),
            direct_reload_gb_s: 12_000.0 * scale,
            halo_reload_gb_s: 2_500.0 * scale,
            instructions_per_ns: 24_000.0 * scale,
            // Recorded steps replayed as CUDA graphs on the H200: j2d5pt at 256^2 (0.5 MB per
            // step) ran 1.21 us per step of one launch, 3.34 launched one by one. Steps that
            // are not recorded (a kernel reads `t`) pay the latter.
            launch_us: 1.1,
        }
    }
}

/// What one kernel of a plan's pass costs per step, as the model sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelCost {
    /// Points it computes per step.
    pub points: f64,
    /// Bytes per point it must move to or from device memory.
    pub memory_bytes: f64,
    /// Bytes per point it loads again (neighbours, tile halos).
    pub reload_bytes: f64,
    /// Reads and operations per point, recomputed points included.
    pub instructions: f64,
    /// Points computed more than once, over those it owns (a time tile's halo).
    pub recomputed: f64,
    /// Its occupancy (resident threads over the most a multiprocessor holds).
    pub occupancy: f64,
    /// The fraction of the device's resident block slots (multiprocessors times blocks per
    /// multiprocessor) its blocks fill: below 1 when the launch has less than a wave.
    pub slot_fill: f64,
    /// The fraction of the multiprocessors that get a block (below 1 for fewer blocks).
    pub multiprocessor_fill: f64,
    /// Points each thread computes per launch: a thread that loops over several keeps their
    /// loads in flight together.
    pub points_per_thread: f64,
}

/// What one step of a plan costs: its kernels and its launches.
#[derive(Clone, Debug, PartialEq)]
pub struct StepCost {
    /// The strategy of the plan (whether reloads are direct reads or tile halos, and which
    /// measured efficiency applies).
    pub strategy: GpuStrategy,
    /// Steps fused per pass.
    pub time_tile: u32,
    /// The grid's dimension.
    pub dims: usize,
    /// Bytes of the widest field element (4 for f32, 8 for f64, 2 for f16 storage): each
    /// load keeps that many bytes in flight, so narrow elements reach less of the bandwidth.
    pub element_bytes: usize,
    /// The kernels of a pass without reductions, per step.
    pub kernels: Vec<KernelCost>,
    /// Kernel launches per step.
    pub launches: f64,
    /// Points updated per step (the rate's numerator).
    pub updated_points: f64,
}

impl StepCost {
    /// Bytes moved per updated point and step, reloads included.
    pub fn bytes_per_point(&self) -> f64 {
        let moved: f64 = (self.kernels.iter())
            .map(|k| (k.memory_bytes + k.reload_bytes) * k.points)
            .sum();
        moved / self.updated_points.max(1.0)
    }

    /// The most any kernel recomputes.
    pub fn recomputed(&self) -> f64 {
        self.kernels
            .iter()
            .map(|k| k.recomputed)
            .fold(0.0, f64::max)
    }

    /// The lowest occupancy of its kernels.
    pub fn lowest_occupancy(&self) -> f64 {
        self.kernels.iter().map(|k| k.occupancy).fold(1.0, f64::min)
    }
}

/// Which bound sets a prediction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// Device memory at the kernel's occupancy.
    Memory,
    /// Reloads from the caches.
    Cache,
    /// Reads and operations issued.
    Instructions,
    /// The host's cost of the launches.
    Launches,
}

impl Bound {
    /// The bound in words.
    pub fn name(self) -> &'static str {
        match self {
            Bound::Memory => "device memory",
            Bound::Cache => "cache reloads",
            Bound::Instructions => "instructions issued",
            Bound::Launches => "kernel launches",
        }
    }
}

/// How much faster than a measured strategy an unmeasured one must be predicted to be chosen:
/// the model's typical error on the measured plans with one efficiency per kind, dimension and
/// element size (e^0.346, 2026-11-27), a fairer guess of its error on a kind it has not seen
/// than the closer in-sample fit of the per-time-tile rows.
pub const UNMEASURED_MARGIN: f64 = 1.41;

/// Whether a strategy's efficiency was measured on a GPU or assumed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Efficiency {
    /// Measured on the named GPU ([`MEASURED_EFFICIENCY`]).
    Measured(f64, &'static str),
    /// Not measured: the lowest measured for the grid's dimension.
    Assumed(f64),
}

impl Efficiency {
    /// The factor applied to the analytic bound.
    pub fn factor(self) -> f64 {
        match self {
            Efficiency::Measured(f, _) | Efficiency::Assumed(f) => f,
        }
    }
}

/// The model's prediction for one plan.
#[derive(Clone, Debug, PartialEq)]
pub struct Prediction {
    /// Seconds per step.
    pub seconds_per_step: f64,
    /// The bound that dominates the step.
    pub bound: Bound,
    /// The efficiency applied.
    pub efficiency: Efficiency,
}

impl Prediction {
    /// Points updated per second, in billions.
    pub fn gcells(&self, cost: &StepCost) -> f64 {
        cost.updated_points / self.seconds_per_step / 1e9
    }

    /// What plans are ranked by: the predicted rate, divided by [`UNMEASURED_MARGIN`] where the
    /// strategy's efficiency is assumed.
    pub fn score(&self, cost: &StepCost) -> f64 {
        match self.efficiency {
            Efficiency::Measured(..) => self.gcells(cost),
            Efficiency::Assumed(_) => self.gcells(cost) / UNMEASURED_MARGIN,
        }
    }
}

/// The name of the kernels a strategy runs at a time tile, which the efficiencies are
/// measured for: the strategy's, `streaming-time` for streaming at T > 1 (a different
/// kernel from single-step streaming).
pub fn kernel_class(strategy: GpuStrategy, time_tile: u32) -> &'static str {
    match strategy {
        GpuStrategy::Streaming if time_tile > 1 => "streaming-time",
        other => other.name(),
    }
}

/// What one kind of kernel reached on a GPU: a row of [`MEASURED_EFFICIENCY`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MeasuredEfficiency {
    /// The kind of kernel ([`kernel_class`]).
    pub class: &'static str,
    /// The grid's dimension.
    pub dims: usize,
    /// The widest element's size in bytes.
    pub element_bytes: usize,
    /// The steps a pass fuses (1 for single-step kernels).
    pub time_tile: u32,
    /// Measured over predicted GCells/s (the fraction of the analytic bound reached).
    pub efficiency: f64,
    /// The GPU it was measured on.
    pub gpu: &'static str,
}

/// A row measured on the H200.
const fn h200(
    class: &'static str,
    dims: usize,
    element_bytes: usize,
    time_tile: u32,
    efficiency: f64,
) -> MeasuredEfficiency {
    MeasuredEfficiency {
        class,
        dims,
        element_bytes,
        time_tile,
        efficiency,
        gpu: "H200",
    }
}

/// The fraction of its analytic bound each kind of kernel ([`kernel_class`]) reached, per grid
/// dimension, element size and time tile: the geometric mean of measured over predicted
/// GCells/s over the cases of docs/performance.md (j2d5pt and j3d7pt at f32 and f64, j3d27pt,
/// gaussian2d and fdtd2d at f32; `scripts/fit-gpu-efficiency.py` computes them from
/// `scripts/gpu-bench.py --json`). The element size matters beyond the bytes in flight
/// [`predict`] accounts for, and the time tile because a deeper pass holds more registers
/// than the resource model estimates (j3d7pt f32 T=4: 92 per thread by ptxas against 41
/// estimated, so 25% occupancy where the model sees 38%). The rows are the H200 sessions of
/// 2026-11-28 (naive, streaming, overlapped and streaming time tiles, the 2D ones in rows of
/// 128 threads) and 2026-11-27 (tiled and wavefront), at the paper sizes with CUDA graphs on,
/// j2d9pt-box left out to check the fit. Kinds and dimensions not listed were not measured.
pub const MEASURED_EFFICIENCY: [MeasuredEfficiency; 33] = [
    h200("naive", 2, 4, 1, 1.267),
    h200("naive", 2, 8, 1, 0.805),
    h200("naive", 3, 4, 1, 1.114),
    h200("naive", 3, 8, 1, 0.798),
    h200("tiled", 2, 4, 1, 0.754),
    h200("tiled", 2, 8, 1, 0.602),
    h200("tiled", 3, 4, 1, 0.602),
    h200("tiled", 3, 8, 1, 1.099),
    h200("overlapped", 2, 4, 4, 0.435),
    h200("overlapped", 2, 8, 4, 0.400),
    h200("overlapped", 3, 4, 4, 0.531),
    h200("overlapped", 3, 8, 4, 1.084),
    h200("streaming", 2, 4, 1, 1.766),
    h200("streaming", 2, 8, 1, 0.898),
    h200("streaming", 3, 4, 1, 1.488),
    h200("streaming", 3, 8, 1, 1.040),
    h200("streaming-time", 2, 4, 2, 1.602),
    h200("streaming-time", 2, 4, 4, 1.520),
    h200("streaming-time", 2, 8, 4, 1.186),
    h200("streaming-time", 3, 4, 2, 0.666),
    h200("streaming-time", 3, 4, 3, 0.698),
    h200("streaming-time", 3, 4, 4, 0.305),
    h200("streaming-time", 3, 8, 2, 0.805),
    h200("streaming-time", 3, 8, 3, 0.622),
    h200("streaming-time", 3, 8, 4, 0.614),
    h200("wavefront", 2, 4, 2, 0.513),
    h200("wavefront", 2, 4, 4, 0.410),
    h200("wavefront", 2, 8, 2, 0.706),
    h200("wavefront", 2, 8, 4, 0.521),
    h200("wavefront", 3, 4, 2, 0.352),
    h200("wavefront", 3, 4, 4, 0.308),
    h200("wavefront", 3, 8, 2, 0.352),
    h200("wavefront", 3, 8, 4, 0.192),
];

/// The efficiency of `strategy` (fusing `time_tile` steps) on a grid of `dims` axes whose
/// widest element has `element_bytes`: measured for its kernel class and dimension at that
/// element size and time tile, else at the nearest measured size, then the nearest measured
/// time tile (the shallower of two as near); for a class and dimension never measured, the
/// lowest measured for `dims` (or for any dimension where none was).
pub fn efficiency(
    strategy: GpuStrategy,
    time_tile: u32,
    dims: usize,
    element_bytes: usize,
) -> Efficiency {
    let class = kernel_class(strategy, time_tile);
    let measured = (MEASURED_EFFICIENCY.iter())
        .filter(|row| row.class == class && row.dims == dims)
        .min_by_key(|row| {
            (
                row.element_bytes.abs_diff(element_bytes),
                row.time_tile.abs_diff(time_tile),
                row.time_tile,
            )
        });
    if let Some(row) = measured {
        return Efficiency::Measured(row.efficiency, row.gpu);
    }
    let lowest = |same_dims: bool| {
        (MEASURED_EFFICIENCY.iter())
            .filter(|row| !same_dims || row.dims == dims)
            .map(|row| row.efficiency)
            .reduce(f64::min)
    };
    Efficiency::Assumed(lowest(true).or_else(|| lowest(false)).unwrap_or(1.0))
}

/// The share of the device's warp slots whose loads saturate device memory (Little's law:
/// enough loads in flight to cover its latency); below it, bandwidth falls in proportion.
const MEMORY_SATURATION_OCCUPANCY: f64 = 0.75;

/// The occupancy at which a multiprocessor's warps hide the latency of its caches and
/// arithmetic (32 of 64 warps on Hopper); below it, issue slows in proportion.
const LATENCY_HIDING_OCCUPANCY: f64 = 0.5;

/// The predicted time of one step of the plan `cost` describes on a device of `throughput`.
pub fn predict(cost: &StepCost, throughput: &GpuThroughput) -> Prediction {
    let direct_reads =
        matches!(cost.strategy, GpuStrategy::Naive | GpuStrategy::Streaming) && cost.time_tile <= 1;
    let reload_gb_s = if direct_reads {
        throughput.direct_reload_gb_s
    } else {
        throughput.halo_reload_gb_s
    };
    // Seconds per step each bound sets, summed over the kernels it binds.
    let mut seconds = [
        (Bound::Memory, 0.0),
        (Bound::Cache, 0.0),
        (Bound::Instructions, 0.0),
    ];
    for kernel in &cost.kernels {
        // Bandwidth follows the warps resident on the whole device; the caches and the issue
        // rate belong to the multiprocessors that have a block.
        let resident = (kernel.occupancy * kernel.slot_fill).max(1e-4);
        let busy = kernel.multiprocessor_fill.max(1e-4);
        // A busy multiprocessor issues at full rate only with enough warps to hide latency.
        let per_busy = resident / busy;
        let issue = busy * (per_busy / LATENCY_HIDING_OCCUPANCY).min(1.0);
        // The bytes a thread keeps in flight, against one f64's: threads computing one f32
        // point each reached 2.1 TB/s on the H200, in f64 3.3 (j2d5pt, j3d7pt `naive`).
        let in_flight = (cost.element_bytes as f64 * kernel.points_per_thread / 8.0).min(1.0);
        // Device memory saturates before every warp slot is filled.
        let saturated = (resident / MEMORY_SATURATION_OCCUPANCY).min(1.0);
        let per_point_ns = [
            kernel.memory_bytes / (throughput.memory_gb_s * saturated * in_flight),
            kernel.reload_bytes / (reload_gb_s * issue),
            kernel.instructions / (throughput.instructions_per_ns * issue),
        ];
        let (binding, ns) = (per_point_ns.into_iter().enumerate())
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap_or((0, 0.0));
        seconds[binding].1 += ns * kernel.points * 1e-9;
    }
    let kernel_seconds: f64 = seconds.iter().map(|(_, s)| s).sum();
    let launch_seconds = cost.launches * throughput.launch_us * 1e-6;
    let bound = match seconds.iter().max_by(|a, b| a.1.total_cmp(&b.1)) {
        Some(&(bound, _)) if launch_seconds <= kernel_seconds => bound,
        _ => Bound::Launches,
    };
    let efficiency = efficiency(cost.strategy, cost.time_tile, cost.dims, cost.element_bytes);
    let seconds_per_step = (kernel_seconds + launch_seconds) / efficiency.factor();
    Prediction {
        seconds_per_step,
        bound,
        efficiency,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One kernel of `bytes` per point over a million points, at full occupancy.
    fn step(strategy: GpuStrategy, bytes: f64, launches: f64) -> StepCost {
        StepCost {
            strategy,
            time_tile: 1,
            dims: 2,
            element_bytes: 4,
            kernels: vec![KernelCost {
                points: 1e6,
                memory_bytes: bytes,
                reload_bytes: 0.0,
                instructions: 10.0,
                recomputed: 0.0,
                occupancy: 1.0,
                slot_fill: 1.0,
                multiprocessor_fill: 1.0,
                points_per_thread: 1.0,
            }],
            launches,
            updated_points: 1e6,
        }
    }

    #[test]
    fn a_memory_bound_kernel_runs_at_its_measured_fraction_of_the_bandwidth() {
        let throughput = GpuThroughput::of(&DeviceLimits::typical_gpu(), Some(3350.0));
        let cost = step(GpuStrategy::Naive, 8.0, 0.0);
        let prediction = predict(&cost, &throughput);
        assert_eq!(prediction.bound, Bound::Memory);
        assert_eq!(prediction.efficiency, Efficiency::Measured(1.267, "H200"));
        // A thread's one f32 load keeps half an f64's bytes in flight: half the bandwidth.
        let expected = 2983.0 / 8.0 * 1.267 * 0.5;
        assert!((prediction.gcells(&cost) - expected).abs() < 1e-6 * expected);
    }

    #[test]
    fn launches_dominate_a_small_step_and_below_saturation_halving_occupancy_halves_bandwidth() {
        let throughput = GpuThroughput::of(&DeviceLimits::typical_gpu(), Some(3350.0));
        let mut cost = step(GpuStrategy::Tiled, 8.0, 1000.0);
        assert_eq!(predict(&cost, &throughput).bound, Bound::Launches);
        cost.launches = 0.0;
        let full = predict(&cost, &throughput).seconds_per_step;
        cost.kernels[0].occupancy = MEMORY_SATURATION_OCCUPANCY;
        let saturated = predict(&cost, &throughput).seconds_per_step;
        assert!((saturated / full - 1.0).abs() < 1e-9);
        cost.kernels[0].occupancy = MEMORY_SATURATION_OCCUPANCY / 2.0;
        let half = predict(&cost, &throughput).seconds_per_step;
        assert!((half / full - 2.0).abs() < 1e-9);
    }

    #[test]
    fn a_launch_of_fewer_blocks_than_the_device_holds_gets_that_share_of_it() {
        let throughput = GpuThroughput::of(&DeviceLimits::typical_gpu(), Some(3350.0));
        let mut cost = step(GpuStrategy::Naive, 8.0, 0.0);
        let full = predict(&cost, &throughput).seconds_per_step;
        // A tenth of the resident slots filled: that share of the saturating occupancy.
        cost.kernels[0].slot_fill = 0.1;
        let memory = predict(&cost, &throughput);
        assert_eq!(memory.bound, Bound::Memory);
        let slower = MEMORY_SATURATION_OCCUPANCY / 0.1;
        assert!((memory.seconds_per_step / full - slower).abs() < 1e-9);
        // Instructions are issued by the multiprocessors that have a block, at full rate only
        // with enough warps resident to hide latency.
        cost.kernels[0].memory_bytes = 0.0;
        cost.kernels[0].instructions = 1e4;
        cost.kernels[0].slot_fill = 1.0;
        let busy = predict(&cost, &throughput).seconds_per_step;
        cost.kernels[0].slot_fill = 0.25;
        cost.kernels[0].multiprocessor_fill = 0.25;
        let quarter = predict(&cost, &throughput);
        assert_eq!(quarter.bound, Bound::Instructions);
        assert!((quarter.seconds_per_step / busy - 4.0).abs() < 1e-9);
        cost.kernels[0].occupancy = LATENCY_HIDING_OCCUPANCY / 2.0;
        let few_warps = predict(&cost, &throughput).seconds_per_step;
        assert!((few_warps / quarter.seconds_per_step - 2.0).abs() < 1e-9);
    }

    #[test]
    fn a_strategy_gets_its_measured_efficiency_or_the_lowest_measured() {
        let measured = |f| Efficiency::Measured(f, "H200");
        let expected = [
            ((GpuStrategy::Streaming, 4, 3, 8), measured(0.614)),
            // f16 storage gets the nearest measured element size, f32's.
            ((GpuStrategy::Streaming, 4, 3, 2), measured(0.305)),
            // An unmeasured time tile gets the nearest measured one, the shallower of two as
            // near.
            ((GpuStrategy::Streaming, 6, 2, 4), measured(1.520)),
            ((GpuStrategy::Overlapped, 2, 2, 8), measured(0.400)),
            ((GpuStrategy::Tiled, 1, 2, 8), measured(0.602)),
            // No 1D kernel was measured: the lowest of any dimension.
            ((GpuStrategy::Tiled, 1, 1, 4), Efficiency::Assumed(0.192)),
        ];
        for ((strategy, time_tile, dims, bytes), efficiency_wanted) in expected {
            assert_eq!(
                efficiency(strategy, time_tile, dims, bytes),
                efficiency_wanted,
                "{strategy:?} T={time_tile} in {dims}D at {bytes} bytes"
            );
        }
    }
}
