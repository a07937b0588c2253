//! The C-family printer shared by the C, CUDA and OpenCL back ends.
//!
//! It prints expressions of a [`CheckedProgram`] so that, compiled without floating-point
//! contraction or fast-math, they compute bitwise what the reference backend computes (THE
//! semantics, see `docs/language.md`):
//!
//! - every node is evaluated in its elaborated type and printed fully parenthesised, with every
//!   conversion explicit;
//! - integer `+ - *` and negation wrap (computed on unsigned types), integer `/` and `%` by zero
//!   give 0 and `MIN / -1` wraps: the helpers of [`Dialect::preamble`] do this;
//! - float-to-integer conversions truncate and saturate, NaN gives 0 (Rust `as`);
//! - float literals are spelled so that they round-trip bitwise (`f32` values with an `f`
//!   suffix, non-finite values from their bit patterns);
//! - `min`/`max` on floats are `fmin`/`fmax`, float `%` is `fmod`, `rsqrt(x)` is `1 / sqrt(x)`;
//! - with [`MathLibrary::Exact`], `exp log pow sin cos atan2` call the exact math library
//!   (`ts_exp_f32`, ...) that [`crate::exact_math`] prints after the preamble.
//!
//! How a field read, a local, a coordinate, `t`, a parameter or a reduction value is spelled
//! depends on the code generation strategy; it supplies a [`ReadRenderer`].

use std::fmt::Write as _;

use tessera_analysis::{CheckedProgram, SumTerm};
use tessera_ir::half::storage_bits_from_f32;
use tessera_ir::{
    BinaryOp, Constant, ExprId, ExprKind, Field, Id, Local, MathFn, Param, Program, Reduction,
    ScalarType, Scan, Stage, Statement, Table, UnaryOp,
};

/// The target language of the printer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// C11 (the CPU backend; compiled by the system C compiler).
    C,
    /// CUDA C++ device code (compiled by NVRTC, no standard headers).
    Cuda,
    /// OpenCL C 1.2.
    OpenCl,
}

/// Which implementation the printed calls of `exp log pow sin cos atan2` use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MathLibrary {
    /// The target's own functions (`expf`, OpenCL's and CUDA's `exp`): fast, but their last
    /// bits differ between targets.
    Native,
    /// Tessera's exact math (`ts_exp_f32`, ...; [`crate::exact_math`]): the reference's bits
    /// on every target.
    Exact,
}

impl MathLibrary {
    /// The library of a mode: exact math in exact mode, the native one otherwise.
    pub fn for_exact_mode(exact: bool) -> Self {
        if exact {
            MathLibrary::Exact
        } else {
            MathLibrary::Native
        }
    }
}

/// The name of input table `table`'s pointer in generated code (`tb0`).
pub fn table_pointer(table: Id<Table>) -> String {
    format!("tb{}", table.index())
}

/// Spells the leaves of an expression that depend on the code generation strategy.
pub trait ReadRenderer {
    /// A read of `field` at `offset` (slowest axis first) from the current point.
    fn read(&mut self, field: Id<Field>, offset: &[i32]) -> String;
    /// A `let` binding of the stage being printed.
    fn local(&mut self, local: Id<Local>) -> String;
    /// The current point's index along `axis` (0 = slowest), as an `int64_t` expression.
    fn coord(&mut self, axis: usize) -> String;
    /// The step counter `t`, as an `int64_t` expression.
    fn step(&mut self) -> String;
    /// A parameter's value, in the parameter's type.
    fn param(&mut self, param: Id<Param>) -> String;
    /// `table[t + offset]`: the table's pointer is [`table_pointer`], in scope wherever a stage
    /// reading it is printed.
    fn table(&mut self, table: Id<Table>, offset: i64) -> String {
        let step = self.step();
        match offset {
            0 => format!("{}[{step}]", table_pointer(table)),
            k => format!("{}[({step}) + {k}]", table_pointer(table)),
        }
    }
    /// The latest value of a reduction (only in `until` conditions), as a `double` expression.
    fn reduction_value(&mut self, reduction: Id<Reduction>) -> String;
    /// The running value of the scan writing `field` ([`scan_accumulator`]), declared by
    /// [`scan_accumulators`] before each line.
    fn scan_accumulator(&mut self, field: Id<Field>) -> String {
        scan_accumulator(field)
    }
    /// The type a `let` of the scalar type `scalar` is declared with (vector bodies override
    /// it).
    fn let_type(&self, scalar: &'static str) -> String {
        scalar.to_string()
    }
    /// `value`, printed from an expression of literals and parameters only (the same at every
    /// point), as a `let` or a stored value: vector bodies broadcast it to every lane, where a
    /// scalar cannot initialize a vector.
    fn uniform(&self, value: String) -> String {
        value
    }
    /// The spelling of an expression the caller computes itself (a sum chain run as a term
    /// loop), or `None` to print the expression.
    fn computed(&mut self, _expr: ExprId) -> Option<String> {
        None
    }
}

