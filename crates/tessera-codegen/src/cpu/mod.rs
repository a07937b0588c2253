//! C + OpenMP source for the CPU backend's strategies.
//!
//! [`emit_c`] is a pure function of (bound program, plan). The generated file exports:
//!
//! - `int tessera_run(void* const* user, void* const* spare, int64_t t0, int64_t steps, int threads)`:
//!   `steps` steps without reductions, one stage at a time over spatial tiles (`naive`,
//!   `parallel`, `blocked`);
//! - `int tessera_step_reduce(void* const* user, void* const* spare, int64_t t, const int32_t* due, double* partials, int threads)`:
//!   one step that also computes the reductions flagged in `due` (by reduction index) into row
//!   partials (see [`layout::partial_layout`]);
//! - `int tessera_run_overlapped(void* const* user, void* const* spare, int64_t t0, int64_t steps, const int64_t* tiles, int64_t ntiles, int threads, void* scratch)`
//!   (`overlapped` plans; `scratch` is unused): `steps` fused steps per tile, tiles described by records of
//!   [`layout::push_tile_record`]; the new values of every updated field are left in
//!   `spare[f]` (`user[f]` keeps the old ones: the caller swaps the two for the next call);
//! - `int tessera_run_wavefront(void* const* user, void* const* spare, int64_t t0, int64_t steps, const int64_t* tiles, int64_t ntiles, int threads, void* scratch)`
//!   (`wavefront` plans): `steps` fused steps per band, bands described by the same records,
//!   streamed along the slowest axis through per-step ring buffers (see `wavefront`); results
//!   in `spare` as for `overlapped`; the rings stay in `scratch` between calls;
//! - `void* tessera_scratch_open(int threads)` and `void tessera_scratch_close(void* scratch, int threads)`
//!   (`wavefront` plans): the scratch of one executable, for `threads` threads (NULL when out of
//!   memory); calls that share one run one at a time;
//! - `void tessera_copy_back(void* const* user, void* const* spare, int threads)`: copies every
//!   updated field from `spare` to `user` (after an odd number of fused calls);
//! - `int tessera_until(const double* values)` when the program has a stop condition.
//!
//! `user[f]` is field `f`'s array (it holds the current values before and after every call);
//! `spare[f]` is a second array of the same size for every updated field, which agrees with
//! `user[f]` outside the domains of the field's writers between calls (the caller makes it a
//! copy before the first call). Functions return 0, or 1 when scratch memory could not be
//! allocated. Linear indices have type `ts_idx`: `int64_t` when some index can reach 2^31
//! ([`tessera_plan::cpu::CpuPlan::index64`]), else `int32_t`.

mod lanes;
pub mod layout;
mod reuse;
mod scan;
mod stage;
mod terms;
mod wavefront;

use std::fmt::Write as _;

use tessera_analysis::BoundProgram;
use tessera_ir::escape::comment_text;
use tessera_ir::{Field, Id, ReductionPlacement, ScalarType, Stage};
use tessera_plan::cpu::{CpuLayout, CpuPlan, CpuStrategy};
use tessera_plan::lanes::shifted_lanes;
use tessera_plan::reuse::{ColumnSums, column_form};

use crate::cfamily::{Dialect, MathLibrary, print_expr};
use crate::exact_math::{exact_math_source, needs_exact_math};
use crate::half::{half_source, storage_types};
use layout::{WriteMode, partial_layout, updated_fields, used_fields, write_mode};
use stage::{Context, View};

