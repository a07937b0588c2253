//! The `wavefront` strategy's driver: pipelined time steps streaming the slowest axis.
//!
//! A band is a tile of the grid (its record as for `overlapped`: hull, core, input regions and
//! the compute region of every fused step, from Holewinski's Algorithm 2). A thread streams the
//! band's hull along the slowest axis (rows in 2D, planes in 3D) in chunks of `K` rows; fused
//! step `s` (1..=steps) trails step `s - 1` by `skew` rows (the slowest-axis read radius), so
//! when step `s` computes rows `y - s*skew .. y - s*skew + K` every row it reads from step
//! `s - 1` is already there. Each intermediate step keeps its rows in its own ring buffer of
//! `R >= K + 2 skew` slots, row `r` in slot `r mod R`, so no row is ever moved. A ring is mapped
//! twice back to back (a memfd on Linux), so that the window a step reads, wherever it starts,
//! is contiguous: the stage functions address it as an ordinary view with origin
//! `floor((a - skew) / R) * R`. Where that mapping is not available the ring is a plain buffer
//! of `2 R` slots whose halves are kept equal by copying each written row to its twin (also
//! forced with `TESSERA_RING_COPY=1`, which the tests use). A thread maps its rings at its first
//! pass and keeps them in the executable's scratch (`tessera_scratch_open`) for the next ones;
//! what a ring holds from an earlier pass is never read (see below). The first step reads the global
//! arrays (stage functions of the `gl` view) and the last step writes its compute region (the
//! band's core within the domain) straight into the other global buffers (`lg` view); the rest
//! of those buffers already agrees with the current one.
//!
//! Points of a step outside the stage's domain keep their values from before the pass (the
//! stage writes its domain only), so they are copied from the global grid; points inside the
//! domain but outside the step's compute region are never read (Algorithm 2) and are left as
//! they are. Every point a step computes is computed by the stage function of the `l` view, in
//! the same order of operations as every other strategy, so exact mode stays bitwise exact.

use std::fmt::Write as _;

use tessera_analysis::BoundProgram;
use tessera_ir::{Id, Stage};
use tessera_plan::cpu::{CpuLayout, CpuPlan, stream_skew};

use super::layout::{updated_fields, used_fields};
use super::{
    FUSED_RETURN, PARALLEL_OPEN, TILE_LOOP_OPEN, axis_constant, indent, table_slots, working_arrays,
};

/// The driver's helpers: filling the points outside the stage's domain, the ring buffers,
/// prefetching the input stream.
const DRIVER_SUPPORT: &str = r#"#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#endif

/* Copies the points of lo..hi outside dlo..dhi from the global array src into a view. */
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

/* The largest multiple of m (> 0) that is <= v. */
static inline int64_t ts_floor_to(int64_t v, int64_t m) { int64_t r = v % m; return v - (r < 0 ? r + m : r); }

/* One thread's ring buffers: ring i is bytes[i] long and its addresses run on for another
   bytes[i] that show the same slots again. */
typedef struct { char* base; size_t len; int mirrored; } ts_rings;

/* Where ring i starts within its region: rings differ by odd multiples of 64 bytes modulo
   4 KiB, so that a step's stores into its ring never alias its loads from the previous ring
   (whose slots line up with it page by page). */
static inline size_t ts_ring_shift(int i) { return (size_t)i * 2624 % 4096; }

/* Maps n rings of bytes[i] each into ring[i]: a region of three back-to-back mappings of the
   same pages (the ring starts ts_ring_shift(i) into the first one). Where the system cannot
   (not Linux, not whole pages, TESSERA_RING_COPY set), allocates a region of twice the size
   instead (mirrored = 0: the caller copies written slots to their twins). Returns 0 when out
   of memory. */
