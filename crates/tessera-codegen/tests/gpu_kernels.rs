//! Kernel generator tests: every test program of the corpus under every test plan lowers and prints; structural
//! properties of the generated kernels (barriers, index width); plan refusals; snapshots.

use std::collections::BTreeSet;

use tessera_analysis::BoundProgram;
use tessera_codegen::kernel::{
    BufferId, BufferRole, DeviceLimits, GpuPlan, GpuStrategy, HostOp, Kernel, KernelProgram,
    LaunchArg, ParamKind, Stmt, kernel_traffic, lower, print_cuda, print_opencl, validate,
};
use tessera_plan::gpu::PlaneReads;
use tessera_testkit::plans::{fused_test_plans, gpu_test_plans};
use tessera_testkit::{case, test_programs};

/// The corpus program `name` with its size parameters set to `extents`.
fn bound(name: &str, extents: &[usize]) -> BoundProgram {
    case(name).bind_extents(extents, &[])
}

#[test]
fn every_test_program_at_every_size_and_plan_lowers_prints_and_fits_a_typical_gpu() {
    let limits = DeviceLimits::typical_gpu();
    let mut cases = 0;
    let mut too_deep = Vec::new();
    for case in test_programs() {
        for index in 0..case.sets.len() {
            let bound = case.bind(index);
            let plans = gpu_test_plans().into_iter();
            for plan in plans.chain(fused_test_plans(&bound)) {
                let what = format!("{} {:?} {}", case.name, bound.extents, plan.describe());
                let program = lower(&bound, &plan).unwrap_or_else(|e| panic!("{what}: {e}"));
                let (cuda, opencl) = (print_cuda(&program), print_opencl(&program));
                assert!(cuda.contains("extern \"C\" __global__"), "{what}");
                assert!(opencl.contains("__kernel"), "{what}");
                match validate(&program, &limits) {
                    Ok(_) => cases += 1,
                    // Only deep time tiles of 3D grids or of many fields (the D2Q9's ten
                    // f64 fields) may outgrow shared memory, and are refused so.
                    Err(e)
                        if plan.time_tile > 1
                            && (bound.extents.len() == 3 || bound.program().fields.len() > 8) =>
                    {
                        assert!(
                            e.to_string().contains("bytes of shared memory"),
                            "{what}: {e}"
                        );
                        too_deep.push(what);
                    }
                    Err(e) => panic!("{what}: {e}"),
                }
            }
        }
    }
    assert!(cases > 300, "{cases}");
    // Four programs (three 3D ones at T = 4, the D2Q9) at their three sizes each.
    assert!(too_deep.len() <= 12, "{too_deep:#?}");
}

fn lowered(name: &str, sizes: &[usize], plan: &GpuPlan) -> KernelProgram {
    lower(&bound(name, sizes), plan).expect("lowers")
}

fn plan(strategy: GpuStrategy, block: [u32; 3], elements: u32) -> GpuPlan {
    GpuPlan {
        block,
        elements_per_thread: elements,
        ..GpuPlan::new(strategy)
    }
}

