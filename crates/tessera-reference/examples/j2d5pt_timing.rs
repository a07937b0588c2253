//! Times the reference interpreter on a j2d5pt-like f32 stencil: 256x256 points, 100 steps.
//!
//! `cargo run --release -p tessera-reference --example j2d5pt_timing [N] [STEPS]`

use std::sync::Arc;
use std::time::Instant;

use tessera_analysis::{bind, check};
use tessera_ir::builder::ProgramBuilder;
use tessera_ir::{BinaryOp, Border, Constant, ScalarType, SizeExpr};
use tessera_reference::{initial_fields, run_exact};

fn main() {
    let mut args = std::env::args()
        .skip(1)
        .map(|a| a.parse::<u64>().expect("numeric arguments"));
    let n = args.next().unwrap_or(256);
    let steps = args.next().unwrap_or(100);
    let mut b = ProgramBuilder::new("j2d5pt");
    b.grid(vec![SizeExpr::Const(n as i64), SizeExpr::Const(n as i64)]);
    let u = b.field("u", ScalarType::F32);
    b.set_border(u, Border::Clamp);
    let (x, y) = (b.coord(1), b.coord(0));
    let xy = b.binary(BinaryOp::Mul, x, y);
    let init = b.cast(ScalarType::F32, xy);
    b.set_init(u, init);
    let mut s = b.stage("j2d5pt");
    let weights = [
        ([-1, 0], 0.1),
        ([0, -1], 0.2),
        ([0, 0], 0.3),
        ([0, 1], 0.2),
        ([1, 0], 0.1),
    ];
    let mut acc = b.lit(Constant::Float(0.0));
    for (offset, w) in weights {
        let r = b.read(u, &offset);
        let c = b.lit(Constant::Float(w));
        let term = b.binary(BinaryOp::Mul, c, r);
        acc = b.binary(BinaryOp::Add, acc, term);
    }
    let norm = b.lit(Constant::Float(1.1));
    let value = b.binary(BinaryOp::Div, acc, norm);
    s.assign(u, value);
    b.finish_stage(s);
    let checked = check(&b.finish()).expect("the program checks");
    let bound = bind(Arc::new(checked), &[]).expect("the program binds");
    let mut fields = initial_fields(&bound, &[]).expect("fields fit in memory");
    let start = Instant::now();
    let report = run_exact(&bound, &mut fields, 0, steps).expect("the run succeeds");
    let seconds = start.elapsed().as_secs_f64();
    let cells = (n * n * steps) as f64;
    println!(
        "{n}x{n}, {} steps: {seconds:.3} s ({:.1} Mcells/s), threads: {}",
        report.steps,
        cells / seconds / 1e6,
        rayon::current_num_threads()
    );
}
