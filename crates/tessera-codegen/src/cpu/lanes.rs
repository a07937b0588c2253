//! Printing of shifted-lanes rows ([`tessera_plan::lanes`]): the interior of a row on whole
//! 64-byte vectors (GCC/Clang generic vectors), each array row loaded once per vector at an
//! aligned address, its reads at `x + dx` shuffled out of neighbouring vectors.
//!
//! Per row: `xa` is the first point whose address in the first read row is 64-byte aligned;
//! the vector loop covers `xa..xb` in whole vectors. The rest (head and tail, less than one
//! vector each) is one unaligned vector at each end of the row, overlapping the aligned ones,
//! when the row holds a whole vector and the stage stores nothing over an array it reads;
//! else the scalar body. Every vector load stays inside the range the scalar loop reads: the vector before the first one (needed for `dx < 0`) is built from an unaligned
//! load at `xa + dx_min`, the one after the last (for `dx > 0`) from one ending at
//! `xb + dx_max`.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use tessera_analysis::BoundProgram;
use tessera_ir::{Field, Id, Local, Param, Reduction, ScalarType, Stage};
use tessera_plan::TargetIsa;

use super::layout::{WriteMode, target_array, write_mode};
use super::stage::{linear_offset, outer_base, point_indices};
use crate::cfamily::{
    Dialect, MathLibrary, PrintedStage, ReadRenderer, print_stage, print_stage_relaxed,
};

/// Definitions shared by every vector function (shifted lanes, column sums) for `isa`: the
/// vector and shuffle-mask types of its width, then [`PRELUDE_REST`].
pub(crate) fn prelude(isa: TargetIsa) -> String {
    let bytes = isa.vector_bytes();
    let mut out = String::new();
    for (name, element) in [
        ("vf32", "float"),
        ("mf32", "int32_t"),
        ("vf64", "double"),
        ("mf64", "int64_t"),
    ] {
        let _ = writeln!(
            out,
            "typedef {element} ts_{name} __attribute__((vector_size({bytes})));"
        );
    }
    out.push_str(PRELUDE_REST);
    out
}

/// The width-independent part of [`prelude`]: the shuffle macro (GCC and Clang spell it
/// differently), unaligned loads and stores, and `TS_IN_REGISTER`.
const PRELUDE_REST: &str = "\
#if defined(__clang__)
#define TS_SHUFFLE(M, a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define TS_SHUFFLE(M, a, b, ...) __builtin_shuffle(a, b, (M){__VA_ARGS__})
#endif
/* Keeps a loaded vector in a register: gcc would otherwise fold its load into every
   multiply-add that uses it (one load per use, each split across two cache lines when
   unaligned), which makes load-heavy loops such as column sums bound by their loads. */
#if defined(__GNUC__) && defined(__x86_64__) && defined(__AVX512F__)
#define TS_IN_REGISTER(v) __asm__(\"\" : \"+v\"(v))
#else
#define TS_IN_REGISTER(v) (void)(v)
#endif
static inline ts_vf32 ts_load_f32(const float* p) { ts_vf32 v; memcpy(&v, p, sizeof v); return v; }
static inline void ts_store_f32(float* p, ts_vf32 v) { memcpy(p, &v, sizeof v); }
static inline ts_vf64 ts_load_f64(const double* p) { ts_vf64 v; memcpy(&v, p, sizeof v); return v; }
static inline void ts_store_f64(double* p, ts_vf64 v) { memcpy(p, &v, sizeof v); }
";

/// One array row a vector body reads: a field at a linear offset of the row (slower axes),
/// and the `dx` read along it.
pub(super) struct Window {
    pub(super) field: Id<Field>,
    pub(super) row: i64,
    pub(super) shifts: BTreeSet<i32>,
}

impl Window {
    /// The smallest `dx` read, at most 0.
    pub(super) fn min(&self) -> i32 {
        self.shifts.first().copied().unwrap_or(0).min(0)
    }

    /// The largest `dx` read, at least 0.
    pub(super) fn max(&self) -> i32 {
        self.shifts.last().copied().unwrap_or(0).max(0)
    }

