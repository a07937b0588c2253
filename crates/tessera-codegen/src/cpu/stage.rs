//! The C functions that compute one stage (or one after-step reduction) over a box of points.
//!
//! Arrays are addressed through *views*: `ptr[(p0 - org0) * ST0 + ... + (pD - orgD)]` for a grid
//! point `p`, where the strides `ST` are compile-time constants of the instantiation (`g`: the
//! global grid, origin 0; `l`: the overlapped strategy's scratch buffers, origin = the tile's
//! hull) and `org` is passed at run time. Coordinates are always grid coordinates.
//!
//! Per stage and instantiation there are three functions: the interior loop nest (no border
//! logic, `#pragma omp simd` on the innermost loop), the border loop nest (every read mapped
//! through its border mode) and the box function that clips a box to the stage's domain and
//! splits it into the interior box and up to two slabs per axis. Reductions get a scalar loop
//! nest over the whole domain that folds each row in ascending x (the fixed order).

use std::fmt::Write as _;

use tessera_analysis::{BoundProgram, Domain, SumChain, stage_tables};
use tessera_ir::{
    Border, ExprId, Field, Id, Local, Param, ReduceOp, Reduction, ScalarType, Stage, Statement,
};
use tessera_plan::TargetIsa;
use tessera_plan::cpu::CpuStagePlan;
use tessera_plan::reuse::ColumnSums;

use super::axis_constant;
use super::layout::{WriteMode, domain_count, target_array, write_mode};
use super::terms::{self, ChainForm};
use super::{lanes, reuse};
use crate::cfamily::{
    Dialect, MathLibrary, ReadRenderer, print_reduction_value, print_stage, print_stage_relaxed,
    table_pointer,
};

/// Which buffers an instantiation addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum View {
    /// The global grid arrays.
    Global,
    /// The thread-private scratch buffers of a tile.
    Scratch,
    /// Reads from the global arrays, writes into scratch buffers (the wavefront's first step).
    GlobalToScratch,
    /// Reads from scratch buffers, writes into the global arrays (the wavefront's last step).
    ScratchToGlobal,
}

impl View {
    /// The suffix of the functions of this instantiation.
    pub(crate) fn suffix(self) -> &'static str {
        match self {
            View::Global => "g",
            View::Scratch => "l",
            View::GlobalToScratch => "gl",
            View::ScratchToGlobal => "lg",
        }
    }

    /// The stream that shifted-lanes rows prefetch: the global side of the wavefront's first
    /// and last steps.
    fn stream_prefetch(self) -> lanes::StreamPrefetch {
        match self {
            View::GlobalToScratch => lanes::StreamPrefetch::LeadingReads,
            View::ScratchToGlobal => lanes::StreamPrefetch::Writes,
            View::Global | View::Scratch => lanes::StreamPrefetch::None,
        }
    }

    /// Whether writes use other strides and another origin (`worg`) than reads.
    fn mixed(self) -> bool {
        matches!(self, View::GlobalToScratch | View::ScratchToGlobal)
    }

    /// The parameters of this instantiation's functions, and the origins among them.
    fn signature(self) -> (&'static str, &'static str) {
        if self.mixed() {
            (
                "void* const* cur, void* const* nxt, const int64_t* org, const int64_t* worg, const int64_t* lo, const int64_t* hi, int64_t t",
                "org, worg",
            )
        } else {
            (
                "void* const* cur, void* const* nxt, const int64_t* org, const int64_t* lo, const int64_t* hi, int64_t t",
                "org",
            )
        }
    }
}

/// Everything the stage printers need about the program and the instantiation.
#[derive(Clone)]
pub(crate) struct Context<'a> {
    pub(crate) bound: &'a BoundProgram,
    /// Row-major strides of the addressed arrays (last = 1).
    pub(crate) strides: Vec<i64>,
    /// Strides of the written arrays when they differ from the read ones (mixed views).
    pub(crate) write_strides: Option<Vec<i64>>,
    /// Whether to emit OpenMP pragmas (`naive` does not).
    pub(crate) openmp: bool,
    /// Non-exact mode: stage bodies use the relaxed printer (balanced sums, reciprocals).
    pub(crate) relaxed: bool,
    /// Per stage, its column-sum form when the plan runs it so.
    pub(crate) column_sums: &'a [Option<ColumnSums>],
    /// Per stage, the element type of its shifted-lanes form when the plan runs it so
    /// ([`tessera_plan::lanes`]).
    pub(crate) lane_shifts: &'a [Option<ScalarType>],
    /// Per stage, the plan's decisions for its rows (wide vectors, columns in registers).
    pub(crate) stage_plans: &'a [CpuStagePlan],
    /// Shifted-lanes rows compute pairs of planes ([`tessera_plan::cpu::CpuPlan::plane_pairs`]).
    pub(crate) plane_pairs: bool,
    /// The instruction set the vector code is written for.
    pub(crate) isa: TargetIsa,
}