/// The C source of `bound` under `plan`.
pub fn emit_c(bound: &BoundProgram, plan: &CpuPlan) -> String {
    let program = bound.program();
    let layout = plan.layout(bound);
    let column_sums: Vec<Option<ColumnSums>> = (program.stages.ids().zip(&plan.stages))
        .map(|(stage, form)| {
            form.column_sums
                .then(|| column_form(bound, stage))
                .flatten()
        })
        .collect();
    let lane_shifts: Vec<Option<ScalarType>> = (program.stages.ids().zip(&plan.stages))
        .map(|(stage, form)| (form.lanes.then(|| shifted_lanes(bound, stage, plan.isa))).flatten())
        .collect();
    let global = Context {
        bound,
        strides: row_major_strides(&bound.extents),
        write_strides: None,
        openmp: plan.strategy != CpuStrategy::Naive,
        relaxed: !plan.exact,
        column_sums: &column_sums,
        lane_shifts: &lane_shifts,
        stage_plans: &plan.stages,
        plane_pairs: false,
        isa: plan.isa,
    };
    let mut out = String::new();
    emit_header(bound, plan, &layout, &mut out);
    emit_constants(bound, &global.strides, &mut out);
    if plan.stages.iter().any(|s| s.term_loops && !s.column_sums) {
        out.push_str(&terms::helpers(global.openmp));
    }
    emit_global_stages(&global, plan, &mut out);
    emit_run(bound, &mut out);
    emit_step_reduce(bound, plan, &mut out);
    if matches!(
        plan.strategy,
        CpuStrategy::Overlapped | CpuStrategy::Wavefront
    ) {
        emit_fused(&global, plan, &layout, &mut out);
    }
    emit_until(bound, MathLibrary::for_exact_mode(plan.exact), &mut out);
    out
}

/// Emits the file's opening comment, preamble and helpers, the index type and the sizes.
fn emit_header(bound: &BoundProgram, plan: &CpuPlan, layout: &CpuLayout, out: &mut String) {
    let program = bound.program();
    let title = format!(
        "Tessera CPU kernel for program `{}`: {}.",
        program.name,
        plan.summary(Some(layout))
    );
    let _ = writeln!(out, "/* {} */", comment_text(&title));
    out.push_str(&Dialect::C.preamble());
    out.push_str(&half_source(Dialect::C, &storage_types(bound.checked())));
    if plan.exact && needs_exact_math(bound.checked()) {
        out.push_str(&exact_math_source(Dialect::C));
    }
    out.push_str(SUPPORT);
    if plan.lane_shifts() || plan.column_sums() {
        out.push_str(&lanes::prelude(plan.isa));
    }
    let _ = writeln!(
        out,
        "typedef {} ts_idx;",
        if layout.index64 { "int64_t" } else { "int32_t" }
    );
    let _ = writeln!(
        out,
        "#define TS_DIMS {}\n#define TS_FIELDS {}\n#define TS_SLOTS (TS_FIELDS + {})\n",
        bound.extents.len(),
        program.fields.len().max(1),
        program.tables.len()
    );
}

/// Emits the grid's strides `ts_gst`, the zero origin, the number of cells and the element
/// size of every field.
fn emit_constants(bound: &BoundProgram, strides: &[i64], out: &mut String) {
    let _ = writeln!(
        out,
        "static const int64_t ts_gst[TS_DIMS] = {{{}}};",
        axis_list(strides.len(), |a| strides[a])
    );
    let _ = writeln!(out, "static const int64_t ts_zero[TS_DIMS] = {{0}};");
    let _ = writeln!(
        out,
        "static const int64_t ts_cells = {};",
        bound.cell_count()
    );
    let elem: Vec<String> = (bound.program().fields.values())
        .map(|f| f.ty.size_bytes().to_string())
        .collect();
    let _ = writeln!(
        out,
        "static const int64_t ts_es[TS_FIELDS] = {{{}}};\n",
        if elem.is_empty() {
            "0".into()
        } else {
            elem.join(", ")
        }
    );
}

/// Emits every stage's functions on the global grid (box, reductions, tiles; the lines of a
/// stage with a scan) and the after-step reductions.
fn emit_global_stages(global: &Context, plan: &CpuPlan, out: &mut String) {
    let bound = global.bound;
    let program = bound.program();
    let offsets = partial_layout(bound);
    for stage in program.stages.ids() {
        if let Some(axis) = program.stages[stage].scan_axis() {
            scan::emit_scan_lines(global, plan, stage, axis, out);
            continue;
        }
        stage::emit_stage_box(global, View::Global, stage, out);
        if !bound.checked().stage_reductions(stage).is_empty() {
            stage::emit_stage_reduce(global, stage, &offsets, out);
        }
        emit_stage_tiles(bound, plan, stage, out);
    }
    for (id, reduction) in program.reductions.iter() {
        if let ReductionPlacement::AfterStep { .. } = reduction.placement {
            stage::emit_after_step_reduction(global, id, offsets[id.index()].0, out);
        }
    }
}

