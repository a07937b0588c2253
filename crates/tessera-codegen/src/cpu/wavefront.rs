//! The `wavefront` strategy's driver: pipelined time steps streaming the slowest axis.
//!
//! A band is a tile of the grid (its record as for `overlapped`: hull, core, input regions and
//! the compute region of every fused step, from Holewinski's Algorithm 2). A thread streams the
//! band's hull along the slowest axis (rows in 2D, planes in 3D) in chunks of `K` rows; fused
//! step `s` (1..=steps) trails step `s - 1` by `skew` rows (the slowest-axis read radius), so
//! when step `s` computes rows `y - s*skew .. y - s*skew + K` every row it reads from step
//! `s - 1` is already there. Each intermediate step keeps a window of `K + 2 skew` rows in its
//! own ring buffer (`R` rows, shifted back by copying its last `2 skew` rows when full); the
//! first step reads the global arrays (stage functions of the `gl` view) and the last step
//! writes its compute region (the band's core within the domain) straight into the other global
//! buffers (`lg` view); the rest of those buffers already agrees with the current one.
//!
//! Points of a step outside the stage's domain keep their values from before the pass (the
//! stage writes its domain only), so they are copied from the global grid; points inside the
//! domain but outside the step's compute region are never read (Algorithm 2) and are left as
//! they are. Every point a step computes is computed by the stage function of the `l` view, in
//! the same order of operations as every other strategy, so exact mode stays bitwise exact.

use std::fmt::Write as _;

use tessera_analysis::{BoundProgram, FieldRole};
use tessera_ir::Id;
use tessera_plan::cpu::{CpuPlan, stream_skew};

use super::{axis_constant, indent, working_arrays};

/// Copies the points of a box outside the stage's domain from the global grid into a view.
const FILL_OUTSIDE: &str = r#"/* Copies the points of lo..hi outside dlo..dhi from the global array src into a view. */
static void ts_fill_outside(char* dst, const int64_t* dst_org, const char* src, int64_t es,
                            const int64_t* lo, const int64_t* hi, const int64_t* dlo, const int64_t* dhi) {
    int64_t cl[TS_DIMS], ch[TS_DIMS], ones[TS_DIMS];
    for (int a = 0; a < TS_DIMS; a++) { cl[a] = lo[a]; ch[a] = hi[a]; ones[a] = 1; if (cl[a] >= ch[a]) return; }
    for (int a = 0; a < TS_DIMS; a++) {
        int64_t sl[TS_DIMS], sh[TS_DIMS];
        if (cl[a] < dlo[a]) {
            memcpy(sl, cl, sizeof sl);
            memcpy(sh, ch, sizeof sh);
            sh[a] = ch[a] < dlo[a] ? ch[a] : dlo[a];
            ts_copy_box(dst, ts_lst, dst_org, src, ts_gst, ts_zero, es, sl, sh, ones, TS_DIMS);
        }
        if (ch[a] > dhi[a]) {
            memcpy(sl, cl, sizeof sl);
            memcpy(sh, ch, sizeof sh);
            sl[a] = cl[a] > dhi[a] ? cl[a] : dhi[a];
            ts_copy_box(dst, ts_lst, dst_org, src, ts_gst, ts_zero, es, sl, sh, ones, TS_DIMS);
        }
        if (cl[a] < dlo[a]) cl[a] = dlo[a];
        if (ch[a] > dhi[a]) ch[a] = dhi[a];
        if (cl[a] >= ch[a]) return;
    }
}

/* Prefetches the points of lo..hi of a global array into L2 (one touch per cache line). */
static void ts_prefetch_box(const char* src, int64_t es, const int64_t* lo, const int64_t* hi) {
    int64_t p[TS_DIMS];
    for (int a = 0; a < TS_DIMS; a++) { if (lo[a] >= hi[a]) return; p[a] = lo[a]; }
    const int f = TS_DIMS - 1;
    for (;;) {
        int64_t s = p[f];
        for (int a = 0; a < f; a++) s += p[a] * ts_gst[a];
        const char* row = src + s * es;
        const int64_t bytes = (hi[f] - lo[f]) * es;
        for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(row + b, 0, 2);
        __builtin_prefetch(row + bytes - 1, 0, 2);
        int a = f - 1;
        for (; a >= 0; a--) { p[a]++; if (p[a] < hi[a]) break; p[a] = lo[a]; }
        if (a < 0) return;
    }
}

