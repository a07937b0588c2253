//! Benchmark-like programs built with `tessera_ir::builder`, seeded inputs, and the comparison
//! of CPU runs against the reference backend.
#![allow(dead_code)]

use std::sync::Arc;

use tessera_analysis::{BoundProgram, bind, check};
use tessera_cpu::CpuBackend;
use tessera_ir::builder::ProgramBuilder;
use tessera_ir::{
    BinaryOp, Border, Constant, ExprId, Field, Id, MathFn, Param, Range, ReduceOp, Region,
    ScalarType, SizeExpr, SizeOp, Span,
};
use tessera_plan::{Arithmetic, PlanRequest, Strategy};
use tessera_runtime::{Backend, Buffer, FieldSet, RunReport};

/// `lo..hi` spans with a `SizeExpr` high bound `N - r`.
fn inner(n: Id<Param>, r: i64) -> Range {
    Range::Span {
        lo: Some(SizeExpr::Const(r)),
        hi: Some(SizeExpr::Binary(
            SizeOp::Sub,
            Box::new(SizeExpr::Param(n)),
            Box::new(SizeExpr::Const(r)),
        )),
        stride: 1,
    }
}

/// Grid `[N0, N1, ...]` with one extent parameter per axis.
fn grid(b: &mut ProgramBuilder, dims: usize) -> Vec<Id<Param>> {
    let params: Vec<Id<Param>> = (0..dims)
        .map(|a| b.param(format!("N{a}"), ScalarType::I64, Constant::Int(9)))
        .collect();
    b.grid(params.iter().map(|p| SizeExpr::Param(*p)).collect());
    params
}

/// Σ weight · field[offset] / divisor, summed left to right.
fn linear_combination(
    b: &mut ProgramBuilder,
    field: Id<Field>,
    terms: &[(Vec<i32>, f64)],
    divisor: f64,
) -> ExprId {
    let sum = b.weighted_reads(field, terms.iter().map(|(o, w)| (o.as_slice(), *w)));
    let d = b.lit(Constant::Float(divisor));
    b.binary(BinaryOp::Div, sum.expect("at least one term"), d)
}

/// Weights all distinct, `1 + k / (10 n)` for the k-th of n offsets, and the divisor `1.05 n`
/// (as the benchmark families).
fn distinct_weights(offsets: Vec<Vec<i32>>) -> (Vec<(Vec<i32>, f64)>, f64) {
    let n = offsets.len() as f64;
    let terms = offsets
        .into_iter()
        .enumerate()
        .map(|(k, o)| (o, 1.0 + k as f64 / (10.0 * n)))
        .collect();
    (terms, n * 1.05)
}

fn star_offsets(dims: usize, r: i32) -> Vec<Vec<i32>> {
    let mut out = vec![vec![0; dims]];
    for a in 0..dims {
        for d in 1..=r {
            for s in [-d, d] {
                let mut o = vec![0; dims];
                o[a] = s;
                out.push(o);
            }
        }
    }
    out.sort();
    out
}

fn box_offsets(dims: usize, r: i32) -> Vec<Vec<i32>> {
    let mut out = vec![vec![]];
    for _ in 0..dims {
        out = out
            .into_iter()
            .flat_map(|o: Vec<i32>| (-r..=r).map(move |d| [o.clone(), vec![d]].concat()))
            .collect();
    }
    out
}

/// A Jacobi stencil on the interior (ring of width r fixed), no border handling.
pub fn jacobi(name: &str, dims: usize, r: i32, ty: ScalarType, boxed: bool) -> tessera_ir::Program {
    let (terms, divisor) =
        distinct_weights(if boxed { box_offsets } else { star_offsets }(dims, r));
    interior_linear(name, dims, r, ty, &terms, divisor)
}