/// Walks a kernel in program order and fails when a shared array written since the last
/// barrier is read, or when a barrier sits under a condition (divergent). An access whose
/// first index is a literal (a ring's slot, in an unrolled sweep) touches that slot only.
fn check_barriers(kernel: &Kernel) {
    /// A shared access: the array, and its first index's literal where it is one.
    type Access = (String, Option<String>);
    type Pending = BTreeSet<Access>;
    /// The accesses of the `kind` nodes (`SharedLoad`, `SharedStore`) in `text`, a `Debug`
    /// print of statements.
    fn accesses(text: &str, kind: &str) -> Vec<Access> {
        let marker = format!("{kind} {{ array: \"");
        text.match_indices(&marker)
            .map(|(at, _)| {
                let rest = &text[at + marker.len()..];
                let name = &rest[..rest.find('"').expect("a quoted name")];
                let first = rest[name.len()..]
                    .strip_prefix("\", index: [")
                    .filter(|index| index.starts_with("Literal("))
                    .map(|index| {
                        let mut depth = 0;
                        let end = (index.char_indices())
                            .find(|&(_, c)| {
                                depth += i32::from(c == '(') - i32::from(c == ')');
                                c == ')' && depth == 0
                            })
                            .expect("balanced")
                            .0;
                        index[..=end].to_string()
                    });
                (name.to_string(), first)
            })
            .collect()
    }
    /// Whether two accesses may touch the same element.
    fn overlap(a: &Access, b: &Access) -> bool {
        a.0 == b.0 && (a.1.is_none() || b.1.is_none() || a.1 == b.1)
    }
    /// A read of `stmt` that may touch what `pending` names, but for the `exempt` arrays.
    fn reads_pending(stmt: &Stmt, pending: &Pending, exempt: &BTreeSet<String>) -> Option<Access> {
        (accesses(&format!("{stmt:?}"), "SharedLoad").into_iter())
            .find(|read| !exempt.contains(&read.0) && pending.iter().any(|w| overlap(read, w)))
    }
    /// The shared arrays a point's statements `body` store to (nested ones included).
    fn in_place_stores(body: &[Stmt]) -> BTreeSet<String> {
        (accesses(&format!("{body:?}"), "SharedStore").into_iter())
            .map(|(array, _)| array)
            .collect()
    }
    fn walk(body: &[Stmt], pending: &mut Pending, conditional: bool, kernel: &str) {
        for stmt in body {
            match stmt {
                Stmt::Barrier => {
                    assert!(
                        !conditional,
                        "kernel `{kernel}` has a barrier under a condition"
                    );
                    pending.clear();
                }
                Stmt::SharedStore { .. } => {
                    pending.extend(accesses(&format!("{stmt:?}"), "SharedStore"));
                }
                Stmt::For { body, .. } => walk(body, pending, conditional, kernel),
                Stmt::Block(body) => {
                    // A point's block (one of a thread's column segment) may read the arrays
                    // it updates in place, at its own point.
                    let in_place = in_place_stores(body);
                    let mut outer = pending.clone();
                    pending.retain(|(array, _)| !in_place.contains(array));
                    walk(body, pending, conditional, kernel);
                    outer.extend(std::mem::take(pending));
                    *pending = outer;
                }
                Stmt::UniformIf {
                    then, otherwise, ..
                } => {
                    // Both branches start from the state before the condition.
                    let mut other = pending.clone();
                    walk(then, pending, conditional, kernel);
                    walk(otherwise, &mut other, conditional, kernel);
                    pending.extend(other);
                }
                Stmt::UniformCases(cases) => {
                    // Every case starts from the state before the conditions.
                    let before = pending.clone();
                    for (_, body) in cases {
                        let mut state = before.clone();
                        walk(body, &mut state, conditional, kernel);
                        pending.extend(state);
                    }
                }
                Stmt::If {
                    then, otherwise, ..
                } => {
                    // A stage updating an array in place reads it at its own point only.
                    let read = reads_pending(stmt, pending, &in_place_stores(then));
                    assert!(
                        read.is_none(),
                        "kernel `{kernel}` reads {read:?} before a barrier"
                    );
                    walk(then, pending, true, kernel);
                    walk(otherwise, pending, true, kernel);
                }
                other => {
                    let read = reads_pending(other, pending, &BTreeSet::new());
                    assert!(
                        read.is_none(),
                        "kernel `{kernel}` reads {read:?} before a barrier"
                    );
                }
            }
        }
    }
    walk(&kernel.body, &mut Pending::new(), false, &kernel.name);
}

#[test]
fn shared_memory_is_read_only_after_a_barrier_and_barriers_are_uniform() {
    let mut checked_kernels = 0;
    for case in test_programs() {
        let bound = case.bind(0);
        let plans = gpu_test_plans().into_iter().chain(fused_test_plans(&bound));
        // Non-exact mode too: box sums reordered in streaming time tiles read differently.
        let relaxed = plans.flat_map(|p| [p.clone(), GpuPlan { exact: false, ..p }]);
        for plan in relaxed {
            let program = lower(&bound, &plan).expect("lowers");
            for kernel in program.kernels.iter().filter(|k| !k.shared.is_empty()) {
                check_barriers(kernel);
                checked_kernels += 1;
            }
        }
    }
    assert!(checked_kernels > 20, "{checked_kernels}");
    // The check itself catches a missing barrier.
    let mut program = lowered(
        "j2d5pt",
        &[33, 31],
        &plan(GpuStrategy::Tiled, [32, 8, 1], 1),
    );
    let kernel = &mut program.kernels[0];
    kernel.body.retain(|s| !matches!(s, Stmt::Barrier));
    assert!(std::panic::catch_unwind(|| check_barriers(kernel)).is_err());
}

