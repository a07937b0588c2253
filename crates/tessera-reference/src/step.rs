//! Time steps: stages with Jacobi semantics, in-stage and after-step reductions, the stop
//! condition.

use rayon::prelude::*;
use tessera_analysis::check::visit;
use tessera_analysis::{BoundProgram, Domain};
use tessera_ir::half::storage_bits_from_f32;
use tessera_ir::{ExprKind, Id, Reduction, ReductionPlacement, Stage, Statement};
use tessera_runtime::reduce::{RowPartials, fold};
use tessera_runtime::{BackendError, Buffer};

use crate::eval::{Evaluator, ReadObserver};
use crate::precision::Precision;
use crate::rows::{Row, rows};
use crate::scan::{Carry, LineScan};
use crate::value::{Column, Element, internal, with_element_type};

/// What a run evaluates with: the program, the precision and an optional read observer.
#[derive(Clone, Copy)]
pub(crate) struct Interpreter<'a> {
    /// The program.
    pub bound: &'a BoundProgram,
    /// Exact or f64 accuracy.
    pub precision: Precision,
    /// Sees every field read.
    pub observer: Option<&'a dyn ReadObserver>,
    /// The thread pool rows run on (`None` = rayon's global pool).
    pub pool: Option<&'a rayon::ThreadPool>,
    /// The input tables (by table index), in the precision's types.
    pub tables: &'a [Buffer],
}

/// What one row of a stage produced.
struct RowOutput {
    /// The value written to each output field (in `Stage::outputs` order).
    writes: Vec<Column>,
    /// This row's partial of each due in-stage reduction.
    partials: Vec<f64>,
}

