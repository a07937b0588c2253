//! `tessera run`: validate every input and output, run, write outputs (the reductions' records
//! with `--reductions`), print one summary line (one JSON object with `--json`).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use tessera::files::{self, Format, SeriesFormat};
use tessera::metrics::gcells_per_s;
use tessera::{Error, FieldRef, Session, checkpoint};
use tessera_ir::{Id, Receiver, ReceiverPoints};
use tessera_runtime::{
    Buffer, Executable, FieldSet, Flow, Observation, Observer, ReceiverRecord, ReceiverSeries,
    ReductionRecord, RunReport, RunState, drive, receiver_series,
};

use super::args::{FieldFile, RunArgs};
use super::distributed::{self, Role};
use super::finite::first_non_finite;
use super::json;
use super::planning::{self, Planned};
use super::progress::StepBar;
use super::reductions::{self, ReductionValue};

/// An output to write after the run.
struct Output {
    field: FieldRef,
    format: Format,
    path: PathBuf,
}

/// A receiver's recordings to write after the run (`--output NAME=FILE` naming a receiver).
struct SeriesOutput {
    receiver: Id<Receiver>,
    format: SeriesFormat,
    path: PathBuf,
}

/// Follows a run: the progress bar; with `--check-finite --check-every K` a finiteness check
/// every K steps that stops the run at the first non-finite value; with `--checkpoint DIR
/// --checkpoint-every N` a checkpoint every N steps.
struct RunObserver<'s> {
    session: &'s Session,
    /// This process's part in the run (under MPI only rank 0 holds the fields to check).
    role: &'s Role,
    bar: StepBar,
    check_every: Option<u64>,
    /// The first non-finite value found, and the steps done when it was.
    non_finite: Option<(String, u64)>,
    /// The steps done at the last check.
    checked_at: Option<u64>,
    checkpoints: Option<Checkpoints<'s>>,
}

/// Where and how often a run writes checkpoints, and what it started from.
struct Checkpoints<'s> {
    dir: &'s std::path::Path,
    every: u64,
    /// The run's first step (the steps a restarted run had done).
    first_step: u64,
    /// The reduction records of the run it continues.
    earlier: Vec<ReductionRecord>,
    /// The receiver recordings of the run it continues.
    earlier_recordings: Vec<ReceiverRecord>,
    /// The first write that failed (the run stops there).
    failed: Option<Error>,
    /// Whether this process writes them (rank 0 of an MPI job, or the only process).
    root: bool,
}

impl Checkpoints<'_> {
    /// Writes the checkpoint of `at` (relative to the run's first step).
    fn write(&mut self, session: &Session, at: &Observation<'_>) -> Flow {
        if !self.root {
            return Flow::Continue;
        }
        let records: Vec<ReductionRecord> =
            self.earlier.iter().chain(at.records).cloned().collect();
        let recordings: Vec<ReceiverRecord> = (self.earlier_recordings.iter())
            .chain(at.recordings)
            .cloned()
            .collect();
        let done = self.first_step + at.done;
        let history = checkpoint::History {
            records: &records,
            recordings: &recordings,
        };
        match checkpoint::write(self.dir, session, done, at.fields, at.state, history) {
            Ok(_) => Flow::Continue,
            Err(e) => {
                self.failed = Some(e);
                Flow::Stop
            }
        }
    }
}

impl Observer for RunObserver<'_> {
    fn advance(&mut self, done: u64, _total: u64) -> Flow {
        self.bar.show(done);
        Flow::Continue
    }

    fn pass_limit(&self) -> Option<u32> {
        self.bar.pass_limit()
    }

    fn every(&self) -> Option<u64> {
        let checkpoint_every = self.checkpoints.as_ref().map(|c| c.every);
        match (self.check_every, checkpoint_every) {
            (Some(a), Some(b)) => Some(gcd(a, b)),
            (a, b) => a.or(b),
        }
    }

    fn observe(&mut self, at: &Observation<'_>) -> Flow {
        if self.check_every.is_some_and(|k| at.done.is_multiple_of(k)) {
            self.checked_at = Some(at.done);
            let found = (self.role.is_root())
                .then(|| first_non_finite(self.session, at.fields))
                .flatten();
            if let Some(what) = self.role.root_verdict(found) {
                self.non_finite = Some((what, at.done));
                return Flow::Stop;
            }
        }
        match &mut self.checkpoints {
            Some(c) if at.done.is_multiple_of(c.every) => c.write(self.session, at),
            _ => Flow::Continue,
        }
    }
}

