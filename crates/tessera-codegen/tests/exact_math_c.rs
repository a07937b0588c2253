//! The C twin of the exact math library, as the code generator emits it, compiled with the
//! system C compiler (without and with optimisation and the host's FMA units, contraction off)
//! and run on special, boundary and random arguments: every result equals the Rust twin's
//! bitwise.

use std::path::Path;
mod common;

use tessera_codegen::cfamily::Dialect;
use tessera_codegen::exact_math::exact_math_source;
use tessera_ir::exact_math::{
    TRIG_REDUCTION_LIMIT, atan2_f32, atan2_f64, cos_f32, cos_f64, exp_f32, exp_f64, log_f32,
    log_f64, max_f32, max_f64, min_f32, min_f64, pow_f32, pow_f64, sin_f32, sin_f64,
};

/// Reads `(x, y)` bit pairs from argv[1], writes the 8 f64 then the 8 f32 results to argv[2].
const DRIVER: &str = r#"
#include <stdio.h>
int main(int argc, char** argv) {
    if (argc != 3) return 2;
    FILE* in = fopen(argv[1], "rb");
    FILE* out = fopen(argv[2], "wb");
    if (!in || !out) return 2;
    uint64_t pair[2];
    while (fread(pair, sizeof pair[0], 2, in) == 2) {
        double x = ts_f64_from_bits(pair[0]), y = ts_f64_from_bits(pair[1]);
        float xf = (float)x, yf = (float)y;
        double d[8] = { ts_exp_f64(x), ts_log_f64(x), ts_pow_f64(x, y), ts_sin_f64(x),
                        ts_cos_f64(x), ts_atan2_f64(x, y), ts_min_f64(x, y), ts_max_f64(x, y) };
        float f[8] = { ts_exp_f32(xf), ts_log_f32(xf), ts_pow_f32(xf, yf), ts_sin_f32(xf),
                       ts_cos_f32(xf), ts_atan2_f32(xf, yf), ts_min_f32(xf, yf), ts_max_f32(xf, yf) };
        fwrite(d, sizeof d[0], 8, out);
        fwrite(f, sizeof f[0], 8, out);
    }
    return fclose(out) == 0 ? 0 : 1;
}
"#;

/// The Rust twin's results in the driver's layout.
fn rust_results(x: f64, y: f64) -> Vec<u8> {
    let (xf, yf) = (x as f32, y as f32);
    let d = [
        exp_f64(x),
        log_f64(x),
        pow_f64(x, y),
        sin_f64(x),
        cos_f64(x),
        atan2_f64(x, y),
        min_f64(x, y),
        max_f64(x, y),
    ];
    let f = [
        exp_f32(xf),
        log_f32(xf),
        pow_f32(xf, yf),
        sin_f32(xf),
        cos_f32(xf),
        atan2_f32(xf, yf),
        min_f32(xf, yf),
        max_f32(xf, yf),
    ];
    let mut out: Vec<u8> = d.iter().flat_map(|v| v.to_le_bytes()).collect();
    out.extend(f.iter().flat_map(|v| v.to_le_bytes()));
    out
}

/// Values where the functions have special cases, thresholds or hard reductions.
fn interesting_values() -> Vec<f64> {
    let mut v = vec![
        0.0,
        1.0,
        2.0,
        0.5,
        3.0,
        1.5,
        10.0,
        1e-300,
        5e-324,
        2.2250738585072014e-308,
        1.1754943508222875e-38,
        1.401298464324817e-45,
        f64::MAX,
        f32::MAX as f64,
        f64::INFINITY,
        f64::NAN,
        709.782712893384,
        709.79,
        -745.1332191019412,
        -745.14,
        -708.4,
        -744.9,
        88.72283935546875,
        88.8,
        -103.97,
        -87.33,
        9007199254740992.0,
        9007199254740993.0 * 2.0,
        18446744073709551616.0,
        1e20,
        TRIG_REDUCTION_LIMIT,
        TRIG_REDUCTION_LIMIT * 1.0000001,
        1e6,
        1e22,
        1e300,
        std::f64::consts::PI,
        std::f64::consts::FRAC_PI_2,
        std::f64::consts::FRAC_PI_4,
        1.0 - f64::EPSILON,
        1.0 + f64::EPSILON,
        7.450580596923828e-9,
        1e-9,
        0.125,
        0.375,
        0.625,
        0.875,
    ];
    for k in 1..40 {
        let m = f64::from(k) * std::f64::consts::FRAC_PI_2;
        v.extend([
            m,
            f64::from_bits(m.to_bits() + 1),
            f64::from_bits(m.to_bits() - 1),
        ]);
        v.push((f64::from(k) * std::f64::consts::FRAC_PI_2) as f32 as f64);
    }
    let negated: Vec<f64> = v.iter().map(|x| -x).collect();
    v.extend(negated);
    v
}

