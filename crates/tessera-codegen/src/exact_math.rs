//! The exact math library in C-family source: `exact_math.c`, the C twin of
//! [`tessera_ir::exact_math`], written once for the three dialects. The dialect supplies the
//! helpers' qualifier (`$Q`), a constant table's (`$TABLE`), its 64-bit unsigned type (`$U64`)
//! and the bit casts; the
//! constants (`{NAME}`) and the polynomials (`ts_em_NAME(z)`) are printed from the Rust
//! module's tables, so that both twins use the same numbers.

use std::fmt::Write as _;

use tessera_analysis::CheckedProgram;
use tessera_ir::exact_math::{CONSTANTS, POLYNOMIALS, TWO_OVER_PI_BITS};
use tessera_ir::{Constant, ExprKind, ScalarType};

use crate::cfamily::Dialect;

/// The algorithms, with the placeholders described in the module documentation.
const TEMPLATE: &str = include_str!("exact_math.c");

/// Whether `checked` calls a function that exact mode computes with the exact math library.
pub fn needs_exact_math(checked: &CheckedProgram) -> bool {
    checked.program().exprs.iter().any(|(id, e)| {
        matches!(&e.kind, ExprKind::Call(f, _) if f.in_exact_library()) && checked.ty(id).is_float()
    })
}

/// The exact math library in `dialect`: `ts_exp_f32`, `ts_exp_f64`, ... `ts_atan2_f64`, after
/// the dialect's preamble (it uses `ts_f64_from_bits`).
pub fn exact_math_source(dialect: Dialect) -> String {
    let mut out = dialect.f64_to_bits_helper();
    let q = dialect.helper_qualifier();
    for (name, coefficients) in POLYNOMIALS {
        let _ = writeln!(
            out,
            "{q} double ts_em_{name}(double z) {{ return {}; }}",
            horner_text(dialect, coefficients)
        );
    }
    let table: Vec<String> = TWO_OVER_PI_BITS
        .iter()
        .map(|w| format!("0x{w:08x}"))
        .collect();
    let mut text = TEMPLATE
        .replace("$Q", q)
        .replace("$TABLE", dialect.table_qualifier())
        .replace("$U64", dialect.unsigned_type(ScalarType::I64))
        .replace("{TWO_OVER_PI_BITS}", &table.join(", "));
    for (name, value) in CONSTANTS {
        text = text.replace(&format!("{{{name}}}"), &literal(dialect, value));
    }
    out.push_str(&text);
    out
}

/// `c0 + z * (c1 + z * (...))`, the operations of [`tessera_ir::exact_math::horner`].
fn horner_text(dialect: Dialect, coefficients: &[f64]) -> String {
    let Some((last, rest)) = coefficients.split_last() else {
        return literal(dialect, 0.0);
    };
    rest.iter().rev().fold(literal(dialect, *last), |inner, c| {
        format!("({} + z * {inner})", literal(dialect, *c))
    })
}

/// A `double` literal, parenthesised when negative.
fn literal(dialect: Dialect, value: f64) -> String {
    let text = dialect.literal(Constant::Float(value), ScalarType::F64);
    if value < 0.0 {
        format!("({text})")
    } else {
        text
    }
}