/// `A = Σ weight · A[offset] / divisor` on the interior (ring of width r fixed).
fn interior_linear(
    name: &str,
    dims: usize,
    r: i32,
    ty: ScalarType,
    terms: &[(Vec<i32>, f64)],
    divisor: f64,
) -> tessera_ir::Program {
    let mut b = ProgramBuilder::new(name);
    let n = grid(&mut b, dims);
    let a = b.field("A", ty);
    let value = linear_combination(&mut b, a, terms, divisor);
    let mut s = b.stage("update");
    s.over(Region {
        ranges: n.iter().map(|p| inner(*p, i64::from(r))).collect(),
        span: Span::NONE,
    });
    s.assign(a, value);
    b.finish_stage(s);
    b.finish()
}

/// A stencil over the whole grid reading through a border mode.
fn bordered(name: &str, dims: usize, r: i32, border: Border, boxed: bool) -> tessera_ir::Program {
    let mut b = ProgramBuilder::new(name);
    grid(&mut b, dims);
    let a = b.field("A", ScalarType::F64);
    b.set_border(a, border);
    let (terms, divisor) =
        distinct_weights(if boxed { box_offsets } else { star_offsets }(dims, r));
    let value = linear_combination(&mut b, a, &terms, divisor);
    let mut s = b.stage("update");
    s.assign(a, value);
    b.finish_stage(s);
    b.finish()
}

pub fn star1d2() -> tessera_ir::Program {
    jacobi("star1d2r", 1, 2, ScalarType::F32, false)
}
pub fn star2d_r1_f32() -> tessera_ir::Program {
    jacobi("star2d1r", 2, 1, ScalarType::F32, false)
}
pub fn star2d_r2_f64() -> tessera_ir::Program {
    jacobi("star2d2r", 2, 2, ScalarType::F64, false)
}
pub fn box2d_r1_f32() -> tessera_ir::Program {
    jacobi("box2d1r", 2, 1, ScalarType::F32, true)
}
pub fn star3d_r1_f64() -> tessera_ir::Program {
    jacobi("star3d1r", 3, 1, ScalarType::F64, false)
}
pub fn box3d_r1_f32() -> tessera_ir::Program {
    jacobi("box3d1r", 3, 1, ScalarType::F32, true)
}
/// The 5x5 Gaussian of BENCHMARKS.md (weights g[i] g[j] / 256, g = [1, 4, 6, 4, 1]): separable,
/// so non-exact code computes it as column sums of rank one.
pub fn gaussian2d_f32() -> tessera_ir::Program {
    let g = [1.0, 4.0, 6.0, 4.0, 1.0];
    let terms: Vec<(Vec<i32>, f64)> = box_offsets(2, 2)
        .into_iter()
        .map(|o| {
            let w = g[(o[0] + 2) as usize] * g[(o[1] + 2) as usize];
            (o, w)
        })
        .collect();
    interior_linear("gaussian2d", 2, 2, ScalarType::F32, &terms, 256.0)
}
/// The 27-point box of `j3d27pt` (BENCHMARKS.md): the weight of `[dz, dy, dx]` is a function
/// of `(dy, dx)` plus one of `dz`, so non-exact code sums groups of columns first.
pub fn j3d27pt(ty: ScalarType) -> tessera_ir::Program {
    let terms: Vec<(Vec<i32>, f64)> = box_offsets(3, 1)
        .into_iter()
        .map(|o| {
            let plane = 0.01 * f64::from(o[0] + 1);
            let w = if o[1] == 0 && o[2] == 0 {
                1.5
            } else {
                0.5 + 0.05 * f64::from(3 * (o[1] + 1) + o[2] + 1)
            };
            (o, w + plane)
        })
        .collect();
    interior_linear("j3d27pt", 3, 1, ty, &terms, 21.57)
}
pub fn clamp2d() -> tessera_ir::Program {
    bordered("clamp2d", 2, 2, Border::Clamp, false)
}
pub fn mirror2d() -> tessera_ir::Program {
    bordered("mirror2d", 2, 1, Border::Mirror, true)
}
pub fn constant3d() -> tessera_ir::Program {
    bordered(
        "constant3d",
        3,
        1,
        Border::Constant(Constant::Float(0.25)),
        false,
    )
}
pub fn periodic2d() -> tessera_ir::Program {
    bordered("periodic2d", 2, 2, Border::Periodic, true)
}