/// The greatest common divisor of two positive step counts.
fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Runs the program; returns the exit code (1 when `--check-finite` found a bad value).
pub fn run(args: &RunArgs) -> Result<i32, Error> {
    let role = Role::of_process()?;
    run_as(args, &role).map_err(|error| role.on_error(error))
}

/// Runs the program as `role` (alone, or one rank of an MPI job).
fn run_as(args: &RunArgs, role: &Role) -> Result<i32, Error> {
    let root = role.is_root();
    distributed::check_flags(&args.exec, &args.ranks, role)?;
    let session = args.program.load()?;
    let planned = planning::plan_run(&session, &args.exec)?;
    let (outputs, series_outputs) = resolve_outputs(&session, args)?;
    if let Some(path) = &args.reductions {
        files::check_destination(path)?;
    }
    let total_steps = args.start.steps(&session);
    let start = Start::of(args, &session, total_steps, root)?;
    // Compiling checks the plan against the device: refusals come before any allocation.
    let clock = Instant::now();
    let mut executable =
        match distributed::prepare(&session, &planned, &args.exec, &args.ranks, role)? {
            Some(executable) => executable,
            None => planned.prepare(&session)?,
        };
    let compile = clock.elapsed();
    let clock = Instant::now();
    let mut begun = start.begin(&session, root)?;
    let initialise = clock.elapsed();
    let steps = total_steps - begun.first_step;
    let (report, non_finite) =
        follow(args, role, &session, executable.as_mut(), &mut begun, steps)?;
    if !root {
        return Ok(i32::from(non_finite.is_some()));
    }
    let clock = Instant::now();
    let series = write_results(
        args,
        &session,
        &begun.fields,
        &report,
        &outputs,
        &series_outputs,
    )?;
    let phases = Phases {
        compile,
        initialise,
        run: report.compute_time,
        transfer: report.transfer_time,
        write: clock.elapsed(),
    };
    print_summary(args, &session, &planned, &report, &series, &phases);
    Ok(match non_finite {
        Some((what, step)) => {
            let when = if args.check_every.is_some() {
                format!("within the first {step} steps")
            } else {
                format!("after {step} steps")
            };
            eprintln!("error: non-finite value: {what} {when}");
            1
        }
        None => 0,
    })
}

/// What a run starts from: its fields and state, the steps done before it, and the
/// reductions' records and receivers' recordings of the run it continues.
struct Begun {
    fields: FieldSet,
    state: RunState,
    first_step: u64,
    records: Vec<ReductionRecord>,
    recordings: Vec<ReceiverRecord>,
}

/// Runs the time loop from `begun` for `steps` steps, following it with the progress bar,
/// the finiteness checks and the checkpoints; returns the report (the continued run's
/// records first) and the first non-finite value found, with the steps done then.
fn follow(
    args: &RunArgs,
    role: &Role,
    session: &Session,
    executable: &mut dyn Executable,
    begun: &mut Begun,
    steps: u64,
) -> Result<(RunReport, Option<(String, u64)>), Error> {
    let root = role.is_root();
    let mut observer = RunObserver {
        session,
        role,
        bar: StepBar::new(if root { steps } else { 0 }),
        check_every: args
            .check_every
            .filter(|_| args.check_finite)
            .map(|k| k as u64),
        non_finite: None,
        checked_at: None,
        checkpoints: args.checkpoint.as_deref().map(|dir| Checkpoints {
            root,
            dir,
            every: args.checkpoint_every.unwrap_or(1) as u64,
            first_step: begun.first_step,
            earlier: begun.records.clone(),
            earlier_recordings: begun.recordings.clone(),
            failed: None,
        }),
    };
    let fields = &mut begun.fields;
    let mut report = drive(
        executable,
        fields,
        begun.first_step,
        steps,
        &mut begun.state,
        &mut observer,
    )?;
    let RunObserver {
        bar,
        mut non_finite,
        checked_at,
        checkpoints,
        ..
    } = observer;
    bar.finish();
    if let Some(error) = checkpoints.and_then(|c| c.failed) {
        return Err(error);
    }
    report.reductions.splice(0..0, begun.records.drain(..));
    report.receivers.splice(0..0, begun.recordings.drain(..));
    if root && args.check_finite && non_finite.is_none() && checked_at != Some(report.steps) {
        non_finite = first_non_finite(session, fields).map(|what| (what, report.steps));
    }
    Ok((report, non_finite))
}

