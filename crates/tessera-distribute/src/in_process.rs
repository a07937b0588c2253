//! Every rank of a distribution in one process, as one [`Executable`]: the schedule driver
//! runs it like any backend's, so reductions, `until`, observers and checkpoints work as in a
//! single-process run. It is the model of a distributed run (and the tests' way to check one
//! without MPI): each rank's backend runs its own program on its own fields, the halos move
//! between the ranks' fields after every pass of at most `T` steps, and the reductions combine
//! every rank's rows in THE row order.

use std::time::Instant;
use tessera_analysis::BoundProgram;
use tessera_ir::{Id, Receiver};
use tessera_plan::{Plan, PlanRequest};
use tessera_runtime::reduce::RowPartials;

use tessera_runtime::{
    ActiveRun, Backend, BackendError, Buffer, Executable, FieldSet, Pass, RankTimes, RunTimes,
};

use crate::exchange::gather;
use crate::overlap::{PreparedStrips, StripRuns};
use crate::{DistributeError, Distribution, field_bytes};

/// A distribution's ranks prepared on one backend, run in this process.
pub struct InProcessExecutable {
    distribution: Distribution,
    global: BoundProgram,
    executables: Vec<Box<dyn Executable>>,
    locals: Vec<FieldSet>,
    /// Each rank's boundary strips, by rank (none without overlap).
    strips: Vec<PreparedStrips>,
}

impl InProcessExecutable {
    /// Plans and prepares every rank's program on `backend` for `request`.
    pub fn prepare(
        distribution: Distribution,
        global: &BoundProgram,
        backend: &dyn Backend,
        request: &PlanRequest,
    ) -> Result<InProcessExecutable, DistributeError> {
        let executables = (distribution.ranks.iter())
            .map(|r| {
                (backend.plan_and_prepare(&r.bound, request))
                    .map_err(|e| DistributeError::Backend(r.rank, e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let locals = (distribution.ranks.iter())
            .map(|r| FieldSet::zeros(&r.bound))
            .collect();
        let strips = (distribution.ranks.iter())
            .map(|r| PreparedStrips::prepare(distribution.rank_strips(r.rank), backend, request))
            .collect::<Result<_, _>>()?;
        Ok(InProcessExecutable {
            distribution,
            global: global.clone(),
            executables,
            locals,
            strips,
        })
    }
}

impl Executable for InProcessExecutable {
    fn program(&self) -> &BoundProgram {
        &self.global
    }

    fn plan(&self) -> &Plan {
        self.executables[0].plan()
    }

    fn describe(&self) -> String {
        format!(
            "{} on {} ranks ({}, {})",
            self.executables[0].describe(),
            self.distribution.ranks.len(),
            self.distribution.decomposition.describe(),
            self.distribution.exchange_text()
        )
    }

    fn start<'a>(
        &'a mut self,
        fields: &'a mut FieldSet,
    ) -> Result<Box<dyn ActiveRun + 'a>, BackendError> {
        let InProcessExecutable {
            distribution,
            global,
            executables,
            locals,
            strips,
        } = self;
        let mut runs = Vec::new();
        for ((rank, executable), local) in executables.iter_mut().enumerate().zip(locals) {
            *local = distribution.scatter(rank, fields);
            runs.push(executable.start(local)?);
        }
        let strip_runs = (strips.iter_mut().enumerate())
            .map(|(rank, prepared)| prepared.start(distribution.rank_strips(rank), fields))
            .collect::<Result<_, _>>()?;
        Ok(Box::new(InProcessRun {
            global,
            distribution,
            runs,
            strip_runs,
            fields,
            halos_stale: false,
            scatter_pending: false,
            times: vec![RankTimes::default(); distribution.ranks.len()],
        }))
    }
}

/// A run of every rank in this process.
struct InProcessRun<'a> {
    global: &'a BoundProgram,
    distribution: &'a Distribution,
    runs: Vec<Box<dyn ActiveRun + 'a>>,
    /// Each rank's boundary strips running, by rank (none without overlap).
    strip_runs: Vec<StripRuns<'a>>,
    fields: &'a mut FieldSet,
    /// A pass ran since the last exchange.
    halos_stale: bool,
    /// The global fields were lent writable: cut them into the ranks again.
    scatter_pending: bool,
    /// Each rank's times so far.
    times: Vec<RankTimes>,
}

impl InProcessRun<'_> {
    /// Moves every halo from the rank owning its points.
    fn exchange(&mut self) -> Result<(), BackendError> {
        for transfer in &self.distribution.transfers {
            let clock = Instant::now();
            let message = self.runs[transfer.from].read_box(&transfer.source)?;
            self.times[transfer.from].exchange += clock.elapsed();
            let clock = Instant::now();
            self.runs[transfer.to].write_box(&transfer.target, &message)?;
            self.times[transfer.to].exchange += clock.elapsed();
        }
        self.halos_stale = false;
        Ok(())
    }

