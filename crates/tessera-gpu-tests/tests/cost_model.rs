//! The GPU cost model against the H200 measurements it was fitted on (docs/performance.md,
//! "GPU: H200", every strategy side by side): on the H200's built-in table it must predict
//! the measured rates within its stated error and choose, for every case, the plan that was
//! measured fastest. The rates are recorded data, not timings taken here.

use tessera_analysis::BoundProgram;
use tessera_codegen::kernel::{DeviceLimits, GpuPlan, GpuStrategy};
use tessera_gpu_host::cost::step_cost;
use tessera_gpu_host::{lower_for_device, plan_for, plan_requested};
use tessera_plan::gpu::known_gpu;
use tessera_plan::gpu_cost::{GpuThroughput, predict};
use tessera_plan::{PlanRequest, Strategy};

/// A plan measured on the GPU: strategy, time tile, GCells/s.
type Measured = (Strategy, u32, f64);

/// (program, element type, extent per axis, plans measured): the H200 session of 2026-11-28
/// (`scripts/gpu-session.sh lease` and `defaults`: naive, single-step `streaming`,
/// `overlapped` T=4; `scripts/gpu-bench.py --tiles 128`: 2D streaming time tiles, rows of 128
/// threads; j2d9pt-box is held out of the fit) with `tiled`, `wavefront` and the tiny grids from the sessions of
/// 2026-11-27 (not measured since; their kernels changed only by sums left to right and, in
/// the wavefront, masked periodic images), 20 steps at the paper sizes and 1000 steps on the tiny
/// grids (256^2, 64^3), where the launch cost and the blocks a launch has decide; CUDA graphs
/// on. Each plan is the strategy's default at that time tile (single-step `streaming` reads
/// its planes through the cache).
const CASES: [(&str, &str, usize, &[Measured]); 10] = [
    (
        "j2d5pt",
        "f32",
        8192,
        &[
            (Strategy::Tiled, 1, 199.0),
            (Strategy::Naive, 1, 275.0),
            (Strategy::Streaming, 1, 449.0),
            (Strategy::Overlapped, 4, 630.0),
            (Strategy::Streaming, 2, 804.0),
            (Strategy::Streaming, 4, 1070.0),
            (Strategy::Wavefront, 2, 6.48),
            (Strategy::Wavefront, 4, 9.52),
        ],
    ),
    (
        "j2d5pt",
        "f64",
        8192,
        &[
            (Strategy::Tiled, 1, 160.0),
            (Strategy::Naive, 1, 214.0),
            (Strategy::Streaming, 1, 239.0),
            (Strategy::Overlapped, 4, 425.0),
            (Strategy::Streaming, 4, 527.0),
            (Strategy::Wavefront, 2, 6.285),
            (Strategy::Wavefront, 4, 9.28),
        ],
    ),
    (
        "j3d7pt",
        "f32",
        512,
        &[
            (Strategy::Tiled, 1, 127.0),
            (Strategy::Naive, 1, 265.0),
            (Strategy::Streaming, 1, 412.0),
            (Strategy::Overlapped, 4, 112.0),
            (Strategy::Streaming, 2, 413.0),
            (Strategy::Streaming, 3, 368.0),
            (Strategy::Streaming, 4, 286.0),
            (Strategy::Wavefront, 2, 88.2),
            (Strategy::Wavefront, 4, 119.0),
        ],
    ),
    (
        "j3d7pt",
        "f64",
        512,
        &[
            (Strategy::Tiled, 1, 115.0),
            (Strategy::Naive, 1, 199.0),
            (Strategy::Streaming, 1, 231.0),
            (Strategy::Overlapped, 4, 58.2),
            (Strategy::Streaming, 2, 283.0),
            (Strategy::Streaming, 3, 164.0),
            (Strategy::Streaming, 4, 108.0),
            (Strategy::Wavefront, 2, 79.6),
            (Strategy::Wavefront, 4, 86.4),
        ],
    ),
    (
        "j3d27pt",
        "f32",
        512,
        &[
            (Strategy::Tiled, 1, 106.0),
            (Strategy::Naive, 1, 144.0),
            (Strategy::Streaming, 1, 191.0),
            (Strategy::Overlapped, 4, 37.2),
            (Strategy::Streaming, 2, 199.0),
            (Strategy::Wavefront, 2, 81.1),
            (Strategy::Wavefront, 4, 101.0),
        ],
    ),
    (
        "gaussian2d",
        "f32",
        8192,
        &[
            (Strategy::Tiled, 1, 155.0),
            (Strategy::Naive, 1, 161.0),
            (Strategy::Streaming, 1, 232.0),
            (Strategy::Overlapped, 4, 138.0),
            (Strategy::Streaming, 2, 582.0),
            (Strategy::Streaming, 4, 500.0),
            (Strategy::Wavefront, 2, 6.08),
            (Strategy::Wavefront, 4, 8.68),
        ],
    ),
    (
        "fdtd2d",
        "f32",
        8192,
        &[
            (Strategy::Tiled, 1, 43.7),
            (Strategy::Naive, 1, 81.0),
            (Strategy::Streaming, 1, 99.8),
            (Strategy::Overlapped, 4, 210.0),
            (Strategy::Streaming, 2, 194.0),
            (Strategy::Streaming, 4, 243.0),
            (Strategy::Wavefront, 2, 2.45),
            (Strategy::Wavefront, 4, 3.38),
        ],
    ),
    (
        "j2d9pt-box",
        "f32",
        8192,
        &[
            (Strategy::Naive, 1, 265.0),
            (Strategy::Streaming, 1, 432.0),
            (Strategy::Overlapped, 4, 482.0),
            (Strategy::Streaming, 2, 685.0),
            (Strategy::Streaming, 4, 781.0),
        ],
    ),
    (
        "j2d5pt",
        "f32",
        256,
        &[
            (Strategy::Naive, 1, 54.1),
            (Strategy::Streaming, 1, 15.5),
            (Strategy::Overlapped, 8, 43.8),
        ],
    ),
    (
        "j3d7pt",
        "f32",
        64,
        &[(Strategy::Naive, 1, 134.0), (Strategy::Streaming, 1, 61.1)],
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

/// The H200 of the built-in table and its throughput.
fn h200() -> (DeviceLimits, GpuThroughput) {
    let known = known_gpu("h200").expect("the built-in H200");
    let throughput = GpuThroughput::of(&known.limits, Some(known.peak_gb_s));
    (known.limits, throughput)
}

/// The plan the CUDA backend chooses for `bound` on the H200 when the request leaves it open.
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
    let (limits, throughput) = h200();
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
    assert_eq!(squared.len(), 66);
    assert!(
        rms <= 0.27,
        "the model misses the measurements by e^{rms:.3} on average"
    );
}

/// How far below the measured fastest plan the default may be: plans this close swap places
/// between runs (j2d5pt f32 on 2026-11-27: overlapped T=4 at 386 GCells/s, streaming at 373).
const CLOSE_CALL: f64 = 0.95;

/// The cases whose default the model is known to choose further below the fastest than a close
/// call, and how far below it may be there. fdtd2d takes `overlapped` T=4 (210 GCells/s) over
/// streaming time tiles at T=4 (243), and j2d9pt-box, on which nothing was fitted, streaming
/// T=2 (685) over T=4 (781): the 2D time tiles' efficiencies are fitted over j2d5pt,
/// gaussian2d and fdtd2d, whose measured rates they miss by up to 1.7x either way.
const KNOWN_MISSES: [(&str, &str, usize, f64); 2] = [
    ("fdtd2d", "f32", 8192, 0.85),
    ("j2d9pt-box", "f32", 8192, 0.85),
];

#[test]
fn the_default_plan_is_measured_and_within_a_close_call_of_the_fastest_in_every_case() {
    let (limits, throughput) = h200();
    for (program, ty, extent, measured) in CASES {
        let bound = benchmark(program, ty, extent);
        let chosen = default_plan(&bound, &limits, &throughput);
        let fastest = (measured.iter()).map(|m| m.2).fold(0.0, f64::max);
        let rate = (measured.iter())
            .find(|&&(strategy, time_tile, _)| {
                GpuStrategy::from_strategy(strategy, "cuda").ok() == Some(chosen.strategy)
                    && time_tile == chosen.time_tile
            })
            .map(|m| m.2);
        let context = format!(
            "{program} {ty} at {extent}: the model chose {}",
            chosen.describe()
        );
        let rate = rate.unwrap_or_else(|| panic!("{context}, which was not measured"));
        let known_miss = (KNOWN_MISSES.iter())
            .find(|miss| (miss.0, miss.1, miss.2) == (program, ty, extent))
            .map(|miss| miss.3);
        match known_miss {
            Some(floor) => assert!(
                rate >= floor * fastest && rate < CLOSE_CALL * fastest,
                "{context}, measured at {rate} against the fastest {fastest}: \
                 KNOWN_MISSES no longer says how far below it is"
            ),
            None => assert!(
                rate >= CLOSE_CALL * fastest,
                "{context}, measured at {rate} against the fastest {fastest}"
            ),
        }
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
    // The default 3D plan: streaming time tiles of two steps, measured on the H200.
    assert_eq!(
        (
            predicted.kernel_class.as_str(),
            predicted.dims,
            predicted.measured
        ),
        ("streaming-time", 3, true)
    );
    let streaming = tessera_plan::gpu_cost::efficiency(GpuStrategy::Streaming, 2, 3, 4);
    assert_eq!(predicted.efficiency, streaming.factor());
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
    let (limits, _) = h200();
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
    let (limits, throughput) = h200();
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
    let (limits, throughput) = h200();
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
