//! The GPU cost model against the H100 measurements it was fitted on (docs/performance.md,
//! "GPU: H100", every strategy side by side): on the H100's built-in table it must predict
//! the measured rates within its stated error and choose, for every case, the plan that was
//! measured fastest. The rates are recorded data, not timings taken here.

use tessera_analysis::BoundProgram;
use tessera_codegen::kernel::{DeviceLimits, GpuPlan, GpuStrategy};
use tessera_gpu_host::cost::step_cost;
use tessera_gpu_host::{lower_for_device, plan_for, plan_requested};
use tessera_plan::gpu::known_gpu;
use tessera_plan::gpu_cost::{GpuThroughput, predict};
use tessera_plan::{PlanRequest, Strategy};

/// A plan measured on the H100: strategy, time tile, GCells/s.
type Measured = (Strategy, u32, f64);

/// (program, element type, extent per axis, plans measured), run 1 of the H100 session
/// (`streaming` in 3D from run 3, after its chunks and cached plane reads, which are the
/// plan's defaults now; j3d27pt's streaming kernel then loaded its diagonal reads directly,
/// before they got a register queue per column: the next GPU run replaces that rate). The
/// 3D `naive` rates are left out: that kernel looped over z in each thread then, and now
/// launches a thread per point of a 3D grid.
const CASES: [(&str, &str, usize, &[Measured]); 7] = [
    (
        "j2d5pt",
        "f32",
        8192,
        &[
            (Strategy::Naive, 1, 246.0),
            (Strategy::Tiled, 1, 188.0),
            (Strategy::Overlapped, 1, 228.0),
            (Strategy::Overlapped, 2, 358.0),
            (Strategy::Overlapped, 3, 370.0),
            (Strategy::Overlapped, 4, 384.0),
        ],
    ),
    (
        "j2d5pt",
        "f64",
        8192,
        &[
            (Strategy::Naive, 1, 167.0),
            (Strategy::Tiled, 1, 144.0),
            (Strategy::Overlapped, 1, 166.0),
            (Strategy::Overlapped, 2, 272.0),
            (Strategy::Overlapped, 3, 282.0),
            (Strategy::Overlapped, 4, 291.0),
        ],
    ),
    (
        "j3d7pt",
        "f32",
        512,
        &[
            (Strategy::Tiled, 1, 126.0),
            (Strategy::Streaming, 1, 235.0),
            (Strategy::Overlapped, 1, 134.0),
            (Strategy::Overlapped, 2, 124.0),
            (Strategy::Overlapped, 3, 93.1),
            (Strategy::Overlapped, 4, 70.5),
        ],
    ),
    (
        "j3d7pt",
        "f64",
        512,
        &[
            (Strategy::Tiled, 1, 111.0),
            (Strategy::Streaming, 1, 147.0),
            (Strategy::Overlapped, 1, 123.0),
            (Strategy::Overlapped, 2, 110.0),
            (Strategy::Overlapped, 3, 61.2),
            (Strategy::Overlapped, 4, 23.2),
        ],
    ),
    (
        "j3d27pt",
        "f32",
        512,
        &[
            (Strategy::Tiled, 1, 105.0),
            (Strategy::Streaming, 1, 154.0),
            (Strategy::Overlapped, 1, 111.0),
            (Strategy::Overlapped, 2, 81.1),
            (Strategy::Overlapped, 3, 49.7),
            (Strategy::Overlapped, 4, 28.6),
        ],
    ),
    (
        "gaussian2d",
        "f32",
        8192,
        &[
            (Strategy::Naive, 1, 158.0),
            (Strategy::Tiled, 1, 150.0),
            (Strategy::Overlapped, 1, 200.0),
            (Strategy::Overlapped, 2, 167.0),
            (Strategy::Overlapped, 3, 144.0),
            (Strategy::Overlapped, 4, 132.0),
        ],
    ),
    (
        "fdtd2d",
        "f32",
        8192,
        &[
            (Strategy::Naive, 1, 66.2),
            (Strategy::Tiled, 1, 40.2),
            (Strategy::Overlapped, 1, 97.5),
            (Strategy::Overlapped, 2, 149.0),
            (Strategy::Overlapped, 3, 158.0),
            (Strategy::Overlapped, 4, 162.0),
        ],
    ),
];

