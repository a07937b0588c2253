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
use tessera_plan::reuse::{ColumnSums, SumTerms};

use super::lanes::{RowShape, Window, after_last, before_first, shuffle, vector_row};
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
/// `pinned`: the lanes of the whole vectors the first pass runs on with its columns in
/// registers, where the plan pins them.
pub(crate) fn row(
    sums: &ColumnSums,
    read: &mut dyn FnMut(Id<Field>, &[i32]) -> String,
    target: &str,
    dims: usize,
    mixed: bool,
    simd: bool,
    pinned: Option<usize>,
) -> String {
    let chunk = chunk(sums);
    let a = dims - 1;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "for (int64_t x0 = lo[{a}]; x0 < hi[{a}]; x0 += {chunk}) {{\n    const int64_t x1 = hi[{a}] - x0 < {chunk} ? hi[{a}] : x0 + {chunk};"
    );
    let reads: Vec<String> = (sums.columns.iter())
        .map(|(field, offset)| read(*field, offset))
        .collect();
    out.push_str(&store_partial_sums(sums, &reads, dims, simd, pinned));
    out.push_str(&combine_partial_sums(sums, target, dims, mixed, simd));
    out.push_str("}\n");
    out
}

/// `#pragma omp simd` on a chunk's loop where `simd`.
fn simd_pragma(simd: bool) -> &'static str {
    if simd { "    #pragma omp simd\n" } else { "" }
}

/// The chunk's first loop: the partial sums of its columns (read as `reads`) stored into
/// the `ts_cs<k>` buffers; on whole vectors of `pinned` lanes first where the plan pins the
/// columns in registers.
fn store_partial_sums(
    sums: &ColumnSums,
    reads: &[String],
    dims: usize,
    simd: bool,
    pinned: Option<usize>,
) -> String {
    let (lo, hi) = sums.reach;
    let a = dims - 1;
    let mut out = String::new();
    let first = if let Some(v) = pinned {
        let _ = write!(
            out,
            "    int64_t pv = x0{};\n    for (; pv + {v} <= x1{}; pv += {v}) {{\n{}    }}\n",
            signed(lo),
            signed(hi),
            partial_sums_at(sums, reads, dims, "pv", true)
        );
        "pv".to_string()
    } else {
        format!("x0{}", signed(lo))
    };
    out.push_str(simd_pragma(simd));
    let _ = write!(
        out,
        "    for (int64_t p{a} = {first}; p{a} < x1{}; p{a}++) {{\n{}    }}\n",
        signed(hi),
        partial_sums_at(sums, reads, dims, &format!("p{a}"), false)
    );
    out
}

/// The first loop's body at the point `p`: a whole vector, its columns pinned in registers
/// (`TS_IN_REGISTER`), or one point.
fn partial_sums_at(
    sums: &ColumnSums,
    reads: &[String],
    dims: usize,
    p: &str,
    vector: bool,
) -> String {
    let (a, b) = (dims - 1, dims - 2);
    let suffix = sums.ty;
    let t = Dialect::C.scalar_type(sums.ty);
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
            partial_sum(sums, &sums.shared, false)
        );
    }
    for (k, terms) in sums.sums.iter().enumerate() {
        let j = format!("{p} - x0{}", signed(-sums.reach.0));
        let sum = partial_sum(sums, terms, shared);
        let _ = if vector {
            writeln!(body, "        ts_store_{suffix}(ts_cs{k} + ({j}), {sum});")
        } else {
            writeln!(body, "        ts_cs{k}[{j}] = {sum};")
        };
    }
    body
}

/// A sum of the weighted groups of `terms` of the columns `c<c>`, after the shared terms'
/// sum `cs` where `shared`.
fn partial_sum(sums: &ColumnSums, terms: &SumTerms, shared: bool) -> String {
    let group = |g: usize| group_value(sums, g, &|c| format!("c{c}"));
    let mut products = if shared {
        vec!["cs".to_string()]
    } else {
        Vec::new()
    };
    products.extend(weighted_groups(sums, terms, &group));
    balanced_sum(&products)
}

/// The chunk's second loop: each point's output combined from the buffered sums around it,
/// stored to `target`.
fn combine_partial_sums(
    sums: &ColumnSums,
    target: &str,
    dims: usize,
    mixed: bool,
    simd: bool,
) -> String {
    let (a, b) = (dims - 1, dims - 2);
    let (index, base, origin) = if mixed {
        ("iw", format!("bw{b}"), "worg")
    } else {
        ("i", format!("b{b}"), "org")
    };
    let output = tap_sum(sums, &|k, dx| format!("ts_cs{k}[j{}]", signed(dx)));
    format!(
        "{}    for (int64_t p{a} = x0; p{a} < x1; p{a}++) {{\n        const int64_t {index} = (int64_t){base} + (p{a} - {origin}[{a}]);\n        const int64_t j = p{a} - x0{};\n        {target}[{index}] = {output};\n    }}\n",
        simd_pragma(simd),
        signed(-sums.reach.0)
    )
}

