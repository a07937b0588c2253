//! Barrier mutation (TESTING.md §14): removing any one barrier from a generated
//! shared-memory kernel must make some differential test fail on PoCL.
//!
//! PoCL's CPU device runs a work-group as loops over its work-items, split at barriers: with a
//! barrier gone, work-item 0 runs to the end of the region before work-item 1 starts, so a
//! tile is read before its other work-items have loaded it (or overwritten before they have
//! read it). The race therefore shows deterministically on grids of several work-groups —
//! with one exception: PoCL adds barriers of its own at the head and latch of every loop that
//! contains a barrier, so a barrier that protects the next loop iteration's stores from the
//! previous iteration's reads (the first barrier of a streaming sweep) is duplicated by PoCL
//! and its removal cannot show here. Those barriers are listed as `masked` and left to
//! `compute-sanitizer --tool racecheck` on a GPU.

use tessera_codegen::kernel::{GpuPlan, GpuStrategy, lower, print_opencl};
use tessera_gpu_tests::availability::require_opencl;
use tessera_opencl::OpenClExecutable;
use tessera_runtime::Executable;
use tessera_testkit::compare::first_difference;
use tessera_testkit::{Subject, case};

const BARRIER: &str = "barrier(CLK_LOCAL_MEM_FENCE);";

/// The byte offsets of every barrier in `source`.
fn barriers(source: &str) -> Vec<usize> {
    source.match_indices(BARRIER).map(|(at, _)| at).collect()
}

/// For `program` at `sizes` under `plan`: the source runs correctly as generated, and
/// without each one of its barriers (but the `masked` ones, by index in the source) it does
/// not. Returns how many barriers were removed and caught.
fn check_every_barrier_matters(
    name: &str,
    extents: &[usize],
    plan: &GpuPlan,
    steps: u64,
    masked: &[usize],
) -> usize {
    let subject = Subject::new(name, case(name).bind_extents(extents, &[]), 7, steps);
    let (bound, inputs, expected) = (&subject.bound, &subject.inputs, &subject.expected);
    let program = lower(bound, plan).expect("the example lowers");
    let source = print_opencl(&program);
    let run = |source: &str| {
        let mut executable =
            OpenClExecutable::from_source(bound, program.clone(), source, None).expect("builds");
        let mut fields = inputs.clone();
        executable
            .run(&mut fields, 0, steps, &mut ())
            .expect("runs");
        first_difference(&subject.field_names(), expected, &fields)
    };
    assert_eq!(
        run(&source),
        None,
        "{name} {}: the generated code itself differs",
        plan.describe()
    );
    let found = barriers(&source);
    assert!(
        !found.is_empty(),
        "{name} {}: no barrier in a shared-memory kernel",
        plan.describe()
    );
    let mut caught = 0;
    for (k, at) in found
        .iter()
        .enumerate()
        .filter(|(k, _)| !masked.contains(k))
    {
        let mutated = format!(
            "{}/* barrier removed */{}",
            &source[..*at],
            &source[at + BARRIER.len()..]
        );
        assert!(
            run(&mutated).is_some(),
            "{name} {}: removing barrier {k} of {} changed no result — no test guards it",
            plan.describe(),
            found.len()
        );
        caught += 1;
    }
    caught
}

#[test]
fn every_barrier_of_a_tiled_kernel_is_needed() {
    if !require_opencl("barrier mutation (tiled)") {
        return;
    }
    let plan = GpuPlan {
        block: [8, 4, 1],
        ..GpuPlan::new(GpuStrategy::Tiled)
    };
    assert!(check_every_barrier_matters("j2d5pt", &[19, 29], &plan, 2, &[]) >= 1);
    let plan = GpuPlan {
        block: [8, 4, 1],
        elements_per_thread: 2,
        ..GpuPlan::new(GpuStrategy::Tiled)
    };
    assert!(check_every_barrier_matters("tv2d", &[13, 31], &plan, 2, &[]) >= 1);
}

#[test]
fn every_barrier_of_a_streaming_kernel_is_needed() {
    if !require_opencl("barrier mutation (streaming)") {
        return;
    }
    let plan = GpuPlan {
        block: [8, 4, 1],
        ..GpuPlan::new(GpuStrategy::Streaming)
    };
    // Barrier 0 heads the sweep loop (it orders the previous plane's reads before this plane's
    // stores): PoCL's own loop barriers mask its removal.
    assert!(check_every_barrier_matters("j3d7pt", &[7, 9, 19], &plan, 2, &[0]) >= 1);
    let plan = GpuPlan {
        block: [8, 4, 1],
        elements_per_thread: 2,
        stream_chunk: Some(3),
        ..GpuPlan::new(GpuStrategy::Streaming)
    };
    assert!(check_every_barrier_matters("star3d_r2_periodic", &[7, 13, 19], &plan, 2, &[0]) >= 1);
}