static int ts_rings_open(ts_rings* m, char** ring, const size_t* bytes, int n) {
    m->base = NULL; m->len = 0; m->mirrored = 0;
    if (n == 0) return 1;
#ifdef __linux__
    const long page = sysconf(_SC_PAGESIZE);
    int whole = page > 0 && !getenv("TESSERA_RING_COPY");
    size_t pages = 0;
    for (int i = 0; i < n; i++) { whole = whole && bytes[i] % (size_t)page == 0 && bytes[i] >= 4096; pages += bytes[i]; }
    const int fd = whole ? memfd_create("tessera-ring", MFD_CLOEXEC) : -1;
    if (fd >= 0) {
        m->len = 3 * pages;
        char* v = ftruncate(fd, (off_t)pages) == 0
            ? mmap(NULL, m->len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : MAP_FAILED;
        int ok = v != MAP_FAILED;
        size_t off = 0;
        for (int i = 0; ok && i < n; i++) {
            char* r = v + 3 * off;
            for (int c = 0; ok && c < 3; c++)
                ok = mmap(r + c * bytes[i], bytes[i], PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, (off_t)off) != MAP_FAILED;
            ring[i] = r + ts_ring_shift(i);
            off += bytes[i];
        }
        close(fd);
        if (ok) { m->base = v; m->mirrored = 1; return 1; }
        if (v != MAP_FAILED) munmap(v, m->len);
    }
#endif
    size_t total = 0;
    for (int i = 0; i < n; i++) total += (2 * bytes[i] + 4096 + 63) / 64 * 64;
    m->len = total;
    m->base = aligned_alloc(64, total);
    if (!m->base) return 0;
    size_t off = 0;
    for (int i = 0; i < n; i++) { ring[i] = m->base + off + ts_ring_shift(i); off += (2 * bytes[i] + 4096 + 63) / 64 * 64; }
    return 1;
}

static void ts_rings_close(ts_rings* m) {
#ifdef __linux__
    if (m->mirrored) { munmap(m->base, m->len); return; }
#endif
    free(m->base);
}

/* Copies slots from..to (0 <= from <= to <= 2 r, to - from <= r) of an unmirrored ring of r
   slots of `slot` bytes to their twins r slots away. */
static void ts_ring_twin(char* ring, int64_t slot, int64_t r, int64_t from, int64_t to) {
    for (int64_t j = from; j < to; j++) memcpy(ring + (j < r ? j + r : j - r) * slot, ring + j * slot, (size_t)slot);
}

/* Starts one line on its way into L2, for reading or (write) for writing. */
static inline void ts_prefetch_line(const char* line, int write) {
    if (write) __builtin_prefetch(line, 1, 2); else __builtin_prefetch(line, 0, 2);
}

/* Starts the points of lo..hi of a global array on their way into L2, for reading or (write)
   for writing: a written line is otherwise read for ownership only when the stores reach it.
   A row read that starts a contiguous run is prefetched line by line. Other rows (reads that
   continue the run, as in bands of whole rows, and writes) get only the first two lines of
   every 4 KiB page they start: the hardware's L2 streamer then fetches the rest of the page
   ahead of the accesses. It follows a stream only within a page and only after two lines of
   it, but does not hold the core's dozen fill buffers; one prefetch per line of a whole plane
   held them for as long as the memory took to answer. */
static void ts_prefetch_box(const char* src, int64_t es, const int64_t* lo, const int64_t* hi, int write) {
    int64_t p[TS_DIMS];
    for (int a = 0; a < TS_DIMS; a++) { if (lo[a] >= hi[a]) return; p[a] = lo[a]; }
    const int f = TS_DIMS - 1;
    const char* run_end = 0;
    for (;;) {
        int64_t s = p[f];
        for (int a = 0; a < f; a++) s += p[a] * ts_gst[a];
        const char* row = src + s * es;
        const char* end = row + (hi[f] - lo[f]) * es;
        if (!write && row != run_end) {
            for (const char* line = row; line < end; line += 64) ts_prefetch_line(line, 0);
            ts_prefetch_line(end - 1, 0);
        } else {
            /* A written row's page counts from its first line (a row of the interior starts
               just after the page's first point). */
            const uintptr_t from = write ? (uintptr_t)row & ~(uintptr_t)63 : (uintptr_t)row;
            for (uintptr_t page = (from + 4095) & ~(uintptr_t)4095; page < (uintptr_t)end; page += 4096) {
                ts_prefetch_line((const char*)page, write);
                if (page + 64 < (uintptr_t)end) ts_prefetch_line((const char*)page + 64, write);
            }
        }
        run_end = end;
        int a = f - 1;
        for (; a >= 0; a--) { p[a]++; if (p[a] < hi[a]) break; p[a] = lo[a]; }
        if (a < 0) return;
    }
}

"#;

/// Emits the driver's helpers, `tessera_scratch_open`/`_close` (the rings kept between passes)
/// and `tessera_run_wavefront` (the plan's single stage is stage 0).
pub(crate) fn emit_run_wavefront(
    bound: &BoundProgram,
    plan: &CpuPlan,
    layout: &CpuLayout,
    out: &mut String,
) {
    let driver = Driver::new(bound, plan, layout);
    out.push_str(DRIVER_SUPPORT);
    driver.emit_scratch(out);
    driver.emit_entry(out);
    driver.emit_thread_rings(out);
    out.push_str(TILE_LOOP_OPEN);
    driver.emit_band_open(out);
    driver.emit_prefetches(out);
    out.push_str("                for (int64_t s = 1; s <= steps; s++) {\n");
    driver.emit_step_window(out);
    driver.emit_step_call(out);
    driver.emit_twins(out);
    out.push_str("                }\n");
    out.push_str("            }\n        }\n");
    out.push_str("    }\n");
    out.push_str(FUSED_RETURN);
}

/// What the driver's pieces are printed from.
struct Driver<'a> {
    bound: &'a BoundProgram,
    plan: &'a CpuPlan,
    layout: &'a CpuLayout,
    /// Grid axes.
    dims: usize,
    /// The indices of the fields the program uses.
    used: Vec<usize>,
    /// The number of rings of a thread: one per used field and intermediate step.
    rings: usize,
}