/// The output of one point or vector: the taps' weighted sums (`at(k, dx)`: sum `k` at `dx`
/// from it) and the constant term, added up balanced.
fn tap_sum(sums: &ColumnSums, at: &dyn Fn(usize, i32) -> String) -> String {
    let literal = |v: f64| Dialect::C.literal(Constant::Float(v), sums.ty);
    let mut terms: Vec<String> = (sums.taps.iter())
        .map(|&(k, dx, w)| {
            if w == 1.0 {
                at(k, dx)
            } else {
                format!("{} * {}", literal(w), at(k, dx))
            }
        })
        .collect();
    if sums.constant != 0.0 {
        terms.push(literal(sums.constant));
    }
    balanced_sum(&terms)
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
    let row = LaneSums::new(sums, shape, target);
    let body = row.current_sums(columns_in_registers) + &row.shifted_output() + &row.rotation();
    vector_row(
        bound,
        stage,
        shape,
        &row.windows,
        || row.end_vector(),
        &row.edge_sums(),
        &body,
    )
}

/// A row of column sums on shifted lanes: its columns' windows and which sums are read
/// beside the current vector.
struct LaneSums<'a> {
    sums: &'a ColumnSums,
    shape: &'a RowShape<'a>,
    target: &'a str,
    /// One window per column, read at `reach.0..=reach.1`.
    windows: Vec<Window>,
    /// The sums read before (after) the current vector: those with taps at dx < 0 (dx > 0).
    before: Vec<usize>,
    after: Vec<usize>,
}