impl Dialect {
    /// A chain of float additions as non-exact mode sums it: on GPUs left to right, where
    /// products contract into one multiply and then fused multiply-adds (the fewest
    /// instructions; other warps hide the chain's latency); in C as a balanced tree, whose
    /// short dependency chain suits vector lanes (see [`balanced_sum`]).
    pub fn relaxed_sum(self, terms: &[String]) -> String {
        match self {
            Dialect::C => balanced_sum(terms),
            Dialect::Cuda | Dialect::OpenCl => chained_sum(terms),
        }
    }

    /// The name of a scalar type (`int32_t` in C and CUDA, `int` in OpenCL); `f16` and `bf16`
    /// values are their bit patterns, in the 16-bit unsigned type.
    pub fn scalar_type(self, ty: ScalarType) -> &'static str {
        match (self, ty) {
            (_, ScalarType::Bool) => "bool",
            (_, ScalarType::F32) => "float",
            (_, ScalarType::F64) => "double",
            (Dialect::OpenCl, ScalarType::F16 | ScalarType::Bf16) => "ushort",
            (_, ScalarType::F16 | ScalarType::Bf16) => "uint16_t",
            (Dialect::OpenCl, ScalarType::U8) => "uchar",
            (Dialect::OpenCl, ScalarType::I32) => "int",
            (Dialect::OpenCl, ScalarType::I64) => "long",
            (_, ScalarType::U8) => "uint8_t",
            (_, ScalarType::I32) => "int32_t",
            (_, ScalarType::I64) => "int64_t",
        }
    }

    /// The unsigned type of the same width as an integer type (wrapping arithmetic is done in it).
    pub(crate) fn unsigned_type(self, ty: ScalarType) -> &'static str {
        match (self, ty) {
            (Dialect::OpenCl, ScalarType::U8) => "uchar",
            (Dialect::OpenCl, ScalarType::I32) => "uint",
            (Dialect::OpenCl, ScalarType::I64) => "ulong",
            (_, ScalarType::U8) => "uint8_t",
            (_, ScalarType::I32) => "uint32_t",
            (_, ScalarType::I64) => "uint64_t",
            _ => unreachable!("unsigned_type of a non-integer type"),
        }
    }

    /// The name of a one- or two-argument math function on floats of type `ty` (`sqrtf`,
    /// `fmin`, ...). OpenCL names are overloaded; C and CUDA use the `f` suffix for `f32`.
    /// `rsqrt` is not a library call (it is printed as `1 / sqrt(x)`).
    pub fn float_function(self, function: MathFn, ty: ScalarType) -> &'static str {
        let base = match function {
            MathFn::Sqrt | MathFn::Rsqrt => "sqrt",
            MathFn::Exp => "exp",
            MathFn::Log => "log",
            MathFn::Pow => "pow",
            MathFn::Sin => "sin",
            MathFn::Cos => "cos",
            MathFn::Atan2 => "atan2",
            MathFn::Abs => "fabs",
            MathFn::Min => "fmin",
            MathFn::Max => "fmax",
            MathFn::Floor => "floor",
        };
        if self == Dialect::OpenCl || ty == ScalarType::F64 {
            return base;
        }
        match base {
            "sqrt" => "sqrtf",
            "exp" => "expf",
            "log" => "logf",
            "pow" => "powf",
            "sin" => "sinf",
            "cos" => "cosf",
            "atan2" => "atan2f",
            "fabs" => "fabsf",
            "fmin" => "fminf",
            "fmax" => "fmaxf",
            _ => "floorf",
        }
    }

    /// The name of the float remainder function (`fmodf`/`fmod`).
    fn fmod(self, ty: ScalarType) -> &'static str {
        if self == Dialect::OpenCl || ty == ScalarType::F64 {
            "fmod"
        } else {
            "fmodf"
        }
    }

    /// A literal of type `ty`, spelled so that the compiler reads back exactly the value the
    /// reference backend uses (`f32` literals are the `f64` constant rounded once to `f32`;
    /// `f16`/`bf16` ones, border values, the bit pattern of that `f32` rounded once more).
    pub fn literal(self, value: Constant, ty: ScalarType) -> String {
        match ty {
            ScalarType::Bool => match value {
                Constant::Bool(true) => "true".into(),
                Constant::Bool(false) => "false".into(),
                other => (other.as_f64() != 0.0).to_string(),
            },
            ScalarType::F32 => {
                let v = value.as_f64() as f32;
                if v.is_finite() {
                    format!("{v:?}f")
                } else {
                    format!("ts_f32_from_bits(0x{:08x}u)", v.to_bits())
                }
            }
            ScalarType::F64 => {
                let v = value.as_f64();
                if v.is_finite() {
                    format!("{v:?}")
                } else {
                    format!("ts_f64_from_bits(0x{:016x}ull)", v.to_bits())
                }
            }
            ScalarType::F16 | ScalarType::Bf16 => {
                let bits = storage_bits_from_f32(ty, value.as_f64() as f32);
                format!("(({})0x{bits:04x}u)", self.scalar_type(ty))
            }
            ScalarType::U8 | ScalarType::I32 | ScalarType::I64 => {
                let v = match value {
                    Constant::Int(v) => v,
                    other => other.as_f64() as i64,
                };
                self.int_literal(v, ty)
            }
        }
    }

    /// An integer literal of an integer type; the most negative values are spelled as `-MAX - 1`.
    fn int_literal(self, v: i64, ty: ScalarType) -> String {
        let name = self.scalar_type(ty);
        let suffix = match (ty, self) {
            (ScalarType::I64, Dialect::OpenCl) => "L",
            (ScalarType::I64, _) => "LL",
            _ => "",
        };
        if v >= 0 {
            format!("(({name}){v}{suffix})")
        } else if v == i64::MIN {
            format!("(({name})(-9223372036854775807{suffix} - 1))")
        } else {
            format!("(({name})(-{}{suffix}))", v.unsigned_abs())
        }
    }

    /// Headers and helper functions every generated file starts with: the integer semantics
    /// (wrapping, division by zero), saturating conversions and bit casts. All helpers are
    /// `static inline` (CUDA: `__device__`) and prefixed `ts_`.
    pub fn preamble(self) -> String {
        let mut out = String::new();
        match self {
            Dialect::C => {
                // memfd_create and MAP_ANONYMOUS (the wavefront's ring buffers) under -std=c11.
                out.push_str("#define _GNU_SOURCE 1\n");
                out.push_str("#include <stdint.h>\n#include <stdbool.h>\n#include <string.h>\n#include <math.h>\n\n");
            }
            Dialect::Cuda => {
                out.push_str(
                    "typedef unsigned char uint8_t;\ntypedef int int32_t;\ntypedef unsigned int uint32_t;\n\
                     typedef long long int64_t;\ntypedef unsigned long long uint64_t;\n\n",
                );
            }
            Dialect::OpenCl => {
                out.push_str("#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#pragma OPENCL FP_CONTRACT OFF\n\n");
            }
        }
        let q = self.helper_qualifier();
        self.bit_cast_helpers(q, &mut out);
        for ty in [ScalarType::U8, ScalarType::I32, ScalarType::I64] {
            self.integer_helpers(q, ty, &mut out);
        }
        for from in [ScalarType::F32, ScalarType::F64] {
            for to in [ScalarType::U8, ScalarType::I32, ScalarType::I64] {
                self.saturating_cast_helper(q, from, to, &mut out);
            }
        }
        out
    }

    /// The qualifiers of every `ts_` helper function (`static inline`; CUDA: `__device__`).
    pub(crate) fn helper_qualifier(self) -> &'static str {
        match self {
            Dialect::Cuda => "static __device__ __forceinline__",
            Dialect::C | Dialect::OpenCl => "static inline",
        }
    }

    fn bit_cast_helpers(self, q: &str, out: &mut String) {
        for (ty, bits) in [
            (ScalarType::F32, ScalarType::I32),
            (ScalarType::F64, ScalarType::I64),
        ] {
            let (name, ubits) = (self.scalar_type(ty), self.unsigned_type(bits));
            let body = match self {
                Dialect::C => format!("{name} v; memcpy(&v, &bits, sizeof v); return v;"),
                Dialect::Cuda if ty == ScalarType::F32 => {
                    "return __int_as_float((int)bits);".into()
                }
                Dialect::Cuda => "return __longlong_as_double((long long)bits);".into(),
                Dialect::OpenCl => format!("return as_{name}(bits);"),
            };
            let _ = writeln!(
                out,
                "{q} {name} ts_{ty}_from_bits({ubits} bits) {{ {body} }}"
            );
        }
    }

    /// The qualifiers of a constant table at file scope (OpenCL: the `__constant` space).
    pub(crate) fn table_qualifier(self) -> &'static str {
        match self {
            Dialect::C => "static const",
            Dialect::Cuda => "static __device__ const",
            Dialect::OpenCl => "__constant",
        }
    }

    /// `ts_f64_to_bits`, the bit pattern of a `double` (used by the exact math).
    pub(crate) fn f64_to_bits_helper(self) -> String {
        let u64 = self.unsigned_type(ScalarType::I64);
        let body = match self {
            Dialect::C => format!("{u64} bits; memcpy(&bits, &x, sizeof bits); return bits;"),
            Dialect::Cuda => format!("return ({u64})__double_as_longlong(x);"),
            Dialect::OpenCl => format!("return as_{u64}(x);"),
        };
        format!(
            "{} {u64} ts_f64_to_bits(double x) {{ {body} }}\n",
            self.helper_qualifier()
        )
    }

    fn integer_helpers(self, q: &str, ty: ScalarType, out: &mut String) {
        let (t, u) = (self.scalar_type(ty), self.unsigned_type(ty));
        for (name, op) in [("add", "+"), ("sub", "-"), ("mul", "*")] {
            let _ = writeln!(
                out,
                "{q} {t} ts_{name}_{ty}({t} a, {t} b) {{ return ({t})(({u})a {op} ({u})b); }}"
            );
        }
        let _ = writeln!(
            out,
            "{q} {t} ts_neg_{ty}({t} a) {{ return ({t})(({u})0 - ({u})a); }}"
        );
        if ty == ScalarType::U8 {
            let _ = writeln!(
                out,
                "{q} {t} ts_div_{ty}({t} a, {t} b) {{ return b == 0 ? ({t})0 : ({t})(a / b); }}"
            );
            let _ = writeln!(
                out,
                "{q} {t} ts_rem_{ty}({t} a, {t} b) {{ return b == 0 ? ({t})0 : ({t})(a % b); }}"
            );
            let _ = writeln!(out, "{q} {t} ts_abs_{ty}({t} a) {{ return a; }}");
        } else {
            let min = self.int_literal(
                if ty == ScalarType::I32 {
                    i64::from(i32::MIN)
                } else {
                    i64::MIN
                },
                ty,
            );
            let minus_one = self.int_literal(-1, ty);
            let _ = writeln!(
                out,
                "{q} {t} ts_div_{ty}({t} a, {t} b) {{ return b == 0 ? ({t})0 : (a == {min} && b == {minus_one}) ? a : ({t})(a / b); }}"
            );
            let _ = writeln!(
                out,
                "{q} {t} ts_rem_{ty}({t} a, {t} b) {{ return (b == 0 || b == {minus_one}) ? ({t})0 : ({t})(a % b); }}"
            );
            let _ = writeln!(
                out,
                "{q} {t} ts_abs_{ty}({t} a) {{ return a < 0 ? ts_neg_{ty}(a) : a; }}"
            );
        }
    }

    fn saturating_cast_helper(self, q: &str, from: ScalarType, to: ScalarType, out: &mut String) {
        let (f, t) = (self.scalar_type(from), self.scalar_type(to));
        // Bounds are powers of two (exact in both float types): x >= 2^bits saturates high,
        // x < -2^(bits-1) (signed) or x < 0 (u8, where (-1, 0) truncates to 0 anyway) low.
        let (high, low, max, min) = match to {
            ScalarType::U8 => (
                "256.0",
                "0.0",
                self.int_literal(255, to),
                self.int_literal(0, to),
            ),
            ScalarType::I32 => (
                "2147483648.0",
                "-2147483648.0",
                self.int_literal(i64::from(i32::MAX), to),
                self.int_literal(i64::from(i32::MIN), to),
            ),
            _ => (
                "9223372036854775808.0",
                "-9223372036854775808.0",
                self.int_literal(i64::MAX, to),
                self.int_literal(i64::MIN, to),
            ),
        };
        let sfx = if from == ScalarType::F32 { "f" } else { "" };
        let _ = writeln!(
            out,
            "{q} {t} ts_{from}_to_{to}({f} x) {{ return x != x ? ({t})0 : x >= {high}{sfx} ? {max} : x < {low}{sfx} ? {min} : ({t})x; }}"
        );
    }
}