#[test]
fn indices_are_64_bit_once_a_linear_index_can_reach_2_pow_31() {
    let streaming = GpuPlan::new(GpuStrategy::Streaming);
    let small = lowered("j3d7pt", &[17, 20, 21], &streaming);
    assert_eq!(small.index_ty, tessera_ir::ScalarType::I32);
    assert!(print_cuda(&small).contains("int32_t x = "));
    // 1300^3 > 2^31 points: coordinates and linear indices are 64-bit in both dialects.
    let big = lowered("j3d7pt", &[1300, 1300, 1300], &streaming);
    assert_eq!(big.index_ty, tessera_ir::ScalarType::I64);
    let (cuda, opencl) = (print_cuda(&big), print_opencl(&big));
    assert!(
        cuda.contains("int64_t x = ") && !cuda.contains("int32_t x = "),
        "{cuda}"
    );
    assert!(
        opencl.contains("long x = ") && opencl.contains("((long)get_group_id(0))"),
        "{opencl}"
    );
    assert!(
        cuda.contains("* ((int64_t)1300LL))"),
        "extents in index arithmetic are 64-bit literals"
    );
}

#[test]
fn plane_sweeps_through_time_refuse_grids_without_planes() {
    for strategy in [GpuStrategy::Streaming, GpuStrategy::Wavefront] {
        let plan = GpuPlan {
            time_tile: 2,
            ..plan(strategy, [32, 1, 1], 1)
        };
        let refused = lower(&bound("star1d2r", &[40]), &plan)
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains(
                "a plane sweep through time runs on 2D and 3D grids; this grid has 1 axes"
            ),
            "{refused}"
        );
    }
}

#[test]
fn tiles_over_the_device_limits_are_refused_with_a_suggestion() {
    let limits = DeviceLimits::typical_gpu();
    let too_many = lowered(
        "j2d5pt",
        &[33, 31],
        &plan(GpuStrategy::Tiled, [64, 32, 1], 1),
    );
    let error = validate(&too_many, &limits).unwrap_err().to_string();
    assert!(
        error.contains("2048 threads exceeds the 1024 threads per block")
            && error.contains("e.g. --tile 32x32"),
        "{error}"
    );
    let too_big = lowered(
        "box3d_constant",
        &[17, 20, 21],
        &plan(GpuStrategy::Tiled, [32, 8, 4], 8),
    );
    let error = validate(&too_big, &limits).unwrap_err().to_string();
    assert!(error.contains("bytes of shared memory per block, but typical GPU gives a block 49152 bytes; use a smaller block or fewer elements per thread"), "{error}");
    let zero = lower(
        &case("j2d5pt").bind(0),
        &plan(GpuStrategy::Naive, [0, 8, 1], 1),
    );
    assert_eq!(
        zero.unwrap_err().to_string(),
        "the block size along x is 0; it must be at least 1"
    );
    let deep = GpuPlan {
        time_tile: 4,
        ..GpuPlan::new(GpuStrategy::Tiled)
    };
    let error = lower(&case("j2d5pt").bind(0), &deep)
        .unwrap_err()
        .to_string();
    assert!(error.contains("use a time tile of 1"), "{error}");
}

#[test]
fn stages_a_strategy_cannot_handle_fall_back_to_naive_with_a_note() {
    let tiled = lowered("strided1d", &[41], &plan(GpuStrategy::Tiled, [32, 1, 1], 1));
    assert_eq!(tiled.kernels[0].strategy, "naive");
    assert_eq!(
        tiled.notes,
        [
            "stage `mix` uses the naive strategy: its domain is strided along x, which tiles do not support"
        ]
    );
    let streaming = lowered(
        "strided1d",
        &[41],
        &plan(GpuStrategy::Streaming, [32, 1, 1], 1),
    );
    assert_eq!(
        streaming.notes,
        [
            "stage `mix` uses the naive strategy: the grid has one axis, so there is no plane to stream"
        ]
    );
    // Diagonal reads are not streamed through registers but read from memory.
    let boxed = lowered(
        "box3d_constant",
        &[9, 9, 9],
        &GpuPlan::new(GpuStrategy::Streaming),
    );
    assert_eq!(boxed.kernels[0].strategy, "streaming");
    assert!(boxed.kernels[0].shared.is_empty());
}

