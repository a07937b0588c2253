//! The C twin of the `f16`/`bf16` conversions, as the code generator emits it, compiled with
//! the system C compiler (without and with optimisation, with and without flushing subnormals)
//! and run on every 16-bit pattern and on special, tie and random `f32` values: every result
//! equals [`tessera_ir::half`]'s bitwise.

use std::path::Path;
mod common;

use tessera_codegen::cfamily::Dialect;
use tessera_codegen::half::half_source;
use tessera_ir::ScalarType;
use tessera_ir::half::{
    bf16_bits_from_f32, f16_bits_from_f32, f32_from_bf16_bits, f32_from_f16_bits,
};

/// Reads f32 bit patterns from argv[1]; writes, per pattern `b`, the widened `f16` and `bf16`
/// of its low 16 bits and the narrowed `f16` and `bf16` of the `f32` (4 + 4 + 2 + 2 bytes).
const DRIVER: &str = r#"
#include <stdio.h>
int main(int argc, char** argv) {
    if (argc != 3) return 2;
    FILE* in = fopen(argv[1], "rb");
    FILE* out = fopen(argv[2], "wb");
    if (!in || !out) return 2;
    uint32_t bits;
    while (fread(&bits, sizeof bits, 1, in) == 1) {
        float x = ts_f32_from_bits(bits);
        float wide[2] = { ts_f16_to_f32((uint16_t)bits), ts_bf16_to_f32((uint16_t)bits) };
        uint16_t narrow[2] = { ts_f32_to_f16(x), ts_f32_to_bf16(x) };
        fwrite(wide, sizeof wide[0], 2, out);
        fwrite(narrow, sizeof narrow[0], 2, out);
    }
    return fclose(out) == 0 ? 0 : 1;
}
"#;

/// The Rust twin's results in the driver's layout.
fn rust_results(bits: u32) -> Vec<u8> {
    let (x, low) = (f32::from_bits(bits), bits as u16);
    let mut out = Vec::new();
    out.extend(f32_from_f16_bits(low).to_bits().to_ne_bytes());
    out.extend(f32_from_bf16_bits(low).to_bits().to_ne_bytes());
    out.extend(f16_bits_from_f32(x).to_ne_bytes());
    out.extend(bf16_bits_from_f32(x).to_ne_bytes());
    out
}

/// Every 16-bit pattern (as the low half), the f16 values, their neighbours and the midpoints
/// between them as f32, edges, and pseudo-random f32 patterns.
fn arguments() -> Vec<u32> {
    let mut values: Vec<u32> = (0..=u32::from(u16::MAX)).collect();
    for h in 0..0x7c00u16 {
        let (a, b) = (f32_from_f16_bits(h), f32_from_f16_bits(h + 1));
        let mid = ((f64::from(a) + f64::from(b)) / 2.0) as f32;
        for v in [a, mid] {
            let bits = v.to_bits();
            values.extend([bits, bits | 0x8000_0000, bits + 1, bits.wrapping_sub(1)]);
        }
    }
    values.extend([
        0x7f80_0000,
        0xff80_0000,
        0x7fc0_0000,
        0xff80_0001,
        0x7f7f_ffff,
        0x477f_f000,
    ]);
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..200_000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        values.push(state as u32);
    }
    values
}

/// Compiles the emitted conversions with the driver using `flags`, runs it on `values` in
/// `dir` and returns its output.
fn run_c(dir: &Path, flags: &[&str], values: &[u32]) -> Vec<u8> {
    let source = format!(
        "{}{}{DRIVER}",
        Dialect::C.preamble(),
        half_source(Dialect::C, &[ScalarType::F16, ScalarType::Bf16])
    );
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
    common::run_c_driver(dir, "half", &source, flags, &bytes)
}

#[test]
fn the_emitted_c_converts_like_the_rust_twin_bitwise() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let values = arguments();
    // `-ffast-math` flushes subnormals at startup: the integer-only conversions are unaffected.
    for flags in [
        &["-O0"][..],
        &["-O3", "-march=native"][..],
        &["-O2", "-ffast-math"][..],
    ] {
        let c = run_c(dir.path(), flags, &values);
        assert_eq!(c.len(), values.len() * 12, "one record per value");
        for (&bits, got) in values.iter().zip(c.chunks(12)) {
            assert_eq!(got, rust_results(bits), "{flags:?}: pattern {bits:#010x}");
        }
    }
}

#[test]
fn every_dialect_gets_the_conversions_it_needs_with_its_own_spelling() {
    for dialect in [Dialect::C, Dialect::Cuda, Dialect::OpenCl] {
        let both = half_source(dialect, &[ScalarType::F16, ScalarType::Bf16]);
        assert!(!both.contains('$'), "{dialect:?}: placeholders left");
        let f16 = half_source(dialect, &[ScalarType::F16]);
        assert!(f16.contains(" ts_f32_to_f16(") && !f16.contains("ts_f32_to_bf16"));
        let bf16 = half_source(dialect, &[ScalarType::Bf16]);
        assert!(bf16.contains(" ts_f32_to_bf16(") && !bf16.contains("ts_f16_to_f32"));
        assert!(half_source(dialect, &[]).is_empty());
    }
    assert!(half_source(Dialect::Cuda, &[ScalarType::F16]).contains("__float_as_uint(x)"));
    assert!(half_source(Dialect::OpenCl, &[ScalarType::F16]).contains("ushort ts_f32_to_f16"));
}
