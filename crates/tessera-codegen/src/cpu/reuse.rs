//! Printing of column sums ([`tessera_plan::reuse`]): per row chunk, a first loop stores the
//! partial sums of the columns into `ts_cs<k>` buffers on the stack, a second combines them.

use std::fmt::Write as _;

use tessera_ir::{Constant, Field, Id};
use tessera_plan::reuse::ColumnSums;

use crate::cfamily::{Dialect, balanced_sum};

/// Buffered partial sums per chunk, in bytes per buffer (the chunk stays in L1).
const CHUNK_BYTES: usize = 2048;

/// Points per chunk.
fn chunk(sums: &ColumnSums) -> usize {
    CHUNK_BYTES / sums.ty.size_bytes()
}

/// The buffer declarations at the top of the interior function.
pub(crate) fn buffers(sums: &ColumnSums) -> String {
    let t = Dialect::C.scalar_type(sums.ty);
    let len = chunk(sums) as i32 + sums.reach.1 - sums.reach.0;
    (0..sums.sums.len())
        .map(|k| format!("    _Alignas(64) {t} ts_cs{k}[{len}];\n"))
        .collect()
}

/// The code for one row of the interior box `lo..hi`, inside the loops over the slower
/// axes of a nest over `dims` axes (`b<dims-2>` is the row's base index, `bw<dims-2>` the
/// write base when `mixed`); `read` spells a read of a column at the linear index `i`, and
/// the output is stored to the array `target` (`w<f>`, or `r<f>` when written in place).
pub(crate) fn row(
    sums: &ColumnSums,
    read: &mut dyn FnMut(Id<Field>, &[i32]) -> String,
    target: &str,
    dims: usize,
    mixed: bool,
    simd: bool,
) -> String {
    let t = Dialect::C.scalar_type(sums.ty);
    let (lo, hi) = sums.reach;
    let chunk = chunk(sums);
    let (a, b) = (dims - 1, dims - 2);
    let pragma = if simd { "    #pragma omp simd\n" } else { "" };
    let literal = |v: f64| Dialect::C.literal(Constant::Float(v), sums.ty);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "for (int64_t x0 = lo[{a}]; x0 < hi[{a}]; x0 += {chunk}) {{\n    const int64_t x1 = hi[{a}] - x0 < {chunk} ? hi[{a}] : x0 + {chunk};"
    );
    out.push_str(pragma);
    let _ = writeln!(
        out,
        "    for (int64_t p{a} = x0{}; p{a} < x1{}; p{a}++) {{\n        const int64_t i = (int64_t)b{b} + (p{a} - org[{a}]);",
        signed(lo),
        signed(hi)
    );
    for (c, (field, offset)) in sums.columns.iter().enumerate() {
        let _ = writeln!(out, "        const {t} c{c} = {};", read(*field, offset));
    }
    for (k, terms) in sums.sums.iter().enumerate() {
        let products: Vec<String> = terms
            .iter()
            .map(|&(c, w)| format!("{} * c{c}", literal(w)))
            .collect();
        let _ = writeln!(
            out,
            "        ts_cs{k}[p{a} - x0{}] = {};",
            signed(-lo),
            balanced_sum(&products)
        );
    }
    out.push_str("    }\n");
    out.push_str(pragma);
    let (index, base, origin) = if mixed {
        ("iw", format!("bw{b}"), "worg")
    } else {
        ("i", format!("b{b}"), "org")
    };
    let _ = writeln!(
        out,
        "    for (int64_t p{a} = x0; p{a} < x1; p{a}++) {{\n        const int64_t {index} = (int64_t){base} + (p{a} - {origin}[{a}]);\n        const int64_t j = p{a} - x0{};",
        signed(-lo)
    );
    let mut terms: Vec<String> = sums
        .taps
        .iter()
        .map(|&(k, dx, w)| {
            let at = format!("ts_cs{k}[j{}]", signed(dx));
            if w == 1.0 {
                at
            } else {
                format!("{} * {at}", literal(w))
            }
        })
        .collect();
    if sums.constant != 0.0 {
        terms.push(literal(sums.constant));
    }
    let _ = writeln!(
        out,
        "        {target}[{index}] = {};\n    }}\n}}",
        balanced_sum(&terms)
    );
    out
}

/// ` + v`, ` - v` or nothing, to add `v` to an expression.
fn signed(v: i32) -> String {
    match v {
        0 => String::new(),
        v if v < 0 => format!(" - {}", -v),
        v => format!(" + {v}"),
    }
}