/// Prints `expr` of `checked` in `dialect` with `math`; leaves are spelled by `leaves`.
///
/// The result is one fully parenthesised C expression of the node's elaborated type.
pub fn print_expr(
    dialect: Dialect,
    math: MathLibrary,
    checked: &CheckedProgram,
    expr: ExprId,
    leaves: &mut dyn ReadRenderer,
) -> String {
    ExprPrinter {
        dialect,
        math,
        checked,
        leaves,
        relaxed: false,
    }
    .print(expr)
}

struct ExprPrinter<'a> {
    dialect: Dialect,
    math: MathLibrary,
    checked: &'a CheckedProgram,
    leaves: &'a mut dyn ReadRenderer,
    /// Value-changing rewrites of non-exact mode (see [`print_stage_relaxed`]).
    relaxed: bool,
}

impl ExprPrinter<'_> {
    fn print(&mut self, id: ExprId) -> String {
        if let Some(value) = self.leaves.computed(id) {
            return value;
        }
        let ty = self.checked.ty(id);
        match &self.checked.program().exprs[id].kind {
            ExprKind::Literal(c) => self.dialect.literal(*c, ty),
            ExprKind::Read { field, offset } => self.leaves.read(*field, offset),
            ExprKind::Param(p) => self.leaves.param(*p),
            ExprKind::Coord(axis) => self.leaves.coord(*axis),
            ExprKind::Step => self.leaves.step(),
            ExprKind::TableRead { table, offset } => self.leaves.table(*table, *offset),
            ExprKind::Local(local) => self.leaves.local(*local),
            ExprKind::ReductionValue(r) => self.leaves.reduction_value(*r),
            ExprKind::ScanAccumulator(f) => self.leaves.scan_accumulator(*f),
            ExprKind::Unary(op, a) => {
                let a = self.print(*a);
                match op {
                    UnaryOp::Not => format!("(!{a})"),
                    UnaryOp::Neg if ty.is_integer() => format!("ts_neg_{ty}({a})"),
                    UnaryOp::Neg => negation(&a),
                }
            }
            ExprKind::Binary(BinaryOp::Add, ..) if self.relaxed && ty.is_float() => {
                let mut terms = Vec::new();
                self.sum_terms(id, ty, &mut terms);
                let printed: Vec<String> = terms.into_iter().map(|t| self.print(t)).collect();
                self.dialect.relaxed_sum(&printed)
            }
            ExprKind::Binary(BinaryOp::Div, a, b) if self.relaxed && ty.is_float() => {
                let (a, b) = (*a, *b);
                let numerator = self.print(a);
                match self.reciprocal(b, ty) {
                    Some(r) => format!("({numerator} * {r})"),
                    None => {
                        let denominator = self.print(b);
                        self.binary(BinaryOp::Div, ty, numerator, denominator)
                    }
                }
            }
            ExprKind::Binary(op, a, b) => {
                let operand_ty = self.checked.ty(*a);
                let (a, b) = (self.print(*a), self.print(*b));
                self.binary(*op, operand_ty, a, b)
            }
            ExprKind::Select {
                cond,
                then,
                otherwise,
            } => {
                let (c, a, b) = (self.print(*cond), self.print(*then), self.print(*otherwise));
                format!("({c} ? {a} : {b})")
            }
            ExprKind::Call(function, args) => {
                let args: Vec<String> = args.iter().map(|a| self.print(*a)).collect();
                self.call(*function, ty, &args)
            }
            ExprKind::Cast(target, a) => {
                let from = self.checked.ty(*a);
                let a = self.print(*a);
                self.cast(from, *target, a)
            }
        }
    }

    /// The operands of the float `+` chain rooted at `id` (all of type `ty`), left to right.
    fn sum_terms(&self, id: ExprId, ty: ScalarType, out: &mut Vec<ExprId>) {
        match &self.checked.program().exprs[id].kind {
            ExprKind::Binary(BinaryOp::Add, a, b) if self.checked.ty(id) == ty => {
                self.sum_terms(*a, ty, out);
                self.sum_terms(*b, ty, out);
            }
            _ => out.push(id),
        }
    }

    /// `1 / divisor` as a literal of type `ty` when the divisor is a float literal whose
    /// reciprocal is a normal number.
    fn reciprocal(&self, divisor: ExprId, ty: ScalarType) -> Option<String> {
        let ExprKind::Literal(c) = self.checked.program().exprs[divisor].kind else {
            return None;
        };
        let normal = match ty {
            ScalarType::F32 => (1.0f32 / c.as_f64() as f32).is_normal(),
            _ => (1.0 / c.as_f64()).is_normal(),
        };
        let value = match ty {
            ScalarType::F32 => f64::from(1.0f32 / c.as_f64() as f32),
            _ => 1.0 / c.as_f64(),
        };
        normal.then(|| self.dialect.literal(Constant::Float(value), ty))
    }

    fn binary(&self, op: BinaryOp, ty: ScalarType, a: String, b: String) -> String {
        let integer_helper = match op {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::Rem => "rem",
            _ => "",
        };
        match op {
            // `&` and `|` on bools: both sides are evaluated and no branch is needed.
            BinaryOp::And => format!("({a} & {b})"),
            BinaryOp::Or => format!("({a} | {b})"),
            _ if op.is_comparison() => format!("({a} {} {b})", op.symbol()),
            _ if ty.is_integer() => format!("ts_{integer_helper}_{ty}({a}, {b})"),
            BinaryOp::Rem => format!("{}({a}, {b})", self.dialect.fmod(ty)),
            _ => format!("({a} {} {b})", op.symbol()),
        }
    }

    fn call(&self, function: MathFn, ty: ScalarType, args: &[String]) -> String {
        if ty.is_integer() {
            return match function {
                MathFn::Abs => format!("ts_abs_{ty}({})", args[0]),
                MathFn::Min => format!("({0} < {1} ? {0} : {1})", args[0], args[1]),
                MathFn::Max => format!("({0} > {1} ? {0} : {1})", args[0], args[1]),
                _ => unreachable!("the checker allows only abs/min/max on integers"),
            };
        }
        if self.math == MathLibrary::Exact && function.in_exact_library() {
            return format!("ts_{}_{ty}({})", function.name(), args.join(", "));
        }
        let name = self.dialect.float_function(function, ty);
        if function == MathFn::Rsqrt {
            let one = self.dialect.literal(Constant::Float(1.0), ty);
            return format!("({one} / {name}({}))", args[0]);
        }
        format!("{name}({})", args.join(", "))
    }

    fn cast(&self, from: ScalarType, to: ScalarType, a: String) -> String {
        if from == to {
            return a;
        }
        let target = self.dialect.scalar_type(to);
        // Storage types convert from and to `f32` only (checking inserts no other cast).
        if from.is_storage_only() || to.is_storage_only() || (from.is_float() && to.is_integer()) {
            format!("ts_{from}_to_{to}({a})")
        } else if to == ScalarType::Bool {
            format!("({a} != 0)")
        } else {
            format!("(({target}){a})")
        }
    }
}

