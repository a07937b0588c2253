//! The plan space an autotuner searches, per backend kind, as [`PlanRequest`]s: each
//! strategy's own default first, then the neighbours of a plan (time tiles, tiles or blocks,
//! threads, vector widths). Candidates are requests, not plans: the backend's own planner
//! completes and checks each one (a candidate that does not fit is refused there and skipped),
//! so the tuner never builds a plan the planner could not.

use crate::cpu::{CpuPlan, CpuStrategy};
use crate::gpu::{GpuPlan, GpuStrategy, PlaneReads};
use crate::isa::TargetIsa;
use crate::plan::{BackendPlan, Plan};
use crate::request::PlanRequest;

/// Time tiles tried for strategies that fuse steps (CPU) and for GPU plans.
const TIME_TILES: [u32; 9] = [1, 2, 3, 4, 6, 8, 12, 16, 32];

/// GPU block shapes tried, as `--tile` values for 1, 2 and 3 axes (slowest axis first).
const GPU_BLOCKS: [&[usize]; 24] = [
    &[64],
    &[128],
    &[256],
    &[512],
    &[4, 32],
    &[8, 32],
    &[16, 32],
    &[32, 32],
    &[4, 64],
    &[2, 128],
    &[1, 128],
    &[1, 256],
    &[1, 512],
    &[16, 16],
    &[8, 64],
    &[1, 4, 32],
    &[1, 8, 32],
    &[1, 16, 16],
    &[1, 16, 32],
    &[1, 8, 64],
    &[1, 2, 128],
    &[1, 4, 128],
    &[1, 2, 256],
    &[2, 4, 32],
];

/// One request per strategy of `plan`'s backend (with `base`'s arithmetic and device), only
/// `base`'s strategy when it names one; the single-threaded CPU `naive` strategy is left out
/// (it only serves as a baseline).
pub fn strategy_requests(plan: &Plan, base: &PlanRequest) -> Vec<PlanRequest> {
    let strategies: Vec<_> = match &plan.backend {
        BackendPlan::Cpu(_) => (CpuStrategy::ALL.into_iter())
            .filter(|s| *s != CpuStrategy::Naive)
            .map(CpuStrategy::strategy)
            .collect(),
        BackendPlan::Opencl(_) | BackendPlan::Cuda(_) => {
            GpuStrategy::ALL.map(GpuStrategy::strategy).to_vec()
        }
        BackendPlan::Reference(_) => Vec::new(),
    };
    let only = base.strategy;
    (strategies.into_iter())
        .filter(|s| only.is_none_or(|o| o == *s))
        .map(|strategy| PlanRequest {
            strategy: Some(strategy),
            ..base.clone()
        })
        .collect()
}

/// The request that reproduces `plan`'s tunable decisions (strategy, tile or block, time
/// tile, threads, vector width) with `base`'s arithmetic and device.
pub fn request_of(plan: &Plan, base: &PlanRequest) -> PlanRequest {
    match &plan.backend {
        BackendPlan::Cpu(cpu) => PlanRequest {
            strategy: Some(cpu.strategy.strategy()),
            tile: Some(cpu.tile.clone()),
            time_tile: Some(cpu.time_tile),
            threads: Some(cpu.threads),
            isa: Some(cpu.isa),
            ..base.clone()
        },
        BackendPlan::Opencl(gpu) | BackendPlan::Cuda(gpu) => PlanRequest {
            strategy: Some(gpu.strategy.strategy()),
            tile: Some(gpu_tile(gpu, plan.grid.len())),
            time_tile: Some(gpu.time_tile),
            plane_reads: (gpu.strategy == GpuStrategy::Streaming).then_some(gpu.plane_reads),
            prefetch: prefetches(gpu).then_some(gpu.prefetch),
            ..base.clone()
        },
        BackendPlan::Reference(_) => base.clone(),
    }
}

/// Requests near `plan`: one decision changed at a time, with `base`'s arithmetic and device.
/// Some may not fit the program or device: the planner refuses those.
pub fn neighbours(plan: &Plan, base: &PlanRequest) -> Vec<PlanRequest> {
    let here = request_of(plan, base);
    match &plan.backend {
        BackendPlan::Cpu(cpu) => cpu_neighbours(cpu, &here),
        BackendPlan::Opencl(gpu) | BackendPlan::Cuda(gpu) => {
            gpu_neighbours(gpu, plan.grid.len(), &here)
        }
        BackendPlan::Reference(_) => Vec::new(),
    }
}

