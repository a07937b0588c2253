//! The differential matrix: benchmark-like programs × strategies × tiles × time tiles × thread
//! counts × awkward sizes, in exact mode, bitwise against the reference backend.

mod common;

use common::*;
use tessera_ir::ScalarType;
use tessera_plan::PlanRequest;

const STEPS: u64 = 7;

/// A small tile per dimension (so that grids hold several partial tiles).
fn small_tile(dims: usize) -> Vec<usize> {
    match dims {
        1 => vec![5],
        2 => vec![4, 7],
        _ => vec![3, 4, 5],
    }
}

/// Every strategy, with time tiles 1, 2, 3, more than the steps, and 4 (not dividing 7), on
/// 1 to 3 threads; tiles smaller and larger than the grid. `wavefront` only where it applies.
fn configurations(dims: usize, wavefront: bool) -> Vec<PlanRequest> {
    let tile = small_tile(dims);
    let mut out = vec![
        exact("naive", None, None, 1),
        exact("parallel", None, None, 2),
        exact("blocked", Some(tile.clone()), None, 3),
        exact("overlapped", Some(vec![1000; dims]), Some(3), 1),
    ];
    for (time_tile, threads) in [(1, 2), (2, 3), (3, 2), (STEPS as usize + 2, 2), (4, 3)] {
        out.push(exact(
            "overlapped",
            Some(tile.clone()),
            Some(time_tile),
            threads,
        ));
        // Time tiles 2, 3 (its 7-step runs end with a 1-step pass) and more than the steps
        // cover the wavefront's paths; 1 and 4 add nothing but compile time.
        if wavefront && [2, 3, STEPS as usize + 2].contains(&time_tile) {
            out.push(exact(
                "wavefront",
                Some(tile.clone()),
                Some(time_tile),
                threads,
            ));
        }
    }
    if wavefront {
        out.push(exact("wavefront", None, None, 2));
        out.push(exact("wavefront", Some(vec![1000; dims]), Some(5), 1));
    }
    out
}

/// Runs the matrix for `program` at each size.
fn matrix(program: tessera_ir::Program, sizes: &[&[usize]]) {
    let backend = backend();
    for (n, size) in sizes.iter().enumerate() {
        let bound = bind_sizes(&program, size);
        let fields = inputs(&bound, 17 + n as u64);
        let expected = reference(&bound, &fields, STEPS);
        let wavefront = tessera_plan::cpu::wavefront_unsupported(&bound).is_none();
        for options in configurations(size.len(), wavefront) {
            let actual = run_cpu(&backend, &bound, &fields, STEPS, &options);
            let what = format!("{} {size:?} {} {options:?}", program.name, actual.1.plan);
            assert_same(&what, &bound, &expected, &actual);
        }
    }
}

#[test]
fn star_1d_radius_2() {
    matrix(star1d2(), &[&[23], &[5]]);
}

/// Rows wider than one 64-byte vector run as shifted lanes: aligned vector loops with scalar
/// heads and tails of every length, and reads at `|dx|` of a whole vector (16 f32, 8 f64).
#[test]
fn shifted_lanes_at_row_widths_around_the_vector() {
    matrix(jacobi("star1d16r", 1, 16, ScalarType::F32, false), &[&[70]]);
    matrix(
        jacobi("star1d8r", 1, 8, ScalarType::F64, false),
        &[&[17], &[43]],
    );
    matrix(star2d_r1_f32(), &[&[5, 35], &[4, 50]]);
    matrix(jacobi("box2d2r", 2, 2, ScalarType::F32, true), &[&[6, 41]]);
}

/// The 3D wavefront computes pairs of planes per row loop (`plane_pairs`): odd and even plane
/// counts, rows with and without whole vectors.
#[test]
fn paired_planes_at_odd_and_even_plane_counts() {
    matrix(
        jacobi("star3d1r", 3, 1, ScalarType::F32, false),
        &[&[9, 6, 37], &[8, 5, 20], &[7, 4, 12]],
    );
}

#[test]
fn star_2d_radius_1_f32() {
    matrix(star2d_r1_f32(), &[&[17, 20], &[3, 3]]);
}

#[test]
fn star_2d_radius_2_f64() {
    matrix(star2d_r2_f64(), &[&[13, 8]]);
}

#[test]
fn box_2d_radius_1() {
    matrix(box2d_r1_f32(), &[&[5, 8]]);
}

#[test]
fn star_3d_radius_1() {
    matrix(star3d_r1_f64(), &[&[7, 9, 11]]);
}

#[test]
fn box_3d_radius_1() {
    matrix(box3d_r1_f32(), &[&[3, 3, 3], &[4, 5, 6]]);
}

