//! The differential matrix on the CPU backend: every program of the test kit's corpus at each
//! of its awkward sizes × strategies × tiles × time tiles × thread counts, in exact mode,
//! bitwise against the reference backend (through `tessera_testkit`'s harness, which also
//! replays every plan from its JSON form); then non-exact runs within a tolerance.

mod common;

use common::*;
use tessera_analysis::BoundProgram;
use tessera_ir::ScalarType;
use tessera_plan::{PlanRequest, Strategy};
use tessera_testkit::random::{self, RandomProgram};
use tessera_testkit::{Failures, Subject, case, repository_programs};

/// Every strategy, with time tiles 1, 2, 3, more than the steps, and 4 (not dividing 7), on
/// 1 to 3 threads; tiles smaller and larger than the grid. `wavefront` only where it applies.
fn configurations(dims: usize, steps: u64, wavefront: bool) -> Vec<PlanRequest> {
    let tile = small_tile(dims);
    let beyond = steps as u32 + 2;
    let mut out = vec![
        exact("naive", None, None, 1),
        exact("parallel", None, None, 2),
        exact("blocked", Some(tile.clone()), None, 3),
        exact("overlapped", Some(vec![1000; dims]), Some(3), 1),
    ];
    for (time_tile, threads) in [(1, 2), (2, 3), (3, 2), (beyond, 2), (4, 3)] {
        out.push(exact(
            "overlapped",
            Some(tile.clone()),
            Some(time_tile),
            threads,
        ));
        // Time tiles 2, 3 (a 7-step run ends with a 1-step pass) and more than the steps
        // cover the wavefront's paths; 1 and 4 add nothing but compile time.
        if wavefront && [2, 3, beyond].contains(&time_tile) {
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

/// Whether the wavefront strategy applies to `bound`.
fn wavefront_applies(bound: &BoundProgram) -> bool {
    tessera_plan::cpu::wavefront_unsupported(bound).is_none()
}

/// Runs `requests` on `subject`, recording each bitwise comparison with the reference. Where
/// the program's steps cannot be fused (a stage reads a reduction of the same step), a request
/// for a strategy fusing steps must be refused by the planner instead, naming the reason.
fn check_all(subject: &Subject, requests: &[PlanRequest], failures: &mut Failures) {
    let backend = backend();
    let refusal = tessera_plan::fusion_refusal(&subject.bound);
    for request in requests {
        let fuses = matches!(
            request.strategy,
            Some(Strategy::Overlapped | Strategy::Wavefront)
        );
        if let (true, Some(reason)) = (fuses, &refusal) {
            match subject.plan(&backend, request) {
                Err(error) if error.contains(reason.as_str()) => {}
                other => failures.record(Err(format!(
                    "{}: {request:?} should be refused ({reason}), got {other:?}",
                    subject.label
                ))),
            }
            continue;
        }
        failures.record(
            subject
                .plan(&backend, request)
                .and_then(|plan| subject.check_exact(&backend, &plan)),
        );
    }
}

/// The configurations run at size number `index`: every one at the first size; three at each
/// other size, rotating through the list, so that every size and every configuration is
/// covered without compiling every pair (each size is compiled into the sources).
fn configurations_at(index: usize, all: Vec<PlanRequest>) -> Vec<PlanRequest> {
    if index == 0 {
        return all;
    }
    let n = all.len();
    (0..3)
        .map(|k| all[(3 * (index - 1) + k) % n].clone())
        .collect()
}

/// Whether `TESSERA_CPU_MATRIX=quick` asks for the quick matrix (CI's runs for the other
/// targets): each program at its first size only, one configuration per strategy.
fn quick() -> bool {
    std::env::var("TESSERA_CPU_MATRIX").is_ok_and(|v| v == "quick")
}

/// One configuration per strategy (the quick matrix): naive, parallel, blocked, overlapped and
/// (where it applies) wavefront, the fused ones with time tiles of 3.
fn one_per_strategy(dims: usize, wavefront: bool) -> Vec<PlanRequest> {
    let tile = small_tile(dims);
    let mut out = vec![
        exact("naive", None, None, 1),
        exact("parallel", None, None, 2),
        exact("blocked", Some(tile.clone()), None, 2),
        exact("overlapped", Some(tile.clone()), Some(3), 2),
    ];
    if wavefront {
        out.push(exact("wavefront", Some(tile), Some(3), 2));
    }
    out
}

/// The matrix of the corpus program `name` at each of its sizes.
fn matrix(name: &str) {
    let case = case(name);
    let mut failures = Failures::new();
    if quick() {
        let subject = Subject::of_case(&case, 0, 17);
        let dims = subject.bound.extents.len();
        let requests = one_per_strategy(dims, wavefront_applies(&subject.bound));
        check_all(&subject, &requests, &mut failures);
        return failures.assert_none(name);
    }
    for index in 0..case.sets.len() {
        let subject = Subject::of_case(&case, index, 17 + index as u64);
        let dims = subject.bound.extents.len();
        let wavefront = wavefront_applies(&subject.bound);
        let requests = configurations_at(index, configurations(dims, case.steps, wavefront));
        check_all(&subject, &requests, &mut failures);
    }
    failures.assert_none(name);
}

tessera_testkit::test_every_program!(matrix);

/// The repository's benchmarks and examples at a small size, exact: the automatic plan, and
/// one of `parallel`, `overlapped` and (where it applies) `wavefront` in turn.
#[test]
fn every_benchmark_and_example() {
    let mut failures = Failures::new();
    for (k, case) in repository_programs().iter().enumerate() {
        let subject = Subject::of_case(case, 0, 3);
        let tile = small_tile(subject.bound.extents.len());
        let mut strategies = vec![
            exact("parallel", None, None, 2),
            exact("overlapped", Some(tile.clone()), Some(2), 2),
        ];
        if wavefront_applies(&subject.bound) {
            strategies.push(exact("wavefront", Some(tile), Some(3), 2));
        }
        let turn = strategies[k % strategies.len()].clone();
        let requests = match quick() {
            true => vec![exact_auto()],
            false => vec![exact_auto(), turn],
        };
        check_all(&subject, &requests, &mut failures);
    }
    failures.assert_none("the repository's programs");
}

/// The 3D wavefront computes pairs of planes per row loop (`plane_pairs`): odd and even plane
/// counts, rows with and without whole vectors.
#[test]
fn paired_planes_at_odd_and_even_plane_counts() {
    let case = case("star3d1r");
    let mut failures = Failures::new();
    for extents in [[9, 6, 37], [8, 5, 20], [7, 4, 12]] {
        let bound = case.bind_extents(&extents, &[("real", "f32")]);
        let subject = Subject::new(format!("star3d1r f32 {extents:?}"), bound, 5, 7);
        let requests = match quick() {
            true => one_per_strategy(3, true),
            false => configurations(3, 7, true),
        };
        check_all(&subject, &requests, &mut failures);
    }
    failures.assert_none("paired planes");
}

/// The deep 2D wavefront `auto` picks for large radius-1 f32 grids (24 fused steps, 1024-point
/// bands) on a grid of two full bands and a narrow one, for a run of one full pass and a
/// shorter one: bitwise equal to the reference.
#[test]
fn deep_2d_wavefront_bands() {
    let backend = backend();
    let mut failures = Failures::new();
    for name in ["star2d1r", "box2d1r"] {
        let bound = case(name).bind_extents(&[29, 2100], &[]);
        let subject = Subject::new(name, bound, 5, 30);
        let request = exact("wavefront", Some(vec![29, 1024]), Some(24), 2);
        failures.record(subject.plan(&backend, &request).and_then(|plan| {
            let cpu = plan.backend.cpu().expect("a cpu plan");
            assert_eq!(cpu.time_tile, 24, "{}", plan.describe());
            subject.check_exact(&backend, &plan)
        }));
    }
    failures.assert_none("deep wavefront bands");
}

/// Runs `bound` in non-exact mode under each of `requests` (`-O3` as in production) and
/// records each result within `tolerance` of the reference, from inputs of `seed`.
fn check_relaxed(
    subject: &Subject,
    requests: Vec<PlanRequest>,
    tolerance: f64,
    failures: &mut Failures,
) {
    let backend = production_backend();
    for request in requests {
        failures.record(
            subject
                .plan(&backend, &relaxed(request))
                .and_then(|plan| subject.check_close(&backend, &plan, tolerance)),
        );
    }
}

/// The non-exact configurations: `parallel`, `overlapped` and (where it applies) `wavefront`
/// with tiles of `tile`.
fn relaxed_configurations(bound: &BoundProgram, tile: Vec<usize>) -> Vec<PlanRequest> {
    let mut requests = vec![
        exact("parallel", None, None, 2),
        exact("overlapped", Some(tile.clone()), Some(3), 2),
    ];
    if wavefront_applies(bound) {
        requests.push(exact("wavefront", Some(tile), Some(4), 3));
    }
    requests
}

/// The shortest row on which the column sums of the (single-stage) `bound` run on lanes.
fn lane_threshold(bound: &BoundProgram) -> usize {
    let stage = bound.program().stages.ids().next().expect("one stage");
    tessera_plan::reuse::min_lane_row(bound, stage, test_isa()).expect("a lanes form")
}

/// Column sums on shifted lanes (rows of at least `min_lane_row` points) at row widths around
/// that threshold, with tiles as wide as the rows so that every strategy takes the form: within
/// a few ulps per step of the reference.
#[test]
fn column_sums_on_lanes_at_row_widths_around_the_threshold() {
    let mut failures = Failures::new();
    let mut subjects: Vec<(BoundProgram, usize, f64)> = Vec::new();
    let (box3d, box2d, periodic) = (case("box3d1r"), case("box2d1r"), case("periodic2d"));
    let gaussian = case("benchmarks/gaussian2d");
    let box3d_rows = lane_threshold(&box3d.bind_extents(&[8, 8, 4096], &[]));
    let box2d_rows = lane_threshold(&box2d.bind_extents(&[8, 4096], &[]));
    for extra in [-1i64, 0, 1, 17] {
        let width = (box3d_rows as i64 + extra) as usize;
        subjects.push((box3d.bind_extents(&[4, 5, width + 2], &[]), width, 1e-5));
        // A general 3x3 box takes column sums only on lanes (buffered they would not pay).
        let width = (box2d_rows as i64 + extra) as usize;
        subjects.push((box2d.bind_extents(&[6, width + 2], &[]), width, 1e-5));
    }
    let gaussian_rows = lane_threshold(&gaussian.bind_with(&[("N".into(), "4096".into())]));
    let n = gaussian_rows + 4 + 3;
    subjects.push((
        gaussian.bind_with(&[("N".into(), n.to_string())]),
        n - 4,
        1e-5,
    ));
    let periodic_rows = lane_threshold(&periodic.bind_extents(&[8, 4096], &[]));
    for extra in [-1i64, 0, 9] {
        // The periodic border takes 2 points at each end of a row.
        let width = (periodic_rows as i64 + extra) as usize;
        subjects.push((periodic.bind_extents(&[7, width + 4], &[]), width, 1e-13));
    }
    for (bound, row, tolerance) in subjects {
        let stage = bound.program().stages.ids().next().expect("one stage");
        let wide = bound.extents.clone();
        let label = format!("{} {:?}", bound.program().name, bound.extents);
        let on_lanes = row >= lane_threshold(&bound);
        assert_eq!(
            tessera_plan::reuse::sums_on_lanes(&bound, stage, &wide, test_isa()),
            on_lanes,
            "{label}"
        );
        if bound.program().name == "box2d1r" {
            let sums = tessera_plan::reuse::column_sums(&bound, stage, &wide, test_isa());
            assert_eq!(sums.is_some(), on_lanes, "{label}");
        }
        let dims = wide.len();
        let mut tile = vec![2; dims];
        tile[dims - 1] = wide[dims - 1];
        let requests = relaxed_configurations(&bound, tile);
        let subject = Subject::new(label, bound, 11, 7);
        check_relaxed(&subject, requests, tolerance, &mut failures);
    }
    failures.assert_none("column sums on lanes");
}

/// The buffered column sums of a 27-point box with each column in a register on the whole
/// vectors of a row chunk, finished by the scalar loop: rows of around one and two vectors,
/// f32 and f64, every strategy with tiles as wide as the rows. Where the planner would not pin
/// the columns on this target (fewer registers), the plan is edited to: plans are data.
#[test]
fn column_sums_in_registers_at_rows_around_whole_vectors() {
    let backend = production_backend();
    let isa = test_isa();
    let mut failures = Failures::new();
    for (real, tolerance) in [("f32", 1e-5), ("f64", 1e-13)] {
        let ty = if real == "f32" {
            ScalarType::F32
        } else {
            ScalarType::F64
        };
        let vector = isa.lanes(ty);
        // The first pass covers the whole row (the interior and one point at each end).
        let mut widths = [vector - 1, vector, vector + 1, 2 * vector + 3].map(|w| w.max(3));
        widths.sort_unstable();
        let mut widths = widths.to_vec();
        widths.dedup();
        for width in widths {
            let size = [5, 6, width];
            let bound = case("box3d1r").bind_extents(&size, &[("real", real)]);
            let stage = bound.program().stages.ids().next().expect("one stage");
            assert!(!tessera_plan::reuse::sums_on_lanes(
                &bound, stage, &size, isa
            ));
            let requests = [
                exact("parallel", None, None, 2),
                exact("overlapped", Some(vec![2, 2, width]), Some(2), 2),
                exact("wavefront", Some(vec![2, 3, width]), Some(3), 2),
            ];
            let subject = Subject::new(format!("box3d1r {real} {size:?}"), bound, 5, 7);
            for request in requests {
                failures.record(
                    subject
                        .plan(&backend, &relaxed(request))
                        .and_then(|mut plan| {
                            let cpu = pinned(&mut plan);
                            assert!(cpu.stages[0].column_sums, "{}", plan.describe());
                            subject.check_close(&backend, &plan, tolerance)
                        }),
                );
            }
        }
    }
    failures.assert_none("columns in registers");
}

/// The CPU part of `plan` with every column-sum stage's columns pinned in registers.
fn pinned(plan: &mut tessera_plan::Plan) -> &tessera_plan::cpu::CpuPlan {
    let tessera_plan::BackendPlan::Cpu(cpu) = &mut plan.backend else {
        panic!("a cpu plan");
    };
    for stage in cpu.stages.iter_mut().filter(|s| s.column_sums) {
        stage.columns_in_registers = true;
    }
    cpu
}

/// Non-exact mode (contraction, balanced sums, reciprocals, column sums for the box-shaped
/// stages) stays within a few ulps per step of the reference for every strategy (`-O3` as in
/// production). Its bits may depend on the tiles: the compiler contracts vectorized and scalar
/// remainder loops differently.
#[test]
fn relaxed_mode_is_close_to_the_reference() {
    let j3d27pt = case("benchmarks/j3d27pt");
    let gaussian = case("benchmarks/gaussian2d");
    let square = |case: &tessera_testkit::Case, n: usize, real: &str| {
        case.bind_with(&[("N".into(), n.to_string()), ("real".into(), real.into())])
    };
    // Grouped column sums on shifted lanes need rows of the lanes threshold.
    let lanes_f32 = lane_threshold(&square(&j3d27pt, 4096, "f32")) + 2;
    let lanes_f64 = lane_threshold(&square(&j3d27pt, 4096, "f64")) + 2;
    let subjects: Vec<(BoundProgram, f64, u64)> = vec![
        (case("box2d1r").bind_extents(&[37, 45], &[]), 1e-5, 7),
        (case("star2d2r").bind_extents(&[29, 33], &[]), 1e-13, 7),
        (case("box3d1r").bind_extents(&[11, 13, 21], &[]), 1e-5, 7),
        // Grouped column sums, buffered (short rows) and on shifted lanes.
        (square(&j3d27pt, 23, "f32"), 1e-5, 7),
        (square(&j3d27pt, lanes_f32, "f32"), 1e-5, 2),
        (square(&j3d27pt, lanes_f64, "f64"), 1e-13, 2),
        (square(&gaussian, 41, "f32"), 1e-5, 7),
        (case("periodic2d").bind_extents(&[19, 27], &[]), 1e-13, 7),
        // Rows longer than one column-sum chunk (512 f32 or 256 f64 points).
        (case("periodic2d").bind_extents(&[7, 601], &[]), 1e-13, 7),
        (gaussian.bind_with(&[("N".into(), "1100".into())]), 1e-5, 2),
    ];
    let mut failures = Failures::new();
    for (bound, tolerance, steps) in subjects {
        let requests = relaxed_configurations(&bound, small_tile(bound.extents.len()));
        let label = format!("{} {:?}", bound.program().name, bound.extents);
        let subject = Subject::new(label, bound, 3, steps);
        check_relaxed(&subject, requests, tolerance, &mut failures);
    }
    failures.assert_none("relaxed mode");
}

/// Values made of literals and parameters only, in a stage whose rows run on shifted lanes
/// (it reads a neighbour along the row): such a `let` or output prints as a scalar, which a
/// vector `let` or store must broadcast (random program 60 stored `0.081` as a vector, and
/// gcc refused it). 1D, 2D and f32 rows, each with one configuration per strategy.
#[test]
fn values_the_same_at_every_point_on_lanes() {
    let source = |grid: &str, region: &str, read: &str, ty: &str| {
        format!(
            "program uniform;\nparam gain: f64 = 0.3;\ngrid [{grid}];\nfield u: {ty};\n\
             field v: {ty};\nstage s over [{region}] {{\n    let a = u[{read}];\n    \
             let k = 0.25 * gain + 1.0;\n    v = 0.081;\n    u = k * a;\n}}\n"
        )
    };
    let mut failures = Failures::new();
    for (grid, region, read, ty) in [
        ("53", "1..53", "-1", "f64"),
        ("7, 45", "0..7, 1..44", "0, 1", "f64"),
        ("7, 45", "0..7, 1..45", "0, -1", "f32"),
    ] {
        let text = source(grid, region, read, ty);
        let bound = tessera_testkit::corpus::bind_source("uniform", &text, &[]);
        let subject = Subject::new("uniform", bound, 5, 3);
        let dims = subject.bound.extents.len();
        let requests = one_per_strategy(dims, wavefront_applies(&subject.bound));
        check_all(&subject, &requests, &mut failures);
    }
    failures.assert_none("values the same at every point");
}

/// Random programs (`tessera_testkit::random`), exact, against the reference: the automatic
/// plan and one configuration per strategy. `TESSERA_RANDOM_PROGRAMS` sets how many (seeds
/// from `TESSERA_RANDOM_SEED`, default 0); CI runs 6.
#[test]
fn random_programs() {
    let mut failures = Failures::new();
    for seed in random::seeds(6) {
        let program = RandomProgram::new(seed);
        let subject = Subject::new(&program.name, program.bind(), seed, program.steps);
        let dims = subject.bound.extents.len();
        let mut requests = vec![exact_auto()];
        requests.extend(one_per_strategy(dims, wavefront_applies(&subject.bound)));
        let before = failures.failed();
        check_all(&subject, &requests, &mut failures);
        if failures.failed() > before {
            eprintln!("{}:\n{}", program.name, program.text);
        }
    }
    failures.assert_none("random programs");
}
