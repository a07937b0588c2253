//! `tessera tune`: search the plan space by timing candidates (a progress bar, then a table of
//! the best few) and store the best plan in the tuning database; `--list` shows the database,
//! `--forget PROGRAM` removes a program's entries.

use std::path::Path;
use tessera_ir::escape::terminal_text;

use tessera::session::parse_set;
use tessera::tuning::{
    Candidate, TuneOptions, TuneOutcome, TuningDb, TuningEntry, entry_for, tune as search,
    tuning_key,
};
use tessera::{Arithmetic, DeviceSelection, Error, PlanRequest, Session};

use super::args::TuneArgs;
use super::planning::DefaultBackend;
use super::progress::TuneBar;

/// Tunes the program, lists the database or forgets a program's entries.
pub fn tune(args: &TuneArgs) -> Result<i32, Error> {
    let db = TuningDb::open_default();
    if args.list {
        return list(&db);
    }
    let program = args.program.as_deref().expect("clap requires a program");
    let session = load(program, &args.sets, &[])?;
    if args.forget {
        let (removed, damaged) = db.forget(session.name())?;
        warn(damaged);
        println!(
            "removed {removed} tuned plan(s) of {} from {}",
            session.name(),
            db.path().display()
        );
        return Ok(0);
    }
    let timed = if args.tune_sizes.is_empty() {
        session.clone()
    } else {
        load(program, &args.sets, &args.tune_sizes)?
    };
    let name = match args.backend.as_deref() {
        Some(name) => name,
        None => DefaultBackend::Host.resolve(),
    };
    let backend = tessera::backend(name)?;
    let base = PlanRequest {
        strategy: args.strategy,
        arithmetic: if args.exact {
            Arithmetic::Exact
        } else {
            Arithmetic::Relaxed
        },
        device: DeviceSelection::from_flag(args.device.as_deref()),
        ..PlanRequest::default()
    };
    let key = tuning_key(&session, backend.name(), &base)?;
    let options = TuneOptions {
        budget: args.budget,
        steps: args.steps.unwrap_or_else(|| timed.default_steps()),
        reps: args.reps,
        max_candidates: args.max_candidates,
        seed: args.seed,
        stop: super::signals::stop_requested,
    };
    if let Some(load) = busy_machine() {
        eprintln!(
            "warning: the machine is busy before tuning starts ({load}): plans are timed as the machine runs now, so the best under this load may be worse on a quiet machine; tune again when it is quiet"
        );
    }
    // A first SIGINT or SIGTERM ends the search as a spent budget does: the best plan timed
    // so far is reported and stored.
    super::signals::stop_gracefully();
    let bar = TuneBar::new(args.budget);
    let start = std::time::Instant::now();
    let outcome = search(&timed, backend.as_ref(), &base, &options, &mut |p| {
        bar.show(p)
    });
    bar.finish();
    let outcome = outcome?;
    let seconds = start.elapsed().as_secs_f64();
    let entry = entry_for(
        &session,
        &timed,
        backend.as_ref(),
        &base,
        key,
        &outcome,
        options.steps,
    )?;
    // A database that cannot be used costs the stored result, not the search: it is reported
    // once (by `usable` or here) and the outcome is still printed.
    let stored = match db.usable(true) {
        Ok(true) => match db.insert(entry.clone()) {
            Ok(damaged) => {
                warn(damaged);
                true
            }
            Err(error) => {
                eprintln!("warning: the tuned plan is not stored: {error}");
                false
            }
        },
        Ok(false) => false,
        Err(error) => return Err(error),
    };
    print_outcome(&timed, &outcome, &entry, args.top, seconds);
    if stored {
        println!(
            "stored for {} {} on {} in {}",
            session.name(),
            session.grid_text(),
            entry.key.device,
            db.path().display()
        );
    } else {
        println!(
            "not stored: the tuning database {} cannot be used (see the warning above)",
            db.path().display()
        );
    }
    Ok(0)
}

/// Loads `program` with `sets`, then `more` (which override them).
fn load(program: &Path, sets: &[String], more: &[String]) -> Result<Session, Error> {
    let mut pairs = Vec::new();
    for text in sets.iter().chain(more) {
        let (name, value) = parse_set(text)?;
        pairs.retain(|(n, _): &(String, String)| *n != name);
        pairs.push((name, value));
    }
    Session::load(program, &pairs)
}

/// The load average and core count, when other work keeps more than a quarter of the cores
/// busy (Linux's `/proc/loadavg`; `None` elsewhere or when quiet).
fn busy_machine() -> Option<String> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let load: f64 = text.split_whitespace().next()?.parse().ok()?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (load > (cores as f64 / 4.0).max(0.5))
        .then(|| format!("load average {load:.2} over the last minute, {cores} cores"))
}

/// Prints a warning about a damaged database that was replaced.
fn warn(damaged: Option<String>) {
    if let Some(why) = damaged {
        eprintln!("warning: {}", terminal_text(&why));
    }
}

/// The table of the best `top` plans against the model's, and what was skipped.
fn print_outcome(
    timed: &Session,
    outcome: &TuneOutcome,
    entry: &TuningEntry,
    top: usize,
    seconds: f64,
) {
    println!(
        "{}: {} ({}), {} steps per run: {} candidates timed in {seconds:.1} s, {} refused by the planner or prepare (`TESSERA_LOG=info` lists them)",
        timed.name(),
        timed.grid_text(),
        timed.updated_types_text(),
        entry.steps,
        outcome.tried,
        outcome.skipped.len(),
    );
    let baseline = outcome.baseline.gcells_per_s;
    println!("  rank  GCells/s  vs model  plan");
    for (rank, candidate) in outcome.ranked.iter().take(top).enumerate() {
        println!("  {:>4}  {}", rank + 1, row(candidate, baseline));
    }
    println!("  model {}", row(&outcome.baseline, baseline));
    if outcome.stopped {
        println!("  stopped by a signal: the best plans were not timed again against the model's");
    }
    for why in &outcome.skipped {
        tracing::info!("skipped {why}");
    }
}

/// One row: GCells/s, the ratio to `baseline` and the plan.
fn row(candidate: &Candidate, baseline: f64) -> String {
    format!(
        "{:>8.3}  {:>7.2}x  {}",
        candidate.gcells_per_s,
        ratio(candidate.gcells_per_s, baseline),
        candidate.plan.describe()
    )
}

/// `value / baseline`, 0 without a baseline.
fn ratio(value: f64, baseline: f64) -> f64 {
    if baseline > 0.0 {
        value / baseline
    } else {
        0.0
    }
}

/// Prints every entry of the database.
fn list(db: &TuningDb) -> Result<i32, Error> {
    let loaded = db.load();
    warn(loaded.damaged);
    println!(
        "{} tuned plan(s) in {}",
        loaded.entries.len(),
        db.path().display()
    );
    for entry in &loaded.entries {
        let key = &entry.key;
        let grid: Vec<String> = key.grid.iter().map(usize::to_string).collect();
        println!(
            "{} {} {}{}: {:.3} GCells/s ({:.2}x the model's plan) {}/{} on {}",
            key.program,
            grid.join("x"),
            key.backend,
            if key.exact { " exact" } else { "" },
            entry.best.gcells_per_s,
            ratio(entry.best.gcells_per_s, entry.baseline.gcells_per_s),
            key.backend,
            entry.best.plan,
            key.device
        );
    }
    Ok(0)
}