/// A stage body printed in a dialect: its `let` definitions, the final value of each output
/// field and the value of each in-stage reduction.
#[derive(Clone, Debug, PartialEq)]
pub struct PrintedStage {
    /// One declaration per `let`, in order: `const TYPE NAME = EXPR;` (names from the renderer).
    pub lets: Vec<String>,
    /// Per output field (in first-assignment order), the value of its last assignment, in the
    /// field's type.
    pub outputs: Vec<(Id<Field>, String)>,
    /// Per in-stage reduction of this stage, its value converted to `double`.
    pub reductions: Vec<(Id<Reduction>, String)>,
    /// Per scan, its running value at the point, `const TYPE ts_scan_next<f> = ...;` (after the
    /// `let`s; the outputs read it).
    pub scan_steps: Vec<String>,
    /// Per scan, the running value carried to the line's next point, `ts_scan<f> =
    /// ts_scan_next<f>;` (after the outputs are computed).
    pub scan_carries: Vec<String>,
}

/// Whether `expr` is made of literals and parameters only: the same value at every point,
/// printed without any leaf a renderer spells per point.
fn same_everywhere(program: &Program, expr: ExprId) -> bool {
    let same = |e: &ExprId| same_everywhere(program, *e);
    match &program.exprs[expr].kind {
        ExprKind::Literal(_) | ExprKind::Param(_) => true,
        ExprKind::Unary(_, a) | ExprKind::Cast(_, a) => same(a),
        ExprKind::Binary(_, a, b) => same(a) && same(b),
        ExprKind::Select {
            cond,
            then,
            otherwise,
        } => same(cond) && same(then) && same(otherwise),
        ExprKind::Call(_, args) => args.iter().all(same),
        _ => false,
    }
}

