//! `tessera bench`: prepare (timed separately), one warm-up run, then timed runs on fresh
//! copies of seeded random inputs; median time of the time loop (on the device for GPU
//! backends), GCells/s from it, host<->device transfer time apart, and the roofline bound.

use std::time::Instant;

use tessera::inputs::{random_inputs, random_tables};
use tessera::metrics::{gcells_per_s, roofline_gcells_per_s};
use tessera::{DeviceSelection, Error, Session};
use tessera_runtime::{Backend, Bandwidth, Executable, FieldSet, Prediction, RankTimes};

use super::args::BenchArgs;
use super::distributed::{self, Role};
use super::{json, planning};

/// The timed runs of one benchmark.
struct Timings {
    /// Seconds of each run's time loop, sorted.
    seconds: Vec<f64>,
    /// Seconds of each run's host<->device transfers, sorted.
    transfer_seconds: Vec<f64>,
    /// Steps the runs executed.
    steps: u64,
    /// Each rank's times in the run of the median time loop (distributed runs).
    ranks: Vec<RankTimes>,
}

impl Timings {
    /// The median time loop.
    fn median(&self) -> f64 {
        self.seconds[self.seconds.len() / 2]
    }

    /// The median transfer time.
    fn transfer_median(&self) -> f64 {
        self.transfer_seconds[self.transfer_seconds.len() / 2]
    }
}

/// One warm-up run, then `reps` timed runs of `steps` steps on fresh copies of `inputs`.
fn measure(
    executable: &mut dyn Executable,
    inputs: &FieldSet,
    steps: u64,
    reps: usize,
) -> Result<Timings, Error> {
    executable.run(&mut inputs.clone(), 0, steps, &mut ())?;
    let mut timings = Timings {
        seconds: Vec::with_capacity(reps),
        transfer_seconds: Vec::with_capacity(reps),
        steps,
        ranks: Vec::new(),
    };
    let mut ranks = Vec::with_capacity(reps);
    for _ in 0..reps {
        let report = executable.run(&mut inputs.clone(), 0, steps, &mut ())?;
        timings.seconds.push(report.compute_time.as_secs_f64());
        timings
            .transfer_seconds
            .push(report.transfer_time.as_secs_f64());
        timings.steps = report.steps;
        ranks.push((report.compute_time, report.ranks));
    }
    ranks.sort_by_key(|(time, _)| *time);
    timings.ranks = ranks.swap_remove(ranks.len() / 2).1;
    timings.seconds.sort_by(f64::total_cmp);
    timings.transfer_seconds.sort_by(f64::total_cmp);
    Ok(timings)
}

/// Benchmarks the program and prints a report (text or one JSON object).
pub fn bench(args: &BenchArgs) -> Result<i32, Error> {
    let role = Role::of_process()?;
    bench_as(args, &role).map_err(|error| role.on_error(error))
}

