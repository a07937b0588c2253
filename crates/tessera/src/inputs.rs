//! Benchmark inputs: every floating-point field without a declared initial value is filled
//! with seeded pseudo-random values in `[0, 1)`, so runs are reproducible and not trivially
//! zero.

use tessera_runtime::{Buffer, FieldSet};

use crate::session::Session;

/// A SplitMix64 generator (small, fast, good enough for test data).
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform value in `[0, 1)` with 53 random bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Initial fields for a benchmark: declared initial values, and seeded random values in
/// `[0, 1)` for floating-point fields that declare none. Returns the fields and the names of
/// the randomised ones.
pub fn random_inputs(session: &Session, seed: u64) -> (FieldSet, Vec<String>) {
    let mut fields = session.initial_fields(&[]);
    let mut rng = SplitMix64::new(seed);
    let mut randomised = Vec::new();
    for (id, field) in session.program().fields.iter() {
        if field.init.is_some() {
            continue;
        }
        match fields.buffer_mut(id.index()) {
            Buffer::F32(values) => values.iter_mut().for_each(|v| *v = rng.next_f64() as f32),
            Buffer::F64(values) => values.iter_mut().for_each(|v| *v = rng.next_f64()),
            _ => continue,
        }
        randomised.push(field.name.clone());
    }
    (fields, randomised)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_float_fields_without_initial_values_reproducibly() {
        let text = "grid [4, 5];\nfield a: f32;\nfield b: f64 = 2.0;\nfield c: i32;\nstage s { a = a + f32(b) + f32(c); }\n";
        let session = Session::from_text(text, "t.tess", "t", &[]).unwrap();
        let (fields, names) = random_inputs(&session, 7);
        assert_eq!(names, vec!["a".to_string()]);
        let Buffer::F32(a) = fields.buffer(0) else {
            panic!()
        };
        assert!(a.iter().all(|v| (0.0..1.0).contains(v)) && a[0] != a[1]);
        assert_eq!(fields.buffer(1).get_f64(3), 2.0);
        assert_eq!(fields.buffer(2).get_f64(3), 0.0);
        assert_eq!(random_inputs(&session, 7).0, fields);
    }
}
