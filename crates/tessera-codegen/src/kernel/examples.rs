//! Example programs covering what the kernel generator handles (every border mode, sub-domain
//! and single-index stages, multi-stage and multi-output steps, the step counter, reductions
//! of each kind, `until`, integer types, 1D to 4D), and the matrix of (program, strategy,
//! parameters, sizes) that the GPU runtimes test against the reference backend.

use tessera_ir::builder::{ProgramBuilder, StageBuilder};
use tessera_ir::{
    BinaryOp, Border, Constant, ExprId, Field, Id, MathFn, Param, Program, Range, ReduceOp, Region,
    ScalarType, SizeExpr, SizeOp, Span,
};
use tessera_plan::gpu::{GpuPlan, GpuStrategy};

/// A program to lower, with the size sets worth testing it at.
#[derive(Clone, Debug)]
pub struct ExampleProgram {
    /// Short name (`j2d5pt`).
    pub name: &'static str,
    /// The program (not yet checked).
    pub program: Program,
    /// Parameter values to bind it with, one set per size to test (awkward sizes included).
    pub sizes: Vec<Vec<(String, Constant)>>,
    /// Steps to run.
    pub steps: u64,
}

/// One differential test: lower example `program` bound with `params` under `plan`, run
/// `steps` steps, compare with the reference backend.
#[derive(Clone, Debug)]
pub struct TestCase {
    /// The [`ExampleProgram::name`].
    pub program: &'static str,
    /// Parameter values.
    pub params: Vec<(String, Constant)>,
    /// The plan.
    pub plan: GpuPlan,
    /// Steps to run.
    pub steps: u64,
}

/// Size parameter sets for [`ExampleProgram::sizes`]: one `(name, value)` list per entry of
/// `sets`, values in `names` order.
pub fn size_sets(names: &[&str], sets: &[&[i64]]) -> Vec<Vec<(String, Constant)>> {
    sets.iter()
        .map(|set| {
            names
                .iter()
                .zip(*set)
                .map(|(n, v)| (n.to_string(), Constant::Int(*v)))
                .collect()
        })
        .collect()
}

fn span(lo: i64, hi: Option<SizeExpr>) -> Range {
    Range::Span {
        lo: Some(SizeExpr::Const(lo)),
        hi,
        stride: 1,
    }
}

fn minus(p: Id<Param>, k: i64) -> Option<SizeExpr> {
    Some(SizeExpr::Binary(
        SizeOp::Sub,
        Box::new(SizeExpr::Param(p)),
        Box::new(SizeExpr::Const(k)),
    ))
}

fn region(ranges: Vec<Range>) -> Region {
    Region {
        ranges,
        span: Span::NONE,
    }
}

/// `c * (sum of reads of `field` at `offsets`)`, summed in `offsets` order.
pub fn weighted_sum(
    b: &mut ProgramBuilder,
    field: Id<Field>,
    offsets: &[Vec<i32>],
    c: f64,
) -> ExprId {
    let mut sum = b.read(field, &offsets[0]);
    for o in &offsets[1..] {
        let r = b.read(field, o);
        sum = b.binary(BinaryOp::Add, sum, r);
    }
    let c = b.lit(Constant::Float(c));
    b.binary(BinaryOp::Mul, c, sum)
}

fn star(dims: usize, radius: i32) -> Vec<Vec<i32>> {
    let mut offsets = vec![vec![0; dims]];
    for axis in 0..dims {
        for r in 1..=radius {
            for sign in [-1, 1] {
                let mut o = vec![0; dims];
                o[axis] = sign * r;
                offsets.push(o);
            }
        }
    }
    offsets
}

fn boxed(dims: usize) -> Vec<Vec<i32>> {
    (0..3usize.pow(dims as u32))
        .map(|mut i| {
            (0..dims)
                .map(|_| {
                    let v = (i % 3) as i32 - 1;
                    i /= 3;
                    v
                })
                .collect()
        })
        .collect()
}

