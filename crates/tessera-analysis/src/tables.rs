//! What a run needs of its input tables and of the step counter: the steps' reach into each
//! table, checked against the tables given before anything runs, and which stages read `t`.

use tessera_ir::{ExprId, ExprKind, Id, Program, ReductionPlacement, Stage, Statement, Table};

use crate::check::visit;

/// The smallest and largest constant `k` of the reads `table[t + k]` of `table`, or `None`
/// when the program never reads it.
pub fn table_reach(program: &Program, table: Id<Table>) -> Option<(i64, i64)> {
    program
        .exprs
        .values()
        .filter_map(|e| match e.kind {
            ExprKind::TableRead {
                table: read,
                offset,
            } if read == table => Some(offset),
            _ => None,
        })
        .fold(None, |reach, k| match reach {
            None => Some((k, k)),
            Some((lo, hi)) => Some((lo.min(k), hi.max(k))),
        })
}

/// Why the tables of `lengths` (one per table, in table order) cannot serve steps
/// `first_step .. first_step + steps`: the first table too short or read before its start, by
/// name, length and the steps that need it; `None` when they all can.
pub fn table_shortfall(
    program: &Program,
    lengths: &[usize],
    first_step: u64,
    steps: u64,
) -> Option<String> {
    if steps == 0 {
        return None;
    }
    let last_step = first_step as i128 + steps as i128 - 1;
    program.tables.iter().find_map(|(id, table)| {
        let (lo, hi) = table_reach(program, id)?;
        let length = lengths.get(id.index()).copied().unwrap_or(0);
        let first_index = first_step as i128 + lo as i128;
        let last_index = last_step + hi as i128;
        if first_index < 0 {
            return Some(format!(
                "the table `{}` is read at index {first_index} (`{}[t - {}]` at step {first_step}); start the run at step {} or later",
                table.name,
                table.name,
                -lo,
                -lo
            ));
        }
        (last_index >= length as i128).then(|| {
            let what = if hi == 0 {
                String::new()
            } else {
                format!(" (`{}[t + {hi}]`)", table.name)
            };
            format!(
                "the table `{}` has {length} value{} but steps {first_step}..{} read up to index {last_index}{what}: give it at least {} values, or run fewer steps",
                table.name,
                if length == 1 { "" } else { "s" },
                last_step + 1,
                last_index + 1
            )
        })
    })
}

/// The tables `stage` reads (its statements and in-stage reductions), in table order.
pub fn stage_tables(program: &Program, stage: Id<Stage>) -> Vec<Id<Table>> {
    let mut tables = Vec::new();
    for root in stage_roots(program, stage) {
        visit(program, root, &mut |e| {
            if let ExprKind::TableRead { table, .. } = e.kind {
                tables.push(table);
            }
        });
    }
    tables.sort();
    tables.dedup();
    tables
}

/// Whether `stage` (its in-stage reductions included) depends on the step counter: it reads
/// `t` or an input table (indexed by `t`).
pub fn stage_reads_step(program: &Program, stage: Id<Stage>) -> bool {
    let mut reads = false;
    for root in stage_roots(program, stage) {
        visit(program, root, &mut |e| {
            reads |= matches!(e.kind, ExprKind::Step | ExprKind::TableRead { .. });
        });
    }
    reads
}

/// The root expressions of `stage`: its statements' values and its in-stage reductions'.
fn stage_roots(program: &Program, stage: Id<Stage>) -> impl Iterator<Item = ExprId> + '_ {
    let statements = program.stages[stage].body.iter().map(|s| match s {
        Statement::Let { value, .. } | Statement::Assign { value, .. } => *value,
    });
    let reductions = (program.reductions.values())
        .filter(move |r| r.placement == ReductionPlacement::InStage(stage))
        .map(|r| r.value);
    statements.chain(reductions)
}
