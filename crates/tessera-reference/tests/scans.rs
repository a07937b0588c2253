//! Scans: prefix combinations along one axis, line by line from the region's low end.

mod common;

use common::*;
use tessera_analysis::BoundProgram;
use tessera_ir::builder::ProgramBuilder;
use tessera_ir::{Field, Id, ReduceOp, Region, ScalarType, Scan};

fn scan(op: ReduceOp, axis: usize, exclusive: bool) -> Scan {
    Scan {
        op,
        axis,
        exclusive,
    }
}

/// A program on a grid of `extents` with a field `u` of `ty` and one stage (over `region`)
/// scanning `u` read at `offset` into a field `c` of `ty` (`u` itself when `in_place`).
fn scanned(
    extents_: &[i64],
    ty: ScalarType,
    how: Scan,
    offset: &[i32],
    region_: Option<Region>,
    in_place: bool,
) -> (BoundProgram, Id<Field>, Id<Field>) {
    let mut b = ProgramBuilder::new("scans");
    b.grid(extents(extents_));
    let u = b.field("u", ty);
    let c = if in_place { u } else { b.field("c", ty) };
    let mut s = b.stage("scan");
    if let Some(region_) = region_ {
        s.over(region_);
    }
    let read = b.read(u, offset);
    s.scan(c, how, read);
    b.finish_stage(s);
    (bound(b.finish()), u, c)
}

#[test]
fn an_inclusive_sum_along_x_is_each_rows_cumulative_sum() {
    let sum = scan(ReduceOp::Sum, 1, false);
    let (p, u, c) = scanned(&[2, 4], ScalarType::F64, sum, &[0, 0], None, false);
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
    let max = scan(ReduceOp::Max, 0, true);
    let over = region(&[(1, 4, 1), (0, 3, 2)]);
    let (p, u, c) = scanned(&[4, 3], ScalarType::F64, max, &[-1, 0], Some(over), false);
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
    let sum = scan(ReduceOp::Sum, 0, false);
    let (p, u, _) = scanned(&[5], ScalarType::I32, sum, &[0], None, true);
    let mut f = init(&p);
    set(&mut f, u, &[1.0, 2.0, 3.0, 4.0, 5.0]);
    run(&p, &mut f, 2);
    // [1, 3, 6, 10, 15] after one step, its cumulative sum after two.
    assert_eq!(values(&f, u), [1.0, 4.0, 10.0, 20.0, 35.0]);
}

#[test]
fn a_float_sum_starts_from_negative_zero_so_one_value_is_kept_bit_for_bit() {
    let sum = scan(ReduceOp::Sum, 1, false);
    let (p, u, c) = scanned(&[3, 1], ScalarType::F32, sum, &[0, 0], None, false);
    let mut f = init(&p);
    set(&mut f, u, &[-0.0, 0.0, -2.5]);
    run(&p, &mut f, 1);
    let signs: Vec<bool> = values(&f, c).iter().map(|v| v.is_sign_negative()).collect();
    assert_eq!(signs, [true, false, true]);
}
