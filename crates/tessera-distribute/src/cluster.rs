//! One rank per process under `mpirun`: the same [`Distribution`] in every process, this
//! process running its own rank's program on its backend, halos moved by MPI messages after
//! every pass of at most `T` steps, reduction rows all-gathered so that every rank combines
//! the same rows in THE row order (and so decides `until` alike, with no broadcast).
//!
//! Rank 0 holds the global fields (the inputs or initial values, the fields at observation
//! points and at the end, which it writes): it sends each rank its box at the start, and every
//! rank sends it the points it owns when the fields are read. The other processes hold only
//! their boxes: the global fields they pass in need the tables and receivers' points alone
//! ([`FieldSet::buffers`] may be empty), and are not written.

use std::time::{Duration, Instant};

use mpi::Count;
use mpi::datatype::PartitionMut;
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use tessera_analysis::BoundProgram;
use tessera_analysis::region::Rect;
use tessera_ir::{Id, Receiver};
use tessera_plan::{Plan, PlanRequest};
use tessera_runtime::boxes::unpack_box;
use tessera_runtime::reduce::RowPartials;
use tessera_runtime::{
    ActiveRun, Backend, BackendError, Buffer, Executable, FieldSet, Pass, RankTimes, RunTimes,
};

use crate::overlap::{PreparedStrips, StripRuns};
use crate::{DistributeError, Distribution, field_bytes};

/// MPI in this process, from start to the end of the process's run: its rank and the job's
/// size.
pub struct MpiProcess {
    _universe: Universe,
    rank: usize,
    size: usize,
}

impl MpiProcess {
    /// Whether an MPI launcher (`mpirun`, `mpiexec`, `srun`) started this process.
    pub fn launched() -> bool {
        ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"]
            .iter()
            .any(|v| std::env::var_os(v).is_some())
    }

    /// Starts MPI (once per process); `None` when it cannot start.
    pub fn start() -> Option<MpiProcess> {
        let universe = mpi::initialize()?;
        let world = universe.world();
        let (rank, size) = (world.rank() as usize, world.size() as usize);
        Some(MpiProcess {
            _universe: universe,
            rank,
            size,
        })
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of processes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Rank 0's `text` in every process (the others' `text` is ignored).
    pub fn broadcast_from_root(&self, text: Option<String>) -> Option<String> {
        let world = SimpleCommunicator::world();
        let root = world.process_at_rank(0);
        let mine = text.filter(|_| self.rank == 0).map(String::into_bytes);
        // The length plus one, 0 for none.
        let mut len = mine.as_ref().map_or(0u64, |b| b.len() as u64 + 1);
        root.broadcast_into(&mut len);
        if len == 0 {
            return None;
        }
        let mut bytes = mine.unwrap_or_else(|| vec![0; len as usize - 1]);
        root.broadcast_into(&mut bytes[..]);
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Ends every process of the job with `code` (a rank that fails must not leave the others
    /// waiting for it).
    pub fn abort(&self, code: i32) -> ! {
        SimpleCommunicator::world().abort(code)
    }
}

/// The tag of the messages that carry a rank's box from rank 0 at the start.
const SCATTER_TAG: i32 = 32_001;
/// The tag of the messages that carry a rank's owned points to rank 0.
const GATHER_TAG: i32 = 32_002;

/// The most bytes one message of a box carries (a box sent in several, in order).
const CHUNK_BYTES: usize = 1 << 30;

/// Sends `bytes` to rank `to` in messages of at most [`CHUNK_BYTES`].
fn send_bytes(to: usize, tag: i32, bytes: &[u8]) {
    let world = SimpleCommunicator::world();
    for chunk in bytes.chunks(CHUNK_BYTES) {
        world.process_at_rank(to as i32).send_with_tag(chunk, tag);
    }
}

/// Receives the bytes rank `from` sends with [`send_bytes`] into `into` (as many as it holds).
fn receive_bytes(from: usize, tag: i32, into: &mut [u8]) {
    let world = SimpleCommunicator::world();
    for chunk in into.chunks_mut(CHUNK_BYTES) {
        world
            .process_at_rank(from as i32)
            .receive_into_with_tag(chunk, tag);
    }
}

/// This process's rank of a distribution, prepared on one backend.
pub struct MpiExecutable {
    distribution: Distribution,
    global: BoundProgram,
    rank: usize,
    executable: Box<dyn Executable>,
    local: FieldSet,
    /// This rank's boundary strips (none without overlap).
    strips: PreparedStrips,
}

impl MpiExecutable {
    /// Plans and prepares rank `rank`'s program on `backend` for `request`.
    pub fn prepare(
        distribution: Distribution,
        global: &BoundProgram,
        rank: usize,
        backend: &dyn Backend,
        request: &PlanRequest,
    ) -> Result<MpiExecutable, DistributeError> {
        let program = &distribution.ranks[rank];
        let executable = (backend.plan_and_prepare(&program.bound, request))
            .map_err(|e| DistributeError::Backend(rank, e))?;
        let local = FieldSet::zeros(&program.bound);
        let strips = PreparedStrips::prepare(distribution.rank_strips(rank), backend, request)?;
        Ok(MpiExecutable {
            distribution,
            global: global.clone(),
            rank,
            executable,
            local,
            strips,
        })
    }
}

impl Executable for MpiExecutable {
    fn program(&self) -> &BoundProgram {
        &self.global
    }

    fn plan(&self) -> &Plan {
        self.executable.plan()
    }

    fn describe(&self) -> String {
        format!(
            "{} on {} MPI ranks ({}, {})",
            self.executable.describe(),
            self.distribution.ranks.len(),
            self.distribution.decomposition.describe(),
            self.distribution.exchange_text()
        )
    }

    fn start<'a>(
        &'a mut self,
        fields: &'a mut FieldSet,
    ) -> Result<Box<dyn ActiveRun + 'a>, BackendError> {
        self.local = scatter_from_root(&self.distribution, self.rank, fields);
        let run = self.executable.start(&mut self.local)?;
        let strips = self.distribution.rank_strips(self.rank);
        let strip_runs = self.strips.start(strips, fields)?;
        Ok(Box::new(MpiRun {
            global: &self.global,
            distribution: &self.distribution,
            rank: self.rank,
            run,
            strip_runs,
            fields,
            halos_stale: false,
            scatter_pending: false,
            times: RankTimes::default(),
        }))
    }
}