/// Benchmarks the program as `role` (alone, or one rank of an MPI job, whose rank 0 reports).
fn bench_as(args: &BenchArgs, role: &Role) -> Result<i32, Error> {
    distributed::check_flags(&args.exec, &args.ranks, role)?;
    let session = args.program.load()?;
    let planned = planning::plan_run(&session, &args.exec)?;
    let steps = args.steps.unwrap_or_else(|| session.default_steps());
    let start = Instant::now();
    let mut executable =
        match distributed::prepare(&session, &planned, &args.exec, &args.ranks, role)? {
            Some(executable) => executable,
            None => planned.prepare(&session)?,
        };
    let prepare_seconds = start.elapsed().as_secs_f64();
    if args.compile_only {
        let source = planned
            .backend
            .emit(session.bound(), &planned.plan, &planned.device);
        let compiled = Compiled {
            session: &session,
            backend: planned.name,
            plan: &executable.describe(),
            compile_seconds: executable.compile_time().as_secs_f64(),
            prepare_seconds,
            source_bytes: source.ok().map(|s| s.text.len()),
        };
        compiled.print(args.json, args.exec.exact);
        return Ok(0);
    }
    // Under MPI rank 0 holds the fields, the other ranks their boxes (sent by rank 0).
    let (inputs, randomised) = match role.is_root() {
        true => random_inputs(&session, args.seed, steps)?,
        false => {
            let mut tables = FieldSet::without_fields(session.bound());
            random_tables(&session, args.seed, steps, &mut tables)?;
            (tables, Vec::new())
        }
    };
    let timings = measure(executable.as_mut(), &inputs, steps, args.reps)?;
    if !role.is_root() {
        return Ok(0);
    }
    let described = executable.describe();
    let plan = described
        .strip_prefix(planned.name)
        .map_or(described.as_str(), str::trim_start);
    let median = timings.median();
    let gcells = if median > 0.0 {
        gcells_per_s(session.bound(), timings.steps, median)
    } else {
        0.0
    };
    let bytes = session.bound().traffic_bytes_per_point();
    let bandwidth = bandwidth_gb_s(
        planned.backend.as_ref(),
        args.bandwidth,
        &planned.device,
        args.exec.threads,
    );
    let roofline = (bandwidth.as_ref().ok()).map(|(b, _)| roofline_gcells_per_s(*b, bytes as f64));
    let report = Report {
        session: &session,
        backend: planned.name,
        plan,
        tuned: planned.tuned.is_some(),
        timings: &timings,
        reps: args.reps,
        gcells,
        compile_seconds: executable.compile_time().as_secs_f64(),
        prepare_seconds,
        bytes,
        bandwidth: &bandwidth,
        roofline,
        fraction: roofline.filter(|r| *r > 0.0).map(|r| gcells / r),
        // A model that cannot predict this plan leaves the prediction out; the run stands.
        predicted: (planned.backend)
            .predict(session.bound(), &planned.plan, &planned.device)
            .ok()
            .flatten(),
    };
    if args.json {
        println!("{}", report.json(&randomised, args.exec.exact));
    } else {
        report.print();
    }
    Ok(0)
}

/// What `--compile-only` measured.
struct Compiled<'a> {
    session: &'a Session,
    backend: &'a str,
    plan: &'a str,
    compile_seconds: f64,
    prepare_seconds: f64,
    /// Bytes of generated source, when the backend's `emit` gives it for this plan.
    source_bytes: Option<usize>,
}

impl Compiled<'_> {
    /// Prints the measurement: one JSON object, or one line of text.
    fn print(&self, json: bool, exact: bool) {
        if json {
            let value = json::report(
                self.session,
                self.backend,
                serde_json::json!({
                    "plan": self.plan,
                    "exact": exact,
                    "compile_seconds": self.compile_seconds,
                    "prepare_seconds": self.prepare_seconds,
                    "source_bytes": self.source_bytes,
                }),
            );
            println!("{value}");
        } else {
            let size = self
                .source_bytes
                .map_or("source size unknown".to_string(), |b| {
                    format!("{b} bytes of source")
                });
            println!(
                "{}: {}, compiled in {:.3} s (prepare {:.3} s; 0 on a cache hit), {size}",
                self.session.name(),
                self.plan,
                self.compile_seconds,
                self.prepare_seconds,
            );
        }
    }
}

/// What a benchmark measured and derived, for printing.
struct Report<'a> {
    session: &'a Session,
    backend: &'a str,
    plan: &'a str,
    /// Whether the plan came from the tuning database.
    tuned: bool,
    timings: &'a Timings,
    reps: usize,
    gcells: f64,
    compile_seconds: f64,
    prepare_seconds: f64,
    bytes: usize,
    bandwidth: &'a Result<(f64, String), String>,
    roofline: Option<f64>,
    fraction: Option<f64>,
    /// The backend's cost model's prediction for the plan (GPU backends).
    predicted: Option<Prediction>,
}

