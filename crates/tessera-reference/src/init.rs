//! Initial field values: each field's declared `init` expression at every point, or 0.

use rayon::prelude::*;
use tessera_analysis::{BoundProgram, Domain, Rect};
use tessera_ir::{Field, Id};
use tessera_runtime::{BackendError, Buffer, FieldSet};

use crate::eval::Evaluator;
use crate::precision::Precision;
use crate::rows::rows;
use crate::step::write_row;

/// Every field's initial values: fields with `given[field]` false get their declared initial
/// value (0 when none); given fields (and those past the end of `given`) are zero-filled for the
/// caller to overwrite with inputs. An allocation the allocator has no room for is an error
/// (`BackendError::Resources`), not an abort.
pub fn initial_fields(bound: &BoundProgram, given: &[bool]) -> Result<FieldSet, BackendError> {
    let fields = &bound.program().fields;
    let supplied = (fields.iter())
        .map(
            |(id, field)| match given.get(id.index()).copied().unwrap_or(false) {
                true => Buffer::try_zeros(field.ty, bound.cell_count()).map(Some),
                false => Ok(None),
            },
        )
        .collect::<Result<_, _>>()?;
    initial_fields_with(bound, supplied)
}

/// Every field's values: `supplied[field]` where given (moved in, not copied: it may be lent
/// storage), the declared initial value elsewhere. A supplied buffer of another type or
/// length than the field's is an error naming the field.
pub fn initial_fields_with(
    bound: &BoundProgram,
    mut supplied: Vec<Option<Buffer>>,
) -> Result<FieldSet, BackendError> {
    let buffers = (bound.program().fields.iter())
        .map(|(id, field)| match supplied.get_mut(id.index()).and_then(Option::take) {
            Some(buffer) if buffer.ty() != field.ty || buffer.len() != bound.cell_count() => {
                Err(BackendError::InvalidOptions(format!(
                    "the values given for field `{}` are {} `{}` values; it holds {} `{}` values",
                    field.name,
                    buffer.len(),
                    buffer.ty(),
                    bound.cell_count(),
                    field.ty
                )))
            }
            Some(buffer) => Ok(buffer),
            None => initial_buffer(bound, id),
        })
        .collect::<Result<_, _>>()?;
    Ok(FieldSet {
        shape: bound.extents.clone(),
        buffers,
        tables: tessera_runtime::empty_tables(bound),
        receiver_points: Vec::new(),
    })
}

/// Overwrites field `field_index` of `fields` with its declared initial value (0 when none).
///
/// Panics when `field_index` is not a field of the program, or on an allocation failure.
pub fn initialize(bound: &BoundProgram, fields: &mut FieldSet, field_index: usize) {
    let field = Id::from_index(field_index);
    fields.buffers[field_index] = initial_buffer(bound, field)
        .expect("checked initial values read no fields and always evaluate");
}

/// The initial values of `field`, evaluated in exact-order mode.
fn initial_buffer(bound: &BoundProgram, field: Id<Field>) -> Result<Buffer, BackendError> {
    let declared = &bound.program().fields[field];
    let mut buffer = Buffer::try_zeros(declared.ty, bound.cell_count())?;
    let Some(init) = declared.init else {
        return Ok(buffer);
    };
    let grid = Domain {
        rect: Rect::grid(&bound.extents),
        stride: vec![1; bound.extents.len()],
    };
    let grid_rows = rows(&grid);
    let evaluator = Evaluator::new(bound, Precision::Exact, &[]);
    let columns: Vec<_> = grid_rows
        .par_iter()
        .map(|row| evaluator.eval(row, &[], init))
        .collect::<Result<_, _>>()?;
    for (row, column) in grid_rows.iter().zip(&columns) {
        write_row(&mut buffer, row, &bound.extents, column)?;
    }
    Ok(buffer)
}