/// CPU neighbours: other time tiles (the planner sizes the tile for each), tiles halved and
/// doubled along one axis or all, half the threads, and narrower vectors the host runs.
fn cpu_neighbours(cpu: &CpuPlan, here: &PlanRequest) -> Vec<PlanRequest> {
    let mut out = Vec::new();
    if cpu.strategy.fuses_steps() {
        out.extend(
            (TIME_TILES.into_iter())
                .filter(|&t| t != cpu.time_tile)
                .map(|t| PlanRequest {
                    tile: None,
                    time_tile: Some(t),
                    ..here.clone()
                }),
        );
    }
    if matches!(
        cpu.strategy,
        CpuStrategy::Blocked | CpuStrategy::Overlapped | CpuStrategy::Wavefront
    ) {
        out.extend(scaled_tiles(&cpu.tile).into_iter().map(|tile| PlanRequest {
            tile: Some(tile),
            ..here.clone()
        }));
    }
    if cpu.threads > 1 {
        out.push(PlanRequest {
            threads: Some(cpu.threads / 2),
            ..here.clone()
        });
    }
    out.extend(narrower_isas(cpu.isa).into_iter().map(|isa| PlanRequest {
        isa: Some(isa),
        ..here.clone()
    }));
    out
}

/// GPU neighbours: every block shape of the grid's rank (at most 3 axes) and other time tiles.
fn gpu_neighbours(gpu: &GpuPlan, dims: usize, here: &PlanRequest) -> Vec<PlanRequest> {
    let axes = dims.clamp(1, 3);
    let current = gpu_tile(gpu, dims);
    let blocks = (GPU_BLOCKS.into_iter())
        .filter(|b| b.len() == axes && **b != current[..])
        .map(|b| PlanRequest {
            tile: Some(b.to_vec()),
            ..here.clone()
        });
    let depths = (TIME_TILES.into_iter())
        .filter(|&t| t != gpu.time_tile)
        .map(|t| PlanRequest {
            time_tile: Some(t),
            ..here.clone()
        });
    let planes = (PlaneReads::ALL.into_iter())
        .filter(|&r| gpu.strategy == GpuStrategy::Streaming && r != gpu.plane_reads)
        .map(|r| PlanRequest {
            plane_reads: Some(r),
            ..here.clone()
        });
    let prefetches = (PREFETCH_DISTANCES.into_iter())
        .filter(|&d| prefetches(gpu) && d != gpu.prefetch)
        .map(|d| PlanRequest {
            prefetch: Some(d),
            ..here.clone()
        });
    blocks
        .chain(depths)
        .chain(planes)
        .chain(prefetches)
        .collect()
}

/// The prefetch distances tried around a streaming time tile (the kernel rounds each down to
/// a divisor of its sweep's unrolling, commonly 6 planes).
const PREFETCH_DISTANCES: [u32; 4] = [0, 1, 3, 6];

/// Whether `gpu` may prefetch: a streaming time tile.
fn prefetches(gpu: &GpuPlan) -> bool {
    gpu.strategy == GpuStrategy::Streaming && gpu.time_tile > 1
}

/// A GPU plan's block as a `--tile` value for a grid of `dims` axes (slowest axis first).
fn gpu_tile(gpu: &GpuPlan, dims: usize) -> Vec<usize> {
    let axes = dims.clamp(1, 3);
    gpu.block[..axes]
        .iter()
        .rev()
        .map(|&b| b as usize)
        .collect()
}

/// `tile` halved and doubled along each axis, then as a whole (sizes at least 1, distinct).
fn scaled_tiles(tile: &[usize]) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    let scale = |axis: Option<usize>, up: bool| -> Vec<usize> {
        (tile.iter().enumerate())
            .map(|(a, &t)| match axis {
                Some(only) if only != a => t,
                _ if up => t.saturating_mul(2),
                _ => (t / 2).max(1),
            })
            .collect()
    };
    let axes = (0..tile.len()).map(Some).chain([None]);
    for axis in axes {
        for up in [false, true] {
            let scaled = scale(axis, up);
            if scaled != tile && !out.contains(&scaled) {
                out.push(scaled);
            }
        }
    }
    out
}

