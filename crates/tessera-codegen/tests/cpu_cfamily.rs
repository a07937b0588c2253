//! The C-family printer: literal spelling, per-dialect names, and snapshots of printed stages.

use tessera_analysis::{CheckedProgram, check};
use tessera_codegen::cfamily::{Dialect, MathLibrary, ReadRenderer, print_expr, print_stage};
use tessera_ir::builder::ProgramBuilder;
use tessera_ir::{
    BinaryOp, Border, Constant, Field, Id, Local, MathFn, Param, ReduceOp, Reduction, ScalarType,
    SizeExpr, UnaryOp,
};

/// Spells leaves plainly: `A[dy,dx]`, `l0`, `x1`, `t`, `p0`, `r0`.
struct Plain;

impl ReadRenderer for Plain {
    fn read(&mut self, field: Id<Field>, offset: &[i32]) -> String {
        let offsets: Vec<String> = offset.iter().map(i32::to_string).collect();
        format!("f{}[{}]", field.index(), offsets.join(","))
    }
    fn local(&mut self, local: Id<Local>) -> String {
        format!("l{}", local.index())
    }
    fn coord(&mut self, axis: usize) -> String {
        format!("x{axis}")
    }
    fn step(&mut self) -> String {
        "t".into()
    }
    fn param(&mut self, param: Id<Param>) -> String {
        format!("p{}", param.index())
    }
    fn reduction_value(&mut self, reduction: Id<Reduction>) -> String {
        format!("r{}", reduction.index())
    }
}

/// A 2D program exercising every operator class: f32 arithmetic with literals, math calls,
/// integer (i32, u8) wrapping operations, saturating casts, select, and an in-stage reduction.
fn sampler() -> CheckedProgram {
    let mut b = ProgramBuilder::new("sampler");
    let n = b.param("N", ScalarType::I64, Constant::Int(8));
    let alpha = b.param("alpha", ScalarType::F32, Constant::Float(0.1));
    b.grid(vec![SizeExpr::Param(n), SizeExpr::Param(n)]);
    let a = b.field("A", ScalarType::F32);
    let k = b.field("K", ScalarType::I32);
    let m = b.field("M", ScalarType::U8);
    for f in [a, k, m] {
        b.set_border(f, Border::Clamp);
    }
    let mut s = b.stage("mix");
    // let lap = A[-1,0] + A[0,1] - 4 * A;   (f32, literal 4 typed f32)
    let up = b.read(a, &[-1, 0]);
    let right = b.read(a, &[0, 1]);
    let here = b.read(a, &[0, 0]);
    let sum = b.binary(BinaryOp::Add, up, right);
    let four = b.lit(Constant::Int(4));
    let scaled = b.binary(BinaryOp::Mul, four, here);
    let lap = b.binary(BinaryOp::Sub, sum, scaled);
    let lap = b.bind(&mut s, "lap", lap);
    // A = A + alpha * lap / 49.6 + rsqrt(1e-6 + abs(lap)) + min(A, atan2(lap, 0.3)) % 2.5
    let p_alpha = b.param_value(alpha);
    let weighted = b.binary(BinaryOp::Mul, p_alpha, lap);
    let c = b.lit(Constant::Float(49.6));
    let weighted = b.binary(BinaryOp::Div, weighted, c);
    let tiny = b.lit(Constant::Float(1e-6));
    let abs = b.call(MathFn::Abs, vec![lap]);
    let arg = b.binary(BinaryOp::Add, tiny, abs);
    let rs = b.call(MathFn::Rsqrt, vec![arg]);
    let here2 = b.read(a, &[0, 0]);
    let point3 = b.lit(Constant::Float(0.3));
    let angle = b.call(MathFn::Atan2, vec![lap, point3]);
    let low = b.call(MathFn::Min, vec![here2, angle]);
    let two_half = b.lit(Constant::Float(2.5));
    let rem = b.binary(BinaryOp::Rem, low, two_half);
    let total = b.binary(BinaryOp::Add, here2, weighted);
    let total = b.binary(BinaryOp::Add, total, rs);
    let total = b.binary(BinaryOp::Add, total, rem);
    s.assign(a, total);
    // K = K / K[0,1] % 7 - (-K) + i32(A * 1e10) + i32(x)
    let kk = b.read(k, &[0, 0]);
    let kr = b.read(k, &[0, 1]);
    let div = b.binary(BinaryOp::Div, kk, kr);
    let seven = b.lit(Constant::Int(7));
    let rem = b.binary(BinaryOp::Rem, div, seven);
    let neg = b.unary(UnaryOp::Neg, kk);
    let diff = b.binary(BinaryOp::Sub, rem, neg);
    let big = b.lit(Constant::Float(1e10));
    let here3 = b.read(a, &[0, 0]);
    let product = b.binary(BinaryOp::Mul, here3, big);
    let as_int = b.cast(ScalarType::I32, product);
    let x = b.coord(1);
    let x = b.cast(ScalarType::I32, x);
    let sum = b.binary(BinaryOp::Add, diff, as_int);
    let sum = b.binary(BinaryOp::Add, sum, x);
    s.assign(k, sum);
    // M = (M[1,1] == 3 && t > 2) ? M + 200 : u8(0)
    let mm = b.read(m, &[1, 1]);
    let three = b.lit(Constant::Int(3));
    let is3 = b.binary(BinaryOp::Eq, mm, three);
    let t = b.step();
    let two = b.lit(Constant::Int(2));
    let late = b.binary(BinaryOp::Gt, t, two);
    let both = b.binary(BinaryOp::And, is3, late);
    let m0 = b.read(m, &[0, 0]);
    let lots = b.lit(Constant::Int(200));
    let bumped = b.binary(BinaryOp::Add, m0, lots);
    let zero = b.lit(Constant::Int(0));
    let zero = b.cast(ScalarType::U8, zero);
    let chosen = b.select(both, bumped, zero);
    s.assign(m, chosen);
    s.reduce("energy", ReduceOp::Sum, lap, 2);
    b.finish_stage(s);
    check(&b.finish()).expect("the sampler program checks")
}

