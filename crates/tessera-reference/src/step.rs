//! Time steps: stages with Jacobi semantics, in-stage and after-step reductions, the stop
//! condition.

use std::time::Instant;

use rayon::prelude::*;
use tessera_analysis::check::visit;
use tessera_analysis::{BoundProgram, Domain};
use tessera_ir::{ExprKind, Id, Reduction, ReductionPlacement, Stage, Statement};
use tessera_runtime::reduce::fold;
use tessera_runtime::{BackendError, Buffer, Progress, ReductionRecord, RunReport};

use crate::eval::{Evaluator, ReadObserver};
use crate::precision::Precision;
use crate::rows::{Row, rows};
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
}

/// What one row of a stage produced.
struct RowOutput {
    /// The value written to each output field (in `Stage::outputs` order).
    writes: Vec<Column>,
    /// This row's partial of each due in-stage reduction.
    partials: Vec<f64>,
}

/// Whether a reduction with `every` is computed in step `t`.
fn due(every: u64, t: u64) -> bool {
    (t + 1).is_multiple_of(every.max(1))
}

impl Interpreter<'_> {
    /// Runs `steps` steps from `first_step` on `storage`; `latest` holds each reduction's latest
    /// value (by reduction index) and is updated.
    pub(crate) fn run_steps(
        &self,
        storage: &mut [Buffer],
        first_step: u64,
        steps: u64,
        latest: &mut [Option<f64>],
        progress: &mut dyn Progress,
    ) -> Result<RunReport, BackendError> {
        let start = Instant::now();
        let mut report = RunReport::default();
        for done in 0..steps {
            let t = first_step + done;
            let records = &mut report.reductions;
            let computed = match self.pool {
                Some(pool) => pool.install(|| self.run_step(storage, t, latest, records)),
                None => self.run_step(storage, t, latest, records),
            }?;
            report.steps = done + 1;
            progress.advance(done + 1, steps);
            if computed && self.stop_condition_holds(latest)? {
                report.stopped_early = true;
                break;
            }
        }
        report.compute_time = start.elapsed();
        Ok(report)
    }

    /// Runs step `t`: every stage in order, then the after-step reductions. Returns whether a
    /// reduction was computed.
    pub(crate) fn run_step(
        &self,
        storage: &mut [Buffer],
        t: u64,
        latest: &mut [Option<f64>],
        records: &mut Vec<ReductionRecord>,
    ) -> Result<bool, BackendError> {
        let program = self.bound.program();
        let mut computed = false;
        let mut record = |id: Id<Reduction>, value: f64| {
            latest[id.index()] = Some(value);
            records.push(ReductionRecord {
                step: t,
                name: program.reductions[id].name.clone(),
                value,
            });
            computed = true;
        };
        for stage in program.stages.ids() {
            let reductions: Vec<Id<Reduction>> = self
                .bound
                .checked()
                .stage_reductions(stage)
                .into_iter()
                .filter(|r| due(program.reductions[*r].every, t))
                .collect();
            let values = self.run_stage(storage, stage, t, &reductions)?;
            for (id, value) in reductions.into_iter().zip(values) {
                record(id, value);
            }
        }
        for (id, reduction) in program.reductions.iter() {
            if matches!(reduction.placement, ReductionPlacement::AfterStep { .. })
                && due(reduction.every, t)
            {
                let value = self.reduce_after_step(storage, id, t)?;
                record(id, value);
            }
        }
        Ok(computed)
    }

    /// Runs `stage` at step `t`: evaluates every point of its domain from the pre-stage values,
    /// then writes its outputs on the domain. Returns the values of the due in-stage `reductions`.
    fn run_stage(
        &self,
        storage: &mut [Buffer],
        stage: Id<Stage>,
        t: u64,
        reductions: &[Id<Reduction>],
    ) -> Result<Vec<f64>, BackendError> {
        let program = self.bound.program();
        let outputs = program.stages[stage].outputs();
        let domain_rows = rows(self.bound.stage_domain(stage));
        let results: Vec<RowOutput> = {
            let evaluator = Evaluator::new(self.bound, self.precision, storage)
                .in_stage(stage)
                .at_step(t)
                .observed_by(self.observer);
            domain_rows
                .par_iter()
                .map(|row| self.stage_row(&evaluator, stage, &outputs, reductions, row))
                .collect::<Result<_, _>>()?
        };
        let values = (0..reductions.len())
            .map(|k| {
                let op = program.reductions[reductions[k]].op;
                fold(op, results.iter().map(|r| r.partials[k]))
            })
            .collect();
        for (row, result) in domain_rows.iter().zip(results) {
            for (field, column) in outputs.iter().zip(result.writes) {
                write_row(
                    &mut storage[field.index()],
                    row,
                    &self.bound.extents,
                    &column,
                )?;
            }
        }
        Ok(values)
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
        let body = &program.stages[stage];
        let mut locals: Vec<Option<Column>> = vec![None; body.locals.len()];
        let mut writes: Vec<Option<Column>> = vec![None; outputs.len()];
        for statement in &body.body {
            match statement {
                Statement::Let { local, value } => {
                    let column = evaluator.eval(row, &locals, *value)?;
                    locals[local.index()] = Some(column);
                }
                Statement::Assign { field, value, .. } => {
                    let column = evaluator.eval(row, &locals, *value)?;
                    let slot = outputs
                        .iter()
                        .position(|f| f == field)
                        .ok_or_else(|| internal("an output not in `outputs`"))?;
                    // The last assignment to a field wins; every one of them read pre-stage values.
                    writes[slot] = Some(column);
                }
            }
        }
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
        let writes = writes
            .into_iter()
            .map(|w| w.ok_or_else(|| internal("an output never assigned")))
            .collect::<Result<_, _>>()?;
        Ok(RowOutput { writes, partials })
    }

    /// An after-step reduction over its domain, in the fixed row order.
    fn reduce_after_step(
        &self,
        storage: &[Buffer],
        id: Id<Reduction>,
        t: u64,
    ) -> Result<f64, BackendError> {
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
        Ok(fold(reduction.op, partials))
    }

    /// Whether the `until` condition holds; false while a reduction it names has no value yet.
    fn stop_condition_holds(&self, latest: &[Option<f64>]) -> Result<bool, BackendError> {
        condition_holds(self.bound, self.precision, latest)
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
fn condition_holds(
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