#[test]
fn host_programs_ping_pong_copy_partial_domains_and_read_reductions_in_order() {
    let ops_of = |program: &KernelProgram, ops: &[HostOp]| -> Vec<String> {
        ops.iter()
            .map(|op| match op {
                HostOp::Launch(l) => format!("launch {}", l.kernel),
                HostOp::Copy { from, to } => format!(
                    "copy {} -> {}",
                    program.host.buffers[from.0].name, program.host.buffers[to.0].name
                ),
                HostOp::Swap(a, b) => format!(
                    "swap {} {}",
                    program.host.buffers[a.0].name, program.host.buffers[b.0].name
                ),
                HostOp::Reduce(r) => format!("reduce {}", r.name),
            })
            .collect()
    };
    let ops = |program: &KernelProgram| ops_of(program, &program.host.step);
    let start = |program: &KernelProgram| ops_of(program, &program.host.start);
    let tiled = GpuPlan::new(GpuStrategy::Tiled);
    // Read at neighbours on a sub-domain: ping-pong, the partner filled with the field once at
    // the start (the border no stage writes is then the same in both buffers).
    let j2d = lowered("j2d5pt", &[33, 31], &tiled);
    assert_eq!(start(&j2d), ["copy A -> A.next"]);
    assert_eq!(
        ops(&j2d),
        ["launch ts_j2d5pt_s0_jacobi_tiled", "swap A A.next"]
    );
    // `u` is written on two different sub-domains: its partner is refreshed before each stage;
    // `v` twice on the same strided one (which tiles leave to `naive`): once at the start.
    let partial = lowered("partial_writes2d", &[23, 18], &tiled);
    assert_eq!(start(&partial), ["copy v -> v.next"]);
    assert_eq!(
        ops(&partial),
        [
            "copy u -> u.next",
            "launch ts_partial_writes2d_s0_interior_tiled",
            "swap u u.next",
            "copy u -> u.next",
            "launch ts_partial_writes2d_s1_edge_tiled",
            "swap u u.next",
            "launch ts_partial_writes2d_s2_smooth_naive",
            "swap v v.next",
            "launch ts_partial_writes2d_s3_sharpen_naive",
            "swap v v.next"
        ]
    );
    // Over the whole grid: ping-pong without a copy.
    let heat = lowered("heat2d_periodic", &[20, 17], &tiled);
    assert_eq!(
        ops(&heat),
        [
            "launch ts_heat2d_periodic_s0_diffuse_tiled",
            "swap u u.next"
        ]
    );
    // Outputs read only at their own point are updated in place.
    let fdtd = lowered("fdtd2d", &[21, 19], &tiled);
    assert_eq!(
        ops(&fdtd),
        [
            "launch ts_fdtd2d_s0_source_tiled",
            "launch ts_fdtd2d_s1_e_tiled",
            "launch ts_fdtd2d_s2_h_tiled"
        ]
    );
    let program = lowered("reductions2d", &[13, 35], &GpuPlan::new(GpuStrategy::Naive));
    let reduce: Vec<(String, usize, u64)> = program
        .host
        .step
        .iter()
        .filter_map(|op| match op {
            HostOp::Reduce(r) => Some((r.name.clone(), r.rows, r.every)),
            _ => None,
        })
        .collect();
    assert_eq!(
        reduce,
        [
            ("change".to_string(), 13, 1),
            ("total".to_string(), 13, 2),
            ("lowest".to_string(), 11, 1)
        ]
    );
}

