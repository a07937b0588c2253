//! The expression evaluator: one elaborated expression over one row of points, node by node in
//! each node's elaborated type (see [`crate::ops`] for the element semantics).

use tessera_analysis::BoundProgram;
use tessera_ir::half::f32_from_storage_bits;
use tessera_ir::{Border, ExprId, ExprKind, Field, Id, ScalarType, Stage, Table};
use tessera_runtime::{BackendError, Buffer};

use crate::border::{Landing, land};
use crate::ops;
use crate::precision::Precision;
use crate::rows::Row;
use crate::value::{Column, Element, Value, internal, with_element_type};

/// Sees every field read the evaluator performs (used to trace footprints).
pub(crate) trait ReadObserver: Sync {
    /// The evaluator read `field` at `offset` from every point of a row, in `stage` (`None` for
    /// after-step reductions).
    fn record(&self, stage: Option<Id<Stage>>, field: Id<Field>, offset: &[i32]);
}

/// Everything an expression may refer to, fixed for one stage (or reduction, initial value,
/// stop condition) of one step.
pub(crate) struct Evaluator<'a> {
    bound: &'a BoundProgram,
    precision: Precision,
    fields: &'a [Buffer],
    tables: &'a [Buffer],
    borders: Vec<Option<Border>>,
    stage: Option<Id<Stage>>,
    step: u64,
    reduction_values: &'a [Option<f64>],
    observer: Option<&'a dyn ReadObserver>,
}

impl<'a> Evaluator<'a> {
    /// An evaluator reading `fields` (the interpreter's storage, or none) with the fields' own
    /// borders, at step 0, with no reduction values.
    pub(crate) fn new(bound: &'a BoundProgram, precision: Precision, fields: &'a [Buffer]) -> Self {
        let borders = bound.program().fields.values().map(|f| f.border).collect();
        Evaluator {
            bound,
            precision,
            fields,
            tables: &[],
            borders,
            stage: None,
            step: 0,
            reduction_values: &[],
            observer: None,
        }
    }

    /// Reads as `stage` does (its border overrides apply).
    pub(crate) fn in_stage(mut self, stage: Id<Stage>) -> Self {
        let program = self.bound.program();
        self.borders = program
            .fields
            .ids()
            .map(|f| program.stages[stage].border_of(f, program))
            .collect();
        self.stage = Some(stage);
        self
    }

    /// Reads input tables from `tables` (by table index).
    pub(crate) fn with_tables(mut self, tables: &'a [Buffer]) -> Self {
        self.tables = tables;
        self
    }

    /// Sets the step counter `t`.
    pub(crate) fn at_step(mut self, step: u64) -> Self {
        self.step = step;
        self
    }

    /// Sets the reduction values (by reduction index): the latest ones for stop conditions,
    /// the step's own for stages reading the reductions of earlier stages.
    pub(crate) fn with_reduction_values(mut self, values: &'a [Option<f64>]) -> Self {
        self.reduction_values = values;
        self
    }

    /// Reports every read to `observer`.
    pub(crate) fn observed_by(mut self, observer: Option<&'a dyn ReadObserver>) -> Self {
        self.observer = observer;
        self
    }

    /// The type `expr` is evaluated in (`f16`/`bf16` values as `f32`).
    pub(crate) fn ty(&self, expr: ExprId) -> ScalarType {
        self.precision
            .ty(self.bound.checked().ty(expr))
            .arithmetic_type()
    }

    /// Evaluates `expr` at every point of `row`; `locals` are the stage's bound `let`s.
    pub(crate) fn eval(
        &self,
        row: &Row,
        locals: &[Option<Column>],
        expr: ExprId,
    ) -> Result<Column, BackendError> {
        let ty = self.ty(expr);
        let column = match &self.bound.program().exprs[expr].kind {
            ExprKind::Literal(c) => Column::splat(Value::from_constant(*c, ty), row.len),
            ExprKind::Param(p) => {
                Column::splat(Value::from_constant(self.bound.param(*p), ty), row.len)
            }
            ExprKind::Read { field, offset } => self.read(row, *field, offset)?,
            ExprKind::Coord(axis) => coordinate(row, *axis),
            ExprKind::Step => Column::splat(Value::I64(self.step as i64), row.len),
            ExprKind::TableRead { table, offset } => self.table_read(*table, *offset, row.len)?,
            ExprKind::Local(local) => locals
                .get(local.index())
                .and_then(Option::as_ref)
                .cloned()
                .ok_or_else(|| {
                    internal(format!("local #{} read before its `let`", local.index()))
                })?,
            ExprKind::ScanAccumulator(_) => {
                return Err(internal(
                    "a scan's running value evaluated as an expression",
                ));
            }
            ExprKind::ReductionValue(r) => {
                let value = self.reduction_values.get(r.index()).copied().flatten();
                let value = value.ok_or_else(|| {
                    internal(format!("reduction #{} has no value yet", r.index()))
                })?;
                Column::splat(Value::F64(value), row.len)
            }
            ExprKind::Unary(op, a) => ops::unary(*op, &self.eval(row, locals, *a)?)?,
            ExprKind::Binary(op, a, b) => {
                let a = self.eval(row, locals, *a)?;
                let b = self.eval(row, locals, *b)?;
                ops::binary(*op, &a, &b)?
            }
            ExprKind::Select {
                cond,
                then,
                otherwise,
            } => {
                let cond = self.eval(row, locals, *cond)?;
                let then = self.eval(row, locals, *then)?;
                let otherwise = self.eval(row, locals, *otherwise)?;
                ops::select(&cond, &then, &otherwise)?
            }
            ExprKind::Call(function, args) => {
                let args = args
                    .iter()
                    .map(|a| self.eval(row, locals, *a))
                    .collect::<Result<Vec<_>, _>>()?;
                ops::call(*function, &args)?
            }
            ExprKind::Cast(target, a) => {
                let value = ops::cast(&self.eval(row, locals, *a)?, ty)?;
                match self.precision.ty(*target) {
                    stored if stored.is_storage_only() => ops::round_to_storage(value, stored)?,
                    _ => value,
                }
            }
        };
        if column.ty() != ty {
            return Err(internal(format!(
                "expression #{} gave `{}` values, elaborated as `{ty}`",
                expr.index(),
                column.ty()
            )));
        }
        Ok(column)
    }

