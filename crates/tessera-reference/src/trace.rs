//! Access tracing: the offsets at which the interpreter actually reads each field in each
//! stage, for footprint-soundness tests.

use std::collections::BTreeSet;
use std::sync::Mutex;

use tessera_analysis::BoundProgram;
use tessera_ir::{Field, Id, Stage};
use tessera_runtime::{BackendError, FieldSet};

use crate::eval::ReadObserver;
use crate::precision::{Precision, check_fields};
use crate::step::Interpreter;

/// One traced read: the stage, the field and the offset it was read at.
pub type TracedRead = (Id<Stage>, Id<Field>, Vec<i32>);

/// Collects distinct `(stage, field, offset)` reads.
#[derive(Default)]
struct Recorder {
    reads: Mutex<BTreeSet<TracedRead>>,
}

impl ReadObserver for Recorder {
    fn record(&self, stage: Option<Id<Stage>>, field: Id<Field>, offset: &[i32]) {
        if let Some(stage) = stage {
            let mut reads = self
                .reads
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            reads.insert((stage, field, offset.to_vec()));
        }
    }
}

/// Runs step `step` (on a copy of `fields`) in exact mode and returns every distinct
/// `(stage, field, offset)` read by the stages' statements and due in-stage reductions, sorted.
/// Stages with an empty domain read nothing.
pub fn trace_reads(
    bound: &BoundProgram,
    fields: &FieldSet,
    step: u64,
) -> Result<Vec<TracedRead>, BackendError> {
    check_fields(bound, fields)?;
    tessera_runtime::check_tables(bound, fields, step, 1)?;
    let recorder = Recorder::default();
    let interpreter = Interpreter {
        bound,
        precision: Precision::Exact,
        observer: Some(&recorder),
        pool: None,
        tables: &fields.tables,
    };
    let mut storage = fields.buffers.clone();
    let program = bound.program();
    let due: Vec<_> = (program.reductions.iter())
        .filter(|(_, r)| tessera_runtime::reduce::due(r.every, step))
        .map(|(id, _)| id)
        .collect();
    interpreter.run_step(&mut storage, step, &due)?;
    let reads = recorder
        .reads
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    Ok(reads.into_iter().collect())
}
