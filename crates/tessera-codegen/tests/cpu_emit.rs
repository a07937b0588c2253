//! Generated C for the CPU backend: snapshots per strategy, determinism, index width.

use std::sync::Arc;

use tessera_analysis::{BoundProgram, bind, check};
use tessera_codegen::cpu::emit_c;
use tessera_ir::builder::ProgramBuilder;
use tessera_ir::{BinaryOp, Border, Constant, Range, Region, ScalarType, SizeExpr, SizeOp, Span};
use tessera_plan::cpu::{CpuMachine, plan_cpu};
use tessera_plan::{Arithmetic, PlanRequest, Strategy, TargetIsa};

/// A builder with extent parameters `N0, N1, ...` (defaults `extents`) and their grid.
fn builder(
    name: &str,
    extents: &[i64],
) -> (ProgramBuilder, Vec<tessera_ir::Id<tessera_ir::Param>>) {
    let mut b = ProgramBuilder::new(name);
    let params: Vec<_> = (0..extents.len())
        .map(|a| b.param(format!("N{a}"), ScalarType::I64, Constant::Int(extents[a])))
        .collect();
    b.grid(params.iter().map(|p| SizeExpr::Param(*p)).collect());
    (b, params)
}

/// Checks the built program and binds its extents.
fn finish(b: ProgramBuilder, extents: &[i64]) -> BoundProgram {
    let values: Vec<(String, Constant)> = extents
        .iter()
        .enumerate()
        .map(|(a, &e)| (format!("N{a}"), Constant::Int(e)))
        .collect();
    bind(Arc::new(check(&b.finish()).expect("checks")), &values).expect("binds")
}

/// A 2D five-point Jacobi on the interior plus a clamped smoothing stage and a reduction.
fn program(extents: &[i64]) -> BoundProgram {
    let (mut b, params) = builder("jacobi", extents);
    let a = b.field("A", ScalarType::F32);
    let c = b.field("C", ScalarType::F32);
    b.set_border(c, Border::Clamp);
    let dims = extents.len();
    let mut sum = b.read(a, &vec![0; dims]);
    for axis in 0..dims {
        for d in [-1, 1] {
            let mut o = vec![0; dims];
            o[axis] = d;
            let r = b.read(a, &o);
            sum = b.binary(BinaryOp::Add, sum, r);
        }
    }
    let k = b.lit(Constant::Float(0.2));
    let value = b.binary(BinaryOp::Mul, k, sum);
    let interior = |p| Range::Span {
        lo: Some(SizeExpr::Const(1)),
        hi: Some(SizeExpr::Binary(
            SizeOp::Sub,
            Box::new(SizeExpr::Param(p)),
            Box::new(SizeExpr::Const(1)),
        )),
        stride: 1,
    };
    let mut s = b.stage("jacobi");
    s.over(Region {
        ranges: params.iter().map(|p| interior(*p)).collect(),
        span: Span::NONE,
    });
    s.assign(a, value);
    b.finish_stage(s);
    let mut s = b.stage("smooth");
    let mut o = vec![0; dims];
    o[dims - 1] = 1;
    let right = b.read(c, &o);
    let here = b.read(a, &vec![0; dims]);
    let value = b.binary(BinaryOp::Add, right, here);
    s.assign(c, value);
    s.reduce("total", tessera_ir::ReduceOp::Sum, value, 2);
    b.finish_stage(s);
    finish(b, extents)
}

/// The machine the snapshots are planned for: AVX-512, 1 MiB of L2, 32 MiB of L3.
fn machine() -> CpuMachine {
    CpuMachine {
        isa: TargetIsa::Avx512,
        threads: 2,
        l2_bytes: 1 << 20,
        l3_bytes: 32 << 20,
    }
}

fn emit(
    bound: &BoundProgram,
    strategy: &str,
    tile: Option<Vec<usize>>,
    time_tile: Option<u32>,
) -> String {
    let request = PlanRequest {
        strategy: Strategy::from_name(strategy),
        tile,
        time_tile,
        threads: Some(2),
        arithmetic: Arithmetic::Exact,
        ..PlanRequest::default()
    };
    emit_c(
        bound,
        &plan_cpu(bound, &request, &machine()).expect("plans"),
    )
}

