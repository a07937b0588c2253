//! Every program of the corpus under `mpirun` with 2, 3 and 4 processes: 1D cuts and (from 3D
//! grids, on 4 processes) 2D cuts, 1 and 3 steps between exchanges, the reference backend on
//! every rank (at 3 with the exchange overlapped) and the cpu backend at 3 steps overlapped,
//! bitwise against the single-process reference.
//!
//! Run as a test (`cargo test -p tessera-distribute --features mpi --test mpi_corpus`) it
//! launches itself under `mpirun`; launched by `mpirun` it is one rank of the job. Without
//! `mpirun` it fails under `CI=true` and says it skipped otherwise.

mod common;

use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use common::{Exchange, layout, layouts, subject_for};
use tessera_distribute::cluster::{MpiExecutable, MpiProcess};
use tessera_plan::PlanRequest;
use tessera_reference::ReferenceBackend;
use tessera_runtime::{Backend, Executable, FieldSet};
use tessera_testkit::{Subject, test_programs};

/// The longest a job may take before the test calls it hung.
const JOB_LIMIT: Duration = Duration::from_secs(600);

fn main() -> ExitCode {
    if MpiProcess::launched() {
        return run_rank();
    }
    let Some(mpirun) = which("mpirun") else {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            eprintln!("mpi_corpus: mpirun is not installed (CI=true: not skipping)");
            return ExitCode::FAILURE;
        }
        eprintln!("mpi_corpus: skipped, mpirun is not installed");
        return ExitCode::SUCCESS;
    };
    let me = std::env::current_exe().expect("the test's own path");
    for processes in [2, 3, 4] {
        let started = Instant::now();
        let status = Command::new(&mpirun)
            .args(["--oversubscribe", "-n", &processes.to_string()])
            .arg(&me)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env("OMPI_MCA_mpi_yield_when_idle", "1")
            .status()
            .expect("mpirun starts");
        eprintln!(
            "mpi_corpus: {processes} processes: {status} in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        if !status.success() || started.elapsed() > JOB_LIMIT {
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

/// The first `name` on `PATH`.
fn which(name: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// One rank of the job: every case, every layout of the job's size; rank 0, which holds the
/// fields, checks and reports them.
fn run_rank() -> ExitCode {
    let process = MpiProcess::start().expect("MPI starts under mpirun");
    let cpu = tessera_cpu::CpuBackend::default();
    let mut failures = Vec::new();
    let mut runs = 0;
    for case in test_programs() {
        let dims = case.bind(0).extents.len();
        for ranks in layouts(dims) {
            if ranks.iter().product::<usize>() != process.size() {
                continue;
            }
            for (every, overlap, backend) in [
                (1, false, &ReferenceBackend as &dyn Backend),
                (3, true, &ReferenceBackend),
                (3, true, &cpu),
            ] {
                let exchange = Exchange { every, overlap };
                let subject = subject_for(&case, &ranks, every);
                match check(&process, &subject, backend, &ranks, exchange) {
                    Ok(ran) => runs += usize::from(ran),
                    Err(e) => failures.push(e),
                }
            }
        }
    }
    if process.rank() == 0 {
        eprintln!(
            "mpi_corpus: {} processes, {runs} runs bitwise equal, {} failed",
            process.size(),
            failures.len()
        );
        for failure in &failures {
            eprintln!("  {failure}");
        }
    }
    match failures.is_empty() && runs > 0 {
        true => ExitCode::SUCCESS,
        false => ExitCode::FAILURE,
    }
}

/// One layout on this job: `Ok(true)` when bitwise equal, `Ok(false)` when refused for a
/// feature distribution does not have.
fn check(
    process: &MpiProcess,
    subject: &Subject,
    backend: &dyn Backend,
    ranks: &[usize],
    exchange: Exchange,
) -> Result<bool, String> {
    let label = format!(
        "{} ranks {ranks:?} {} {}",
        subject.label,
        exchange.label(),
        backend.name()
    );
    let Some(distribution) = layout(subject, ranks, exchange, &label)? else {
        return Ok(false);
    };
    let mut executable = MpiExecutable::prepare(
        distribution,
        &subject.bound,
        process.rank(),
        backend,
        &PlanRequest::exact(),
    )
    .map_err(|e| format!("{label}: {e}"))?;
    if process.rank() == 0 {
        subject.check_executable(&mut executable, &label)?;
        return Ok(true);
    }
    // The other ranks hold only their boxes, sent by rank 0: they pass the tables alone.
    let mut tables = FieldSet::without_fields(&subject.bound);
    tables.tables = subject.inputs.tables.clone();
    tables.receiver_points = subject.inputs.receiver_points.clone();
    (executable.run(&mut tables, 0, subject.steps, &mut ()))
        .map_err(|e| format!("{label}: {e}"))?;
    Ok(true)
}
