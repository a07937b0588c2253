//! Benchmark-like programs the differential matrix runs beyond the kernel generator's own
//! examples (`tessera_codegen::kernel::example_programs`): 1D/3D radius-2 stars, a 2D radius-2
//! box, a Rician-denoising-like update (division, `sqrt`, a read-only image), a TV-like
//! two-stage, multi-output step, and a reduction whose `until` stops the run early.

use tessera_codegen::kernel::{ExampleProgram, size_sets, weighted_sum};
use tessera_ir::builder::ProgramBuilder;
use tessera_ir::{BinaryOp, Border, Constant, Id, MathFn, Param, ReduceOp, ScalarType, SizeExpr};

fn grid(b: &mut ProgramBuilder, names: &[&str]) -> Vec<Id<Param>> {
    let params: Vec<Id<Param>> = names
        .iter()
        .map(|n| b.param(*n, ScalarType::I64, Constant::Int(16)))
        .collect();
    b.grid(params.iter().map(|p| SizeExpr::Param(*p)).collect());
    params
}

/// The star of radius `r` in `dims` dimensions (centre first).
fn star(dims: usize, r: i32) -> Vec<Vec<i32>> {
    let mut offsets = vec![vec![0; dims]];
    for axis in 0..dims {
        for d in (-r..=r).filter(|&d| d != 0) {
            let mut o = vec![0; dims];
            o[axis] = d;
            offsets.push(o);
        }
    }
    offsets
}

/// A single-stage smoothing program of `offsets` on field `A` with `border`.
fn smoothing(
    name: &'static str,
    axes: &[&str],
    ty: ScalarType,
    border: Border,
    offsets: &[Vec<i32>],
) -> tessera_ir::Program {
    let mut b = ProgramBuilder::new(name);
    grid(&mut b, axes);
    let a = b.field("A", ty);
    b.set_border(a, border);
    let mut stage = b.stage("smooth");
    let value = weighted_sum(&mut b, a, offsets, 1.0 / offsets.len() as f64);
    stage.assign(a, value);
    b.finish_stage(stage);
    b.finish()
}

/// A Rician-denoising-like update: `u = (u + dt * (f * g + lap(u))) / (1 + dt * sqrt(eps + |grad u|^2))`.
fn rician2d() -> tessera_ir::Program {
    let mut b = ProgramBuilder::new("rician2d");
    grid(&mut b, &["NY", "NX"]);
    let u = b.field("u", ScalarType::F32);
    let f = b.field("f", ScalarType::F32);
    b.set_border(u, Border::Clamp);
    b.set_readonly(f);
    let mut stage = b.stage("denoise");
    let (c, e, w, n, s) = (
        b.read(u, &[0, 0]),
        b.read(u, &[0, 1]),
        b.read(u, &[0, -1]),
        b.read(u, &[-1, 0]),
        b.read(u, &[1, 0]),
    );
    let gx = b.binary(BinaryOp::Sub, e, w);
    let gy = b.binary(BinaryOp::Sub, s, n);
    let gx2 = b.binary(BinaryOp::Mul, gx, gx);
    let gy2 = b.binary(BinaryOp::Mul, gy, gy);
    let eps = b.lit(Constant::Float(1e-4));
    let grad = b.binary(BinaryOp::Add, gx2, gy2);
    let grad = b.binary(BinaryOp::Add, eps, grad);
    let norm = b.call(MathFn::Sqrt, vec![grad]);
    let norm = b.bind(&mut stage, "norm", norm);
    let lap = weighted_sum(&mut b, u, &star(2, 1)[1..], 0.25);
    let fr = b.read(f, &[0, 0]);
    let ratio = b.binary(BinaryOp::Div, fr, norm);
    let drive = b.binary(BinaryOp::Add, ratio, lap);
    let dt = b.lit(Constant::Float(0.05));
    let step = b.binary(BinaryOp::Mul, dt, drive);
    let numerator = b.binary(BinaryOp::Add, c, step);
    let one = b.lit(Constant::Float(1.0));
    let damp = b.binary(BinaryOp::Mul, dt, norm);
    let denominator = b.binary(BinaryOp::Add, one, damp);
    let value = b.binary(BinaryOp::Div, numerator, denominator);
    stage.assign(u, value);
    b.finish_stage(stage);
    b.finish()
}

