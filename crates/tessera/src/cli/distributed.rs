//! `--ranks` and `mpirun`: a run on a grid cut into ranks (tessera-distribute). Under an MPI
//! launcher each process runs one rank and rank 0 writes the outputs; otherwise every rank runs
//! in this process (the same answer, for trying a decomposition without MPI).

use tessera::{DeviceSelection, Error, Session};
use tessera_distribute::local::halo_depths;
use tessera_distribute::{Decomposition, DistributeError, Distribution, InProcessExecutable};
use tessera_plan::StepsPerPass;
use tessera_runtime::Executable;

use super::args::{ExecArgs, Overlap, RankArgs, RanksSpec};
use super::planning::Planned;
use super::usage;

/// How long a failed rank but 0 waits for rank 0 to report the same error and end the job.
#[cfg(feature = "mpi")]
const OTHER_RANK_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// How this process takes part in a run.
pub enum Role {
    /// The whole grid, or every rank of it, in this process.
    Alone,
    /// One rank of an MPI job.
    #[cfg(feature = "mpi")]
    Mpi(tessera_distribute::cluster::MpiProcess),
}

impl Role {
    /// One rank of an MPI job when an MPI launcher started this process (and this build has
    /// MPI); alone otherwise.
    pub fn of_process() -> Result<Role, Error> {
        #[cfg(not(feature = "mpi"))]
        if let Some(size) = launcher_job_size().filter(|&n| n > 1) {
            return Err(usage(format!(
                "an MPI launcher started {size} processes, but this tessera was built without \
                 MPI: each would run the whole grid; build it with `--features mpi`"
            )));
        }
        #[cfg(feature = "mpi")]
        if tessera_distribute::cluster::MpiProcess::launched() {
            let process = tessera_distribute::cluster::MpiProcess::start()
                .ok_or_else(|| usage("MPI did not start in this process"))?;
            if process.size() > 1 {
                return Ok(Role::Mpi(process));
            }
        }
        Ok(Role::Alone)
    }

    /// Whether this process holds the global fields, writes the outputs and prints the summary.
    pub fn is_root(&self) -> bool {
        match self {
            Role::Alone => true,
            #[cfg(feature = "mpi")]
            Role::Mpi(process) => process.rank() == 0,
        }
    }

    /// A failed run's error, to report; under MPI reported here, and the whole job ended
    /// (the other ranks would wait for this one forever). Most errors (a program, a flag, a
    /// file) are every rank's alike: a rank but 0 waits [`OTHER_RANK_GRACE`] first, so that
    /// rank 0 reports it once and ends the job, and reports it itself only when rank 0 did not.
    pub fn on_error(&self, error: Error) -> Error {
        #[cfg(feature = "mpi")]
        if let Role::Mpi(process) = self {
            use std::io::IsTerminal;
            if process.rank() != 0 {
                super::signals::quiet();
                std::thread::sleep(OTHER_RANK_GRACE);
            }
            let text = error.render(std::io::stderr().is_terminal());
            eprint!("rank {}: {text}", process.rank());
            process.abort(error.exit_code());
        }
        error
    }

    /// Rank 0's `found` in every process of the job (`found` alone): a decision on the fields,
    /// which rank 0 holds, that every rank must take alike.
    pub fn root_verdict(&self, found: Option<String>) -> Option<String> {
        match self {
            Role::Alone => found,
            #[cfg(feature = "mpi")]
            Role::Mpi(process) => process.broadcast_from_root(found),
        }
    }

    /// The ranks the job holds (`None` alone).
    fn job_size(&self) -> Option<usize> {
        match self {
            Role::Alone => None,
            #[cfg(feature = "mpi")]
            Role::Mpi(process) => Some(process.size()),
        }
    }
}

/// Refuses flags a run on ranks cannot take, before anything is read: `--plan` holds a plan
/// for the whole grid; and the flags of a run on ranks without ranks.
pub fn check_flags(exec: &ExecArgs, ranks: &RankArgs, role: &Role) -> Result<(), Error> {
    let distributed = ranks.ranks.is_some() || role.job_size().is_some();
    let rank_flag = match (ranks.exchange_every, ranks.overlap) {
        (Some(_), _) => Some("--exchange-every"),
        (None, Overlap::On | Overlap::Off) => Some("--overlap"),
        (None, Overlap::Auto) => None,
    };
    if let Some(flag) = rank_flag.filter(|_| !distributed) {
        return Err(usage(format!(
            "`{flag}` is for a run on ranks: add `--ranks K` or start it with `mpirun`"
        )));
    }
    if distributed && exec.plan.is_some() {
        return Err(usage(
            "`--plan` holds a plan for the whole grid; a run on ranks plans each rank's box from \
             the flags: drop `--plan`",
        ));
    }
    Ok(())
}

/// The number of processes an MPI launcher started, from its environment (`None`: not started
/// by one).
#[cfg(not(feature = "mpi"))]
fn launcher_job_size() -> Option<usize> {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.parse().ok())
}

