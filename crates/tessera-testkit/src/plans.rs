//! The GPU plans every program is tested under: each single-step strategy with a warp-wide
//! block, a small block with two elements per thread (3D for naive and tiled), and concurrent
//! streaming chunks (two reading their planes through the cache, one of them with two
//! elements per thread and reordered sums); overlapped time tiling at T = 1
//! to 4 with tiles from 1 to 32 points per axis (a tile smaller than its halo included).

use tessera_analysis::BoundProgram;
use tessera_plan::gpu::{GpuPlan, GpuStrategy, PlaneReads};

/// The GPU test plans (exact mode).
pub fn gpu_test_plans() -> Vec<GpuPlan> {
    let plan = |strategy, block, elements, stream_chunk| GpuPlan {
        block,
        elements_per_thread: elements,
        stream_chunk,
        ..GpuPlan::new(strategy)
    };
    vec![
        plan(GpuStrategy::Naive, [32, 8, 1], 1, None),
        plan(GpuStrategy::Naive, [8, 4, 2], 2, None),
        plan(GpuStrategy::Tiled, [32, 8, 1], 1, None),
        plan(GpuStrategy::Tiled, [8, 4, 2], 2, None),
        plan(GpuStrategy::Streaming, [32, 8, 1], 1, None),
        plan(GpuStrategy::Streaming, [8, 4, 1], 2, Some(3)),
        GpuPlan {
            plane_reads: PlaneReads::Cache,
            ..plan(GpuStrategy::Streaming, [16, 4, 1], 1, Some(5))
        },
        // Register queues per column (diagonal reads) for two elements per thread; outside
        // exact mode (the relaxed suites) box sums added up plane by plane.
        GpuPlan {
            plane_reads: PlaneReads::Cache,
            reordered_sums: true,
            ..plan(GpuStrategy::Streaming, [8, 2, 1], 2, Some(4))
        },
    ]
}

/// The fused test plans (exact mode) for `bound` (none beyond 3 axes, none where its steps
/// cannot be fused: see `tessera_plan::fusion_refusal`): overlapped at T = 1 to 4, tiles from
/// 8 to 32 points along x, in 3D a tile of 1x2x2 points at T = 3 (a halo many times the tile);
/// from 2 axes on, streaming time tiles at T = 2 to 4: chunks of 3 and 5 points (fewer than
/// the planes their steps reach beyond them) and the whole axis, one in each rank loading its
/// planes ahead (see `GpuPlan::prefetch`); the wavefront at T = 2 and 4.
/// Deep 3D tiles of radius-2
/// f64 stencils need more shared memory than a typical GPU gives a block (their lowering is
/// refused, naming the limit).
pub fn fused_test_plans(bound: &BoundProgram) -> Vec<GpuPlan> {
    let dims = bound.extents.len();
    if !GpuStrategy::Overlapped.runs_dims(dims) || tessera_plan::fusion_refusal(bound).is_some() {
        return Vec::new();
    }
    let mut plans = overlapped_plans(dims);
    if dims >= 2 {
        plans.extend(streaming_time_plans(dims));
        plans.extend(wavefront_plans());
    }
    plans
}

/// The wavefront at T = 2 and 4, with blocks of 64 and 32 threads (see [`fused_test_plans`]).
fn wavefront_plans() -> Vec<GpuPlan> {
    [([64, 1, 1], 2), ([32, 1, 1], 4)]
        .into_iter()
        .map(|(block, time_tile)| GpuPlan {
            block,
            time_tile,
            ..GpuPlan::new(GpuStrategy::Wavefront)
        })
        .collect()
}

/// Streaming time tiling at T = 2 to 4 (see [`fused_test_plans`]).
fn streaming_time_plans(dims: usize) -> Vec<GpuPlan> {
    let plan = |block, elements, time_tile, stream_chunk, prefetch| GpuPlan {
        block,
        elements_per_thread: elements,
        time_tile,
        stream_chunk,
        prefetch,
        ..GpuPlan::new(GpuStrategy::Streaming)
    };
    if dims >= 3 {
        vec![
            // Two positions of the plane per thread: register planes (2D plans all have them
            // but at T = 4), loading their planes a whole unrolled trip ahead.
            plan([16, 8, 1], 1, 2, Some(5), 6),
            plan([4, 2, 1], 2, 3, None, 0),
            plan([8, 2, 1], 1, 4, Some(3), 0),
        ]
    } else {
        vec![
            plan([8, 1, 1], 1, 2, Some(5), 0),
            plan([32, 1, 1], 1, 3, None, 2),
            plan([4, 1, 1], 1, 4, Some(3), 0),
        ]
    }
}

/// Overlapped time tiling at T = 1 to 4 (see [`fused_test_plans`]).
fn overlapped_plans(dims: usize) -> Vec<GpuPlan> {
    let plan = |block, elements, time_tile| GpuPlan {
        block,
        elements_per_thread: elements,
        time_tile,
        ..GpuPlan::new(GpuStrategy::Overlapped)
    };
    let volume = dims >= 3;
    vec![
        plan([16, 4, 2], 1, 1),
        plan([8, 4, 2], 2, 2),
        if volume {
            plan([2, 2, 1], 1, 3)
        } else {
            plan([8, 8, 1], 1, 3)
        },
        if volume {
            plan([8, 4, 1], 2, 4)
        } else {
            plan([32, 4, 1], 2, 4)
        },
    ]
}
