//! Stages with a scan: `ts_s<k>_tiles` walks each line of the stage's domain along the scan
//! axis from its low end, carrying the scans' running values from point to point; the lines
//! are split over threads. Every strategy runs such a stage this way (its reads go through the
//! border modes at every point), whatever its tiles: a tile would cut the lines.

use std::fmt::Write as _;

use tessera_ir::{Id, Stage};
use tessera_plan::cpu::{CpuPlan, CpuStrategy};

use super::layout::domain_count;
use super::stage::{self, Context, pointer_declarations, stage_body};
use super::terms::ChainForm;
use super::{axis_constant, indent};
use crate::cfamily::{Dialect, scan_accumulators};

/// Emits `ts_s<k>_tiles` for `stage`, which scans along `axis`.
pub(super) fn emit_scan_lines(
    ctx: &Context,
    plan: &CpuPlan,
    stage: Id<Stage>,
    axis: usize,
    out: &mut String,
) {
    let bound = ctx.bound;
    let k = stage.index();
    let dims = bound.extents.len();
    let domain = bound.stage_domain(stage);
    let counts: Vec<i64> = (0..dims).map(|a| domain_count(domain, a)).collect();
    let others: Vec<usize> = (0..dims).filter(|&a| a != axis).collect();
    let _ = writeln!(
        out,
        "static void ts_s{k}_tiles(void* const* cur, void* const* nxt, int64_t t, int threads{}) {{",
        stage::values_param(bound, stage)
    );
    let _ = writeln!(out, "    static const int64_t org[TS_DIMS] = {{0}};");
    out.push_str(&pointer_declarations(bound, stage));
    axis_constant(out, "dlo", dims, |a| domain.rect.lo[a]);
    axis_constant(out, "step", dims, |a| domain.stride[a]);
    axis_constant(out, "count", dims, |a| counts[a]);
    let lines: i64 = others.iter().map(|&a| counts[a]).product();
    let _ = writeln!(out, "    const int64_t lines = {lines};");
    if plan.strategy == CpuStrategy::Naive {
        out.push_str("    (void)threads;\n");
    } else {
        out.push_str("    #pragma omp parallel for schedule(static) num_threads(threads)\n");
    }
    out.push_str("    for (int64_t n = 0; n < lines; n++) {\n");
    if !others.is_empty() {
        out.push_str("        int64_t m = n;\n");
    }
    for &a in others.iter().rev() {
        let _ = writeln!(
            out,
            "        const int64_t p{a} = dlo[{a}] + m % count[{a}] * step[{a}];\n        m /= count[{a}];"
        );
    }
    for declaration in scan_accumulators(Dialect::C, bound.checked(), stage) {
        let _ = writeln!(out, "        {declaration}");
    }
    let _ = writeln!(
        out,
        "        for (int64_t p{axis} = dlo[{axis}]; p{axis} < dlo[{axis}] + count[{axis}] * step[{axis}]; p{axis} += step[{axis}]) {{"
    );
    let index: Vec<String> = (0..dims)
        .map(|a| match ctx.strides[a] {
            1 => format!("(p{a} - org[{a}])"),
            s => format!("(p{a} - org[{a}]) * {s}"),
        })
        .collect();
    let _ = writeln!(out, "            const int64_t i = {};", index.join(" + "));
    let body = stage_body(ctx, stage, true, false, ChainForm::Written);
    out.push_str(&indent(&body, "            "));
    out.push_str("        }\n    }\n}\n\n");
}