impl Context<'_> {
    fn dims(&self) -> usize {
        self.bound.extents.len()
    }
}

/// How reads are spelled in a loop body.
pub(super) struct Leaves<'a> {
    pub(super) bound: &'a BoundProgram,
    pub(super) stage: Option<Id<Stage>>,
    pub(super) strides: &'a [i64],
    /// Map every read through its field's border mode (otherwise: plain offset from `i`).
    pub(super) border: bool,
    /// Expressions computed before the body (sum chains), with their spelling.
    pub(super) computed: Vec<(ExprId, String)>,
    /// Locals spelled otherwise than `l<k>` (a chain's value outside the body).
    pub(super) locals: Vec<(Id<Local>, String)>,
}

/// One axis of a read's offset: known when the code is generated, or an entry of a term table.
#[derive(Clone, Debug)]
pub(super) enum AxisOffset {
    /// A constant offset.
    Fixed(i32),
    /// A C expression (`ts_o0[k][1]`).
    Table(String),
}

impl<'a> Leaves<'a> {
    /// The leaves of `stage`'s body (or of a reduction's, `stage` `None`) in a nest whose
    /// arrays have `strides`, mapping reads through border modes where `border`.
    pub(super) fn new(
        bound: &'a BoundProgram,
        stage: Option<Id<Stage>>,
        strides: &'a [i64],
        border: bool,
    ) -> Leaves<'a> {
        Leaves {
            bound,
            stage,
            strides,
            border,
            computed: Vec::new(),
            locals: Vec::new(),
        }
    }

    /// A read of `field` at `offset` mapped through its border mode, from the point `p`.
    pub(super) fn border_read(&self, field: Id<Field>, offset: &[AxisOffset]) -> String {
        let name = format!("r{}", field.index());
        let program = self.bound.program();
        let border = match self.stage {
            Some(stage) => program.stages[stage].border_of(field, program),
            None => program.fields[field].border,
        };
        let extents = &self.bound.extents;
        let moves = |o: &AxisOffset| !matches!(o, AxisOffset::Fixed(0));
        let q: Vec<String> = offset
            .iter()
            .enumerate()
            .map(|(a, o)| {
                let raw = match o {
                    AxisOffset::Fixed(0) => format!("p{a}"),
                    AxisOffset::Fixed(o) => format!("(p{a} + {o})"),
                    AxisOffset::Table(o) => format!("(p{a} + {o})"),
                };
                match border {
                    _ if !moves(o) => raw,
                    None | Some(Border::Constant(_)) => raw,
                    Some(Border::Clamp) => format!("ts_clamp({raw}, {})", extents[a]),
                    Some(Border::Periodic) => format!("ts_wrap({raw}, {})", extents[a]),
                    Some(Border::Mirror) => format!("ts_mirror({raw}, {})", extents[a]),
                }
            })
            .collect();
        let index: Vec<String> = q
            .iter()
            .enumerate()
            .map(|(a, q)| match self.strides[a] {
                1 => format!("(ts_idx)({q} - org[{a}])"),
                s => format!("(ts_idx)({q} - org[{a}]) * {s}"),
            })
            .collect();
        let access = format!("{name}[{}]", index.join(" + "));
        match border {
            Some(Border::Constant(value)) if offset.iter().any(moves) => {
                let inside: Vec<String> = offset
                    .iter()
                    .enumerate()
                    .filter(|(_, o)| moves(o))
                    .map(|(a, _)| format!("(uint64_t){} < {}u", q[a], extents[a]))
                    .collect();
                let ty = program.fields[field].ty;
                format!(
                    "({} ? {access} : {})",
                    inside.join(" && "),
                    Dialect::C.literal(value, ty)
                )
            }
            _ => access,
        }
    }
}

impl ReadRenderer for Leaves<'_> {
    fn read(&mut self, field: Id<Field>, offset: &[i32]) -> String {
        if self.border {
            let offset: Vec<AxisOffset> = offset.iter().map(|&o| AxisOffset::Fixed(o)).collect();
            return self.border_read(field, &offset);
        }
        let name = format!("r{}", field.index());
        match linear_offset(offset, self.strides) {
            0 => format!("{name}[i]"),
            k if k < 0 => format!("{name}[i - {}]", -k),
            k => format!("{name}[i + {k}]"),
        }
    }

    fn computed(&mut self, expr: ExprId) -> Option<String> {
        (self.computed.iter())
            .find(|(e, _)| *e == expr)
            .map(|(_, spelling)| spelling.clone())
    }

    fn local(&mut self, local: Id<Local>) -> String {
        (self.locals.iter())
            .find(|(l, _)| *l == local)
            .map_or_else(|| format!("l{}", local.index()), |(_, s)| s.clone())
    }

    fn coord(&mut self, axis: usize) -> String {
        format!("p{axis}")
    }

    fn step(&mut self) -> String {
        "t".into()
    }

    fn param(&mut self, param: Id<Param>) -> String {
        let program = self.bound.program();
        Dialect::C.literal(self.bound.param(param), program.params[param].ty)
    }

    fn reduction_value(&mut self, reduction: Id<Reduction>) -> String {
        format!("rv[{}]", reduction.index())
    }
}