    /// `r<f> + (<index> + <row + dx>)`: the address of the read at `dx` from `index`.
    pub(super) fn at(&self, index: &str, dx: i32) -> String {
        let k = self.row + i64::from(dx);
        let f = self.field.index();
        match k {
            0 => format!("r{f} + {index}"),
            k if k < 0 => format!("r{f} + ({index} - {})", -k),
            k => format!("r{f} + ({index} + {k})"),
        }
    }
}

/// Spells reads as the vectors of their windows (`c<w>` unshifted, `v<w>m<d>` / `v<w>p<d>`
/// shifted) and records the windows.
struct VectorLeaves<'a> {
    bound: &'a BoundProgram,
    strides: &'a [i64],
    vector: String,
    /// Lanes of `vector`.
    lanes: usize,
    windows: Vec<Window>,
    /// The plane (of a jammed pair) being printed: its reads are `plane_step` further along
    /// and its locals are named apart.
    plane: usize,
    plane_step: i64,
}

impl ReadRenderer for VectorLeaves<'_> {
    fn read(&mut self, field: Id<Field>, offset: &[i32]) -> String {
        let last = offset.len() - 1;
        let row =
            linear_offset(&offset[..last], self.strides) + self.plane as i64 * self.plane_step;
        let w = match (self.windows.iter()).position(|w| w.field == field && w.row == row) {
            Some(w) => w,
            None => {
                self.windows.push(Window {
                    field,
                    row,
                    shifts: BTreeSet::new(),
                });
                self.windows.len() - 1
            }
        };
        let dx = offset[last];
        self.windows[w].shifts.insert(dx);
        shifted_name(w, dx)
    }

    fn local(&mut self, local: Id<Local>) -> String {
        match self.plane {
            0 => format!("l{}", local.index()),
            j => format!("l{}_{j}", local.index()),
        }
    }

    fn coord(&mut self, _axis: usize) -> String {
        unreachable!("shifted lanes exclude coordinates")
    }

    fn step(&mut self) -> String {
        unreachable!("shifted lanes exclude the step counter")
    }

    fn param(&mut self, param: Id<Param>) -> String {
        let program = self.bound.program();
        Dialect::C.literal(self.bound.param(param), program.params[param].ty)
    }

    fn reduction_value(&mut self, _reduction: Id<Reduction>) -> String {
        unreachable!("stage bodies read no reduction values")
    }

    fn let_type(&self, _scalar: &'static str) -> String {
        self.vector.clone()
    }

    fn uniform(&self, value: String) -> String {
        format!(
            "({}){{{}}}",
            self.vector,
            vec![value; self.lanes].join(", ")
        )
    }
}

/// The vector holding the reads of window `w` at `dx`.
fn shifted_name(w: usize, dx: i32) -> String {
    match dx {
        0 => format!("c{w}"),
        d if d < 0 => format!("v{w}m{}", -d),
        d => format!("v{w}p{d}"),
    }
}

/// Where a row's code finds its pieces.
pub(crate) struct RowShape<'a> {
    /// The element type of every value.
    pub(crate) ty: ScalarType,
    /// The instruction set: the width of the vectors.
    pub(crate) isa: TargetIsa,
    /// Read strides of the instantiation.
    pub(crate) strides: &'a [i64],
    /// Writes use other arrays than reads (index `iw`, origin `worg`).
    pub(crate) mixed: bool,
    /// The scalar statements of one point (indices `i`, `iw`), for the head and the tail.
    pub(crate) scalar_body: &'a str,
    /// Non-exact mode (the relaxed printer).
    pub(crate) relaxed: bool,
    /// OpenMP pragmas on the scalar loops.
    pub(crate) simd: bool,
    /// Which stream the vectors prefetch ahead of themselves.
    pub(crate) prefetch: StreamPrefetch,
    /// Planes the row computes together (unroll-and-jam along the slowest axis, 1 or 2):
    /// plane `j` is the point `j * plane_step` further in the read arrays, `j *
    /// write_plane_step` in the written ones.
    pub(crate) planes: usize,
    /// Linear distance between jammed planes in the read arrays.
    pub(crate) plane_step: i64,
    /// Linear distance between jammed planes in the written arrays.
    pub(crate) write_plane_step: i64,
}