/// Conway's life on u8 with periodic borders, every point updated.
pub fn life() -> tessera_ir::Program {
    let mut b = ProgramBuilder::new("life");
    grid(&mut b, 2);
    let a = b.field("A", ScalarType::U8);
    b.set_border(a, Border::Periodic);
    let mut n: Option<ExprId> = None;
    for o in box_offsets(2, 1).into_iter().filter(|o| o != &vec![0, 0]) {
        let read = b.read(a, &o);
        n = Some(match n {
            None => read,
            Some(s) => b.binary(BinaryOp::Add, s, read),
        });
    }
    let mut s = b.stage("life");
    let n = b.bind(&mut s, "n", n.expect("neighbours"));
    let three = b.lit(Constant::Int(3));
    let two = b.lit(Constant::Int(2));
    let one = b.lit(Constant::Int(1));
    let here = b.read(a, &[0, 0]);
    let born = b.binary(BinaryOp::Eq, n, three);
    let alive = b.binary(BinaryOp::Eq, here, one);
    let stays = b.binary(BinaryOp::Eq, n, two);
    let keep = b.binary(BinaryOp::And, alive, stays);
    let next = b.binary(BinaryOp::Or, born, keep);
    let one = b.lit(Constant::Int(1));
    let zero = b.lit(Constant::Int(0));
    let value = b.select(next, one, zero);
    s.assign(a, value);
    b.finish_stage(s);
    b.finish()
}

/// fdtd2d: `ey[0, all] = t` then three stages on shifted sub-domains (ey has two writers).
pub fn fdtd2d() -> tessera_ir::Program {
    let mut b = ProgramBuilder::new("fdtd2d");
    let n = grid(&mut b, 2);
    let ex = b.field("ex", ScalarType::F32);
    let ey = b.field("ey", ScalarType::F32);
    let hz = b.field("hz", ScalarType::F32);
    let upto = |p: Id<Param>, lo: i64, minus: i64| Range::Span {
        lo: Some(SizeExpr::Const(lo)),
        hi: Some(SizeExpr::Binary(
            SizeOp::Sub,
            Box::new(SizeExpr::Param(p)),
            Box::new(SizeExpr::Const(minus)),
        )),
        stride: 1,
    };
    let mut s0 = b.stage("source");
    s0.over(Region {
        ranges: vec![Range::Index(SizeExpr::Const(0)), Range::all()],
        span: Span::NONE,
    });
    let t = b.step();
    let tf = b.cast(ScalarType::F32, t);
    s0.assign(ey, tf);
    b.finish_stage(s0);
    let update = |b: &mut ProgramBuilder,
                  name: &str,
                  target: Id<Field>,
                  region: Vec<Range>,
                  back: [i32; 2],
                  c: f64| {
        let mut s = b.stage(name);
        s.over(Region {
            ranges: region,
            span: Span::NONE,
        });
        let here = b.read(target, &[0, 0]);
        let h = b.read(hz, &[0, 0]);
        let hb = b.read(hz, &back);
        let diff = b.binary(BinaryOp::Sub, h, hb);
        let k = b.lit(Constant::Float(c));
        let scaled = b.binary(BinaryOp::Mul, k, diff);
        let value = b.binary(BinaryOp::Sub, here, scaled);
        s.assign(target, value);
        b.finish_stage(s);
    };
    update(
        &mut b,
        "update_ey",
        ey,
        vec![upto(n[0], 1, 0), Range::all()],
        [-1, 0],
        0.5,
    );
    update(
        &mut b,
        "update_ex",
        ex,
        vec![Range::all(), upto(n[1], 1, 0)],
        [0, -1],
        0.5,
    );
    let mut s = b.stage("update_hz");
    s.over(Region {
        ranges: vec![upto(n[0], 0, 1), upto(n[1], 0, 1)],
        span: Span::NONE,
    });
    let h = b.read(hz, &[0, 0]);
    let ex1 = b.read(ex, &[0, 1]);
    let ex0 = b.read(ex, &[0, 0]);
    let ey1 = b.read(ey, &[1, 0]);
    let ey0 = b.read(ey, &[0, 0]);
    let d1 = b.binary(BinaryOp::Sub, ex1, ex0);
    let d2 = b.binary(BinaryOp::Add, d1, ey1);
    let d3 = b.binary(BinaryOp::Sub, d2, ey0);
    let k = b.lit(Constant::Float(0.7));
    let scaled = b.binary(BinaryOp::Mul, k, d3);
    let value = b.binary(BinaryOp::Sub, h, scaled);
    s.assign(hz, value);
    b.finish_stage(s);
    b.finish()
}