#[test]
fn naive_source() {
    insta::assert_snapshot!(emit(&program(&[8, 10]), "naive", None, None));
}

/// Stages with scans walk their lines along the scan axis, split over threads, whatever the
/// strategy's tiles (`blocked` here).
#[test]
fn scan_stages_walk_their_lines() {
    let bound = tessera_testkit::case("scan3d").bind(0);
    insta::assert_snapshot!(emit(&bound, "blocked", Some(vec![2, 2, 4]), None));
}

#[test]
fn overlapped_source() {
    insta::assert_snapshot!(emit(
        &program(&[8, 10]),
        "overlapped",
        Some(vec![4, 4]),
        Some(2)
    ));
}

/// The single-stage Jacobi of `program` (without the smoothing stage): what `wavefront` runs.
fn jacobi_only(extents: &[i64]) -> BoundProgram {
    let (mut b, _) = builder("jacobi", extents);
    let a = b.field("A", ScalarType::F32);
    b.set_border(a, Border::Clamp);
    let dims = extents.len();
    let mut sum = b.read(a, &vec![0; dims]);
    for axis in 0..dims {
        for d in [-1, 1] {
            let mut o = vec![0; dims];
            o[axis] = d;
            let r = b.read(a, &o);
            sum = b.binary(BinaryOp::Add, sum, r);
        }
    }
    let k = b.lit(Constant::Float(0.2));
    let value = b.binary(BinaryOp::Mul, k, sum);
    let mut s = b.stage("jacobi");
    s.assign(a, value);
    b.finish_stage(s);
    finish(b, extents)
}

#[test]
fn wavefront_source() {
    insta::assert_snapshot!(emit(
        &jacobi_only(&[8, 10]),
        "wavefront",
        Some(vec![8, 4]),
        Some(3)
    ));
}

/// The 3D wavefront's rows compute pairs of planes (`plane_pairs`), the last of an odd count
/// alone.
#[test]
fn wavefront_paired_planes_source() {
    insta::assert_snapshot!(emit(
        &jacobi_only(&[12, 10, 40]),
        "wavefront",
        None,
        Some(2)
    ));
}

#[test]
fn only_bands_of_whole_rows_prefetch_the_rows_they_write() {
    let write = "ts_prefetch_box((const char*)nxt[0], ts_es[0], lo, hi, 1);";
    let read = "ts_prefetch_box((const char*)cur[0], ts_es[0], lo, hi, 0);";
    let three_d = emit(&jacobi_only(&[12, 10, 40]), "wavefront", None, Some(3));
    assert!(three_d.contains(read) && three_d.contains(write));
    let two_d = emit(
        &jacobi_only(&[8, 10]),
        "wavefront",
        Some(vec![8, 4]),
        Some(3),
    );
    assert!(two_d.contains(read) && !two_d.contains(write));
}

#[test]
fn wavefront_refuses_multi_stage_programs() {
    let request = PlanRequest {
        strategy: Some(Strategy::Wavefront),
        ..PlanRequest::default()
    };
    let error = plan_cpu(&program(&[8, 10]), &request, &machine()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "the wavefront strategy cannot run this program: it streams programs of exactly one stage; use `overlapped` or `parallel`"
    );
}

#[test]
fn same_program_same_source() {
    let a = emit(&program(&[9, 11]), "blocked", Some(vec![4, 5]), None);
    let b = emit(&program(&[9, 11]), "blocked", Some(vec![4, 5]), None);
    assert_eq!(a, b);
}

#[test]
fn indices_are_64_bit_beyond_two_to_the_31_cells() {
    let large = emit(&program(&[65536, 32769]), "parallel", None, None);
    assert!(
        large.contains("typedef int64_t ts_idx;"),
        "a grid of 2^31 + 65536 cells needs 64-bit indices"
    );
    let small = emit(&program(&[1024, 1024]), "parallel", None, None);
    assert!(small.contains("typedef int32_t ts_idx;"));
    let one_d = emit(&program(&[(1 << 31) + 17]), "parallel", None, None);
    assert!(one_d.contains("typedef int64_t ts_idx;"));
}