impl<'a> Driver<'a> {
    /// The driver of `bound` under `plan` and its `layout`.
    fn new(bound: &'a BoundProgram, plan: &'a CpuPlan, layout: &'a CpuLayout) -> Driver<'a> {
        let used: Vec<usize> = used_fields(bound).iter().map(|f| f.index()).collect();
        let rings = used.len() * (plan.time_tile as usize).saturating_sub(1);
        Driver {
            bound,
            plan,
            layout,
            dims: bound.extents.len(),
            used,
            rings,
        }
    }

    /// Emits `tessera_scratch_open`/`_close`: ring `s` (1..TS_T) of field `f` is
    /// rings[f][s]; each thread maps them all at once, at its first pass, and keeps them for
    /// the executable's later passes (mapping and first-touching them anew at every pass cost
    /// 15-30% of a 256³ f64 pass).
    fn emit_scratch(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "/* One thread's rings, kept between passes (state: 0 not mapped yet, 1 mapped, -1 failed). */\n\
             typedef struct {{ ts_rings rings; char* mapped[{0}]; int state; }} ts_kept_rings;\n\n\
             /* The rings of `threads` threads, each mapped by its thread at its first pass. */\n\
             void* tessera_scratch_open(int threads) {{ return calloc(threads > 0 ? (size_t)threads : 1, sizeof(ts_kept_rings)); }}\n\n\
             void tessera_scratch_close(void* scratch, int threads) {{\n\
             \x20   ts_kept_rings* kept = (ts_kept_rings*)scratch;\n\
             \x20   for (int i = 0; kept && i < threads; i++) if (kept[i].state == 1) ts_rings_close(&kept[i].rings);\n\
             \x20   free(kept);\n\
             }}\n",
            self.rings.max(1)
        );
    }

    /// Emits the entry point's signature, working arrays and constants, up to the parallel
    /// region.
    fn emit_entry(&self, out: &mut String) {
        let (bound, layout, dims) = (self.bound, self.layout, self.dims);
        let fields = bound.program().fields.len();
        let domain = bound.stage_domain(self.stage());
        out.push_str(
            "int tessera_run_wavefront(void* const* user, void* const* spare, int64_t t0, int64_t steps, const int64_t* tiles, int64_t ntiles, int threads, void* scratch) {\n",
        );
        out.push_str(&working_arrays(bound).0);
        axis_constant(out, "dlo", dims, |a| domain.rect.lo[a]);
        axis_constant(out, "dhi", dims, |a| domain.rect.hi[a]);
        let _ = writeln!(
            out,
            "    enum {{ TS_T = {}, TS_K = {}, TS_R = {}, TS_SKEW = {} }};",
            self.plan.time_tile,
            layout.stream_rows,
            layout.scratch_extents[0],
            stream_skew(bound)
        );
        out.push_str("    const int64_t plane = ts_lst[0];\n");
        let _ = writeln!(
            out,
            "    const int64_t record = {} * (2 + {fields} + steps);",
            2 * dims
        );
        out.push_str(PARALLEL_OPEN);
    }

