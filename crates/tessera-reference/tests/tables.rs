//! Input tables: `w[t + k]` reads the table's element at the step plus a constant, and a table
//! too short for the run is refused before the first step.

mod common;

use common::*;
use tessera_ir::builder::ProgramBuilder;
use tessera_ir::{BinaryOp, ScalarType, SizeExpr};
use tessera_plan::PlanRequest;
use tessera_reference::ReferenceBackend;
use tessera_runtime::{Backend, Buffer, FieldSet};

/// `u = u + w[t + offset]` on a 1D grid of 3 points, with `w` an f64 table.
fn accumulate(
    offset: i64,
) -> (
    tessera_analysis::BoundProgram,
    tessera_ir::Id<tessera_ir::Field>,
) {
    let mut b = ProgramBuilder::new("acc");
    b.grid(vec![SizeExpr::Const(3)]);
    let u = b.field("u", ScalarType::F64);
    let w = b.table("w", ScalarType::F64);
    let mut s = b.stage("s");
    let here = b.read(u, &[0]);
    let value = b.table_read(w, offset);
    let sum = bin(&mut b, BinaryOp::Add, here, value);
    s.assign(u, sum);
    b.finish_stage(s);
    (bound(b.finish()), u)
}

fn with_table(bound: &tessera_analysis::BoundProgram, table: Vec<f64>) -> FieldSet {
    let mut fields = init(bound);
    fields.tables[0] = Buffer::from(table);
    fields
}

#[test]
fn each_step_adds_the_tables_element_at_the_step_plus_its_offset() {
    let (p, u) = accumulate(1);
    let mut f = with_table(&p, vec![1.0, 10.0, 100.0, 1000.0, 10000.0]);
    run_from(&p, &mut f, 1, 3);
    // Steps 1, 2, 3 read w[2], w[3], w[4].
    assert_eq!(values(&f, u), vec![11100.0; 3]);
}

#[test]
fn a_table_too_short_for_the_steps_is_refused_naming_its_length_and_the_need() {
    let (p, _) = accumulate(2);
    let mut f = with_table(&p, vec![0.0; 5]);
    let mut exe = ReferenceBackend
        .plan_and_prepare(&p, &PlanRequest::default())
        .unwrap();
    let error = exe.run(&mut f, 0, 4, &mut ()).unwrap_err().to_string();
    assert!(
        error.contains("`w` has 5 values") && error.contains("at least 6 values"),
        "{error}"
    );
    // The same table serves three steps.
    exe.run(&mut f, 0, 3, &mut ()).unwrap();
}

#[test]
fn a_negative_offset_before_the_tables_start_is_refused() {
    let (p, _) = accumulate(-2);
    let mut f = with_table(&p, vec![0.0; 10]);
    let mut exe = ReferenceBackend
        .plan_and_prepare(&p, &PlanRequest::default())
        .unwrap();
    let error = exe.run(&mut f, 1, 2, &mut ()).unwrap_err().to_string();
    assert!(error.contains("index -1"), "{error}");
    exe.run(&mut f, 2, 2, &mut ()).unwrap();
}

#[test]
fn a_table_of_another_type_is_refused() {
    let (p, _) = accumulate(0);
    let mut f = init(&p);
    f.tables[0] = Buffer::from(vec![0.0f32; 10]);
    let mut exe = ReferenceBackend
        .plan_and_prepare(&p, &PlanRequest::default())
        .unwrap();
    let error = exe.run(&mut f, 0, 2, &mut ()).unwrap_err().to_string();
    assert!(
        error.contains("holds f64 values but was given f32"),
        "{error}"
    );
}