/// Prints the body of `stage` with `math`: `let`s, output values and in-stage reductions.
pub fn print_stage(
    dialect: Dialect,
    math: MathLibrary,
    checked: &CheckedProgram,
    stage: Id<Stage>,
    leaves: &mut dyn ReadRenderer,
) -> PrintedStage {
    print_stage_with(dialect, math, checked, stage, leaves, false)
}

/// [`print_stage`] for non-exact mode, where two value-changing rewrites are allowed (the
/// printed expression is still one fixed order of operations, the same in every strategy):
///
/// - a chain of float additions `t0 + t1 + ... + tn` (as parsed: left-nested) is summed in the
///   shape the target runs fastest ([`Dialect::relaxed_sum`]): in C as a balanced tree of its
///   terms in their written order, which shortens the dependency chain of box stencils from n
///   to log2(n) additions (associative reordering); on GPUs left to right, its products
///   contracted into fused multiply-adds;
/// - a float division by a literal is a multiplication by the literal's reciprocal (rounded to
///   the type), when that is a normal number.
///
/// In-stage reduction values are printed as written. Math functions are the native ones.
pub fn print_stage_relaxed(
    dialect: Dialect,
    checked: &CheckedProgram,
    stage: Id<Stage>,
    leaves: &mut dyn ReadRenderer,
) -> PrintedStage {
    print_stage_with(dialect, MathLibrary::Native, checked, stage, leaves, true)
}