/// Spells reduction values for the `until` condition (`rv[r]`), and nothing else.
pub(crate) fn until_leaves(bound: &BoundProgram) -> impl ReadRenderer + '_ {
    Leaves::new(bound, None, &[], false)
}

/// The pointer declarations of a stage: `r<f>` for reads (and in-place writes), `w<f>` for
/// buffered writes, `tb<i>` for the input tables it reads (after the fields in `cur`).
pub(super) fn pointer_declarations(bound: &BoundProgram, stage: Id<Stage>) -> String {
    let checked = bound.checked();
    let program = checked.program();
    let outputs = program.stages[stage].outputs();
    let mut out = String::new();
    for table in stage_tables(program, stage) {
        let t = Dialect::C.scalar_type(program.tables[table].ty);
        let _ = writeln!(
            out,
            "    const {t}* restrict {} = (const {t}*)cur[TS_FIELDS + {}];",
            table_pointer(table),
            table.index()
        );
    }
    let ty = |f: Id<Field>| Dialect::C.scalar_type(program.fields[f].ty);
    for (field, _) in checked.stage_footprints(stage) {
        let in_place =
            outputs.contains(field) && write_mode(bound, stage, *field) == WriteMode::InPlace;
        if !in_place {
            let t = ty(*field);
            let _ = writeln!(
                out,
                "    const {t}* restrict r{0} = (const {t}*)cur[{0}];",
                field.index()
            );
        }
    }
    for field in &outputs {
        let t = ty(*field);
        match write_mode(bound, stage, *field) {
            WriteMode::InPlace => {
                let _ = writeln!(
                    out,
                    "    {t}* restrict r{0} = ({t}*)cur[{0}];",
                    field.index()
                );
            }
            _ => {
                let _ = writeln!(
                    out,
                    "    {t}* restrict w{0} = ({t}*)nxt[{0}];",
                    field.index()
                );
            }
        }
    }
    out
}

/// The loop nest over the box `lo..hi` of `domain` (strided), with `body` at every point and
/// the linear index `i`; `row_open`/`row_close` wrap the innermost loop.
struct LoopNest<'a> {
    domain: &'a Domain,
    strides: &'a [i64],
    /// Strides of a separate write index `iw` (origin `worg`), if writes use other arrays.
    write_strides: Option<&'a [i64]>,
    /// Bounds: C expressions per axis (`lo[a]`/`hi[a]`, or constants).
    lo: Vec<String>,
    hi: Vec<String>,
    /// Pragma before the outermost loop (`#pragma omp for ...`), if any.
    outer_pragma: Option<String>,
    /// Pragma before the innermost loop, if any.
    inner_pragma: Option<&'static str>,
    row_open: String,
    row_close: String,
    /// The body loops over the innermost axis itself (column sums): the nest stops one axis
    /// short.
    body_owns_rows: bool,
    /// Slowest-axis indices (of the domain's stride) each iteration of the outermost loop
    /// covers: 2 where the body computes pairs of planes.
    slowest_planes: i64,
}

