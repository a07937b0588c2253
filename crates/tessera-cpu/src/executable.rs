//! [`CpuExecutable`]: the loaded kernel and its entry points, and [`CpuRun`], a run the
//! schedule driver steps: passes through the plain or fused drivers (with their tile tables
//! and the wavefront's kept scratch), reducing steps, the stop condition.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::time::Duration;

use tessera_analysis::BoundProgram;
use tessera_analysis::region::Rect;
use tessera_analysis::tiling::tile_regions;
use tessera_codegen::cpu::layout::{
    WriteMode, partial_layout, partial_len, push_tile_record, tile_record_len, updated_fields,
    write_mode,
};
use tessera_ir::{Id, Receiver};
use tessera_jit::{CompiledLibrary, JitError};
use tessera_plan::Plan;
use tessera_plan::cpu::{CpuLayout, CpuPlan, CpuStrategy, tile_cores, tile_hull};
use tessera_runtime::boxes::{box_rows, element_width};
use tessera_runtime::reduce::RowPartials;
use tessera_runtime::{
    ActiveRun, BackendError, Buffer, Executable, FieldSet, Pass, RunTimes, gather_bytes,
};

type RunFn = unsafe extern "C" fn(*const *mut c_void, *const *mut c_void, i64, i64, c_int) -> c_int;
type StepReduceFn = unsafe extern "C" fn(
    *const *mut c_void,
    *const *mut c_void,
    i64,
    *const i32,
    *mut f64,
    c_int,
) -> c_int;
type FusedFn = unsafe extern "C" fn(
    *const *mut c_void,
    *const *mut c_void,
    i64,
    i64,
    *const i64,
    i64,
    c_int,
    *mut c_void,
) -> c_int;
type ScratchOpenFn = unsafe extern "C" fn(c_int) -> *mut c_void;
type ScratchCloseFn = unsafe extern "C" fn(*mut c_void, c_int);
type UntilFn = unsafe extern "C" fn(*const f64) -> c_int;
type CopyBackFn = unsafe extern "C" fn(*const *mut c_void, *const *mut c_void, c_int);

/// The scratch a `wavefront` driver keeps between its calls (each thread's ring buffers),
/// released with the library's `tessera_scratch_close`.
struct DriverScratch {
    pointer: *mut c_void,
    close: ScratchCloseFn,
    threads: c_int,
}

// SAFETY: the scratch is plain memory owned by this value; the driver touches it only during
// calls made through `&mut CpuExecutable`.
unsafe impl Send for DriverScratch {}

impl Drop for DriverScratch {
    fn drop(&mut self) {
        // SAFETY: `pointer` came from the library's `tessera_scratch_open(threads)` and no call
        // that uses it is running.
        unsafe { (self.close)(self.pointer, self.threads) };
    }
}

/// Per field, whether the generated code uses its spare buffer: every updated field when
/// passes fuse steps (`overlapped` and `wavefront`), else those some stage writes through the
/// other buffer.
pub(crate) fn spare_fields(bound: &BoundProgram, fuses_steps: bool) -> Vec<bool> {
    let program = bound.program();
    let updated = updated_fields(bound);
    program
        .fields
        .ids()
        .map(|f| {
            updated.contains(&f)
                && (fuses_steps
                    || program.stages.iter().any(|(s, stage)| {
                        stage.outputs().contains(&f)
                            && write_mode(bound, s, f) != WriteMode::InPlace
                    }))
        })
        .collect()
}

/// A program compiled for the CPU backend.
pub struct CpuExecutable {
    bound: BoundProgram,
    plan: Plan,
    cpu: CpuPlan,
    layout: CpuLayout,
    run: RunFn,
    step_reduce: StepReduceFn,
    /// The time-tiled driver (`overlapped` or `wavefront` plans) and the copy of its results
    /// from the spare buffers back to the user's.
    fused: Option<(FusedFn, CopyBackFn)>,
    /// `tessera_scratch_open` and `_close` of `wavefront` plans, and the scratch once opened.
    scratch_fns: Option<(ScratchOpenFn, ScratchCloseFn)>,
    scratch: Option<DriverScratch>,
    until: Option<UntilFn>,
    /// Overlapped tile (or wavefront band) records by fused step count.
    tables: HashMap<usize, Vec<i64>>,
    compile_time: Duration,
    /// Keeps the entry points valid; declared last so it is dropped after them.
    _library: CompiledLibrary,
}