fn finish(b: ProgramBuilder, stage: StageBuilder) -> Program {
    let mut b = b;
    b.finish_stage(stage);
    b.finish()
}

/// 2D Jacobi 5-point on the interior (no border), f32.
fn j2d5pt() -> Program {
    let mut b = ProgramBuilder::new("j2d5pt");
    let (ny, nx) = (
        b.param("NY", ScalarType::I64, Constant::Int(33)),
        b.param("NX", ScalarType::I64, Constant::Int(31)),
    );
    b.grid(vec![SizeExpr::Param(ny), SizeExpr::Param(nx)]);
    let a = b.field("A", ScalarType::F32);
    let mut s = b.stage("jacobi");
    s.over(region(vec![span(1, minus(ny, 1)), span(1, minus(nx, 1))]));
    let value = weighted_sum(&mut b, a, &star(2, 1), 0.2);
    s.assign(a, value);
    finish(b, s)
}

/// 2D radius-2 star with periodic borders over the whole grid, f64, using `t`.
fn heat2d_periodic() -> Program {
    let mut b = ProgramBuilder::new("heat2d_periodic");
    let (ny, nx) = (
        b.param("NY", ScalarType::I64, Constant::Int(20)),
        b.param("NX", ScalarType::I64, Constant::Int(17)),
    );
    b.grid(vec![SizeExpr::Param(ny), SizeExpr::Param(nx)]);
    let u = b.field("u", ScalarType::F64);
    b.set_border(u, Border::Periodic);
    let mut s = b.stage("diffuse");
    let sum = weighted_sum(&mut b, u, &star(2, 2), 0.1);
    let t = b.step();
    let t = b.cast(ScalarType::F64, t);
    let small = b.lit(Constant::Float(1e-3));
    let drift = b.binary(BinaryOp::Mul, small, t);
    let value = b.binary(BinaryOp::Add, sum, drift);
    s.assign(u, value);
    finish(b, s)
}

/// 3D Jacobi 7-point with clamp borders over the whole grid, f32.
fn j3d7pt() -> Program {
    let mut b = ProgramBuilder::new("j3d7pt");
    let n: Vec<Id<Param>> = ["NZ", "NY", "NX"]
        .iter()
        .map(|n| b.param(*n, ScalarType::I64, Constant::Int(17)))
        .collect();
    b.grid(n.iter().map(|p| SizeExpr::Param(*p)).collect());
    let a = b.field("A", ScalarType::F32);
    b.set_border(a, Border::Clamp);
    let mut s = b.stage("jacobi");
    let centre = b.read(a, &[0, 0, 0]);
    let alpha = b.lit(Constant::Float(0.4));
    let centre = b.binary(BinaryOp::Mul, alpha, centre);
    let neighbours = weighted_sum(&mut b, a, &star(3, 1)[1..], 0.1);
    let value = b.binary(BinaryOp::Add, centre, neighbours);
    s.assign(a, value);
    finish(b, s)
}

/// 3D 27-point box with a constant border and a coefficient field, f64 (diagonal reads).
fn box3d_constant() -> Program {
    let mut b = ProgramBuilder::new("box3d_constant");
    let n: Vec<Id<Param>> = ["NZ", "NY", "NX"]
        .iter()
        .map(|n| b.param(*n, ScalarType::I64, Constant::Int(9)))
        .collect();
    b.grid(n.iter().map(|p| SizeExpr::Param(*p)).collect());
    let a = b.field("A", ScalarType::F64);
    b.set_border(a, Border::Constant(Constant::Float(1.5)));
    let k = b.field("k", ScalarType::F64);
    b.set_readonly(k);
    let mut s = b.stage("smooth");
    let sum = weighted_sum(&mut b, a, &boxed(3), 1.0 / 27.0);
    let kk = b.read(k, &[0, 0, 0]);
    let value = b.binary(BinaryOp::Mul, sum, kk);
    s.assign(a, value);
    finish(b, s)
}

