//! What the CPU backend's tests share: the backend with fast test compilation, and the plan
//! requests of the differential matrix. Programs, inputs and the comparison with the reference
//! come from `tessera_testkit`.
#![allow(dead_code)]

use tessera_cpu::CpuBackend;
use tessera_plan::{Arithmetic, PlanRequest, Strategy, TargetIsa};

/// The instruction set the tests plan for: `TESSERA_TARGET_ISA` when set (CI runs the matrix
/// for every target the machine executes), else the host's best.
pub fn test_isa() -> TargetIsa {
    match std::env::var("TESSERA_TARGET_ISA") {
        Ok(name) if name != "native" => TargetIsa::from_name(&name)
            .unwrap_or_else(|| panic!("unknown TESSERA_TARGET_ISA `{name}`")),
        _ => tessera_cpu::machine().isa,
    }
}

/// An exact-mode request with everything else chosen by the planner, for [`test_isa`].
pub fn exact_auto() -> PlanRequest {
    PlanRequest {
        isa: Some(test_isa()),
        ..PlanRequest::exact()
    }
}

/// The CPU backend with fast test compilation (`-O1`; exactness does not depend on it).
pub fn backend() -> CpuBackend {
    let mut backend = CpuBackend::default();
    backend.compile.optimization_flags = Some(vec!["-O1".into(), "-march=native".into()]);
    backend
}

/// The CPU backend compiling as in production (`-O3`), for non-exact runs.
pub fn production_backend() -> CpuBackend {
    let mut backend = CpuBackend::default();
    backend.compile.optimization_flags = Some(vec!["-O3".into(), "-march=native".into()]);
    backend
}

/// An exact-mode request for one strategy configuration.
pub fn exact(
    strategy: &str,
    tile: Option<Vec<usize>>,
    time_tile: Option<u32>,
    threads: usize,
) -> PlanRequest {
    PlanRequest {
        arithmetic: Arithmetic::Exact,
        strategy: Some(Strategy::from_name(strategy).expect("a strategy name")),
        tile,
        time_tile,
        threads: Some(threads),
        isa: Some(test_isa()),
        ..PlanRequest::default()
    }
}

/// `request` in non-exact (relaxed) arithmetic.
pub fn relaxed(request: PlanRequest) -> PlanRequest {
    PlanRequest {
        arithmetic: Arithmetic::Relaxed,
        ..request
    }
}

/// A small tile per dimension (so that grids hold several partial tiles).
pub fn small_tile(dims: usize) -> Vec<usize> {
    match dims {
        1 => vec![5],
        2 => vec![4, 7],
        3 => vec![3, 4, 5],
        _ => vec![2; dims],
    }
}