/// This process's rank running, with the others in their processes.
struct MpiRun<'a> {
    global: &'a BoundProgram,
    distribution: &'a Distribution,
    rank: usize,
    run: Box<dyn ActiveRun + 'a>,
    /// This rank's boundary strips running (none without overlap).
    strip_runs: StripRuns<'a>,
    fields: &'a mut FieldSet,
    halos_stale: bool,
    scatter_pending: bool,
    /// This rank's times so far.
    times: RankTimes,
}

impl MpiRun<'_> {
    /// Sends the halos this rank owns to the ranks that need them and receives its own (every
    /// message tagged with its number in the exchange).
    fn exchange(&mut self) -> Result<(), BackendError> {
        let clock = Instant::now();
        let world = SimpleCommunicator::world();
        let transfers = &self.distribution.transfers;
        let sends: Vec<(usize, Vec<u8>)> = (transfers.iter().enumerate())
            .filter(|(_, t)| t.from == self.rank)
            .map(|(i, t)| Ok((i, self.run.read_box(&t.source)?)))
            .collect::<Result<_, BackendError>>()?;
        let mut received: Vec<(usize, Vec<u8>)> = Vec::new();
        let mut waited = Duration::ZERO;
        mpi::request::scope(|scope| {
            let requests: Vec<_> = (sends.iter())
                .map(|(i, message)| {
                    let to = world.process_at_rank(transfers[*i].to as i32);
                    to.immediate_send_with_tag(scope, &message[..], *i as i32)
                })
                .collect();
            for (i, t) in transfers.iter().enumerate() {
                if t.to == self.rank {
                    let from = world.process_at_rank(t.from as i32);
                    let blocked = Instant::now();
                    received.push((i, from.receive_vec_with_tag::<u8>(i as i32).0));
                    waited += blocked.elapsed();
                }
            }
            for request in requests {
                request.wait();
            }
        });
        for (i, message) in received {
            self.run.write_box(&transfers[i].target, &message)?;
        }
        self.times.wait += waited;
        self.times.exchange += clock.elapsed() - waited;
        self.halos_stale = false;
        Ok(())
    }

    /// Runs `part` with the exchange after it overlapped: the boundary strips first, their
    /// messages sent and this rank's halos received while its pass runs.
    fn run_overlapped(&mut self, part: &Pass) -> Result<Vec<RowPartials>, BackendError> {
        let clock = Instant::now();
        let sends = self.strip_runs.messages(self.run.as_mut(), part)?;
        self.times.compute += clock.elapsed();
        let world = SimpleCommunicator::world();
        let transfers = &self.distribution.transfers;
        let point_bytes = self.distribution.ranks[self.rank].point_bytes();
        let incoming: Vec<usize> = (0..transfers.len())
            .filter(|&i| transfers[i].to == self.rank)
            .collect();
        let mut received: Vec<Vec<u8>> = (incoming.iter())
            .map(|&i| vec![0u8; transfers[i].points() as usize * point_bytes])
            .collect();
        let run = &mut self.run;
        let times = &mut self.times;
        let partials = mpi::request::scope(|scope| {
            let clock = Instant::now();
            let sending: Vec<_> = (sends.iter())
                .map(|(i, message)| {
                    let to = world.process_at_rank(transfers[*i].to as i32);
                    to.immediate_send_with_tag(scope, &message[..], *i as i32)
                })
                .collect();
            let receiving: Vec<_> = (incoming.iter().zip(&mut received))
                .map(|(&i, buffer)| {
                    let from = world.process_at_rank(transfers[i].from as i32);
                    from.immediate_receive_into_with_tag(scope, &mut buffer[..], i as i32)
                })
                .collect();
            times.exchange += clock.elapsed();
            let clock = Instant::now();
            let partials = run.run_pass(part);
            times.compute += clock.elapsed();
            let clock = Instant::now();
            for request in receiving {
                request.wait();
            }
            for request in sending {
                request.wait();
            }
            times.wait += clock.elapsed();
            partials
        })?;
        let clock = Instant::now();
        for (i, message) in incoming.iter().zip(&received) {
            self.run.write_box(&transfers[*i].target, message)?;
        }
        self.times.exchange += clock.elapsed();
        Ok(partials)
    }

    /// Every rank's owned row values of the pass's reductions, by rank.
    fn all_rows(
        &self,
        pass: &Pass,
        partials: &[RowPartials],
    ) -> Result<Vec<Vec<Vec<f64>>>, BackendError> {
        let ranks = &self.distribution.ranks;
        let mine = ranks[self.rank]
            .owned_values(pass, partials)
            .map_err(internal)?;
        let lengths: Vec<Vec<usize>> = (ranks.iter())
            .map(|program| {
                (pass.reductions.iter())
                    .map(|r| program.reduction_rows[r.index()].iter().flatten().count())
                    .collect()
            })
            .collect();
        let counts: Vec<usize> = lengths.iter().map(|l| l.iter().sum()).collect();
        let flat = all_gather(&mine.concat(), &counts)?;
        let mut at = 0;
        Ok((lengths.iter())
            .map(|per_reduction| {
                (per_reduction.iter())
                    .map(|&n| {
                        at += n;
                        flat[at - n..at].to_vec()
                    })
                    .collect()
            })
            .collect())
    }

    /// Every rank's owned points written into rank 0's global fields.
    fn gather(&mut self) -> Result<(), BackendError> {
        let ranks = &self.distribution.ranks;
        let frame: Vec<i64> = ranks[self.rank].local.lo.iter().map(|l| -l).collect();
        let mine = self.run.read_box(&ranks[self.rank].owned.shifted(&frame))?;
        if self.rank != 0 {
            send_bytes(0, GATHER_TAG, &mine);
            return Ok(());
        }
        unpack_box(&mine, self.fields, &ranks[0].owned);
        for rank in &ranks[1..] {
            let mut points = vec![0u8; rank.owned.volume() as usize * rank.point_bytes()];
            receive_bytes(rank.rank, GATHER_TAG, &mut points);
            unpack_box(&points, self.fields, &rank.owned);
        }
        Ok(())
    }
}