/// 2D FDTD (Holewinski's electromagnetics): a source row written from `t`, a two-output
/// stage and a second stage reading both, over sub-domains, f32.
fn fdtd2d() -> Program {
    let mut b = ProgramBuilder::new("fdtd2d");
    let (ny, nx) = (
        b.param("NY", ScalarType::I64, Constant::Int(21)),
        b.param("NX", ScalarType::I64, Constant::Int(19)),
    );
    b.grid(vec![SizeExpr::Param(ny), SizeExpr::Param(nx)]);
    let ex = b.field("ex", ScalarType::F32);
    let ey = b.field("ey", ScalarType::F32);
    let hz = b.field("hz", ScalarType::F32);
    let mut source = b.stage("source");
    source.over(region(vec![Range::Index(SizeExpr::Const(0)), Range::all()]));
    let t = b.step();
    let t = b.cast(ScalarType::F32, t);
    source.assign(ey, t);
    b.finish_stage(source);
    let mut e = b.stage("e");
    e.over(region(vec![span(1, None), span(1, None)]));
    let half = b.lit(Constant::Float(0.5));
    let (h, hy, hx) = (
        b.read(hz, &[0, 0]),
        b.read(hz, &[-1, 0]),
        b.read(hz, &[0, -1]),
    );
    let dy = b.binary(BinaryOp::Sub, h, hy);
    let dy = b.binary(BinaryOp::Mul, half, dy);
    let old = b.read(ey, &[0, 0]);
    let new_ey = b.binary(BinaryOp::Sub, old, dy);
    let h = b.read(hz, &[0, 0]);
    let dx = b.binary(BinaryOp::Sub, h, hx);
    let dx = b.binary(BinaryOp::Mul, half, dx);
    let old = b.read(ex, &[0, 0]);
    let new_ex = b.binary(BinaryOp::Sub, old, dx);
    e.assign(ey, new_ey).assign(ex, new_ex);
    b.finish_stage(e);
    let mut h_stage = b.stage("h");
    h_stage.over(region(vec![
        Range::Span {
            lo: None,
            hi: minus(ny, 1),
            stride: 1,
        },
        Range::Span {
            lo: None,
            hi: minus(nx, 1),
            stride: 1,
        },
    ]));
    let (ex1, ex0, ey1, ey0) = (
        b.read(ex, &[0, 1]),
        b.read(ex, &[0, 0]),
        b.read(ey, &[1, 0]),
        b.read(ey, &[0, 0]),
    );
    let curl = b.binary(BinaryOp::Sub, ex1, ex0);
    let dey = b.binary(BinaryOp::Sub, ey1, ey0);
    let curl = b.binary(BinaryOp::Add, curl, dey);
    let c = b.lit(Constant::Float(0.7));
    let curl = b.binary(BinaryOp::Mul, c, curl);
    let old = b.read(hz, &[0, 0]);
    let value = b.binary(BinaryOp::Sub, old, curl);
    h_stage.assign(hz, value);
    finish(b, h_stage)
}