    /// The plan's single stage.
    fn stage(&self) -> Id<Stage> {
        (self.bound.program().stages.ids())
            .next()
            .expect("wavefront plans have one stage")
    }

    /// Emits the thread's `ring` table, its rings mapped at its first pass (or kept from an
    /// earlier one) and `ok`.
    fn emit_thread_rings(&self, out: &mut String) {
        let ring_cells: usize = self.layout.scratch_extents.iter().product();
        let rings = self.rings;
        let _ = writeln!(
            out,
            "        char* ring[TS_FIELDS][TS_T + 1];\n        memset(ring, 0, sizeof ring);\n        size_t bytes[{}];",
            rings.max(1)
        );
        for (n, &f) in self.used.iter().enumerate() {
            let _ = writeln!(
                out,
                "        for (int s = 1; s < TS_T; s++) bytes[{n} * (TS_T - 1) + s - 1] = (size_t)({ring_cells} * ts_es[{f}]);"
            );
        }
        let _ = writeln!(
            out,
            "        ts_kept_rings* kept = (ts_kept_rings*)scratch + omp_get_thread_num();\n\
             \x20       if (kept->state == 0) kept->state = ts_rings_open(&kept->rings, kept->mapped, bytes, {rings}) ? 1 : -1;\n\
             \x20       const int ok = kept->state == 1;\n\
             \x20       char* const* mapped = kept->mapped;"
        );
        for (n, &f) in self.used.iter().enumerate() {
            let _ = writeln!(
                out,
                "        for (int s = 1; ok && s < TS_T; s++) ring[{f}][s] = mapped[{n} * (TS_T - 1) + s - 1];"
            );
        }
    }

    /// Emits the band's `hull`, the rings' origin `org` and the opening of the stream loop
    /// over chunks of `TS_K` rows.
    fn emit_band_open(&self, out: &mut String) {
        out.push_str(
            "            const int64_t* hull = rec;\n\
             \x20           int64_t org[TS_DIMS], lo[TS_DIMS], hi[TS_DIMS];\n\
             \x20           memcpy(org, hull, sizeof org);\n",
        );
        // Ring rows start `ring_front` points before the hull: the first computed point is aligned.
        if self.layout.ring_front > 0 {
            let _ = writeln!(
                out,
                "            org[{}] -= {};",
                self.dims - 1,
                self.layout.ring_front
            );
        }
        out.push_str(
            "            for (int64_t y = hull[0]; y - steps * TS_SKEW < hull[TS_DIMS]; y += TS_K) {\n",
        );
    }

    /// The compute box of fused step `s` in a tile's record.
    fn step_box(&self, s: &str) -> String {
        let fields = self.bound.program().fields.len();
        format!(
            "rec + {} + {} * ({s} - 1)",
            2 * self.dims * (2 + fields),
            2 * self.dims
        )
    }