/// Sum of `field` at the four axis neighbours of a 2D point, each term from `term`.
fn axis_neighbours(
    b: &mut ProgramBuilder,
    mut term: impl FnMut(&mut ProgramBuilder, [i32; 2]) -> ExprId,
) -> ExprId {
    let mut sum: Option<ExprId> = None;
    for o in [[-1, 0], [1, 0], [0, -1], [0, 1]] {
        let t = term(b, o);
        sum = Some(match sum {
            None => t,
            Some(s) => b.binary(BinaryOp::Add, s, t),
        });
    }
    sum.expect("four neighbours")
}

/// rician2d-like: stage 1 computes a temporary `g` on the interior, stage 2 updates `u` from
/// `u`, `g` and the read-only `f`; an in-stage reduction every K and an after-step max.
pub fn rician(every: u64) -> tessera_ir::Program {
    let mut b = ProgramBuilder::new("rician");
    let n = grid(&mut b, 2);
    let u = b.field("u", ScalarType::F32);
    let f = b.field("f", ScalarType::F32);
    b.set_readonly(f);
    let g = b.field("g", ScalarType::F32);
    let interior = Region {
        ranges: vec![inner(n[0], 1), inner(n[1], 1)],
        span: Span::NONE,
    };
    let mut s1 = b.stage("weights");
    s1.over(interior.clone());
    let sq = axis_neighbours(&mut b, |b, o| {
        let c = b.read(u, &[0, 0]);
        let v = b.read(u, &o);
        let d = b.binary(BinaryOp::Sub, c, v);
        b.binary(BinaryOp::Mul, d, d)
    });
    let eps = b.lit(Constant::Float(1e-6));
    let arg = b.binary(BinaryOp::Add, eps, sq);
    let value = b.call(MathFn::Rsqrt, vec![arg]);
    s1.assign(g, value);
    b.finish_stage(s1);
    let mut s2 = b.stage("diffuse");
    s2.over(interior);
    let flux = axis_neighbours(&mut b, |b, o| {
        let v = b.read(u, &o);
        let w = b.read(g, &o);
        b.binary(BinaryOp::Mul, v, w)
    });
    let weights = axis_neighbours(&mut b, |b, o| b.read(g, &o));
    let uf = b.read(u, &[0, 0]);
    let ff = b.read(f, &[0, 0]);
    let r = b.binary(BinaryOp::Mul, uf, ff);
    let r = b.bind(&mut s2, "r", r);
    let k = b.lit(Constant::Float(0.1));
    let half = b.lit(Constant::Float(0.5));
    let hr = b.binary(BinaryOp::Mul, half, r);
    let num = b.binary(BinaryOp::Add, flux, hr);
    let num = b.binary(BinaryOp::Mul, k, num);
    let here = b.read(u, &[0, 0]);
    let num = b.binary(BinaryOp::Add, here, num);
    let one = b.lit(Constant::Float(1.0));
    let k2 = b.lit(Constant::Float(0.1));
    let half2 = b.lit(Constant::Float(0.5));
    let den = b.binary(BinaryOp::Add, weights, half2);
    let den = b.binary(BinaryOp::Mul, k2, den);
    let den = b.binary(BinaryOp::Add, one, den);
    let value = b.binary(BinaryOp::Div, num, den);
    s2.assign(u, value);
    let rr = b.binary(BinaryOp::Mul, r, r);
    s2.reduce("energy", ReduceOp::Sum, rr, every);
    b.finish_stage(s2);
    let uu = b.read(u, &[0, 0]);
    b.reduce_after_step("peak", ReduceOp::Max, uu, None, every + 1);
    b.finish()
}

