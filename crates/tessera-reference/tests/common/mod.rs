//! Helpers shared by the reference backend's tests: build, check, bind, run, read fields.
#![allow(dead_code)]

use std::sync::Arc;

use tessera_analysis::{BoundProgram, bind, check};
use tessera_ir::builder::ProgramBuilder;
use tessera_ir::{BinaryOp, Constant, ExprId, Field, Id, Program, Range, Region, SizeExpr, Span};
use tessera_plan::PlanRequest;
use tessera_reference::{ReferenceBackend, initial_fields};
use tessera_runtime::{Backend, Buffer, FieldSet, RunReport};

/// Checks and binds `program` with parameter overrides; panics with the diagnostics.
pub fn bound_with(program: Program, values: &[(&str, Constant)]) -> BoundProgram {
    let checked = check(&program).unwrap_or_else(|d| panic!("check failed: {d:#?}"));
    let values: Vec<(String, Constant)> = values.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    bind(Arc::new(checked), &values).unwrap_or_else(|d| panic!("bind failed: {d:#?}"))
}

/// Checks and binds `program` with default parameters.
pub fn bound(program: Program) -> BoundProgram {
    bound_with(program, &[])
}

/// Runs `steps` steps from `first_step` with the reference backend.
pub fn run_from(
    bound: &BoundProgram,
    fields: &mut FieldSet,
    first_step: u64,
    steps: u64,
) -> RunReport {
    let mut exe = ReferenceBackend
        .plan_and_prepare(bound, &PlanRequest::default())
        .expect("prepare");
    exe.run(fields, first_step, steps, &mut ()).expect("run")
}

/// Runs `steps` steps from step 0.
pub fn run(bound: &BoundProgram, fields: &mut FieldSet, steps: u64) -> RunReport {
    run_from(bound, fields, 0, steps)
}

/// Fields with declared initial values.
pub fn init(bound: &BoundProgram) -> FieldSet {
    initial_fields(bound, &[]).expect("fields fit in memory")
}

/// A field's values as f64.
pub fn values(fields: &FieldSet, field: Id<Field>) -> Vec<f64> {
    let b = fields.buffer(field.index());
    (0..b.len()).map(|i| b.get_f64(i)).collect()
}

/// Sets a field from f64 values converted to its type (Rust `as`).
pub fn set(fields: &mut FieldSet, field: Id<Field>, values: &[f64]) {
    let buffer = Buffer::from_f64(fields.buffer(field.index()).ty(), values);
    assert_eq!(buffer.len(), fields.cell_count());
    fields.buffers[field.index()] = buffer;
}

/// Fills a field with its poison value.
pub fn poison(fields: &mut FieldSet, field: Id<Field>) {
    let b = fields.buffer(field.index());
    fields.buffers[field.index()] = Buffer::poisoned(b.ty(), b.len());
}

/// Literal extents.
pub fn extents(sizes: &[i64]) -> Vec<SizeExpr> {
    sizes.iter().map(|&s| SizeExpr::Const(s)).collect()
}

/// A region of literal `lo..hi by stride` spans.
pub fn region(spans: &[(i64, i64, u32)]) -> Region {
    Region {
        ranges: spans
            .iter()
            .map(|&(lo, hi, stride)| Range::Span {
                lo: Some(SizeExpr::Const(lo)),
                hi: Some(SizeExpr::Const(hi)),
                stride,
            })
            .collect(),
        span: Span::NONE,
    }
}

/// `a op b`.
pub fn bin(b: &mut ProgramBuilder, op: BinaryOp, x: ExprId, y: ExprId) -> ExprId {
    b.binary(op, x, y)
}

/// An integer literal.
pub fn int(b: &mut ProgramBuilder, v: i64) -> ExprId {
    b.lit(Constant::Int(v))
}

/// A float literal.
pub fn float(b: &mut ProgramBuilder, v: f64) -> ExprId {
    b.lit(Constant::Float(v))
}

/// Deterministic pseudo-random values in [-1, 1), seeded (the one generator,
/// `tessera_runtime::random`).
pub fn random(seed: u64, n: usize) -> Vec<f64> {
    let mut rng = tessera_runtime::random::SplitMix64::new(seed);
    (0..n).map(|_| 2.0 * rng.next_f64() - 1.0).collect()
}

/// Linear index of `point` in row-major `shape`.
pub fn at(shape: &[usize], point: &[usize]) -> usize {
    point.iter().zip(shape).fold(0, |acc, (&p, &e)| acc * e + p)
}