/// Argument pairs: every pair of interesting values, then random ones over wide ranges.
fn arguments() -> Vec<(f64, f64)> {
    let values = interesting_values();
    let mut pairs: Vec<(f64, f64)> = values
        .iter()
        .flat_map(|&x| values.iter().map(move |&y| (x, y)))
        .collect();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for i in 0..200_000 {
        let (a, b) = (next(), next());
        let pair = match i % 4 {
            // Any bit pattern.
            0 => (f64::from_bits(a), f64::from_bits(b)),
            // Moderate values of either sign, integral exponents now and then.
            1 => {
                let x = (a >> 11) as f64 / (1u64 << 53) as f64 * 40.0 - 20.0;
                let y = (b >> 11) as f64 / (1u64 << 53) as f64 * 80.0 - 40.0;
                (x, if b & 3 == 0 { y.floor() } else { y })
            }
            // Magnitudes from 2^-60 to 2^60.
            2 => {
                let e = (a % 120) as i32 - 60;
                let x = (1.0 + (b >> 12) as f64 / (1u64 << 52) as f64) * 2f64.powi(e);
                (if a & 1 == 0 { x } else { -x }, x.sqrt())
            }
            // Near the f32 and f64 exp thresholds and zero.
            _ => {
                let centres = [88.7, -103.9, 709.78, -745.1, 0.0];
                let c = centres[(a % 5) as usize];
                (c + ((b >> 11) as f64 / (1u64 << 53) as f64 - 0.5), c)
            }
        };
        pairs.push(pair);
    }
    pairs
}

/// Compiles the emitted library with the driver using `flags`, runs it on `pairs` in `dir` and
/// returns its output.
fn run_c(dir: &Path, flags: &[&str], pairs: &[(f64, f64)]) -> Vec<u8> {
    let source = format!(
        "{}{}{DRIVER}",
        Dialect::C.preamble(),
        exact_math_source(Dialect::C)
    );
    let bytes: Vec<u8> = pairs
        .iter()
        .flat_map(|(x, y)| [x.to_bits().to_le_bytes(), y.to_bits().to_le_bytes()])
        .flatten()
        .collect();
    let flags = [&["-fno-fast-math"][..], flags].concat();
    common::run_c_driver(dir, "exact_math", &source, &flags, &bytes)
}

const NAMES: [&str; 16] = [
    "exp_f64",
    "log_f64",
    "pow_f64",
    "sin_f64",
    "cos_f64",
    "atan2_f64",
    "min_f64",
    "max_f64",
    "exp_f32",
    "log_f32",
    "pow_f32",
    "sin_f32",
    "cos_f32",
    "atan2_f32",
    "min_f32",
    "max_f32",
];

/// The first function and arguments whose C result differs from the Rust one, if any.
fn first_difference(pairs: &[(f64, f64)], c: &[u8]) -> Option<String> {
    let record = 8 * 8 + 8 * 4;
    assert_eq!(
        c.len(),
        pairs.len() * record,
        "one record per argument pair"
    );
    for (&(x, y), got) in pairs.iter().zip(c.chunks(record)) {
        let expected = rust_results(x, y);
        if expected != got {
            let slot = |i: usize| if i < 64 { i / 8 } else { 8 + (i - 64) / 4 };
            let i = (0..record).find(|&i| expected[i] != got[i]).unwrap_or(0);
            return Some(format!("{}({x:e}, {y:e}) differs", NAMES[slot(i)]));
        }
    }
    None
}

#[test]
fn the_emitted_c_computes_the_rust_twins_bits() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let pairs = arguments();
    for flags in [&["-O0"][..], &["-O3", "-march=native"][..]] {
        let c = run_c(dir.path(), flags, &pairs);
        if let Some(difference) = first_difference(&pairs, &c) {
            panic!("with {flags:?}: {difference}");
        }
    }
}

#[test]
fn every_dialect_gets_the_library_with_its_own_spelling() {
    for dialect in [Dialect::C, Dialect::Cuda, Dialect::OpenCl] {
        let source = exact_math_source(dialect);
        for name in NAMES {
            assert!(
                source.contains(&format!(" ts_{name}(")),
                "{dialect:?}: {name}"
            );
        }
        assert!(
            !source.contains('$') && !source.contains("{INF}"),
            "{dialect:?}: placeholders left"
        );
    }
    assert!(exact_math_source(Dialect::Cuda).contains("__device__"));
    assert!(exact_math_source(Dialect::OpenCl).contains("as_ulong(x)"));
}