impl CpuExecutable {
    /// Looks up the entry points of `library`, generated for `bound` under `plan` (a CPU plan).
    pub fn new(
        bound: BoundProgram,
        plan: Plan,
        library: CompiledLibrary,
        compile_time: Duration,
    ) -> Result<Self, JitError> {
        let cpu = plan
            .backend
            .cpu()
            .cloned()
            .expect("the cpu backend prepares cpu plans only");
        // SAFETY: the types match the prototypes emitted by `tessera_codegen::cpu::emit_c`.
        let (run, step_reduce) = unsafe {
            (
                *library.symbol::<RunFn>("tessera_run")?,
                *library.symbol::<StepReduceFn>("tessera_step_reduce")?,
            )
        };
        let driver = match cpu.strategy {
            CpuStrategy::Overlapped => Some("tessera_run_overlapped"),
            CpuStrategy::Wavefront => Some("tessera_run_wavefront"),
            _ => None,
        };
        let fused = match driver {
            // SAFETY: as above (both drivers have the same prototype).
            Some(name) => Some(unsafe {
                (
                    *library.symbol::<FusedFn>(name)?,
                    *library.symbol::<CopyBackFn>("tessera_copy_back")?,
                )
            }),
            None => None,
        };
        let scratch_fns = match cpu.strategy {
            // SAFETY: as above.
            CpuStrategy::Wavefront => Some(unsafe {
                (
                    *library.symbol::<ScratchOpenFn>("tessera_scratch_open")?,
                    *library.symbol::<ScratchCloseFn>("tessera_scratch_close")?,
                )
            }),
            _ => None,
        };
        let until = match bound.program().until {
            // SAFETY: as above.
            Some(_) => Some(unsafe { *library.symbol::<UntilFn>("tessera_until")? }),
            None => None,
        };
        let layout = cpu.layout(&bound);
        Ok(CpuExecutable {
            bound,
            plan,
            cpu,
            layout,
            run,
            step_reduce,
            fused,
            scratch_fns,
            scratch: None,
            until,
            tables: HashMap::new(),
            compile_time,
            _library: library,
        })
    }

    /// The CPU plan this executable runs.
    pub fn cpu_plan(&self) -> &CpuPlan {
        &self.cpu
    }

    /// The tile (band) table for `steps` fused steps.
    fn table(&mut self, steps: usize) -> Result<&[i64], BackendError> {
        if !self.tables.contains_key(&steps) {
            let mut records = Vec::new();
            for core in tile_cores(&self.bound.extents, &self.cpu.tile) {
                let regions = tile_regions(&self.bound, &core, steps);
                let hull = tile_hull(&regions, &core);
                // Wavefront rings hold a window of the slowest axis, not the whole hull.
                let first = usize::from(self.cpu.strategy == CpuStrategy::Wavefront);
                let scratch = &self.layout.scratch_extents;
                if (first..hull.dims()).any(|a| hull.len(a) as usize > scratch[a]) {
                    return Err(BackendError::Runtime(format!(
                        "internal error: tile hull {hull:?} exceeds the scratch buffers {scratch:?}"
                    )));
                }
                push_tile_record(&mut records, &hull, &core, &regions);
            }
            debug_assert_eq!(records.len() % tile_record_len(&self.bound, steps), 0);
            self.tables.insert(steps, records);
        }
        Ok(&self.tables[&steps])
    }