/// `A = Σ weight(o) · A[o]` over `offsets`, clamped borders, on a grid of `extents`.
fn linear(extents: &[i64], offsets: &[Vec<i32>], weight: &dyn Fn(&[i32]) -> f64) -> BoundProgram {
    let (mut b, _) = builder("linear", extents);
    let a = b.field("A", ScalarType::F32);
    b.set_border(a, Border::Clamp);
    let sum = b.weighted_reads(a, offsets.iter().map(|o| (o.as_slice(), weight(o))));
    let mut s = b.stage("update");
    s.assign(a, sum.expect("terms"));
    b.finish_stage(s);
    finish(b, extents)
}

/// Every offset of the box of radius `r` in `dims` dimensions.
fn box_offsets(dims: usize, r: i32) -> Vec<Vec<i32>> {
    (0..dims).fold(vec![vec![]], |acc, _| {
        acc.into_iter()
            .flat_map(|o: Vec<i32>| (-r..=r).map(move |d| [o.clone(), vec![d]].concat()))
            .collect()
    })
}

/// The separable 5x5 Gaussian: weights g[i] g[j] / 256.
fn gaussian(extents: &[i64]) -> BoundProgram {
    let g = [1.0, 4.0, 6.0, 4.0, 1.0];
    linear(extents, &box_offsets(2, 2), &|o| {
        g[(o[0] + 2) as usize] * g[(o[1] + 2) as usize] / 256.0
    })
}

/// A non-separable 3x3x3 box (weights all distinct).
fn box3d(extents: &[i64]) -> BoundProgram {
    linear(extents, &box_offsets(3, 1), &|o| {
        1.0 + f64::from(9 * o[0] + 3 * o[1] + o[2]) / 100.0
    })
}

fn emit_relaxed(bound: &BoundProgram, strategy: &str) -> String {
    let request = PlanRequest {
        strategy: Strategy::from_name(strategy),
        threads: Some(2),
        ..PlanRequest::default()
    };
    emit_c(
        bound,
        &plan_cpu(bound, &request, &machine()).expect("plans"),
    )
}

/// The interior function of stage 0 on the global arrays.
fn interior_function(source: &str) -> &str {
    let start = source
        .find("static void ts_s0_in_g")
        .expect("interior function");
    let end = source[start..].find("\n}\n").expect("its end") + start + 3;
    &source[start..end]
}

#[test]
fn separable_stencils_use_rank_one_column_sums() {
    insta::assert_snapshot!(interior_function(&emit_relaxed(
        &gaussian(&[40, 200]),
        "parallel"
    )));
}

/// The 27-point box of `j3d27pt`: the weight of `[dz, dy, dx]` is a function of `(dy, dx)`
/// plus one of `dz`.
fn j3d27pt(extents: &[i64]) -> BoundProgram {
    linear(extents, &box_offsets(3, 1), &|o| {
        let inner = if o[1] == 0 && o[2] == 0 {
            1.5
        } else {
            0.5 + 0.05 * f64::from(3 * (o[1] + 1) + o[2] + 1)
        };
        (inner + 0.01 * f64::from(o[0] + 1)) / 21.57
    })
}