impl Report<'_> {
    /// The report as one JSON object.
    fn json(&self, randomised: &[String], exact: bool) -> serde_json::Value {
        let bandwidth = self.bandwidth.as_ref().ok();
        json::report(
            self.session,
            self.backend,
            serde_json::json!({
                "strategy": self.plan,
                "tuned": self.tuned,
                "steps": self.timings.steps,
                "reps": self.reps,
                "seconds": self.timings.median(),
                "seconds_all": self.timings.seconds,
                "transfer_seconds": self.timings.transfer_median(),
                "transfer_seconds_all": self.timings.transfer_seconds,
                "gcells_per_s": self.gcells,
                "compile_seconds": self.compile_seconds,
                "prepare_seconds": self.prepare_seconds,
                "bytes_per_point": self.bytes,
                "bandwidth_gb_s": bandwidth.map(|(b, _)| *b),
                "bandwidth_source": bandwidth.map(|(_, how)| how.clone()),
                "roofline_gcells_per_s": self.roofline,
                "fraction_of_roofline": self.fraction,
                "random_inputs": randomised,
                "exact": exact,
                "ranks": rank_times_json(&self.timings.ranks),
                "predicted": self.predicted.as_ref().map(|p| serde_json::json!({
                    "gcells_per_s": p.gcells_per_s,
                    "bound": p.bound,
                    "kernel_class": p.kernel_class,
                    "dims": p.dims,
                    "efficiency": p.efficiency,
                    "efficiency_measured": p.measured,
                })),
            }),
        )
    }

    /// The report as text.
    fn print(&self) {
        let (timings, session) = (self.timings, self.session);
        println!(
            "{}: {} ({}), {} steps, {}/{}",
            session.name(),
            session.grid_text(),
            session.updated_types_text(),
            timings.steps,
            self.backend,
            self.plan
        );
        if self.tuned {
            println!("  plan from: the tuning database (`--no-tuned`: the model's plan)");
        }
        println!(
            "  prepare: {:.3} s (compilation {:.3} s; 0 on a cache hit)",
            self.prepare_seconds, self.compile_seconds
        );
        println!(
            "  time loop: median {:.6} s of {} runs (min {:.6} s, max {:.6} s)",
            timings.median(),
            self.reps,
            timings.seconds[0],
            timings.seconds[timings.seconds.len() - 1]
        );
        println!(
            "  transfers: median {:.6} s per run (host<->device fields, not in the time loop)",
            timings.transfer_median()
        );
        println!("  speed: {:.3} GCells/s (from the time loop)", self.gcells);
        if let Some(p) = &self.predicted {
            println!(
                "  predicted: {:.3} GCells/s by the cost model (bound by {}; {} efficiency {:.3} of `{}` in {}D)",
                p.gcells_per_s,
                p.bound,
                if p.measured { "measured" } else { "assumed" },
                p.efficiency,
                p.kernel_class,
                p.dims
            );
        }
        println!(
            "  traffic model: {} bytes per point per step (fields read once + fields written once)",
            self.bytes
        );
        match self.bandwidth {
            Ok((b, how)) => println!("  bandwidth: {b:.1} GB/s ({how})"),
            Err(why) => println!("  bandwidth: unknown ({why}; give --bandwidth GB/s)"),
        }
        if let (Some(r), Some(f)) = (self.roofline, self.fraction) {
            println!(
                "  roofline: {r:.3} GCells/s; reached {:.1}% (time tiling can exceed 100%)",
                f * 100.0
            );
        }
        for (rank, t) in timings.ranks.iter().enumerate() {
            println!(
                "  rank {rank}: compute {:.6} s, exchange {:.6} s, wait {:.6} s (the median run)",
                t.compute.as_secs_f64(),
                t.exchange.as_secs_f64(),
                t.wait.as_secs_f64()
            );
        }
    }
}

/// Each rank's times as JSON (`[]` outside distributed runs).
pub fn rank_times_json(ranks: &[RankTimes]) -> serde_json::Value {
    (ranks.iter().enumerate())
        .map(|(rank, t)| {
            serde_json::json!({
                "rank": rank,
                "compute_seconds": t.compute.as_secs_f64(),
                "exchange_seconds": t.exchange.as_secs_f64(),
                "wait_seconds": t.wait.as_secs_f64(),
            })
        })
        .collect()
}

/// The memory bandwidth in GB/s and where it came from: `given`, else the backend's
/// measurement (STREAM triad on the host, a copy on the device), or why there is none.
pub fn bandwidth_gb_s(
    backend: &dyn Backend,
    given: Option<f64>,
    device: &DeviceSelection,
    threads: Option<usize>,
) -> Result<(f64, String), String> {
    if let Some(b) = given {
        return Ok((b, "given".to_string()));
    }
    match backend.bandwidth(device, threads) {
        Ok(Bandwidth { gb_s, how }) => Ok((gb_s, how)),
        Err(e) => {
            tracing::warn!("cannot measure the memory bandwidth: {e}");
            Err(e.to_string())
        }
    }
}