/// Rank `rank`'s fields: rank 0 cuts every rank's box from the global `fields` and sends it,
/// the others receive theirs (with the tables of their own `fields`).
fn scatter_from_root(distribution: &Distribution, rank: usize, fields: &FieldSet) -> FieldSet {
    if rank == 0 {
        for other in 1..distribution.ranks.len() {
            for buffer in &distribution.scatter(other, fields).buffers {
                send_bytes(other, SCATTER_TAG, buffer.as_bytes());
            }
        }
        return distribution.scatter(0, fields);
    }
    let mut local = FieldSet::zeros(&distribution.ranks[rank].bound);
    local.tables = fields.tables.clone();
    for buffer in &mut local.buffers {
        receive_bytes(0, SCATTER_TAG, buffer.as_bytes_mut());
    }
    local
}

/// Every process's `mine` (of `counts[rank]` elements), concatenated by rank, in every process.
fn all_gather<T: Equivalence + Default + Clone>(
    mine: &[T],
    counts: &[usize],
) -> Result<Vec<T>, BackendError> {
    let too_big = || internal("a message of more than 2^31 elements".into());
    let counts: Vec<Count> = (counts.iter())
        .map(|&c| Count::try_from(c).map_err(|_| too_big()))
        .collect::<Result<_, _>>()?;
    let displs: Vec<Count> = (counts.iter())
        .scan(0, |at, &c| {
            let start = *at;
            *at += c;
            Some(start)
        })
        .collect();
    let total = counts.iter().map(|&c| c as usize).sum();
    let mut out = vec![T::default(); total];
    {
        let mut partition = PartitionMut::new(&mut out[..], counts, &displs[..]);
        SimpleCommunicator::world().all_gather_varcount_into(mine, &mut partition);
    }
    Ok(out)
}

