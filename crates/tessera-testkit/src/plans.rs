//! The GPU plans every program is tested under: each strategy with a warp-wide block, a small
//! block with two elements per thread, a 3D block (tiled), and concurrent streaming chunks.

use tessera_plan::gpu::{GpuPlan, GpuStrategy};

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
        plan(GpuStrategy::Naive, [8, 4, 1], 2, None),
        plan(GpuStrategy::Tiled, [32, 8, 1], 1, None),
        plan(GpuStrategy::Tiled, [8, 4, 2], 2, None),
        plan(GpuStrategy::Streaming, [32, 8, 1], 1, None),
        plan(GpuStrategy::Streaming, [8, 4, 1], 2, Some(3)),
    ]
}
