//! The stage dependency graph: which stage produces each value a stage reads.

use tessera_ir::{Field, Id, Stage};

use crate::check::CheckedProgram;

/// Where the values a stage reads from one field come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Producer {
    /// An earlier stage of the same step.
    SameStep(Id<Stage>),
    /// The last stage writing the field, in the previous step (the initial value in step 0).
    PreviousStep(Id<Stage>),
    /// Nobody writes the field: an input or coefficient.
    Input,
}

/// One edge of the graph: `consumer` reads `field`, last written by `producer`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dependency {
    /// The reading stage.
    pub consumer: Id<Stage>,
    /// The field read.
    pub field: Id<Field>,
    /// Its latest writer.
    pub producer: Producer,
}

/// Every dependency of every stage, in stage order then field order.
///
/// A stage reading a field that it also writes depends on the latest writer before it (Jacobi
/// semantics: reads see pre-stage values).
pub fn dependencies(checked: &CheckedProgram) -> Vec<Dependency> {
    let program = checked.program();
    let mut writers: Vec<Vec<Id<Stage>>> = vec![Vec::new(); program.fields.len()];
    for (id, stage) in program.stages.iter() {
        for field in stage.outputs() {
            writers[field.index()].push(id);
        }
    }
    let mut edges = Vec::new();
    for consumer in program.stages.ids() {
        for (field, _) in checked.stage_footprints(consumer) {
            let stages = &writers[field.index()];
            let producer = match stages.iter().rev().find(|s| **s < consumer) {
                Some(s) => Producer::SameStep(*s),
                None => match stages.last() {
                    Some(s) => Producer::PreviousStep(*s),
                    None => Producer::Input,
                },
            };
            edges.push(Dependency {
                consumer,
                field: *field,
                producer,
            });
        }
    }
    edges
}