/// The stream a row's vectors prefetch into L1 ahead of themselves, one line per vector.
///
/// The wavefront's first step reads the global arrays and its last step writes them: those
/// lines come from L3 or memory, and the page-ahead prefetches of the driver only reach L2.
/// Measured on j3d7pt (256³, 2 threads): +21% f32, +32% f64 (docs/performance.md); the ring
/// steps, whose lines are in L2 already, measured slower with prefetches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StreamPrefetch {
    /// No prefetches.
    None,
    /// The row of each read field furthest along the slower axes (the newest plane of the
    /// stream), [`READ_AHEAD_BYTES`] ahead.
    LeadingReads,
    /// The stored rows, [`WRITE_AHEAD_BYTES`] ahead (for ownership before the stores).
    Writes,
}

/// How far ahead of a vector its read prefetches reach: four rows of 256 `f32`.
const READ_AHEAD_BYTES: i64 = 4096;

/// How far ahead of a vector its write prefetches reach: one row of 256 `f32`.
const WRITE_AHEAD_BYTES: i64 = 1024;

/// `TS_SHUFFLE(<mask>, a, b, lanes...)`: the lanes of the concatenation of `a` and `b`.
pub(super) fn shuffle(mask: &str, a: &str, b: &str, lanes: impl Iterator<Item = i32>) -> String {
    let list: Vec<String> = lanes.map(|l| l.to_string()).collect();
    format!("TS_SHUFFLE({mask}, {a}, {b}, {})", list.join(", "))
}

/// The code of one interior row of `stage` (innermost axis `a`, bounds `lo[a]..hi[a]`).
pub(crate) fn row(bound: &BoundProgram, stage: Id<Stage>, shape: &RowShape) -> String {
    let (windows, printed) = print_planes(bound, stage, shape);
    let statements = vector_statements(bound, stage, &printed, shape);
    let end_vector = || unaligned_vectors(shape, &windows) + &statements;
    let body = aligned_vectors(shape, &windows) + &statements + &rotation(&windows);
    vector_row(
        bound,
        stage,
        shape,
        &windows,
        end_vector,
        &edge_vectors(shape, &windows),
        &body,
    )
}

/// The code of one interior row on whole vectors reading `windows` (see the module docs):
/// its bounds, its ends (`end_vector` gives the code of one unaligned vector at `p<a>`), then
/// the vector loop with `setup` before it and `body`, the code of one aligned vector, in it.
pub(super) fn vector_row(
    bound: &BoundProgram,
    stage: Id<Stage>,
    shape: &RowShape,
    windows: &[Window],
    end_vector: impl FnOnce() -> String,
    setup: &str,
    body: &str,
) -> String {
    let a = shape.strides.len() - 1;
    let n = shape.isa.lanes(shape.ty) as i32;
    let indices = row_indices(shape);
    let mut out = row_bounds(shape, windows);
    let vector_end = (!stores_over_reads(bound, stage, windows)).then(|| {
        // An end vector spans two lines of the stream (it is unaligned).
        prefetches(bound, stage, shape, windows, &[0, n - 1]) + &end_vector()
    });
    out.push_str(&ends(shape, &indices, vector_end.as_deref()));
    out.push_str(&vector_loop_open(shape));
    out.push_str(setup);
    let _ = writeln!(
        out,
        "        for (int64_t p{a} = xa; p{a} < xb; p{a} += {n}) {{"
    );
    out.push_str(&indices);
    out.push_str(&prefetches(bound, stage, shape, windows, &[0]));
    out.push_str(body);
    out.push_str("        }\n    }\n}");
    out
}

/// `stage` printed on vectors, once per jammed plane, and the windows its reads make.
fn print_planes(
    bound: &BoundProgram,
    stage: Id<Stage>,
    shape: &RowShape,
) -> (Vec<Window>, Vec<PrintedStage>) {
    let checked = bound.checked();
    let mut leaves = VectorLeaves {
        bound,
        strides: shape.strides,
        vector: format!("ts_v{}", shape.ty),
        lanes: shape.isa.lanes(shape.ty),
        windows: Vec::new(),
        plane: 0,
        plane_step: shape.plane_step,
    };
    let printed = (0..shape.planes)
        .map(|plane| {
            leaves.plane = plane;
            if shape.relaxed {
                print_stage_relaxed(Dialect::C, checked, stage, &mut leaves)
            } else {
                print_stage(Dialect::C, MathLibrary::Exact, checked, stage, &mut leaves)
            }
        })
        .collect();
    (leaves.windows, printed)
}