/// Emits what the fused strategies (`overlapped`, `wavefront`) add: the scratch strides
/// `ts_lst`, the stage functions on scratch views, `tessera_copy_back` and the driver.
fn emit_fused(global: &Context, plan: &CpuPlan, layout: &CpuLayout, out: &mut String) {
    let bound = global.bound;
    let scratch_strides = row_major_strides(&layout.scratch_extents);
    let _ = writeln!(
        out,
        "static const int64_t ts_lst[TS_DIMS] = {{{}}};",
        axis_list(scratch_strides.len(), |a| scratch_strides[a])
    );
    let local = Context {
        strides: scratch_strides,
        openmp: true,
        plane_pairs: plan.plane_pairs,
        ..global.clone()
    };
    for stage in bound.program().stages.ids() {
        stage::emit_stage_box(&local, View::Scratch, stage, out);
    }
    emit_copy_back(bound, out);
    if plan.strategy == CpuStrategy::Overlapped {
        emit_run_overlapped(bound, layout, out);
    } else {
        emit_wavefront_ends(global, &local, out);
        wavefront::emit_run_wavefront(bound, plan, layout, out);
    }
}

/// Emits the stage functions of the wavefront's first step, which reads the global arrays,
/// and of its last, which writes them (`local`: the scratch views' context).
fn emit_wavefront_ends(global: &Context, local: &Context, out: &mut String) {
    let first = Context {
        strides: global.strides.clone(),
        write_strides: Some(local.strides.clone()),
        ..local.clone()
    };
    let last = Context {
        write_strides: Some(global.strides.clone()),
        ..local.clone()
    };
    for stage in global.bound.program().stages.ids() {
        stage::emit_stage_box(&first, View::GlobalToScratch, stage, out);
        stage::emit_stage_box(&last, View::ScratchToGlobal, stage, out);
    }
}

/// Emits `tessera_until` when the program has a stop condition.
fn emit_until(bound: &BoundProgram, math: MathLibrary, out: &mut String) {
    if let Some(until) = &bound.program().until {
        let mut leaves = stage::until_leaves(bound);
        let condition = print_expr(
            Dialect::C,
            math,
            bound.checked(),
            until.condition,
            &mut leaves,
        );
        let _ = writeln!(
            out,
            "int tessera_until(const double* rv) {{\n    return {condition} ? 1 : 0;\n}}"
        );
    }
}

/// Row-major strides of `extents` (the fastest axis has stride 1).
fn row_major_strides(extents: &[usize]) -> Vec<i64> {
    let mut strides = vec![1i64; extents.len()];
    for a in (0..extents.len().saturating_sub(1)).rev() {
        strides[a] = strides[a + 1] * extents[a + 1] as i64;
    }
    strides
}

/// Helpers of the generated file beyond the C-family preamble.
const SUPPORT: &str = r#"#include <stdlib.h>
#include <omp.h>

/* 512-bit vectors for loops bound by their multiply-adds (gcc on AVX-512 targets; gcc's
   -march=native default is 256 bits, which suits the load-bound loops). */
#if defined(__AVX512F__) && defined(__GNUC__) && !defined(__clang__)
#define TS_WIDE_VECTORS __attribute__((target("prefer-vector-width=512")))
#else
#define TS_WIDE_VECTORS
#endif
/* The term-loop functions (ts_terms_*) stay out of line: one copy per file however many
   chains call them. gcc's unroll-and-jam would fuse two passes over terms into one loop
   whose loads it can only gather, four times slower. */
#if defined(__GNUC__) && !defined(__clang__)
#define TS_TERM_LOOPS __attribute__((noinline, optimize("no-loop-unroll-and-jam")))
#else
#define TS_TERM_LOOPS __attribute__((noinline))
#endif
#define TS_NAN ts_f64_from_bits(0x7ff8000000000000ull)
#define TS_INF ts_f64_from_bits(0x7ff0000000000000ull)
static inline int64_t ts_clamp(int64_t q, int64_t n) { return q < 0 ? 0 : q >= n ? n - 1 : q; }
static inline int64_t ts_wrap(int64_t q, int64_t n) { int64_t r = q % n; return r < 0 ? r + n : r; }
static inline int64_t ts_mirror(int64_t q, int64_t n) { return q < 0 ? -q : q >= n ? 2 * n - 2 - q : q; }
/* The first index >= v on the lattice base + k * step (v >= base). */
static inline int64_t ts_align(int64_t v, int64_t base, int64_t step) { return base + (v - base + step - 1) / step * step; }