/// The benchmark `program` at `extent` per axis with element type `ty`.
fn benchmark(program: &str, ty: &str, extent: usize) -> BoundProgram {
    let case = tessera_testkit::case(&format!("benchmarks/{program}"));
    case.bind_with(&[
        ("N".to_string(), extent.to_string()),
        ("real".to_string(), ty.to_string()),
    ])
}

/// The H100 of the built-in table and its throughput.
fn h100() -> (DeviceLimits, GpuThroughput) {
    let known = known_gpu("h100").expect("the built-in H100");
    let throughput = GpuThroughput::of(&known.limits, Some(known.peak_gb_s));
    (known.limits, throughput)
}

/// The plan the CUDA backend chooses for `bound` on the H100 when the request leaves it open.
fn default_plan(
    bound: &BoundProgram,
    limits: &DeviceLimits,
    throughput: &GpuThroughput,
) -> GpuPlan {
    plan_for(bound, &PlanRequest::default(), "cuda", limits, throughput).expect("plans")
}

/// The request for one measured plan.
fn request(strategy: Strategy, time_tile: u32) -> PlanRequest {
    PlanRequest {
        strategy: Some(strategy),
        time_tile: Some(time_tile),
        ..PlanRequest::default()
    }
}

#[test]
fn the_model_predicts_the_measured_rates_within_its_stated_error() {
    let (limits, throughput) = h100();
    let mut squared = Vec::new();
    for (program, ty, extent, measured) in CASES {
        let bound = benchmark(program, ty, extent);
        for &(strategy, time_tile, gcells) in measured {
            let plan = plan_requested(&bound, &request(strategy, time_tile), "cuda", &limits)
                .expect("the measured plan plans");
            let lowered = lower_for_device(&bound, &plan, &limits).expect("lowers");
            let cost = step_cost(&bound, &plan, &lowered, &limits);
            let predicted = predict(&cost, &throughput).gcells(&cost);
            let error = (predicted / gcells).ln();
            println!(
                "{program} {ty} {}: predicted {predicted:.1}, measured {gcells}",
                plan.describe()
            );
            squared.push(error * error);
        }
    }
    let rms = (squared.iter().sum::<f64>() / squared.len() as f64).sqrt();
    println!("root mean square of ln(predicted / measured): {rms:.3}");
    assert_eq!(squared.len(), 42);
    assert!(
        rms <= 0.40,
        "the model misses the measurements by e^{rms:.3} on average"
    );
}

#[test]
fn the_default_plan_is_the_one_measured_fastest_in_every_case() {
    let (limits, throughput) = h100();
    for (program, ty, extent, measured) in CASES {
        let bound = benchmark(program, ty, extent);
        let chosen = default_plan(&bound, &limits, &throughput);
        let &(strategy, time_tile, _) = (measured.iter())
            .max_by(|a, b| a.2.total_cmp(&b.2))
            .expect("measured plans");
        let expected = GpuStrategy::from_strategy(strategy, "cuda").expect("a GPU strategy");
        // The overlapped measurements stop at T = 4: a depth of 3, which the model does not
        // weigh, counts as its neighbour 4.
        let expected_depth = if time_tile == 3 { 4 } else { time_tile };
        assert_eq!(
            (chosen.strategy, chosen.time_tile),
            (expected, expected_depth),
            "{program} {ty}: the model chose {}",
            chosen.describe()
        );
    }
}

#[test]
fn the_cuda_backend_predicts_a_plan_for_a_built_in_gpu_and_none_for_a_cpu_device() {
    use tessera_runtime::Backend;
    let bound = benchmark("j3d7pt", "f32", 512);
    let backend = tessera_cuda::CudaBackend::default();
    let h100 = tessera_plan::DeviceSelection::Named("h100".into());
    let plan = backend
        .plan(
            &bound,
            &PlanRequest {
                device: h100.clone(),
                ..PlanRequest::default()
            },
        )
        .expect("plans for the built-in H100");
    let predicted = backend
        .predict(&bound, &plan, &h100)
        .expect("predicts")
        .expect("a GPU backend predicts");
    // The default 3D plan: single-step streaming, measured on the H100.
    assert_eq!(
        (
            predicted.kernel_class.as_str(),
            predicted.dims,
            predicted.measured
        ),
        ("streaming", 3, true)
    );
    assert!((predicted.efficiency - 1.118).abs() < 1e-9);
    assert!(predicted.gcells_per_s > 0.0 && predicted.bound == "device memory");
    // An OpenCL device with warps of one (PoCL on a CPU) gets no GPU prediction.
    let Ok((info, _)) = tessera_opencl::select_device(None) else {
        return;
    };
    if tessera_opencl::device_limits(&info).warp_size <= 1 {
        let opencl = tessera_opencl::OpenClBackend::default();
        let plan = opencl.plan(&bound, &PlanRequest::default()).expect("plans");
        let prediction = opencl.predict(&bound, &plan, &tessera_plan::DeviceSelection::Default);
        assert_eq!(prediction.expect("answers"), None);
    }
}

