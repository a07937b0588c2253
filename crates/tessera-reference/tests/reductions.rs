//! Reductions (after-step and in-stage, `every`, regions, the fixed order) and the stop
//! condition.

mod common;

use common::*;
use tessera_ir::builder::ProgramBuilder;
use tessera_ir::{BinaryOp, Border, Constant, ReduceOp, ScalarType};
use tessera_plan::PlanRequest;
use tessera_runtime::{Backend, Flow, Observer, ReductionRecord};

/// 1D grid of 5, `u += 1` each step, with the given reductions added by `extra`.
fn counting(
    extra: impl FnOnce(&mut ProgramBuilder, tessera_ir::Id<tessera_ir::Field>),
) -> (
    tessera_analysis::BoundProgram,
    tessera_ir::Id<tessera_ir::Field>,
) {
    let mut b = ProgramBuilder::new("count");
    b.grid(extents(&[5]));
    let u = b.field("u", ScalarType::F64);
    let mut s = b.stage("inc");
    let here = b.read(u, &[0]);
    let one = float(&mut b, 1.0);
    let e = b.binary(BinaryOp::Add, here, one);
    s.assign(u, e);
    b.finish_stage(s);
    extra(&mut b, u);
    (bound(b.finish()), u)
}

fn record(step: u64, name: &str, value: f64) -> ReductionRecord {
    ReductionRecord {
        step,
        name: name.to_string(),
        value,
    }
}

#[test]
fn after_step_reductions_see_the_steps_result_every_k_steps() {
    let (p, u) = counting(|b, u| {
        let r = b.read(u, &[0]);
        b.reduce_after_step("total", ReduceOp::Sum, r, None, 1);
        let r = b.read(u, &[0]);
        b.reduce_after_step("top", ReduceOp::Max, r, None, 2);
        let r = b.read(u, &[0]);
        b.reduce_after_step("bottom", ReduceOp::Min, r, Some(region(&[(2, 4, 1)])), 3);
    });
    let mut f = init(&p);
    set(&mut f, u, &[0.0, 1.0, 2.0, 3.0, 4.0]);
    let report = run(&p, &mut f, 3);
    assert_eq!(
        report.reductions,
        vec![
            record(0, "total", 15.0),
            record(1, "total", 20.0),
            record(1, "top", 6.0),
            record(2, "total", 25.0),
            record(2, "bottom", 5.0),
        ]
    );
    assert_eq!(report.steps, 3);
    assert!(!report.stopped_early);
}