/// The executable of a distributed run, or `None` for a run of one process on the whole grid.
pub fn prepare(
    session: &Session,
    planned: &Planned,
    exec: &ExecArgs,
    ranks: &RankArgs,
    role: &Role,
) -> Result<Option<Box<dyn Executable>>, Error> {
    let spec = match (&ranks.ranks, role.job_size()) {
        (Some(spec), _) => spec.clone(),
        (None, Some(size)) => RanksSpec::Count(size),
        (None, None) => return Ok(None),
    };
    let bound = session.bound();
    let decomposition = decomposition(bound, &spec).map_err(refused)?;
    if let Some(size) = role.job_size()
        && decomposition.rank_count() != size
    {
        return Err(usage(format!(
            "--ranks {} makes {} ranks, but the MPI job has {size} processes",
            decomposition.describe(),
            decomposition.rank_count()
        )));
    }
    let distribution = distribution(session, planned, decomposition, ranks.exchange_every)?;
    let distribution = overlapped(session, distribution, ranks.overlap, role)?;
    let request = exec.request(rank_device(planned, role));
    let backend = planned.backend.as_ref();
    match role {
        Role::Alone => {
            let executable = InProcessExecutable::prepare(distribution, bound, backend, &request);
            Ok(Some(Box::new(executable.map_err(refused)?)))
        }
        #[cfg(feature = "mpi")]
        Role::Mpi(process) => {
            let executable = tessera_distribute::cluster::MpiExecutable::prepare(
                distribution,
                bound,
                process.rank(),
                backend,
                &request,
            );
            Ok(Some(Box::new(executable.map_err(refused)?)))
        }
    }
}

/// The device of this process's rank: the one `--device` names, else under MPI one device per
/// rank of a node (the node-local rank modulo the devices there).
fn rank_device(planned: &Planned, role: &Role) -> DeviceSelection {
    let local_rank = [
        "OMPI_COMM_WORLD_LOCAL_RANK",
        "MPI_LOCALRANKID",
        "SLURM_LOCALID",
    ]
    .iter()
    .find_map(|v| std::env::var(v).ok()?.parse::<usize>().ok());
    match (&planned.device, role.job_size(), local_rank) {
        (DeviceSelection::Default, Some(_), Some(local)) => {
            match tessera::device_count(planned.name) {
                0 => DeviceSelection::Default,
                devices => DeviceSelection::Named((local % devices).to_string()),
            }
        }
        (device, _, _) => device.clone(),
    }
}

/// The decomposition `spec` asks for; a count of ranks goes to axes no scan runs along.
fn decomposition(
    bound: &tessera_analysis::BoundProgram,
    spec: &RanksSpec,
) -> Result<Decomposition, DistributeError> {
    let extents = &bound.extents;
    match spec {
        RanksSpec::Count(count) => {
            let stages = bound.program().stages.values();
            let mut scanned: Vec<usize> = stages.filter_map(|s| s.scan_axis()).collect();
            scanned.sort_unstable();
            scanned.dedup();
            Decomposition::automatic(extents, *count, &scanned)
        }
        RanksSpec::PerAxis(ranks) => Decomposition::new(extents, ranks),
    }
}

/// The layout with `--exchange-every` steps between exchanges, else with the plan's time tile
/// or the deepest halo the rank boxes hold.
fn distribution(
    session: &Session,
    planned: &Planned,
    decomposition: Decomposition,
    exchange_every: Option<usize>,
) -> Result<Distribution, Error> {
    let bound = session.bound();
    let steps = match exchange_every {
        Some(t) => t as u64,
        None => {
            let deepest = match planned.plan.steps_per_pass() {
                StepsPerPass::AtMost(t) => u64::from(t),
                StepsPerPass::Any => 1,
            };
            (1..=deepest.max(1))
                .rev()
                .find(|&t| halo_fits(session, &decomposition, t))
                .unwrap_or(1)
        }
    };
    Distribution::new(bound, decomposition, steps).map_err(refused)
}

/// The most boundary strips may add to a rank's points for `--overlap auto` to overlap.
const AUTO_OVERLAP_COST: f64 = 0.1;

/// The layout with boundary strips where `--overlap` asks for them.
fn overlapped(
    session: &Session,
    distribution: Distribution,
    overlap: Overlap,
    role: &Role,
) -> Result<Distribution, Error> {
    let bound = session.bound();
    match (overlap, role.job_size()) {
        (Overlap::Off, _) | (Overlap::Auto, None) => Ok(distribution),
        (Overlap::On, _) => distribution.with_overlap(bound).map_err(refused),
        (Overlap::Auto, Some(_)) => {
            let with_strips = distribution.clone().with_overlap(bound).map_err(refused)?;
            Ok(match with_strips.overlap_cost() <= AUTO_OVERLAP_COST {
                true => with_strips,
                false => distribution,
            })
        }
    }
}

/// Whether every rank box is at least as thick as the halo `t` steps need.
fn halo_fits(session: &Session, decomposition: &Decomposition, t: u64) -> bool {
    let owned = decomposition.owned(0);
    let depths = halo_depths(session.bound(), &owned, t as usize);
    (depths
        .iter()
        .zip(&decomposition.ranks)
        .zip(&decomposition.extents))
    .all(|((&(below, above), &k), &n)| k == 1 || below.max(above) <= (n / k) as i64)
}

/// A layout the program or grid cannot have, as the user's error.
fn refused(error: DistributeError) -> Error {
    match error {
        DistributeError::Backend(_, e) => Error::Backend(e),
        other => usage(other.to_string()),
    }
}
