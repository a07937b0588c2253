//! Term loops: a stage's long sums ([`SumChain`]) run as loops over tables of their
//! coefficients and offsets ([`tessera_plan::cpu::CpuStagePlan::term_loops`]).
//!
//! Each term is added in its written order, so a chain's value is bitwise the written sum's
//! (`-ffp-contract=off` in exact mode keeps `w * x` and `+` separate). The code's size no
//! longer depends on the number of terms: the C compiler's time on a 729-point box stencil
//! drops from minutes to a second.
//!
//! Two forms:
//! - **per point** (border nests, and interiors that cannot be chunked): a scalar loop over
//!   the terms before the statement that uses the chain;
//! - **chunked rows** (interiors): a row is cut into chunks; per chain, one vectorised pass
//!   over the chunk starts the sums in a buffer (`ts_acc<c>`), then `ts_terms_<ty>` (one
//!   out-of-line function per float type and file) adds the terms into it, a pass per group of
//!   up to four, and the stage body runs last with the chains' values read from the buffers.

use std::fmt::Write as _;

use tessera_analysis::chains::{
    ChainStart, MIN_CHAIN_TERMS, SumChain, sum_chains, uses_only_chain_locals,
};
use tessera_ir::{Id, Local, ScalarType, Stage, Statement};

use super::stage::{
    AxisOffset, Context, Leaves, indent_lines, linear_offset, outer_base, point_indices,
};
use crate::cfamily::{Dialect, MathLibrary, print_expr};

/// Terms added per pass over a chunk: the buffer is loaded and stored once per group.
const TERMS_PER_PASS: usize = 4;

/// Keeps the compiler from unrolling a loop over terms: the tables are constants, and an
/// unrolled loop is the written-out sum again (its size, its compile time, and worse code).
const NO_UNROLL: &str = "#pragma GCC unroll 1";

/// Bytes of chain buffers per nest: they stay in the L1 cache.
const BUFFER_BYTES: usize = 16 * 1024;