/// Weights split into a part per group of columns and a part per column that does not depend
/// on dx: the groups are added up once per vector, the dx-independent part summed once and
/// shared by the three sums, and together they reproduce every weight of the stage.
#[test]
fn additively_split_weights_sum_groups_of_columns() {
    let bound = j3d27pt(&[5, 6, 600]);
    let stage = bound.program().stages.ids().next().expect("one stage");
    let sums = tessera_plan::reuse::column_form(&bound, stage).expect("box");
    assert!(!sums.shared.is_empty());
    assert!(sums.groups.iter().any(|g| g.len() > 1));
    let products: usize = sums.sums.iter().map(Vec::len).sum::<usize>() + sums.shared.len();
    assert!(products < 27, "{products} products");
    let form = tessera_analysis::linear_form(&bound, stage).expect("linear");
    for term in &form.terms {
        let column = sums
            .columns
            .iter()
            .position(|(_, o)| o[..2] == term.offset[..2])
            .expect("column");
        let (sum, _, _) = (sums.taps.iter())
            .find(|t| t.1 == term.offset[2])
            .expect("tap");
        let weight: f64 = (sums.sums[*sum].iter().chain(&sums.shared))
            .filter(|(g, _)| sums.groups[*g].contains(&column))
            .map(|(_, w)| w)
            .sum();
        let error = (weight - term.coefficient).abs();
        assert!(
            error <= 1e-12 * term.coefficient.abs(),
            "{:?}: {weight} vs {}",
            term.offset,
            term.coefficient
        );
    }
    let source = emit_relaxed(&bound, "parallel");
    insta::assert_snapshot!(interior_function(&source));
}

#[test]
fn long_rows_take_column_sums_on_lanes() {
    let lanes = |source: &str| {
        let f = interior_function(source).to_string();
        (!f.contains("ts_cs0[") && f.contains("TS_SHUFFLE(")).then_some(f)
    };
    // Rows of 1096 points: the rank-one sum per vector, its taps shuffled from neighbours.
    let gaussian = lanes(&emit_relaxed(&gaussian(&[40, 1100]), "parallel"));
    insta::assert_snapshot!(gaussian.expect("lanes form"));
    // A general 27-point box: three sums per vector; only the sum read at dx = -1 is needed
    // before the first vector, only the one read at dx = +1 after the last.
    let general = lanes(&emit_relaxed(&box3d(&[5, 6, 600]), "parallel")).expect("lanes form");
    assert!(general.contains("sm0 = ") && !general.contains("sm1 = "));
    assert!(general.contains("se2 = ") && !general.contains("se0 = "));
    // Its nine columns are pinned in registers, each loaded once for its three sums.
    assert!(general.contains("TS_IN_REGISTER(q8);"));
    insta::assert_snapshot!("general_box_on_lanes", general);
    // A general 3x3 box on long rows: the same three loads per vector as its plain lanes loop,
    // but two shuffles (of the sums read at dx = -1 and +1) instead of six.
    let box2d = |width| {
        linear(&[9, width], &box_offsets(2, 1), &|o| {
            1.0 + f64::from(3 * o[0] + o[1]) / 10.0
        })
    };
    let shuffles = |f: &str| f.matches("TS_SHUFFLE(").count();
    let summed = lanes(&emit_relaxed(&box2d(600), "parallel")).expect("lanes form");
    assert!(summed.contains("sm0 = ") && summed.contains("se2 = "));
    let plain = interior_function(&emit_relaxed(&box2d(100), "parallel")).to_string();
    assert!(!plain.contains("sm0 = ") && shuffles(&summed) < shuffles(&plain));
    // A general 9x9 box: its 9 columns and 27 vectors of sums would not fit in the registers.
    let wide = linear(&[9, 2000], &box_offsets(2, 4), &|o| {
        1.0 + f64::from(9 * o[0] + o[1]) / 100.0
    });
    let wide = lanes(&emit_relaxed(&wide, "parallel")).expect("lanes form");
    assert!(wide.contains("sn8 = ") && !wide.contains("TS_IN_REGISTER"));
    // Rows shorter than `min_lane_row` points (128 here) keep the buffer, as do tiles narrower
    // than that.
    assert!(lanes(&emit_relaxed(&box3d(&[5, 6, 120]), "parallel")).is_none());
    let long = box3d(&[5, 6, 600]);
    let stage = long.program().stages.ids().next().expect("a stage");
    assert!(!tessera_plan::reuse::sums_on_lanes(
        &long,
        stage,
        &[5, 6, 100],
        TargetIsa::Avx512
    ));
}