#[test]
fn a_step_counts_the_launches_and_kernels_of_a_pass_without_reductions() {
    let (limits, _) = h100();
    let step = |program: &str, strategy: Strategy, time_tile: u32| {
        let bound = tessera_testkit::case(program).bind(0);
        let plan =
            plan_requested(&bound, &request(strategy, time_tile), "cuda", &limits).expect("plans");
        let lowered = lower_for_device(&bound, &plan, &limits).expect("lowers");
        (step_cost(&bound, &plan, &lowered, &limits), bound)
    };
    // One stage, one launch per step; its points are the stage's.
    let (naive, bound) = step("j2d5pt", Strategy::Naive, 1);
    assert_eq!((naive.kernels.len(), naive.launches), (1, 1.0));
    assert_eq!(naive.kernels[0].points, bound.updated_points() as f64);
    // Three stages fused four steps per launch: one kernel, a quarter launch per step.
    let (overlapped, _) = step("fdtd2d", Strategy::Overlapped, 4);
    assert_eq!((overlapped.kernels.len(), overlapped.launches), (1, 0.25));
    // The wavefront launches once per plane of its sweep.
    let (wavefront, bound) = step("j3d7pt", Strategy::Wavefront, 4);
    let planes = bound.extents[0] as f64;
    assert!(wavefront.launches > planes / 4.0, "{}", wavefront.launches);
    // Reductions run in passes of their own: a step without them is the model's.
    let (reduced, _) = step("reductions2d", Strategy::Naive, 1);
    let (fused, _) = step("reductions2d", Strategy::Overlapped, 2);
    assert!(reduced.launches >= 1.0 && fused.launches <= 0.5 + 1e-9);
}

#[test]
fn counted_registers_replace_the_estimates_in_the_occupancy() {
    let (limits, throughput) = h100();
    let bound = benchmark("j3d7pt", "f32", 512);
    let plan =
        plan_requested(&bound, &request(Strategy::Streaming, 1), "cuda", &limits).expect("plans");
    let lowered = lower_for_device(&bound, &plan, &limits).expect("lowers");
    let estimated = step_cost(&bound, &plan, &lowered, &limits);
    let counted =
        tessera_gpu_host::cost::step_cost_with_registers(&bound, &plan, &lowered, &limits, |_| {
            Some(128)
        });
    // 128 registers for 256 threads: 2 blocks of 8 warps, a quarter of the multiprocessor.
    assert_eq!(counted.kernels[0].occupancy, 0.25);
    assert!(estimated.kernels[0].occupancy > 0.25);
    let rate = |cost| predict(cost, &throughput).gcells(cost);
    assert!(rate(&counted) < rate(&estimated));
}

#[test]
fn a_program_whose_steps_cannot_fuse_is_refused_every_fusing_plan_and_runs_one_step_plans() {
    let (limits, throughput) = h100();
    let bound = tessera_testkit::case("scan2d").bind(0);
    for (strategy, time_tile) in [
        (Strategy::Overlapped, 1),
        (Strategy::Streaming, 2),
        (Strategy::Wavefront, 4),
    ] {
        let refused = plan_requested(&bound, &request(strategy, time_tile), "cuda", &limits)
            .expect_err("a scan cannot fuse steps");
        assert!(refused.to_string().contains("fuses steps"), "{refused}");
    }
    let chosen = default_plan(&bound, &limits, &throughput);
    assert!(!chosen.fuses_steps(), "{}", chosen.describe());
}