    /// The fused driver's scratch: opened at the first call, null for drivers without one.
    fn scratch(&mut self) -> Result<*mut c_void, BackendError> {
        let Some((open, close)) = self.scratch_fns else {
            return Ok(std::ptr::null_mut());
        };
        if let Some(scratch) = &self.scratch {
            return Ok(scratch.pointer);
        }
        let threads = self.cpu.threads as c_int;
        // SAFETY: the library's own allocator for `threads` threads.
        let pointer = unsafe { open(threads) };
        if pointer.is_null() {
            check_status(1)?;
        }
        self.scratch = Some(DriverScratch {
            pointer,
            close,
            threads,
        });
        Ok(pointer)
    }

    /// Checks that `fields` belongs to this program.
    fn check_fields(&self, fields: &FieldSet) -> Result<(), BackendError> {
        let program = self.bound.program();
        if fields.shape != self.bound.extents || fields.buffers.len() != program.fields.len() {
            return Err(BackendError::InvalidOptions(format!(
                "the fields have shape {:?} and {} buffers, but the program needs shape {:?} and {} fields",
                fields.shape,
                fields.buffers.len(),
                self.bound.extents,
                program.fields.len()
            )));
        }
        let cells = self.bound.cell_count();
        for (buffer, field) in fields.buffers.iter().zip(program.fields.values()) {
            if buffer.ty() != field.ty || buffer.len() != cells {
                return Err(BackendError::InvalidOptions(format!(
                    "field `{}` has {} `{}` values, but the program needs {cells} `{}` values",
                    field.name,
                    buffer.len(),
                    buffer.ty(),
                    field.ty
                )));
            }
        }
        Ok(())
    }
}

/// Maps a kernel's status to a result: 1 means the per-thread scratch could not be allocated.
fn check_status(status: c_int) -> Result<(), BackendError> {
    match status {
        0 => Ok(()),
        _ => Err(BackendError::Resources(
            "the CPU kernel could not allocate its per-thread scratch buffers; use a smaller tile or fewer fused steps"
                .into(),
        )),
    }
}

impl Executable for CpuExecutable {
    fn program(&self) -> &BoundProgram {
        &self.bound
    }

    fn plan(&self) -> &Plan {
        &self.plan
    }

    fn describe(&self) -> String {
        format!("cpu {}", self.cpu.summary(Some(&self.layout)))
    }

    fn compile_time(&self) -> Duration {
        self.compile_time
    }

    fn start<'a>(
        &'a mut self,
        fields: &'a mut FieldSet,
    ) -> Result<Box<dyn ActiveRun + 'a>, BackendError> {
        self.check_fields(fields)?;
        let needs_spare = spare_fields(&self.bound, self.fused.is_some());
        let mut spare: Vec<Option<Buffer>> = fields
            .buffers
            .iter()
            .zip(&needs_spare)
            .map(|(b, &needed)| needed.then(|| b.clone()))
            .collect();
        // The input tables follow the fields in both pointer arrays (read only).
        let tables: Vec<*mut c_void> = (fields.tables.iter())
            .map(|b| b.as_bytes().as_ptr().cast_mut().cast())
            .collect();
        let user: Vec<*mut c_void> = (fields.buffers.iter_mut())
            .map(|b| b.as_mut_ptr().cast())
            .chain(tables.iter().copied())
            .collect();
        let other: Vec<*mut c_void> = (spare.iter_mut())
            .map(|b| {
                b.as_mut()
                    .map_or(std::ptr::null_mut(), |b| b.as_mut_ptr().cast())
            })
            .chain(tables)
            .collect();
        Ok(Box::new(CpuRun {
            executable: self,
            fields,
            _spare: spare,
            current: user.clone(),
            other: other.clone(),
            user,
            spare: other,
            spare_stale: false,
        }))
    }
}

/// A run of a CPU executable. The generated functions take two buffer sets, the current
/// values and a spare that agrees with them outside the written domains; a fused pass leaves
/// its results in the spare set, so the run alternates the two and copies the results back
/// to the user's buffers only when the fields are read or the run ends.
pub struct CpuRun<'a> {
    executable: &'a mut CpuExecutable,
    fields: &'a mut FieldSet,
    /// The spare buffers (owned for the run; `spare` points into them).
    _spare: Vec<Option<Buffer>>,
    /// The user's buffers and the spare ones (null where a field has none).
    user: Vec<*mut c_void>,
    spare: Vec<*mut c_void>,
    /// The set holding the current values, and the other one.
    current: Vec<*mut c_void>,
    other: Vec<*mut c_void>,
    /// The fields were lent writable: the spare set must be made to agree with them again.
    spare_stale: bool,
}

