//! The cost model's view of a lowered program ([`step_cost`]) and the plans it weighs when a
//! request leaves the strategy open ([`candidates`]): each strategy's default plan at a few
//! time tiles, lowered for the device and predicted ([`tessera_plan::gpu_cost`]).

use tessera_analysis::BoundProgram;
use tessera_codegen::kernel::{
    DeviceLimits, GpuPlan, GpuStrategy, HostOp, KernelProgram, kernel_resources, kernel_traffic,
    occupancy,
};
use tessera_plan::gpu_cost::{GpuThroughput, KernelCost, Prediction, StepCost, predict};
use tessera_plan::{PlanError, PlanRequest};

use crate::plan::{lower_for_device, plan_requested};

/// What the model sees of `lowered` (planned with `plan`) on a device with `limits`: the
/// kernels of a pass without reductions per step, with the resource model's occupancy.
pub fn step_cost(
    bound: &BoundProgram,
    plan: &GpuPlan,
    lowered: &KernelProgram,
    limits: &DeviceLimits,
) -> StepCost {
    step_cost_with_registers(bound, plan, lowered, limits, |_| None)
}

/// [`step_cost`] with the registers per thread `registers` gives a kernel (by name; ptxas's
/// count) in place of the resource model's estimate where it gives one.
pub fn step_cost_with_registers(
    bound: &BoundProgram,
    plan: &GpuPlan,
    lowered: &KernelProgram,
    limits: &DeviceLimits,
    registers: impl Fn(&str) -> Option<u32>,
) -> StepCost {
    let host = &lowered.host;
    let kernels = (host.launches())
        .filter(|launch| host.in_plain_pass(launch))
        .filter_map(|launch| {
            let kernel = lowered.kernel(&launch.kernel)?;
            let traffic = kernel_traffic(bound, lowered, kernel);
            let mut resources = kernel_resources(kernel, launch);
            if let Some(count) = registers(&kernel.name) {
                resources.registers_per_thread = count;
            }
            let occupancy = occupancy(limits, &resources);
            let blocks = launch.grid.iter().product::<u64>() as f64;
            let multiprocessors = f64::from(limits.multiprocessors.max(1));
            let slots = multiprocessors * f64::from(occupancy.blocks_per_sm.max(1));
            let threads = blocks * launch.block.iter().map(|&b| f64::from(b)).product::<f64>();
            Some(KernelCost {
                points: traffic.points as f64 / launch.every.max(1) as f64,
                memory_bytes: traffic.bytes() - traffic.reload_bytes,
                reload_bytes: traffic.reload_bytes,
                instructions: traffic.instructions,
                recomputed: traffic.redundant_fraction,
                occupancy: occupancy.occupancy,
                slot_fill: (blocks / slots).min(1.0),
                multiprocessor_fill: (blocks / multiprocessors).min(1.0),
                points_per_thread: independent_points(plan, traffic.points as f64 / threads),
            })
        })
        .collect();
    let launches = match &host.fused {
        Some(fused) => {
            let count = (fused.ops.iter())
                .filter(|op| matches!(op, HostOp::Launch(_)))
                .count();
            count as f64 / f64::from(fused.depth.max(1))
        }
        None => (host.step.iter())
            .filter_map(|op| match op {
                HostOp::Launch(launch) => Some(1.0 / launch.every.max(1) as f64),
                _ => None,
            })
            .sum(),
    };
    StepCost {
        strategy: plan.strategy,
        time_tile: plan.time_tile,
        dims: bound.extents.len(),
        element_bytes: (bound.program().fields.values())
            .map(|field| field.ty.size_bytes())
            .max()
            .unwrap_or(4),
        kernels,
        launches,
        updated_points: bound.updated_points() as f64,
    }
}

/// The points a thread of `plan` computes whose loads can be in flight together, when it
/// computes `per_thread` points in all: a single-step streaming thread walks its chunk plane
/// after plane (each load waits for the register queue to advance), so it counts as one point
/// whatever its elements per thread: on the H200, 4 elements ran within 3% of 1 in 2D (where a
/// thread has one element whatever E) and for j3d7pt f32, 12% slower for j3d7pt f64 and 26%
/// faster for j3d27pt (its elements share loads), where counting them as independent
/// predicted f32 at 4 elements 2x faster. Other threads' points are independent.
fn independent_points(plan: &GpuPlan, per_thread: f64) -> f64 {
    match plan.strategy {
        GpuStrategy::Streaming if plan.time_tile <= 1 => 1.0,
        _ => per_thread.max(1.0),
    }
}

/// A plan the model weighed and predicted.
pub struct Weighed {
    /// The plan.
    pub plan: GpuPlan,
    /// What the model saw of its kernels.
    pub cost: StepCost,
    /// The model's prediction.
    pub prediction: Prediction,
}

