//! [`CpuExecutable`]: the loaded kernel and the time loop around it (chunks between reduction
//! steps, overlapped tile tables, reductions, the stop condition).

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::time::{Duration, Instant};

use tessera_analysis::BoundProgram;
use tessera_analysis::tiling::tile_regions;
use tessera_codegen::cpu::layout::{
    WriteMode, partial_layout, partial_len, push_tile_record, tile_record_len, updated_fields,
    write_mode,
};
use tessera_ir::{ExprKind, ReductionPlacement};
use tessera_jit::{CompiledLibrary, JitError};
use tessera_plan::cpu::{CpuPlan, CpuStrategy, tile_cores, tile_hull};
use tessera_runtime::reduce::fold;
use tessera_runtime::{
    BackendError, Buffer, Executable, FieldSet, Progress, ReductionRecord, RunReport,
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

/// A program compiled for the CPU backend.
pub struct CpuExecutable {
    bound: BoundProgram,
    plan: CpuPlan,
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
    /// Latest value of each reduction, kept across `run` calls; cleared when a run starts at 0.
    latest: Vec<Option<f64>>,
    compile_time: Duration,
    /// Keeps the entry points valid; declared last so it is dropped after them.
    _library: CompiledLibrary,
}

impl CpuExecutable {
    /// Looks up the entry points of `library`, generated for `bound` under `plan`.
    pub fn new(
        bound: BoundProgram,
        plan: CpuPlan,
        library: CompiledLibrary,
        compile_time: Duration,
    ) -> Result<Self, JitError> {
        // SAFETY: the types match the prototypes emitted by `tessera_codegen::cpu::emit_c`.
        let (run, step_reduce) = unsafe {
            (
                *library.symbol::<RunFn>("tessera_run")?,
                *library.symbol::<StepReduceFn>("tessera_step_reduce")?,
            )
        };
        let driver = match plan.strategy {
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
        let scratch_fns = match plan.strategy {
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
        let reductions = bound.program().reductions.len();
        Ok(CpuExecutable {
            bound,
            plan,
            run,
            step_reduce,
            fused,
            scratch_fns,
            scratch: None,
            until,
            tables: HashMap::new(),
            latest: vec![None; reductions],
            compile_time,
            _library: library,
        })
    }

    /// The plan this executable runs.
    pub fn plan(&self) -> &CpuPlan {
        &self.plan
    }

    /// Whether some reduction is computed in step `t`.
    fn due(&self, t: u64) -> Vec<i32> {
        self.bound
            .program()
            .reductions
            .values()
            .map(|r| i32::from((t + 1).is_multiple_of(r.every.max(1))))
            .collect()
    }

    /// The tile (band) table for `steps` fused steps.
    fn table(&mut self, steps: usize) -> Result<&[i64], BackendError> {
        if !self.tables.contains_key(&steps) {
            let mut records = Vec::new();
            for core in tile_cores(&self.bound.extents, &self.plan.tile) {
                let regions = tile_regions(&self.bound, &core, steps);
                let hull = tile_hull(&regions, &core);
                // Wavefront rings hold a window of the slowest axis, not the whole hull.
                let first = usize::from(self.plan.strategy == CpuStrategy::Wavefront);
                if (first..hull.dims()).any(|a| hull.len(a) as usize > self.plan.scratch_extents[a])
                {
                    return Err(BackendError::Runtime(format!(
                        "internal error: tile hull {hull:?} exceeds the scratch buffers {:?}",
                        self.plan.scratch_extents
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
        let threads = self.plan.threads as c_int;
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

    /// Runs `steps` steps from `t` with no reduction due.
    fn run_plain(
        &mut self,
        user: &[*mut c_void],
        spare: &[*mut c_void],
        t: u64,
        steps: u64,
    ) -> Result<(), BackendError> {
        let threads = self.plan.threads as c_int;
        match self.fused {
            Some((fused, copy_back)) => {
                // Each call leaves its results in its second buffer set: alternate the two and
                // copy back once at the end if the results are in the spare buffers.
                let (mut current, mut other) = (user.to_vec(), spare.to_vec());
                let scratch = self.scratch()?;
                let mut done = 0;
                for chunk in pass_depths(steps, self.plan.time_tile as u64) {
                    let record = tile_record_len(&self.bound, chunk as usize);
                    let table = self.table(chunk as usize)?;
                    let tiles = table.len() / record;
                    // SAFETY: pointers to live buffers of the grid's size per field (both sets
                    // agree outside the written domains), a table of `tiles` records for
                    // `chunk` steps and the driver's own scratch (or null where it has none), as
                    // the generated code expects.
                    let status = unsafe {
                        fused(
                            current.as_ptr(),
                            other.as_ptr(),
                            (t + done) as i64,
                            chunk as i64,
                            table.as_ptr(),
                            tiles as i64,
                            threads,
                            scratch,
                        )
                    };
                    check_status(status)?;
                    for (a, b) in current.iter_mut().zip(other.iter_mut()) {
                        if !b.is_null() {
                            std::mem::swap(a, b);
                        }
                    }
                    done += chunk;
                }
                debug_assert_eq!(done, steps);
                if current.as_slice() != user {
                    // SAFETY: as above; the results are in `spare`.
                    unsafe { copy_back(user.as_ptr(), spare.as_ptr(), threads) };
                }
                Ok(())
            }
            // SAFETY: pointers to live buffers of the grid's size per field.
            None => check_status(unsafe {
                (self.run)(
                    user.as_ptr(),
                    spare.as_ptr(),
                    t as i64,
                    steps as i64,
                    threads,
                )
            }),
        }
    }

    /// Runs step `t`, computing its due reductions; returns their values.
    fn run_reducing(
        &mut self,
        user: &[*mut c_void],
        spare: &[*mut c_void],
        t: u64,
        due: &[i32],
        report: &mut RunReport,
    ) -> Result<(), BackendError> {
        let mut partials = vec![0.0f64; partial_len(&self.bound).max(1)];
        // SAFETY: as in `run_plain`; `due` has one flag per reduction and `partials` the length
        // of the partial layout.
        let status = unsafe {
            (self.step_reduce)(
                user.as_ptr(),
                spare.as_ptr(),
                t as i64,
                due.as_ptr(),
                partials.as_mut_ptr(),
                self.plan.threads as c_int,
            )
        };
        check_status(status)?;
        let program = self.bound.program();
        let layout = partial_layout(&self.bound);
        // Records follow the reference's order: in-stage reductions by stage, then after-step.
        let mut order: Vec<_> = program.reductions.ids().collect();
        order.sort_by_key(|r| match program.reductions[*r].placement {
            ReductionPlacement::InStage(stage) => (0, stage.index(), r.index()),
            ReductionPlacement::AfterStep { .. } => (1, 0, r.index()),
        });
        for r in order.into_iter().filter(|r| due[r.index()] != 0) {
            let (offset, rows) = layout[r.index()];
            let value = fold(
                program.reductions[r].op,
                partials[offset..offset + rows].iter().copied(),
            );
            self.latest[r.index()] = Some(value);
            report.reductions.push(ReductionRecord {
                step: t,
                name: program.reductions[r].name.clone(),
                value,
            });
        }
        Ok(())
    }

    /// Whether the stop condition holds (false until every reduction it names has a value).
    fn stop(&self) -> bool {
        let program = self.bound.program();
        let (Some(until), Some(condition)) = (self.until, program.until.as_ref()) else {
            return false;
        };
        let mut complete = true;
        tessera_analysis::check::visit(program, condition.condition, &mut |e| {
            if let ExprKind::ReductionValue(r) = e.kind {
                complete &= self.latest[r.index()].is_some();
            }
        });
        if !complete {
            return false;
        }
        let values: Vec<f64> = self.latest.iter().map(|v| v.unwrap_or(0.0)).collect();
        // SAFETY: one value per reduction, as the generated condition reads.
        unsafe { until(values.as_ptr()) != 0 }
    }

    /// Per field, whether the generated code uses its spare buffer: every updated field under
    /// `overlapped` and `wavefront`, else those some stage writes through the other buffer.
    fn spare_fields(&self) -> Vec<bool> {
        let program = self.bound.program();
        let updated = updated_fields(&self.bound);
        program
            .fields
            .ids()
            .map(|f| {
                updated.contains(&f)
                    && (self.fused.is_some()
                        || program.stages.iter().any(|(s, stage)| {
                            stage.outputs().contains(&f)
                                && write_mode(&self.bound, s, f) != WriteMode::InPlace
                        }))
            })
            .collect()
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

/// The depths of the fused passes that run `steps` steps with passes of at most `depth` steps:
/// as few passes as `depth` allows, their depths as even as possible (deepest first). A pass
/// much shallower than the rest (50 steps as 6 x 8 + 2) would run near the memory roofline,
/// while 8 + 6 x 7 keeps every pass deep.
fn pass_depths(steps: u64, depth: u64) -> impl Iterator<Item = u64> {
    let passes = steps.div_ceil(depth.max(1));
    (0..passes).map(move |i| steps / passes + u64::from(i < steps % passes))
}

fn check_status(status: c_int) -> Result<(), BackendError> {
    match status {
        0 => Ok(()),
        _ => Err(BackendError::Runtime(
            "the CPU kernel could not allocate its per-thread scratch buffers; use a smaller tile"
                .into(),
        )),
    }
}

impl Executable for CpuExecutable {
    fn run(
        &mut self,
        fields: &mut FieldSet,
        first_step: u64,
        steps: u64,
        progress: &mut dyn Progress,
    ) -> Result<RunReport, BackendError> {
        self.check_fields(fields)?;
        if first_step == 0 {
            self.latest.fill(None);
        }
        let needs_spare = self.spare_fields();
        let mut spare: Vec<Option<Buffer>> = fields
            .buffers
            .iter()
            .zip(&needs_spare)
            .map(|(b, &needed)| needed.then(|| b.clone()))
            .collect();
        let user: Vec<*mut c_void> = fields
            .buffers
            .iter_mut()
            .map(|b| b.as_mut_ptr().cast())
            .collect();
        let spare_ptrs: Vec<*mut c_void> = spare
            .iter_mut()
            .map(|b| {
                b.as_mut()
                    .map_or(std::ptr::null_mut(), |b| b.as_mut_ptr().cast())
            })
            .collect();
        let start = Instant::now();
        let mut report = RunReport {
            plan: self.describe(),
            ..RunReport::default()
        };
        let has_reductions = !self.bound.program().reductions.is_empty();
        let mut done = 0;
        while done < steps {
            let t = first_step + done;
            let plain = if has_reductions {
                (0..steps - done)
                    .find(|&d| self.due(t + d).contains(&1))
                    .unwrap_or(steps - done)
            } else {
                steps - done
            };
            if plain > 0 {
                self.run_plain(&user, &spare_ptrs, t, plain)?;
                done += plain;
                report.steps = done;
                progress.advance(done, steps);
                continue;
            }
            let due = self.due(t);
            self.run_reducing(&user, &spare_ptrs, t, &due, &mut report)?;
            done += 1;
            report.steps = done;
            progress.advance(done, steps);
            if self.stop() {
                report.stopped_early = true;
                break;
            }
        }
        report.compute_time = start.elapsed();
        drop(spare);
        Ok(report)
    }

    fn describe(&self) -> String {
        format!("{}", self.plan)
    }

    fn compile_time(&self) -> Duration {
        self.compile_time
    }
}

#[cfg(test)]
mod tests {
    use super::pass_depths;

    #[test]
    fn pass_depths_are_even_and_cover_the_steps() {
        let depths = |steps, depth| pass_depths(steps, depth).collect::<Vec<_>>();
        assert_eq!(depths(50, 8), [8, 7, 7, 7, 7, 7, 7]);
        assert_eq!(depths(48, 8), [8; 6]);
        assert_eq!(depths(100, 16), [15, 15, 14, 14, 14, 14, 14]);
        assert_eq!(depths(3, 8), [3]);
        assert_eq!(depths(0, 8), Vec::<u64>::new());
        for steps in 0..200 {
            for depth in 1..20 {
                let d = depths(steps, depth);
                assert_eq!(d.iter().sum::<u64>(), steps);
                assert_eq!(d.len() as u64, steps.div_ceil(depth));
                assert!(d.iter().all(|&x| 1 <= x && x <= depth));
                assert!(d.windows(2).all(|w| w[0] >= w[1] && w[0] - w[1] <= 1));
            }
        }
    }
}