impl LoopNest<'_> {
    fn emit(&self, body: &str, out: &mut String) {
        let dims = self.strides.len();
        let mut indent = String::from("    ");
        for a in 0..dims - 1 {
            if let (0, Some(pragma)) = (a, &self.outer_pragma) {
                let _ = writeln!(out, "{indent}{pragma}");
            }
            self.open_loop(a, &indent, out);
            indent.push_str("    ");
            let prev = outer_base(a, "b", "");
            let stride = match self.strides[a] {
                1 => String::new(),
                s => format!(" * {s}"),
            };
            let _ = writeln!(
                out,
                "{indent}const ts_idx b{a} = {prev}(ts_idx)(p{a} - org[{a}]){stride};"
            );
            if let Some(write) = self.write_strides {
                let prev = outer_base(a, "bw", "");
                let _ = writeln!(
                    out,
                    "{indent}const ts_idx bw{a} = {prev}(ts_idx)(p{a} - worg[{a}]) * {};",
                    write[a]
                );
            }
        }
        if self.body_owns_rows {
            out.push_str(&indent_lines(body, &indent));
        } else {
            self.emit_row(body, &indent, out);
        }
        for _ in 0..dims - 1 {
            indent.truncate(indent.len() - 4);
            let _ = writeln!(out, "{indent}}}");
        }
    }

    /// Opens the loop over axis `a`.
    fn open_loop(&self, a: usize, indent: &str, out: &mut String) {
        let (dlo, step) = (self.domain.rect.lo[a], self.domain.stride[a]);
        let start = if step == 1 {
            self.lo[a].clone()
        } else {
            format!("ts_align({}, {dlo}, {step})", self.lo[a])
        };
        let advance = match step * if a == 0 { self.slowest_planes } else { 1 } {
            1 => format!("p{a}++"),
            n => format!("p{a} += {n}"),
        };
        let _ = writeln!(
            out,
            "{indent}for (int64_t p{a} = {start}; p{a} < {}; {advance}) {{",
            self.hi[a]
        );
    }

    /// The innermost loop with `body` at every point.
    fn emit_row(&self, body: &str, indent: &str, out: &mut String) {
        let dims = self.strides.len();
        let a = dims - 1;
        if let (0, Some(pragma)) = (a, &self.outer_pragma) {
            let _ = writeln!(out, "{indent}{pragma}");
        }
        out.push_str(&indent_lines(&self.row_open, indent));
        if let Some(pragma) = self.inner_pragma {
            let _ = writeln!(out, "{indent}{pragma}");
        }
        self.open_loop(a, indent, out);
        let inner = format!("{indent}    ");
        let indices = point_indices(a, self.write_strides.is_some(), None);
        out.push_str(&indent_lines(&indices, &inner));
        out.push_str(&indent_lines(body, &inner));
        let _ = writeln!(out, "{indent}}}");
        out.push_str(&indent_lines(&self.row_close, indent));
    }
}

/// The linear distance of a read at `offset` (the leading axes of `strides` when shorter).
pub(super) fn linear_offset(offset: &[i32], strides: &[i64]) -> i64 {
    (offset.iter().zip(strides))
        .map(|(&o, &s)| i64::from(o) * s)
        .sum()
}

/// The linear indices of point `p<a>` on the innermost axis `a`: `i`, and `iw` for the write
/// arrays of a mixed view. They stay affine in the 64-bit loop variable (no truncation), so
/// that the compiler sees contiguous accesses and vectorizes without gathers.
///
/// With `jammed` (the read and write distances between jammed planes), the indices are those
/// of plane `jp`.
pub(super) fn point_indices(a: usize, mixed: bool, jammed: Option<(i64, i64)>) -> String {
    let plane = |step: Option<i64>| step.map_or(String::new(), |s| format!(" + jp * {s}"));
    let mut out = format!(
        "const int64_t i = {}(p{a} - org[{a}]){};\n",
        outer_base(a, "b", "(int64_t)"),
        plane(jammed.map(|j| j.0))
    );
    if mixed {
        let _ = writeln!(
            out,
            "const int64_t iw = {}(p{a} - worg[{a}]){};",
            outer_base(a, "bw", "(int64_t)"),
            plane(jammed.map(|j| j.1))
        );
    }
    out
}

/// The offset of the row that axis `a`'s loop runs in: `{cast}{base}{a - 1} + `, or nothing
/// for the outermost axis.
pub(super) fn outer_base(a: usize, base: &str, cast: &str) -> String {
    if a == 0 {
        String::new()
    } else {
        format!("{cast}{base}{} + ", a - 1)
    }
}

pub(super) fn indent_lines(text: &str, indent: &str) -> String {
    text.lines().map(|l| format!("{indent}{l}\n")).collect()
}