"#;

/// Emits `ts_fill_outside` and `tessera_run_wavefront` (the plan's single stage is stage 0).
pub(crate) fn emit_run_wavefront(bound: &BoundProgram, plan: &CpuPlan, out: &mut String) {
    let program = bound.program();
    let checked = bound.checked();
    let dims = bound.extents.len();
    let fields = program.fields.len();
    let stage = program
        .stages
        .ids()
        .next()
        .expect("wavefront plans have one stage");
    let domain = bound.stage_domain(stage);
    let (open, _) = working_arrays(bound);
    let used: Vec<usize> = program
        .fields
        .ids()
        .filter(|f| checked.role(*f) != FieldRole::Unused)
        .map(|f| f.index())
        .collect();
    let ring_cells: usize = plan.scratch_extents.iter().product();
    let list = |v: &dyn Fn(usize) -> i64| {
        (0..dims)
            .map(|a| v(a).to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    out.push_str(FILL_OUTSIDE);
    out.push_str(
        "int tessera_run_wavefront(void* const* user, void* const* spare, int64_t t0, int64_t steps, const int64_t* tiles, int64_t ntiles, int threads) {\n",
    );
    out.push_str(&open);
    axis_constant(out, "dlo", &list(&|a| domain.rect.lo[a]));
    axis_constant(out, "dhi", &list(&|a| domain.rect.hi[a]));
    let _ = writeln!(
        out,
        "    enum {{ TS_T = {}, TS_K = {}, TS_R = {}, TS_SKEW = {} }};",
        plan.time_tile,
        plan.stream_rows,
        plan.scratch_extents[0],
        stream_skew(bound)
    );
    out.push_str("    const int64_t plane = ts_lst[0];\n");
    let _ = writeln!(
        out,
        "    const int64_t record = {} * (2 + {fields} + steps);",
        2 * dims
    );
    out.push_str("    int failed = 0;\n    #pragma omp parallel num_threads(threads)\n    {\n");
    out.push_str("        void* ring[TS_FIELDS][TS_T + 1];\n        memset(ring, 0, sizeof ring);\n        int ok = 1;\n");
    for &f in &used {
        let bytes =
            (ring_cells * program.fields[Id::from_index(f)].ty.size_bytes()).div_ceil(64) * 64;
        let _ = writeln!(
            out,
            "        for (int s = 1; s < TS_T; s++) {{ ring[{f}][s] = aligned_alloc(64, {bytes}); ok = ok && ring[{f}][s]; }}"
        );
    }
    out.push_str("        if (!ok) {\n            #pragma omp atomic write\n            failed = 1;\n        }\n");
    out.push_str("        #pragma omp for schedule(dynamic, 1)\n        for (int64_t n = 0; n < ntiles; n++) {\n");
    out.push_str(
        "            if (!ok) continue;\n            const int64_t* rec = tiles + n * record;\n",
    );
    out.push_str(
        "            const int64_t* hull = rec;\n\
         \x20           int64_t base = hull[0] - 2 * TS_SKEW, org[TS_DIMS], worg[TS_DIMS], lo[TS_DIMS], hi[TS_DIMS];\n\
         \x20           memcpy(org, hull, sizeof org);\n\
         \x20           memcpy(worg, hull, sizeof worg);\n\
         \x20           for (int64_t y = hull[0]; y - steps * TS_SKEW < hull[TS_DIMS]; y += TS_K) {\n\
         \x20               if (y + TS_K > base + TS_R) {\n\
         \x20                   const int64_t moved = y - 2 * TS_SKEW - base;\n",
    );
    for &f in &used {
        let _ = writeln!(
            out,
            "                    for (int64_t s = 1; s < steps; s++) memmove(ring[{f}][s], (char*)ring[{f}][s] + moved * plane * ts_es[{f}], (size_t)(2 * TS_SKEW * plane * ts_es[{f}]));"
        );
    }
    out.push_str("                    base += moved;\n                }\n");
    let clip = |from: &str, a: &str, b: &str| {
        format!(
            "memcpy(lo, {from}, sizeof lo);\nmemcpy(hi, {from} + TS_DIMS, sizeof hi);\nif (lo[0] < {a}) lo[0] = {a};\nif (hi[0] > {b}) hi[0] = {b};\n"
        )
    };
    // The rows the first step reads two iterations from now: start loading them from memory.
    for &f in &used {
        let input = 2 * dims * (2 + f);
        out.push_str(&indent(
            &clip(
                &format!("(rec + {input})"),
                "y + (2 + TS_SKEW) * TS_K",
                "y + (3 + TS_SKEW) * TS_K",
            ),
            "                ",
        ));
        let _ = writeln!(
            out,
            "                ts_prefetch_box((const char*)cur[{f}], ts_es[{f}], lo, hi);"
        );
    }
    out.push_str("                for (int64_t s = 1; s <= steps; s++) {\n");
    out.push_str("                    const int64_t a = y - s * TS_SKEW, b = a + TS_K;\n");
    // Points of an intermediate step outside the domain keep their values from the pass start.
    out.push_str("                    if (s < steps) {\n                        worg[0] = base - s * TS_SKEW;\n");
    out.push_str(&indent(&clip("hull", "a", "b"), "                        "));
    for &f in &used {
        let _ = writeln!(
            out,
            "                        ts_fill_outside((char*)ring[{f}][s], worg, (const char*)cur[{f}], ts_es[{f}], lo, hi, dlo, dhi);"
        );
    }
    out.push_str("                    }\n");
    let _ = writeln!(
        out,
        "                    const int64_t* c = rec + {} + {} * (s - 1);",
        2 * dims * (2 + fields),
        2 * dims
    );
    out.push_str(&indent(&clip("c", "a", "b"), "                    "));
    out.push_str("                    if (lo[0] >= hi[0]) continue;\n");
    let k = stage.index();
    // Step 1 reads the global arrays; the last step writes the other global buffers.
    out.push_str("                    if (s == 1 && s == steps) {\n");
    let _ = writeln!(
        out,
        "                        ts_s{k}_g(cur, nxt, ts_zero, lo, hi, t0);"
    );
    out.push_str("                    } else if (s == 1) {\n                        void* ln[TS_FIELDS] = {0};\n");
    for &f in &used {
        let _ = writeln!(out, "                        ln[{f}] = ring[{f}][1];");
    }
    out.push_str("                        worg[0] = base - TS_SKEW;\n");
    let _ = writeln!(
        out,
        "                        ts_s{k}_gl(cur, ln, ts_zero, worg, lo, hi, t0);"
    );
    out.push_str(
        "                    } else {\n                        void* lc[TS_FIELDS] = {0};\n",
    );
    for &f in &used {
        let _ = writeln!(out, "                        lc[{f}] = ring[{f}][s - 1];");
    }
    out.push_str("                        org[0] = base - (s - 1) * TS_SKEW;\n                        if (s == steps) {\n");
    let _ = writeln!(
        out,
        "                            ts_s{k}_lg(lc, nxt, org, ts_zero, lo, hi, t0 + s - 1);"
    );
    out.push_str("                        } else {\n                            void* ln[TS_FIELDS] = {0};\n");
    for &f in &used {
        // Same origin for both windows: step s's window starts `skew` rows before step s-1's.
        let _ = writeln!(
            out,
            "                            ln[{f}] = (char*)ring[{f}][s] + TS_SKEW * plane * ts_es[{f}];"
        );
    }
    let _ = writeln!(
        out,
        "                            ts_s{k}_l(lc, ln, org, lo, hi, t0 + s - 1);\n                        }}\n                    }}\n                }}"
    );
    out.push_str("            }\n        }\n");
    out.push_str("        for (int f = 0; f < TS_FIELDS; f++) for (int s = 0; s <= TS_T; s++) free(ring[f][s]);\n    }\n");
    out.push_str("    return failed;\n}\n\n");
}
