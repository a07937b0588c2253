//! Times the CPU backend's strategies on the benchmark stencils at `cpu` sizes.
//!
//! `cargo run --release -p tessera-cpu --example cpu_bench -- [NAME ...]` prints, per program
//! and strategy, GCells/s, the effective bandwidth (bytes moved by a naive sweep per point and
//! step) and the fraction of the triad roofline.

use std::sync::Arc;
use std::time::Instant;

use tessera_analysis::{bind, check};
use tessera_cpu::CpuBackend;
use tessera_ir::builder::ProgramBuilder;
use tessera_ir::{BinaryOp, Constant, Range, Region, ScalarType, SizeExpr, SizeOp, Span};
use tessera_runtime::{Backend, Buffer, FieldSet, RunOptions};

struct Bench {
    name: &'static str,
    ty: ScalarType,
    extent: usize,
    dims: usize,
    steps: u64,
    /// `(offset, weight)`; the sum is divided by `divisor`.
    terms: Vec<(Vec<i32>, f64)>,
    divisor: f64,
}

fn benches() -> Vec<Bench> {
    let j2d5 = vec![
        (vec![-1, 0], 5.1),
        (vec![0, -1], 12.1),
        (vec![0, 0], 15.0),
        (vec![0, 1], 12.2),
        (vec![1, 0], 5.2),
    ];
    let box9: Vec<(Vec<i32>, f64)> = [7.1, 5.1, 9.2, 12.1, 15.0, 12.2, 9.1, 5.2, 7.2]
        .iter()
        .enumerate()
        .map(|(k, &w)| (vec![k as i32 / 3 - 1, k as i32 % 3 - 1], w))
        .collect();
    let g = [1.0, 4.0, 6.0, 4.0, 1.0];
    let gauss: Vec<(Vec<i32>, f64)> = (0..25)
        .map(|k| {
            (
                vec![k / 5 - 2, k % 5 - 2],
                g[(k / 5) as usize] * g[(k % 5) as usize] / 256.0,
            )
        })
        .collect();
    let mut j3d7 = vec![(vec![0, 0, 0], 0.4)];
    for a in 0..3 {
        for s in [-1, 1] {
            let mut o = vec![0, 0, 0];
            o[a] = s;
            j3d7.push((o, 0.1));
        }
    }
    let mut j3d27 = Vec::new();
    for dz in -1..=1 {
        for dy in -1..=1 {
            for dx in -1..=1 {
                let w = if dy == 0 && dx == 0 {
                    1.5 + 0.01 * f64::from(dz + 1)
                } else {
                    0.5 + 0.05 * f64::from(3 * (dy + 1) + dx + 1) + 0.01 * f64::from(dz + 1)
                };
                j3d27.push((vec![dz, dy, dx], w));
            }
        }
    }
    let b = |name, ty, extent, dims, steps, terms: &Vec<(Vec<i32>, f64)>, divisor| Bench {
        name,
        ty,
        extent,
        dims,
        steps,
        terms: terms.clone(),
        divisor,
    };
    vec![
        b("j2d5pt-f32", ScalarType::F32, 4096, 2, 100, &j2d5, 49.6),
        b("j2d5pt-f64", ScalarType::F64, 4096, 2, 100, &j2d5, 49.6),
        b("j2d9pt-box-f32", ScalarType::F32, 4096, 2, 100, &box9, 82.2),
        b("gaussian2d-f32", ScalarType::F32, 4096, 2, 20, &gauss, 1.0),
        b("j3d7pt-f32", ScalarType::F32, 256, 3, 50, &j3d7, 1.0),
        b("j3d7pt-f64", ScalarType::F64, 256, 3, 50, &j3d7, 1.0),
        b("j3d27pt-f32", ScalarType::F32, 256, 3, 20, &j3d27, 21.57),
    ]
}