/// The shifted vectors of an unaligned vector at `i`, each loaded on its own.
fn unaligned_vectors(shape: &RowShape, windows: &[Window]) -> String {
    let vector = format!("ts_v{}", shape.ty);
    let mut out = String::new();
    for (w, window) in windows.iter().enumerate() {
        for &dx in &window.shifts {
            let _ = writeln!(
                out,
                "            const {vector} {} = ts_load_{}({});",
                shifted_name(w, dx),
                shape.ty,
                window.at("i", dx)
            );
        }
    }
    out
}

/// Before the vector loop, per window: `m<w>`, the vector before the first one (reads at
/// `dx < 0`), and `c<w>`, the first one, with `e<w>`, the one after the last (`dx > 0`).
fn edge_vectors(shape: &RowShape, windows: &[Window]) -> String {
    let vector = format!("ts_v{}", shape.ty);
    let mut out = String::new();
    for (w, window) in windows.iter().enumerate() {
        let (lo, hi) = (window.min(), window.max());
        if lo < 0 {
            let _ = writeln!(
                out,
                "        {vector} m{w} = {};",
                before_first(shape, window)
            );
        }
        if hi > 0 {
            let _ = writeln!(
                out,
                "        {vector} c{w} = ts_load_{}({});\n        const {vector} e{w} = {};",
                shape.ty,
                window.at("ia", 0),
                after_last(shape, window)
            );
        }
    }
    out
}

/// The shifted vectors of the aligned vector at `i`: each window's next vector `n<w>` (or its
/// current one `c<w>`) loaded, the shifts shuffled out of it and its neighbours.
fn aligned_vectors(shape: &RowShape, windows: &[Window]) -> String {
    let a = shape.strides.len() - 1;
    let n = shape.isa.lanes(shape.ty) as i32;
    let (vector, mask, load) = (
        format!("ts_v{}", shape.ty),
        format!("ts_m{}", shape.ty),
        format!("ts_load_{}", shape.ty),
    );
    let mut out = String::new();
    for (w, window) in windows.iter().enumerate() {
        if window.max() > 0 {
            let _ = writeln!(
                out,
                "            const {vector} n{w} = p{a} + {n} < xb ? {load}({}) : e{w};",
                window.at("i", n)
            );
        } else {
            let _ = writeln!(
                out,
                "            const {vector} c{w} = {load}({});",
                window.at("i", 0)
            );
        }
        for &dx in window.shifts.iter().filter(|&&dx| dx != 0) {
            let value = if dx < 0 {
                shuffle(
                    &mask,
                    &format!("m{w}"),
                    &format!("c{w}"),
                    n + dx..2 * n + dx,
                )
            } else {
                shuffle(&mask, &format!("c{w}"), &format!("n{w}"), dx..n + dx)
            };
            let _ = writeln!(
                out,
                "            const {vector} {} = {value};",
                shifted_name(w, dx)
            );
        }
    }
    out
}

/// The windows' vectors moved on by one for the next aligned vector.
fn rotation(windows: &[Window]) -> String {
    let mut out = String::new();
    for (w, window) in windows.iter().enumerate() {
        if window.min() < 0 {
            let _ = writeln!(out, "            m{w} = c{w};");
        }
        if window.max() > 0 {
            let _ = writeln!(out, "            c{w} = n{w};");
        }
    }
    out
}

