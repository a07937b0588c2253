//! Checkpoints of a run: every field, the reductions' state (the latest value of each and
//! every record so far), each receiver's points and recordings so far, and the number of
//! steps done, so that a run continued from one is
//! bitwise the run that was never stopped.
//!
//! A checkpoint directory holds one complete checkpoint per `step-NNNNNNNNNNNN` directory and
//! a `LATEST` file naming the newest. A new checkpoint is written into a temporary directory,
//! renamed into place, and only then named by `LATEST` (itself replaced atomically); older
//! ones are removed after that. A run killed at any moment leaves `LATEST` naming a complete
//! checkpoint (or no `LATEST` before the first one is complete).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tessera_io::IoError;
use tessera_ir::ReceiverPoints;
use tessera_runtime::{FieldSet, ReceiverRecord, ReductionRecord, RunState, receiver_series};

use crate::error::Error;
use crate::session::Session;

/// The format written into every manifest; a checkpoint of another format is refused.
pub const FORMAT: &str = "tessera-checkpoint-1";

/// The file naming the newest complete checkpoint of a directory.
const LATEST: &str = "LATEST";

/// A checkpoint's description (`manifest.json`). Reduction values are kept as IEEE-754 bit
/// patterns: exact, and NaN or infinite values survive.
#[derive(Debug, Serialize, Deserialize)]
struct Manifest {
    format: String,
    tessera_version: String,
    program: String,
    /// BLAKE3 of the printed (checked) program.
    program_hash: String,
    grid: Vec<usize>,
    /// Every parameter's bound value, as `name=value`.
    params: Vec<String>,
    steps_done: u64,
    /// The latest value of each reduction, in program order (bits; `None`: not computed yet).
    latest: Vec<Option<u64>>,
    /// Every reduction record so far: (step, name, value bits).
    records: Vec<(u64, String, u64)>,
    /// The file of each field, in program order.
    fields: Vec<String>,
    /// The file and length of each input table, in program order (tables are part of the
    /// run: a restart reads the same values).
    tables: Vec<(String, usize)>,
    /// Each receiver, in program order: its points in the run and its recordings so far.
    #[serde(default)]
    receivers: Vec<SavedReceiver>,
}

/// A receiver in a checkpoint: the file of its values so far, of shape `(steps, points)`.
#[derive(Debug, Serialize, Deserialize)]
struct SavedReceiver {
    file: String,
    /// Its points in the run (those given with the run for a receiver `at input`).
    points: Vec<Vec<i64>>,
    /// The step after which each recording was made.
    steps: Vec<u64>,
}

/// What a run continues from.
#[derive(Debug)]
pub struct Checkpoint {
    /// Steps done when it was written: the continued run's first step.
    pub steps_done: u64,
    /// Every field.
    pub fields: FieldSet,
    /// The reductions' latest values (the stop condition reads them).
    pub state: RunState,
    /// Every reduction record up to `steps_done`.
    pub records: Vec<ReductionRecord>,
    /// Every receiver recording up to `steps_done`.
    pub recordings: Vec<ReceiverRecord>,
}

/// The records of a run so far, as a checkpoint keeps them.
#[derive(Clone, Copy, Debug)]
pub struct History<'a> {
    /// Every reduction record.
    pub records: &'a [ReductionRecord],
    /// Every receiver recording.
    pub recordings: &'a [ReceiverRecord],
}