/// How a nest computes the stage's sum chains.
#[derive(Clone, Copy)]
pub(super) enum ChainForm<'a> {
    /// Written out term by term (no term loops).
    Written,
    /// A scalar term loop per point, before the statement that uses the chain.
    PerPoint(&'a [SumChain]),
    /// Chunked rows: the chains' values come from the buffers (`ts_acc<c>[p - x0]`).
    Chunked(&'a [SumChain]),
}

/// The chains `stage` runs as term loops under its plan (empty without term loops).
pub(super) fn stage_chains(ctx: &Context, stage: Id<Stage>) -> Vec<SumChain> {
    if !ctx.stage_plans[stage.index()].term_loops {
        return Vec::new();
    }
    sum_chains(ctx.bound.checked(), stage, MIN_CHAIN_TERMS)
}

/// Whether the interior rows of `stage` can run `chains` in chunks: unit steps along the
/// fastest axis, and chain heads that need no `let` other than earlier chains'.
pub(super) fn chunkable(ctx: &Context, stage: Id<Stage>, chains: &[SumChain]) -> bool {
    let domain = ctx.bound.stage_domain(stage);
    let checked = ctx.bound.checked();
    domain.stride.last() == Some(&1)
        && chains.iter().enumerate().all(|(c, chain)| {
            chain
                .head()
                .is_none_or(|head| uses_only_chain_locals(checked, stage, head, &chains[..c]))
        })
}

/// The spelling of chain `c`'s value in the stage body of `form`.
pub(super) fn chain_value(form: ChainForm, c: usize, x: &str) -> String {
    match form {
        ChainForm::Chunked(_) => format!("ts_acc{c}[{x} - x0]"),
        _ => format!("ts_c{c}"),
    }
}

/// The constant tables of the chains `form` runs (coefficients; linear offsets, or per-axis
/// offsets for border nests) and, for chunked rows, their buffers: declarations at the top of
/// a nest.
pub(super) fn tables(ctx: &Context, stage: Id<Stage>, form: ChainForm, border: bool) -> String {
    let chains = match form {
        ChainForm::Written => return String::new(),
        ChainForm::PerPoint(chains) | ChainForm::Chunked(chains) => chains,
    };
    let mut out = String::new();
    let mut leaves = Leaves::new(ctx.bound, Some(stage), &ctx.strides, border);
    for (c, chain) in chains.iter().enumerate() {
        let ty = Dialect::C.scalar_type(chain.ty);
        let n = chain.terms.len();
        let coefficients: Vec<String> = (chain.terms.iter())
            .map(|t| {
                print_expr(
                    Dialect::C,
                    library(ctx),
                    ctx.bound.checked(),
                    t.coefficient,
                    &mut leaves,
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "    static const {ty} ts_w{c}[{n}] = {{{}}};",
            coefficients.join(", ")
        );
        if border {
            let offsets: Vec<String> = (chain.terms.iter())
                .map(|t| {
                    let axes: Vec<String> = t.offset.iter().map(i32::to_string).collect();
                    format!("{{{}}}", axes.join(", "))
                })
                .collect();
            let dims = ctx.bound.extents.len();
            let _ = writeln!(
                out,
                "    static const int32_t ts_o{c}[{n}][{dims}] = {{{}}};",
                offsets.join(", ")
            );
        } else {
            let offsets: Vec<String> = (chain.terms.iter())
                .map(|t| linear_offset(&t.offset, &ctx.strides).to_string())
                .collect();
            let _ = writeln!(
                out,
                "    static const int64_t ts_d{c}[{n}] = {{{}}};",
                offsets.join(", ")
            );
        }
    }
    if let ChainForm::Chunked(chains) = form {
        let chunk = chunk_length(chains);
        for (c, chain) in chains.iter().enumerate() {
            let ty = Dialect::C.scalar_type(chain.ty);
            let _ = writeln!(out, "    _Alignas(64) {ty} ts_acc{c}[{chunk}];");
        }
    }
    out
}

/// Points per chunk: the chains' buffers fill [`BUFFER_BYTES`] at most, 64 points at least.
fn chunk_length(chains: &[SumChain]) -> usize {
    let bytes: usize = chains.iter().map(|c| c.ty.size_bytes()).sum();
    (BUFFER_BYTES / bytes.max(1) / 64 * 64).clamp(64, 1024)
}

/// `w * x`, or `x * w` where the terms are written `read * coefficient` (`read_first`).
fn product(read_first: bool, w: &str, x: &str) -> String {
    if read_first {
        format!("({x} * {w})")
    } else {
        format!("({w} * {x})")
    }
}

/// The scalar term loop of chain `c` at one point, declaring `ts_c<c>`: reads at the table's
/// linear offsets from `i`, or mapped through border modes (`border`).
pub(super) fn per_point(
    leaves: &mut Leaves,
    math: MathLibrary,
    chain: &SumChain,
    c: usize,
    border: bool,
) -> String {
    let read = |leaves: &Leaves, k: &str| {
        if border {
            let offset: Vec<AxisOffset> = (0..chain.terms[0].offset.len())
                .map(|a| AxisOffset::Table(format!("ts_o{c}[{k}][{a}]")))
                .collect();
            leaves.border_read(chain.field, &offset)
        } else {
            format!("r{}[i + ts_d{c}[{k}]]", chain.field.index())
        }
    };
    let term = |leaves: &Leaves, k: &str| {
        product(chain.read_first, &format!("ts_w{c}[{k}]"), &read(leaves, k))
    };
    let (first_term, every_term) = (term(leaves, "0"), term(leaves, "k"));
    let (start, first) = start_of(chain, leaves, math, first_term);
    let ty = Dialect::C.scalar_type(chain.ty);
    let n = chain.terms.len();
    format!(
        "{ty} ts_c{c} = {start};\n{NO_UNROLL}\nfor (int k = {first}; k < {n}; k++) ts_c{c} = (ts_c{c} + {every_term});\n"
    )
}

/// The math library of `ctx`'s stage bodies: exact where sums keep their written order.
pub(super) fn library(ctx: &Context) -> MathLibrary {
    MathLibrary::for_exact_mode(!ctx.relaxed)
}

/// The first value of `chain` and the index of its first term still to add: the printed
/// head, or `first_term`.
fn start_of(
    chain: &SumChain,
    leaves: &mut Leaves,
    math: MathLibrary,
    first_term: String,
) -> (String, usize) {
    match chain.start {
        ChainStart::Head(head) => {
            let checked = leaves.bound.checked();
            (print_expr(Dialect::C, math, checked, head, leaves), 0)
        }
        ChainStart::FirstTerm => (first_term, 1),
    }
}

/// The row of a chunked interior nest: per chunk of the fastest axis, the chains' passes into
/// their buffers, then `body` (the stage with the chains read from the buffers) per point.
pub(super) fn chunked_row(
    ctx: &Context,
    stage: Id<Stage>,
    chains: &[SumChain],
    mixed: bool,
    body: &str,
) -> String {
    let a = ctx.bound.extents.len() - 1;
    let chunk = chunk_length(chains);
    let simd = if ctx.openmp { "#pragma omp simd\n" } else { "" };
    let mut out = format!(
        "for (int64_t x0 = lo[{a}]; x0 < hi[{a}]; x0 += {chunk}) {{\n    const int64_t x1 = hi[{a}] - x0 < {chunk} ? hi[{a}] : x0 + {chunk};\n    const int64_t ix = {}(x0 - org[{a}]);\n",
        outer_base(a, "b", "(int64_t)")
    );
    let mut leaves = Leaves::new(ctx.bound, Some(stage), &ctx.strides, false);
    for (c, chain) in chains.iter().enumerate() {
        leaves.locals = chain_locals(ctx, stage, &chains[..c], a);
        let field = chain.field.index();
        let first_term = product(
            chain.read_first,
            &format!("ts_w{c}[0]"),
            &format!("r{field}[i + ts_d{c}[0]]"),
        );
        let (start, first) = start_of(chain, &mut leaves, library(ctx), first_term);
        let start_loop = format!(
            "{simd}for (int64_t p{a} = x0; p{a} < x1; p{a}++) {{\n    const int64_t i = ix + (p{a} - x0);\n    ts_acc{c}[p{a} - x0] = {start};\n}}\n"
        );
        out.push_str(&indent_lines(&start_loop, "    "));
        let n = chain.terms.len();
        let _ = writeln!(
            out,
            "    ts_terms_{}(ts_acc{c}, r{field} + ix, ts_w{c}, ts_d{c}, {first}, {n}, x1 - x0, {});",
            chain.ty,
            i32::from(chain.read_first)
        );
    }
    let points = format!(
        "{simd}for (int64_t p{a} = x0; p{a} < x1; p{a}++) {{\n{}{}}}\n",
        indent_lines(&point_indices(a, mixed, None), "    "),
        indent_lines(body, "    ")
    );
    out.push_str(&indent_lines(&points, "    "));
    out.push_str("}\n");
    out
}

/// The functions adding a chain's terms into its buffer, one per float type, shared by every
/// chain and view of the file (`simd`: whether to mark the passes `#pragma omp simd`):
/// `ts_terms_<ty>(acc, base, w, d, first, n, m, read_first)` adds terms `first..n` to
/// `acc[0..m)` in order, `acc[j] = acc[j] + w[k] * base[d[k] + j]` (`base[..] * w[k]` where
/// `read_first`), up to [`TERMS_PER_PASS`] terms per pass over the buffer.
pub(super) fn helpers(simd: bool) -> String {
    let pragma = if simd { "#pragma omp simd\n" } else { "" };
    let mut out = String::new();
    for ty in [ScalarType::F32, ScalarType::F64] {
        let t = Dialect::C.scalar_type(ty);
        let pass = |group: usize| {
            let mut text = String::new();
            for g in 0..group {
                let _ = writeln!(
                    text,
                    "const {t} w{g} = w[k + {g}];\nconst {t}* s{g} = base + d[k + {g}];"
                );
            }
            let sum = |read_first: bool| {
                (0..group).fold("acc[j]".to_string(), |acc, g| {
                    let (w, x) = (format!("w{g}"), format!("s{g}[j]"));
                    format!("({acc} + {})", product(read_first, &w, &x))
                })
            };
            let _ = write!(
                text,
                "if (read_first) {{\n{}}} else {{\n{}}}\n",
                indent_lines(
                    &format!(
                        "{pragma}for (int64_t j = 0; j < m; j++) acc[j] = {};",
                        sum(true)
                    ),
                    "    "
                ),
                indent_lines(
                    &format!(
                        "{pragma}for (int64_t j = 0; j < m; j++) acc[j] = {};",
                        sum(false)
                    ),
                    "    "
                ),
            );
            indent_lines(&text, "        ")
        };
        let step = TERMS_PER_PASS;
        let _ = write!(
            out,
            "TS_TERM_LOOPS static void ts_terms_{ty}({t}* restrict acc, const {t}* restrict base, const {t}* restrict w, const int64_t* restrict d, int first, int n, int64_t m, int read_first) {{\n    int k = first;\n    {NO_UNROLL}\n    for (; k + {step} <= n; k += {step}) {{\n{}    }}\n    {NO_UNROLL}\n    for (; k < n; k++) {{\n{}    }}\n}}\n\n",
            pass(step),
            pass(1)
        );
    }
    out
}

/// The locals bound to earlier chains, spelled as those chains' buffer entries at `p<a>`.
fn chain_locals(
    ctx: &Context,
    stage: Id<Stage>,
    earlier: &[SumChain],
    a: usize,
) -> Vec<(Id<Local>, String)> {
    let body = &ctx.bound.program().stages[stage].body;
    body.iter()
        .filter_map(|s| match s {
            Statement::Let { local, value } => earlier
                .iter()
                .position(|chain| chain.root == *value)
                .map(|c| (*local, format!("ts_acc{c}[p{a} - x0]"))),
            Statement::Assign { .. } => None,
        })
        .collect()
}