fn printed_stage(dialect: Dialect) -> String {
    let checked = sampler();
    let stage = checked.program().stages.ids().next().unwrap();
    let printed = print_stage(dialect, MathLibrary::Native, &checked, stage, &mut Plain);
    let mut out = printed.lets.join("\n");
    for (field, value) in printed.outputs {
        out.push_str(&format!(
            "\n{} = {value};",
            checked.program().fields[field].name
        ));
    }
    for (reduction, value) in printed.reductions {
        out.push_str(&format!(
            "\nreduce {} += {value};",
            checked.program().reductions[reduction].name
        ));
    }
    out
}

#[test]
fn stage_in_c() {
    insta::assert_snapshot!(printed_stage(Dialect::C));
}

#[test]
fn stage_in_cuda() {
    insta::assert_snapshot!(printed_stage(Dialect::Cuda));
}

#[test]
fn stage_in_opencl() {
    insta::assert_snapshot!(printed_stage(Dialect::OpenCl));
}

#[test]
fn preamble_in_c() {
    insta::assert_snapshot!(Dialect::C.preamble());
}

#[test]
fn preamble_in_opencl() {
    insta::assert_snapshot!(Dialect::OpenCl.preamble());
}

#[test]
fn preamble_in_cuda() {
    insta::assert_snapshot!(Dialect::Cuda.preamble());
}

#[test]
fn float_literals_round_trip_bitwise() {
    let values = [
        0.1,
        1.0 / 3.0,
        49.6,
        1e-6,
        16777217.0,
        3.4028235e38,
        1e-45,
        2.5e-310,
        -0.0,
        123456789.125,
    ];
    for v in values {
        let c = Dialect::C.literal(Constant::Float(v), ScalarType::F64);
        assert_eq!(c.parse::<f64>().unwrap().to_bits(), v.to_bits(), "{c}");
        let c = Dialect::C.literal(Constant::Float(v), ScalarType::F32);
        let text = c.strip_suffix('f').expect("f32 literals end in f");
        assert_eq!(
            text.parse::<f32>().unwrap().to_bits(),
            (v as f32).to_bits(),
            "{c}"
        );
    }
    assert_eq!(
        Dialect::C.literal(Constant::Float(1e39), ScalarType::F32),
        "ts_f32_from_bits(0x7f800000u)"
    );
    assert_eq!(
        Dialect::C.literal(Constant::Float(f64::NEG_INFINITY), ScalarType::F64),
        "ts_f64_from_bits(0xfff0000000000000ull)"
    );
}

#[test]
fn integer_literals_spell_the_extremes() {
    assert_eq!(
        Dialect::C.literal(Constant::Int(i64::from(i32::MIN)), ScalarType::I32),
        "((int32_t)(-2147483648))"
    );
    assert_eq!(
        Dialect::C.literal(Constant::Int(i64::MIN), ScalarType::I64),
        "((int64_t)(-9223372036854775807LL - 1))"
    );
    assert_eq!(
        Dialect::OpenCl.literal(Constant::Int(7), ScalarType::I64),
        "((long)7L)"
    );
    assert_eq!(
        Dialect::C.literal(Constant::Int(255), ScalarType::U8),
        "((uint8_t)255)"
    );
    assert_eq!(
        Dialect::C.literal(Constant::Bool(true), ScalarType::Bool),
        "true"
    );
}

