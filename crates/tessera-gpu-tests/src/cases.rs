//! Binding example programs, seeded random inputs (never zeros), and the reference run.

use std::sync::Arc;

use tessera_analysis::{BoundProgram, bind, check};
use tessera_codegen::kernel::example_programs;
use tessera_ir::{Constant, Program};
use tessera_runtime::{Buffer, FieldSet, RunReport};

use crate::programs::extra_programs;

/// Checks and binds `program` with `params`; panics with the diagnostics when it does not.
pub fn bind_program(program: &Program, params: &[(String, Constant)]) -> BoundProgram {
    let checked =
        check(program).unwrap_or_else(|d| panic!("`{}` does not check: {d:?}", program.name));
    bind(Arc::new(checked), params)
        .unwrap_or_else(|d| panic!("`{}` does not bind with {params:?}: {d:?}", program.name))
}

/// The example program `name` (the kernel generator's or [`extra_programs`]) bound with the
/// integer parameters `sizes`; panics for an unknown name.
pub fn bind_example(name: &str, sizes: &[(&str, i64)]) -> BoundProgram {
    let example = example_programs()
        .into_iter()
        .chain(extra_programs())
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("no example program is called `{name}`"));
    let params: Vec<(String, Constant)> = sizes
        .iter()
        .map(|(n, v)| (n.to_string(), Constant::Int(*v)))
        .collect();
    bind_program(&example.program, &params)
}

/// A small deterministic generator (xorshift64*), so inputs are reproducible without a
/// dependency.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A float in `[0.5, 1.5)`.
    pub fn unit(&mut self) -> f64 {
        0.5 + (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Every field filled with seeded random values: floats in `[0.5, 1.5)`, `u8` 0 or 1 (cells),
/// `i32`/`i64` in `-50..50` (zero included: integer division by zero is part of THE semantics).
pub fn random_fields(bound: &BoundProgram, seed: u64) -> FieldSet {
    let mut rng = Rng::new(seed);
    let mut fields = FieldSet::zeros(bound);
    for buffer in &mut fields.buffers {
        match buffer {
            Buffer::F32(v) => v.iter_mut().for_each(|x| *x = rng.unit() as f32),
            Buffer::F64(v) => v.iter_mut().for_each(|x| *x = rng.unit()),
            Buffer::U8(v) => v.iter_mut().for_each(|x| *x = (rng.next_u64() % 2) as u8),
            Buffer::I32(v) => v
                .iter_mut()
                .for_each(|x| *x = (rng.next_u64() % 100) as i32 - 50),
            Buffer::I64(v) => v
                .iter_mut()
                .for_each(|x| *x = (rng.next_u64() % 100) as i64 - 50),
        }
    }
    fields
}

/// The reference backend's exact-order result of `steps` steps from `inputs`.
pub fn reference_run(bound: &BoundProgram, inputs: &FieldSet, steps: u64) -> (FieldSet, RunReport) {
    let mut fields = inputs.clone();
    let report = tessera_reference::run_exact(bound, &mut fields, 0, steps)
        .expect("the reference backend runs every program");
    (fields, report)
}

/// Field names by field index, for messages.
pub fn field_names(bound: &BoundProgram) -> Vec<String> {
    bound
        .program()
        .fields
        .values()
        .map(|f| f.name.clone())
        .collect()
}
