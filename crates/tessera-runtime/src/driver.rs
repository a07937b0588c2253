//! The schedule driver: the one time loop of every backend. It walks a run's [`Schedule`],
//! asks the backend's [`ActiveRun`] to run each pass, records reduction values (step, name,
//! value) and keeps the latest of each, records receivers (a field's values at fixed points,
//! sampled by the backend without reading the whole field), tests `until`, reports progress, hands the fields to
//! observation points, and times the loop.

use std::time::{Duration, Instant};

use tessera_analysis::check::visit;
use tessera_analysis::{BoundProgram, coords_text, linear_indices, table_shortfall};
use tessera_ir::{ExprKind, Id, Program, Receiver, ReceiverPoints};
use tessera_plan::StepsPerPass;

use crate::backend::{ActiveRun, BackendError, Executable, RankTimes};
use crate::buffer::{Buffer, FieldSet};
use crate::schedule::{Pass, Schedule, ScheduleItem};

/// A value of a reduction at the end of a step.
#[derive(Clone, Debug, PartialEq)]
pub struct ReductionRecord {
    /// The step `t` (0-based) after which it was computed.
    pub step: u64,
    /// The reduction's name.
    pub name: String,
    /// Its value.
    pub value: f64,
}

/// A receiver's values after a step: its field at each of its points, in the field's type.
#[derive(Clone, Debug, PartialEq)]
pub struct ReceiverRecord {
    /// The step `t` (0-based) after which it was recorded.
    pub step: u64,
    /// The receiver.
    pub receiver: Id<Receiver>,
    /// The receiver's name.
    pub name: String,
    /// One value per point, in the order of the receiver's points.
    pub values: Buffer,
}

/// One receiver's recordings as one array.
#[derive(Clone, Debug, PartialEq)]
pub struct ReceiverSeries {
    /// The receiver's name.
    pub name: String,
    /// The step `t` after which each recording was made.
    pub steps: Vec<u64>,
    /// The number of points.
    pub points: usize,
    /// The values, row-major of shape `(steps.len(), points)`, in the field's type.
    pub values: Buffer,
}

/// Each receiver's recordings among `records`, as one series per receiver of `program`, in
/// declaration order (a series with no recording for a receiver that made none).
pub fn receiver_series(program: &Program, records: &[ReceiverRecord]) -> Vec<ReceiverSeries> {
    (program.receivers.iter())
        .map(|(id, receiver)| {
            let mine: Vec<&ReceiverRecord> = records.iter().filter(|r| r.receiver == id).collect();
            let points = match (mine.first(), &receiver.points) {
                (Some(first), _) => first.values.len(),
                (None, ReceiverPoints::Fixed(points)) => points.len(),
                (None, ReceiverPoints::Input) => 0,
            };
            let parts: Vec<&Buffer> = mine.iter().map(|r| &r.values).collect();
            ReceiverSeries {
                name: receiver.name.clone(),
                steps: mine.iter().map(|r| r.step).collect(),
                points,
                values: crate::buffer::concat(program.fields[receiver.field].ty, &parts),
            }
        })
        .collect()
}

/// What a run did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunReport {
    /// Steps executed (fewer than asked when the stop condition held or an observer stopped
    /// the run).
    pub steps: u64,
    /// Reduction values in the order they were computed.
    pub reductions: Vec<ReductionRecord>,
    /// Receiver recordings in the order they were made (by step, then declaration).
    pub receivers: Vec<ReceiverRecord>,
    /// Whether the `until` condition ended the run.
    pub stopped_early: bool,
    /// Time spent in the time loop (compilation and host/device transfers excluded).
    pub compute_time: Duration,
    /// Time spent moving fields between host and device, if any.
    pub transfer_time: Duration,
    /// Each rank's times in a distributed run (empty otherwise).
    pub ranks: Vec<RankTimes>,
    /// The backend and plan that ran, for summaries (`cpu overlapped tile=64x64 T=4 ...`).
    pub plan: String,
}

/// Whether a run goes on after an observation point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Go on.
    Continue,
    /// End the run here (its report counts the steps done so far).
    Stop,
}

/// Follows a run: progress, and observation points every K steps.
pub trait Observer {
    /// `done` of `total` steps are finished; [`Flow::Stop`] ends the run here (an interrupt
    /// the caller reports).
    fn advance(&mut self, _done: u64, _total: u64) -> Flow {
        Flow::Continue
    }