impl Interpreter<'_> {
    /// Runs step `t` on `storage`: every stage in order, then the after-step reductions; of
    /// the reductions, computes those in `due` and returns their row partials in `due`'s order.
    pub(crate) fn run_step(
        &self,
        storage: &mut [Buffer],
        t: u64,
        due: &[Id<Reduction>],
    ) -> Result<Vec<RowPartials>, BackendError> {
        match self.pool {
            Some(pool) => pool.install(|| self.step(storage, t, due)),
            None => self.step(storage, t, due),
        }
    }

    /// [`Interpreter::run_step`] on the current thread pool.
    fn step(
        &self,
        storage: &mut [Buffer],
        t: u64,
        due: &[Id<Reduction>],
    ) -> Result<Vec<RowPartials>, BackendError> {
        let program = self.bound.program();
        let mut values: Vec<Option<RowPartials>> = vec![None; due.len()];
        let mut record = |id: Id<Reduction>, partials: RowPartials| {
            if let Some(slot) = due.iter().position(|r| *r == id) {
                values[slot] = Some(partials);
            }
        };
        // The values of this step's reductions that later stages read.
        let read = self.bound.checked().stage_read_reductions();
        let mut step_values: Vec<Option<f64>> = vec![None; program.reductions.len()];
        for stage in program.stages.ids() {
            let reductions: Vec<Id<Reduction>> = self
                .bound
                .checked()
                .stage_reductions(stage)
                .into_iter()
                .filter(|r| due.contains(r) || read.contains(r))
                .collect();
            let stage_values = self.run_stage(storage, stage, t, &reductions, &step_values)?;
            for (id, partials) in reductions.into_iter().zip(stage_values) {
                step_values[id.index()] = Some(partials.value());
                record(id, partials);
            }
        }
        for (id, reduction) in program.reductions.iter() {
            if matches!(reduction.placement, ReductionPlacement::AfterStep { .. })
                && due.contains(&id)
            {
                let partials = self.reduce_after_step(storage, id, t)?;
                record(id, partials);
            }
        }
        (values.into_iter())
            .map(|v| v.ok_or_else(|| internal("a due reduction not computed")))
            .collect()
    }

    /// Runs `stage` at step `t`: evaluates every point of its domain from the pre-stage values,
    /// then writes its outputs on the domain; `step_values` are the values of the reductions
    /// earlier stages of the step computed (by reduction index). Returns the row partials of
    /// the in-stage `reductions`.
    fn run_stage(
        &self,
        storage: &mut [Buffer],
        stage: Id<Stage>,
        t: u64,
        reductions: &[Id<Reduction>],
        step_values: &[Option<f64>],
    ) -> Result<Vec<RowPartials>, BackendError> {
        let program = self.bound.program();
        if let Some(axis) = program.stages[stage].scan_axis() {
            // A stage with a scan has no in-stage reduction (the checker's E0282).
            self.run_scan_stage(storage, stage, t, step_values, axis)?;
            return Ok(Vec::new());
        }
        let outputs = program.stages[stage].outputs();
        let domain_rows = rows(self.bound.stage_domain(stage));
        let results: Vec<RowOutput> = {
            let evaluator = self.stage_evaluator(storage, stage, t, step_values);
            domain_rows
                .par_iter()
                .map(|row| self.stage_row(&evaluator, stage, &outputs, reductions, row))
                .collect::<Result<_, _>>()?
        };
        let values = (0..reductions.len())
            .map(|k| RowPartials {
                op: program.reductions[reductions[k]].op,
                rows: results.iter().map(|r| r.partials[k]).collect(),
            })
            .collect();
        let writes = results.into_iter().map(|r| r.writes);
        self.write_rows(storage, &outputs, &domain_rows, writes)?;
        Ok(values)
    }

    /// The evaluator of `stage` at step `t` on `storage`, reading the values `step_values` of
    /// the reductions of earlier stages.
    pub(crate) fn stage_evaluator<'s>(
        &'s self,
        storage: &'s [Buffer],
        stage: Id<Stage>,
        t: u64,
        step_values: &'s [Option<f64>],
    ) -> Evaluator<'s> {
        Evaluator::new(self.bound, self.precision, storage)
            .with_tables(self.tables)
            .in_stage(stage)
            .at_step(t)
            .with_reduction_values(step_values)
            .observed_by(self.observer)
    }

    /// Writes each row's values of `outputs` (in their order) to `storage`.
    pub(crate) fn write_rows(
        &self,
        storage: &mut [Buffer],
        outputs: &[Id<tessera_ir::Field>],
        rows: &[Row],
        writes: impl Iterator<Item = Vec<Column>>,
    ) -> Result<(), BackendError> {
        for (row, columns) in rows.iter().zip(writes) {
            for (field, column) in outputs.iter().zip(columns) {
                write_row(
                    &mut storage[field.index()],
                    row,
                    &self.bound.extents,
                    &column,
                )?;
            }
        }
        Ok(())
    }

    /// Evaluates `stage`'s statements and due reductions at every point of `row`.
    fn stage_row(
        &self,
        evaluator: &Evaluator,
        stage: Id<Stage>,
        outputs: &[Id<tessera_ir::Field>],
        reductions: &[Id<Reduction>],
        row: &Row,
    ) -> Result<RowOutput, BackendError> {
        let program = self.bound.program();
        let mut no_scan = |_: &LineScan, _: &Column| Err(internal("a scan in a stage without one"));
        let (writes, locals) = self.row_writes(evaluator, stage, outputs, row, &mut no_scan)?;
        let partials = reductions
            .iter()
            .map(|r| {
                let reduction = &program.reductions[*r];
                Ok(fold(
                    reduction.op,
                    evaluator.eval(row, &locals, reduction.value)?.to_f64()?,
                ))
            })
            .collect::<Result<_, BackendError>>()?;
        Ok(RowOutput { writes, partials })
    }

    /// The values `stage`'s statements write on `row` (in `outputs` order), and its locals
    /// there; a scan's values come from its operand's through `carry` (see [`Carry`]).
    pub(crate) fn row_writes(
        &self,
        evaluator: &Evaluator,
        stage: Id<Stage>,
        outputs: &[Id<tessera_ir::Field>],
        row: &Row,
        carry: &mut Carry,
    ) -> Result<(Vec<Column>, Vec<Option<Column>>), BackendError> {
        let body = &self.bound.program().stages[stage];
        let mut locals: Vec<Option<Column>> = vec![None; body.locals.len()];
        let mut writes: Vec<Option<Column>> = vec![None; outputs.len()];
        for statement in &body.body {
            match statement {
                Statement::Let { local, value } => {
                    let column = evaluator.eval(row, &locals, *value)?;
                    locals[local.index()] = Some(column);
                }
                Statement::Assign {
                    field, value, scan, ..
                } => {
                    let column = match scan {
                        None => evaluator.eval(row, &locals, *value)?,
                        Some(scan) => {
                            let line = LineScan::new(self.bound.program(), *field, *scan, *value);
                            self.scanned(evaluator, row, &locals, &line, carry)?
                        }
                    };
                    let slot = outputs
                        .iter()
                        .position(|f| f == field)
                        .ok_or_else(|| internal("an output not in `outputs`"))?;
                    // The last assignment to a field wins; every one of them read pre-stage values.
                    writes[slot] = Some(column);
                }
            }
        }
        let writes = writes
            .into_iter()
            .map(|w| w.ok_or_else(|| internal("an output never assigned")))
            .collect::<Result<_, _>>()?;
        Ok((writes, locals))
    }

    /// An after-step reduction's row partials over its domain.
    fn reduce_after_step(
        &self,
        storage: &[Buffer],
        id: Id<Reduction>,
        t: u64,
    ) -> Result<RowPartials, BackendError> {
        let reduction = &self.bound.program().reductions[id];
        let domain: &Domain = &self.bound.reduction_domains[id.index()];
        let evaluator = Evaluator::new(self.bound, self.precision, storage)
            .at_step(t)
            .observed_by(self.observer);
        let partials: Vec<f64> = rows(domain)
            .par_iter()
            .map(|row| {
                Ok(fold(
                    reduction.op,
                    evaluator.eval(row, &[], reduction.value)?.to_f64()?,
                ))
            })
            .collect::<Result<_, BackendError>>()?;
        Ok(RowPartials {
            op: reduction.op,
            rows: partials,
        })
    }
}