/// Writes the outputs, the reductions' records (`--reductions`) and the receivers' series;
/// returns the series.
fn write_results(
    args: &RunArgs,
    session: &Session,
    fields: &FieldSet,
    report: &RunReport,
    outputs: &[Output],
    series_outputs: &[SeriesOutput],
) -> Result<Vec<ReceiverSeries>, Error> {
    for line in write_outputs(session, fields, outputs)? {
        // Under `--json`, stdout holds the one JSON object only.
        if args.json {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }
    if let Some(path) = &args.reductions {
        tessera_io::write_text(path, &reductions::csv(session, &report.reductions))?;
    }
    let series = receiver_series(session.program(), &report.receivers);
    for output in series_outputs {
        let points = receiver_points(session, fields, output.receiver);
        let series = &series[output.receiver.index()];
        files::write_series(session, series, points, output.format, &output.path)?;
    }
    Ok(series)
}

/// Prints the run's summary: one line, or one JSON object with `--json`.
fn print_summary(
    args: &RunArgs,
    session: &Session,
    planned: &Planned,
    report: &RunReport,
    series: &[ReceiverSeries],
    phases: &Phases,
) {
    let plan = report
        .plan
        .strip_prefix(planned.name)
        .map_or(report.plan.as_str(), str::trim_start);
    if args.json {
        let tuned = planned.tuned.is_some();
        let mut summary = json_summary(session, planned.name, plan, tuned, report, phases);
        summary["receivers"] = receivers_json(series);
        println!("{summary}");
    } else {
        let plan = match planned.tuned {
            Some(_) => format!("{plan} (tuned)"),
            None => plan.to_string(),
        };
        println!(
            "{}; {}",
            summary(session, planned.name, &plan, report),
            phases.text()
        );
    }
}

/// Where a run starts: a checkpoint (fields, tables and receivers' points included), or the
/// `--input` files and the declared initial values.
enum Start<'a> {
    Restart(checkpoint::Checkpoint),
    Fresh(Inputs<'a>),
}

impl<'a> Start<'a> {
    /// The checkpoint of `--restart` (its fields read on the root only), or the `--input`
    /// files.
    fn of(
        args: &'a RunArgs,
        session: &Session,
        total_steps: u64,
        root: bool,
    ) -> Result<Self, Error> {
        Ok(match &args.restart {
            Some(dir) => {
                let fields = match root {
                    true => checkpoint::Fields::Read,
                    false => checkpoint::Fields::Skip,
                };
                Start::Restart(restart_from(dir, session, total_steps, fields)?)
            }
            None => Start::Fresh(resolve_inputs(session, &args.start.inputs)?),
        })
    }

    /// The fields, state and history the run begins with. Under MPI rank 0 holds the
    /// fields, the other ranks their boxes (sent by rank 0).
    fn begin(self, session: &Session, root: bool) -> Result<Begun, Error> {
        Ok(match self {
            Start::Restart(c) => Begun {
                fields: c.fields,
                state: c.state,
                first_step: c.steps_done,
                records: c.records,
                recordings: c.recordings,
            },
            Start::Fresh(inputs) => {
                let fields = if root {
                    read_inputs(session, &inputs)?
                } else {
                    let mut fields = FieldSet::without_fields(session.bound());
                    read_tables_and_points(session, &inputs, &mut fields)?;
                    fields
                };
                Begun {
                    fields,
                    state: RunState::new(session.program()),
                    first_step: 0,
                    records: Vec::new(),
                    recordings: Vec::new(),
                }
            }
        })
    }
}

/// What the `--input` files fill: fields, the program's input tables (by table index) and
/// the points of receivers declared `at input` (by receiver index).
pub struct Inputs<'a> {
    fields: Vec<(FieldRef, &'a PathBuf)>,
    tables: Vec<(usize, &'a PathBuf)>,
    points: Vec<(Id<Receiver>, &'a PathBuf)>,
}

/// The points receiver `receiver` records at in this run: the program's, or those read from
/// its `--input` file.
fn receiver_points<'f>(
    session: &'f Session,
    fields: &'f FieldSet,
    receiver: Id<Receiver>,
) -> &'f [Vec<i64>] {
    match &session.program().receivers[receiver].points {
        ReceiverPoints::Fixed(points) => points,
        ReceiverPoints::Input => (fields.receiver_points.get(receiver.index()))
            .and_then(Option::as_deref)
            .unwrap_or_default(),
    }
}

/// `[{"name": "seis", "steps": [0, 1], "values": [[..], [..]]}, ...]`: each receiver's
/// recordings, a row of values (JSON numbers; `null` for NaN and infinities) per step.
fn receivers_json(series: &[ReceiverSeries]) -> serde_json::Value {
    let value = |values: &Buffer, i: usize| -> serde_json::Value {
        match values {
            Buffer::U8(v) => v[i].into(),
            Buffer::I32(v) => v[i].into(),
            Buffer::I64(v) => v[i].into(),
            _ => values.get_f64(i).into(),
        }
    };
    (series.iter())
        .map(|s| {
            let rows: Vec<serde_json::Value> = (0..s.steps.len())
                .map(|row| {
                    (0..s.points)
                        .map(|k| value(&s.values, row * s.points + k))
                        .collect()
                })
                .collect();
            serde_json::json!({"name": s.name, "steps": s.steps, "values": rows})
        })
        .collect()
}

/// The field or table of every `--input`, checked before anything runs: every name exists
/// and every input table of the program has a file.
pub fn resolve_inputs<'a>(session: &Session, inputs: &'a [FieldFile]) -> Result<Inputs<'a>, Error> {
    let mut resolved = Inputs {
        fields: Vec::new(),
        tables: Vec::new(),
        points: Vec::new(),
    };
    let program = session.program();
    for input in inputs {
        let name = input.field.as_deref().unwrap_or_default();
        match (session.table(name), program.receiver_by_name(name)) {
            (Some(table), _) => resolved.tables.push((table, &input.path)),
            (None, Some(receiver)) => {
                if let ReceiverPoints::Fixed(_) = program.receivers[receiver].points {
                    return Err(Error::Usage(format!(
                        "the receiver `{name}` records at the points the program gives; only a receiver declared `at input` takes them with `--input {name}=points.npy`"
                    )));
                }
                resolved.points.push((receiver, &input.path));
            }
            (None, None) => resolved.fields.push((session.field(name)?, &input.path)),
        }
    }
    for (id, receiver) in program.receivers.iter() {
        if receiver.points == ReceiverPoints::Input
            && !resolved.points.iter().any(|(r, _)| *r == id)
        {
            return Err(Error::Usage(format!(
                "the receiver `{}` has no points: give them with `--input {}=points.npy` (integers of shape (n, {}), one row per point, slowest axis first)",
                receiver.name,
                receiver.name,
                program.dims()
            )));
        }
    }
    for (id, table) in session.program().tables.iter() {
        if !resolved.tables.iter().any(|(t, _)| *t == id.index()) {
            return Err(Error::Usage(format!(
                "the table `{}` has no values: give them with `--input {}=FILE.npy` (a 1D array of {}, one value per step)",
                table.name, table.name, table.ty
            )));
        }
    }
    Ok(resolved)
}