    /// The most steps one pass may hold, so that [`Observer::advance`] comes often enough
    /// (`None`: as many as the plan allows; a backend that loops over any number of steps
    /// itself would otherwise run them all in one pass).
    fn pass_limit(&self) -> Option<u32> {
        None
    }

    /// Steps between observation points (`None`: no observation points).
    fn every(&self) -> Option<u64> {
        None
    }

    /// Sees the run at an observation point.
    fn observe(&mut self, _at: &Observation<'_>) -> Flow {
        Flow::Continue
    }
}

/// What an observation point shows: the fields and the reductions' state after `done` steps.
pub struct Observation<'a> {
    /// Steps done in this run (from its first step).
    pub done: u64,
    /// Every field.
    pub fields: &'a FieldSet,
    /// The latest value of each reduction.
    pub state: &'a RunState,
    /// The reduction records of this run so far.
    pub records: &'a [ReductionRecord],
    /// The receiver recordings of this run so far.
    pub recordings: &'a [ReceiverRecord],
}

impl Observer for () {}

/// What survives from one run call to the next: the latest value of each reduction (the stop
/// condition reads them).
#[derive(Clone, Debug, PartialEq)]
pub struct RunState {
    latest: Vec<Option<f64>>,
}

impl RunState {
    /// A state with no reduction values, for `program`.
    pub fn new(program: &Program) -> RunState {
        RunState {
            latest: vec![None; program.reductions.len()],
        }
    }

    /// The latest value of each reduction, by reduction index.
    pub fn latest(&self) -> &[Option<f64>] {
        &self.latest
    }

    /// The state a run of `program` left with these latest values (one per reduction), to
    /// continue it.
    pub fn resumed(program: &Program, latest: Vec<Option<f64>>) -> Result<RunState, String> {
        if latest.len() != program.reductions.len() {
            return Err(format!(
                "{} reduction values for a program of {} reductions",
                latest.len(),
                program.reductions.len()
            ));
        }
        Ok(RunState { latest })
    }
}

/// Refuses tables of the wrong type, count, or too short for steps `first_step ..
/// first_step + steps`, before the run starts.
pub fn check_tables(
    bound: &BoundProgram,
    fields: &FieldSet,
    first_step: u64,
    steps: u64,
) -> Result<(), BackendError> {
    let program = bound.program();
    if fields.tables.len() != program.tables.len() {
        return Err(BackendError::InvalidOptions(format!(
            "the program has {} input table(s) but {} were given",
            program.tables.len(),
            fields.tables.len()
        )));
    }
    for (table, buffer) in program.tables.values().zip(&fields.tables) {
        if buffer.ty() != table.ty {
            return Err(BackendError::InvalidOptions(format!(
                "the table `{}` holds {} values but was given {}",
                table.name,
                table.ty,
                buffer.ty()
            )));
        }
    }
    let lengths: Vec<usize> = fields.tables.iter().map(Buffer::len).collect();
    match table_shortfall(program, &lengths, first_step, steps) {
        Some(why) => Err(BackendError::InvalidOptions(why)),
        None => Ok(()),
    }
}

/// The linear index of each point of each receiver (by receiver index): the program's points,
/// or those the run gives for receivers `at input`; refuses missing points and points
/// outside the grid, naming the receiver, the point and the grid.
pub fn receiver_indices(
    bound: &BoundProgram,
    fields: &FieldSet,
) -> Result<Vec<Vec<usize>>, BackendError> {
    let program = bound.program();
    let given = |r: Id<Receiver>| {
        fields
            .receiver_points
            .get(r.index())
            .and_then(Option::as_ref)
    };
    (program.receivers.iter())
        .map(|(id, receiver)| {
            let points = match &receiver.points {
                ReceiverPoints::Fixed(points) => points,
                ReceiverPoints::Input => given(id).ok_or_else(|| {
                    BackendError::InvalidOptions(format!(
                        "the receiver `{0}` records at points given with the run, and none were given: pass `--input {0}=points.npy` (integers of shape (n, {1}))",
                        receiver.name,
                        program.dims()
                    ))
                })?,
            };
            linear_indices(points, &bound.extents).map_err(|outside| {
                BackendError::InvalidOptions(format!(
                    "the receiver `{}` has point {} at {} outside the grid {} (one coordinate per axis, slowest first, each in 0..extent)",
                    receiver.name,
                    outside.index,
                    coords_text(&outside.point),
                    coords_text(&bound.extents)
                ))
            })
        })
        .collect()
}