/// The statements computing a stage at one point: lets, outputs into `o<f>`, then stores; when
/// `fold` is set, in-stage reductions are folded into `a<r>` if `due[r]`. Sum chains are
/// computed as `chains` says.
pub(super) fn stage_body(
    ctx: &Context,
    stage: Id<Stage>,
    border: bool,
    fold: bool,
    chains: ChainForm,
) -> String {
    let (bound, strides) = (ctx.bound, &ctx.strides);
    let checked = bound.checked();
    let program = checked.program();
    let mut leaves = Leaves::new(bound, Some(stage), strides, border);
    let listed = match chains {
        ChainForm::Written => &[][..],
        ChainForm::PerPoint(list) | ChainForm::Chunked(list) => list,
    };
    let x = format!("p{}", ctx.dims() - 1);
    leaves.computed = (listed.iter().enumerate())
        .map(|(c, chain)| (chain.root, terms::chain_value(chains, c, &x)))
        .collect();
    let printed = if ctx.relaxed {
        print_stage_relaxed(Dialect::C, checked, stage, &mut leaves)
    } else {
        print_stage(Dialect::C, MathLibrary::Exact, checked, stage, &mut leaves)
    };
    let mut body = String::new();
    let mut lets = printed.lets.iter();
    for (j, statement) in program.stages[stage].body.iter().enumerate() {
        if let ChainForm::PerPoint(list) = chains {
            for (c, chain) in list.iter().enumerate().filter(|(_, ch)| ch.statement == j) {
                body.push_str(&terms::per_point(
                    &mut leaves,
                    terms::library(ctx),
                    chain,
                    c,
                    border,
                ));
            }
        }
        if let Statement::Let { .. } = statement {
            let _ = writeln!(body, "{}", lets.next().map_or("", String::as_str));
        }
    }
    for step in &printed.scan_steps {
        let _ = writeln!(body, "{step}");
    }
    for (field, value) in &printed.outputs {
        let t = Dialect::C.scalar_type(program.fields[*field].ty);
        let _ = writeln!(body, "const {t} o{} = {value};", field.index());
    }
    if fold {
        for (reduction, value) in &printed.reductions {
            let op = program.reductions[*reduction].op;
            let r = reduction.index();
            let _ = writeln!(
                body,
                "if (due[{r}]) {{ const double x = {value}; {} }}",
                combine(op, &format!("a{r}"), "x")
            );
        }
    }
    for (field, _) in &printed.outputs {
        let f = field.index();
        let target = target_array(bound, stage, *field);
        let index = if ctx.write_strides.is_some() {
            "iw"
        } else {
            "i"
        };
        let _ = writeln!(body, "{target}[{index}] = o{f};");
    }
    for carry in &printed.scan_carries {
        let _ = writeln!(body, "{carry}");
    }
    body
}

/// `acc = combine(acc, x)` in the fixed order of `tessera_runtime::reduce`.
fn combine(op: ReduceOp, acc: &str, x: &str) -> String {
    match op {
        ReduceOp::Sum => format!("{acc} = {acc} + {x};"),
        ReduceOp::Min => format!(
            "{acc} = ({acc} != {acc} || {x} != {x}) ? TS_NAN : ({x} < {acc} ? {x} : {acc});"
        ),
        ReduceOp::Max => format!(
            "{acc} = ({acc} != {acc} || {x} != {x}) ? TS_NAN : ({x} > {acc} ? {x} : {acc});"
        ),
    }
}

/// The C spelling of a reduction's identity.
fn identity(op: ReduceOp) -> &'static str {
    match op {
        ReduceOp::Sum => "0.0",
        ReduceOp::Min => "TS_INF",
        ReduceOp::Max => "(-TS_INF)",
    }
}

/// `, const double* rv` when `stage` reads reduction values (this step's, by reduction index),
/// else nothing: the last parameter of the stage's functions.
pub(crate) fn values_param(bound: &BoundProgram, stage: Id<Stage>) -> &'static str {
    if bound.checked().stage_reduction_reads(stage).is_empty() {
        ""
    } else {
        ", const double* rv"
    }
}

/// `, rv` when `stage` reads reduction values, else nothing: the argument of [`values_param`].
pub(crate) fn values_arg(bound: &BoundProgram, stage: Id<Stage>) -> &'static str {
    if bound.checked().stage_reduction_reads(stage).is_empty() {
        ""
    } else {
        ", rv"
    }
}

/// Emits the statements setting `rv[r]` to reduction `r`'s value from its row partials at
/// `offset` (`rows` of them), folded in row order (THE fixed order).
pub(crate) fn fold_partials(
    bound: &BoundProgram,
    reduction: Id<Reduction>,
    (offset, rows): (usize, usize),
    out: &mut String,
) {
    let r = reduction.index();
    let op = bound.program().reductions[reduction].op;
    let _ = writeln!(
        out,
        "    {{
        double a = {};
        for (int64_t k = 0; k < {rows}; k++) {{
            const double x = partials[{offset} + k];
            {}
        }}
        rv[{r}] = a;
    }}",
        identity(op),
        combine(op, "a", "x")
    );
}

/// Emits the interior, border and box functions of `stage` for `view`.
pub(crate) fn emit_stage_box(ctx: &Context, view: View, stage: Id<Stage>, out: &mut String) {
    let pointers = pointer_declarations(ctx.bound, stage);
    for border in [false, true] {
        emit_nest_function(ctx, view, stage, border, &pointers, out);
    }
    emit_box_function(ctx, view, stage, out);
}

/// How the rows of one loop nest of a stage run.
struct RowForm<'a> {
    /// The stage's column sums, when its rows run as column sums.
    sums: Option<&'a ColumnSums>,
    /// The element type of its shifted lanes, when its rows run on shifted lanes.
    lanes: Option<ScalarType>,
    /// Whether shifted-lanes rows compute pairs of planes.
    pairs: bool,
}

