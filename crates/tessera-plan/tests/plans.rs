//! Plans as data: every plan writes to JSON and reads back equal; a plan that does not fit the
//! program is refused naming the plan field, its value and the limit.

use tessera_analysis::BoundProgram;
use tessera_plan::cpu::{CpuMachine, CpuPlan, CpuStrategy, plan_cpu};
use tessera_plan::gpu::{GpuPlan, GpuStrategy};
use tessera_plan::{
    Arithmetic, BackendPlan, PLAN_FORMAT, Plan, PlanError, PlanRequest, Precision, ReferencePlan,
    Strategy, TargetIsa,
};

/// The corpus's 3x3 box (`box_`) or 5-point star on the interior of a `rows x cols` f32 grid.
fn program(rows: usize, cols: usize, box_: bool) -> BoundProgram {
    let name = if box_ { "box2d1r" } else { "star2d1r" };
    tessera_testkit::case(name).bind_extents(&[rows, cols], &[])
}

fn machine() -> CpuMachine {
    CpuMachine {
        isa: TargetIsa::Avx512,
        threads: 2,
        l2_bytes: 1 << 20,
        l3_bytes: 32 << 20,
    }
}

/// The CPU plan of `request` for `bound`, as a whole plan.
fn cpu_plan(bound: &BoundProgram, request: &PlanRequest) -> Plan {
    let cpu = plan_cpu(bound, request, &machine()).expect("plans");
    Plan::new(bound, BackendPlan::Cpu(cpu))
}

fn cpu_part(plan: &mut Plan) -> &mut CpuPlan {
    match &mut plan.backend {
        BackendPlan::Cpu(cpu) => cpu,
        _ => unreachable!(),
    }
}

/// The refusal of `plan` for `bound`, as text.
fn refusal(plan: &Plan, bound: &BoundProgram) -> String {
    plan.check_program(bound).unwrap_err().to_string()
}

#[test]
fn every_kind_of_plan_reads_back_from_its_json_equal() {
    let bound = program(70, 300, true);
    let mut plans = vec![
        Plan::new(
            &bound,
            BackendPlan::Reference(ReferencePlan {
                precision: Precision::F64,
                threads: Some(3),
            }),
        ),
        Plan::new(
            &bound,
            BackendPlan::Cuda(GpuPlan {
                stream_chunk: Some(5),
                ..GpuPlan::new(GpuStrategy::Streaming)
            }),
        ),
        Plan::new(
            &bound,
            BackendPlan::Opencl(GpuPlan::new(GpuStrategy::Tiled)),
        ),
    ];
    for strategy in CpuStrategy::ALL {
        for arithmetic in [Arithmetic::Exact, Arithmetic::Relaxed] {
            let request = PlanRequest {
                strategy: Some(strategy.strategy()),
                arithmetic,
                ..PlanRequest::default()
            };
            plans.push(cpu_plan(&bound, &request));
        }
    }
    for plan in plans {
        let json = plan.to_json();
        assert_eq!(Plan::from_json(&json).unwrap(), plan, "{json}");
        plan.check_program(&bound)
            .unwrap_or_else(|e| panic!("{json}: {e}"));
    }
    let relaxed = cpu_plan(&bound, &PlanRequest::default());
    assert!(
        relaxed.to_json().contains("\"column_sums\": true"),
        "{}",
        relaxed.to_json()
    );
}

#[test]
fn malformed_plan_files_name_the_field() {
    let bound = program(20, 30, false);
    let json = cpu_plan(&bound, &PlanRequest::default()).to_json();
    let cases = [
        (
            json.replace("\"tile\"", "\"tiles\""),
            "unknown field `tiles`",
        ),
        (
            json.replace("\"time_tile\": 1", "\"time_tile\": -1"),
            "backend.cpu.time_tile",
        ),
        (
            json.replace("\"parallel\"", "\"diagonal\""),
            "backend.cpu.strategy",
        ),
        (
            json.replace("\"cpu\"", "\"fpga\""),
            "unknown variant `fpga`",
        ),
        ("{".to_string(), "not a plan"),
    ];
    for (text, expected) in cases {
        let error = Plan::from_json(&text).unwrap_err();
        assert!(matches!(error, PlanError::Format(_)), "{error:?}");
        assert!(error.to_string().contains(expected), "{error}");
    }
}