#[test]
fn generated_sources_are_snapshotted() {
    let cases: [(&str, &[usize], GpuPlan); 14] = [
        ("j2d5pt", &[33, 31], plan(GpuStrategy::Naive, [32, 8, 1], 1)),
        // A thread per point of a 3D launch grid.
        (
            "j3d7pt",
            &[17, 20, 21],
            plan(GpuStrategy::Naive, [32, 4, 2], 1),
        ),
        ("j2d5pt", &[33, 31], plan(GpuStrategy::Tiled, [32, 8, 1], 2)),
        (
            "j2d5pt",
            &[33, 31],
            plan(GpuStrategy::Streaming, [32, 1, 1], 1),
        ),
        (
            "j3d7pt",
            &[17, 20, 21],
            plan(GpuStrategy::Streaming, [32, 8, 1], 1),
        ),
        ("fdtd2d", &[21, 19], plan(GpuStrategy::Tiled, [16, 8, 1], 1)),
        (
            "reductions2d",
            &[13, 35],
            plan(GpuStrategy::Naive, [32, 4, 1], 1),
        ),
        // Exact mode with `exp`: the exact math library after the preamble.
        (
            "fdtd_ricker",
            &[21, 19],
            plan(GpuStrategy::Naive, [32, 8, 1], 1),
        ),
        // Scans: one thread per line under every strategy, the running values carried.
        ("scan2d", &[19, 37], plan(GpuStrategy::Tiled, [32, 8, 1], 1)),
        // Two steps per launch: interior and edge copies, ping-pong arrays, in-place stages.
        (
            "tv2d",
            &[33, 41],
            GpuPlan {
                time_tile: 2,
                ..plan(GpuStrategy::Overlapped, [8, 4, 1], 2)
            },
        ),
        // The default 3D plan: in-plane reads through the cache, rows starting at x = 0 (an
        // aligned segment) with the points before the stage's domain skipped.
        (
            "j3d7pt",
            &[17, 20, 45],
            GpuPlan {
                plane_reads: PlaneReads::Cache,
                stream_chunk: Some(16),
                ..plan(GpuStrategy::Streaming, [64, 4, 1], 1)
            },
        ),
        // A box read diagonally across planes: a register queue per in-plane offset (column).
        (
            "box3d1r",
            &[11, 13, 40],
            GpuPlan {
                plane_reads: PlaneReads::Cache,
                stream_chunk: Some(4),
                ..plan(GpuStrategy::Streaming, [32, 2, 1], 1)
            },
        ),
        // The same box outside exact mode: its sum added up plane by plane, each column
        // keeping the arriving plane, after a warm-up of the chunk's first two planes.
        (
            "box3d1r",
            &[11, 13, 40],
            GpuPlan {
                plane_reads: PlaneReads::Cache,
                stream_chunk: Some(4),
                exact: false,
                reordered_sums: true,
                ..plan(GpuStrategy::Streaming, [32, 2, 1], 2)
            },
        ),
        // Two steps in flight along y: a ring of planes per version, lags, chunk halos.
        (
            "j2d5pt",
            &[33, 31],
            GpuPlan {
                time_tile: 2,
                stream_chunk: Some(8),
                ..plan(GpuStrategy::Streaming, [16, 1, 1], 1)
            },
        ),
    ];
    for (name, sizes, plan) in cases {
        let program = lowered(name, sizes, &plan);
        let mut label = format!("{name}_{}", plan.strategy.name());
        if plan.strategy == GpuStrategy::Streaming && plan.time_tile > 1 {
            label.push_str(&format!("_t{}", plan.time_tile));
        }
        if plan.plane_reads == PlaneReads::Cache {
            label.push_str("_cache");
        }
        if name == "box3d1r" {
            label.push_str(if plan.exact { "_columns" } else { "_reordered" });
        }
        insta::assert_snapshot!(format!("gpu_{label}_cuda"), print_cuda(&program));
        insta::assert_snapshot!(format!("gpu_{label}_opencl"), print_opencl(&program));
    }
}

#[test]
fn traffic_counts_direct_loads_tiles_with_halos_and_register_queues() {
    let bound = bound("j3d7pt", &[20, 16, 64]);
    let traffic = |strategy: GpuStrategy| {
        let program = lower(&bound, &plan(strategy, [32, 8, 1], 1)).expect("lowers");
        kernel_traffic(&bound, &program, &program.kernels[0])
    };
    // Naive: each of the 7 offsets is a global f32 load.
    let naive = traffic(GpuStrategy::Naive);
    assert_eq!((naive.load_bytes, naive.reload_bytes), (28.0, 24.0));
    assert_eq!((naive.store_bytes, naive.points), (4.0, 20 * 16 * 64));
    // Tiled in 3D: a 32x8x1 tile with a halo of 1 on every side.
    let tiled = traffic(GpuStrategy::Tiled);
    assert_eq!(tiled.load_bytes, 4.0 * (34.0 * 10.0 * 3.0) / 256.0);
    // Streaming: the 34x10 plane per 32x8 points, plus the queue's 2 planes refilled once per
    // sweep of 20 planes.
    let streaming = traffic(GpuStrategy::Streaming);
    assert_eq!(streaming.load_bytes, 4.0 * (340.0 / 256.0 + 2.0 / 20.0));
    assert_eq!(streaming.bytes(), streaming.load_bytes + 4.0);
    for t in [naive, tiled, streaming] {
        assert_eq!(t.redundant_fraction, 0.0, "{}", t.kernel);
    }
}

#[test]
fn streaming_elements_read_the_rows_beside_them_from_each_others_queues() {
    // Single-step streaming, neighbours in the plane through the cache: loads per point at
    // `elements` rows a thread, in values (f32).
    let loads = |name: &str, elements: u32| {
        let bound = bound(name, &[20, 16, 64]);
        let plan = GpuPlan {
            plane_reads: PlaneReads::Cache,
            ..plan(GpuStrategy::Streaming, [64, 4, 1], elements)
        };
        let program = lower(&bound, &plan).expect("lowers");
        kernel_traffic(&bound, &program, &program.kernels[0]).load_bytes / 4.0
    };
    // j3d7pt: one queue (its own column) and four direct loads a point; the rows above and
    // below are the other elements' queues but at the first and last element.
    let j3d7pt = [1, 2, 4].map(|e| loads("j3d7pt", e));
    assert!((j3d7pt[0] - j3d7pt[1] - 1.0).abs() < 1e-9, "{j3d7pt:?}");
    assert!((j3d7pt[0] - j3d7pt[2] - 1.5).abs() < 1e-9, "{j3d7pt:?}");
    // A 27-point box: 9 queues a point, 12 for 2 points, 18 for 4.
    let box3d = [1, 2, 4].map(|e| loads("box3d1r", e));
    assert!((box3d[0] / box3d[1] - 1.5).abs() < 1e-9, "{box3d:?}");
    assert!((box3d[0] / box3d[2] - 2.0).abs() < 1e-9, "{box3d:?}");
}