#[test]
fn column_sums_apply_where_they_save_loads() {
    let sums = |source: &str| {
        let f = interior_function(source);
        (0..)
            .take_while(|k| f.contains(&format!("ts_cs{k}[")))
            .count()
    };
    // A general 27-point box: one partial sum per x offset, 9 + 3 loads instead of 27.
    assert_eq!(sums(&emit_relaxed(&box3d(&[9, 10, 11]), "parallel")), 3);
    assert_eq!(sums(&emit_relaxed(&box3d(&[9, 10, 11]), "overlapped")), 3);
    assert_eq!(sums(&emit_relaxed(&gaussian(&[9, 10]), "wavefront")), 1);
    // A general 3x3 box would load 3 + 3 and store 3 instead of loading 9: no gain buffered
    // (on lanes it pays: `long_rows_take_column_sums_on_lanes`).
    let box2d = linear(&[9, 10], &box_offsets(2, 1), &|o| {
        1.0 + f64::from(3 * o[0] + o[1]) / 10.0
    });
    assert_eq!(sums(&emit_relaxed(&box2d, "parallel")), 0);
    // Stars are not box-shaped; exact mode keeps the order of the program; naive stays plain.
    assert_eq!(
        sums(&emit_relaxed(&jacobi_only(&[9, 10, 11]), "parallel")),
        0
    );
    assert_eq!(sums(&emit(&box3d(&[9, 10, 11]), "parallel", None, None)), 0);
    assert_eq!(sums(&emit_relaxed(&box3d(&[9, 10, 11]), "naive")), 0);
}

#[test]
fn column_sums_bound_by_arithmetic_prefer_wide_vectors() {
    let wide = |source: &str| source.contains("TS_WIDE_VECTORS static void ts_s0_in_g");
    // A general 27-point box keeps 27 multiply-adds per point: 512-bit vectors.
    let general = emit_relaxed(&box3d(&[9, 10, 11]), "wavefront");
    assert!(wide(&general));
    // Only the interior function is marked; the border loop is plain.
    assert!(!general.contains("TS_WIDE_VECTORS static void ts_s0_bd_g"));
    // The separable Gaussian moves about as many values as it multiplies; the plain loop
    // (naive) has no column form.
    assert!(!wide(&emit_relaxed(&gaussian(&[9, 10]), "wavefront")));
    assert!(!wide(&emit_relaxed(&box3d(&[9, 10, 11]), "naive")));
}

#[test]
fn buffered_column_sums_keep_few_columns_in_registers() {
    let pinned = |source: &str| interior_function(source).contains("TS_IN_REGISTER(c8);");
    // A general 27-point box: 9 columns in registers, 27 multiply-adds from them.
    let general = emit_relaxed(&box3d(&[9, 10, 11]), "parallel");
    assert!(pinned(&general));
    insta::assert_snapshot!(interior_function(&general));
    // The 125-point box would leave no register for its 125 weights, the 7x7 box would save a
    // fifth of its loads: loads folded as gcc likes.
    let box3d2r = linear(&[9, 10, 11], &box_offsets(3, 2), &|o| {
        1.0 + f64::from(25 * o[0] + 5 * o[1] + o[2]) / 100.0
    });
    let box2d3r = linear(&[9, 10], &box_offsets(2, 3), &|o| {
        1.0 + f64::from(7 * o[0] + o[1]) / 100.0
    });
    for wide in [box3d2r, box2d3r] {
        let source = emit_relaxed(&wide, "overlapped");
        assert!(source.contains("ts_cs0") && !source.contains("TS_IN_REGISTER(c"));
    }
    // Naive runs the plain loop.
    assert!(!pinned(&emit_relaxed(&box3d(&[9, 10, 11]), "naive")));
}