fn print_stage_with(
    dialect: Dialect,
    math: MathLibrary,
    checked: &CheckedProgram,
    stage: Id<Stage>,
    leaves: &mut dyn ReadRenderer,
    relaxed: bool,
) -> PrintedStage {
    let program = checked.program();
    let print = |expr: ExprId, leaves: &mut dyn ReadRenderer| {
        ExprPrinter {
            dialect,
            math,
            checked,
            leaves,
            relaxed,
        }
        .print(expr)
    };
    // A value bound to a `let` or stored: broadcast where it is the same at every point.
    let bound = |expr: ExprId, leaves: &mut dyn ReadRenderer| {
        let value = print(expr, leaves);
        match same_everywhere(program, expr) {
            true => leaves.uniform(value),
            false => value,
        }
    };
    let mut lets = Vec::new();
    let mut outputs: Vec<(Id<Field>, String)> = Vec::new();
    let (mut scan_steps, mut scan_carries) = (Vec::new(), Vec::new());
    for statement in &program.stages[stage].body {
        match statement {
            Statement::Let { local, value } => {
                let ty = leaves.let_type(dialect.scalar_type(checked.local_ty(stage, *local)));
                let name = leaves.local(*local);
                let value = bound(*value, leaves);
                lets.push(format!("const {ty} {name} = {value};"));
            }
            Statement::Assign {
                field,
                value,
                scan: Some(scan),
                ..
            } => {
                let running = Scan::running(program, *value);
                let ty = leaves.let_type(dialect.scalar_type(checked.ty(running)));
                let next = format!("ts_scan_next{}", field.index());
                let acc = leaves.scan_accumulator(*field);
                scan_steps.push(format!("const {ty} {next} = {};", print(running, leaves)));
                scan_carries.push(format!("{acc} = {next};"));
                let written = if scan.exclusive { acc } else { next };
                let stored = checked.program().fields[*field].ty;
                let value = if stored.is_storage_only() {
                    format!("ts_{}_to_{stored}({written})", checked.ty(running))
                } else {
                    written
                };
                outputs.push((*field, value));
            }
            Statement::Assign { field, value, .. } => {
                let value = bound(*value, leaves);
                match outputs.iter_mut().find(|(f, _)| f == field) {
                    Some(slot) => slot.1 = value,
                    None => outputs.push((*field, value)),
                }
            }
        }
    }
    let reductions = checked
        .stage_reductions(stage)
        .into_iter()
        .map(|r| {
            (
                r,
                print_reduction_value(dialect, math, checked, program.reductions[r].value, leaves),
            )
        })
        .collect();
    PrintedStage {
        lets,
        outputs,
        reductions,
        scan_steps,
        scan_carries,
    }
}