/// The prefetch statements of the vector at `i` (`iw` for writes): one per stream row and
/// point `dx` of `points`, the distance of `shape.prefetch` ahead.
fn prefetches(
    bound: &BoundProgram,
    stage: Id<Stage>,
    shape: &RowShape,
    windows: &[Window],
    points: &[i32],
) -> String {
    let bytes = shape.ty.size_bytes() as i64;
    let mut out = String::new();
    let mut line = |address: String, write: u8| {
        let _ = writeln!(
            out,
            "            __builtin_prefetch({address}, {write}, 3);"
        );
    };
    match shape.prefetch {
        StreamPrefetch::None => {}
        StreamPrefetch::LeadingReads => {
            let ahead = (READ_AHEAD_BYTES / bytes) as i32;
            let fields: BTreeSet<Id<Field>> = windows.iter().map(|w| w.field).collect();
            for field in fields {
                let rows = || windows.iter().filter(|w| w.field == field);
                let top = rows()
                    .map(|w| w.row)
                    .max()
                    .expect("a field read has a window");
                // Every jammed plane brings one new row of the stream.
                let leading = (0..shape.planes as i64).map(|j| top - j * shape.plane_step);
                for row in leading {
                    if let Some(window) = rows().find(|w| w.row == row) {
                        for &dx in points {
                            line(window.at("i", ahead + dx), 0);
                        }
                    }
                }
            }
        }
        StreamPrefetch::Writes => {
            let ahead = WRITE_AHEAD_BYTES / bytes;
            let index = if shape.mixed { "iw" } else { "i" };
            for field in bound.checked().program().stages[stage].outputs() {
                let target = target_array(bound, stage, field);
                for plane in 0..shape.planes as i64 {
                    for &dx in points {
                        let step = plane * shape.write_plane_step + ahead + i64::from(dx);
                        line(format!("{target} + ({index} + {step})"), 1);
                    }
                }
            }
        }
    }
    out
}

/// The indices of point `p<a>` (`i`, and `iw` for mixed views), one statement per line.
fn row_indices(shape: &RowShape) -> String {
    indented_indices(shape, None)
}

/// The indices of point `p<a>` of jammed plane `jp`, as [`row_indices`] gives those of plane 0.
fn jammed_indices(shape: &RowShape) -> String {
    indented_indices(shape, Some((shape.plane_step, shape.write_plane_step)))
}

/// [`point_indices`] at the indentation of a row's loop body.
fn indented_indices(shape: &RowShape, jammed: Option<(i64, i64)>) -> String {
    let a = shape.strides.len() - 1;
    (point_indices(a, shape.mixed, jammed).lines())
        .map(|l| format!("            {l}\n"))
        .collect()
}

/// `(int64_t)b<a-1> + (<x> - org[a])`: the read index of point `x` of the row.
fn row_index(a: usize, x: &str) -> String {
    format!("{}({x} - org[{a}])", outer_base(a, "b", "(int64_t)"))
}

/// Opens the row's block and declares its bounds: `xs..xe`, the first point `xa` whose
/// address in the window of the point's own row (else the first window) is 64-byte aligned,
/// and the end `xb` of the whole vectors from there.
fn row_bounds(shape: &RowShape, windows: &[Window]) -> String {
    let a = shape.strides.len() - 1;
    let n = shape.isa.lanes(shape.ty);
    // Align on the row of the point itself (where the stores go too), else on the first.
    let aligned = windows.iter().find(|w| w.row == 0).unwrap_or(&windows[0]);
    format!(
        "{{\n    const int64_t xs = lo[{a}], xe = hi[{a}];\n    const int64_t is = {};\n    int64_t xa = xs + (int64_t)(({n} - (uintptr_t)({}) / {} % {n}) % {n});\n    if (xe - xa < {n}) xa = xe;\n    const int64_t xb = xa + (xe - xa) / {n} * {n};\n",
        row_index(a, "xs"),
        aligned.at("is", 0),
        shape.ty.size_bytes()
    )
}

/// Opens the vector loop's block (when it has whole vectors) with the indices `ia` of `xa`
/// and `ib` of `xb`.
fn vector_loop_open(shape: &RowShape) -> String {
    let a = shape.strides.len() - 1;
    format!(
        "    if (xa < xb) {{\n        const int64_t ia = {}, ib = {};\n        (void)ia;\n        (void)ib;\n",
        row_index(a, "xa"),
        row_index(a, "xb")
    )
}

/// The vector whose lanes `n + lo..n` hold the points `xa + lo..xa` of `window` (`lo` its
/// smallest `dx`, below 0), from one unaligned load starting at `xa + lo`.
pub(super) fn before_first(shape: &RowShape, window: &Window) -> String {
    let (n, lo) = (shape.isa.lanes(shape.ty) as i32, window.min());
    let lanes = (0..n).map(|j| if j >= n + lo { j - n - lo } else { 0 });
    let u = format!("ts_load_{}({})", shape.ty, window.at("ia", lo));
    shuffle(&format!("ts_m{}", shape.ty), &u, &u, lanes)
}

