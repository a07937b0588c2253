//! The pipelined wavefront on the GPU (LibGeoDecomp, ICCS'11): a pass of up to T steps sweeps
//! the slowest axis (z in 3D, y in 2D) plane by plane, every step and stage of the pass in
//! flight, one launch per sweep iteration. Launch `i` loads the input planes `i`, and each
//! stage of each step computes the whole plane its lag behind, from rings of planes in global
//! memory; the rings of a pass hold a few planes per stage and step, so they stay in the L2
//! cache while the fields are read and written once per pass.
//!
//! Of the two wavefronts the issue names, this is the pipelined plane sweep rather than blocks
//! cooperating on a diagonal: the blocks of a launch never wait for one another (a lag of one
//! plane more per dependency puts every plane a launch reads into an earlier launch), so it
//! needs neither a grid-wide barrier nor blocks all resident at once, which OpenCL does not
//! promise and PoCL does not give. Nothing is recomputed but the periodic images at the
//! grid's edges. The price is a launch per plane, so it suits grids with large planes (3D).
//!
//! The pipeline (versions, lags, rings) is [`Pipeline`]'s, the one of streaming time tiles
//! with the whole grid as one tile; its threads are the launch's, sharing each plane's points.

use tessera_analysis::{Rect, TileRegions};
use tessera_ir::ScalarType;

use super::super::{Expr, KernelParam, ParamKind, Stmt};
use super::common::Ctx;
use super::fused::{Frame, Fused, FusedArg, FusedKernel, tile_regions};
use super::naive::blocks;
use super::tile::Tile;
use super::time_streaming::{Checks, Pipeline, SWEPT};

/// The most blocks a wavefront launch has; its threads stride over larger planes.
const MAX_BLOCKS: u64 = 4096;

/// The grid as the one tile of the sweep, and its regions over the plan's depth, for the
/// traffic model (the rings are taken to stay in the L2 cache: only the fields count).
pub fn block_regions(ctx: &Ctx) -> (Rect, TileRegions) {
    tile_regions(ctx, &grid_extent(ctx))
}

/// The grid's extents: the wavefront's one tile.
fn grid_extent(ctx: &Ctx) -> Vec<i64> {
    (0..ctx.dims()).map(|a| ctx.extent(a)).collect()
}

/// The wavefront kernel of `ctx`'s program, or why the program cannot run it.
pub fn kernel(ctx: &Ctx) -> Result<Fused, String> {
    let d = ctx.dims();
    let threads = ctx.plan.threads_per_block();
    let block = [
        u32::try_from(threads).map_err(|_| "too many threads per block")?,
        1,
        1,
    ];
    let mut pipeline = Pipeline::new(ctx, grid_extent(ctx), Tile::new(d, block, 1), true)?;
    let plane_points = (pipeline.versions.iter())
        .map(|v| (1..d).map(|a| v.bounds.len(a)).product::<i64>())
        .max()
        .unwrap_or(1);
    let grid_blocks = blocks(plane_points, threads).clamp(1, MAX_BLOCKS);
    pipeline.loop_threads = (grid_blocks * threads) as i64;
    let mut body = vec![Stmt::Declare {
        var: "tid".into(),
        ty: ctx.ity,
        value: Some(
            Expr::BlockIdx(0)
                .times(ctx.lit(threads as i64))
                .plus(Expr::ThreadIdx(0)),
        ),
    }];
    body.extend(pipeline.names.iter().map(|name| Stmt::Declare {
        var: format!("o_{name}"),
        ty: ctx.ity,
        value: Some(ctx.lit(0)),
    }));
    body.push(Stmt::Declare {
        var: "it".into(),
        ty: ctx.ity,
        value: Some(Expr::Cast(ctx.ity, Box::new(Expr::var("sweep")))),
    });
    body.extend(pipeline.iteration(Frame::Edge, 0, Checks::All));
    let kernel = FusedKernel {
        strategy: "wavefront",
        doc: format!(
            "sweep iteration `sweep` of up to {} steps of every stage in flight along {}, whole planes, rings in global memory",
            pipeline.depth, pipeline.names[SWEPT]
        ),
        updated: pipeline.updated.clone(),
        constant: &pipeline.constant_fields,
        shared: Vec::new(),
        block,
        // Every stage of T steps is inlined into one kernel: without this ptxas caps small
        // blocks' registers for an occupancy the launch may not need, and spills (math_all at
        // 32 threads and T = 4).
        min_resident_blocks: Some(1),
        grid: [grid_blocks, 1, 1],
    };
    let mut fused = kernel.with_body(ctx, body);
    // Its rings (none for a version nothing reads), then the launch's number in the sweep.
    let rings: Vec<_> = pipeline.versions.iter().filter(|v| v.ring).collect();
    for (k, version) in rings.iter().enumerate() {
        fused.kernel.params.push(KernelParam {
            name: version.array.name.clone(),
            kind: ParamKind::Buffer {
                ty: version.array.ty,
                read_only: false,
            },
        });
        fused.args.push(FusedArg::Scratch(k));
    }
    fused.kernel.params.push(KernelParam {
        name: "sweep".into(),
        kind: ParamKind::Scalar(ScalarType::I64),
    });
    fused.args.push(FusedArg::Iteration);
    fused.sweep = Some(pipeline.iterations);
    fused.scratch = rings.iter().map(|v| v.array.clone()).collect();
    Ok(fused)
}