#[test]
fn stages_reading_reductions_get_their_values_as_arguments_and_refuse_fused_steps() {
    let bound = bound("normalise2d", &[19, 37]);
    let program = lower(&bound, &plan(GpuStrategy::Tiled, [32, 8, 1], 1)).expect("lowers");
    let checked = bound.checked();
    let mass = checked.program().reduction_by_name("mass").expect("mass");
    // The stage dividing by `mass` takes it as a `double` after `t`, and its launch follows the
    // read-back of `mass` in the step.
    let normalise = program
        .kernels
        .iter()
        .find(|k| k.name.contains("_s2_normalise_"))
        .expect("the normalise kernel");
    let names: Vec<&str> = normalise.params.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names.last(), Some(&format!("rv{}", mass.index()).as_str()));
    let position = |op: &dyn Fn(&HostOp) -> bool| program.host.step.iter().position(op);
    let read_back = position(&|op| matches!(op, HostOp::Reduce(r) if r.reduction == mass));
    let launch = position(&|op| matches!(op, HostOp::Launch(l) if l.kernel == normalise.name));
    assert!(read_back < launch, "{read_back:?} {launch:?}");
    assert!(print_cuda(&program).contains(&format!("double rv{}", mass.index())));
    let error = lower(&bound, &GpuPlan::new(GpuStrategy::Overlapped)).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("stage `normalise` reads the reduction `mass` of the same step"),
        "{error}"
    );
}

#[test]
fn kernels_reading_a_table_take_its_buffer_read_only_and_index_it_at_their_step() {
    let strategies = [
        (GpuStrategy::Naive, 1),
        (GpuStrategy::Tiled, 1),
        (GpuStrategy::Streaming, 1),
        (GpuStrategy::Overlapped, 3),
    ];
    for (strategy, time_tile) in strategies {
        let gpu = GpuPlan {
            time_tile,
            ..plan(strategy, [8, 4, 1], 1)
        };
        let program = lowered("acoustic2d_select", &[17, 23], &gpu);
        let table = (program
            .host
            .buffers
            .iter()
            .position(|b| matches!(b.role, BufferRole::Table { .. })))
        .expect("a buffer for the table");
        let launches: Vec<_> = program.host.launches().collect();
        assert!(!launches.is_empty());
        for launch in launches {
            let kernel = program.kernel(&launch.kernel).unwrap();
            let at = (kernel.params.iter().position(|p| p.name == "tb0"))
                .unwrap_or_else(|| panic!("{} takes no table", kernel.name));
            assert_eq!(
                kernel.params[at].kind,
                ParamKind::Buffer {
                    ty: tessera_ir::ScalarType::F32,
                    read_only: true
                }
            );
            assert_eq!(launch.args[at], LaunchArg::Buffer(BufferId(table)));
        }
        let (cuda, opencl) = (print_cuda(&program), print_opencl(&program));
        for source in [&cuda, &opencl] {
            assert!(
                source.contains("tb0[(") && source.contains(") + 1]"),
                "{source}"
            );
        }
    }
}

#[test]
fn each_receiver_gets_a_gather_kernel_over_its_points_and_no_step_launch() {
    for strategy in [GpuStrategy::Naive, GpuStrategy::Overlapped] {
        let gpu = GpuPlan {
            time_tile: if strategy == GpuStrategy::Overlapped {
                3
            } else {
                1
            },
            ..plan(strategy, [8, 4, 1], 1)
        };
        let program = lowered("receivers2d", &[29, 43], &gpu);
        assert_eq!(program.host.receivers.len(), 3);
        for gather in &program.host.receivers {
            let kernel = program.kernel(&gather.launch.kernel).unwrap();
            assert_eq!(kernel.strategy, "gather");
            let receiver = &program.checked.program().receivers[gather.receiver];
            let field = program.host.field_buffer(receiver.field).unwrap();
            assert_eq!(
                gather.launch.args,
                [
                    LaunchArg::Buffer(field),
                    LaunchArg::Buffer(gather.points),
                    LaunchArg::Buffer(gather.values),
                    LaunchArg::Count
                ]
            );
            assert_eq!(
                program.host.buffers[gather.points.0].role,
                BufferRole::ReceiverPoints {
                    receiver: gather.receiver
                }
            );
            assert!(program.host.launches().all(|l| l.kernel != kernel.name));
        }
        if strategy == GpuStrategy::Naive {
            insta::assert_snapshot!("gpu_receivers2d_naive_cuda", print_cuda(&program));
            insta::assert_snapshot!("gpu_receivers2d_naive_opencl", print_opencl(&program));
        }
    }
}