/// The terms of a reordered sum (see [`tessera_analysis::plane_sums`]) after `first` when
/// given (a partial sum they add to), in their order, a subtracted term negated, printed as
/// [`print_stage_relaxed`] prints (only non-exact mode reorders sums).
pub fn print_sum_terms(
    dialect: Dialect,
    checked: &CheckedProgram,
    first: Option<&str>,
    terms: &[SumTerm],
    leaves: &mut dyn ReadRenderer,
) -> String {
    let mut printer = ExprPrinter {
        dialect,
        math: MathLibrary::Native,
        checked,
        leaves,
        relaxed: true,
    };
    let printed: Vec<String> = (first.map(str::to_string).into_iter())
        .chain(terms.iter().map(|term| {
            let value = printer.print(term.expr);
            if term.negated {
                format!("(-{value})")
            } else {
                value
            }
        }))
        .collect();
    dialect.relaxed_sum(&printed)
}

/// The C name of the running value of the scan writing `field`.
pub fn scan_accumulator(field: Id<Field>) -> String {
    format!("ts_scan{}", field.index())
}

/// The declarations of the running values of `stage`'s scans, each set to its scan's identity
/// (`float ts_scan3 = -0.0f;`): printed before each line of the stage, whose points are then
/// evaluated in ascending order along the scan axis.
pub fn scan_accumulators(
    dialect: Dialect,
    checked: &CheckedProgram,
    stage: Id<Stage>,
) -> Vec<String> {
    let program = checked.program();
    (program.stages[stage].scans().into_iter())
        .map(|(field, scan)| {
            let ty = program.fields[field].ty.arithmetic_type();
            format!(
                "{} {} = {};",
                dialect.scalar_type(ty),
                scan_accumulator(field),
                dialect.literal(scan.identity(ty), ty)
            )
        })
        .collect()
}