fn program(bench: &Bench) -> tessera_ir::Program {
    let mut b = ProgramBuilder::new(bench.name);
    let n = b.param("N", ScalarType::I64, Constant::Int(bench.extent as i64));
    b.grid(vec![SizeExpr::Param(n); bench.dims]);
    let a = b.field("A", bench.ty);
    let r = bench
        .terms
        .iter()
        .flat_map(|(o, _)| o.iter().map(|v| v.unsigned_abs()))
        .max()
        .unwrap_or(0) as i64;
    let mut sum = None;
    for (offset, w) in &bench.terms {
        let w = b.lit(Constant::Float(*w));
        let read = b.read(a, offset);
        let term = b.binary(BinaryOp::Mul, w, read);
        sum = Some(match sum {
            None => term,
            Some(s) => b.binary(BinaryOp::Add, s, term),
        });
    }
    let mut value = sum.expect("terms");
    if bench.divisor != 1.0 {
        let d = b.lit(Constant::Float(bench.divisor));
        value = b.binary(BinaryOp::Div, value, d);
    }
    let range = Range::Span {
        lo: Some(SizeExpr::Const(r)),
        hi: Some(SizeExpr::Binary(
            SizeOp::Sub,
            Box::new(SizeExpr::Param(n)),
            Box::new(SizeExpr::Const(r)),
        )),
        stride: 1,
    };
    let mut s = b.stage("update");
    s.over(Region {
        ranges: vec![range; bench.dims],
        span: Span::NONE,
    });
    s.assign(a, value);
    b.finish_stage(s);
    b.finish()
}

fn main() {
    let filter: Vec<String> = std::env::args().skip(1).collect();
    let strategies: Vec<Option<&str>> = match std::env::var("STRATEGIES") {
        Ok(list) => list
            .split(',')
            .map(|s| {
                if s == "auto" {
                    None
                } else {
                    Some(Box::leak(s.to_string().into_boxed_str()) as &str)
                }
            })
            .collect(),
        Err(_) => vec![Some("naive"), Some("parallel"), None],
    };
    let exact = std::env::var("EXACT").is_ok();
    let bandwidth = tessera_jit::measure_bandwidth(None).expect("bandwidth");
    println!(
        "triad bandwidth: {:.1} GB/s (copy {:.1} GB/s), {} threads",
        bandwidth.triad_gb_s, bandwidth.copy_gb_s, bandwidth.threads
    );
    println!("| program | strategy | plan | GCells/s | effective GB/s | fraction of roofline |");
    println!("| --- | --- | --- | --- | --- | --- |");
    let backend = CpuBackend::default();
    for bench in benches()
        .into_iter()
        .filter(|b| filter.is_empty() || filter.iter().any(|f| b.name.contains(f.as_str())))
    {
        let checked = Arc::new(check(&program(&bench)).expect("checks"));
        let bound = bind(checked, &[]).expect("binds");
        let bytes = 2.0 * bench.ty.size_bytes() as f64;
        for strategy in &strategies {
            let options = RunOptions {
                strategy: strategy.map(str::to_string),
                exact,
                tile: std::env::var("TILE")
                    .ok()
                    .map(|t| t.split('x').map(|v| v.parse().expect("tile")).collect()),
                time_tile: std::env::var("T").ok().map(|t| t.parse().expect("T")),
                ..RunOptions::default()
            };
            let mut exe = backend.prepare(&bound, &options).expect("prepares");
            let mut fields = FieldSet::zeros(&bound);
            for buffer in &mut fields.buffers {
                match buffer {
                    Buffer::F32(v) => v
                        .iter_mut()
                        .enumerate()
                        .for_each(|(i, x)| *x = (i % 1013) as f32 / 1013.0),
                    Buffer::F64(v) => v
                        .iter_mut()
                        .enumerate()
                        .for_each(|(i, x)| *x = (i % 1013) as f64 / 1013.0),
                    _ => {}
                }
            }
            exe.run(&mut fields, 0, 2, &mut ()).expect("warm-up");
            let start = Instant::now();
            let report = exe.run(&mut fields, 0, bench.steps, &mut ()).expect("runs");
            let seconds = start.elapsed().as_secs_f64();
            let cells = bound.updated_points() as f64 * bench.steps as f64;
            let gcells = cells / seconds / 1e9;
            let gbs = gcells * bytes;
            println!(
                "| {} | {} | {} | {gcells:.2} | {gbs:.1} | {:.2} |",
                bench.name,
                strategy.unwrap_or("auto"),
                report.plan,
                gbs / bandwidth.triad_gb_s
            );
        }
    }
}