/// A TV-like two-stage step: a two-output dual update of `(p, q)` from `u`, then a primal
/// update of `u` from the new `(p, q)`, with mirror borders, f64.
fn tv2d() -> tessera_ir::Program {
    let mut b = ProgramBuilder::new("tv2d");
    grid(&mut b, &["NY", "NX"]);
    let u = b.field("u", ScalarType::F64);
    let p = b.field("p", ScalarType::F64);
    let q = b.field("q", ScalarType::F64);
    for field in [u, p, q] {
        b.set_border(field, Border::Mirror);
    }
    let mut dual = b.stage("dual");
    let tau = b.lit(Constant::Float(0.125));
    let (uc, ue, us) = (b.read(u, &[0, 0]), b.read(u, &[0, 1]), b.read(u, &[1, 0]));
    let dx = b.binary(BinaryOp::Sub, ue, uc);
    let dy = b.binary(BinaryOp::Sub, us, uc);
    let (pc, qc) = (b.read(p, &[0, 0]), b.read(q, &[0, 0]));
    let dx = b.binary(BinaryOp::Mul, tau, dx);
    let dy = b.binary(BinaryOp::Mul, tau, dy);
    let new_p = b.binary(BinaryOp::Add, pc, dx);
    let new_q = b.binary(BinaryOp::Add, qc, dy);
    let limit = b.lit(Constant::Float(1.0));
    let new_p = b.call(MathFn::Min, vec![new_p, limit]);
    let new_q = b.call(MathFn::Max, vec![new_q, limit]);
    dual.assign(p, new_p).assign(q, new_q);
    b.finish_stage(dual);
    let mut primal = b.stage("primal");
    let (pc, pw, qc, qn) = (
        b.read(p, &[0, 0]),
        b.read(p, &[0, -1]),
        b.read(q, &[0, 0]),
        b.read(q, &[-1, 0]),
    );
    let div_p = b.binary(BinaryOp::Sub, pc, pw);
    let div_q = b.binary(BinaryOp::Sub, qc, qn);
    let div = b.binary(BinaryOp::Add, div_p, div_q);
    let sigma = b.lit(Constant::Float(0.25));
    let update = b.binary(BinaryOp::Mul, sigma, div);
    let uc = b.read(u, &[0, 0]);
    let value = b.binary(BinaryOp::Add, uc, update);
    primal.assign(u, value);
    b.finish_stage(primal);
    b.finish()
}

/// A decaying 2D field whose sum is reduced every step; `until` stops the run once it falls
/// below a threshold the decay reaches after a few steps.
fn decay_until() -> tessera_ir::Program {
    let mut b = ProgramBuilder::new("decay_until");
    let params = grid(&mut b, &["NY", "NX"]);
    let u = b.field("u", ScalarType::F64);
    b.set_border(u, Border::Constant(Constant::Float(0.0)));
    let mut stage = b.stage("decay");
    let value = weighted_sum(&mut b, u, &star(2, 1), 0.15);
    stage.assign(u, value);
    b.finish_stage(stage);
    let here = b.read(u, &[0, 0]);
    let total = b.reduce_after_step("total", ReduceOp::Sum, here, None, 1);
    let cells = b.expr(tessera_ir::ExprKind::Param(params[0]));
    let cells = b.cast(ScalarType::F64, cells);
    let limit = b.lit(Constant::Float(0.4));
    let limit = b.binary(BinaryOp::Mul, limit, cells);
    let value = b.reduction_value(total);
    let stop = b.binary(BinaryOp::Lt, value, limit);
    b.until(stop);
    b.finish()
}

/// The extra programs with their awkward sizes (primes, a tile ± 1, smaller than a tile,
/// exactly `2r + 1`).
pub fn extra_programs() -> Vec<ExampleProgram> {
    let planes = |sets: &[&[i64]]| size_sets(&["NY", "NX"], sets);
    vec![
        ExampleProgram {
            name: "star1d_r2_constant",
            program: smoothing(
                "star1d_r2_constant",
                &["N"],
                ScalarType::F32,
                Border::Constant(Constant::Float(0.25)),
                &star(1, 2),
            ),
            sizes: size_sets(&["N"], &[&[5], &[255], &[257], &[101]]),
            steps: 3,
        },
        ExampleProgram {
            name: "box2d_r2_clamp",
            program: smoothing(
                "box2d_r2_clamp",
                &["NY", "NX"],
                ScalarType::F32,
                Border::Clamp,
                &box2d_r2(),
            ),
            sizes: planes(&[&[5, 5], &[17, 31], &[9, 33], &[7, 3]]),
            steps: 2,
        },
        ExampleProgram {
            name: "star3d_r2_periodic",
            program: smoothing(
                "star3d_r2_periodic",
                &["NZ", "NY", "NX"],
                ScalarType::F64,
                Border::Periodic,
                &star(3, 2),
            ),
            sizes: size_sets(
                &["NZ", "NY", "NX"],
                &[&[5, 5, 5], &[11, 9, 33], &[7, 13, 31]],
            ),
            steps: 2,
        },
        ExampleProgram {
            name: "rician2d",
            program: rician2d(),
            sizes: planes(&[&[3, 3], &[19, 23], &[8, 33]]),
            steps: 3,
        },
        ExampleProgram {
            name: "tv2d",
            program: tv2d(),
            sizes: planes(&[&[3, 3], &[13, 31], &[9, 32]]),
            steps: 3,
        },
        ExampleProgram {
            name: "decay_until",
            program: decay_until(),
            sizes: planes(&[&[11, 13], &[8, 33]]),
            steps: 40,
        },
    ]
}

/// The 5x5 box.
fn box2d_r2() -> Vec<Vec<i32>> {
    (-2..=2)
        .flat_map(|y| (-2..=2).map(move |x| vec![y, x]))
        .collect()
}
