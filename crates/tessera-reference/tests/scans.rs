//! Scans: prefix combinations along one axis, line by line from the region's low end.

mod common;

use common::*;
use tessera_ir::builder::ProgramBuilder;
use tessera_ir::{ReduceOp, ScalarType, Scan};

fn scan(op: ReduceOp, axis: usize, exclusive: bool) -> Scan {
    Scan {
        op,
        axis,
        exclusive,
    }
}

#[test]
fn an_inclusive_sum_along_x_is_each_rows_cumulative_sum() {
    let mut b = ProgramBuilder::new("rows");
    b.grid(extents(&[2, 4]));
    let u = b.field("u", ScalarType::F64);
    let c = b.field("c", ScalarType::F64);
    let mut s = b.stage("along_x");
    let here = b.read(u, &[0, 0]);
    s.scan(c, scan(ReduceOp::Sum, 1, false), here);
    b.finish_stage(s);
    let p = bound(b.finish());
    let mut f = init(&p);
    set(&mut f, u, &[1.0, 2.0, 3.0, 4.0, -1.0, 0.5, 0.25, 8.0]);
    run(&p, &mut f, 1);
    assert_eq!(
        values(&f, c),
        [1.0, 3.0, 6.0, 10.0, -1.0, -0.5, -0.25, 7.75]
    );
}

#[test]
fn an_exclusive_max_along_y_covers_the_region_and_starts_from_the_identity() {
    let mut b = ProgramBuilder::new("columns");
    b.grid(extents(&[4, 3]));
    let u = b.field("u", ScalarType::F64);
    let c = b.field("c", ScalarType::F64);
    let mut s = b.stage("down");
    s.over(region(&[(1, 4, 1), (0, 3, 2)]));
    let above = b.read(u, &[-1, 0]);
    s.scan(c, scan(ReduceOp::Max, 0, true), above);
    b.finish_stage(s);
    let p = bound(b.finish());
    let mut f = init(&p);
    set(
        &mut f,
        u,
        &[5.0, 1.0, 2.0, 3.0, 9.0, 7.0, 4.0, 0.0, 8.0, 6.0, 6.0, 6.0],
    );
    set(&mut f, c, &[-9.0; 12]);
    run(&p, &mut f, 1);
    let inf = f64::NEG_INFINITY;
    // Column 0 reads u[0..3][0] = 5, 3, 4; column 2 reads 2, 7, 8; column 1 is outside.
    assert_eq!(
        values(&f, c),
        [
            -9.0, -9.0, -9.0, inf, -9.0, inf, 5.0, -9.0, 2.0, 5.0, -9.0, 7.0
        ]
    );
}

#[test]
fn a_scan_of_its_own_field_reads_the_values_before_the_stage() {
    let mut b = ProgramBuilder::new("in_place");
    b.grid(extents(&[5]));
    let u = b.field("u", ScalarType::I32);
    let mut s = b.stage("cumulate");
    let here = b.read(u, &[0]);
    s.scan(u, scan(ReduceOp::Sum, 0, false), here);
    b.finish_stage(s);
    let p = bound(b.finish());
    let mut f = init(&p);
    set(&mut f, u, &[1.0, 2.0, 3.0, 4.0, 5.0]);
    run(&p, &mut f, 2);
    // [1, 3, 6, 10, 15] after one step, its cumulative sum after two.
    assert_eq!(values(&f, u), [1.0, 4.0, 10.0, 20.0, 35.0]);
}

#[test]
fn a_float_sum_starts_from_negative_zero_so_one_value_is_kept_bit_for_bit() {
    let mut b = ProgramBuilder::new("signs");
    b.grid(extents(&[3, 1]));
    let u = b.field("u", ScalarType::F32);
    let c = b.field("c", ScalarType::F32);
    let mut s = b.stage("along_x");
    let here = b.read(u, &[0, 0]);
    s.scan(c, scan(ReduceOp::Sum, 1, false), here);
    b.finish_stage(s);
    let p = bound(b.finish());
    let mut f = init(&p);
    set(&mut f, u, &[-0.0, 0.0, -2.5]);
    run(&p, &mut f, 1);
    let signs: Vec<bool> = values(&f, c).iter().map(|v| v.is_sign_negative()).collect();
    assert_eq!(signs, [true, false, true]);
}