/// Whether `bound`'s `until` condition holds, given the latest value of each reduction (by
/// reduction index), with THE semantics (exact mode) — for backends that evaluate the
/// condition on the host. False without a condition, and while a reduction it names has no
/// value yet.
pub fn until_holds(bound: &BoundProgram, latest: &[Option<f64>]) -> Result<bool, BackendError> {
    condition_holds(bound, Precision::Exact, latest)
}

/// [`until_holds`] in `precision`.
pub(crate) fn condition_holds(
    bound: &BoundProgram,
    precision: Precision,
    latest: &[Option<f64>],
) -> Result<bool, BackendError> {
    let program = bound.program();
    let Some(until) = &program.until else {
        return Ok(false);
    };
    let mut complete = true;
    visit(program, until.condition, &mut |e| {
        if let ExprKind::ReductionValue(r) = e.kind {
            complete &= latest.get(r.index()).copied().flatten().is_some();
        }
    });
    if !complete {
        return Ok(false);
    }
    let evaluator = Evaluator::new(bound, precision, &[]).with_reduction_values(latest);
    let value = evaluator.eval(&Row::single(program.dims()), &[], until.condition)?;
    Ok(value.slice::<bool>()?.first().copied().unwrap_or(false))
}

/// Writes `column` to the points of `row` in `buffer` (same element type).
pub(crate) fn write_row(
    buffer: &mut Buffer,
    row: &Row,
    extents: &[usize],
    column: &Column,
) -> Result<(), BackendError> {
    let base = row.base(extents);
    let ty = buffer.ty();
    if let Buffer::F16(dst) | Buffer::Bf16(dst) = buffer {
        let src = column.slice::<f32>()?;
        if src.len() != row.len {
            return Err(internal("a row result of the wrong length"));
        }
        for (k, &value) in src.iter().enumerate() {
            dst[base + row.x(k) as usize] = storage_bits_from_f32(ty, value);
        }
        return Ok(());
    }
    with_element_type!(buffer.ty(), T => {
        let dst = T::of_buffer_mut(buffer).ok_or_else(|| internal("buffer type changed"))?;
        let src = column.slice::<T>()?;
        if src.len() != row.len {
            return Err(internal("a row result of the wrong length"));
        }
        for (k, &value) in src.iter().enumerate() {
            dst[base + row.x(k) as usize] = value;
        }
        Ok(())
    }, bool => Err(internal("a `bool` field buffer")))
}