impl CpuRun<'_> {
    /// Runs `steps` steps from `t` with no reduction due: one fused call, or the plain loop.
    fn run_plain(&mut self, t: u64, steps: u64) -> Result<(), BackendError> {
        if steps > 0
            && !(self.executable.bound.checked())
                .stage_read_reductions()
                .is_empty()
        {
            return Err(BackendError::Runtime(format!(
                "internal error: steps {t}..{} were scheduled without the reductions their stages read",
                t + steps
            )));
        }
        let threads = self.executable.cpu.threads as c_int;
        match self.executable.fused {
            Some((fused, _)) => {
                let scratch = self.executable.scratch()?;
                let record = tile_record_len(&self.executable.bound, steps as usize);
                let table = self.executable.table(steps as usize)?;
                let tiles = table.len() / record;
                // SAFETY: pointers to live buffers of the grid's size per field (both sets
                // agree outside the written domains), a table of `tiles` records for `steps`
                // steps and the driver's own scratch (or null where it has none), as the
                // generated code expects.
                let status = unsafe {
                    fused(
                        self.current.as_ptr(),
                        self.other.as_ptr(),
                        t as i64,
                        steps as i64,
                        table.as_ptr(),
                        tiles as i64,
                        threads,
                        scratch,
                    )
                };
                check_status(status)?;
                for (a, b) in self.current.iter_mut().zip(self.other.iter_mut()) {
                    if !b.is_null() {
                        std::mem::swap(a, b);
                    }
                }
                Ok(())
            }
            // SAFETY: pointers to live buffers of the grid's size per field.
            None => check_status(unsafe {
                (self.executable.run)(
                    self.current.as_ptr(),
                    self.other.as_ptr(),
                    t as i64,
                    steps as i64,
                    threads,
                )
            }),
        }
    }

    /// Runs step `t`, computing `pass`'s reductions; returns their row partials in its order.
    fn run_reducing(&mut self, pass: &Pass) -> Result<Vec<RowPartials>, BackendError> {
        let bound = &self.executable.bound;
        let t = pass.last_step();
        let mut due = vec![0i32; bound.program().reductions.len()];
        for r in &pass.reductions {
            due[r.index()] = 1;
        }
        let mut partials = vec![0.0f64; partial_len(bound).max(1)];
        // SAFETY: as in `run_plain`; `due` has one flag per reduction and `partials` the length
        // of the partial layout.
        let status = unsafe {
            (self.executable.step_reduce)(
                self.current.as_ptr(),
                self.other.as_ptr(),
                t as i64,
                due.as_ptr(),
                partials.as_mut_ptr(),
                self.executable.cpu.threads as c_int,
            )
        };
        check_status(status)?;
        let program = bound.program();
        let layout = partial_layout(bound);
        Ok(pass
            .reductions
            .iter()
            .map(|r| {
                let (offset, rows) = layout[r.index()];
                RowPartials {
                    op: program.reductions[*r].op,
                    rows: partials[offset..offset + rows].to_vec(),
                }
            })
            .collect())
    }

    /// Makes the spare buffers agree with the user's again after the fields were lent
    /// writable (they must agree outside the written domains).
    fn refresh_spare(&mut self) {
        if !std::mem::take(&mut self.spare_stale) {
            return;
        }
        for (spare, field) in self._spare.iter_mut().zip(&self.fields.buffers) {
            if let Some(spare) = spare {
                spare.as_bytes_mut().copy_from_slice(field.as_bytes());
            }
        }
    }

    /// Leaves the current values in the user's buffers.
    fn copy_back(&mut self) {
        if self.current == self.user {
            return;
        }
        if let Some((_, copy_back)) = self.executable.fused {
            // SAFETY: as in `run_plain`; the results are in the spare buffers.
            unsafe {
                copy_back(
                    self.user.as_ptr(),
                    self.spare.as_ptr(),
                    self.executable.cpu.threads as c_int,
                )
            };
        }
        self.current.clone_from(&self.user);
        self.other.clone_from(&self.spare);
    }
}

