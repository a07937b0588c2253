//! Generated C for the CPU backend: snapshots per strategy, determinism, index width.

use std::sync::Arc;

use tessera_analysis::{BoundProgram, bind, check};
use tessera_codegen::cpu::emit_c;
use tessera_ir::builder::ProgramBuilder;
use tessera_ir::{BinaryOp, Border, Constant, Range, Region, ScalarType, SizeExpr, SizeOp, Span};
use tessera_plan::cpu::{CpuMachine, CpuRequest, plan_cpu};

/// A 2D five-point Jacobi on the interior plus a clamped smoothing stage and a reduction.
fn program(extents: &[i64]) -> BoundProgram {
    let mut b = ProgramBuilder::new("jacobi");
    let params: Vec<_> = (0..extents.len())
        .map(|a| b.param(format!("N{a}"), ScalarType::I64, Constant::Int(extents[a])))
        .collect();
    b.grid(params.iter().map(|p| SizeExpr::Param(*p)).collect());
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
    let values: Vec<(String, Constant)> = extents
        .iter()
        .enumerate()
        .map(|(a, &e)| (format!("N{a}"), Constant::Int(e)))
        .collect();
    bind(Arc::new(check(&b.finish()).expect("checks")), &values).expect("binds")
}

fn machine() -> CpuMachine {
    CpuMachine {
        threads: 2,
        l2_bytes: 1 << 20,
        l3_bytes: 32 << 20,
    }
}

fn emit(
    bound: &BoundProgram,
    strategy: &str,
    tile: Option<Vec<usize>>,
    time_tile: Option<usize>,
) -> String {
    let request = CpuRequest {
        strategy: Some(strategy.into()),
        tile,
        time_tile,
        threads: Some(2),
        exact: true,
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
    let mut b = ProgramBuilder::new("jacobi");
    let params: Vec<_> = (0..extents.len())
        .map(|a| b.param(format!("N{a}"), ScalarType::I64, Constant::Int(extents[a])))
        .collect();
    b.grid(params.iter().map(|p| SizeExpr::Param(*p)).collect());
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
    let values: Vec<(String, Constant)> = extents
        .iter()
        .enumerate()
        .map(|(a, &e)| (format!("N{a}"), Constant::Int(e)))
        .collect();
    bind(Arc::new(check(&b.finish()).expect("checks")), &values).expect("binds")
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

#[test]
fn wavefront_refuses_multi_stage_programs() {
    let request = CpuRequest {
        strategy: Some("wavefront".into()),
        ..CpuRequest::default()
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