/// The fields a run starts from: the declared initial values, the `inputs` files read into
/// the fields they name, and the input tables read from theirs.
pub fn read_inputs(session: &Session, inputs: &Inputs) -> Result<FieldSet, Error> {
    let given: Vec<usize> = (inputs.fields.iter())
        .flat_map(|(f, _)| f.components.clone())
        .collect();
    let mut fields = session.initial_fields(&given)?;
    for (field, path) in &inputs.fields {
        files::read_into(session, &mut fields, field, path)?;
    }
    read_tables_and_points(session, inputs, &mut fields)?;
    Ok(fields)
}

/// The input tables and receivers' points of `inputs` read into `fields`.
fn read_tables_and_points(
    session: &Session,
    inputs: &Inputs,
    fields: &mut FieldSet,
) -> Result<(), Error> {
    for &(table, path) in &inputs.tables {
        fields.tables[table] = files::read_table(session, table, path)?;
    }
    fields.receiver_points = vec![None; session.program().receivers.len()];
    for &(receiver, path) in &inputs.points {
        let points = files::read_points(session, receiver.index(), path)?;
        fields.receiver_points[receiver.index()] = Some(points);
    }
    Ok(())
}

/// The newest checkpoint in `dir` for `session`, which must have done at most `total_steps`.
fn restart_from(
    dir: &std::path::Path,
    session: &Session,
    total_steps: u64,
    fields: checkpoint::Fields,
) -> Result<checkpoint::Checkpoint, Error> {
    let restart = checkpoint::read(dir, session, fields)?;
    if restart.steps_done > total_steps {
        return Err(Error::Usage(format!(
            "the checkpoint in {} has done {} steps, more than the {total_steps} this run asks for (`--steps` counts the steps done before the restart)",
            dir.display(),
            restart.steps_done
        )));
    }
    Ok(restart)
}