#[test]
fn every_barrier_of_an_overlapped_kernel_is_needed() {
    if !require_opencl("barrier mutation (overlapped)") {
        return;
    }
    // Grids with interior and edge blocks (each has its own copy of the steps), and passes of
    // T steps: every step's barriers run.
    let plan = GpuPlan {
        block: [8, 4, 1],
        time_tile: 2,
        ..GpuPlan::new(GpuStrategy::Overlapped)
    };
    // The last barrier of each copy (2, 5) ends a stage that computes exactly the tile, which
    // the same threads then write from the same points: it guards nothing, and is kept so that
    // every shared read follows a barrier in program order.
    assert_eq!(
        check_every_barrier_matters("j2d5pt", &[29, 37], &plan, 4, &[2, 5]),
        4
    );
    // Two stages, each reading the other's outputs at neighbours and its own in place,
    // through mirrored borders (the last barriers, 6 and 13, as above).
    let plan = GpuPlan {
        block: [8, 4, 1],
        elements_per_thread: 2,
        time_tile: 3,
        ..GpuPlan::new(GpuStrategy::Overlapped)
    };
    assert_eq!(
        check_every_barrier_matters("tv2d", &[33, 41], &plan, 6, &[6, 13]),
        12
    );
}

#[test]
fn every_barrier_of_a_streaming_time_kernel_is_needed() {
    if !require_opencl("barrier mutation (streaming time tiles)") {
        return;
    }
    // 2D tiles keep their own columns in registers (`time_streaming::Registers`), and the
    // sweep is unrolled by their slots (6 here). Per unrolled iteration, one barrier before
    // each stage that reads an in-plane neighbour on a plane written since the last barrier
    // (none for j2d5pt, whose in-plane reads are all on planes written in earlier
    // iterations), and one ending the iteration; the last of each loop is at its latch, where
    // PoCL puts a barrier of its own (masked: 17, 29), as it does before a loop (11). In
    // chunks of 20 rows interior blocks, in a pass of every step, run the two trips before
    // the steady ones one by one (barriers 0 to 11), a loop of the steady ones
    // (`time_streaming::Checks::Steady`, 12 to 17) and the trip after them (18 to 23); in a
    // shorter pass (7 steps: passes of 3, 3 and 1) one loop (24 to 29). Edge blocks have
    // the same passes (30 to 59). No level reads the plane the first iteration loads until a
    // later barrier, and the trip after the steady ones reaches only the last stages'
    // planes, so their barriers guard nothing there (masked: 0, and 19 to 23; in edge blocks
    // 30 more each).
    let plan = GpuPlan {
        block: [8, 1, 1],
        time_tile: 3,
        stream_chunk: Some(20),
        ..GpuPlan::new(GpuStrategy::Streaming)
    };
    let interior_masked = [0, 11, 17, 19, 20, 21, 22, 23, 29];
    let masked: Vec<usize> = (interior_masked.iter())
        .flat_map(|&k| [k, k + 30])
        .collect();
    assert_eq!(
        check_every_barrier_matters("j2d5pt", &[61, 47], &plan, 7, &masked),
        42
    );
    // Two stages, the second reading the first's output at diagonal neighbours, three steps
    // in flight. Its rings are grown to the 5 slots of its register planes, so the barrier
    // ending an unrolled iteration separates nothing and is left out, but at the end of each
    // copy's loop body (masked). Chunks of 8 rows have no steady trips (one loop per frame).
    let plan = GpuPlan {
        stream_chunk: Some(8),
        ..plan
    };
    assert_eq!(
        check_every_barrier_matters("functions2d", &[61, 47], &plan, 6, &[15, 31]),
        30
    );
    // 3D: 8x4 plane tiles, two steps in flight along z.
    let plan = GpuPlan {
        block: [8, 4, 1],
        time_tile: 2,
        stream_chunk: Some(7),
        ..GpuPlan::new(GpuStrategy::Streaming)
    };
    assert_eq!(
        check_every_barrier_matters("j3d7pt", &[29, 21, 19], &plan, 4, &[2, 5]),
        4
    );
    // 3D with register planes: 16x8 plane tiles, two positions per thread, the sweep unrolled
    // by 6 (as j2d5pt above); no block of this grid is interior, so there is one copy.
    let plan = GpuPlan {
        block: [16, 8, 1],
        time_tile: 2,
        stream_chunk: Some(7),
        ..GpuPlan::new(GpuStrategy::Streaming)
    };
    assert_eq!(
        check_every_barrier_matters("j3d7pt", &[29, 21, 19], &plan, 4, &[5]),
        5
    );
    // One position per thread: 16x16 threads own 12x12 points of the plane, on a grid with
    // interior blocks and chunks long enough for steady trips, over passes of 2, 2, 2 and 1
    // steps: interior blocks' pass of every step (barriers 0 to 17) and shorter passes (18
    // to 23), then edge blocks' (24 to 47). As for j2d5pt above, the first barrier and those
    // of the trip after the steady ones (15 to 17) guard nothing, nor does the barrier ending
    // a shorter pass's loop (23), in both frames.
    let plan = GpuPlan {
        block: [16, 16, 1],
        stream_chunk: Some(12),
        ..plan
    };
    let masked = [0, 15, 16, 17, 23, 24, 39, 40, 41, 47];
    assert_eq!(
        check_every_barrier_matters("j3d7pt", &[29, 37, 37], &plan, 7, &masked),
        38
    );
}
