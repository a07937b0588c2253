//! Distributed runs with the OpenCL backend (PoCL on CI) on every rank, every rank in this
//! process: programs with reductions, `until`, periodic borders across ranks (also beside
//! clamped fields), sub-domains,
//! tables, 3D grids cut along two axes; the default exact plan with the exchange after each
//! pass, and overlapped time tiling with the exchange overlapped (boundary strips first), at 3
//! steps between exchanges; bitwise against the single-process reference. This exercises the
//! GPU runtime's side of distribution: row partials read back, and fields written between
//! passes (uploaded again, twin buffers made to agree).

use tessera_distribute::local::minimum_extents;
use tessera_distribute::{Decomposition, Distribution, InProcessExecutable};
use tessera_gpu_tests::availability::require_opencl;
use tessera_opencl::OpenClBackend;
use tessera_plan::{PlanRequest, Strategy};
use tessera_testkit::{Failures, Subject, case};

/// The programs: each a feature distribution must carry through a GPU run.
const PROGRAMS: [&str; 11] = [
    "reductions2d",
    "tv2d_until",
    "heat2d_periodic",
    "star3d_r2_periodic",
    "box3d_constant",
    "fdtd2d",
    "acoustic2d",
    "strided",
    "half_heat2d",
    "functions2d",
    "partial_writes2d",
];

#[test]
fn opencl_ranks_give_the_single_process_answer() {
    if !require_opencl("distributed runs on opencl") {
        return;
    }
    let backend = OpenClBackend::default();
    let mut overlapped = PlanRequest::exact();
    overlapped.strategy = Some(Strategy::Overlapped);
    overlapped.time_tile = Some(3);
    let mut failures = Failures::new();
    for name in PROGRAMS {
        let case = case(name);
        let dims = case.bind(0).extents.len();
        let mut ranks = vec![1; dims];
        ranks[0] = 3;
        if dims >= 3 {
            (ranks[0], ranks[1]) = (2, 2);
        }
        let bound = case.bind(0);
        let extents = minimum_extents(&bound, &ranks, 3);
        let bound = case.bind_extents(&extents, &[]);
        let subject = Subject::new(format!("{name} {extents:?}"), bound, 11, case.steps.max(7));
        for (request, overlap) in [(PlanRequest::exact(), false), (overlapped.clone(), true)] {
            failures.record(check(&subject, &backend, &ranks, &request, overlap));
        }
    }
    failures.assert_none("opencl distributed");
}

/// One layout and plan request, three steps between exchanges (overlapped with the passes when
/// `overlap`).
fn check(
    subject: &Subject,
    backend: &OpenClBackend,
    ranks: &[usize],
    request: &PlanRequest,
    overlap: bool,
) -> Result<(), String> {
    let label = format!(
        "{} ranks {ranks:?} {:?} overlap {overlap}",
        subject.label, request.strategy
    );
    let decomposition =
        Decomposition::new(&subject.bound.extents, ranks).map_err(|e| format!("{label}: {e}"))?;
    let mut distribution =
        Distribution::new(&subject.bound, decomposition, 3).map_err(|e| format!("{label}: {e}"))?;
    if overlap {
        distribution =
            (distribution.with_overlap(&subject.bound)).map_err(|e| format!("{label}: {e}"))?;
    }
    let mut executable =
        InProcessExecutable::prepare(distribution, &subject.bound, backend, request)
            .map_err(|e| format!("{label}: {e}"))?;
    subject.check_executable(&mut executable, &label)
}