/// The narrower instruction sets a host whose best is `isa` also runs (narrower vectors).
fn narrower_isas(isa: TargetIsa) -> Vec<TargetIsa> {
    (TargetIsa::ALL.into_iter())
        .filter(|&other| other != isa && other.runs_on(isa))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::Strategy;

    fn cpu_plan(strategy: CpuStrategy, tile: Vec<usize>, time_tile: u32) -> Plan {
        Plan {
            format: crate::PLAN_FORMAT,
            program: "p".into(),
            grid: vec![64, 64],
            backend: BackendPlan::Cpu(CpuPlan {
                strategy,
                tile,
                time_tile,
                threads: 2,
                exact: false,
                isa: TargetIsa::Avx2,
                stages: Vec::new(),
                plane_pairs: false,
            }),
        }
    }

    #[test]
    fn cpu_strategies_leave_out_naive_and_honour_a_requested_one() {
        let plan = cpu_plan(CpuStrategy::Parallel, vec![1, 64], 1);
        let all = strategy_requests(&plan, &PlanRequest::exact());
        assert_eq!(all.len(), 4);
        assert!(all.iter().all(
            |r| r.strategy != Some(Strategy::Naive) && r.arithmetic == crate::Arithmetic::Exact
        ));
        let only = PlanRequest {
            strategy: Some(Strategy::Wavefront),
            ..PlanRequest::default()
        };
        assert_eq!(strategy_requests(&plan, &only).len(), 1);
    }

    #[test]
    fn neighbours_change_one_decision_and_keep_the_request_of_the_plan() {
        let plan = cpu_plan(CpuStrategy::Overlapped, vec![16, 64], 4);
        let here = request_of(&plan, &PlanRequest::default());
        let near = neighbours(&plan, &PlanRequest::default());
        assert!(near.contains(&PlanRequest {
            threads: Some(1),
            ..here.clone()
        }));
        assert!(near.contains(&PlanRequest {
            tile: Some(vec![8, 64]),
            ..here.clone()
        }));
        assert!(near.contains(&PlanRequest {
            isa: Some(TargetIsa::Sse2),
            ..here.clone()
        }));
        assert!(near.iter().all(|r| r.strategy == here.strategy));
        assert!(!near.contains(&here));
    }

    #[test]
    fn gpu_blocks_match_the_grid_rank() {
        let plan = Plan {
            format: crate::PLAN_FORMAT,
            program: "p".into(),
            grid: vec![64, 64],
            backend: BackendPlan::Opencl(GpuPlan::new(GpuStrategy::Tiled)),
        };
        let here = request_of(&plan, &PlanRequest::default());
        assert_eq!(here.tile, Some(vec![8, 32]));
        let near = neighbours(&plan, &PlanRequest::default());
        assert!(
            near.iter()
                .all(|r| r.tile.as_ref().is_none_or(|t| t.len() == 2))
        );
        assert!(!near.contains(&here));
        assert_eq!(
            strategy_requests(&plan, &PlanRequest::default()).len(),
            GpuStrategy::ALL.len()
        );
    }

    #[test]
    fn streaming_plans_try_the_other_plane_reads() {
        let streaming = GpuPlan {
            plane_reads: PlaneReads::Cache,
            ..GpuPlan::new(GpuStrategy::Streaming)
        };
        let plan = Plan {
            format: crate::PLAN_FORMAT,
            program: "p".into(),
            grid: vec![16, 16, 16],
            backend: BackendPlan::Cuda(streaming),
        };
        let here = request_of(&plan, &PlanRequest::default());
        assert_eq!(here.plane_reads, Some(PlaneReads::Cache));
        let near = neighbours(&plan, &PlanRequest::default());
        assert!(
            near.iter()
                .any(|r| r.plane_reads == Some(PlaneReads::Shared))
        );
        let tiled = Plan {
            backend: BackendPlan::Cuda(GpuPlan::new(GpuStrategy::Tiled)),
            ..plan
        };
        let near = neighbours(&tiled, &PlanRequest::default());
        assert!(near.iter().all(|r| r.plane_reads.is_none()));
    }

    #[test]
    fn streaming_time_tiles_try_other_prefetch_distances() {
        let plan = |time_tile, prefetch| Plan {
            format: crate::PLAN_FORMAT,
            program: "p".into(),
            grid: vec![64, 64],
            backend: BackendPlan::Cuda(GpuPlan {
                time_tile,
                prefetch,
                ..GpuPlan::new(GpuStrategy::Streaming)
            }),
        };
        let base = PlanRequest::default();
        let tiled = plan(4, 3);
        assert_eq!(request_of(&tiled, &base).prefetch, Some(3));
        let here = request_of(&tiled, &base);
        let distances: Vec<u32> = (neighbours(&tiled, &base).into_iter())
            .filter(|r| r.tile == here.tile && r.time_tile == here.time_tile)
            .filter(|r| r.plane_reads == here.plane_reads)
            .filter_map(|r| r.prefetch)
            .collect();
        assert_eq!(distances, [0, 1, 6]);
        // One step a launch has nothing to prefetch.
        let single = plan(1, 0);
        assert_eq!(request_of(&single, &base).prefetch, None);
        assert!(
            neighbours(&single, &base)
                .iter()
                .all(|r| r.prefetch.is_none())
        );
    }

    #[test]
    fn scaled_tiles_are_distinct_and_positive() {
        let tiles = scaled_tiles(&[1, 8]);
        assert!(tiles.iter().all(|t| t.iter().all(|&s| s >= 1)));
        assert!(!tiles.contains(&vec![1, 8]));
        let mut unique = tiles.clone();
        unique.dedup();
        assert_eq!(unique.len(), tiles.len());
    }
}
