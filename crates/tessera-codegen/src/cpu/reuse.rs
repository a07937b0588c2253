//! Printing of column sums ([`tessera_plan::reuse`]), in one of two forms:
//!
//! - on shifted lanes, when the stage also has a shifted-lanes form ([`tessera_plan::lanes`]):
//!   per aligned vector of a row, the sums of its columns in registers (groups of columns
//!   added up first, shared terms summed once, [`ColumnSums::groups`]), and the taps at
//!   `x + dx` shuffled out of the sums of neighbouring vectors (one pass, no buffer); each
//!   column pinned in a register where that fits
//!   ([`ColumnSums::keeps_lane_columns_in_registers`]);
//! - otherwise per row chunk: a first loop stores the partial sums of the columns into
//!   `ts_cs<k>` buffers on the stack, a second combines them. Where it loads less
//!   ([`ColumnSums::keeps_columns_in_registers`]), the first loop runs on whole vectors with
//!   each column loaded once into a register, and the scalar loop finishes the chunk.

use std::fmt::Write as _;

use tessera_analysis::BoundProgram;
use tessera_ir::{Constant, Field, Id, Stage};
use tessera_plan::lanes::lanes;
use tessera_plan::reuse::{ColumnSums, SumTerms};

use super::lanes::{
    RowShape, Window, after_last, before_first, ends, prefetches, row_bounds, row_indices, shuffle,
    stores_over_reads, vector_loop_open,
};
use super::stage::linear_offset;
use crate::cfamily::{Dialect, balanced_sum, chained_sum};

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
    columns_in_registers: bool,
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
    let reads: Vec<String> = (sums.columns.iter())
        .map(|(field, offset)| read(*field, offset))
        .collect();
    let group = |g: usize| group_value(sums, g, &|c| format!("c{c}"));
    // A sum of weighted groups, after the shared terms' sum `cs` where there is one.
    let sum_of = |terms: &SumTerms, shared: bool| {
        let mut products = if shared {
            vec!["cs".to_string()]
        } else {
            Vec::new()
        };
        products.extend(weighted_groups(sums, terms, &group));
        balanced_sum(&products)
    };
    // The first pass's body at the point `p`: a whole vector, its columns pinned in
    // registers (`TS_IN_REGISTER`), or one point.
    let first_body = |p: &str, vector: bool| {
        let suffix = sums.ty;
        let mut body = format!("        const int64_t i = (int64_t)b{b} + ({p} - org[{a}]);\n");
        for (c, at) in reads.iter().enumerate() {
            let _ = if vector {
                writeln!(
                    body,
                    "        ts_v{suffix} c{c} = ts_load_{suffix}(&{at});\n        TS_IN_REGISTER(c{c});"
                )
            } else {
                writeln!(body, "        const {t} c{c} = {at};")
            };
        }
        let shared = !sums.shared.is_empty();
        if shared {
            let ty = if vector {
                format!("ts_v{suffix}")
            } else {
                t.to_string()
            };
            let _ = writeln!(
                body,
                "        const {ty} cs = {};",
                sum_of(&sums.shared, false)
            );
        }
        for (k, terms) in sums.sums.iter().enumerate() {
            let (j, sum) = (format!("{p} - x0{}", signed(-lo)), sum_of(terms, shared));
            let _ = if vector {
                writeln!(body, "        ts_store_{suffix}(ts_cs{k} + ({j}), {sum});")
            } else {
                writeln!(body, "        ts_cs{k}[{j}] = {sum};")
            };
        }
        body
    };
    let first = if simd && columns_in_registers {
        let v = lanes(sums.ty);
        let _ = write!(
            out,
            "    int64_t pv = x0{};\n    for (; pv + {v} <= x1{}; pv += {v}) {{\n{}    }}\n",
            signed(lo),
            signed(hi),
            first_body("pv", true)
        );
        "pv".to_string()
    } else {
        format!("x0{}", signed(lo))
    };
    out.push_str(pragma);
    let _ = write!(
        out,
        "    for (int64_t p{a} = {first}; p{a} < x1{}; p{a}++) {{\n{}    }}\n",
        signed(hi),
        first_body(&format!("p{a}"), false)
    );
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