#[test]
fn plans_that_do_not_fit_the_program_name_the_field_the_value_and_the_limit() {
    let bound = program(9, 12, true);
    let base = cpu_plan(&bound, &PlanRequest::exact());
    let mut cases: Vec<(Plan, &str)> = Vec::new();
    let mut with = |edit: &dyn Fn(&mut Plan), expected: &'static str| {
        let mut plan = base.clone();
        edit(&mut plan);
        cases.push((plan, expected));
    };
    with(
        &|p| p.format = 7,
        "plan field `format` is 7, but this Tessera reads plan format 1",
    );
    with(
        &|p| p.program = "other".into(),
        "plan field `program` is `other`, but this run is of program `box2d1r`",
    );
    with(
        &|p| p.grid = vec![9, 13],
        "plan field `grid` is [9, 13], but this run's grid is [9, 12]",
    );
    with(
        &|p| cpu_part(p).tile = vec![4],
        "plan field `cpu.tile` is [4], but the grid has 2 axes",
    );
    with(
        &|p| cpu_part(p).tile = vec![4, 1000],
        "plan field `cpu.tile[1]` is 1000, but a tile holds 1 to 12 points along axis 1",
    );
    with(
        &|p| cpu_part(p).tile = vec![0, 4],
        "plan field `cpu.tile[0]` is 0",
    );
    with(
        &|p| cpu_part(p).time_tile = 3,
        "plan field `cpu.time_tile` is 3, but the parallel strategy computes one step at a time",
    );
    with(
        &|p| cpu_part(p).threads = 0,
        "plan field `cpu.threads` is 0",
    );
    with(
        &|p| cpu_part(p).stages.clear(),
        "plan field `cpu.stages` is a list of 0, but program `box2d1r` has 1 stages",
    );
    with(
        &|p| cpu_part(p).stages[0].column_sums = true,
        "plan field `cpu.stages[0].column_sums` is true, but column sums reorder additions",
    );
    with(
        &|p| cpu_part(p).stages[0].columns_in_registers = true,
        "plan field `cpu.stages[0].columns_in_registers` is true, but it applies to column sums",
    );
    with(
        &|p| cpu_part(p).stages[0].term_loops = true,
        "plan field `cpu.stages[0].term_loops` is true, but stage `update` has fewer than 32 terms in long sums",
    );
    with(
        &|p| cpu_part(p).plane_pairs = true,
        "plan field `cpu.plane_pairs` is true, but plane pairs need the 3D wavefront",
    );
    with(
        &|p| {
            let cpu = cpu_part(p);
            cpu.strategy = CpuStrategy::Naive;
            cpu.threads = 2;
        },
        "plan field `cpu.threads` is 2, but the naive strategy runs on 1 thread",
    );
    with(
        &|p| {
            p.backend = BackendPlan::Opencl(GpuPlan {
                time_tile: 2,
                ..GpuPlan::new(GpuStrategy::Tiled)
            })
        },
        "use a time tile of 1",
    );
    with(
        &|p| {
            p.backend = BackendPlan::Reference(ReferencePlan {
                precision: Precision::Exact,
                threads: Some(0),
            })
        },
        "plan field `reference.threads` is 0",
    );
    for (plan, expected) in cases {
        let message = refusal(&plan, &bound);
        assert!(
            message.contains(expected),
            "expected `{expected}` in: {message}"
        );
    }
    // The naive strategy is the plain loop every form is compared with.
    let mut naive = cpu_plan(
        &bound,
        &PlanRequest {
            strategy: Some(Strategy::Naive),
            ..PlanRequest::exact()
        },
    );
    cpu_part(&mut naive).stages[0].lanes = true;
    let message = refusal(&naive, &bound);
    assert!(
        message.contains("plan field `cpu.stages[0].lanes` is true, but stage `update` cannot run on shifted lanes"),
        "{message}"
    );
}

#[test]
fn a_requested_tile_larger_than_the_grid_is_clamped_and_a_deep_time_tile_picks_a_fused_strategy() {
    let bound = program(9, 12, false);
    let request = PlanRequest {
        strategy: Some(Strategy::Overlapped),
        tile: Some(vec![1000, 1000]),
        ..PlanRequest::default()
    };
    let plan = plan_cpu(&bound, &request, &machine()).unwrap();
    assert_eq!(plan.tile, vec![9, 12]);
    let deep = PlanRequest {
        time_tile: Some(4),
        ..PlanRequest::default()
    };
    let plan = plan_cpu(&bound, &deep, &machine()).unwrap();
    assert_eq!((plan.strategy, plan.time_tile), (CpuStrategy::Wavefront, 4));
    let refused = PlanRequest {
        strategy: Some(Strategy::Parallel),
        time_tile: Some(4),
        ..PlanRequest::default()
    };
    let error = plan_cpu(&bound, &refused, &machine())
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("needs `overlapped` or `wavefront`"),
        "{error}"
    );
    assert_eq!(PLAN_FORMAT, 1);
}