impl<'a> RowForm<'a> {
    /// The rows of `stage`'s interior nest (the plan's forms) or its border nest (`border`:
    /// plain points).
    fn new(ctx: &'a Context, stage: Id<Stage>, border: bool) -> RowForm<'a> {
        let sums = ctx.column_sums[stage.index()].as_ref().filter(|_| !border);
        let lanes = ctx.lane_shifts[stage.index()].filter(|_| !border);
        // Shifted-lanes rows (not column sums) of a plane-pairs plan compute two planes at a
        // time, the last plane of an odd count alone.
        let pairs = ctx.plane_pairs && ctx.dims() >= 2 && sums.is_none() && lanes.is_some();
        RowForm { sums, lanes, pairs }
    }
}

/// Emits `ts_s<k>_in_<v>` (`border` false) or `ts_s<k>_bd_<v>`: the loop nest of `stage`
/// over `lo..hi`, without or with border handling.
fn emit_nest_function(
    ctx: &Context,
    view: View,
    stage: Id<Stage>,
    border: bool,
    pointers: &str,
    out: &mut String,
) {
    let dims = ctx.dims();
    let (k, v) = (stage.index(), view.suffix());
    let part = if border { "bd" } else { "in" };
    let form = RowForm::new(ctx, stage, border);
    let plan = ctx.stage_plans[stage.index()];
    let chains = terms::stage_chains(ctx, stage);
    let chain_form = chain_form(ctx, stage, border, &form, &chains);
    // Column-sum loops the plan marks prefer 512-bit vectors; shifted lanes are 512-bit
    // vectors.
    let wide = (form.sums.is_some() && plan.wide_vectors) || form.lanes.is_some();
    let attribute = if wide { "TS_WIDE_VECTORS " } else { "" };
    let _ = writeln!(
        out,
        "{attribute}static void ts_s{k}_{part}_{v}({}{}) {{",
        view.signature().0,
        values_param(ctx.bound, stage)
    );
    out.push_str(pointers);
    out.push_str(&terms::tables(ctx, stage, chain_form, border));
    if let (Some(sums), None) = (form.sums, form.lanes) {
        out.push_str(&reuse::buffers(sums));
    }
    let body = row_code(ctx, view, stage, border, &form, chain_form);
    let nest = LoopNest {
        domain: ctx.bound.stage_domain(stage),
        strides: &ctx.strides,
        write_strides: ctx.write_strides.as_deref(),
        lo: (0..dims).map(|a| format!("lo[{a}]")).collect(),
        hi: (0..dims).map(|a| format!("hi[{a}]")).collect(),
        outer_pragma: None,
        inner_pragma: (ctx.openmp && !border).then_some("#pragma omp simd"),
        row_open: String::new(),
        row_close: String::new(),
        body_owns_rows: form.sums.is_some()
            || form.lanes.is_some()
            || matches!(chain_form, ChainForm::Chunked(_)),
        slowest_planes: if form.pairs { 2 } else { 1 },
    };
    nest.emit(&body, out);
    let _ = writeln!(out, "    (void)t;\n}}\n");
}

/// How a nest of `stage` computes its sum `chains`: written out where it has none or column
/// sums run the interior; in the border nest per point; in the interior in chunks where the
/// rows allow it.
fn chain_form<'a>(
    ctx: &Context,
    stage: Id<Stage>,
    border: bool,
    form: &RowForm,
    chains: &'a [SumChain],
) -> ChainForm<'a> {
    if chains.is_empty() || (!border && form.sums.is_some()) {
        // Column sums run the interior. Their scalar edges stay written out: term loops there
        // changed how the compiler laid out the hot loop (box2d4r's wavefront 10% slower).
        ChainForm::Written
    } else if border || form.lanes.is_some() || !terms::chunkable(ctx, stage, chains) {
        ChainForm::PerPoint(chains)
    } else {
        ChainForm::Chunked(chains)
    }
}