/* memcpy, with the single points of narrow boxes (a border column) copied inline. */
static inline void ts_copy_bytes(char* dst, const char* src, size_t len) {
    switch (len) {
    case 1: memcpy(dst, src, 1); break;
    case 2: memcpy(dst, src, 2); break;
    case 4: memcpy(dst, src, 4); break;
    case 8: memcpy(dst, src, 8); break;
    default: memcpy(dst, src, len);
    }
}

/* Copies the points lo..hi (every step-th, lo on the lattice) between two views. The rows
   along the second-fastest axis are walked at fixed strides: the wavefront fills the border
   columns of every ring plane with it, one point per row. */
static void ts_copy_box(char* dst, const int64_t* dst_st, const int64_t* dst_org,
                        const char* src, const int64_t* src_st, const int64_t* src_org,
                        int64_t es, const int64_t* lo, const int64_t* hi, const int64_t* step, int dims) {
    int64_t p[8];
    for (int a = 0; a < dims; a++) { if (lo[a] >= hi[a]) return; p[a] = lo[a]; }
    const int f = dims - 1, g = f > 0 ? f - 1 : 0;
    const int64_t width = hi[f] - lo[f];
    const int64_t rows = f > 0 ? (hi[g] - lo[g] + step[g] - 1) / step[g] : 1;
    const int64_t to_next = f > 0 ? dst_st[g] * step[g] * es : 0, from_next = f > 0 ? src_st[g] * step[g] * es : 0;
    for (;;) {
        int64_t d = p[f] - dst_org[f], s = p[f] - src_org[f];
        for (int a = 0; a < f; a++) { d += (p[a] - dst_org[a]) * dst_st[a]; s += (p[a] - src_org[a]) * src_st[a]; }
        char* to = dst + d * es;
        const char* from = src + s * es;
        for (int64_t r = 0; r < rows; r++, to += to_next, from += from_next) {
            if (step[f] == 1) {
                ts_copy_bytes(to, from, (size_t)(width * es));
            } else {
                for (int64_t x = 0; x < width; x += step[f]) memcpy(to + x * es, from + x * es, (size_t)es);
            }
        }
        int a = f - 2;
        for (; a >= 0; a--) { p[a] += step[a]; if (p[a] < hi[a]) break; p[a] = lo[a]; }
        if (a < 0) return;
    }
}

/* Copies whole arrays, split over threads. */
static void ts_copy_all(void* dst, const void* src, int64_t bytes, int threads) {
    const int64_t chunk = 1 << 20, n = (bytes + chunk - 1) / chunk;
    #pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t c = 0; c < n; c++) {
        const int64_t at = c * chunk, len = bytes - at < chunk ? bytes - at : chunk;
        memcpy((char*)dst + at, (const char*)src + at, (size_t)len);
    }
}

"#;

/// Emits `ts_s<k>_tiles`: the stage over spatial tiles of its domain, split over threads.
fn emit_stage_tiles(bound: &BoundProgram, plan: &CpuPlan, stage: Id<Stage>, out: &mut String) {
    let k = stage.index();
    let domain = bound.stage_domain(stage);
    let dims = bound.extents.len();
    let counts: Vec<i64> = (0..dims)
        .map(|a| {
            if domain.rect.is_empty() {
                0
            } else {
                (domain.rect.len(a) as u64).div_ceil(plan.tile[a] as u64) as i64
            }
        })
        .collect();
    let _ = writeln!(
        out,
        "static void ts_s{k}_tiles(void* const* cur, void* const* nxt, int64_t t, int threads{}) {{",
        stage::values_param(bound, stage)
    );
    let _ = writeln!(out, "    static const int64_t org[TS_DIMS] = {{0}};");
    axis_constant(out, "dlo", dims, |a| domain.rect.lo[a]);
    axis_constant(out, "dhi", dims, |a| domain.rect.hi[a]);
    axis_constant(out, "tile", dims, |a| plan.tile[a] as i64);
    axis_constant(out, "count", dims, |a| counts[a]);
    let _ = writeln!(
        out,
        "    const int64_t tiles = {};",
        counts.iter().product::<i64>()
    );
    if plan.strategy == CpuStrategy::Naive {
        out.push_str("    (void)threads;\n");
    } else {
        out.push_str("    #pragma omp parallel for schedule(static) num_threads(threads)\n");
    }
    out.push_str(
        "    for (int64_t n = 0; n < tiles; n++) {\n\
         \x20       int64_t lo[TS_DIMS], hi[TS_DIMS], m = n;\n\
         \x20       for (int a = TS_DIMS - 1; a >= 0; a--) {\n\
         \x20           const int64_t c = m % count[a];\n\
         \x20           m /= count[a];\n\
         \x20           lo[a] = dlo[a] + c * tile[a];\n\
         \x20           hi[a] = lo[a] + tile[a] < dhi[a] ? lo[a] + tile[a] : dhi[a];\n\
         \x20       }\n",
    );
    let _ = writeln!(
        out,
        "        ts_s{k}_g(cur, nxt, org, lo, hi, t{});\n    }}\n}}\n",
        stage::values_arg(bound, stage)
    );
}