/// Where the time of a run went.
struct Phases {
    /// Planning's compilation, or loading the compiled code from the cache.
    compile: Duration,
    /// Allocating and initialising the fields, and reading `--input` files.
    initialise: Duration,
    /// The time loop.
    run: Duration,
    /// Moving fields between host and device.
    transfer: Duration,
    /// Writing the outputs.
    write: Duration,
}

impl Phases {
    /// `compile 0.412 s, initialise 0.003 s, run 0.012 s, write 0.001 s` (and `transfer`
    /// when a device moved fields).
    fn text(&self) -> String {
        let mut phases = vec![
            ("compile", self.compile),
            ("initialise", self.initialise),
            ("run", self.run),
        ];
        if !self.transfer.is_zero() {
            phases.push(("transfer", self.transfer));
        }
        phases.push(("write", self.write));
        phases
            .iter()
            .map(|(name, time)| format!("{name} {:.3} s", time.as_secs_f64()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Writes every output; returns a line per picture saying the range of values it drew.
fn write_outputs(
    session: &Session,
    fields: &FieldSet,
    outputs: &[Output],
) -> Result<Vec<String>, Error> {
    let mut lines = Vec::new();
    for output in outputs {
        let drawn =
            files::write_field(session, fields, &output.field, output.format, &output.path)?;
        if let Some(png) = drawn {
            let slice = png
                .slice
                .map(|s| format!(" (the slice {s})"))
                .unwrap_or_default();
            let mut line = format!(
                "{}: `{}`{slice} from {} to {}",
                output.path.display(),
                output.field.name,
                compact(png.range.min),
                compact(png.range.max)
            );
            if png.range.nan_count + png.range.inf_count > 0 {
                line.push_str(&format!(
                    ", {} NaN and {} infinite values",
                    png.range.nan_count, png.range.inf_count
                ));
            }
            lines.push(line);
        }
    }
    Ok(lines)
}

/// Every `--output`, `--png` and `--vti`, checked before anything runs: fields' outputs, and
/// receivers' (`--output NAME=FILE` naming a receiver).
fn resolve_outputs(
    session: &Session,
    args: &RunArgs,
) -> Result<(Vec<Output>, Vec<SeriesOutput>), Error> {
    let mut outputs = Vec::new();
    let mut series = Vec::new();
    for item in &args.outputs {
        let name = item.field.as_deref().unwrap_or_default();
        if let Some(receiver) = session.program().receiver_by_name(name) {
            let format = SeriesFormat::of(&item.path, name)?;
            files::check_destination(&item.path)?;
            series.push(SeriesOutput {
                receiver,
                format,
                path: item.path.clone(),
            });
        }
    }
    for (list, forced) in [
        (&args.outputs, None),
        (&args.pngs, Some(Format::Png)),
        (&args.vtis, Some(Format::Vti)),
    ] {
        for item in list {
            if forced.is_none()
                && item
                    .field
                    .as_deref()
                    .is_some_and(|name| session.program().receiver_by_name(name).is_some())
            {
                continue;
            }
            let field = match &item.field {
                Some(name) => session.field(name)?,
                None => session.main_field(),
            };
            let format = match forced {
                Some(format) => format,
                None => Format::of(&item.path)?,
            };
            files::check_output(session, &field, format, &item.path)?;
            outputs.push(Output {
                field,
                format,
                path: item.path.clone(),
            });
        }
    }
    Ok((outputs, series))
}

/// `heat: 100 steps on 256x256 (f32) with cpu/parallel in 0.012 s: 0.54 GCells/s; total = 1.2e3 (step 99)`.
fn summary(session: &Session, backend: &str, plan: &str, report: &RunReport) -> String {
    let seconds = report.compute_time.as_secs_f64();
    let mut line = format!(
        "{}: {} step{} on {} ({}) with {backend}/{plan} in {seconds:.3} s",
        session.name(),
        report.steps,
        if report.steps == 1 { "" } else { "s" },
        session.grid_text(),
        session.updated_types_text()
    );
    if let Some(gcells) = speed(session, report) {
        line.push_str(&format!(": {gcells:.3} GCells/s"));
    }
    let mut last: Vec<&ReductionRecord> = Vec::new();
    for record in &report.reductions {
        match last.iter_mut().find(|r| r.name == record.name) {
            Some(slot) => *slot = record,
            None => last.push(record),
        }
    }
    for record in last {
        line.push_str(&format!(
            "; {} = {} (step {})",
            record.name,
            ReductionValue::of(session, record).compact(),
            record.step
        ));
    }
    if report.stopped_early {
        line.push_str(&format!(
            "; stopped by `until` after {} steps",
            report.steps
        ));
    }
    line
}

/// The summary as one JSON object: what ran (`plan` and whether it was `tuned`), how far,
/// the seconds of each phase, GCells/s, and every reduction evaluation.
fn json_summary(
    session: &Session,
    backend: &str,
    plan: &str,
    tuned: bool,
    report: &RunReport,
    phases: &Phases,
) -> serde_json::Value {
    json::report(
        session,
        backend,
        serde_json::json!({
            "plan": plan,
            "tuned": tuned,
            "steps": report.steps,
            "stopped_early": report.stopped_early,
            "compile_seconds": phases.compile.as_secs_f64(),
            "initialise_seconds": phases.initialise.as_secs_f64(),
            "seconds": phases.run.as_secs_f64(),
            "transfer_seconds": phases.transfer.as_secs_f64(),
            "ranks": super::bench::rank_times_json(&report.ranks),
            "write_seconds": phases.write.as_secs_f64(),
            "gcells_per_s": speed(session, report),
            "reductions": reductions::json(session, &report.reductions),
        }),
    )
}

/// GCells/s of the time loop, when it ran steps for a measurable time.
fn speed(session: &Session, report: &RunReport) -> Option<f64> {
    let seconds = report.compute_time.as_secs_f64();
    (report.steps > 0 && seconds > 0.0)
        .then(|| gcells_per_s(session.bound(), report.steps, seconds))
}

/// A number in few characters with 7 significant digits: `1.2e3`, `0.5`, `-3e-7`.
pub fn compact(value: f64) -> String {
    if value == 0.0 || !value.is_finite() {
        return format!("{value}");
    }
    let magnitude = value.abs().log10().floor();
    let text = if (-3.0..6.0).contains(&magnitude) {
        format!("{value:.*}", (6.0 - magnitude) as usize)
    } else {
        format!("{value:.6e}")
    };
    let (mantissa, exponent) = text
        .split_once('e')
        .map_or((text.as_str(), None), |(m, e)| (m, Some(e)));
    let mantissa = if mantissa.contains('.') {
        mantissa.trim_end_matches('0').trim_end_matches('.')
    } else {
        mantissa
    };
    match exponent {
        Some(e) => format!("{mantissa}e{e}"),
        None => mantissa.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::compact;

    #[test]
    fn compact_numbers_keep_seven_digits_and_drop_zeros() {
        assert_eq!(compact(1200.0), "1200");
        assert_eq!(compact(0.5), "0.5");
        assert_eq!(compact(-3e-7), "-3e-7");
        assert_eq!(compact(1.234_567_89e9), "1.234568e9");
        assert_eq!(compact(0.001_234_567_8), "0.001234568");
        assert_eq!(compact(0.0), "0");
        assert_eq!(compact(f64::NAN), "NaN");
    }
}
