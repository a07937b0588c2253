//! Facts shared by the generated C and the Rust driver that calls it: how each stage writes
//! its outputs, where reduction row partials go, and the record format of overlapped tiles.

use tessera_analysis::tiling::TileRegions;
use tessera_analysis::{BoundProgram, Domain, FieldRole, Rect};
use tessera_ir::{Field, Id, Stage};

/// How a stage writes one of its output fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteMode {
    /// Straight into the current buffer: the stage reads the field at most at its own point.
    InPlace,
    /// Into the other buffer, then the two are swapped (the field's only writer; both buffers
    /// agree outside the stage's domain).
    Swap,
    /// Into the other buffer, then copied back over the stage's domain (the field has several
    /// writers, so the buffers cannot be kept in agreement by swapping).
    CopyBack,
}

/// How `stage` writes `field` (one of its outputs).
pub fn write_mode(bound: &BoundProgram, stage: Id<Stage>, field: Id<Field>) -> WriteMode {
    let checked = bound.checked();
    let reads_neighbours = checked
        .footprint(stage, field)
        .is_some_and(|fp| fp.offsets.iter().any(|o| o.iter().any(|&v| v != 0)));
    if !reads_neighbours {
        return WriteMode::InPlace;
    }
    let writers = checked
        .program()
        .stages
        .values()
        .filter(|s| s.outputs().contains(&field))
        .count();
    if writers == 1 {
        WriteMode::Swap
    } else {
        WriteMode::CopyBack
    }
}

/// The array `stage` stores `field` into: `r<f>` when written in place, else `w<f>`.
pub(crate) fn target_array(bound: &BoundProgram, stage: Id<Stage>, field: Id<Field>) -> String {
    match write_mode(bound, stage, field) {
        WriteMode::InPlace => format!("r{}", field.index()),
        _ => format!("w{}", field.index()),
    }
}

/// Fields written by some stage, in field order.
pub fn updated_fields(bound: &BoundProgram) -> Vec<Id<Field>> {
    let checked = bound.checked();
    checked
        .program()
        .fields
        .ids()
        .filter(|f| checked.role(*f) == FieldRole::Updated)
        .collect()
}

/// The fields the program uses (reads or updates).
pub fn used_fields(bound: &BoundProgram) -> Vec<Id<Field>> {
    let checked = bound.checked();
    (checked.program().fields.ids())
        .filter(|f| checked.role(*f) != FieldRole::Unused)
        .collect()
}

/// Number of covered indices of a domain along `axis`.
pub fn domain_count(domain: &Domain, axis: usize) -> i64 {
    if domain.rect.is_empty() {
        0
    } else {
        (domain.rect.hi[axis] - 1 - domain.rect.lo[axis]) / domain.stride[axis] + 1
    }
}

/// Rows of a domain: points sharing every index but the fastest (1 in 1D, 0 when empty).
pub fn domain_rows(domain: &Domain) -> usize {
    let dims = domain.rect.dims();
    (0..dims - 1)
        .map(|a| domain_count(domain, a) as usize)
        .product::<usize>()
        * usize::from(!domain.rect.is_empty())
}

/// Where each reduction's row partials go in the partials array: `(offset, rows)` per
/// reduction, in reduction order. Row `r` of a reduction holds the fold of its `r`-th row in
/// lexicographic order.
pub fn partial_layout(bound: &BoundProgram) -> Vec<(usize, usize)> {
    let mut offset = 0;
    bound
        .reduction_domains
        .iter()
        .map(|domain| {
            let rows = domain_rows(domain);
            let entry = (offset, rows);
            offset += rows;
            entry
        })
        .collect()
}

/// Total length of the partials array.
pub fn partial_len(bound: &BoundProgram) -> usize {
    partial_layout(bound)
        .last()
        .map_or(0, |(offset, rows)| offset + rows)
}

/// The number of `i64`s in one overlapped tile record fusing `steps` steps.
///
/// A record is, each rectangle as `lo[dims]` then `hi[dims]`: the scratch hull, the core, the
/// loaded region of every field (empty when not loaded), then `compute[step][stage]`.
pub fn tile_record_len(bound: &BoundProgram, steps: usize) -> usize {
    let program = bound.program();
    2 * bound.extents.len() * (2 + program.fields.len() + steps * program.stages.len())
}

/// Appends the record of one tile (see [`tile_record_len`]) to `out`.
pub fn push_tile_record(out: &mut Vec<i64>, hull: &Rect, core: &Rect, regions: &TileRegions) {
    let mut push = |r: &Rect| {
        if r.is_empty() {
            out.extend(std::iter::repeat_n(0, 2 * r.dims()));
        } else {
            out.extend(&r.lo);
            out.extend(&r.hi);
        }
    };
    push(hull);
    push(core);
    regions.inputs.iter().for_each(&mut push);
    regions.compute.iter().flatten().for_each(&mut push);
}