/// 2D mirror-border diffusion with an in-stage max and an after-step sum every 2 steps, and
/// a stop condition, f64.
fn reductions2d() -> Program {
    let mut b = ProgramBuilder::new("reductions2d");
    let (ny, nx) = (
        b.param("NY", ScalarType::I64, Constant::Int(13)),
        b.param("NX", ScalarType::I64, Constant::Int(35)),
    );
    b.grid(vec![SizeExpr::Param(ny), SizeExpr::Param(nx)]);
    let u = b.field("u", ScalarType::F64);
    b.set_border(u, Border::Mirror);
    let mut s = b.stage("diffuse");
    let lap = weighted_sum(&mut b, u, &star(2, 1), 0.2);
    let lap = b.bind(&mut s, "smooth", lap);
    let old = b.read(u, &[0, 0]);
    let change = b.binary(BinaryOp::Sub, lap, old);
    let change = b.call(MathFn::Abs, vec![change]);
    s.assign(u, lap).reduce("change", ReduceOp::Max, change, 1);
    b.finish_stage(s);
    let here = b.read(u, &[0, 0]);
    let total = b.reduce_after_step("total", ReduceOp::Sum, here, None, 2);
    let lowest = b.read(u, &[0, 0]);
    b.reduce_after_step(
        "lowest",
        ReduceOp::Min,
        lowest,
        Some(region(vec![span(1, minus(ny, 1)), Range::all()])),
        1,
    );
    let value = b.reduction_value(total);
    let limit = b.lit(Constant::Float(-1.0));
    let stop = b.binary(BinaryOp::Lt, value, limit);
    b.until(stop);
    b.finish()
}

/// Game of Life on a periodic u8 grid (9-point box, integer arithmetic).
fn life() -> Program {
    let mut b = ProgramBuilder::new("life");
    let (ny, nx) = (
        b.param("NY", ScalarType::I64, Constant::Int(16)),
        b.param("NX", ScalarType::I64, Constant::Int(33)),
    );
    b.grid(vec![SizeExpr::Param(ny), SizeExpr::Param(nx)]);
    let c = b.field("cell", ScalarType::U8);
    b.set_border(c, Border::Periodic);
    let mut s = b.stage("generation");
    let mut around = None;
    for o in boxed(2).into_iter().filter(|o| o.iter().any(|&v| v != 0)) {
        let r = b.read(c, &o);
        around = Some(match around {
            None => r,
            Some(sum) => b.binary(BinaryOp::Add, sum, r),
        });
    }
    let n = b.bind(&mut s, "n", around.expect("eight neighbours"));
    let alive = b.read(c, &[0, 0]);
    let (two, three, one, zero) = (
        b.lit(Constant::Int(2)),
        b.lit(Constant::Int(3)),
        b.lit(Constant::Int(1)),
        b.lit(Constant::Int(0)),
    );
    let is_three = b.binary(BinaryOp::Eq, n, three);
    let is_two = b.binary(BinaryOp::Eq, n, two);
    let one_alive = b.binary(BinaryOp::Eq, alive, one);
    let stays = b.binary(BinaryOp::And, is_two, one_alive);
    let lives = b.binary(BinaryOp::Or, is_three, stays);
    let value = b.select(lives, one, zero);
    s.assign(c, value);
    finish(b, s)
}

/// 1D i32 update of every second interior point, reading a radius-2 neighbourhood.
fn strided1d() -> Program {
    let mut b = ProgramBuilder::new("strided1d");
    let n = b.param("N", ScalarType::I64, Constant::Int(41));
    b.grid(vec![SizeExpr::Param(n)]);
    let a = b.field("a", ScalarType::I32);
    let mut s = b.stage("mix");
    s.over(region(vec![Range::Span {
        lo: Some(SizeExpr::Const(2)),
        hi: minus(n, 2),
        stride: 2,
    }]));
    let (l, r, c) = (b.read(a, &[-2]), b.read(a, &[1]), b.read(a, &[0]));
    let x = b.coord(0);
    let x = b.cast(ScalarType::I32, x);
    let seven = b.lit(Constant::Int(7));
    let sum = b.binary(BinaryOp::Add, l, r);
    let sum = b.binary(BinaryOp::Mul, sum, seven);
    let sum = b.binary(BinaryOp::Add, sum, x);
    let value = b.binary(BinaryOp::Rem, sum, c);
    s.assign(a, value);
    finish(b, s)
}

