//! Benchmark inputs: every floating-point field without a declared initial value is filled
//! with seeded pseudo-random values in `[0, 1)`, so runs are reproducible and not trivially
//! zero.

use tessera_ir::half::storage_bits_from_f32;
use tessera_runtime::random::SplitMix64;
use tessera_runtime::{Buffer, FieldSet};

use crate::error::Error;
use crate::session::Session;

/// Initial fields for a benchmark: declared initial values, and seeded random values in
/// `[0, 1)` for floating-point fields that declare none. Returns the fields and the names of
/// the randomised ones.
pub fn random_inputs(session: &Session, seed: u64) -> Result<(FieldSet, Vec<String>), Error> {
    let mut fields = session.initial_fields(&[])?;
    let mut rng = SplitMix64::new(seed);
    let mut randomised = Vec::new();
    for (id, field) in session.program().fields.iter() {
        if field.init.is_some() {
            continue;
        }
        match fields.buffer_mut(id.index()) {
            Buffer::F32(values) => values.iter_mut().for_each(|v| *v = rng.next_f64() as f32),
            Buffer::F64(values) => values.iter_mut().for_each(|v| *v = rng.next_f64()),
            Buffer::F16(values) | Buffer::Bf16(values) => values
                .iter_mut()
                .for_each(|v| *v = storage_bits_from_f32(field.ty, rng.next_f64() as f32)),
            _ => continue,
        }
        randomised.push(field.name.clone());
    }
    Ok((fields, randomised))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_float_fields_without_initial_values_reproducibly() {
        let text = "grid [4, 5];\nfield a: f32;\nfield b: f64 = 2.0;\nfield c: i32;\nstage s { a = a + f32(b) + f32(c); }\n";
        let session = Session::from_text(text, "t.tess", "t", &[]).unwrap();
        let (fields, names) = random_inputs(&session, 7).unwrap();
        assert_eq!(names, vec!["a".to_string()]);
        let Buffer::F32(a) = fields.buffer(0) else {
            panic!()
        };
        assert!(a.iter().all(|v| (0.0..1.0).contains(v)) && a[0] != a[1]);
        assert_eq!(fields.buffer(1).get_f64(3), 2.0);
        assert_eq!(fields.buffer(2).get_f64(3), 0.0);
        assert_eq!(random_inputs(&session, 7).unwrap().0, fields);
    }
}