/// The code of `stage` in the loop nest of `form`: a whole row (column sums, shifted lanes,
/// chunks of term loops) or one point.
fn row_code(
    ctx: &Context,
    view: View,
    stage: Id<Stage>,
    border: bool,
    form: &RowForm,
    chains: ChainForm,
) -> String {
    let plan = ctx.stage_plans[stage.index()];
    let plane = ctx.bound.stage_domain(stage).stride[0];
    let write_strides = ctx.write_strides.as_deref().unwrap_or(&ctx.strides);
    let shape = |ty, scalar_body, planes| lanes::RowShape {
        ty,
        isa: ctx.isa,
        strides: &ctx.strides,
        mixed: view.mixed(),
        scalar_body,
        relaxed: ctx.relaxed,
        simd: ctx.openmp,
        prefetch: view.stream_prefetch(),
        planes,
        plane_step: plane * ctx.strides[0],
        write_plane_step: plane * write_strides[0],
    };
    match (form.sums, form.lanes) {
        (Some(sums), Some(ty)) => {
            let scalar = stage_body(ctx, stage, border, false, chains);
            let target = target_array(ctx.bound, stage, sums.output);
            let shape = shape(ty, &scalar, 1);
            let pinned = plan.columns_in_registers;
            reuse::lane_row(ctx.bound, stage, sums, &shape, &target, pinned)
        }
        (Some(sums), None) => {
            let mut leaves = Leaves::new(ctx.bound, Some(stage), &ctx.strides, false);
            let target = target_array(ctx.bound, stage, sums.output);
            reuse::row(
                sums,
                &mut |field, offset| leaves.read(field, offset),
                &target,
                ctx.dims(),
                view.mixed(),
                ctx.openmp,
                (ctx.openmp && plan.columns_in_registers).then(|| ctx.isa.lanes(sums.ty)),
            )
        }
        (None, Some(ty)) => {
            let scalar = stage_body(ctx, stage, border, false, chains);
            let single = lanes::row(ctx.bound, stage, &shape(ty, &scalar, 1));
            if form.pairs {
                let pair = lanes::row(ctx.bound, stage, &shape(ty, &scalar, 2));
                format!("if (p0 + {plane} < hi[0]) {pair} else {single}")
            } else {
                single
            }
        }
        (None, None) => match chains {
            ChainForm::Chunked(list) => {
                let body = stage_body(ctx, stage, border, false, chains);
                terms::chunked_row(ctx, stage, list, view.mixed(), &body)
            }
            _ => stage_body(ctx, stage, border, false, chains),
        },
    }
}

/// Emits `ts_s<k>_<v>`: `lo..hi` clipped to the stage's domain and split into the interior
/// box (`_in_`) and up to two border slabs per axis (`_bd_`).
fn emit_box_function(ctx: &Context, view: View, stage: Id<Stage>, out: &mut String) {
    let dims = ctx.dims();
    let k = stage.index();
    let v = view.suffix();
    let domain = ctx.bound.stage_domain(stage);
    let (signature, origins) = view.signature();
    let (values, rv) = (values_param(ctx.bound, stage), values_arg(ctx.bound, stage));
    let inner = ctx.bound.stage_interior(stage);
    let _ = writeln!(out, "static void ts_s{k}_{v}({signature}{values}) {{");
    axis_constant(out, "dlo", dims, |a| domain.rect.lo[a]);
    axis_constant(out, "dhi", dims, |a| domain.rect.hi[a]);
    axis_constant(out, "ilo", dims, |a| inner[a].0);
    axis_constant(out, "ihi", dims, |a| inner[a].1);
    out.push_str(
        "    int64_t cl[TS_DIMS], ch[TS_DIMS];\n\
         \x20   for (int a = 0; a < TS_DIMS; a++) {\n\
         \x20       cl[a] = lo[a] > dlo[a] ? lo[a] : dlo[a];\n\
         \x20       ch[a] = hi[a] < dhi[a] ? hi[a] : dhi[a];\n\
         \x20       if (cl[a] >= ch[a]) return;\n\
         \x20   }\n\
         \x20   for (int a = 0; a < TS_DIMS; a++) {\n\
         \x20       int64_t sl[TS_DIMS], sh[TS_DIMS];\n\
         \x20       memcpy(sl, cl, sizeof sl);\n\
         \x20       memcpy(sh, ch, sizeof sh);\n\
         \x20       const int64_t low_end = ch[a] < ilo[a] ? ch[a] : ilo[a];\n\
         \x20       if (cl[a] < low_end) {\n\
         \x20           sh[a] = low_end;\n",
    );
    let _ = writeln!(
        out,
        "            ts_s{k}_bd_{v}(cur, nxt, {origins}, sl, sh, t{rv});"
    );
    out.push_str(
        "        }\n\
         \x20       int64_t high_start = cl[a] > ihi[a] ? cl[a] : ihi[a];\n\
         \x20       if (high_start < low_end) high_start = low_end;\n\
         \x20       if (high_start < ch[a]) {\n\
         \x20           sl[a] = high_start;\n\
         \x20           sh[a] = ch[a];\n",
    );
    let _ = writeln!(
        out,
        "            ts_s{k}_bd_{v}(cur, nxt, {origins}, sl, sh, t{rv});"
    );
    out.push_str(
        "        }\n\
         \x20       if (cl[a] < ilo[a]) cl[a] = ilo[a];\n\
         \x20       if (ch[a] > ihi[a]) ch[a] = ihi[a];\n\
         \x20       if (cl[a] >= ch[a]) return;\n\
         \x20   }\n",
    );
    let _ = writeln!(
        out,
        "    ts_s{k}_in_{v}(cur, nxt, {origins}, cl, ch, t{rv});\n}}\n"
    );
}