#[test]
fn in_stage_reductions_use_pre_stage_values_and_locals() {
    let mut b = ProgramBuilder::new("gosa");
    b.grid(extents(&[2, 3]));
    let u = b.field("u", ScalarType::F32);
    let mut s = b.stage("relax");
    let here = b.read(u, &[0, 0]);
    let two = float(&mut b, 2.0);
    let doubled = b.binary(BinaryOp::Mul, here, two);
    let d = b.bind(&mut s, "d", doubled);
    s.assign(u, d);
    let here = b.read(u, &[0, 0]);
    let dd = b.binary(BinaryOp::Mul, d, here);
    s.reduce("gosa", ReduceOp::Sum, dd, 2);
    b.finish_stage(s);
    let p = bound(b.finish());
    let mut f = init(&p);
    set(&mut f, u, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let report = run(&p, &mut f, 4);
    // step 1: u = 2*[1..6] before the stage; sum(2u*u) = 8 * 91
    // step 3: u = 8*[1..6] before the stage; sum(2u*u) = 128 * 91
    assert_eq!(
        report.reductions,
        vec![
            record(1, "gosa", 8.0 * 91.0),
            record(3, "gosa", 128.0 * 91.0)
        ]
    );
    assert_eq!(values(&f, u), vec![16.0, 32.0, 48.0, 64.0, 80.0, 96.0]);
}

#[test]
fn sums_follow_the_fixed_row_order() {
    let mut b = ProgramBuilder::new("order");
    b.grid(extents(&[7, 13]));
    let u = b.field("u", ScalarType::F32);
    let r = b.read(u, &[0, 0]);
    b.reduce_after_step("s", ReduceOp::Sum, r, None, 1);
    let p = bound(b.finish());
    let mut f = init(&p);
    let data: Vec<f64> = random(3, 91).iter().map(|v| v * 1e6).collect();
    set(&mut f, u, &data);
    let report = run(&p, &mut f, 1);
    let rows: Vec<f64> = (0..7)
        .map(|y| (0..13).fold(0.0, |acc, x| acc + f64::from(data[y * 13 + x] as f32)))
        .collect();
    let want = rows.iter().fold(0.0, |acc, r| acc + r);
    assert_eq!(report.reductions[0].value.to_bits(), want.to_bits());
}

#[test]
fn until_stops_once_the_condition_holds() {
    let (p, u) = counting(|b, u| {
        let r = b.read(u, &[0]);
        let total = b.reduce_after_step("total", ReduceOp::Sum, r, None, 1);
        let v = b.reduction_value(total);
        let limit = b.lit(Constant::Float(30.0));
        let c = b.binary(BinaryOp::Gt, v, limit);
        b.until(c);
    });
    let mut f = init(&p);
    let report = run(&p, &mut f, 100);
    // sums after step t: 5 (t + 1); first above 30 after step 6.
    assert_eq!(report.steps, 7);
    assert!(report.stopped_early);
    assert_eq!(values(&f, u), vec![7.0; 5]);
}

#[test]
fn until_waits_until_every_reduction_it_names_has_a_value() {
    let (p, _) = counting(|b, u| {
        let r = b.read(u, &[0]);
        let a = b.reduce_after_step("often", ReduceOp::Max, r, None, 1);
        let r = b.read(u, &[0]);
        let c = b.reduce_after_step("rarely", ReduceOp::Max, r, None, 4);
        let (va, vc) = (b.reduction_value(a), b.reduction_value(c));
        let zero = b.lit(Constant::Float(0.0));
        let ca = b.binary(BinaryOp::Gt, va, zero);
        let cc = b.binary(BinaryOp::Gt, vc, zero);
        let both = b.binary(BinaryOp::And, ca, cc);
        b.until(both);
    });
    let mut f = init(&p);
    let report = run(&p, &mut f, 100);
    assert_eq!(report.steps, 4);
    assert!(report.stopped_early);
}

#[test]
fn first_step_shifts_which_steps_compute_reductions() {
    let (p, _) = counting(|b, u| {
        let r = b.read(u, &[0]);
        b.reduce_after_step("total", ReduceOp::Sum, r, None, 3);
    });
    let mut f = init(&p);
    let report = run_from(&p, &mut f, 4, 4);
    // Steps 4..8: due when (t + 1) % 3 == 0, i.e. t = 5; u = 2 everywhere after it.
    assert_eq!(report.reductions, vec![record(5, "total", 10.0)]);
}

#[test]
fn a_reduction_over_a_single_point_reads_through_borders() {
    // Reductions may read with borders; a reduction region can be a single point.
    let mut b = ProgramBuilder::new("probe");
    b.grid(extents(&[3]));
    let k = b.field("k", ScalarType::I32);
    b.set_border(k, Border::Periodic);
    let r = b.read(k, &[1]);
    b.reduce_after_step("probe", ReduceOp::Sum, r, Some(region(&[(2, 3, 1)])), 1);
    let p = bound(b.finish());
    let mut f = init(&p);
    set(&mut f, k, &[5.0, 6.0, 7.0]);
    assert_eq!(run(&p, &mut f, 1).reductions, vec![record(0, "probe", 5.0)]);
}

/// Records progress; stops the run once `stop_after` steps are done.
struct Recorded {
    calls: Vec<(u64, u64)>,
    stop_after: u64,
}

impl Observer for Recorded {
    fn advance(&mut self, done: u64, total: u64) -> Flow {
        self.calls.push((done, total));
        if done >= self.stop_after {
            Flow::Stop
        } else {
            Flow::Continue
        }
    }
}

/// Runs the counting program for `steps` steps under a [`Recorded`] that stops after
/// `stop_after`; the report and the progress calls.
fn run_recorded(steps: u64, stop_after: u64) -> (tessera_runtime::RunReport, Vec<(u64, u64)>) {
    let (p, _) = counting(|_, _| {});
    let mut f = init(&p);
    let mut exe = tessera_reference::ReferenceBackend
        .plan_and_prepare(&p, &PlanRequest::default())
        .unwrap();
    let mut progress = Recorded {
        calls: Vec::new(),
        stop_after,
    };
    let report = exe.run(&mut f, 0, steps, &mut progress).unwrap();
    (report, progress.calls)
}

#[test]
fn progress_is_reported_after_every_step() {
    let (_, calls) = run_recorded(3, u64::MAX);
    assert_eq!(calls, vec![(1, 3), (2, 3), (3, 3)]);
}

#[test]
fn progress_can_stop_a_run_between_steps() {
    let (report, calls) = run_recorded(5, 2);
    assert_eq!((report.steps, report.stopped_early), (2, false));
    assert_eq!(calls, vec![(1, 5), (2, 5)]);
}