/// The statements that finish stage `k` on views `cur`/`nxt` (pointer arrays) with strides
/// `st` and origin `org`: swaps, or copies back over `lo..hi` (clipped to the domain).
fn post_stage(
    bound: &BoundProgram,
    stage: Id<Stage>,
    cur: &str,
    nxt: &str,
    st: &str,
    org: &str,
    bounds: Option<(&str, &str)>,
) -> String {
    let domain = bound.stage_domain(stage);
    let mut out = String::new();
    for field in bound.program().stages[stage].outputs() {
        let f = field.index();
        match write_mode(bound, stage, field) {
            WriteMode::InPlace => {}
            WriteMode::Swap => {
                let _ = writeln!(
                    out,
                    "{{ void* s_ = {cur}[{f}]; {cur}[{f}] = {nxt}[{f}]; {nxt}[{f}] = s_; }}"
                );
            }
            WriteMode::CopyBack => {
                let _ = writeln!(out, "{{");
                axis_constant(&mut out, "dlo", bound.extents.len(), |a| domain.rect.lo[a]);
                axis_constant(&mut out, "dhi", bound.extents.len(), |a| domain.rect.hi[a]);
                axis_constant(&mut out, "step", bound.extents.len(), |a| domain.stride[a]);
                let _ = writeln!(out, "    int64_t cl[TS_DIMS], ch[TS_DIMS];");
                let (lo, hi) = bounds.unwrap_or(("dlo", "dhi"));
                let _ = writeln!(out, "    for (int a = 0; a < TS_DIMS; a++) {{");
                let _ = writeln!(
                    out,
                    "        cl[a] = ts_align({lo}[a] > dlo[a] ? {lo}[a] : dlo[a], dlo[a], step[a]);"
                );
                let _ = writeln!(out, "        ch[a] = {hi}[a] < dhi[a] ? {hi}[a] : dhi[a];");
                let _ = writeln!(out, "    }}");
                let _ = writeln!(
                    out,
                    "    ts_copy_box((char*){cur}[{f}], {st}, {org}, (const char*){nxt}[{f}], {st}, {org}, ts_es[{f}], cl, ch, step, TS_DIMS);"
                );
                let _ = writeln!(out, "}}");
            }
        }
    }
    out
}

/// Declarations of the working pointer arrays and the end-of-call copy into `user`.
pub(crate) fn working_arrays(bound: &BoundProgram) -> (String, String) {
    let mut open = String::from("    void* cur[TS_SLOTS] = {0};\n    void* nxt[TS_SLOTS] = {0};\n");
    open.push_str(&table_slots(bound, &["cur", "nxt"], "user", "    "));
    let updated = updated_fields(bound);
    for field in bound.program().fields.ids() {
        let f = field.index();
        let _ = writeln!(open, "    cur[{f}] = user[{f}];");
        if updated.contains(&field) {
            let _ = writeln!(open, "    nxt[{f}] = spare[{f}];");
        }
    }
    let mut close = String::new();
    for field in updated {
        let f = field.index();
        let _ = writeln!(
            close,
            "    if (cur[{f}] != user[{f}]) ts_copy_all(user[{f}], cur[{f}], ts_cells * ts_es[{f}], threads);"
        );
    }
    (open, close)
}

