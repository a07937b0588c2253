//! Seeded inputs: every field filled from the one generator (`tessera_runtime::random`), and
//! the fields a step writes everywhere before reading them poisoned, so that a cell a backend
//! forgets to write shows.

use tessera_analysis::{BoundProgram, Rect, table_reach};
use tessera_ir::ReceiverPoints;
use tessera_ir::half::{bf16_bits_from_f32, f16_bits_from_f32};
use tessera_runtime::random::SplitMix64;
use tessera_runtime::{Buffer, FieldSet};

/// The steps the test kit's input tables serve (from step 0, beyond each table's largest
/// offset `k` of `table[t + k]`).
pub const TABLE_STEPS: usize = 256;

/// The points the test kit gives each receiver declared `at input`.
pub const RECEIVER_POINTS: usize = 7;

/// Every field filled with seeded random values: floats in `[0.5, 1.5)` (never zero, never
/// subnormal; `f16`/`bf16` the `f32` value rounded to them), `u8` 0 or 1 (cells), `i32`/`i64`
/// in `-50..50` (zero included: integer division by zero is part of THE semantics); every input
/// table likewise, long enough for [`TABLE_STEPS`] steps; [`RECEIVER_POINTS`] points in the
/// grid (corners first) for every receiver that takes its points from the run.
pub fn random_fields(bound: &BoundProgram, seed: u64) -> FieldSet {
    let mut rng = SplitMix64::new(seed);
    let mut fields = FieldSet::zeros(bound);
    let program = bound.program();
    for (id, table) in program.tables.iter() {
        let reach = table_reach(program, id).map_or(0, |(_, hi)| hi.max(0) as usize);
        fields.tables[id.index()] = Buffer::zeros(table.ty, TABLE_STEPS + reach);
    }
    fields.receiver_points = (program.receivers.values())
        .map(|r| {
            (r.points == ReceiverPoints::Input).then(|| random_points(&mut rng, &bound.extents))
        })
        .collect();
    for buffer in fields.buffers.iter_mut().chain(&mut fields.tables) {
        match buffer {
            Buffer::F32(v) => v
                .iter_mut()
                .for_each(|x| *x = (0.5 + rng.next_f64()) as f32),
            Buffer::F64(v) => v.iter_mut().for_each(|x| *x = 0.5 + rng.next_f64()),
            Buffer::F16(v) => v
                .iter_mut()
                .for_each(|x| *x = f16_bits_from_f32((0.5 + rng.next_f64()) as f32)),
            Buffer::Bf16(v) => v
                .iter_mut()
                .for_each(|x| *x = bf16_bits_from_f32((0.5 + rng.next_f64()) as f32)),
            Buffer::U8(v) => v.iter_mut().for_each(|x| *x = rng.next_in(0, 2) as u8),
            Buffer::I32(v) => v.iter_mut().for_each(|x| *x = rng.next_in(-50, 50) as i32),
            Buffer::I64(v) => v.iter_mut().for_each(|x| *x = rng.next_in(-50, 50)),
        }
    }
    fields
}

/// [`RECEIVER_POINTS`] points of a grid of `extents`: its first and last corners, then seeded
/// ones.
fn random_points(rng: &mut SplitMix64, extents: &[usize]) -> Vec<Vec<i64>> {
    let first = vec![0; extents.len()];
    let last = extents.iter().map(|&e| e as i64 - 1).collect();
    let seeded = (2..RECEIVER_POINTS).map(|_| {
        (extents.iter())
            .map(|&e| rng.next_in(0, e as i64))
            .collect::<Vec<i64>>()
    });
    [first, last].into_iter().chain(seeded).collect()
}

/// Inputs for a run: [`random_fields`], with every field that the step writes over the whole
/// grid (densely) before any stage reads it poisoned (NaN for floats, all ones for integers).
pub fn inputs(bound: &BoundProgram, seed: u64) -> FieldSet {
    let mut fields = random_fields(bound, seed);
    let checked = bound.checked();
    let program = checked.program();
    let grid = Rect::grid(&bound.extents);
    for field in program.fields.ids() {
        for stage in program.stages.ids() {
            if checked.footprint(stage, field).is_some() {
                break;
            }
            let domain = bound.stage_domain(stage);
            if domain.rect == grid
                && domain.is_dense()
                && program.stages[stage].outputs().contains(&field)
            {
                let buffer = &mut fields.buffers[field.index()];
                *buffer = Buffer::poisoned(buffer.ty(), buffer.len());
                break;
            }
        }
    }
    fields
}
