//! Border modes along every axis: clamp, periodic, mirror and constant, in 1D, 2D and 3D.

mod common;

use common::*;
use tessera_ir::builder::ProgramBuilder;
use tessera_ir::{Border, Constant, ScalarType};

/// 1D grid of 5 with `u = [1, 2, 3, 4, 5]`; returns (`u[-2]`, `u[2]`) everywhere.
fn shifted_1d(border: Border) -> (Vec<f64>, Vec<f64>) {
    let mut b = ProgramBuilder::new("shift");
    b.grid(extents(&[5]));
    let u = b.field("u", ScalarType::F64);
    b.set_border(u, border);
    let left = b.field("left", ScalarType::F64);
    let right = b.field("right", ScalarType::F64);
    let mut s = b.stage("s");
    let l = b.read(u, &[-2]);
    let r = b.read(u, &[2]);
    s.assign(left, l).assign(right, r);
    b.finish_stage(s);
    let p = bound(b.finish());
    let mut f = init(&p);
    set(&mut f, u, &[1.0, 2.0, 3.0, 4.0, 5.0]);
    poison(&mut f, left);
    poison(&mut f, right);
    run(&p, &mut f, 1);
    (values(&f, left), values(&f, right))
}

#[test]
fn clamp_1d_repeats_the_edge() {
    assert_eq!(
        shifted_1d(Border::Clamp),
        (vec![1.0, 1.0, 1.0, 2.0, 3.0], vec![3.0, 4.0, 5.0, 5.0, 5.0])
    );
}

#[test]
fn periodic_1d_wraps_around() {
    assert_eq!(
        shifted_1d(Border::Periodic),
        (vec![4.0, 5.0, 1.0, 2.0, 3.0], vec![3.0, 4.0, 5.0, 1.0, 2.0])
    );
}

#[test]
fn mirror_1d_reflects_without_repeating_the_edge() {
    assert_eq!(
        shifted_1d(Border::Mirror),
        (vec![3.0, 2.0, 1.0, 2.0, 3.0], vec![3.0, 4.0, 5.0, 4.0, 3.0])
    );
}

#[test]
fn constant_1d_gives_the_value_outside() {
    let c = Border::Constant(Constant::Float(-7.5));
    assert_eq!(
        shifted_1d(c),
        (
            vec![-7.5, -7.5, 1.0, 2.0, 3.0],
            vec![3.0, 4.0, 5.0, -7.5, -7.5]
        )
    );
}

/// An independent statement of each mode along one axis; `None` = the constant.
fn expected_index(border: Border, i: i64, n: i64) -> Option<i64> {
    if (0..n).contains(&i) {
        return Some(i);
    }
    match border {
        Border::Clamp => Some(if i < 0 { 0 } else { n - 1 }),
        Border::Periodic => Some(if i < 0 { i + n } else { i - n }),
        Border::Mirror => Some(if i < 0 { -i } else { 2 * (n - 1) - i }),
        Border::Constant(_) => None,
    }
}

/// Reads `u[offset]` everywhere on a grid of `shape` with `u = point's linear index`, and
/// compares with the expected landing per axis.
fn check_nd(shape: &[usize], offset: &[i32], border: Border) {
    let mut b = ProgramBuilder::new("shift");
    b.grid(extents(
        &shape.iter().map(|&s| s as i64).collect::<Vec<_>>(),
    ));
    let u = b.field("u", ScalarType::I32);
    b.set_border(u, border);
    let out = b.field("out", ScalarType::I32);
    let mut s = b.stage("s");
    let r = b.read(u, offset);
    s.assign(out, r);
    b.finish_stage(s);
    let p = bound(b.finish());
    let mut f = init(&p);
    let n: usize = shape.iter().product();
    set(&mut f, u, &(0..n).map(|i| i as f64).collect::<Vec<_>>());
    poison(&mut f, out);
    run(&p, &mut f, 1);
    let got = values(&f, out);
    let mut outside_seen = false;
    for (linear, value) in got.iter().enumerate() {
        let mut rest = linear;
        let mut point = vec![0usize; shape.len()];
        for axis in (0..shape.len()).rev() {
            point[axis] = rest % shape[axis];
            rest /= shape[axis];
        }
        let landed: Option<Vec<usize>> = (0..shape.len())
            .map(|a| {
                expected_index(
                    border,
                    point[a] as i64 + i64::from(offset[a]),
                    shape[a] as i64,
                )
                .map(|i| i as usize)
            })
            .collect();
        let want = match landed {
            Some(q) => at(shape, &q) as f64,
            None => {
                outside_seen = true;
                -3.0
            }
        };
        assert_eq!(*value, want, "{border:?} at {point:?}");
    }
    assert_eq!(outside_seen, matches!(border, Border::Constant(_)));
}

const MODES: [Border; 4] = [
    Border::Clamp,
    Border::Periodic,
    Border::Mirror,
    Border::Constant(Constant::Int(-3)),
];

#[test]
fn every_mode_2d_with_a_diagonal_offset() {
    for mode in MODES {
        check_nd(&[3, 4], &[-1, 2], mode);
        check_nd(&[4, 3], &[2, -2], mode);
    }
}

#[test]
fn every_mode_3d_along_each_axis() {
    for mode in MODES {
        check_nd(&[3, 4, 5], &[1, -2, 3], mode);
        check_nd(&[5, 3, 4], &[-3, 1, 0], mode);
    }
}

#[test]
fn constant_2d_applies_when_any_axis_is_outside() {
    let mut b = ProgramBuilder::new("corner");
    b.grid(extents(&[2, 2]));
    let u = b.field("u", ScalarType::F32);
    b.set_border(u, Border::Constant(Constant::Float(9.0)));
    let out = b.field("out", ScalarType::F32);
    let mut s = b.stage("s");
    let r = b.read(u, &[0, 1]);
    s.assign(out, r);
    b.finish_stage(s);
    let p = bound(b.finish());
    let mut f = init(&p);
    set(&mut f, u, &[1.0, 2.0, 3.0, 4.0]);
    run(&p, &mut f, 1);
    assert_eq!(values(&f, out), vec![2.0, 9.0, 4.0, 9.0]);
}

#[test]
fn a_stage_border_overrides_the_fields_own() {
    let mut b = ProgramBuilder::new("override");
    b.grid(extents(&[4]));
    let u = b.field("u", ScalarType::F64);
    b.set_border(u, Border::Clamp);
    let (a, c) = (b.field("a", ScalarType::F64), b.field("c", ScalarType::F64));
    let mut s1 = b.stage("own");
    let r = b.read(u, &[1]);
    s1.assign(a, r);
    b.finish_stage(s1);
    let mut s2 = b.stage("overridden");
    s2.border(u, Border::Periodic);
    let r = b.read(u, &[1]);
    s2.assign(c, r);
    b.finish_stage(s2);
    let p = bound(b.finish());
    let mut f = init(&p);
    set(&mut f, u, &[1.0, 2.0, 3.0, 4.0]);
    run(&p, &mut f, 1);
    assert_eq!(values(&f, a), vec![2.0, 3.0, 4.0, 4.0]);
    assert_eq!(values(&f, c), vec![2.0, 3.0, 4.0, 1.0]);
}

#[test]
fn mirror_on_a_grid_of_exactly_two_r_plus_one() {
    // Radius 2 on 5 points: every reflection lands inside.
    let (l, r) = shifted_1d(Border::Mirror);
    assert!(l.iter().chain(&r).all(|v| (1.0..=5.0).contains(v)));
}
