//! `--check-finite`: the first NaN or infinity in the floating-point fields.

use tessera::Session;
use tessera_runtime::{Buffer, FieldSet};

/// The first non-finite value, in field order then row-major order: `` `u` is NaN at (y = 3, x = 5) ``.
pub fn first_non_finite(session: &Session, fields: &FieldSet) -> Option<String> {
    for (id, field) in session.program().fields.iter() {
        let position = match fields.buffer(id.index()) {
            Buffer::F32(v) => v
                .iter()
                .position(|x| !x.is_finite())
                .map(|i| (i, f64::from(v[i]))),
            Buffer::F64(v) => v.iter().position(|x| !x.is_finite()).map(|i| (i, v[i])),
            half @ (Buffer::F16(_) | Buffer::Bf16(_)) => (0..half.len())
                .map(|i| (i, half.get_f64(i)))
                .find(|(_, x)| !x.is_finite()),
            _ => None,
        };
        if let Some((index, value)) = position {
            let axes = session.program().axis_names();
            let mut rest = index;
            let mut coords = vec![0; fields.shape.len()];
            for axis in (0..fields.shape.len()).rev() {
                coords[axis] = rest % fields.shape[axis];
                rest /= fields.shape[axis];
            }
            let at: Vec<String> = axes
                .iter()
                .zip(&coords)
                .map(|(a, c)| format!("{a} = {c}"))
                .collect();
            return Some(format!(
                "`{}` is {value} at ({})",
                field.name,
                at.join(", ")
            ));
        }
    }
    None
}