/// Writes a checkpoint of `session`'s run after `steps_done` steps into `dir` (created when
/// missing) and makes it the newest; returns its directory.
pub fn write(
    dir: &Path,
    session: &Session,
    steps_done: u64,
    fields: &FieldSet,
    state: &RunState,
    history: History<'_>,
) -> Result<PathBuf, Error> {
    let io = |source| IoError::Write {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let name = format!("step-{steps_done:012}");
    let staging = dir.join(format!(".{name}.partial-{}", std::process::id()));
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(io)?;
    }
    std::fs::create_dir(&staging).map_err(io)?;
    let mut manifest = manifest(session, steps_done, state, history.records);
    for ((_, len), table) in manifest.tables.iter_mut().zip(&fields.tables) {
        *len = table.len();
    }
    let program = session.program();
    let series = receiver_series(program, history.recordings);
    for ((saved, series), (id, receiver)) in (manifest.receivers.iter_mut())
        .zip(&series)
        .zip(program.receivers.iter())
    {
        saved.points = match &receiver.points {
            ReceiverPoints::Fixed(points) => points.clone(),
            ReceiverPoints::Input => (fields.receiver_points.get(id.index()).cloned())
                .flatten()
                .unwrap_or_default(),
        };
        saved.steps.clone_from(&series.steps);
        let shape = [saved.steps.len(), saved.points.len()];
        tessera_io::write_npy(&staging.join(&saved.file), &series.values, &shape)?;
    }
    for (file, buffer) in manifest.fields.iter().zip(&fields.buffers) {
        tessera_io::write_npy(&staging.join(file), buffer, &fields.shape)?;
    }
    for ((file, len), table) in manifest.tables.iter().zip(&fields.tables) {
        tessera_io::write_npy(&staging.join(file), table, &[*len])?;
    }
    let text = serde_json::to_string_pretty(&manifest).expect("a manifest serialises");
    tessera_io::write_text(&staging.join("manifest.json"), &text)?;
    let complete = dir.join(&name);
    if complete.exists() {
        std::fs::remove_dir_all(&complete).map_err(io)?;
    }
    std::fs::rename(&staging, &complete).map_err(io)?;
    tessera_io::write_text(&dir.join(LATEST), &format!("{name}\n"))?;
    remove_older(dir, &name).map_err(io)?;
    Ok(complete)
}

/// Whether [`read`] reads the fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fields {
    /// Every field.
    Read,
    /// None (a process that does not hold the fields: an MPI rank but rank 0); the checkpoint's
    /// fields set holds no field buffers.
    Skip,
}

/// Reads the newest checkpoint of `dir` for `session`, refusing one of another program, grid,
/// parameter value, Tessera version or format.
pub fn read(dir: &Path, session: &Session, with_fields: Fields) -> Result<Checkpoint, Error> {
    let refuse =
        |why: String| Error::Usage(format!("cannot restart from {}: {why}", dir.display()));
    let latest = std::fs::read_to_string(dir.join(LATEST))
        .map_err(|e| refuse(format!("no complete checkpoint ({LATEST}: {e})")))?;
    let name = latest.trim();
    if !name.starts_with("step-") || name.contains(['/', '\\']) {
        return Err(refuse(format!("{LATEST} names `{name}`, not a checkpoint")));
    }
    let at = dir.join(name);
    let text = std::fs::read_to_string(at.join("manifest.json"))
        .map_err(|e| refuse(format!("{name}/manifest.json: {e}")))?;
    let saved: Manifest = serde_json::from_str(&text).map_err(|e| {
        refuse(format!(
            "{name}/manifest.json is not a checkpoint manifest: {e}"
        ))
    })?;
    let expected = manifest(
        session,
        saved.steps_done,
        &RunState::new(session.program()),
        &[],
    );
    compatible(&saved, &expected).map_err(refuse)?;
    let program = session.program();
    let shape = &session.bound().extents;
    let mut buffers = Vec::new();
    let field_files = match with_fields {
        Fields::Read => saved.fields.as_slice(),
        Fields::Skip => &[],
    };
    for (file, field) in field_files.iter().zip(program.fields.values()) {
        buffers.push(tessera_io::read_npy(
            &at.join(file),
            &field.name,
            field.ty,
            shape,
        )?);
    }
    let mut tables = Vec::new();
    for (((file, len), table), expected) in (saved.tables.iter())
        .zip(program.tables.values())
        .zip(&expected.tables)
    {
        if *file != expected.0 {
            return Err(refuse("its tables are not this program's".into()));
        }
        tables.push(tessera_io::read_npy(
            &at.join(file),
            &table.name,
            table.ty,
            &[*len],
        )?);
    }
    let mut receiver_points = vec![None; program.receivers.len()];
    let mut recordings = Vec::new();
    for ((id, receiver), saved) in program.receivers.iter().zip(&saved.receivers) {
        let ty = program.fields[receiver.field].ty;
        let n = saved.points.len();
        let shape = [saved.steps.len(), n];
        let values = tessera_io::read_npy(&at.join(&saved.file), &receiver.name, ty, &shape)?;
        for (row, &step) in saved.steps.iter().enumerate() {
            let indices: Vec<usize> = (row * n..(row + 1) * n).collect();
            recordings.push(ReceiverRecord {
                step,
                receiver: id,
                name: receiver.name.clone(),
                values: values.gather(&indices),
            });
        }
        receiver_points[id.index()] = Some(saved.points.clone());
    }
    recordings.sort_by_key(|r: &ReceiverRecord| (r.step, r.receiver.index()));
    let latest = saved.latest.iter().map(|v| v.map(f64::from_bits)).collect();
    let records = (saved.records.into_iter())
        .map(|(step, name, bits)| ReductionRecord {
            step,
            name,
            value: f64::from_bits(bits),
        })
        .collect();
    Ok(Checkpoint {
        steps_done: saved.steps_done,
        fields: FieldSet {
            shape: session.bound().extents.clone(),
            buffers,
            tables,
            receiver_points,
        },
        state: RunState::resumed(program, latest).map_err(refuse)?,
        records,
        recordings,
    })
}