/// Copies the input tables' pointers, which follow the fields' in every pointer array
/// (`TS_FIELDS + i`), from `from` into each of `to`, each line indented by `indent`.
pub(crate) fn table_slots(bound: &BoundProgram, to: &[&str], from: &str, indent: &str) -> String {
    let mut out = String::new();
    for table in bound.program().tables.ids() {
        for dst in to {
            let slot = format!("TS_FIELDS + {}", table.index());
            let _ = writeln!(out, "{indent}{dst}[{slot}] = {from}[{slot}];");
        }
    }
    out
}

fn emit_run(bound: &BoundProgram, out: &mut String) {
    let (open, close) = working_arrays(bound);
    out.push_str("int tessera_run(void* const* user, void* const* spare, int64_t t0, int64_t steps, int threads) {\n");
    out.push_str(&open);
    if !bound.checked().stage_read_reductions().is_empty() {
        // The schedule runs every step of such a program through `tessera_step_reduce`.
        out.push_str("    const double* const rv = 0; /* unused: every step computes the reductions stages read */\n");
    }
    out.push_str("    for (int64_t s = 0; s < steps; s++) {\n        const int64_t t = t0 + s;\n");
    for stage in bound.program().stages.ids() {
        let _ = writeln!(
            out,
            "        ts_s{}_tiles(cur, nxt, t, threads{});",
            stage.index(),
            stage::values_arg(bound, stage)
        );
        out.push_str(&indent(
            &post_stage(bound, stage, "cur", "nxt", "ts_gst", "ts_zero", None),
            "        ",
        ));
    }
    out.push_str("    }\n");
    out.push_str(&close);
    out.push_str("    return 0;\n}\n\n");
}

fn emit_step_reduce(bound: &BoundProgram, plan: &CpuPlan, out: &mut String) {
    let program = bound.program();
    let dims = bound.extents.len();
    let (open, close) = working_arrays(bound);
    out.push_str("int tessera_step_reduce(void* const* user, void* const* spare, int64_t t, const int32_t* due, double* partials, int threads) {\n");
    out.push_str(&open);
    let read = bound.checked().stage_read_reductions();
    if !read.is_empty() {
        let _ = writeln!(
            out,
            "    double rv[{}] = {{0}}; /* this step's reductions that later stages read */",
            program.reductions.len()
        );
    }
    let offsets = partial_layout(bound);
    let parallel = plan.strategy != CpuStrategy::Naive && dims > 1;
    let region = if parallel {
        "    #pragma omp parallel num_threads(threads)\n"
    } else {
        ""
    };
    for stage in program.stages.ids() {
        let k = stage.index();
        let rv = stage::values_arg(bound, stage);
        let reductions = bound.checked().stage_reductions(stage);
        if reductions.is_empty() {
            let _ = writeln!(out, "    ts_s{k}_tiles(cur, nxt, t, threads{rv});");
        } else {
            let due: Vec<String> = reductions
                .iter()
                .map(|r| format!("due[{}]", r.index()))
                .collect();
            let _ = writeln!(out, "    if ({}) {{", due.join(" || "));
            let _ = writeln!(
                out,
                "    {region}    ts_s{k}_red(cur, nxt, t, due, partials{rv});"
            );
            let _ = writeln!(
                out,
                "    }} else {{\n        ts_s{k}_tiles(cur, nxt, t, threads{rv});\n    }}"
            );
            for &r in reductions.iter().filter(|r| read.contains(r)) {
                stage::fold_partials(bound, r, offsets[r.index()], out);
            }
        }
        out.push_str(&indent(
            &post_stage(bound, stage, "cur", "nxt", "ts_gst", "ts_zero", None),
            "    ",
        ));
    }
    for (id, reduction) in program.reductions.iter() {
        if let ReductionPlacement::AfterStep { .. } = reduction.placement {
            let r = id.index();
            let _ = writeln!(
                out,
                "    if (due[{r}]) {{\n    {region}    ts_r{r}_after(cur, t, partials);\n    }}"
            );
        }
    }
    out.push_str(&close);
    out.push_str("    (void)threads;\n    return 0;\n}\n\n");
}

