//! The bodies of the GPU differential suites, one for every GPU runtime: `tests/opencl_*.rs`
//! and `tests/cuda_*.rs` are thin files that call these with their [`Runtime`].

use tessera_codegen::kernel::{lower, print_opencl};
use tessera_plan::gpu::{GpuPlan, GpuStrategy};
use tessera_plan::{BackendPlan, Plan};
use tessera_runtime::Backend;
use tessera_testkit::plans::{fused_test_plans, gpu_test_plans};
use tessera_testkit::random::{self, RandomProgram};
use tessera_testkit::{Case, Failures, Subject, case, repository_programs};

use crate::availability::{require_cuda_device, require_opencl};

/// A GPU runtime the suites run on.
#[derive(Clone, Copy, Debug)]
pub enum Runtime {
    /// OpenCL (PoCL on CI).
    Opencl,
    /// CUDA (an NVIDIA GPU; never on CI).
    Cuda,
}

impl Runtime {
    /// The runtime's name in suite names.
    pub fn name(self) -> &'static str {
        match self {
            Runtime::Opencl => "opencl",
            Runtime::Cuda => "cuda",
        }
    }

    /// Whether the runtime has a device here (see [`crate::availability`]).
    pub fn available(self, suite: &str) -> bool {
        let suite = format!("{} {suite}", self.name());
        match self {
            Runtime::Opencl => require_opencl(&suite),
            Runtime::Cuda => require_cuda_device(&suite),
        }
    }

    /// The runtime's backend.
    pub fn backend(self) -> Box<dyn Backend> {
        match self {
            Runtime::Opencl => Box::new(tessera_opencl::OpenClBackend::default()),
            Runtime::Cuda => Box::new(tessera_cuda::CudaBackend::default()),
        }
    }

    /// The backend plan of `gpu` on this runtime.
    pub fn plan(self, gpu: GpuPlan) -> BackendPlan {
        match self {
            Runtime::Opencl => BackendPlan::Opencl(gpu),
            Runtime::Cuda => BackendPlan::Cuda(gpu),
        }
    }
}

/// The (size number, plan) pairs a program of `sizes` sizes runs: every plan at every size
/// with `TESSERA_GPU_MATRIX=full`; else every plan once, at sizes rotating with the plan
/// (which covers every size too), or with `sample`, that many plans, a window rotating with
/// `offset` (the repository's programs: many programs, one size each).
///
/// PoCL builds every kernel source with LLVM (about a second each) and sizes are compiled into
/// the sources, hence the rotation.
fn runs(sizes: usize, offset: usize, sample: Option<usize>) -> Vec<(usize, GpuPlan)> {
    let plans = gpu_test_plans();
    let sizes = sizes.max(1);
    if std::env::var("TESSERA_GPU_MATRIX").is_ok_and(|v| v == "full") {
        return (0..sizes)
            .flat_map(|size| plans.iter().map(move |p| (size, p.clone())))
            .collect();
    }
    let n = plans.len();
    let chosen: Vec<usize> = match sample {
        Some(count) => (0..count.min(n))
            .map(|k| (count * offset + k) % n)
            .collect(),
        None => (0..n).collect(),
    };
    (chosen.into_iter().enumerate())
        .map(|(k, plan)| ((k + offset) % sizes, plans[plan].clone()))
        .collect()
}

/// Runs the sizes x single-step plans of `case` ([`runs`]), recording each comparison with
/// the reference.
fn check_case(
    runtime: Runtime,
    case: &Case,
    offset: usize,
    sample: Option<usize>,
    failures: &mut Failures,
) {
    let backend = runtime.backend();
    for (index, gpu) in runs(case.sets.len(), offset, sample) {
        let subject = Subject::of_case(case, index, 1000 + index as u64);
        let plan = Plan::new(&subject.bound, runtime.plan(gpu));
        failures.record(subject.check_exact(backend.as_ref(), &plan));
    }
}

/// The differential matrix of the corpus program `name`: its sizes x the single-step plans,
/// in exact mode, fields and reductions bitwise equal to the reference.
pub fn matrix(runtime: Runtime, name: &str) {
    if !runtime.available(&format!("differential matrix ({name})")) {
        return;
    }
    let mut failures = Failures::new();
    check_case(runtime, &case(name), 0, None, &mut failures);
    failures.assert_none(name);
}

/// The repository's benchmarks and examples at a small size, two plans each (rotating).
pub fn benchmarks_and_examples(runtime: Runtime) {
    if !runtime.available("differential matrix (benchmarks and examples)") {
        return;
    }
    let mut failures = Failures::new();
    for (k, case) in repository_programs().iter().enumerate() {
        check_case(runtime, case, k, Some(2), &mut failures);
    }
    failures.assert_none("the repository's programs");
}