    /// Emits the prefetches of the rows the band reads and writes two iterations from now.
    fn emit_prefetches(&self, out: &mut String) {
        // The rows the first step reads two iterations from now: start loading them from memory.
        for &f in &self.used {
            let input = 2 * self.dims * (2 + f);
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
                "                ts_prefetch_box((const char*)cur[{f}], ts_es[{f}], lo, hi, 0);"
            );
        }
        // In bands of whole rows (3D), the rows the last step writes two iterations from now:
        // owned before its stores reach them. (The 2D bands split rows and were not measured.)
        if self.dims >= 3 {
            let last = format!("({})", self.step_box("steps"));
            for f in updated_fields(self.bound) {
                out.push_str(&indent(
                    &clip(
                        &last,
                        "y + 2 * TS_K - steps * TS_SKEW",
                        "y + 3 * TS_K - steps * TS_SKEW",
                    ),
                    "                ",
                ));
                let _ = writeln!(
                    out,
                    "                ts_prefetch_box((const char*)nxt[{0}], ts_es[{0}], lo, hi, 1);",
                    f.index()
                );
            }
        }
    }

    /// Emits step `s`'s rows `a..b`, the rings' origin `o` and, for an intermediate step, its
    /// points outside the domain; then `lo..hi`, the step's compute box within the rows.
    fn emit_step_window(&self, out: &mut String) {
        // One origin (`org`) for the window step s reads (ring s - 1) and the rows it writes (ring s).
        out.push_str("                    const int64_t a = y - s * TS_SKEW, b = a + TS_K, o = ts_floor_to(a - TS_SKEW, TS_R);\n");
        out.push_str("                    org[0] = o;\n");
        // Points of an intermediate step outside the domain keep their values from the pass start.
        out.push_str("                    if (s < steps) {\n");
        out.push_str(&indent(&clip("hull", "a", "b"), "                        "));
        for &f in &self.used {
            let _ = writeln!(
                out,
                "                        ts_fill_outside(ring[{f}][s], org, (const char*)cur[{f}], ts_es[{f}], lo, hi, dlo, dhi);"
            );
        }
        out.push_str("                    }\n");
        let _ = writeln!(
            out,
            "                    const int64_t* c = {};",
            self.step_box("s")
        );
        out.push_str(&indent(&clip("c", "a", "b"), "                    "));
    }

    /// Emits the call computing step `s` over `lo..hi` with the stage function of its views.
    fn emit_step_call(&self, out: &mut String) {
        let k = self.stage().index();
        // `name`: the rings of step `step` for every field, declared `indent` spaces in.
        let rings = |name: &str, step: &str, indent: usize| {
            let indent = " ".repeat(indent);
            let mut code = format!("{indent}void* {name}[TS_SLOTS] = {{0}};\n");
            code.push_str(&table_slots(self.bound, &[name], "cur", &indent));
            for &f in &self.used {
                let _ = writeln!(code, "{indent}{name}[{f}] = ring[{f}][{step}];");
            }
            code
        };
        let (first, previous) = (rings("ln", "1", 24), rings("lc", "s - 1", 24));
        let next = rings("ln", "s", 28);
        // Step 1 reads the global arrays; the last step writes the other global buffers.
        let _ = write!(
            out,
            "                    if (lo[0] >= hi[0]) {{\n\
             \x20                   }} else if (s == 1 && s == steps) {{\n\
             \x20                       ts_s{k}_g(cur, nxt, ts_zero, lo, hi, t0);\n\
             \x20                   }} else if (s == 1) {{\n\
             {first}                        ts_s{k}_gl(cur, ln, ts_zero, org, lo, hi, t0);\n\
             \x20                   }} else {{\n\
             {previous}                        if (s == steps) {{\n\
             \x20                           ts_s{k}_lg(lc, nxt, org, ts_zero, lo, hi, t0 + s - 1);\n\
             \x20                       }} else {{\n\
             {next}                            ts_s{k}_l(lc, ln, org, lo, hi, t0 + s - 1);\n\
             \x20                       }}\n\
             \x20                   }}\n"
        );
    }

    /// Emits the copies of the rows step `s` wrote into its rings to their twins, where the
    /// rings are not mapped twice.
    fn emit_twins(&self, out: &mut String) {
        out.push_str("                    if (!kept->rings.mirrored && s < steps) {\n");
        for &f in &self.used {
            let _ = writeln!(
                out,
                "                        ts_ring_twin(ring[{f}][s], plane * ts_es[{f}], TS_R, a - o, b - o);"
            );
        }
        out.push_str("                    }\n");
    }
}

/// `lo..hi`: the box at `from` (a record entry) with its slowest axis clipped to `a..b`.
fn clip(from: &str, a: &str, b: &str) -> String {
    format!(
        "memcpy(lo, {from}, sizeof lo);\nmemcpy(hi, {from} + TS_DIMS, sizeof hi);\nif (lo[0] < {a}) lo[0] = {a};\nif (hi[0] > {b}) hi[0] = {b};\n"
    )
}