/// 4D clamp-border star, f32: the slowest axis is looped by every strategy.
fn star4d() -> Program {
    let mut b = ProgramBuilder::new("star4d");
    let n: Vec<Id<Param>> = ["NW", "NZ", "NY", "NX"]
        .iter()
        .map(|n| b.param(*n, ScalarType::I64, Constant::Int(5)))
        .collect();
    b.grid(n.iter().map(|p| SizeExpr::Param(*p)).collect());
    let a = b.field("A", ScalarType::F32);
    b.set_border(a, Border::Clamp);
    let mut s = b.stage("smooth");
    let value = weighted_sum(&mut b, a, &star(4, 1), 1.0 / 9.0);
    s.assign(a, value);
    finish(b, s)
}

/// Every example program with its test sizes.
pub fn example_programs() -> Vec<ExampleProgram> {
    let two_d = size_sets(
        &["NY", "NX"],
        &[&[33, 31], &[8, 32], &[9, 33], &[20, 17], &[3, 3], &[5, 70]],
    );
    let three_d = size_sets(
        &["NZ", "NY", "NX"],
        &[
            &[17, 20, 21],
            &[4, 8, 32],
            &[5, 9, 33],
            &[3, 3, 3],
            &[6, 7, 31],
        ],
    );
    vec![
        ExampleProgram {
            name: "j2d5pt",
            program: j2d5pt(),
            sizes: two_d.clone(),
            steps: 3,
        },
        ExampleProgram {
            name: "heat2d_periodic",
            program: heat2d_periodic(),
            sizes: size_sets(&["NY", "NX"], &[&[20, 17], &[8, 32], &[5, 5], &[9, 33]]),
            steps: 3,
        },
        ExampleProgram {
            name: "j3d7pt",
            program: j3d7pt(),
            sizes: three_d.clone(),
            steps: 3,
        },
        ExampleProgram {
            name: "box3d_constant",
            program: box3d_constant(),
            sizes: three_d,
            steps: 2,
        },
        ExampleProgram {
            name: "fdtd2d",
            program: fdtd2d(),
            sizes: two_d.clone(),
            steps: 4,
        },
        ExampleProgram {
            name: "reductions2d",
            program: reductions2d(),
            sizes: two_d.clone(),
            steps: 4,
        },
        ExampleProgram {
            name: "life",
            program: life(),
            sizes: two_d,
            steps: 5,
        },
        ExampleProgram {
            name: "strided1d",
            program: strided1d(),
            sizes: size_sets(&["N"], &[&[41], &[5], &[256], &[257]]),
            steps: 3,
        },
        ExampleProgram {
            name: "star4d",
            program: star4d(),
            sizes: size_sets(&["NW", "NZ", "NY", "NX"], &[&[3, 4, 5, 33], &[2, 3, 9, 7]]),
            steps: 2,
        },
    ]
}

/// The plans every example is tested under: each strategy with a warp-wide block, a small
/// block with two elements per thread, a 3D block (tiled), and concurrent streaming chunks.
pub fn test_plans() -> Vec<GpuPlan> {
    let plan = |strategy, block, elements, stream_chunk| GpuPlan {
        block,
        elements_per_thread: elements,
        stream_chunk,
        ..GpuPlan::new(strategy)
    };
    vec![
        plan(GpuStrategy::Naive, [32, 8, 1], 1, None),
        plan(GpuStrategy::Naive, [8, 4, 1], 2, None),
        plan(GpuStrategy::Tiled, [32, 8, 1], 1, None),
        plan(GpuStrategy::Tiled, [8, 4, 2], 2, None),
        plan(GpuStrategy::Streaming, [32, 8, 1], 1, None),
        plan(GpuStrategy::Streaming, [8, 4, 1], 2, Some(3)),
    ]
}

/// Every (program, sizes, plan) combination the GPU runtimes should run against the reference.
pub fn test_matrix() -> Vec<TestCase> {
    let mut cases = Vec::new();
    for example in example_programs() {
        for params in &example.sizes {
            for plan in test_plans() {
                cases.push(TestCase {
                    program: example.name,
                    params: params.clone(),
                    plan,
                    steps: example.steps,
                });
            }
        }
    }
    cases
}