/// The vector whose lanes `0..hi` hold the points `xb..xb + hi` of `window` (`hi` its largest
/// `dx`, above 0), from one unaligned load ending at `xb + hi`.
pub(super) fn after_last(shape: &RowShape, window: &Window) -> String {
    let (n, hi) = (shape.isa.lanes(shape.ty) as i32, window.max());
    let lanes = (0..n).map(|j| if j < hi { j + n - hi } else { 0 });
    let u = format!("ts_load_{}({})", shape.ty, window.at("ib", hi - n));
    shuffle(&format!("ts_m{}", shape.ty), &u, &u, lanes)
}

/// The points of a row outside `xa..xb` (where not empty): where `vector_end` is given (the
/// code of one unaligned vector at `p<a>`, after `indices`), one vector at each end when the
/// row holds a whole vector (the end vectors overlap the aligned ones, whose points are then
/// computed twice from the same inputs); else the scalar body. Callers give no vector end
/// when an output is stored over an array the stage reads.
fn ends(shape: &RowShape, indices: &str, vector_end: Option<&str>) -> String {
    let a = shape.strides.len() - 1;
    let n = shape.isa.lanes(shape.ty);
    let pragma = if shape.simd {
        "        #pragma omp simd\n"
    } else {
        ""
    };
    // Jammed planes run the scalar body plane after plane.
    let scalar_indices = match shape.planes {
        1 => indices.to_string(),
        _ => jammed_indices(shape),
    };
    let scalar_loop = |from: &str, to: &str| {
        let mut code = format!(
            "{pragma}        for (int64_t p{a} = {from}; p{a} < {to}; p{a}++) {{\n{scalar_indices}"
        );
        for line in shape.scalar_body.lines() {
            let _ = writeln!(code, "            {line}");
        }
        code.push_str("        }\n");
        match shape.planes {
            1 => code,
            n => {
                let inner: String = code.lines().map(|l| format!("    {l}\n")).collect();
                format!("        for (int64_t jp = 0; jp < {n}; jp++) {{\n{inner}        }}\n")
            }
        }
    };
    let Some(vector_end) = vector_end else {
        return format!(
            "    for (int part = 0; part < 2; part++) {{\n{}    }}\n",
            scalar_loop("part ? xb : xs", "(part ? xe : xa)")
        );
    };
    format!(
        "    if (xe - xs < {n}) {{\n{}    }} else {{\n        for (int part = 0; part < 2; part++) {{\n            if (part ? xb == xe && xa < xb : xa == xs) continue;\n            const int64_t p{a} = part ? xe - {n} : xs;\n{indices}{vector_end}        }}\n    }}\n",
        scalar_loop("xs", "xe")
    )
}

/// Whether `stage` stores some output into an array it also reads (an in-place field read at
/// its own point): then no point may be computed twice.
fn stores_over_reads(bound: &BoundProgram, stage: Id<Stage>, windows: &[Window]) -> bool {
    let outputs = bound.checked().program().stages[stage].outputs();
    windows.iter().any(|w| {
        outputs.contains(&w.field) && write_mode(bound, stage, w.field) == WriteMode::InPlace
    })
}

/// The lets and stores of one vector of points at index `i` (`iw` for mixed views), per
/// jammed plane.
fn vector_statements(
    bound: &BoundProgram,
    stage: Id<Stage>,
    printed: &[PrintedStage],
    shape: &RowShape,
) -> String {
    let mut out = String::new();
    let idx = if shape.mixed { "iw" } else { "i" };
    for (plane, printed) in printed.iter().enumerate() {
        for line in &printed.lets {
            let _ = writeln!(out, "            {line}");
        }
        let at = plane_index(idx, plane as i64 * shape.write_plane_step);
        for (field, value) in &printed.outputs {
            let target = target_array(bound, stage, *field);
            let _ = writeln!(
                out,
                "            ts_store_{}({target} + {at}, {value});",
                shape.ty
            );
        }
    }
    out
}

/// `index`, or `(index + step)` when `step` is not 0.
fn plane_index(index: &str, step: i64) -> String {
    match step {
        0 => index.to_string(),
        k => format!("({index} + {k})"),
    }
}