/// The fused plans (overlapped T = 1 to 4, streaming T = 2 to 4) of the corpus program
/// `name`, each at one of its sizes (rotating), for at least 2T + 1 steps: passes of T and of
/// fewer steps, and the single-step passes of reduction steps in between.
pub fn fused(runtime: Runtime, name: &str) {
    if !runtime.available(&format!("fused time tiling ({name})")) {
        return;
    }
    let case = case(name);
    let backend = runtime.backend();
    let mut failures = Failures::new();
    for (k, gpu) in fused_test_plans(&case.bind(0)).into_iter().enumerate() {
        let index = k % case.sets.len();
        let steps = case.steps.max(2 * u64::from(gpu.time_tile) + 1);
        let bound = case.bind(index);
        let label = format!("{} {:?}", case.name, bound.extents);
        let subject = Subject::new(label, bound, 2000 + k as u64, steps);
        let plan = Plan::new(&subject.bound, runtime.plan(gpu));
        failures.record(subject.check_exact(backend.as_ref(), &plan));
    }
    failures.assert_none(name);
}

/// Non-exact mode (balanced sums, reciprocals, box stencils' sums reordered plane by plane in
/// streaming time tiles) stays within `tolerance` of the reference on programs whose values
/// stay of order one: box and star stencils in 2D and 3D, f32 and f64, clamped and mirrored
/// borders, under every streaming time plan, an overlapped one and two single-step plans
/// (rotating); a reduction and `until` between reordered passes. The grids are large enough
/// for interior blocks, where sums are reordered.
pub fn relaxed(runtime: Runtime) {
    if !runtime.available("non-exact mode") {
        return;
    }
    let benchmark = |name: &str, n: usize, real: &str| {
        case(&format!("benchmarks/{name}"))
            .bind_with(&[("N".into(), n.to_string()), ("real".into(), real.into())])
    };
    let subjects = [
        (case("box2d1r").bind_extents(&[37, 45], &[]), 1e-5),
        (case("box2d2r").bind_extents(&[29, 33], &[]), 1e-5),
        (case("box2d_r2_clamp").bind_extents(&[31, 23], &[]), 1e-5),
        (case("box2d_r2_until").bind_extents(&[31, 23], &[]), 1e-5),
        (case("terms2d_mirror").bind_extents(&[23, 29], &[]), 1e-5),
        (case("star2d2r").bind_extents(&[29, 33], &[]), 1e-13),
        (case("box3d1r").bind_extents(&[19, 29, 45], &[]), 1e-5),
        (benchmark("j3d27pt", 37, "f32"), 1e-5),
        (benchmark("j3d27pt", 35, "f64"), 1e-13),
        (benchmark("gaussian2d", 41, "f32"), 1e-5),
    ];
    let backend = runtime.backend();
    let single_step = gpu_test_plans();
    let mut failures = Failures::new();
    let mut reordered = 0;
    for (k, (bound, tolerance)) in subjects.into_iter().enumerate() {
        let fused = fused_test_plans(&bound).into_iter();
        let plans = (fused.filter(|p| p.strategy == GpuStrategy::Streaming || p.time_tile == 2))
            .chain((0..2).map(|s| single_step[(2 * k + s) % single_step.len()].clone()));
        for (s, gpu) in plans.enumerate() {
            let gpu = GpuPlan {
                exact: false,
                ..gpu
            };
            let printed = lower(&bound, &gpu).map(|program| print_opencl(&program));
            reordered += usize::from(printed.is_ok_and(|source| source.contains("sum reordered")));
            // Past the step where `box2d_r2_until` stops (near 9).
            let steps = (u64::from(gpu.time_tile) * 2 + 1).max(16);
            let label = format!("{} {:?}", bound.program().name, bound.extents);
            let subject = Subject::new(label, bound.clone(), 3000 + s as u64, steps);
            let plan = Plan::new(&subject.bound, runtime.plan(gpu));
            failures.record(subject.check_close(backend.as_ref(), &plan, tolerance));
        }
    }
    failures.assert_none("non-exact mode");
    // The 2D radius-2 boxes and the 3D boxes at T = 2.
    assert!(reordered >= 6, "{reordered} plans with reordered sums");
}