/// The manifest of `session`'s run after `steps_done` steps.
fn manifest(
    session: &Session,
    steps_done: u64,
    state: &RunState,
    records: &[ReductionRecord],
) -> Manifest {
    let program = session.program();
    let printed = tessera_ir::print_program(program);
    let params = (program.params.iter())
        .map(|(id, p)| format!("{}={:?}", p.name, session.bound().param(id)))
        .collect();
    Manifest {
        format: FORMAT.into(),
        tessera_version: env!("CARGO_PKG_VERSION").into(),
        program: session.name().into(),
        program_hash: blake3::hash(printed.as_bytes()).to_hex().to_string(),
        grid: session.bound().extents.clone(),
        params,
        steps_done,
        latest: state.latest().iter().map(|v| v.map(f64::to_bits)).collect(),
        records: (records.iter())
            .map(|r| (r.step, r.name.clone(), r.value.to_bits()))
            .collect(),
        fields: program
            .fields
            .values()
            .map(|f| format!("{}.npy", f.name))
            .collect(),
        tables: (program.tables.values())
            .map(|t| (format!("table.{}.npy", t.name), 0))
            .collect(),
        receivers: (program.receivers.values())
            .map(|r| SavedReceiver {
                file: format!("receiver.{}.npy", r.name),
                points: Vec::new(),
                steps: Vec::new(),
            })
            .collect(),
    }
}

/// Why `saved` cannot continue the run `expected` describes, if it cannot.
fn compatible(saved: &Manifest, expected: &Manifest) -> Result<(), String> {
    let differ = |what: &str, saved: &dyn std::fmt::Debug, here: &dyn std::fmt::Debug| {
        Err(format!("its {what} is {saved:?}, this run's is {here:?}"))
    };
    if saved.format != expected.format {
        return differ("format", &saved.format, &expected.format);
    }
    if saved.tessera_version != expected.tessera_version {
        return differ(
            "Tessera version",
            &saved.tessera_version,
            &expected.tessera_version,
        );
    }
    if saved.program != expected.program || saved.program_hash != expected.program_hash {
        return Err(format!(
            "it was written by another program (`{}`, or the same name with other text)",
            saved.program
        ));
    }
    if saved.grid != expected.grid {
        return differ("grid", &saved.grid, &expected.grid);
    }
    if saved.params != expected.params {
        return differ("parameter values", &saved.params, &expected.params);
    }
    if saved.fields != expected.fields
        || saved.latest.len() != expected.latest.len()
        || saved.tables.len() != expected.tables.len()
        || saved.receivers.len() != expected.receivers.len()
    {
        return Err("its fields or reductions are not this program's".into());
    }
    Ok(())
}

/// Removes the checkpoints of `dir` other than `keep` (and stale partial ones of this
/// process).
fn remove_older(dir: &Path, keep: &str) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("step-") && name != keep && entry.path().is_dir() {
            std::fs::remove_dir_all(entry.path())?;
        }
    }
    Ok(())
}