/// The code for one row of the interior on shifted lanes (see the module docs), its output
/// stored to the array `target`. Each column is one window read at `reach.0..=reach.1`; the
/// vectors of sums are `sm<k>` (before the current one), `s<k>` and `sn<k>` (after it).
pub(crate) fn lane_row(
    bound: &BoundProgram,
    stage: Id<Stage>,
    sums: &ColumnSums,
    shape: &RowShape,
    target: &str,
    columns_in_registers: bool,
) -> String {
    let a = shape.strides.len() - 1;
    let n = lanes(sums.ty) as i32;
    let vector = format!("ts_v{}", sums.ty);
    let mask = format!("ts_m{}", sums.ty);
    let load = format!("ts_load_{}", sums.ty);
    let windows: Vec<Window> = (sums.columns.iter())
        .map(|(field, offset)| Window {
            field: *field,
            row: linear_offset(&offset[..a], shape.strides),
            shifts: [sums.reach.0, sums.reach.1].into_iter().collect(),
        })
        .collect();
    let (lo, hi) = (windows[0].min(), windows[0].max());
    let literal = |v: f64| Dialect::C.literal(Constant::Float(v), sums.ty);
    // Sum `k` of the group vectors named by `group`, after the shared terms (their sum's
    // name, or summed inline).
    let grouped_sum = |k: usize, group: &dyn Fn(usize) -> String, shared: Option<&str>| {
        let mut products = match shared {
            Some(name) => vec![name.to_string()],
            None => weighted_groups(sums, &sums.shared, group),
        };
        products.extend(weighted_groups(sums, &sums.sums[k], group));
        chained_sum(&products)
    };
    // Sum `k` of the column vectors named by `column`.
    let sum = |k: usize, column: &dyn Fn(usize) -> String| {
        grouped_sum(k, &|g| group_value(sums, g, column), None)
    };
    // The output of one vector, given the sum `k` at `dx` from it.
    let output = |at: &dyn Fn(usize, i32) -> String| {
        let mut terms: Vec<String> = (sums.taps.iter())
            .map(|&(k, dx, w)| match w {
                1.0 => at(k, dx),
                w => format!("{} * {}", literal(w), at(k, dx)),
            })
            .collect();
        if sums.constant != 0.0 {
            terms.push(literal(sums.constant));
        }
        let idx = if shape.mixed { "iw" } else { "i" };
        format!(
            "            ts_store_{}({target} + {idx}, {});\n",
            sums.ty,
            balanced_sum(&terms)
        )
    };
    let indices = row_indices(shape);
    let mut out = row_bounds(shape, &windows);
    let vector_end = (!stores_over_reads(bound, stage, &windows)).then(|| {
        // An end vector spans two lines of the stream (it is unaligned).
        prefetches(bound, stage, shape, &windows, &[0, n - 1])
            + &output(&|k, dx| {
                let column = |c: usize| format!("{load}({})", windows[c].at("i", dx));
                format!("({})", sum(k, &column))
            })
    });
    out.push_str(&ends(shape, &indices, vector_end.as_deref()));
    out.push_str(&vector_loop_open(shape));
    let count = sums.sums.len();
    // The sums read before (after) the current vector: those with taps at dx < 0 (dx > 0).
    let tapped = |side: fn(i32) -> bool| -> Vec<usize> {
        (0..count)
            .filter(|&k| sums.taps.iter().any(|&(j, dx, _)| j == k && side(dx)))
            .collect()
    };
    let (before, after) = (tapped(|dx| dx < 0), tapped(|dx| dx > 0));
    if lo < 0 {
        for (c, window) in windows.iter().enumerate() {
            let _ = writeln!(
                out,
                "        const {vector} mc{c} = {};",
                before_first(shape, window)
            );
        }
        for &k in &before {
            let _ = writeln!(
                out,
                "        {vector} sm{k} = {};",
                sum(k, &|c| format!("mc{c}"))
            );
        }
    }
    if hi > 0 {
        for (c, window) in windows.iter().enumerate() {
            let _ = writeln!(
                out,
                "        const {vector} ec{c} = {};",
                after_last(shape, window)
            );
        }
        for k in 0..count {
            let _ = writeln!(
                out,
                "        {vector} s{k} = {};",
                sum(k, &|c| format!("{load}({})", windows[c].at("ia", 0)))
            );
        }
        for &k in &after {
            let _ = writeln!(
                out,
                "        const {vector} se{k} = {};",
                sum(k, &|c| format!("ec{c}"))
            );
        }
    }
    let _ = writeln!(
        out,
        "        for (int64_t p{a} = xa; p{a} < xb; p{a} += {n}) {{"
    );
    out.push_str(&indices);
    out.push_str(&prefetches(bound, stage, shape, &windows, &[0]));
    if hi > 0 {
        let names: Vec<String> = (0..count).map(|k| format!("sn{k}")).collect();
        let _ = writeln!(
            out,
            "            {vector} {};\n            if (p{a} + {n} < xb) {{",
            names.join(", ")
        );
        let pinned = columns_in_registers;
        for (c, window) in windows.iter().enumerate() {
            let at = window.at("i", n);
            let _ = if pinned {
                writeln!(
                    out,
                    "                {vector} q{c} = {load}({at});\n                TS_IN_REGISTER(q{c});"
                )
            } else {
                writeln!(out, "                const {vector} q{c} = {load}({at});")
            };
        }
        // Each group of more than one column is added up once, for all the sums.
        for g in (0..sums.groups.len()).filter(|&g| sums.groups[g].len() > 1) {
            let _ = writeln!(
                out,
                "                const {vector} g{g} = {};",
                group_value(sums, g, &|c| format!("q{c}"))
            );
        }
        let group = |g: usize| match sums.groups[g].as_slice() {
            [c] => format!("q{c}"),
            _ => format!("g{g}"),
        };
        let shared = (!sums.shared.is_empty()).then(|| {
            let terms = weighted_groups(sums, &sums.shared, &group);
            let _ = writeln!(
                out,
                "                const {vector} qs = {};",
                chained_sum(&terms)
            );
            "qs"
        });
        for k in 0..count {
            let sum = grouped_sum(k, &group, shared);
            let _ = writeln!(out, "                sn{k} = {sum};");
        }
        out.push_str("            } else {\n");
        // The last vector: only the sums it reads after itself matter.
        for k in 0..count {
            let edge = if after.contains(&k) { "se" } else { "s" };
            let _ = writeln!(out, "                sn{k} = {edge}{k};");
        }
        out.push_str("            }\n");
    } else {
        for k in 0..count {
            let _ = writeln!(
                out,
                "            const {vector} s{k} = {};",
                sum(k, &|c| format!("{load}({})", windows[c].at("i", 0)))
            );
        }
    }
    out.push_str(&output(&|k, dx| match dx {
        0 => format!("s{k}"),
        dx if dx < 0 => shuffle(
            &mask,
            &format!("sm{k}"),
            &format!("s{k}"),
            n + dx..2 * n + dx,
        ),
        dx => shuffle(&mask, &format!("s{k}"), &format!("sn{k}"), dx..n + dx),
    }));
    for &k in &before {
        let _ = writeln!(out, "            sm{k} = s{k};");
    }
    if hi > 0 {
        for k in 0..count {
            let _ = writeln!(out, "            s{k} = sn{k};");
        }
    }
    out.push_str("        }\n    }\n}");
    out
}

/// The products `weight * group` of `terms`, given each group's value.
fn weighted_groups(
    sums: &ColumnSums,
    terms: &SumTerms,
    group: &dyn Fn(usize) -> String,
) -> Vec<String> {
    let literal = |v: f64| Dialect::C.literal(Constant::Float(v), sums.ty);
    terms
        .iter()
        .map(|&(g, w)| format!("{} * {}", literal(w), group(g)))
        .collect()
}

/// The value of group `g` of `sums` given each column's: the column's, or the sum of its
/// columns'.
fn group_value(sums: &ColumnSums, g: usize, column: &dyn Fn(usize) -> String) -> String {
    match sums.groups[g].as_slice() {
        [c] => column(*c),
        columns => {
            let values: Vec<String> = columns.iter().map(|&c| column(c)).collect();
            balanced_sum(&values)
        }
    }
}

/// ` + v`, ` - v` or nothing, to add `v` to an expression.
fn signed(v: i32) -> String {
    match v {
        0 => String::new(),
        v if v < 0 => format!(" - {}", -v),
        v => format!(" + {v}"),
    }
}