/// The loop nest of a reduction over its whole domain: rows folded into per-row partials,
/// the slowest axes shared among OpenMP threads.
fn reduction_nest<'a>(
    ctx: &'a Context,
    domain: &'a Domain,
    reductions: &[(Id<Reduction>, ReduceOp, usize)],
) -> LoopNest<'a> {
    let dims = ctx.dims();
    let (row_open, row_close) = row_fold(domain, reductions);
    LoopNest {
        domain,
        strides: &ctx.strides,
        write_strides: None,
        lo: (0..dims).map(|a| domain.rect.lo[a].to_string()).collect(),
        hi: (0..dims).map(|a| domain.rect.hi[a].to_string()).collect(),
        outer_pragma: (ctx.openmp && dims > 1)
            .then(|| "#pragma omp for schedule(static)".to_string()),
        inner_pragma: None,
        row_open,
        row_close,
        body_owns_rows: false,
        slowest_planes: 1,
    }
}

/// Row bookkeeping for a loop nest that folds reductions row by row: the row's index and
/// accumulators before the row, its partials stored after it.
fn row_fold(domain: &Domain, reductions: &[(Id<Reduction>, ReduceOp, usize)]) -> (String, String) {
    let dims = domain.rect.dims();
    let mut row = String::from("const int64_t row = 0");
    let mut multiplier = 1i64;
    for a in (0..dims - 1).rev() {
        let (dlo, step) = (domain.rect.lo[a], domain.stride[a]);
        let _ = write!(row, " + (p{a} - {dlo}) / {step} * {multiplier}");
        multiplier *= domain_count(domain, a);
    }
    row.push(';');
    let mut open = format!("{row}\n");
    let mut close = String::new();
    for (reduction, op, offset) in reductions {
        let r = reduction.index();
        let _ = writeln!(open, "double a{r} = {};", identity(*op));
        let _ = writeln!(close, "partials[{offset} + row] = a{r};");
    }
    (open, close)
}

/// Emits `ts_s<k>_red`: the whole stage over its domain, folding its due in-stage reductions
/// into row partials (scalar loops, rows split over threads by `omp for` when there are
/// several).
pub(crate) fn emit_stage_reduce(
    ctx: &Context,
    stage: Id<Stage>,
    offsets: &[(usize, usize)],
    out: &mut String,
) {
    let k = stage.index();
    let domain = ctx.bound.stage_domain(stage);
    let program = ctx.bound.program();
    let reductions: Vec<(Id<Reduction>, ReduceOp, usize)> = ctx
        .bound
        .checked()
        .stage_reductions(stage)
        .into_iter()
        .map(|r| (r, program.reductions[r].op, offsets[r.index()].0))
        .collect();
    let _ = writeln!(
        out,
        "static void ts_s{k}_red(void* const* cur, void* const* nxt, int64_t t, const int32_t* due, double* partials{}) {{",
        values_param(ctx.bound, stage)
    );
    let _ = writeln!(out, "    static const int64_t org[TS_DIMS] = {{0}};");
    out.push_str(&pointer_declarations(ctx.bound, stage));
    let body = stage_body(ctx, stage, true, true, ChainForm::Written);
    reduction_nest(ctx, domain, &reductions).emit(&body, out);
    let _ = writeln!(out, "    (void)t;\n}}\n");
}

/// Emits `ts_r<r>_after`: an after-step reduction over its domain into row partials.
pub(crate) fn emit_after_step_reduction(
    ctx: &Context,
    reduction: Id<Reduction>,
    offset: usize,
    out: &mut String,
) {
    let r = reduction.index();
    let bound = ctx.bound;
    let checked = bound.checked();
    let program = checked.program();
    let domain = &bound.reduction_domains[r];
    let op = program.reductions[reduction].op;
    let _ = writeln!(
        out,
        "static void ts_r{r}_after(void* const* cur, int64_t t, double* partials) {{"
    );
    let _ = writeln!(out, "    static const int64_t org[TS_DIMS] = {{0}};");
    for (field, _) in checked.reduction_footprints(reduction) {
        let t = Dialect::C.scalar_type(program.fields[*field].ty);
        let _ = writeln!(
            out,
            "    const {t}* restrict r{0} = (const {t}*)cur[{0}];",
            field.index()
        );
    }
    let mut leaves = Leaves::new(bound, None, &ctx.strides, true);
    let value = print_reduction_value(
        Dialect::C,
        MathLibrary::for_exact_mode(!ctx.relaxed),
        checked,
        program.reductions[reduction].value,
        &mut leaves,
    );
    let body = format!(
        "const double x = {value};\n(void)i;\n{}\n",
        combine(op, &format!("a{r}"), "x")
    );
    reduction_nest(ctx, domain, &[(reduction, op, offset)]).emit(&body, out);
    let _ = writeln!(out, "    (void)t;\n}}\n");
}