#[test]
fn names_follow_the_dialect() {
    assert_eq!(
        Dialect::C.float_function(MathFn::Min, ScalarType::F32),
        "fminf"
    );
    assert_eq!(
        Dialect::Cuda.float_function(MathFn::Floor, ScalarType::F32),
        "floorf"
    );
    assert_eq!(
        Dialect::C.float_function(MathFn::Pow, ScalarType::F64),
        "pow"
    );
    assert_eq!(
        Dialect::OpenCl.float_function(MathFn::Abs, ScalarType::F32),
        "fabs"
    );
    assert_eq!(Dialect::OpenCl.scalar_type(ScalarType::U8), "uchar");
    assert_eq!(Dialect::Cuda.scalar_type(ScalarType::I64), "int64_t");
}

#[test]
fn reduction_value_prints_without_a_stage() {
    let checked = sampler();
    let reduction = checked.program().reductions.ids().next().unwrap();
    let value = checked.program().reductions[reduction].value;
    let printed = print_expr(Dialect::C, MathLibrary::Exact, &checked, value, &mut Plain);
    assert_eq!(printed, "l0");
}

/// `(A[0,-2] + 2*A[0,-1] + A + A[0,1] + A[0,2]) / 4` on `ty`, and `B = B / 3 - 0` (a division
/// by a literal whose reciprocal is not exact, outside a sum).
fn five_point_sum(ty: ScalarType) -> CheckedProgram {
    let mut b = ProgramBuilder::new("sum");
    let n = b.param("N", ScalarType::I64, Constant::Int(8));
    b.grid(vec![SizeExpr::Param(n), SizeExpr::Param(n)]);
    let a = b.field("A", ty);
    b.set_border(a, Border::Clamp);
    let mut s = b.stage("s");
    let mut sum = b.read(a, &[0, -2]);
    for (dx, w) in [(-1, 2.0), (0, 1.0), (1, 1.0), (2, 1.0)] {
        let read = b.read(a, &[0, dx]);
        let term = if w == 1.0 {
            read
        } else {
            let w = b.lit(Constant::Float(w));
            b.binary(BinaryOp::Mul, w, read)
        };
        sum = b.binary(BinaryOp::Add, sum, term);
    }
    let four = b.lit(Constant::Float(4.0));
    let value = b.binary(BinaryOp::Div, sum, four);
    s.assign(a, value);
    b.finish_stage(s);
    check(&b.finish()).expect("checks")
}

#[test]
fn relaxed_printing_balances_sums_and_multiplies_by_reciprocals() {
    use tessera_codegen::cfamily::print_stage_relaxed;
    let checked = five_point_sum(ScalarType::F32);
    let stage = checked.program().stages.ids().next().unwrap();
    let exact = print_stage(Dialect::C, MathLibrary::Exact, &checked, stage, &mut Plain);
    assert_eq!(
        exact.outputs[0].1,
        "(((((f0[0,-2] + (2.0f * f0[0,-1])) + f0[0,0]) + f0[0,1]) + f0[0,2]) / 4.0f)",
        "exact mode prints the sum as written"
    );
    let relaxed = print_stage_relaxed(Dialect::C, &checked, stage, &mut Plain);
    assert_eq!(
        relaxed.outputs[0].1,
        "(((f0[0,-2] + (2.0f * f0[0,-1])) + (f0[0,0] + (f0[0,1] + f0[0,2]))) * 0.25f)"
    );
    let checked = five_point_sum(ScalarType::F64);
    let relaxed = print_stage_relaxed(Dialect::C, &checked, stage, &mut Plain);
    assert!(relaxed.outputs[0].1.ends_with(" * 0.25)"));
}

#[test]
fn exact_math_calls_the_library_and_native_math_the_targets() {
    let checked = sampler();
    let stage = checked.program().stages.ids().next().unwrap();
    for dialect in [Dialect::C, Dialect::Cuda, Dialect::OpenCl] {
        let exact = print_stage(dialect, MathLibrary::Exact, &checked, stage, &mut Plain);
        let native = print_stage(dialect, MathLibrary::Native, &checked, stage, &mut Plain);
        let (exact, native) = (format!("{exact:?}"), format!("{native:?}"));
        assert!(exact.contains("ts_atan2_f32(") && !native.contains("ts_atan2_f32("));
        assert!(
            exact.contains("sqrt"),
            "rsqrt is exact IEEE arithmetic in both"
        );
    }
}