impl<'a> LaneSums<'a> {
    /// The row of `sums` in `shape`, stored to `target`.
    fn new(sums: &'a ColumnSums, shape: &'a RowShape<'a>, target: &'a str) -> LaneSums<'a> {
        let a = shape.strides.len() - 1;
        let windows = (sums.columns.iter())
            .map(|(field, offset)| Window {
                field: *field,
                row: linear_offset(&offset[..a], shape.strides),
                shifts: [sums.reach.0, sums.reach.1].into_iter().collect(),
            })
            .collect();
        let tapped = |side: fn(i32) -> bool| -> Vec<usize> {
            (0..sums.sums.len())
                .filter(|&k| sums.taps.iter().any(|&(j, dx, _)| j == k && side(dx)))
                .collect()
        };
        LaneSums {
            sums,
            shape,
            target,
            windows,
            before: tapped(|dx| dx < 0),
            after: tapped(|dx| dx > 0),
        }
    }

    /// The vector type, `ts_v<ty>`.
    fn vector(&self) -> String {
        format!("ts_v{}", self.sums.ty)
    }

    /// The load of the vector at `at`.
    fn load(&self, at: &str) -> String {
        format!("ts_load_{}({at})", self.sums.ty)
    }

    /// Sum `k` of the group vectors named by `group`, after the shared terms (their sum's
    /// name, or summed inline).
    fn grouped_sum(
        &self,
        k: usize,
        group: &dyn Fn(usize) -> String,
        shared: Option<&str>,
    ) -> String {
        let sums = self.sums;
        let mut products = match shared {
            Some(name) => vec![name.to_string()],
            None => weighted_groups(sums, &sums.shared, group),
        };
        products.extend(weighted_groups(sums, &sums.sums[k], group));
        chained_sum(&products)
    }

    /// Sum `k` of the column vectors named by `column`.
    fn sum(&self, k: usize, column: &dyn Fn(usize) -> String) -> String {
        self.grouped_sum(k, &|g| group_value(self.sums, g, column), None)
    }

    /// The store of one vector's output, given the sum `k` at `dx` from it.
    fn output(&self, at: &dyn Fn(usize, i32) -> String) -> String {
        let idx = if self.shape.mixed { "iw" } else { "i" };
        format!(
            "            ts_store_{}({} + {idx}, {});\n",
            self.sums.ty,
            self.target,
            tap_sum(self.sums, at)
        )
    }

    /// The output of an unaligned vector at `i`, its sums taken from loads at each `dx`.
    fn end_vector(&self) -> String {
        self.output(&|k, dx| {
            let column = |c: usize| self.load(&self.windows[c].at("i", dx));
            format!("({})", self.sum(k, &column))
        })
    }

    /// Before the vector loop: the sums of the vector before the first one (`sm<k>`, those
    /// read before), of the first one (`s<k>`) and of the one after the last (`se<k>`, those
    /// read after).
    fn edge_sums(&self) -> String {
        let vector = self.vector();
        let (lo, hi) = (self.windows[0].min(), self.windows[0].max());
        let mut out = String::new();
        if lo < 0 {
            for (c, window) in self.windows.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "        const {vector} mc{c} = {};",
                    before_first(self.shape, window)
                );
            }
            for &k in &self.before {
                let _ = writeln!(
                    out,
                    "        {vector} sm{k} = {};",
                    self.sum(k, &|c| format!("mc{c}"))
                );
            }
        }
        if hi > 0 {
            for (c, window) in self.windows.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "        const {vector} ec{c} = {};",
                    after_last(self.shape, window)
                );
            }
            for k in 0..self.sums.sums.len() {
                let _ = writeln!(
                    out,
                    "        {vector} s{k} = {};",
                    self.sum(k, &|c| self.load(&self.windows[c].at("ia", 0)))
                );
            }
            for &k in &self.after {
                let _ = writeln!(
                    out,
                    "        const {vector} se{k} = {};",
                    self.sum(k, &|c| format!("ec{c}"))
                );
            }
        }
        out
    }

    /// In the loop: the sums of the next vector (`sn<k>`) where sums are read after the
    /// current one (the current ones carried over), else the current vector's sums.
    fn current_sums(&self, columns_in_registers: bool) -> String {
        if self.windows[0].max() > 0 {
            return self.next_sums(columns_in_registers);
        }
        let mut out = String::new();
        for k in 0..self.sums.sums.len() {
            let _ = writeln!(
                out,
                "            const {} s{k} = {};",
                self.vector(),
                self.sum(k, &|c| self.load(&self.windows[c].at("i", 0)))
            );
        }
        out
    }

    /// `sn<k>`: the sums of the next vector, from its columns `q<c>` (pinned in registers
    /// where `pinned`); after the last vector, the edge sums.
    fn next_sums(&self, pinned: bool) -> String {
        let (sums, vector) = (self.sums, self.vector());
        let (a, n) = (
            self.shape.strides.len() - 1,
            self.shape.isa.lanes(sums.ty) as i32,
        );
        let count = sums.sums.len();
        let names: Vec<String> = (0..count).map(|k| format!("sn{k}")).collect();
        let mut out = format!(
            "            {vector} {};\n            if (p{a} + {n} < xb) {{\n",
            names.join(", ")
        );
        for (c, window) in self.windows.iter().enumerate() {
            let load = self.load(&window.at("i", n));
            let _ = if pinned {
                writeln!(
                    out,
                    "                {vector} q{c} = {load};\n                TS_IN_REGISTER(q{c});"
                )
            } else {
                writeln!(out, "                const {vector} q{c} = {load};")
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
            let sum = self.grouped_sum(k, &group, shared);
            let _ = writeln!(out, "                sn{k} = {sum};");
        }
        out.push_str("            } else {\n");
        // The last vector: only the sums it reads after itself matter.
        for k in 0..count {
            let edge = if self.after.contains(&k) { "se" } else { "s" };
            let _ = writeln!(out, "                sn{k} = {edge}{k};");
        }
        out.push_str("            }\n");
        out
    }

    /// The store of the aligned vector's output, its sums at `dx != 0` shuffled out of the
    /// neighbouring vectors' sums.
    fn shifted_output(&self) -> String {
        let n = self.shape.isa.lanes(self.sums.ty) as i32;
        let mask = format!("ts_m{}", self.sums.ty);
        self.output(&|k, dx| match dx {
            0 => format!("s{k}"),
            dx if dx < 0 => shuffle(
                &mask,
                &format!("sm{k}"),
                &format!("s{k}"),
                n + dx..2 * n + dx,
            ),
            dx => shuffle(&mask, &format!("s{k}"), &format!("sn{k}"), dx..n + dx),
        })
    }

    /// The sums moved on by one for the next vector.
    fn rotation(&self) -> String {
        let mut out = String::new();
        for &k in &self.before {
            let _ = writeln!(out, "            sm{k} = s{k};");
        }
        if self.windows[0].max() > 0 {
            for k in 0..self.sums.sums.len() {
                let _ = writeln!(out, "            s{k} = sn{k};");
            }
        }
        out
    }
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