impl ActiveRun for CpuRun<'_> {
    fn run_pass(&mut self, pass: &Pass) -> Result<Vec<RowPartials>, BackendError> {
        self.refresh_spare();
        if pass.reductions.is_empty() {
            self.run_plain(pass.first_step, pass.steps)?;
            return Ok(Vec::new());
        }
        if pass.steps > 1 {
            self.run_plain(pass.first_step, pass.steps - 1)?;
        }
        self.run_reducing(pass)
    }

    fn until_holds(&mut self, latest: &[Option<f64>]) -> Result<bool, BackendError> {
        let Some(until) = self.executable.until else {
            return Ok(false);
        };
        let values: Vec<f64> = latest.iter().map(|v| v.unwrap_or(0.0)).collect();
        // SAFETY: one value per reduction, as the generated condition reads.
        Ok(unsafe { until(values.as_ptr()) != 0 })
    }

    fn fields(&mut self) -> Result<&FieldSet, BackendError> {
        self.copy_back();
        Ok(self.fields)
    }

    fn fields_mut(&mut self) -> Result<&mut FieldSet, BackendError> {
        self.copy_back();
        self.spare_stale = true;
        Ok(self.fields)
    }

    fn read_box(&mut self, rect: &Rect) -> Result<Vec<u8>, BackendError> {
        let mut out = Vec::new();
        for (field, buffer) in self.fields.buffers.iter().enumerate() {
            let width = element_width(buffer);
            // SAFETY: `current[field]` points to a live buffer of the grid's size of this
            // field's elements (the user's or the spare one, both `buffer.len()` long).
            let data = unsafe {
                std::slice::from_raw_parts(self.current[field].cast::<u8>(), buffer.len() * width)
            };
            for (offset, len) in box_rows(rect, &self.fields.shape, width) {
                out.extend_from_slice(&data[offset..offset + len]);
            }
        }
        Ok(out)
    }

    fn write_box(&mut self, rect: &Rect, bytes: &[u8]) -> Result<(), BackendError> {
        let mut at = 0;
        for (field, buffer) in self.fields.buffers.iter().enumerate() {
            let width = element_width(buffer);
            let rows = box_rows(rect, &self.fields.shape, width);
            // Both sets: they must agree outside the written domains.
            for set in [&self.current, &self.other] {
                let pointer = set[field].cast::<u8>();
                if pointer.is_null() {
                    continue;
                }
                // SAFETY: as in `read_box`; no other reference to these buffers is live while
                // the run holds them.
                let data = unsafe { std::slice::from_raw_parts_mut(pointer, buffer.len() * width) };
                let mut from = at;
                for &(offset, len) in &rows {
                    data[offset..offset + len].copy_from_slice(&bytes[from..from + len]);
                    from += len;
                }
            }
            at += rows.iter().map(|(_, len)| len).sum::<usize>();
        }
        Ok(())
    }

    fn sample(&mut self, receiver: Id<Receiver>, points: &[usize]) -> Result<Buffer, BackendError> {
        let bound = &self.executable.bound;
        let field = bound.program().receivers[receiver].field.index();
        let ty = self.fields.buffers[field].ty();
        // SAFETY: the current set's pointer of a field addresses a live buffer of the grid's
        // size of that field's type (the user's buffer or its spare), not written while this
        // slice lives.
        let current = unsafe {
            std::slice::from_raw_parts(
                self.current[field].cast::<u8>().cast_const(),
                bound.cell_count() * ty.size_bytes(),
            )
        };
        Ok(gather_bytes(ty, current, points))
    }

    fn finish(mut self: Box<Self>) -> Result<RunTimes, BackendError> {
        self.copy_back();
        Ok(RunTimes::default())
    }
}