/// tv2d-like: stage 1 writes two temporaries over the whole grid (clamped reads), stage 2
/// updates `u`; stops once the after-step sum (every 2 steps) is below `limit`.
pub fn tv2d(limit: f64) -> tessera_ir::Program {
    let mut b = ProgramBuilder::new("tv2d");
    let n = grid(&mut b, 2);
    let u = b.field("u", ScalarType::F64);
    b.set_border(u, Border::Clamp);
    let f = b.field("f", ScalarType::F64);
    b.set_readonly(f);
    let px = b.field("px", ScalarType::F64);
    let py = b.field("py", ScalarType::F64);
    let mut s1 = b.stage("gradient");
    let (ux, uy, u0) = (b.read(u, &[0, 1]), b.read(u, &[1, 0]), b.read(u, &[0, 0]));
    let gx = b.binary(BinaryOp::Sub, ux, u0);
    let gx = b.bind(&mut s1, "gx", gx);
    let u0 = b.read(u, &[0, 0]);
    let gy = b.binary(BinaryOp::Sub, uy, u0);
    let gy = b.bind(&mut s1, "gy", gy);
    let eps = b.lit(Constant::Float(1e-4));
    let gx2 = b.binary(BinaryOp::Mul, gx, gx);
    let gy2 = b.binary(BinaryOp::Mul, gy, gy);
    let s = b.binary(BinaryOp::Add, eps, gx2);
    let s = b.binary(BinaryOp::Add, s, gy2);
    let m = b.call(MathFn::Sqrt, vec![s]);
    let one = b.lit(Constant::Float(1.0));
    let m = b.binary(BinaryOp::Div, one, m);
    let m = b.bind(&mut s1, "m", m);
    let vx = b.binary(BinaryOp::Mul, gx, m);
    let vy = b.binary(BinaryOp::Mul, gy, m);
    s1.assign(px, vx);
    s1.assign(py, vy);
    b.finish_stage(s1);
    let mut s2 = b.stage("diffuse");
    s2.over(Region {
        ranges: vec![inner(n[0], 1), inner(n[1], 1)],
        span: Span::NONE,
    });
    let (p0, p1, q0, q1) = (
        b.read(px, &[0, 0]),
        b.read(px, &[0, -1]),
        b.read(py, &[0, 0]),
        b.read(py, &[-1, 0]),
    );
    let dx = b.binary(BinaryOp::Sub, p0, p1);
    let dy = b.binary(BinaryOp::Sub, q0, q1);
    let div = b.binary(BinaryOp::Add, dx, dy);
    let (uu, ff) = (b.read(u, &[0, 0]), b.read(f, &[0, 0]));
    let fid = b.binary(BinaryOp::Sub, uu, ff);
    let k = b.lit(Constant::Float(0.1));
    let fid = b.binary(BinaryOp::Mul, k, fid);
    let delta = b.binary(BinaryOp::Sub, div, fid);
    let k = b.lit(Constant::Float(0.05));
    let delta = b.binary(BinaryOp::Mul, k, delta);
    let uu = b.read(u, &[0, 0]);
    let value = b.binary(BinaryOp::Add, uu, delta);
    s2.assign(u, value);
    b.finish_stage(s2);
    let uu = b.read(u, &[0, 0]);
    let total = b.reduce_after_step("total", ReduceOp::Sum, uu, None, 2);
    let tv = b.reduction_value(total);
    let limit = b.lit(Constant::Float(limit));
    let cond = b.binary(BinaryOp::Lt, tv, limit);
    b.until(cond);
    b.finish()
}

