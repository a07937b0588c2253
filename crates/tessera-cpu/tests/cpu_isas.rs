//! Code for every x86 target compiles on any x86 machine (`-march=x86-64-v4`, `-v3`, `-v2`)
//! and, for the targets this machine runs, equals the reference bitwise in exact mode (the
//! whole matrix runs per target in CI: `TESSERA_TARGET_ISA=avx2|sse2`).

mod common;

use common::*;
use tessera_plan::{BackendPlan, PlanRequest, TargetIsa};
use tessera_testkit::{Failures, Subject, case};

/// The requests of every target: shifted lanes and column sums under each fused strategy.
fn requests(isa: TargetIsa, dims: usize) -> Vec<PlanRequest> {
    let with_isa = |request: PlanRequest| PlanRequest {
        isa: Some(isa),
        ..request
    };
    vec![
        with_isa(exact("parallel", None, None, 2)),
        with_isa(exact("overlapped", Some(small_tile(dims)), Some(3), 2)),
        with_isa(exact("wavefront", Some(small_tile(dims)), Some(2), 2)),
        with_isa(relaxed(exact("wavefront", None, Some(3), 2))),
    ]
}

#[test]
fn every_x86_target_compiles_and_the_ones_this_machine_runs_match_the_reference() {
    if std::env::consts::ARCH != "x86_64" {
        eprintln!("skipped: the x86 targets compile on x86-64 only");
        return;
    }
    let backend = backend();
    let host = tessera_cpu::machine().isa;
    let mut failures = Failures::new();
    let programs: [(&str, &[usize]); 3] = [
        ("star2d1r", &[17, 70]),
        ("box3d1r", &[5, 6, 45]),
        ("star1d16r", &[90]),
    ];
    for isa in [TargetIsa::Avx512, TargetIsa::Avx2, TargetIsa::Sse2] {
        for (name, extents) in programs {
            let bound = case(name).bind_extents(extents, &[]);
            let subject = Subject::new(format!("{name} {}", isa.name()), bound, 9, 5);
            for request in requests(isa, extents.len()) {
                let plan = match subject.plan(&backend, &request) {
                    Ok(plan) => plan,
                    Err(e) => {
                        failures.record(Err(e));
                        continue;
                    }
                };
                let BackendPlan::Cpu(cpu) = &plan.backend else {
                    panic!("a cpu plan")
                };
                assert_eq!(cpu.isa, isa);
                let result = if !isa.runs_on(host) {
                    compiles(&subject, cpu)
                } else if cpu.exact {
                    subject.check_exact(&backend, &plan)
                } else {
                    subject.check_close(&backend, &plan, 1e-5)
                };
                failures.record(result);
            }
        }
    }
    failures.assert_none("the x86 targets");
}

/// Whether `cpu`'s C compiles for its target (and loads: loading runs none of its code).
fn compiles(subject: &Subject, cpu: &tessera_plan::cpu::CpuPlan) -> Result<(), String> {
    let source = tessera_cpu::emit_c(&subject.bound, cpu);
    let mut options = backend().compile;
    options.exact = cpu.exact;
    options.extra_flags.push(cpu.isa.march().into());
    tessera_jit::compile(&source, &options)
        .map(|_| ())
        .map_err(|e| format!("{}: {}: {e}", subject.label, cpu.summary(None)))
}