    /// Runs `part` on every rank; with overlap, first each rank's boundary strips, whose
    /// messages are written into the halos after every rank's pass (as if they had been
    /// received while the ranks computed).
    fn run_part(&mut self, part: &Pass) -> Result<Vec<Vec<RowPartials>>, BackendError> {
        let mut messages = Vec::new();
        for ((run, strips), times) in
            (self.runs.iter_mut().zip(&mut self.strip_runs)).zip(&mut self.times)
        {
            let clock = Instant::now();
            messages.extend(strips.messages(run.as_mut(), part)?);
            times.compute += clock.elapsed();
        }
        let per_rank = (self.runs.iter_mut().zip(&mut self.times))
            .map(|(run, times)| {
                let clock = Instant::now();
                let partials = run.run_pass(part);
                times.compute += clock.elapsed();
                partials
            })
            .collect::<Result<Vec<_>, _>>()?;
        for (number, message) in messages {
            let transfer = &self.distribution.transfers[number];
            let clock = Instant::now();
            self.runs[transfer.to].write_box(&transfer.target, &message)?;
            self.times[transfer.to].exchange += clock.elapsed();
        }
        self.halos_stale = !self.distribution.overlapped();
        Ok(per_rank)
    }

    /// Cuts the global fields into the ranks' again after they were lent writable.
    fn scatter_if_changed(&mut self) -> Result<(), BackendError> {
        if !std::mem::take(&mut self.scatter_pending) {
            return Ok(());
        }
        for (rank, run) in self.runs.iter_mut().enumerate() {
            let local = self.distribution.scatter(rank, self.fields);
            let fields = run.fields_mut()?;
            fields.buffers = local.buffers;
        }
        self.halos_stale = false;
        Ok(())
    }

    /// The owned points of every rank written into the global fields.
    fn gather(&mut self) -> Result<(), BackendError> {
        for (program, run) in self.distribution.ranks.iter().zip(&mut self.runs) {
            gather(program, run.fields()?, self.fields);
        }
        Ok(())
    }
}

/// An internal error of the distribution layer.
fn internal(what: String) -> BackendError {
    BackendError::Runtime(format!("internal error: distributed run: {what}"))
}

impl ActiveRun for InProcessRun<'_> {
    fn run_pass(&mut self, pass: &Pass) -> Result<Vec<RowPartials>, BackendError> {
        self.scatter_if_changed()?;
        let mut per_rank = Vec::new();
        for part in self.distribution.parts(pass) {
            if self.halos_stale {
                self.exchange()?;
            }
            per_rank = self.run_part(&part)?;
        }
        let owned: Vec<Vec<Vec<f64>>> = (self.distribution.ranks.iter().zip(&per_rank))
            .map(|(program, partials)| program.owned_values(pass, partials))
            .collect::<Result<_, _>>()
            .map_err(internal)?;
        self.distribution.combine(pass, &owned).map_err(internal)
    }

    fn until_holds(&mut self, latest: &[Option<f64>]) -> Result<bool, BackendError> {
        self.runs[0].until_holds(latest)
    }

    fn sample(&mut self, receiver: Id<Receiver>, points: &[usize]) -> Result<Buffer, BackendError> {
        let field = self.global.program().receivers[receiver].field;
        let mut values = Vec::new();
        for &point in points {
            let (rank, at) = self.distribution.locate(point);
            let bytes = self.runs[rank].read_box(&at)?;
            values.extend_from_slice(field_bytes(self.global, field, &bytes));
        }
        let ty = self.global.program().fields[field].ty;
        Ok(Buffer::from_bytes(ty, &values))
    }

    fn fields(&mut self) -> Result<&FieldSet, BackendError> {
        self.gather()?;
        Ok(self.fields)
    }

    fn fields_mut(&mut self) -> Result<&mut FieldSet, BackendError> {
        self.gather()?;
        self.scatter_pending = true;
        Ok(self.fields)
    }

    fn finish(mut self: Box<Self>) -> Result<RunTimes, BackendError> {
        self.gather()?;
        let mut times = RunTimes {
            ranks: self.times.clone(),
            ..RunTimes::default()
        };
        for strips in self.strip_runs {
            strips.finish()?;
        }
        for run in self.runs {
            let rank = run.finish()?;
            times.transfer += rank.transfer;
            times.compute = match (times.compute, rank.compute) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
        }
        Ok(times)
    }
}