/// An integer stencil on a strided sub-domain: i32 wrapping arithmetic, division by a value
/// that may be zero, coordinates and `t`; mirror borders.
pub fn strided_i32() -> tessera_ir::Program {
    let mut b = ProgramBuilder::new("strided");
    let n = grid(&mut b, 2);
    let a = b.field("K", ScalarType::I32);
    b.set_border(a, Border::Mirror);
    let mut s = b.stage("mix");
    let span = |p: Id<Param>, lo: i64, stride: u32| Range::Span {
        lo: Some(SizeExpr::Const(lo)),
        hi: Some(SizeExpr::Binary(
            SizeOp::Sub,
            Box::new(SizeExpr::Param(p)),
            Box::new(SizeExpr::Const(1)),
        )),
        stride,
    };
    s.over(Region {
        ranges: vec![span(n[0], 1, 2), span(n[1], 2, 3)],
        span: Span::NONE,
    });
    let (c, l, r, d) = (
        b.read(a, &[0, 0]),
        b.read(a, &[0, -1]),
        b.read(a, &[0, 1]),
        b.read(a, &[1, 0]),
    );
    let big = b.lit(Constant::Int(1_000_003));
    let prod = b.binary(BinaryOp::Mul, c, big);
    let q = b.binary(BinaryOp::Div, prod, l);
    let seven = b.lit(Constant::Int(7));
    let m = b.binary(BinaryOp::Rem, r, seven);
    let sum = b.binary(BinaryOp::Add, q, m);
    let sum = b.binary(BinaryOp::Sub, sum, d);
    let x = b.coord(1);
    let t = b.step();
    let xt = b.binary(BinaryOp::Add, x, t);
    let xt = b.cast(ScalarType::I32, xt);
    let value = b.binary(BinaryOp::Add, sum, xt);
    s.assign(a, value);
    b.finish_stage(s);
    b.finish()
}

/// Binds a program to the extents `sizes` (one per axis).
pub fn bind_sizes(program: &tessera_ir::Program, sizes: &[usize]) -> BoundProgram {
    let checked = Arc::new(
        check(program).unwrap_or_else(|e| panic!("{} does not check: {e:?}", program.name)),
    );
    let values: Vec<(String, Constant)> = sizes
        .iter()
        .enumerate()
        .map(|(a, &s)| (format!("N{a}"), Constant::Int(s as i64)))
        .collect();
    bind(checked, &values)
        .unwrap_or_else(|e| panic!("{} does not bind to {sizes:?}: {e:?}", program.name))
}

/// Seeded pseudo-random inputs (xorshift), never all zeros: floats in [0, 1), integers in
/// 0..1000 (u8: 0/1).
pub fn random_fields(bound: &BoundProgram, seed: u64) -> FieldSet {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut fields = FieldSet::zeros(bound);
    for buffer in &mut fields.buffers {
        match buffer {
            Buffer::F32(v) => v
                .iter_mut()
                .for_each(|x| *x = (next() >> 40) as f32 / (1u64 << 24) as f32),
            Buffer::F64(v) => v
                .iter_mut()
                .for_each(|x| *x = (next() >> 11) as f64 / (1u64 << 53) as f64),
            Buffer::I32(v) => v.iter_mut().for_each(|x| *x = (next() % 1000) as i32),
            Buffer::I64(v) => v.iter_mut().for_each(|x| *x = (next() % 1000) as i64),
            Buffer::U8(v) => v.iter_mut().for_each(|x| *x = (next() % 2) as u8),
        }
    }
    fields
}

/// Inputs for a run: random, with the fields that the first step writes everywhere before
/// reading them poisoned (an unwritten cell then shows).
pub fn inputs(bound: &BoundProgram, seed: u64) -> FieldSet {
    let mut fields = random_fields(bound, seed);
    let checked = bound.checked();
    let program = checked.program();
    let grid = tessera_analysis::Rect::grid(&bound.extents);
    for field in program.fields.ids() {
        let mut read_before = false;
        for stage in program.stages.ids() {
            if checked.footprint(stage, field).is_some() {
                read_before = true;
            }
            let dense_full =
                bound.stage_domain(stage).rect == grid && bound.stage_domain(stage).is_dense();
            if !read_before && dense_full && program.stages[stage].outputs().contains(&field) {
                let buffer = &mut fields.buffers[field.index()];
                *buffer = Buffer::poisoned(buffer.ty(), buffer.len());
                break;
            }
        }
    }
    fields
}

