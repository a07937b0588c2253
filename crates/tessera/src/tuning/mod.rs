//! Autotuning: [`tune`] searches a backend's plans for a program by timing them, and
//! [`TuningDb`] keeps the best plan per [`TuningKey`] (program text and sizes, backend,
//! device, arithmetic, Tessera version) in the cache directory, where `run`, `bench`,
//! `explain`, `plan` and `emit` find it ([`tuned_plan`]).

mod db;
mod search;

pub use db::{DB_FORMAT, Loaded, Measured, TuningDb, TuningEntry, TuningKey};
pub use search::{Candidate, Progress, TuneOptions, TuneOutcome, tune};

use tessera_plan::candidates::request_of;
use tessera_plan::{Arithmetic, PlanRequest};
use tessera_runtime::Backend;

use crate::error::Error;
use crate::session::Session;

/// The key of `session`'s tuned plans on the backend `backend` for `request`'s device and
/// arithmetic.
pub fn tuning_key(
    session: &Session,
    backend: &str,
    request: &PlanRequest,
) -> Result<TuningKey, Error> {
    let printed = tessera_ir::print_program(session.program());
    Ok(TuningKey {
        program: session.name().to_string(),
        program_hash: blake3::hash(printed.as_bytes()).to_hex().to_string(),
        grid: session.bound().extents.clone(),
        backend: backend.to_string(),
        device: crate::backends::device_identity(backend, &request.device)?,
        exact: request.arithmetic == Arithmetic::Exact,
        tessera_version: env!("CARGO_PKG_VERSION").to_string(),
    })
}

/// The tuned entry `db` holds for running `session` on `backend` with `request` (an entry of
/// exactly its key, whose plan still fits the program), and notes on what was not used.
pub fn tuned_plan(
    db: &TuningDb,
    session: &Session,
    backend: &str,
    request: &PlanRequest,
) -> (Option<TuningEntry>, Vec<String>) {
    let Ok(key) = tuning_key(session, backend, request) else {
        return (None, Vec::new());
    };
    let (entry, damaged) = db.lookup(&key);
    let mut notes: Vec<String> = damaged.into_iter().collect();
    let entry = entry.filter(|entry| match entry.plan.check_program(session.bound()) {
        Ok(()) => true,
        Err(why) => {
            notes.push(format!(
                "the tuned plan in {} no longer fits the program ({why}); using the model's plan (run `tessera tune` again)",
                db.path().display()
            ));
            false
        }
    });
    (entry, notes)
}

/// The entry to store for `key` from a search `outcome` timed on `timed` (which may be bound
/// at a smaller size than `session`): the best candidate whose decisions plan at `session`'s
/// size on `backend` (the plan itself when the sizes agree).
pub fn entry_for(
    session: &Session,
    timed: &Session,
    backend: &dyn Backend,
    base: &PlanRequest,
    key: TuningKey,
    outcome: &TuneOutcome,
    steps: u64,
) -> Result<TuningEntry, Error> {
    let same_size = session.bound().extents == timed.bound().extents;
    let mut fitting = outcome.ranked.iter().filter_map(|candidate| {
        let plan = if same_size {
            Some(candidate.plan.clone())
        } else {
            let request = request_of(&candidate.plan, base);
            session.plan(backend, &request).ok()
        };
        plan.map(|plan| (plan, measured(candidate)))
    });
    let (plan, best) = fitting.next().ok_or_else(|| {
        Error::Usage(format!(
            "no timed plan fits {} at its size {}",
            session.name(),
            session.grid_text()
        ))
    })?;
    Ok(TuningEntry {
        key,
        plan,
        best,
        runner_up: fitting.next().map(|(_, m)| m),
        baseline: measured(&outcome.baseline),
        timed_grid: timed.bound().extents.clone(),
        steps,
        candidates: outcome.tried,
        created_unix_seconds: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    })
}

/// What a candidate measured, for the database.
fn measured(candidate: &Candidate) -> Measured {
    Measured {
        plan: candidate.plan.describe(),
        gcells_per_s: candidate.gcells_per_s,
    }
}
