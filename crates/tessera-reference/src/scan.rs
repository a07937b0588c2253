//! Stages with a scan: each line of the stage's domain along the scan axis walked from its low
//! end, the running value combined one point at a time (THE order every backend follows).

use std::collections::HashMap;

use tessera_ir::{ExprKind, Field, Id, Scan, Stage};
use tessera_runtime::{BackendError, Buffer};

use crate::eval::Evaluator;
use crate::ops;
use crate::rows::{Row, rows};
use crate::step::Interpreter;
use crate::value::{Column, Value, internal};

/// Turns a scan's operand values on a row into the values the scan writes there, carrying the
/// running values of its lines from row to row (or point to point along a row).
pub(crate) type Carry<'c> = dyn FnMut(&LineScan, &Column) -> Result<Column, BackendError> + 'c;

/// One scan of a stage as the interpreter runs it.
pub(crate) struct LineScan {
    /// The field written.
    field: Id<Field>,
    /// Its operation, axis and exclusiveness.
    scan: Scan,
    /// The checked running value `combine(acc, operand)` (below any rounding to storage).
    running: tessera_ir::ExprId,
    /// The scanned operand.
    operand: tessera_ir::ExprId,
}

impl LineScan {
    /// The scan of `field` by the checked assigned `value`.
    pub(crate) fn new(
        program: &tessera_ir::Program,
        field: Id<Field>,
        scan: Scan,
        value: tessera_ir::ExprId,
    ) -> LineScan {
        LineScan {
            field,
            scan,
            running: Scan::running(program, value),
            operand: Scan::operand(program, value),
        }
    }
}

impl Interpreter<'_> {
    /// Runs `stage`, which has scans along `axis`, at step `t` from the pre-stage values:
    /// the rows of its domain in lexicographic order (so each line's points come in ascending
    /// order along `axis`), each scan's running value carried from point to point of its line.
    pub(crate) fn run_scan_stage(
        &self,
        storage: &mut [Buffer],
        stage: Id<Stage>,
        t: u64,
        step_values: &[Option<f64>],
        axis: usize,
    ) -> Result<(), BackendError> {
        let program = self.bound.program();
        let outputs = program.stages[stage].outputs();
        let domain_rows = rows(self.bound.stage_domain(stage));
        let fast = program.dims() - 1;
        let mut results = Vec::with_capacity(domain_rows.len());
        {
            let evaluator = self.stage_evaluator(storage, stage, t, step_values);
            // The running values of the lines along a slower axis, by the row's other indices.
            let mut carried: HashMap<(Id<Field>, Vec<i64>), Column> = HashMap::new();
            for row in &domain_rows {
                let mut carry = |scan: &LineScan, operand: &Column| {
                    if axis == fast {
                        return self.scan_row(&evaluator, scan, operand);
                    }
                    let mut line = row.prefix.clone();
                    line.remove(axis);
                    let start = match carried.remove(&(scan.field, line.clone())) {
                        Some(acc) => acc,
                        None => self.identity(&evaluator, scan, row.len),
                    };
                    let next = combine(program, scan.running, &start, operand)?;
                    carried.insert((scan.field, line), next.clone());
                    Ok(if scan.scan.exclusive { start } else { next })
                };
                results.push(
                    self.row_writes(&evaluator, stage, &outputs, row, &mut carry)?
                        .0,
                );
            }
        }
        self.write_rows(storage, &outputs, &domain_rows, results.into_iter())?;
        Ok(())
    }

    /// The values `line`'s field gets on `row`: its operand evaluated there, turned by `carry`
    /// into the values the scan writes, rounded to the field's storage type.
    pub(crate) fn scanned(
        &self,
        evaluator: &Evaluator,
        row: &Row,
        locals: &[Option<Column>],
        line: &LineScan,
        carry: &mut Carry,
    ) -> Result<Column, BackendError> {
        let operand = evaluator.eval(row, locals, line.operand)?;
        self.stored(line.field, carry(line, &operand)?)
    }

    /// The values a scan along the fastest axis writes on one row, from its operand's values.
    fn scan_row(
        &self,
        evaluator: &Evaluator,
        scan: &LineScan,
        operand: &Column,
    ) -> Result<Column, BackendError> {
        let program = self.bound.program();
        let mut acc = self.identity(evaluator, scan, 1);
        let mut written = Vec::with_capacity(operand.len());
        for k in 0..operand.len() {
            let next = combine(program, scan.running, &acc, &operand.element(k))?;
            written.push(if scan.scan.exclusive {
                std::mem::replace(&mut acc, next)
            } else {
                acc = next;
                acc.clone()
            });
        }
        Column::concat(&written, operand.ty())
    }

    /// `len` copies of the scan's identity in the type its running value is evaluated in.
    fn identity(&self, evaluator: &Evaluator, scan: &LineScan, len: usize) -> Column {
        let ty = evaluator.ty(scan.running);
        Column::splat(Value::from_constant(scan.scan.identity(ty), ty), len)
    }

    /// A scan's values as `field` stores them: rounded to its storage type, if it has one.
    fn stored(&self, field: Id<Field>, values: Column) -> Result<Column, BackendError> {
        match self.precision.ty(self.bound.program().fields[field].ty) {
            stored if stored.is_storage_only() => ops::round_to_storage(values, stored),
            _ => Ok(values),
        }
    }
}

/// `running`'s combination (`+`, `min` or `max`) of the accumulated values `acc` with the
/// operand values `operand`, point by point.
fn combine(
    program: &tessera_ir::Program,
    running: tessera_ir::ExprId,
    acc: &Column,
    operand: &Column,
) -> Result<Column, BackendError> {
    match &program.exprs[running].kind {
        ExprKind::Binary(op, ..) => ops::binary(*op, acc, operand),
        ExprKind::Call(function, _) => ops::call(*function, &[acc.clone(), operand.clone()]),
        _ => Err(internal("a scan's value is not a combination")),
    }
}