/// `-a` as C, parenthesized: a negative literal operand is set apart (`(- -0.5)`), since
/// `--0.5` would read as a decrement.
pub(crate) fn negation(a: &str) -> String {
    match a.starts_with('-') {
        true => format!("(- {a})"),
        false => format!("(-{a})"),
    }
}

/// `(t0 + t1 + ... + tn)`: a left-to-right chain, which the compiler contracts into one
/// multiply and then fused multiply-adds when the terms are products (fewer operations than a
/// balanced tree, whose pairs of products need a multiply each and an add to join them).
pub(crate) fn chained_sum(terms: &[String]) -> String {
    format!("({})", terms.join(" + "))
}

/// The terms of a sum as a balanced tree, in order: `((t0 + t1) + (t2 + t3))`.
pub(crate) fn balanced_sum(terms: &[String]) -> String {
    match terms {
        [one] => one.clone(),
        _ => {
            let (left, right) = terms.split_at(terms.len() / 2);
            format!("({} + {})", balanced_sum(left), balanced_sum(right))
        }
    }
}

/// Prints a reduction's value expression converted to `double` (the accumulation type).
pub fn print_reduction_value(
    dialect: Dialect,
    math: MathLibrary,
    checked: &CheckedProgram,
    value: ExprId,
    leaves: &mut dyn ReadRenderer,
) -> String {
    let printed = print_expr(dialect, math, checked, value, leaves);
    match checked.ty(value) {
        ScalarType::F64 => printed,
        _ => format!("((double){printed})"),
    }
}