/// The reference result (exact mode).
pub fn reference(bound: &BoundProgram, fields: &FieldSet, steps: u64) -> (FieldSet, RunReport) {
    let mut out = fields.clone();
    let report =
        tessera_reference::run_exact(bound, &mut out, 0, steps).expect("the reference runs");
    (out, report)
}

/// The CPU backend with fast test compilation (`-O1`; exactness does not depend on it).
pub fn backend() -> CpuBackend {
    let mut backend = CpuBackend::default();
    backend.compile.optimization_flags = Some(vec!["-O1".into(), "-march=native".into()]);
    backend
}

/// Runs `bound` on the CPU backend with `options`.
pub fn run_cpu(
    backend: &CpuBackend,
    bound: &BoundProgram,
    fields: &FieldSet,
    steps: u64,
    options: &PlanRequest,
) -> (FieldSet, RunReport) {
    let mut exe = backend
        .plan_and_prepare(bound, options)
        .unwrap_or_else(|e| panic!("prepare {options:?}: {e}"));
    let mut out = fields.clone();
    let report = exe
        .run(&mut out, 0, steps, &mut ())
        .unwrap_or_else(|e| panic!("run {options:?}: {e}"));
    (out, report)
}

/// Asserts that every point of the first field is within `tolerance` (relative, absolute below
/// 1) of the reference: the check for non-exact runs.
pub fn assert_close(
    what: &str,
    expected: &(FieldSet, RunReport),
    actual: &(FieldSet, RunReport),
    tolerance: f64,
) {
    let (e, a) = (&expected.0.buffers[0], &actual.0.buffers[0]);
    for i in 0..e.len() {
        let (x, y) = (e.get_f64(i), a.get_f64(i));
        assert!(
            (x - y).abs() <= tolerance * x.abs().max(1.0),
            "{what}: point {i}: reference {x}, relaxed {y}"
        );
    }
}

/// Asserts bitwise equality of every field and of the reduction records.
pub fn assert_same(
    what: &str,
    bound: &BoundProgram,
    expected: &(FieldSet, RunReport),
    actual: &(FieldSet, RunReport),
) {
    let program = bound.program();
    for (field, (e, a)) in program
        .fields
        .values()
        .zip(expected.0.buffers.iter().zip(&actual.0.buffers))
    {
        if e.as_bytes() != a.as_bytes() {
            let first = (0..e.len())
                .find(|&i| e.get_f64(i).to_bits() != a.get_f64(i).to_bits())
                .unwrap_or(0);
            panic!(
                "{what}: field `{}` differs, first at linear index {first} of shape {:?}: expected {}, got {}",
                field.name,
                bound.extents,
                e.get_f64(first),
                a.get_f64(first)
            );
        }
    }
    let key = |r: &RunReport| {
        r.reductions
            .iter()
            .map(|x| (x.step, x.name.clone(), x.value.to_bits()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        key(&expected.1),
        key(&actual.1),
        "{what}: reductions differ"
    );
    assert_eq!(
        expected.1.steps, actual.1.steps,
        "{what}: step counts differ"
    );
    assert_eq!(
        expected.1.stopped_early, actual.1.stopped_early,
        "{what}: stop differs"
    );
}

/// Options for one strategy configuration in exact mode.
pub fn exact(
    strategy: &str,
    tile: Option<Vec<usize>>,
    time_tile: Option<usize>,
    threads: usize,
) -> PlanRequest {
    PlanRequest {
        arithmetic: Arithmetic::Exact,
        strategy: Strategy::from_name(strategy),
        tile,
        time_tile: time_tile.map(|t| t as u32),
        threads: Some(threads),
        ..PlanRequest::default()
    }
}