    /// The values of `field` at `offset` from every point of `row`, borders applied per axis.
    /// `table[t + offset]` for every point of a row of `len` points.
    fn table_read(
        &self,
        table: Id<Table>,
        offset: i64,
        len: usize,
    ) -> Result<Column, BackendError> {
        let buffer = (self.tables.get(table.index()))
            .ok_or_else(|| internal("a table read with no table storage"))?;
        let index = usize::try_from(self.step as i64 + offset)
            .ok()
            .filter(|i| *i < buffer.len())
            .ok_or_else(|| internal("a table read outside the checked range"))?;
        with_element_type!(buffer.ty(), T => strided::<T>(buffer, index, 0, len),
            bool => Err(internal("a `bool` table buffer")))
    }

    fn read(&self, row: &Row, field: Id<Field>, offset: &[i32]) -> Result<Column, BackendError> {
        if let Some(observer) = self.observer {
            observer.record(self.stage, field, offset);
        }
        let extents = &self.bound.extents;
        let dims = extents.len();
        let border = self.borders[field.index()];
        let buffer = self
            .fields
            .get(field.index())
            .ok_or_else(|| internal("a read with no field storage"))?;
        let program = self.bound.program();
        let out_of_grid = |axis: usize, index: i64| {
            internal(format!(
                "`{}` read at index {index} along axis {axis} (extent {}) without border handling",
                program.fields[field].name, extents[axis]
            ))
        };
        // Slow axes: the same landing for the whole row.
        let mut slow = Some(0usize);
        for axis in 0..dims - 1 {
            let index = row.prefix[axis] + i64::from(offset[axis]);
            slow =
                match land(index, extents[axis], border).ok_or_else(|| out_of_grid(axis, index))? {
                    Landing::Inside(i) => slow.map(|s| s * extents[axis] + i),
                    Landing::Constant => None,
                };
        }
        let fast = dims - 1;
        let (first, last) = (
            row.x(0) + i64::from(offset[fast]),
            row.x(row.len.max(1) - 1) + i64::from(offset[fast]),
        );
        if let Some(s) = slow
            && first >= 0
            && last < extents[fast] as i64
        {
            // The whole row lands inside the grid: a strided slice, no border applies.
            let start = s * extents[fast] + first as usize;
            if let Buffer::F16(bits) | Buffer::Bf16(bits) = buffer {
                let (stride, ty) = (row.stride as usize, buffer.ty());
                let values =
                    (0..row.len).map(|k| f32_from_storage_bits(ty, bits[start + k * stride]));
                return Ok(Column::F32(values.collect()));
            }
            return with_element_type!(buffer.ty(), T => strided::<T>(buffer, start, row.stride as usize, row.len),
                bool => Err(internal("a `bool` field buffer")));
        }
        let mut indices = Vec::with_capacity(row.len);
        for k in 0..row.len {
            let index = row.x(k) + i64::from(offset[fast]);
            let landing =
                land(index, extents[fast], border).ok_or_else(|| out_of_grid(fast, index))?;
            indices.push(match (slow, landing) {
                (Some(s), Landing::Inside(i)) => Some(s * extents[fast] + i),
                _ => None,
            });
        }
        let constant = match border {
            Some(Border::Constant(c)) => Value::from_constant(c, buffer.ty()),
            _ => Value::from_constant(tessera_ir::Constant::Int(0), buffer.ty()),
        };
        if let Buffer::F16(bits) | Buffer::Bf16(bits) = buffer {
            let (ty, constant) = (buffer.ty(), f32::from_value(constant));
            let values = (indices.iter())
                .map(|i| i.map_or(constant, |i| f32_from_storage_bits(ty, bits[i])));
            return Ok(Column::F32(values.collect()));
        }
        with_element_type!(buffer.ty(), T => gather::<T>(buffer, &indices, constant),
            bool => Err(internal("a `bool` field buffer")))
    }
}

/// `len` elements of `buffer` from `start`, `stride` apart.
fn strided<T: Element>(
    buffer: &Buffer,
    start: usize,
    stride: usize,
    len: usize,
) -> Result<Column, BackendError> {
    let values = T::of_buffer(buffer).ok_or_else(|| internal("buffer type changed"))?;
    Ok(T::column(
        (0..len).map(|k| values[start + k * stride]).collect(),
    ))
}

/// `buffer[i]` for every `Some(i)`, the border constant for every `None`.
fn gather<T: Element>(
    buffer: &Buffer,
    indices: &[Option<usize>],
    constant: Value,
) -> Result<Column, BackendError> {
    let values = T::of_buffer(buffer).ok_or_else(|| internal("buffer type changed"))?;
    let constant = T::from_value(constant);
    Ok(T::column(
        indices
            .iter()
            .map(|i| i.map_or(constant, |i| values[i]))
            .collect(),
    ))
}

/// The index along `axis` of every point of `row`, as `i64`.
fn coordinate(row: &Row, axis: usize) -> Column {
    match row.prefix.get(axis) {
        Some(&index) => Column::I64(vec![index; row.len]),
        None => Column::I64((0..row.len).map(|k| row.x(k)).collect()),
    }
}
