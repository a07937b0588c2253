//! Benchmark inputs: every floating-point field without a declared initial value, and every
//! input table, is filled with seeded pseudo-random values in `[0, 1)`, so runs are
//! reproducible and not trivially zero.

use tessera_analysis::table_reach;
use tessera_ir::half::storage_bits_from_f32;
use tessera_runtime::random::SplitMix64;
use tessera_runtime::{Buffer, FieldSet};

use crate::error::Error;
use crate::session::Session;

/// The seed of the tables' random values, from the run's (a stream of their own, so that a
/// process without the fields makes the same tables).
const TABLE_SEED: u64 = 0x7ab1_e5ee_d000_0001;

/// Initial fields for a benchmark of runs of `steps` steps from step 0: declared initial
/// values, seeded random values in `[0, 1)` for floating-point fields that declare none, and
/// input tables of random values long enough for those steps. Returns the fields and the names
/// of the randomised fields and tables.
pub fn random_inputs(
    session: &Session,
    seed: u64,
    steps: u64,
) -> Result<(FieldSet, Vec<String>), Error> {
    let mut fields = session.initial_fields(&[])?;
    let mut rng = SplitMix64::new(seed);
    let mut randomised = Vec::new();
    let program = session.program();
    for (id, field) in program.fields.iter() {
        if field.init.is_none() && randomise(fields.buffer_mut(id.index()), &mut rng) {
            randomised.push(field.name.clone());
        }
    }
    randomised.extend(random_tables(session, seed, steps, &mut fields)?);
    Ok((fields, randomised))
}

/// The input tables of [`random_inputs`] written into `fields` (which may hold no field
/// buffers); returns their names.
pub fn random_tables(
    session: &Session,
    seed: u64,
    steps: u64,
    fields: &mut FieldSet,
) -> Result<Vec<String>, Error> {
    let mut rng = SplitMix64::new(seed ^ TABLE_SEED);
    let mut randomised = Vec::new();
    let program = session.program();
    for (id, table) in program.tables.iter() {
        let reach = table_reach(program, id).map_or(0, |(_, hi)| hi.max(0) as u64);
        let len = usize::try_from(steps.saturating_add(reach)).map_err(|_| {
            Error::Usage(format!("table `{}` cannot hold {steps} steps", table.name))
        })?;
        let mut values = Buffer::try_zeros(table.ty, len)?;
        randomise(&mut values, &mut rng);
        fields.tables[id.index()] = values;
        randomised.push(table.name.clone());
    }
    Ok(randomised)
}

/// Fills a floating-point buffer with random values in `[0, 1)` (rounded to its type); returns
/// whether it did (integer buffers are left alone).
fn randomise(buffer: &mut Buffer, rng: &mut SplitMix64) -> bool {
    let ty = buffer.ty();
    match buffer {
        Buffer::F32(values) => values.iter_mut().for_each(|v| *v = rng.next_f64() as f32),
        Buffer::F64(values) => values.iter_mut().for_each(|v| *v = rng.next_f64()),
        Buffer::F16(values) | Buffer::Bf16(values) => values
            .iter_mut()
            .for_each(|v| *v = storage_bits_from_f32(ty, rng.next_f64() as f32)),
        _ => return false,
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_float_fields_without_initial_values_reproducibly() {
        let text = "grid [4, 5];\nfield a: f32;\nfield b: f64 = 2.0;\nfield c: i32;\nstage s { a = a + f32(b) + f32(c); }\n";
        let session = Session::from_text(text, "t.tess", "t", &[]).unwrap();
        let (fields, names) = random_inputs(&session, 7, 3).unwrap();
        assert_eq!(names, vec!["a".to_string()]);
        let Buffer::F32(a) = fields.buffer(0) else {
            panic!()
        };
        assert!(a.iter().all(|v| (0.0..1.0).contains(v)) && a[0] != a[1]);
        assert_eq!(fields.buffer(1).get_f64(3), 2.0);
        assert_eq!(fields.buffer(2).get_f64(3), 0.0);
        assert_eq!(random_inputs(&session, 7, 3).unwrap().0, fields);
    }

    #[test]
    fn fills_tables_for_the_steps_and_the_largest_offset() {
        let text =
            "grid [4];\ntable src: f64;\nfield a: f64;\nstage s { a = a + src[t + 2] - src[t]; }\n";
        let session = Session::from_text(text, "t.tess", "t", &[]).unwrap();
        let (fields, names) = random_inputs(&session, 7, 10).unwrap();
        assert_eq!(names, ["a", "src"]);
        assert_eq!(fields.tables[0].len(), 12);
        assert!((0..12).all(|i| (0.0..1.0).contains(&fields.tables[0].get_f64(i))));
    }
}