/// An internal error of the MPI layer.
fn internal(what: String) -> BackendError {
    BackendError::Runtime(format!("internal error: MPI run: {what}"))
}

impl ActiveRun for MpiRun<'_> {
    fn run_pass(&mut self, pass: &Pass) -> Result<Vec<RowPartials>, BackendError> {
        if std::mem::take(&mut self.scatter_pending) {
            let local = scatter_from_root(self.distribution, self.rank, self.fields);
            self.run.fields_mut()?.buffers = local.buffers;
            self.halos_stale = false;
        }
        let mut partials = Vec::new();
        for part in self.distribution.parts(pass) {
            if self.distribution.overlapped() {
                partials = self.run_overlapped(&part)?;
                continue;
            }
            if self.halos_stale {
                self.exchange()?;
            }
            let clock = Instant::now();
            partials = self.run.run_pass(&part)?;
            self.times.compute += clock.elapsed();
            self.halos_stale = true;
        }
        if pass.reductions.is_empty() {
            return Ok(Vec::new());
        }
        let clock = Instant::now();
        let owned = self.all_rows(pass, &partials)?;
        self.times.wait += clock.elapsed();
        self.distribution.combine(pass, &owned).map_err(internal)
    }

    fn until_holds(&mut self, latest: &[Option<f64>]) -> Result<bool, BackendError> {
        self.run.until_holds(latest)
    }

    fn sample(&mut self, receiver: Id<Receiver>, points: &[usize]) -> Result<Buffer, BackendError> {
        let field = self.global.program().receivers[receiver].field;
        let ty = self.global.program().fields[field].ty;
        let width = ty.size_bytes();
        let located: Vec<(usize, Rect)> = points
            .iter()
            .map(|&p| self.distribution.locate(p))
            .collect();
        let mut mine = Vec::new();
        for (_, at) in located.iter().filter(|(rank, _)| *rank == self.rank) {
            let bytes = self.run.read_box(at)?;
            mine.extend_from_slice(field_bytes(self.global, field, &bytes));
        }
        let counts: Vec<usize> = (0..self.distribution.ranks.len())
            .map(|r| located.iter().filter(|(rank, _)| *rank == r).count() * width)
            .collect();
        let all = all_gather(&mine, &counts)?;
        // Each rank's values are in point order: take them back in the order of the points.
        let mut next: Vec<usize> = (counts.iter())
            .scan(0, |at, &c| {
                let start = *at;
                *at += c;
                Some(start)
            })
            .collect();
        let mut values = Vec::with_capacity(points.len() * width);
        for (rank, _) in &located {
            values.extend_from_slice(&all[next[*rank]..next[*rank] + width]);
            next[*rank] += width;
        }
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
        let mine =
            [self.times.compute, self.times.exchange, self.times.wait].map(|d| d.as_secs_f64());
        let all = all_gather(&mine, &vec![3; self.distribution.ranks.len()])?;
        let seconds = Duration::from_secs_f64;
        let ranks = (all.chunks_exact(3))
            .map(|t| RankTimes {
                compute: seconds(t[0]),
                exchange: seconds(t[1]),
                wait: seconds(t[2]),
            })
            .collect();
        self.strip_runs.finish()?;
        Ok(RunTimes {
            ranks,
            ..self.run.finish()?
        })
    }
}