/// Emits `tessera_run_overlapped`: each thread's tile buffers, then per tile its inputs
/// copied in, the fused steps computed in the buffers and the core copied out.
fn emit_run_overlapped(bound: &BoundProgram, layout: &CpuLayout, out: &mut String) {
    let dims = bound.extents.len();
    let fields = bound.program().fields.len();
    let stages = bound.program().stages.len();
    out.push_str(
        "int tessera_run_overlapped(void* const* user, void* const* spare, int64_t t0, int64_t steps, const int64_t* tiles, int64_t ntiles, int threads, void* scratch) {\n",
    );
    out.push_str(&working_arrays(bound).0);
    // The tile buffers come from malloc, which keeps them for the next pass.
    out.push_str("    (void)scratch;\n");
    axis_constant(out, "ones", dims, |_| 1);
    let _ = writeln!(
        out,
        "    const int64_t record = {} * (2 + {fields} + steps * {stages});",
        2 * dims
    );
    out.push_str(PARALLEL_OPEN);
    emit_tile_buffers(bound, layout, out);
    out.push_str(TILE_LOOP_OPEN);
    let _ = writeln!(
        out,
        "            const int64_t* org = rec;\n            const int64_t* core = rec + {};",
        2 * dims
    );
    out.push_str("            void* lc[TS_SLOTS];\n            void* ln[TS_SLOTS];\n");
    out.push_str(
        "            memcpy(lc, la, sizeof lc);\n            memcpy(ln, lb, sizeof ln);\n",
    );
    emit_tile_inputs(bound, out);
    emit_tile_steps(bound, out);
    for field in updated_fields(bound) {
        let f = field.index();
        let _ = writeln!(
            out,
            "            ts_copy_box((char*)nxt[{f}], ts_gst, ts_zero, (const char*)lc[{f}], ts_lst, org, ts_es[{f}], core, core + TS_DIMS, ones, TS_DIMS);"
        );
    }
    out.push_str("        }\n        for (int f = 0; f < TS_FIELDS; f++) { free(la[f]); free(lb[f]); }\n    }\n");
    out.push_str(FUSED_RETURN);
}

/// Whether some stage writes `field` into its other buffer (not in place): then the tile
/// needs a second buffer for it.
fn double_buffered(bound: &BoundProgram, field: Id<Field>) -> bool {
    let program = bound.program();
    program.stages.ids().any(|s| {
        program.stages[s].outputs().contains(&field)
            && write_mode(bound, s, field) != WriteMode::InPlace
    })
}

/// The bytes of one thread's scratch under `plan`, as the generated code allocates it: the
/// overlapped tile buffers (`la`, and `lb` for double-buffered fields), or the wavefront's
/// rings (one per used field and intermediate step; physical pages, the mirrored mapping's
/// address space not counted).
pub fn scratch_bytes_per_thread(bound: &BoundProgram, plan: &CpuPlan, layout: &CpuLayout) -> u64 {
    let program = bound.program();
    let cells: u64 = layout.scratch_extents.iter().map(|&e| e as u64).product();
    let copies = |field: Id<Field>| -> u64 {
        match plan.strategy {
            CpuStrategy::Overlapped => 1 + u64::from(double_buffered(bound, field)),
            CpuStrategy::Wavefront => u64::from(plan.time_tile.saturating_sub(1)),
            _ => 0,
        }
    };
    used_fields(bound)
        .into_iter()
        .map(|f| copies(f) * cells * program.fields[f].ty.size_bytes() as u64)
        .sum()
}

/// Emits the thread's tile buffers `la` (and `lb` for double-buffered fields), and `ok`.
fn emit_tile_buffers(bound: &BoundProgram, layout: &CpuLayout, out: &mut String) {
    let program = bound.program();
    let scratch_cells: usize = layout.scratch_extents.iter().product();
    out.push_str("        void* la[TS_SLOTS] = {0};\n        void* lb[TS_SLOTS] = {0};\n        int ok = 1;\n");
    out.push_str(&table_slots(bound, &["la", "lb"], "cur", "        "));
    for field in used_fields(bound) {
        let f = field.index();
        let bytes = (scratch_cells * program.fields[field].ty.size_bytes()).div_ceil(64) * 64;
        let _ = writeln!(
            out,
            "        la[{f}] = aligned_alloc(64, {bytes});\n        ok = ok && la[{f}];"
        );
        if double_buffered(bound, field) {
            let _ = writeln!(
                out,
                "        lb[{f}] = aligned_alloc(64, {bytes});\n        ok = ok && lb[{f}];"
            );
        }
    }
}

