//! The `f16`/`bf16` conversions in C-family source: `half.c` (shared helpers), `half_f16.c` and
//! `half_bf16.c`, the C twin of [`tessera_ir::half`], written once for the three dialects and
//! emitted after the preamble for the storage types a program's fields use. Fields of these
//! types are stored as 16-bit unsigned integers (their bit patterns); a read widens with
//! `ts_f16_to_f32`/`ts_bf16_to_f32`, a write rounds with `ts_f32_to_f16`/`ts_f32_to_bf16`.
//! The dialect supplies the helpers' qualifier (`$Q`), the 16- and 32-bit unsigned types
//! (`$U16`, `$U32`) and the body of the `f32` bit cast (`$F32_TO_BITS`).

use tessera_analysis::CheckedProgram;
use tessera_ir::ScalarType;

use crate::cfamily::Dialect;

/// The helpers every storage type's conversions use.
const SHARED: &str = include_str!("half.c");
/// `ts_f16_to_f32` and `ts_f32_to_f16`.
const F16: &str = include_str!("half_f16.c");
/// `ts_bf16_to_f32` and `ts_f32_to_bf16`.
const BF16: &str = include_str!("half_bf16.c");
/// The C dialect's `f16` conversions on x86 targets with F16C (`-march` of AVX2 and later):
/// one instruction each, rounding as `half_f16.c` does (IEEE-754 round to nearest even, NaNs
/// made quiet), and without its branches, which keep the compiler from vectorising.
const F16C: &str = "#if defined(__F16C__)
#include <immintrin.h>
static inline float ts_f16_to_f32(uint16_t h) { return _cvtsh_ss(h); }
static inline uint16_t ts_f32_to_f16(float x) { return (uint16_t)_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT); }
#else
";

/// The storage types (`f16`, `bf16`) of `checked`'s fields, in that order, each once.
pub fn storage_types(checked: &CheckedProgram) -> Vec<ScalarType> {
    let fields = &checked.program().fields;
    [ScalarType::F16, ScalarType::Bf16]
        .into_iter()
        .filter(|&ty| fields.values().any(|f| f.ty == ty))
        .collect()
}

/// The conversions of `types` (storage types) in `dialect`, after the dialect's preamble (they
/// use `ts_f32_from_bits`); empty when `types` is.
pub fn half_source(dialect: Dialect, types: &[ScalarType]) -> String {
    if types.is_empty() {
        return String::new();
    }
    let u32 = dialect.unsigned_type(ScalarType::I32);
    let to_bits = match dialect {
        Dialect::C => format!("{u32} bits; memcpy(&bits, &x, sizeof bits); return bits;"),
        Dialect::Cuda => "return __float_as_uint(x);".to_string(),
        Dialect::OpenCl => "return as_uint(x);".to_string(),
    };
    let mut text = match dialect {
        // NVRTC has no standard headers: the preamble declares the other fixed-width types.
        Dialect::Cuda => "typedef unsigned short uint16_t;\n".to_string(),
        _ => String::new(),
    };
    text.push_str(SHARED);
    for ty in types {
        match (ty, dialect) {
            (ScalarType::Bf16, _) => text.push_str(BF16),
            (_, Dialect::C) => {
                text.push_str(F16C);
                text.push_str(F16);
                text.push_str("#endif\n");
            }
            _ => text.push_str(F16),
        }
    }
    text.replace("$F32_TO_BITS", &to_bits)
        .replace("$Q", dialect.helper_qualifier())
        .replace("$U16", dialect.scalar_type(ScalarType::F16))
        .replace("$U32", u32)
}