#[test]
fn clamped_borders() {
    matrix(clamp2d(), &[&[11, 13], &[2, 3]]);
}

#[test]
fn mirrored_borders() {
    matrix(mirror2d(), &[&[9, 8]]);
}

#[test]
fn constant_borders() {
    matrix(constant3d(), &[&[5, 4, 7]]);
}

#[test]
fn periodic_borders() {
    matrix(periodic2d(), &[&[9, 10], &[2, 3]]);
}

#[test]
fn life_u8_periodic() {
    matrix(life(), &[&[11, 14]]);
}

#[test]
fn fdtd_multi_stage_subdomains() {
    matrix(fdtd2d(), &[&[9, 11]]);
}

#[test]
fn rician_with_reductions_every_1_and_3() {
    matrix(rician(1), &[&[8, 9]]);
    matrix(rician(3), &[&[10, 7]]);
}

#[test]
fn tv_multi_output_with_until() {
    matrix(tv2d(-1e300), &[&[9, 12]]);
}

#[test]
fn until_stops_inside_a_time_tile_run() {
    matrix(tv2d(1e300), &[&[6, 5]]);
}

#[test]
fn strided_integer_subdomain() {
    matrix(strided_i32(), &[&[12, 17]]);
}

/// The deep 2D wavefront `auto` picks for large radius-1 f32 grids (24 fused steps, 1024-point
/// bands) on a grid of two full bands and a narrow one, for a run of one full pass and a
/// shorter one: bitwise equal to the reference.
#[test]
fn deep_2d_wavefront_bands() {
    let backend = backend();
    let steps = 30;
    for program in [
        star2d_r1_f32(),
        jacobi("box2d1r", 2, 1, ScalarType::F32, true),
    ] {
        let bound = bind_sizes(&program, &[29, 2100]);
        let fields = inputs(&bound, 5);
        let expected = reference(&bound, &fields, steps);
        let options = exact("wavefront", Some(vec![29, 1024]), Some(24), 2);
        let actual = run_cpu(&backend, &bound, &fields, steps, &options);
        assert!(actual.1.plan.contains("T=24"), "{}", actual.1.plan);
        assert_same(&program.name, &bound, &expected, &actual);
    }
}

/// Runs `bound` in non-exact mode under each of `configurations` (`-O3` as in production) and
/// asserts each result within `tolerance` of the reference, from inputs of `seed`.
fn assert_relaxed_close(
    bound: &tessera_analysis::BoundProgram,
    seed: u64,
    configurations: Vec<PlanRequest>,
    tolerance: f64,
) {
    let mut backend = backend();
    backend.compile.optimization_flags = Some(vec!["-O3".into(), "-march=native".into()]);
    let fields = inputs(bound, seed);
    let expected = reference(bound, &fields, STEPS);
    for mut options in configurations {
        options.arithmetic = tessera_plan::Arithmetic::Relaxed;
        let actual = run_cpu(&backend, bound, &fields, STEPS, &options);
        let what = format!("{} {:?} {options:?}", bound.program().name, bound.extents);
        assert_close(&what, &expected, &actual, tolerance);
    }
}

/// Column sums on shifted lanes (rows of at least `min_lane_row` points) at row widths around
/// that threshold and around a vector, with tiles as wide as the rows so that every strategy
/// takes the form: within a few ulps per step of the reference.
#[test]
fn column_sums_on_lanes_at_row_widths_around_the_threshold() {
    // The threshold of a program, read at a size whose rows are long enough.
    let threshold = |program: &tessera_ir::Program, dims: usize| {
        let bound = bind_sizes(
            program,
            &vec![8; dims - 1]
                .into_iter()
                .chain([4096])
                .collect::<Vec<_>>(),
        );
        let stage = bound.program().stages.ids().next().expect("one stage");
        tessera_plan::reuse::min_lane_row(&bound, stage).expect("a lanes form")
    };
    // (program, size, interior points per row, tolerance)
    let mut cases = Vec::new();
    let (box3d, box2d) = (box3d_r1_f32(), box2d_r1_f32());
    let (box3d_rows, box2d_rows) = (threshold(&box3d, 3), threshold(&box2d, 2));
    for extra in [-1i64, 0, 1, 17] {
        let width = (box3d_rows as i64 + extra) as usize;
        cases.push((box3d.clone(), vec![4, 5, width + 2], width, 1e-5));
        // A general 3x3 box takes column sums only on lanes (buffered they would not pay).
        let width = (box2d_rows as i64 + extra) as usize;
        cases.push((box2d.clone(), vec![6, width + 2], width, 1e-5));
    }
    let gaussian = gaussian2d_f32();
    let gaussian_rows = threshold(&gaussian, 2);
    cases.push((
        gaussian,
        vec![9, gaussian_rows + 4 + 23],
        gaussian_rows + 23,
        1e-5,
    ));
    let periodic = periodic2d();
    let periodic_rows = threshold(&periodic, 2);
    for extra in [-1i64, 0, 9] {
        // The periodic border takes 2 points at each end of a row.
        let width = (periodic_rows as i64 + extra) as usize;
        cases.push((periodic.clone(), vec![7, width + 4], width, 1e-13));
    }
    for (program, size, row, tolerance) in cases {
        let bound = bind_sizes(&program, &size);
        let stage = bound.program().stages.ids().next().expect("one stage");
        let wide = size.clone();
        let least = threshold(&program, size.len());
        assert_eq!(
            tessera_plan::reuse::sums_on_lanes(&bound, stage, &wide),
            row >= least,
            "{} {size:?}",
            program.name
        );
        if program.name == "box2d1r" {
            let sums = tessera_plan::reuse::column_sums(&bound, stage, &wide);
            assert_eq!(sums.is_some(), row >= least, "{size:?}");
        }
        let dims = size.len();
        let mut tile = vec![2; dims];
        tile[dims - 1] = size[dims - 1];
        let mut configurations = vec![
            exact("parallel", None, None, 2),
            exact("overlapped", Some(tile.clone()), Some(3), 2),
        ];
        if tessera_plan::cpu::wavefront_unsupported(&bound).is_none() {
            configurations.push(exact("wavefront", Some(tile), Some(4), 3));
        }
        assert_relaxed_close(&bound, 11, configurations, tolerance);
    }
}