/// Emits the copies of every used field's input region into the tile's buffers.
fn emit_tile_inputs(bound: &BoundProgram, out: &mut String) {
    let dims = bound.extents.len();
    for field in used_fields(bound) {
        let f = field.index();
        let input = 2 * dims * (2 + f);
        let _ = writeln!(
            out,
            "            {{\n                const int64_t* in = rec + {input};"
        );
        let copy = |dst: &str| {
            format!(
                "                ts_copy_box((char*){dst}[{f}], ts_lst, org, (const char*)cur[{f}], ts_gst, ts_zero, ts_es[{f}], in, in + TS_DIMS, ones, TS_DIMS);\n"
            )
        };
        out.push_str(&copy("lc"));
        if double_buffered(bound, field) {
            out.push_str(&copy("ln"));
        }
        out.push_str("            }\n");
    }
}

/// Emits the loop over the fused steps: each stage over its compute region of the step in
/// the tile's buffers, then swapped or copied back.
fn emit_tile_steps(bound: &BoundProgram, out: &mut String) {
    let dims = bound.extents.len();
    let fields = bound.program().fields.len();
    let stages = bound.program().stages.len();
    out.push_str("            for (int64_t s = 0; s < steps; s++) {\n                const int64_t t = t0 + s;\n");
    for stage in bound.program().stages.ids() {
        let k = stage.index();
        let at = format!(
            "rec + {} + {} * (s * {stages} + {k})",
            2 * dims * (2 + fields),
            2 * dims
        );
        let _ = writeln!(
            out,
            "                {{\n                    const int64_t* c = {at};"
        );
        let _ = writeln!(
            out,
            "                    ts_s{k}_l(lc, ln, org, c, c + TS_DIMS, t);"
        );
        out.push_str(&indent(
            &post_stage(
                bound,
                stage,
                "lc",
                "ln",
                "ts_lst",
                "org",
                Some(("c", "(c + TS_DIMS)")),
            ),
            "                    ",
        ));
        out.push_str("                }\n");
    }
    out.push_str("            }\n");
}

/// Emits `tessera_copy_back`: `spare` to `user` for every updated field, split over threads.
fn emit_copy_back(bound: &BoundProgram, out: &mut String) {
    out.push_str("void tessera_copy_back(void* const* user, void* const* spare, int threads) {\n");
    for field in updated_fields(bound) {
        let f = field.index();
        let _ = writeln!(
            out,
            "    ts_copy_all(user[{f}], spare[{f}], ts_cells * ts_es[{f}], threads);"
        );
    }
    out.push_str("    (void)user;\n    (void)spare;\n    (void)threads;\n}\n\n");
}

/// Opens the parallel region of a fused driver (`failed` set where a thread could not get its
/// scratch).
const PARALLEL_OPEN: &str =
    "    int failed = 0;\n    #pragma omp parallel num_threads(threads)\n    {\n";

/// Records a thread's failure (`ok` false), then opens the loop handing the tiles to the
/// threads one at a time (`rec` the tile's record); a failed thread skips its tiles.
const TILE_LOOP_OPEN: &str = "        if (!ok) {\n            #pragma omp atomic write\n            failed = 1;\n        }\n\
    \x20       #pragma omp for schedule(dynamic, 1)\n        for (int64_t n = 0; n < ntiles; n++) {\n\
    \x20           if (!ok) continue;\n            const int64_t* rec = tiles + n * record;\n";

/// Ends a fused driver: 1 when some thread could not get its scratch.
const FUSED_RETURN: &str = "    return failed;\n}\n\n";

/// `v(0), v(1), ...`: one value per axis of `dims`, as the values of a C array.
pub(crate) fn axis_list(dims: usize, v: impl Fn(usize) -> i64) -> String {
    (0..dims)
        .map(|a| v(a).to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Writes a C array of one value per axis of `dims`:
/// `    static const int64_t NAME[TS_DIMS] = {v(0), v(1), ...};`.
pub(crate) fn axis_constant(out: &mut String, name: &str, dims: usize, v: impl Fn(usize) -> i64) {
    let _ = writeln!(
        out,
        "    static const int64_t {name}[TS_DIMS] = {{{}}};",
        axis_list(dims, v)
    );
}

pub(crate) fn indent(text: &str, prefix: &str) -> String {
    text.lines().map(|l| format!("{prefix}{l}\n")).collect()
}
