//! User strings never become code: program, stage, field and reduction names (built through
//! the Rust API) and file names holding a comment terminator, newlines, a backslash, NUL,
//! terminal escapes and non-ASCII reach the generated C, OpenCL and CUDA only escaped, and the
//! programs run on the reference, CPU and OpenCL (PoCL) backends with the same fields and
//! reductions, bitwise (exact mode).
#![cfg(all(feature = "opencl", feature = "cuda"))]

mod common;

use std::sync::Arc;

use tessera_analysis::BoundProgram;
use tessera_ir::builder::ProgramBuilder;
use tessera_ir::{BinaryOp, Border, Constant, ReduceOp, ScalarType, SizeExpr};
use tessera_plan::{Arithmetic, DeviceSelection, PlanRequest};
use tessera_testkit::Subject;

/// A name that closes a comment, starts a preprocessor line, splices lines and escapes the
/// terminal; the program built from it must not let any of it become code.
const HOSTILE: &str = "p */ int broken; /* \n#error hostile\\\n// ??/\0 é\u{1b}[31m";

/// The pieces of [`HOSTILE`] that must not appear as they are in generated source.
const RAW_PIECES: &[&str] = &["*/ int broken", "\n#error", "\\\n", "\0", "é", "\u{1b}"];

/// A 2D five-point average of field `u` into `v` (both named after `name`), with an in-stage
/// and an after-step reduction, in a program, stage and reductions named after `name`.
fn hostile_program(name: &str) -> BoundProgram {
    let mut b = ProgramBuilder::new(name);
    b.grid(vec![SizeExpr::Const(13), SizeExpr::Const(19)]);
    b.default_steps(3);
    let u = b.field(format!("{name} u"), ScalarType::F32);
    b.set_border(u, Border::Clamp);
    let v = b.field(format!("{name} v"), ScalarType::F64);
    let mut stage = b.stage(format!("{name} stage"));
    let mut sum = b.read(u, &[0, 0]);
    for offset in [[-1, 0], [1, 0], [0, -1], [0, 1]] {
        let read = b.read(u, &offset);
        sum = b.binary(BinaryOp::Add, sum, read);
    }
    let fifth = b.lit(Constant::Float(0.2));
    let average = b.binary(BinaryOp::Mul, fifth, sum);
    stage.assign(u, average);
    let old = b.read(u, &[0, 0]);
    stage.assign(v, old);
    stage.reduce(format!("{name} in stage"), ReduceOp::Max, old, 1);
    b.finish_stage(stage);
    let total = b.read(v, &[0, 0]);
    b.reduce_after_step(format!("{name} total"), ReduceOp::Sum, total, None, 1);
    let checked = tessera_analysis::check(&b.finish()).expect("the program checks");
    tessera_analysis::bind(Arc::new(checked), &[]).expect("the program binds")
}

/// Asserts the source of each backend has no raw piece of the hostile name and no character
/// outside printable ASCII, newlines and tabs.
fn assert_sources_escaped(bound: &BoundProgram) {
    for name in ["cpu", "opencl", "cuda"] {
        let backend = tessera::backends::backend(name).expect("the backend is built");
        let plan = backend
            .plan(bound, &exact(DeviceSelection::Typical))
            .unwrap_or_else(|e| panic!("{name}: plan: {e}"));
        let source = backend
            .emit(bound, &plan, &DeviceSelection::Typical)
            .unwrap_or_else(|e| panic!("{name}: emit: {e}"))
            .text;
        for piece in RAW_PIECES {
            assert!(
                !source.contains(piece),
                "{name}: {piece:?} raw in:\n{source}"
            );
        }
        let odd = source
            .chars()
            .find(|&c| !(c == '\n' || c == '\t' || (' '..='~').contains(&c)));
        assert_eq!(odd, None, "{name}: a character outside printable ASCII");
    }
}

/// Exact arithmetic on `device`, every other decision the backend's.
fn exact(device: DeviceSelection) -> PlanRequest {
    PlanRequest {
        arithmetic: Arithmetic::Exact,
        device,
        ..PlanRequest::default()
    }
}

/// Runs `bound` on the CPU and OpenCL backends against the reference, bitwise.
fn assert_runs_like_the_reference(bound: BoundProgram) {
    let subject = Subject::new("hostile names", bound, 5, 3);
    for name in ["cpu", "opencl"] {
        let backend = tessera::backends::backend(name).expect("the backend is built");
        let plan = (subject.plan(backend.as_ref(), &exact(DeviceSelection::Default))).unwrap();
        subject.check_exact(backend.as_ref(), &plan).unwrap();
    }
}

#[test]
fn names_from_the_rust_api_reach_generated_source_escaped() {
    let bound = hostile_program(HOSTILE);
    assert_sources_escaped(&bound);
    assert_runs_like_the_reference(bound);
}

#[test]
fn a_file_name_reaches_generated_source_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("out*");
    std::fs::create_dir(&folder).unwrap();
    // The file's stem names the program; a path cannot hold NUL, and `/` separates folders.
    let path = folder.join("p*\\ int broken; \n#error hostile\\\n ??\u{1b}[31mé.tess");
    std::fs::write(
        &path,
        "grid [13, 19];\nsteps 3;\nfield u: f32 border clamp;\nstage s { u = 0.2 * (u + u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1]); }\n",
    )
    .unwrap();
    let session = tessera::Session::load(&path, &[]).expect("the program loads");
    assert!(session.name().contains("\n#error"), "{}", session.name());
    assert_sources_escaped(session.bound());
    assert_runs_like_the_reference(session.bound().clone());
    let emitted = common::tessera(
        dir.path(),
        &["emit", path.to_str().unwrap(), "--backend", "cpu"],
    );
    assert_eq!(
        emitted.status.code(),
        Some(0),
        "{}",
        common::stderr(&emitted)
    );
    let printed = common::stdout(&emitted);
    assert!(
        printed
            .starts_with("/* Tessera CPU kernel for program `p*\\u{5c} int broken; \\u{a}#error"),
        "{printed}"
    );
    assert!(
        !RAW_PIECES.iter().any(|piece| printed.contains(piece)),
        "{printed}"
    );
}