#[test]
fn scan_stages_run_one_thread_per_line_under_every_strategy_and_refuse_fused_steps() {
    let bound = bound("scan2d", &[19, 37]);
    for strategy in [
        GpuStrategy::Naive,
        GpuStrategy::Tiled,
        GpuStrategy::Streaming,
    ] {
        let program = lower(&bound, &plan(strategy, [32, 8, 1], 1)).expect("lowers");
        let along_y = (program.kernels.iter())
            .find(|k| k.name.contains("_s1_along_y_"))
            .expect("the along_y kernel");
        // One thread per column: 37 lines in blocks of 32 threads.
        assert_eq!((along_y.strategy, along_y.block), ("lines", [32, 1, 1]));
        let launch = (program.host.step.iter())
            .find_map(|op| match op {
                HostOp::Launch(l) if l.kernel == along_y.name => Some(l.grid),
                _ => None,
            })
            .expect("its launch");
        assert_eq!(launch, [2, 1, 1]);
        let noted = (program.notes.iter()).any(|n| n.contains("stage `along_y` scans along y"));
        assert_eq!(noted, strategy != GpuStrategy::Naive, "{:?}", program.notes);
    }
    let error = lower(&bound, &GpuPlan::new(GpuStrategy::Overlapped)).unwrap_err();
    assert!(
        error.to_string().contains(
            "stage `along_x` scans along x: each of its points depends on the whole line before it"
        ),
        "{error}"
    );
}

#[test]
fn cuda_tiles_past_48_kib_carve_dynamic_shared_memory_that_an_h100_block_may_opt_into() {
    let deep = GpuPlan {
        time_tile: 4,
        ..plan(GpuStrategy::Overlapped, [32, 4, 1], 2)
    };
    let program = lowered("lbm_d2q9", &[29, 37], &deep);
    let kernel = &program.kernels[0];
    let bytes = kernel.dynamic_shared_bytes();
    assert!(bytes > 48 * 1024, "{bytes}");
    assert_eq!(kernel.shared_bytes(), bytes);
    let offsets = kernel.dynamic_shared_offsets();
    assert!(offsets.iter().all(|o| o % 16 == 0), "{offsets:?}");
    let cuda = print_cuda(&program);
    assert!(cuda.contains("extern __shared__ __align__(16) unsigned char ts_shared[];"));
    let first = &kernel.shared[0];
    assert!(!cuda.contains(&format!("__shared__ double {}[", first.name)));
    let rows: String = first.dims[1..].iter().map(|d| format!("[{d}]")).collect();
    assert!(
        cuda.contains(&format!(
            "double (*{}){rows} = reinterpret_cast<double (*){rows}>(ts_shared + 0);",
            first.name
        )),
        "{cuda}"
    );
    // OpenCL keeps its static local arrays; the typical GPU refuses the tile, an H100 takes it.
    assert!(print_opencl(&program).contains("__local double"));
    assert!(validate(&program, &DeviceLimits::typical_gpu()).is_err());
    let h100 = tessera_plan::gpu::known_gpu("h100")
        .expect("built in")
        .limits;
    assert!(validate(&program, &h100).is_ok());
    // A tile within 48 KiB stays static.
    let small = lowered(
        "j2d5pt",
        &[33, 31],
        &plan(GpuStrategy::Tiled, [32, 8, 1], 1),
    );
    assert_eq!(small.kernels[0].dynamic_shared_bytes(), 0);
    assert!(print_cuda(&small).contains("__shared__ float"));
}

#[test]
fn diagonal_reads_get_register_queues_per_column_within_a_register_budget() {
    let cached = GpuPlan {
        plane_reads: PlaneReads::Cache,
        stream_chunk: Some(4),
        ..plan(GpuStrategy::Streaming, [8, 2, 1], 2)
    };
    let queues = |name: &str, sizes: &[usize]| {
        let source = print_cuda(&lowered(name, sizes, &cached));
        let columns = (1..)
            .take_while(|c| source.contains(&format!("q0c{c}_")))
            .count();
        (columns, source.matches("__ldg(").count())
    };
    // A 27-point box: 8 columns besides the point's own, each loading one plane per point.
    let (columns, _) = queues("box3d1r", &[11, 13, 40]);
    assert_eq!(columns, 8);
    // A 125-point box: 25 columns of 5 planes for 2 elements would take 250 registers, past
    // the budget: its reads load from memory, as straight streaming cannot serve them.
    let (columns, loads) = queues("terms3d_clamp", &[11, 13, 9]);
    assert_eq!(columns, 0);
    assert!(loads >= 125, "{loads} loads");
}