/// Runs steps `first_step .. first_step + steps` of `executable` on `fields`, in place:
/// makes the schedule from the program and the executable's plan and executes it.
pub fn drive<E: Executable + ?Sized>(
    executable: &mut E,
    fields: &mut FieldSet,
    first_step: u64,
    steps: u64,
    state: &mut RunState,
    observer: &mut dyn Observer,
) -> Result<RunReport, BackendError> {
    let bound = executable.program().clone();
    let per_pass = match (executable.plan().steps_per_pass(), observer.pass_limit()) {
        (per_pass, None) => per_pass,
        (StepsPerPass::Any, Some(limit)) => StepsPerPass::AtMost(limit.max(1)),
        (StepsPerPass::AtMost(t), Some(limit)) => StepsPerPass::AtMost(t.min(limit.max(1))),
    };
    let schedule = Schedule::new(
        bound.program(),
        per_pass,
        first_step,
        steps,
        observer.every(),
    );
    let mut report = RunReport {
        plan: executable.describe(),
        ..RunReport::default()
    };
    if state.latest.len() != bound.program().reductions.len() {
        return Err(BackendError::InvalidOptions(
            "the run state belongs to another program".into(),
        ));
    }
    check_tables(&bound, fields, first_step, steps)?;
    let points = receiver_indices(&bound, fields)?;
    let mut run = executable.start(fields)?;
    let started = Instant::now();
    for item in schedule {
        let go_on = match item {
            ScheduleItem::Pass(pass) => {
                run_pass(run.as_mut(), &bound, &pass, state, &mut report)?;
                observer.advance(report.steps, steps) == Flow::Continue
            }
            ScheduleItem::StopTest => {
                let stop =
                    condition_complete(&bound, &state.latest) && run.until_holds(&state.latest)?;
                report.stopped_early = stop;
                !stop
            }
            ScheduleItem::Record { step, receivers } => {
                for receiver in receivers {
                    let values = run.sample(receiver, &points[receiver.index()])?;
                    report.receivers.push(ReceiverRecord {
                        step,
                        receiver,
                        name: bound.program().receivers[receiver].name.clone(),
                        values,
                    });
                }
                true
            }
            ScheduleItem::Observe { done } => {
                let at = Observation {
                    done,
                    fields: run.fields()?,
                    state,
                    records: &report.reductions,
                    recordings: &report.receivers,
                };
                observer.observe(&at) == Flow::Continue
            }
        };
        if !go_on {
            break;
        }
    }
    let elapsed = started.elapsed();
    let times = run.finish()?;
    report.compute_time = times.compute.unwrap_or(elapsed);
    report.transfer_time = times.transfer;
    report.ranks = times.ranks;
    Ok(report)
}

/// Runs one pass and records its reductions.
fn run_pass(
    run: &mut dyn ActiveRun,
    bound: &BoundProgram,
    pass: &Pass,
    state: &mut RunState,
    report: &mut RunReport,
) -> Result<(), BackendError> {
    let partials = run.run_pass(pass)?;
    if partials.len() != pass.reductions.len() {
        return Err(BackendError::Runtime(format!(
            "internal error: a pass computed {} reductions, {} were due",
            partials.len(),
            pass.reductions.len()
        )));
    }
    let program = bound.program();
    for (&reduction, rows) in pass.reductions.iter().zip(partials) {
        let value = rows.value();
        state.latest[reduction.index()] = Some(value);
        report.reductions.push(ReductionRecord {
            step: pass.last_step(),
            name: program.reductions[reduction].name.clone(),
            value,
        });
    }
    report.steps += pass.steps;
    Ok(())
}

/// Whether every reduction the `until` condition names has a value (false without a
/// condition).
fn condition_complete(bound: &BoundProgram, latest: &[Option<f64>]) -> bool {
    let program = bound.program();
    let Some(until) = &program.until else {
        return false;
    };
    let mut complete = true;
    visit(program, until.condition, &mut |e| {
        if let ExprKind::ReductionValue(r) = e.kind {
            complete &= latest.get(r.index()).copied().flatten().is_some();
        }
    });
    complete
}