/// The buffered column sums of a 27-point box keep each column in a register on the whole
/// vectors of a row chunk and finish it with the scalar loop: rows of around one and two
/// vectors, f32 and f64, every strategy with tiles as wide as the rows.
#[test]
fn column_sums_in_registers_at_rows_around_whole_vectors() {
    let box3d_f64 = jacobi("box3d1r", 3, 1, ScalarType::F64, true);
    for (program, vector, tolerance) in [(box3d_r1_f32(), 16, 1e-5), (box3d_f64, 8, 1e-13)] {
        // The first pass covers the whole row (the interior and one point at each end).
        for width in [vector - 1, vector, vector + 1, 2 * vector + 3] {
            let size = vec![5, 6, width];
            let bound = bind_sizes(&program, &size);
            let stage = bound.program().stages.ids().next().expect("one stage");
            let sums = tessera_plan::reuse::column_sums(&bound, stage, &size).expect("box");
            assert!(sums.keeps_columns_in_registers());
            assert!(!tessera_plan::reuse::sums_on_lanes(&bound, stage, &size));
            let configurations = vec![
                exact("parallel", None, None, 2),
                exact("overlapped", Some(vec![2, 2, width]), Some(2), 2),
                exact("wavefront", Some(vec![2, 3, width]), Some(3), 2),
            ];
            assert_relaxed_close(&bound, 5, configurations, tolerance);
        }
    }
}

/// Non-exact mode (contraction, balanced sums, reciprocals, column sums for the box-shaped
/// stages) stays within a few ulps per step of the reference for every strategy (`-O3` as in
/// production). Its bits may depend on the
/// tiles: the compiler contracts vectorized and scalar remainder loops differently.
#[test]
fn relaxed_mode_is_close_to_the_reference() {
    for (program, size, tolerance) in [
        (box2d_r1_f32(), vec![37, 45], 1e-5),
        (star2d_r2_f64(), vec![29, 33], 1e-13),
        (box3d_r1_f32(), vec![11, 13, 21], 1e-5),
        // Grouped column sums, buffered (short rows) and on shifted lanes.
        (j3d27pt(ScalarType::F32), vec![9, 11, 23], 1e-5),
        (j3d27pt(ScalarType::F32), vec![5, 6, 301], 1e-5),
        (j3d27pt(ScalarType::F64), vec![5, 7, 203], 1e-13),
        (gaussian2d_f32(), vec![23, 41], 1e-5),
        (periodic2d(), vec![19, 27], 1e-13),
        // Rows longer than one column-sum chunk (512 f32 or 256 f64 points).
        (gaussian2d_f32(), vec![6, 1100], 1e-5),
        (periodic2d(), vec![7, 601], 1e-13),
    ] {
        let bound = bind_sizes(&program, &size);
        let dims = size.len();
        let mut configurations = vec![
            exact("parallel", None, None, 2),
            exact("overlapped", Some(small_tile(dims)), Some(3), 2),
        ];
        if tessera_plan::cpu::wavefront_unsupported(&bound).is_none() {
            configurations.push(exact("wavefront", Some(small_tile(dims)), Some(4), 3));
        }
        assert_relaxed_close(&bound, 3, configurations, tolerance);
    }
}