/// Streaming time tiles whose interior blocks have steady trips (see the codegen's
/// `time_streaming::Checks`): register planes, chunks long enough, grids large enough for
/// interior blocks, passes of every depth. Exact mode bitwise (sub-domains, several stages
/// and fields, mirrored, clamped and periodic borders (at a power-of-two extent too), a field
/// read from memory, 2D and 3D, one or two positions of a 3D plane a thread),
/// and non-exact mode within a tolerance (box sums reordered in steady trips). Every kernel
/// must have steady trips.
pub fn steady(runtime: Runtime) {
    if !runtime.available("steady trips of streaming time tiles") {
        return;
    }
    let plan = |(block, time_tile, chunk): ([u32; 3], u32, u32)| GpuPlan {
        block,
        time_tile,
        stream_chunk: Some(chunk),
        ..GpuPlan::new(GpuStrategy::Streaming)
    };
    let (narrow, wide, deep) = (([8, 1, 1], 2, 12), ([16, 1, 1], 3, 16), ([8, 1, 1], 4, 20));
    // 3D: two positions of the plane a thread, and one (16x16 threads own 12x12 points).
    let (volume, one_position) = (([16, 8, 1], 2, 9), ([16, 16, 1], 2, 9));
    let subjects = [
        ("j2d5pt", vec![61, 47], vec![narrow, wide, deep], true),
        ("functions2d", vec![59, 45], vec![narrow, wide], true),
        ("mirror2d", vec![53, 43], vec![narrow, wide], true),
        ("acoustic2d", vec![57, 49], vec![narrow], true),
        (
            "heat2d_periodic",
            vec![45, 51],
            vec![([16, 1, 1], 2, 12)],
            true,
        ),
        // Periodic images of power-of-two extents are masked.
        (
            "heat2d_periodic",
            vec![64, 32],
            vec![([16, 1, 1], 2, 12)],
            true,
        ),
        ("fdtd2d", vec![57, 49], vec![narrow], true),
        ("j3d7pt", vec![29, 27, 37], vec![volume, one_position], true),
        (
            "box3d_constant",
            vec![27, 23, 35],
            vec![volume, one_position],
            true,
        ),
        ("box2d2r", vec![61, 53], vec![narrow, wide], false),
        (
            "box3d1r",
            vec![27, 25, 37],
            vec![volume, one_position],
            false,
        ),
    ];
    let backend = runtime.backend();
    let mut failures = Failures::new();
    for (k, (name, extents, plans, exact)) in subjects.into_iter().enumerate() {
        let bound = case(name).bind_extents(&extents, &[]);
        for (s, shape) in plans.into_iter().enumerate() {
            let gpu = GpuPlan {
                exact,
                ..plan(shape)
            };
            let label = format!("{name} {extents:?} {}", gpu.describe());
            let printed = lower(&bound, &gpu).map(|program| print_opencl(&program));
            if !printed.is_ok_and(|source| source.contains("steady trips: every plane")) {
                failures.record(Err(format!("{label}: no steady trip")));
                continue;
            }
            // Full passes, and a last one of fewer steps.
            let steps = 2 * u64::from(gpu.time_tile) + 1;
            let seed = 4000 + 10 * k as u64 + s as u64;
            let subject = Subject::new(label, bound.clone(), seed, steps);
            let plan = Plan::new(&subject.bound, runtime.plan(gpu));
            failures.record(if exact {
                subject.check_exact(backend.as_ref(), &plan)
            } else {
                subject.check_close(backend.as_ref(), &plan, 1e-5)
            });
        }
    }
    failures.assert_none("steady trips");
}

/// Random programs (`tessera_testkit::random`), exact, bitwise against the reference: for
/// seed number `k`, two single-step plans and three fused ones (rotating with `k`; every plan
/// with `TESSERA_GPU_MATRIX=full`), each for at least `2T + 1` steps. `TESSERA_RANDOM_PROGRAMS`
/// sets how many programs (seeds from `TESSERA_RANDOM_SEED`); CI runs 5.
pub fn random(runtime: Runtime) {
    if !runtime.available("random programs") {
        return;
    }
    let backend = runtime.backend();
    let full = std::env::var("TESSERA_GPU_MATRIX").is_ok_and(|v| v == "full");
    let mut failures = Failures::new();
    for (k, seed) in random::seeds(5).enumerate() {
        let program = RandomProgram::new(seed);
        let bound = program.bind();
        let rotate = |plans: Vec<GpuPlan>, count: usize| -> Vec<GpuPlan> {
            match full || plans.is_empty() {
                true => plans,
                false => (0..count.min(plans.len()))
                    .map(|s| plans[(count * k + s) % plans.len()].clone())
                    .collect(),
            }
        };
        let mut plans = rotate(gpu_test_plans(), 2);
        plans.extend(rotate(fused_test_plans(&bound), 3));
        let before = failures.failed();
        for gpu in plans {
            let steps = program.steps.max(2 * u64::from(gpu.time_tile) + 1);
            let subject = Subject::new(&program.name, bound.clone(), seed, steps);
            let plan = Plan::new(&subject.bound, runtime.plan(gpu));
            failures.record(subject.check_exact(backend.as_ref(), &plan));
        }
        if failures.failed() > before {
            eprintln!("{}:\n{}", program.name, program.text);
        }
    }
    failures.assert_none("random programs");
}