#[test]
fn box_sums_are_reordered_plane_by_plane_in_streaming_time_tiles_outside_exact_mode() {
    use tessera_analysis::plane_sums;
    // The analysis: a 5x5 box has five planes of five terms, each reading across the plane;
    // a 5-point star reads across only its own plane; a sum nested in a product of a read
    // (j3d7pt's `0.1 * (...)` term reads six planes) and two statements are not plane sums.
    let sums = |name: &str, extents: &[usize]| {
        let bound = bound(name, extents);
        let stage = bound.program().stages.ids().last().expect("a stage");
        plane_sums(bound.checked(), stage, 0)
    };
    let gaussian = case("benchmarks/gaussian2d").bind_with(&[("N".into(), "41".into())]);
    let stage = gaussian.program().stages.ids().next().expect("a stage");
    let box5 = plane_sums(gaussian.checked(), stage, 0).expect("a plane sum");
    // Its rows 2 apart have the same weights (they are summed apart, and computed once).
    let planes: Vec<(i32, usize, bool, bool)> = (box5.planes.iter())
        .map(|p| (p.offset, p.terms.len(), p.off_axis, p.repeated))
        .collect();
    let repeated = |o: i32| o != 0;
    let expected: Vec<_> = (-2..=2).map(|o| (o, 5, true, repeated(o))).collect();
    assert_eq!(planes, expected);
    let j3d27pt = case("benchmarks/j3d27pt").bind_with(&[("N".into(), "17".into())]);
    let stage = j3d27pt.program().stages.ids().next().expect("a stage");
    let weighted = plane_sums(j3d27pt.checked(), stage, 0).expect("a plane sum");
    assert!(weighted.planes.iter().all(|p| p.off_axis && !p.repeated));
    let star = sums("star2d1r", &[17, 19]).expect("a plane sum");
    assert_eq!((star.span(), star.off_axis_planes()), ((-1, 1), 1));
    assert_eq!(sums("j3d7pt", &[9, 9, 9]), None);
    assert_eq!(sums("fdtd2d", &[9, 9]), None);

    // The kernels: a 27-point box at T = 2 with register planes reads each arriving plane's
    // eight neighbours from its ring once (and its own column from a register), and adds
    // three partial sums per point; exact mode and stars keep the written order.
    let relaxed = GpuPlan {
        time_tile: 2,
        stream_chunk: Some(5),
        exact: false,
        ..plan(GpuStrategy::Streaming, [16, 8, 1], 1)
    };
    let source = print_opencl(&lowered("box3d1r", &[11, 13, 21], &relaxed));
    let point = source
        .split("its sum reordered plane by plane")
        .nth(1)
        .expect("a reordered level");
    let point = &point[..point.find("int q_z").expect("a finished point")];
    assert_eq!(point.matches("float z").count(), 9, "{point}");
    assert_eq!(point.matches("= r").count(), 8, "{point}");
    assert_eq!(point.matches("a0_0_s").count(), 3 + 2, "{point}");
    let exact = GpuPlan {
        exact: true,
        ..relaxed.clone()
    };
    let written = print_opencl(&lowered("box3d1r", &[11, 13, 21], &exact));
    assert!(!written.contains("reordered"));
    let star = print_opencl(&lowered("star3d1r", &[11, 13, 21], &relaxed));
    assert!(!star.contains("reordered"));
}

#[test]
fn periodic_images_of_power_of_two_extents_are_masked_and_others_taken_modulo() {
    let naive = plan(GpuStrategy::Naive, [32, 4, 1], 1);
    let masked = print_cuda(&lowered("heat2d_periodic", &[64, 32], &naive));
    assert!(masked.contains("& ((int32_t)63)"), "{masked}");
    assert!(masked.contains("& ((int32_t)31)"), "{masked}");
    assert!(!masked.contains("% ((int32_t)64)"), "{masked}");
    assert!(!masked.contains("% ((int32_t)32)"), "{masked}");
    let modulo = print_cuda(&lowered("heat2d_periodic", &[64, 33], &naive));
    assert!(modulo.contains("& ((int32_t)63)"), "{modulo}");
    assert!(modulo.contains("% ((int32_t)33)"), "{modulo}");
}