impl Weighed {
    /// Predicted points updated per second, in billions.
    pub fn gcells(&self) -> f64 {
        self.prediction.gcells(&self.cost)
    }

    /// What candidates are ranked by ([`Prediction::score`]).
    pub fn score(&self) -> f64 {
        self.prediction.score(&self.cost)
    }
}

/// A candidate plan: the strategy and time tile asked for, and the plan weighed or why the
/// planner or the device refused it.
pub struct Candidate {
    /// The strategy asked for.
    pub strategy: GpuStrategy,
    /// The time tile asked for.
    pub time_tile: u32,
    /// The plan and its prediction, or the refusal.
    pub outcome: Result<Weighed, PlanError>,
}

/// Time tiles the model weighs for strategies that fuse steps (`overlapped` also at 1).
const OVERLAPPED_DEPTHS: [u32; 4] = [1, 2, 4, 8];

/// Time tiles the model weighs for streaming time tiles and the wavefront.
const SWEEP_DEPTHS: [u32; 2] = [2, 4];

/// The (strategy, time tile) pairs the model weighs for `request` (whose strategy is open):
/// the single-step strategies and each fusing strategy at a few depths, or at the request's
/// time tile; only `streaming` when the request chooses its plane reads. Fields stored as
/// `f16`/`bf16` leave out the fusing strategies: their conversions made fused steps
/// compute-bound on the H100 (j2d5pt f16: naive 168 against overlapped 142 GCells/s), which
/// the model does not see.
fn candidate_requests(bound: &BoundProgram, request: &PlanRequest) -> Vec<(GpuStrategy, u32)> {
    let single = [
        GpuStrategy::Naive,
        GpuStrategy::Tiled,
        GpuStrategy::Streaming,
    ];
    let mut pairs: Vec<(GpuStrategy, u32)> = match request.time_tile {
        Some(depth) if depth > 1 => [
            GpuStrategy::Overlapped,
            GpuStrategy::Streaming,
            GpuStrategy::Wavefront,
        ]
        .map(|s| (s, depth))
        .to_vec(),
        Some(_) => (single.into_iter())
            .chain([GpuStrategy::Overlapped])
            .map(|s| (s, 1))
            .collect(),
        None => (single.into_iter().map(|s| (s, 1)))
            .chain(OVERLAPPED_DEPTHS.map(|t| (GpuStrategy::Overlapped, t)))
            .chain(SWEEP_DEPTHS.map(|t| (GpuStrategy::Streaming, t)))
            .chain(SWEEP_DEPTHS.map(|t| (GpuStrategy::Wavefront, t)))
            .collect(),
    };
    if request.plane_reads.is_some() {
        pairs.retain(|(s, _)| *s == GpuStrategy::Streaming);
    }
    if request.prefetch.is_some_and(|ahead| ahead > 0) {
        pairs.retain(|&(s, t)| s == GpuStrategy::Streaming && t > 1);
    }
    let half_storage = (bound.program().fields.values()).any(|f| f.ty.is_storage_only());
    if half_storage {
        pairs.retain(|&(s, t)| t == 1 && s != GpuStrategy::Overlapped);
    }
    pairs
}

/// Every candidate for `request` on a device with `limits` and `throughput`, in the order
/// weighed (ties go to the earlier one).
pub fn candidates(
    bound: &BoundProgram,
    request: &PlanRequest,
    backend: &'static str,
    limits: &DeviceLimits,
    throughput: &GpuThroughput,
) -> Vec<Candidate> {
    (candidate_requests(bound, request).into_iter())
        .map(|(strategy, time_tile)| {
            let asked = PlanRequest {
                strategy: Some(strategy.strategy()),
                time_tile: Some(time_tile),
                ..request.clone()
            };
            let outcome = plan_requested(bound, &asked, backend, limits).and_then(|plan| {
                let lowered = lower_for_device(bound, &plan, limits)?;
                let cost = step_cost(bound, &plan, &lowered, limits);
                let prediction = predict(&cost, throughput);
                Ok(Weighed {
                    plan,
                    cost,
                    prediction,
                })
            });
            Candidate {
                strategy,
                time_tile,
                outcome,
            }
        })
        .collect()
}

/// The candidate with the best score (the first of equals), if any was weighed.
pub fn fastest(candidates: &[Candidate]) -> Option<&Weighed> {
    (candidates.iter())
        .filter_map(|c| c.outcome.as_ref().ok())
        .fold(None, |best: Option<&Weighed>, w| match best {
            Some(b) if b.score() >= w.score() => Some(b),
            _ => Some(w),
        })
}
