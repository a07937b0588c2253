//! Whole runs: splitting a run into calls, 4D grids, options, threads.

mod common;

use common::*;
use tessera_ir::builder::ProgramBuilder;
use tessera_ir::{BinaryOp, Border, Constant, Field, Id, ReduceOp, ScalarType};
use tessera_plan::{Arithmetic, PlanRequest, Strategy};
use tessera_reference::{ReferenceBackend, run_exact};
use tessera_runtime::{Backend, BackendError};

/// 2D f32 heat diffusion on a 13x11 clamp grid with an in-stage and an after-step reduction.
fn heat() -> (tessera_analysis::BoundProgram, Id<Field>) {
    let mut b = ProgramBuilder::new("heat");
    b.grid(extents(&[13, 11]));
    let alpha = b.param("alpha", ScalarType::F32, Constant::Float(0.2));
    let u = b.field("u", ScalarType::F32);
    b.set_border(u, Border::Clamp);
    let mut s = b.stage("diffuse");
    let c = b.read(u, &[0, 0]);
    let mut lap = c;
    for off in [[-1, 0], [1, 0], [0, -1], [0, 1]] {
        let r = b.read(u, &off);
        lap = b.binary(BinaryOp::Add, lap, r);
    }
    let five = float(&mut b, 5.0);
    let c5 = b.binary(BinaryOp::Mul, five, c);
    let lap = b.binary(BinaryOp::Sub, lap, c5);
    let l = b.bind(&mut s, "lap", lap);
    let a = b.param_value(alpha);
    let step = b.binary(BinaryOp::Mul, a, l);
    let e = b.binary(BinaryOp::Add, c, step);
    s.assign(u, e);
    let sq = b.binary(BinaryOp::Mul, l, l);
    s.reduce("residual", ReduceOp::Sum, sq, 2);
    b.finish_stage(s);
    let r = b.read(u, &[0, 0]);
    b.reduce_after_step("peak", ReduceOp::Max, r, None, 3);
    (bound(b.finish()), u)
}

#[test]
fn t_steps_in_one_call_equal_t_calls_of_one_step() {
    let (p, u) = heat();
    let mut whole = init(&p);
    set(&mut whole, u, &random(11, 143));
    let mut split = whole.clone();
    let report = run(&p, &mut whole, 9);
    let mut exe = ReferenceBackend
        .plan_and_prepare(&p, &PlanRequest::default())
        .unwrap();
    let mut records = Vec::new();
    for t in 0..9 {
        records.extend(exe.run(&mut split, t, 1, &mut ()).unwrap().reductions);
    }
    assert_eq!(
        whole.buffers[u.index()].as_bytes(),
        split.buffers[u.index()].as_bytes()
    );
    assert_eq!(report.reductions.len(), 4 + 3);
    let bits = |r: &[tessera_runtime::ReductionRecord]| {
        r.iter()
            .map(|r| (r.step, r.name.clone(), r.value.to_bits()))
            .collect::<Vec<_>>()
    };
    assert_eq!(bits(&report.reductions), bits(&records));
}

#[test]
fn a_thread_count_does_not_change_results() {
    let (p, u) = heat();
    let mut a = init(&p);
    set(&mut a, u, &random(12, 143));
    let mut b = a.clone();
    let ra = run(&p, &mut a, 5);
    let request = PlanRequest {
        threads: Some(1),
        ..PlanRequest::default()
    };
    let rb = ReferenceBackend
        .plan_and_prepare(&p, &request)
        .unwrap()
        .run(&mut b, 0, 5, &mut ())
        .unwrap();
    assert_eq!(a, b);
    assert_eq!(ra.reductions, rb.reductions);
}

#[test]
fn a_4d_grid_runs_a_stencil_along_every_axis() {
    let mut b = ProgramBuilder::new("four");
    b.grid(extents(&[3, 4, 2, 5]));
    let u = b.field("u", ScalarType::I64);
    b.set_border(u, Border::Periodic);
    let out = b.field("out", ScalarType::I64);
    let mut s = b.stage("s");
    let mut e = b.read(u, &[1, 0, 0, 0]);
    for off in [[0, -1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 2]] {
        let r = b.read(u, &off);
        e = b.binary(BinaryOp::Add, e, r);
    }
    let w = b.coord(0);
    let e = b.binary(BinaryOp::Add, e, w);
    s.assign(out, e);
    b.finish_stage(s);
    let p = bound(b.finish());
    let shape = [3usize, 4, 2, 5];
    let mut f = init(&p);
    set(
        &mut f,
        u,
        &(0..120).map(|i| f64::from(i * i)).collect::<Vec<_>>(),
    );
    poison(&mut f, out);
    run(&p, &mut f, 1);
    let got = values(&f, out);
    let u_at = |p: [usize; 4]| (at(&shape, &p) as f64).powi(2);
    for w in 0..3 {
        for z in 0..4 {
            for y in 0..2 {
                for x in 0..5 {
                    let want = u_at([(w + 1) % 3, z, y, x])
                        + u_at([w, (z + 3) % 4, y, x])
                        + u_at([w, z, (y + 1) % 2, x])
                        + u_at([w, z, y, (x + 2) % 5])
                        + w as f64;
                    assert_eq!(got[at(&shape, &[w, z, y, x])], want);
                }
            }
        }
    }
}

#[test]
fn options_the_reference_backend_does_not_use_are_refused() {
    let (p, _) = heat();
    assert_eq!(ReferenceBackend.name(), "reference");
    for request in [
        PlanRequest {
            strategy: Some(Strategy::Overlapped),
            ..PlanRequest::default()
        },
        PlanRequest {
            tile: Some(vec![8, 8]),
            ..PlanRequest::default()
        },
        PlanRequest {
            time_tile: Some(2),
            ..PlanRequest::default()
        },
        PlanRequest {
            threads: Some(0),
            ..PlanRequest::default()
        },
        PlanRequest {
            device: tessera_plan::DeviceSelection::Named("0".into()),
            ..PlanRequest::default()
        },
    ] {
        assert!(
            matches!(
                ReferenceBackend.plan(&p, &request),
                Err(BackendError::InvalidOptions(_))
            ),
            "{request:?}"
        );
    }
    let exe = ReferenceBackend
        .plan_and_prepare(
            &p,
            &PlanRequest {
                arithmetic: Arithmetic::Exact,
                ..PlanRequest::default()
            },
        )
        .unwrap();
    assert_eq!(exe.describe(), "reference exact-order");
}

#[test]
fn fields_of_the_wrong_shape_or_type_are_refused() {
    let (p, u) = heat();
    let mut f = init(&p);
    f.buffers[u.index()] = tessera_runtime::Buffer::zeros(ScalarType::F64, 143);
    let err = run_exact(&p, &mut f, 0, 1).unwrap_err();
    assert!(err.to_string().contains("field `u`"), "{err}");
    let mut f = init(&p);
    f.shape = vec![11, 13];
    assert!(run_exact(&p, &mut f, 0, 1).is_err());
}

#[test]
fn zero_steps_do_nothing() {
    let (p, u) = heat();
    let mut f = init(&p);
    set(&mut f, u, &random(1, 143));
    let before = f.clone();
    let report = run_exact(&p, &mut f, 0, 0).unwrap();
    assert_eq!((report.steps, report.reductions.len()), (0, 0));
    assert_eq!(f, before);
}