#[test]
fn float_stages_shifting_along_x_run_shifted_lanes() {
    let lanes = |source: &str| interior_function(source).contains("TS_SHUFFLE(");
    // A general 3x3 box: three aligned loads per vector, six shuffles, scalar head and tail.
    let box2d = linear(&[9, 40], &box_offsets(2, 1), &|o| {
        1.0 + f64::from(3 * o[0] + o[1]) / 10.0
    });
    let source = emit_relaxed(&box2d, "parallel");
    insta::assert_snapshot!(interior_function(&source));
    // The head and tail are one unaligned vector each, overlapping the aligned ones.
    assert!(interior_function(&source).contains("const int64_t p1 = part ? xe - 16 : xs;"));
    assert!(source.contains("TS_WIDE_VECTORS static void ts_s0_in_g"));
    // Border loops stay scalar; mixed views (the wavefront's first and last steps) store
    // through the write index.
    let border = &source[source
        .find("static void ts_s0_bd_g")
        .expect("border function")..];
    assert!(!border[..border.find("\n}\n").expect("its end")].contains("TS_SHUFFLE"));
    assert!(emit_relaxed(&box2d, "wavefront").contains("ts_store_f32(w0 + iw, "));
    // Exact mode too (every lane computes the scalar loop's operations in order); naive is the
    // plain loop.
    assert!(lanes(&emit(&box2d, "parallel", None, None)));
    assert!(!lanes(&emit_relaxed(&box2d, "naive")));
    // A stage storing over an array it reads computes no point twice: scalar head and tail.
    let in_place = emit_relaxed(&accumulate_shifted(&[9, 40]), "parallel");
    assert!(lanes(&in_place));
    assert!(interior_function(&in_place).contains("p1 = part ? xb : xs"));
}

/// `A += 0.5 (B[x+1] - B[x-1])`: A is read at its own point only, so it is written in place.
fn accumulate_shifted(extents: &[i64]) -> BoundProgram {
    let (mut b, _) = builder("accumulate", extents);
    let a = b.field("A", ScalarType::F32);
    let f = b.field("B", ScalarType::F32);
    b.set_border(f, Border::Clamp);
    let difference = b.weighted_reads(f, [(&[0, 1][..], 0.5), (&[0, -1][..], -0.5)]);
    let here = b.read(a, &[0, 0]);
    let value = b.binary(BinaryOp::Add, here, difference.expect("terms"));
    let mut s = b.stage("accumulate");
    s.assign(a, value);
    b.finish_stage(s);
    finish(b, extents)
}

/// A 7x7 box, all weights distinct: 49 terms, enough for term loops in written order.
fn box2d_r3(extents: &[i64]) -> BoundProgram {
    linear(extents, &box_offsets(2, 3), &|o| {
        1.0 + f64::from(7 * o[0] + o[1]) / 100.0
    })
}

#[test]
fn long_sums_run_as_term_loops_over_row_chunks() {
    let source = emit(&box2d_r3(&[40, 200]), "parallel", None, None);
    insta::assert_snapshot!(interior_function(&source));
}

#[test]
fn border_nests_run_long_sums_as_term_loops_through_the_border_mode() {
    let source = emit(&box2d_r3(&[40, 200]), "parallel", None, None);
    let start = source
        .find("static void ts_s0_bd_g")
        .expect("border function");
    let border = &source[start..];
    let border = &border[..border.find("\n}\n").expect("its end")];
    assert!(
        border.contains("static const int32_t ts_o0[49][2]"),
        "{border}"
    );
    assert!(
        border.contains("ts_clamp((p1 + ts_o0[k][1]), 200)"),
        "{border}"
    );
}

/// The generated C grows by a bounded number of bytes per stencil point: written-out sums
/// grow it by a whole expression per point and per variant, and the C compiler's time grows
/// faster still (minutes for the 729-point box before term loops).
#[test]
fn source_size_grows_linearly_with_the_stencil() {
    let size = |r: i32, strategy: &str, exact: bool| {
        let bound = linear(&[48, 48, 48], &box_offsets(3, r), &|o| {
            1.0 + f64::from(81 * o[0] + 9 * o[1] + o[2]) / 1000.0
        });
        let source = match exact {
            true => emit(&bound, strategy, None, None),
            false => emit_relaxed(&bound, strategy),
        };
        source.len() as f64
    };
    for strategy in ["naive", "parallel", "overlapped", "wavefront"] {
        for exact in [true, false] {
            let (small, large) = (size(3, strategy, exact), size(4, strategy, exact));
            let per_point = (large - small) / f64::from(729 - 343);
            assert!(
                per_point < 400.0,
                "{strategy} exact={exact}: {per_point:.0} bytes per added point ({small} -> {large})"
            );
        }
    }
}
