//! Exact-order evaluation versus f64 accuracy mode, and the interpreter's field storage.

use tessera_analysis::BoundProgram;
use tessera_ir::ScalarType;
use tessera_ir::half::{f32_from_storage_bits, storage_bits_from_f32};
pub(crate) use tessera_plan::Precision;
use tessera_runtime::{BackendError, Buffer, FieldSet};

use crate::value::{Element, with_element_type};

/// `buffer` converted to element type `ty` (Rust `as`), or moved as it is when it already has it;
/// `f16`/`bf16` values convert through `f32`.
pub(crate) fn convert_buffer(buffer: Buffer, ty: ScalarType) -> Buffer {
    if buffer.ty() == ty {
        return buffer;
    }
    if let Buffer::F16(bits) | Buffer::Bf16(bits) = &buffer {
        let from = buffer.ty();
        let values: Vec<f32> = bits
            .iter()
            .map(|&b| f32_from_storage_bits(from, b))
            .collect();
        return convert_buffer(Buffer::from(values), ty);
    }
    if ty.is_storage_only() {
        let Buffer::F32(values) = convert_buffer(buffer, ScalarType::F32) else {
            unreachable!("converted to f32");
        };
        let bits: Vec<u16> = values
            .iter()
            .map(|&x| storage_bits_from_f32(ty, x))
            .collect();
        return match ty {
            ScalarType::F16 => Buffer::F16(bits.into()),
            _ => Buffer::Bf16(bits.into()),
        };
    }
    with_element_type!(buffer.ty(), T => convert_from::<T>(T::of_buffer(&buffer).unwrap_or_default(), ty),
        bool => buffer)
}

/// A buffer of `ty` holding `values` converted.
fn convert_from<T: Element>(values: &[T], ty: ScalarType) -> Buffer {
    let mut out = Buffer::zeros(ty, values.len());
    with_element_type!(ty, U => {
        if let Some(dst) = U::of_buffer_mut(&mut out) {
            for (d, s) in dst.iter_mut().zip(values) {
                *d = U::from_value(s.value());
            }
        }
    }, bool => ());
    out
}

/// Checks that `fields` has the program's shape, one buffer per field, of the field's type.
pub(crate) fn check_fields(bound: &BoundProgram, fields: &FieldSet) -> Result<(), BackendError> {
    let program = bound.program();
    if fields.shape != bound.extents {
        return Err(BackendError::InvalidOptions(format!(
            "the fields have shape {:?} but the program's grid is {:?}; allocate them with `FieldSet::zeros` of the bound program",
            fields.shape, bound.extents
        )));
    }
    if fields.buffers.len() != program.fields.len() {
        return Err(BackendError::InvalidOptions(format!(
            "{} field buffers were given but the program has {} fields; give one buffer per field, in declaration order",
            fields.buffers.len(),
            program.fields.len()
        )));
    }
    for (field, buffer) in program.fields.values().zip(&fields.buffers) {
        if buffer.ty() != field.ty || buffer.len() != bound.cell_count() {
            return Err(BackendError::InvalidOptions(format!(
                "field `{}` has {} `{}` values but the program needs {} `{}` values",
                field.name,
                buffer.len(),
                buffer.ty(),
                bound.cell_count(),
                field.ty
            )));
        }
    }
    Ok(())
}
